"""Multi-head self-attention with one fused qkv projection: timm's vision-transformer block.

Shapes: ``B`` batch, ``N`` tokens (patches and the class token in a ViT), ``D`` model width
(``dim``), ``H`` heads, ``Dh = D / H`` head width.

Taught in notebook 05 (multi-head attention).

One ``Linear(D, 3D)`` makes the queries, keys and values of every head in a single matmul; it
computes the function of :class:`attnlib.multihead.MultiHeadAttention` (``causal=False``) with
the three projections stacked (notebook 05 copies weights across to show it).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_divisible, require_features, require_probability, require_rank
from .fast_path import FastPathAttention
from .functional import _attend, require_mask_fits

__all__ = ["Attention", "FusedQKVAttention"]


class Attention(nn.Module, FastPathAttention):
    """Vision-transformer style multi-head self-attention with one fused qkv projection.

    The signature of timm's vision-transformer ``Attention`` (Dosovitskiy et al., 2021).
    ``qkv`` maps ``D`` to ``3 * D`` in one matmul; its output
    columns are all queries, then all keys, then all values.

    Args:
        dim: model width ``D``.
        num_heads: number of heads ``H``.
        qkv_bias: add a bias to the fused projection.
        attn_drop: dropout on the attention weights.
        proj_drop: dropout after the output projection.
        need_weights: keep the weights in ``last_attn_weights`` (explicit path); ``False`` is
            the fast path (``F.scaled_dot_product_attention``, no weights), what timm's
            ``fused_attn`` switches on.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = False,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        *,
        need_weights: bool = True,
    ) -> None:
        super().__init__()
        self.head_dim = require_divisible(dim, num_heads, "dim")
        self.dim = dim
        self.num_heads = num_heads
        self.need_weights = need_weights
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(require_probability("attn_drop", attn_drop))
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(require_probability("proj_drop", proj_drop))
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, N, D)``; mask bool, True = may attend. Returns: ``(B, N, D)``."""
        require_rank("x", x, (3,), "(B, N, D)")
        require_features("x", x, self.dim, "(B, N, D)")
        b, n, d = x.shape
        if mask is not None:
            require_mask_fits(mask, (b, self.num_heads, n, n))
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim)  # (B, N, 3D) -> (B, N, 3, H, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, H, N, Dh)
        dropout_p = self.attn_drop.p if self.training else 0.0
        context, weights = _attend(q, k, v, mask, dropout_p, self.scale, need_weights=self.need_weights)
        self.last_attn_weights = None if weights is None else weights.detach()  # (B, H, N, N)
        x = context.transpose(1, 2).reshape(b, n, d)  # (B, H, N, Dh) -> (B, N, D)
        return self.proj_drop(self.proj(x))


# A descriptive name beside the published one: the class keeps the name of timm's block
# (``timm.models.vision_transformer.Attention``), whose signature it follows.
FusedQKVAttention = Attention
