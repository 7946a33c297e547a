"""attnlib: the attention library behind the notebook series.

From one dot product to a trained Transformer. Masks are boolean with True = may attend,
exactly as in ``torch.nn.functional.scaled_dot_product_attention``. Plotting and widgets
live in ``attnlib.plotting`` and ``attnlib.widgets`` and are imported only when used.
"""

from .blocks import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    PositionalEncoding,
    add_norm,
    sinusoidal_encoding,
)
from .data import PairDataset, Vocab, date_datasets, digit_datasets
from .functional import attention_scores, masked_softmax, scaled_dot_product_attention
from .masks import (
    causal_mask,
    combine_masks,
    from_masked_out,
    length_mask,
    padding_mask,
    to_masked_out,
)
from .multihead import (
    Attention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    merge_heads,
    split_heads,
)
from .repro import reproducible
from .scorers import (
    AttentionGeneral,
    AttentionParams,
    AttentionSimple,
    HardAttention,
    LocalAttention,
    make_attention,
)
from .self_attention import CausalAttention, SelfAttention, SelfAttentionV1
from .seq2seq import Decoder, DecoderWithAttention, Encoder, LuongDecoder, Seq2Seq
from .training import accuracy_by_length, evaluate, train
from .transformer import Transformer, to_torch_transformer

__version__ = "0.1.0"

__all__ = [
    "Attention",
    "AttentionGeneral",
    "AttentionParams",
    "AttentionSimple",
    "CausalAttention",
    "Decoder",
    "DecoderLayer",
    "DecoderWithAttention",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "HardAttention",
    "LayerNorm",
    "LocalAttention",
    "LuongDecoder",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "PairDataset",
    "PositionalEncoding",
    "SelfAttention",
    "SelfAttentionV1",
    "Seq2Seq",
    "Transformer",
    "Vocab",
    "accuracy_by_length",
    "add_norm",
    "attention_scores",
    "causal_mask",
    "combine_masks",
    "date_datasets",
    "digit_datasets",
    "evaluate",
    "from_masked_out",
    "length_mask",
    "make_attention",
    "masked_softmax",
    "merge_heads",
    "padding_mask",
    "reproducible",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "split_heads",
    "to_masked_out",
    "to_torch_transformer",
    "train",
]
