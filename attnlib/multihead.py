"""Multi-head attention two ways: a list of heads, and split heads.

Shapes: ``B`` batch, ``Tq``/``Tk`` query/key length, ``Din`` input width, ``D`` model width
(``d_out``/``dim``), ``H`` heads, ``Dh = D / H`` head width.

Taught in notebook 05 (multi-head attention).

Both compute the same function when given the same weights, and so does the third way, one
fused qkv projection (:class:`attnlib.fused_qkv.Attention`; notebook 05 and the tests copy
weights across to show it). Each keeps ``last_attn_weights`` ``(B, H, Tq, Tk)``.
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
from .masks import causal_mask
from .self_attention import CausalAttention

__all__ = ["MultiHeadAttention", "MultiHeadAttentionWrapper", "merge_heads", "split_heads"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Give each head its own slice of the features: ``(B, T, D)`` -> ``(B, H, T, Dh)``.

    Head ``h`` gets features ``h*Dh .. (h+1)*Dh - 1`` of every token.
    """
    require_rank("x", x, (3,), "(B, T, D)")
    b, t, d = x.shape
    head_dim = require_divisible(d, num_heads, "D")
    return x.view(b, t, num_heads, head_dim).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)


def merge_heads(context: torch.Tensor) -> torch.Tensor:
    """Put the heads side by side again: ``(B, H, T, Dh)`` -> ``(B, T, H * Dh)``."""
    require_rank("context", context, (4,), "(B, H, T, Dh)")
    b, h, t, dh = context.shape
    return context.transpose(1, 2).reshape(b, t, h * dh)  # (B, T, H, Dh) -> (B, T, D)


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent :class:`CausalAttention` heads, outputs concatenated.

    Args:
        d_in: input width ``Din``.
        d_out: width of each head; the output is ``num_heads * d_out`` wide.
        context_length: longest sequence accepted.
        dropout: dropout probability on the attention weights.
        num_heads: number of heads ``H``.
        qkv_bias: add a bias to the projections.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        require_positive_int("num_heads", num_heads)
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, T, Din)``. Returns: ``(B, T, H * d_out)``."""
        context = torch.cat([head(x, mask) for head in self.heads], dim=-1)  # H x (B, T, d_out)
        self.last_attn_weights = torch.stack([h.last_attn_weights for h in self.heads], dim=1)
        return context


class MultiHeadAttention(nn.Module, FastPathAttention):
    """Multi-head attention with one projection per role, split into heads by view/transpose.

    The signature and parameter order of Raschka (2024, ch. 3) (``W_query``, ``W_key``, ``W_value``,
    ``out_proj``). By default causal self-attention, as in the book; ``causal=False``
    with ``memory`` gives cross-attention (Transformer decoder) and with ``mask`` padding.

    Args:
        d_in: input width ``Din`` (of both ``x`` and ``memory``).
        d_out: model width ``D``, split into ``num_heads`` heads of ``D / H``.
        context_length: longest sequence (queries or keys) accepted.
        dropout: dropout probability on the attention weights.
        num_heads: number of heads ``H``.
        qkv_bias: add a bias to the query/key/value projections.
        causal: apply the causal mask (self-attention only).
        need_weights: compute the attention weights explicitly and keep them in
            ``last_attn_weights`` (to plot them). ``False`` is the fast path: PyTorch's fused
            ``F.scaled_dot_product_attention``, the same function without the weights
            (:func:`attnlib.fast_path.fast_attention` switches a whole model).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        *,
        causal: bool = True,
        need_weights: bool = True,
    ) -> None:
        super().__init__()
        self.head_dim = require_divisible(d_out, num_heads)
        self.d_in = require_positive_int("d_in", d_in)
        self.d_out = d_out
        self.num_heads = num_heads
        self.context_length = require_positive_int("context_length", context_length)
        self.causal, self.need_weights = causal, need_weights
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        # Only causal modules hold the (T, T) mask, as in the book; a cross-attention
        # layer with a long context_length would otherwise carry a large useless buffer.
        if causal:
            self.register_buffer("mask", causal_mask(context_length), persistent=False)
        self.last_attn_weights: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, D)`` -> ``(B, H, T, Dh)``; :func:`split_heads` minus its checks (a projection's ``x``)."""
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)

    # The three steps of forward, public so that a KV-cached step (attnlib.kv_cache) runs the
    # module's own code: project, attend, combine.
    def project_queries(self, x: torch.Tensor) -> torch.Tensor:
        """Queries of ``x`` ``(B, Tq, Din)``, split into heads: ``(B, H, Tq, Dh)``."""
        return self.split_heads(self.W_query(x))  # (B, Tq, D) -> (B, H, Tq, Dh)

    def project_keys_values(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of ``memory`` ``(B, Tk, Din)``, split into heads: ``(B, H, Tk, Dh)`` each."""
        keys = self.split_heads(self.W_key(memory))  # (B, Tk, D) -> (B, H, Tk, Dh)
        values = self.split_heads(self.W_value(memory))  # (B, Tk, D) -> (B, H, Tk, Dh)
        return keys, values

    def attend(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        is_causal: bool = False,
    ) -> torch.Tensor:
        """Scaled dot-product attention of every head.

        On the explicit path (``need_weights``) it keeps the weights in ``last_attn_weights``;
        on the fast path it runs ``F.scaled_dot_product_attention`` and sets them to None.

        Args:
            queries: ``(B, H, Tq, Dh)``.
            keys, values: ``(B, H, Tk, Dh)``.
            mask: bool, True = may attend, broadcastable to ``(B, H, Tq, Tk)``.
            is_causal: also apply the causal mask (``Tq == Tk``), combined with ``mask`` by the
                attention functions; on the fast path with no other mask, the fused kernel builds no
                mask tensor at all (and on long inputs skips key blocks above the diagonal).

        Returns:
            ``context`` ``(B, H, Tq, Dh)``.
        """
        dropout_p = self.dropout.p if self.training else 0.0
        context, weights = _attend(
            queries, keys, values, mask, dropout_p, is_causal=is_causal, need_weights=self.need_weights
        )  # (B, H, Tq, Dh), (B, H, Tq, Tk) or None
        self.last_attn_weights = None if weights is None else weights.detach()
        return context

    def combine_heads(self, context: torch.Tensor) -> torch.Tensor:
        """Heads side by side, then the output projection: ``(B, H, Tq, Dh)`` -> ``(B, Tq, D)``."""
        b, _, tq, _ = context.shape
        return self.out_proj(
            context.transpose(1, 2).reshape(b, tq, self.d_out)
        )  # (B, Tq, H, Dh) -> (B, Tq, D)

    def causal_rows(self, start: int, stop: int, num_keys: int) -> torch.Tensor:
        """Rows ``start .. stop - 1`` of the causal mask over the first ``num_keys`` keys: ``(Tq, Tk)``.

        A causal module only (it holds the mask buffer).
        """
        return self.mask[start:stop, :num_keys]  # (Tq, Tk)

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attend from ``x`` to ``memory`` (to ``x`` itself if None).

        Args:
            x: queries' input ``(B, Tq, Din)``.
            memory: keys' and values' input ``(B, Tk, Din)``; defaults to ``x``.
            mask: bool, True = may attend, broadcastable to ``(B, H, Tq, Tk)``.

        Returns:
            ``(B, Tq, D)``.
        """
        require_rank("x", x, (3,), "(B, Tq, Din)")
        require_features("x", x, self.d_in, "(B, Tq, Din)", "Din")
        memory = x if memory is None else memory
        require_rank("memory", memory, (3,), "(B, Tk, Din)")
        require_features("memory", memory, self.d_in, "(B, Tk, Din)", "Din")
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                f"x and memory must share the batch size, got {tuple(x.shape)} and {tuple(memory.shape)}"
            )
        tq, tk = x.shape[1], memory.shape[1]
        require_length("x", tq, self.context_length)
        require_length("memory", tk, self.context_length)
        if mask is not None:
            require_mask_fits(mask, (x.shape[0], self.num_heads, tq, tk))
        if self.causal and memory is not x and tq != tk:
            raise ValueError(f"causal attention needs Tq == Tk, got Tq={tq} and Tk={tk}")

        queries = self.project_queries(x)  # (B, H, Tq, Dh)
        keys, values = self.project_keys_values(memory)  # (B, H, Tk, Dh) each
        context = self.attend(queries, keys, values, mask, is_causal=self.causal)  # (B, H, Tq, Dh)
        return self.combine_heads(context)  # (B, Tq, D)
