"""attnlib: the attention library behind the notebook series.

From one dot product to a trained Transformer. Masks are boolean with True = may attend,
exactly as in ``torch.nn.functional.scaled_dot_product_attention``. Plotting and widgets
live in ``attnlib.plotting`` and ``attnlib.widgets`` and are imported only when used.
"""

from .functional import attention_scores, masked_softmax, scaled_dot_product_attention
from .masks import (
    causal_mask,
    combine_masks,
    from_masked_out,
    length_mask,
    padding_mask,
    to_masked_out,
)
from .multihead import Attention, MultiHeadAttention, MultiHeadAttentionWrapper
from .repro import reproducible
from .self_attention import CausalAttention, SelfAttention, SelfAttentionV1

__version__ = "0.1.0"

__all__ = [
    "Attention",
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttention",
    "SelfAttentionV1",
    "attention_scores",
    "causal_mask",
    "combine_masks",
    "from_masked_out",
    "length_mask",
    "masked_softmax",
    "padding_mask",
    "reproducible",
    "scaled_dot_product_attention",
    "to_masked_out",
]
