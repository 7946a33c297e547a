"""Grouped-query attention: ``H`` query heads share ``G`` key/value heads (multi-query when ``G = 1``).

Shapes: ``B`` batch, ``T`` tokens, ``Din`` input width, ``D`` model width, ``H`` query heads,
``G`` key/value heads (groups), ``Dh = D / H`` head width.

Taught in notebook 13 (attention made efficient).

:class:`GroupedQueryAttention` with ``G = H`` equals :class:`attnlib.MultiHeadAttention` (same
seed, same weights, same function; ``tests/lib/test_efficient.py``), and it adds the two tricks of
notebook 13: a causal sliding window (:func:`attnlib.masks.sliding_window_mask`) and rotary
positions (:func:`attnlib.rotary.apply_rotary`). Masks are boolean, True = may attend.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import (
    require_divisible,
    require_features,
    require_length,
    require_positive_int,
    require_probability,
    require_rank,
)
from .fast_path import FastPathAttention
from .functional import _attend, require_mask_fits
from .masks import combine_masks, sliding_window_mask
from .multihead import merge_heads, split_heads
from .rotary import apply_rotary

__all__ = ["GroupedQueryAttention"]


class GroupedQueryAttention(nn.Module, FastPathAttention):
    """Multi-head attention whose ``H`` query heads share ``G`` key/value heads, ``H / G`` each.

    ``G = H`` is multi-head attention, ``G = 1`` multi-query attention (Shazeer, 2019), and
    anything between grouped-query attention (Ainslie et al., 2023). Query head ``h`` uses
    key/value head ``h // (H / G)``. The signature and parameter order are those of
    :class:`attnlib.MultiHeadAttention` plus ``num_kv_heads``, so with ``G = H`` and the same seed
    both modules hold the same weights and compute the same function.

    Args:
        d_in: input width.
        d_out: model width ``D``, split into ``num_heads`` heads of ``Dh = D / H``.
        context_length: longest sequence accepted.
        dropout: dropout probability on the attention weights.
        num_heads: query heads ``H``.
        num_kv_heads: key/value heads ``G``; divides ``H``.
        qkv_bias: add a bias to the query/key/value projections.
        causal: apply the causal mask.
        window: if given, a causal sliding window of this many keys (:func:`sliding_window_mask`).
        rotary: rotate queries and keys by their positions (RoPE, :func:`attnlib.rotary.apply_rotary`).
        need_weights: keep the weights in ``last_attn_weights`` (explicit path, keys and values
            repeated to ``H`` heads); ``False`` is the fast path: ``F.scaled_dot_product_attention``
            with ``enable_gqa=True``, which reads the ``G`` key/value heads without copying them.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        num_kv_heads: int,
        qkv_bias: bool = False,
        *,
        causal: bool = True,
        window: int | None = None,
        rotary: bool = False,
        need_weights: bool = True,
    ) -> None:
        super().__init__()
        self.head_dim = require_divisible(d_out, num_heads)
        require_divisible(num_heads, num_kv_heads, "num_heads", "num_kv_heads")
        if window is not None and not causal:
            raise ValueError("window is a causal sliding window: it needs causal=True")
        if rotary and self.head_dim % 2:
            raise ValueError(f"rotary needs an even head width Dh, got Dh={self.head_dim}")
        self.d_in = require_positive_int("d_in", d_in)
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.context_length = require_positive_int("context_length", context_length)
        self.causal, self.window, self.rotary = causal, window, rotary
        self.need_weights = need_weights
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)  # G heads, not H
        self.W_value = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, T, Din)``; mask bool, True = may attend, broadcastable to ``(B, H, T, T)``.
        Returns: ``(B, T, D)``."""
        require_rank("x", x, (3,), "(B, T, Din)")
        require_features("x", x, self.d_in, "(B, T, Din)", "Din")
        b, t, _ = x.shape
        require_length("x", t, self.context_length)
        if mask is not None:
            require_mask_fits(mask, (b, self.num_heads, t, t))
        is_causal = self.causal and self.window is None  # the window already holds the causal cut
        if self.window is not None:
            mask = combine_masks(sliding_window_mask(t, self.window, device=x.device), mask)
        queries = split_heads(self.W_query(x), self.num_heads)  # (B, H, T, Dh)
        keys = split_heads(self.W_key(x), self.num_kv_heads)  # (B, G, T, Dh)
        values = split_heads(self.W_value(x), self.num_kv_heads)  # (B, G, T, Dh)
        if self.rotary:
            queries, keys = apply_rotary(queries), apply_rotary(keys)
        dropout_p = self.dropout.p if self.training else 0.0
        context, weights = _attend(
            queries,
            keys,
            values,
            mask,
            dropout_p,
            is_causal=is_causal,
            enable_gqa=True,
            need_weights=self.need_weights,
        )  # (B, H, T, Dh): query head h reads key/value head h // (H / G); weights (B, H, T, T) or None
        self.last_attn_weights = None if weights is None else weights.detach()
        return self.out_proj(merge_heads(context))  # (B, H, T, Dh) -> (B, T, D)
