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
from .efficient import (
    GroupedQueryAttention,
    kv_cache_bytes,
    online_softmax,
    peak_memory,
    receptive_field,
    sliding_window_mask,
    tiled_attention,
)
from .functional import attention_scores, masked_softmax, scaled_dot_product_attention
from .gpt import GPT, KVCache, cached_attention, next_token_probs, sample_next, top_k_logits
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
from .rotary import apply_rotary, rotary_angles
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
from .vit import PatchEmbed, VisionTransformer, attention_rollout, occlude, patchify

__version__ = "0.1.0"

__all__ = [
    "GPT",
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
    "GroupedQueryAttention",
    "HardAttention",
    "KVCache",
    "LayerNorm",
    "LocalAttention",
    "LuongDecoder",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "PairDataset",
    "PatchEmbed",
    "PositionalEncoding",
    "SelfAttention",
    "SelfAttentionV1",
    "Seq2Seq",
    "Transformer",
    "VisionTransformer",
    "Vocab",
    "accuracy_by_length",
    "add_norm",
    "apply_rotary",
    "attention_rollout",
    "attention_scores",
    "cached_attention",
    "causal_mask",
    "combine_masks",
    "date_datasets",
    "digit_datasets",
    "evaluate",
    "from_masked_out",
    "kv_cache_bytes",
    "length_mask",
    "make_attention",
    "masked_softmax",
    "merge_heads",
    "next_token_probs",
    "occlude",
    "online_softmax",
    "padding_mask",
    "patchify",
    "peak_memory",
    "receptive_field",
    "reproducible",
    "rotary_angles",
    "sample_next",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "sliding_window_mask",
    "split_heads",
    "tiled_attention",
    "to_masked_out",
    "to_torch_transformer",
    "top_k_logits",
    "train",
]
