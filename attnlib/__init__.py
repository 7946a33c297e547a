"""attnlib: the attention library behind the notebook series.

From one dot product to a trained Transformer. Masks are boolean with True = may attend,
exactly as in ``torch.nn.functional.scaled_dot_product_attention``. Everything that draws
(plots, diagrams, explorers) lives in ``attnlib.viz`` and the exercise checks in
``attnlib.check``; ``import attnlib`` loads neither matplotlib nor ipywidgets.
Trained models are memoised by :func:`attnlib.train_or_load`; "cache" means the KV cache.

A notebook imports the names it teaches from their module (notebook 03 (masking):
``from attnlib.masks import causal_mask``) and uses names taught earlier as ``attnlib.<name>``,
so each of those is exported here; every notebook calls :func:`attnlib.reproducible` first.
"""

from .attention_decoders import DecoderWithAttention, LuongDecoder
from .blocks import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    PositionalEncoding,
    add_norm,
    sinusoidal_encoding,
)
from .claims import claim
from .data import PairDataset, Vocab
from .evaluation import accuracy_by_length, count_parameters, evaluate
from .fast_path import fast_attention
from .functional import attention_scores, fused_attention, masked_softmax, scaled_dot_product_attention
from .fused_qkv import Attention, FusedQKVAttention
from .gpt import GPT
from .gqa import GroupedQueryAttention
from .i18n import language, set_language
from .kv_cache import KVCache, cached_attention
from .local_attention import HardAttention, LocalAttention, make_attention
from .masks import (
    causal_mask,
    combine_masks,
    from_masked_out,
    length_mask,
    padding_mask,
    receptive_field,
    sliding_window_mask,
    to_masked_out,
)
from .memory import kv_cache_bytes, peak_memory
from .modes import evaluating
from .multihead import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    merge_heads,
    split_heads,
)
from .repro import reproducible
from .rotary import apply_rotary, rotary_angles
from .sampling import next_token_probs, sample_next, top_k_logits, top_p_logits
from .scorers import AdditiveAttention, AttentionGeneral, AttentionParams, AttentionSimple, DotAttention
from .self_attention import CausalAttention, SelfAttention, SelfAttentionV1
from .seq2seq import Decoder, Encoder, Seq2Seq, translate
from .tasks import date_datasets, digit_datasets, digit_pairs, digit_vocab
from .tiled import online_softmax, tiled_attention
from .torch_reference import to_torch_transformer
from .trained import train_or_load
from .training import Seq2SeqModel, sequence_loss, train
from .transformer import Transformer
from .vit import PatchEmbed, VisionTransformer, patchify
from .vit_probes import attention_rollout, occlude

__version__ = "0.2.0"

__all__ = [
    "GPT",
    "AdditiveAttention",
    "Attention",
    "AttentionGeneral",
    "AttentionParams",
    "AttentionSimple",
    "CausalAttention",
    "Decoder",
    "DecoderLayer",
    "DecoderWithAttention",
    "DotAttention",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "FusedQKVAttention",
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
    "Seq2SeqModel",
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
    "claim",
    "combine_masks",
    "count_parameters",
    "date_datasets",
    "digit_datasets",
    "digit_pairs",
    "digit_vocab",
    "evaluate",
    "evaluating",
    "fast_attention",
    "from_masked_out",
    "fused_attention",
    "kv_cache_bytes",
    "language",
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
    "sequence_loss",
    "set_language",
    "sinusoidal_encoding",
    "sliding_window_mask",
    "split_heads",
    "tiled_attention",
    "to_masked_out",
    "to_torch_transformer",
    "top_k_logits",
    "top_p_logits",
    "train",
    "train_or_load",
    "translate",
]
