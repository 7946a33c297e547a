"""Single-head self-attention modules, with the signatures of Raschka (2024, ch. 3).

Shapes: ``B`` batch, ``T`` tokens, ``Din`` input width, ``Dout`` output width.

Taught in notebooks 02 (trainable weights) and 04 (dropout on attention weights).

Parameters are created in the book's order (query, key, value), so that after the same
``torch.manual_seed`` these modules hold, and print, the book's very tensors.
Each module keeps ``last_attn_weights`` (detached) from its latest forward pass.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import (
    require_features,
    require_length,
    require_positive_int,
    require_probability,
    require_rank,
)
from .functional import scaled_dot_product_attention
from .masks import causal_mask, combine_masks

__all__ = ["CausalAttention", "SelfAttention", "SelfAttentionV1"]


class SelfAttentionV1(nn.Module):
    """Self-attention with raw ``nn.Parameter`` weight matrices (``x @ W``).

    Args:
        d_in: input width ``Din``.
        d_out: query/key/value width ``Dout``.
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.d_in = require_positive_int("d_in", d_in)
        self.d_out = require_positive_int("d_out", d_out)
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(T, Din)`` or ``(B, T, Din)``. Returns: context, same rank, width ``Dout``."""
        require_rank("x", x, (2, 3), "(T, Din) or (B, T, Din)")
        require_features("x", x, self.d_in, "(..., T, Din)", "Din")
        queries = x @ self.W_query  # (..., T, Din) @ (Din, Dout) -> (..., T, Dout)
        keys = x @ self.W_key
        values = x @ self.W_value
        context, weights = scaled_dot_product_attention(queries, keys, values)
        self.last_attn_weights = weights.detach()
        return context


class SelfAttention(nn.Module):
    """Self-attention with ``nn.Linear`` projections (the ``SelfAttention`` of Raschka (2024, ch. 3)).

    Args:
        d_in: input width ``Din``.
        d_out: query/key/value width ``Dout``.
        qkv_bias: add a bias to the three projections.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_in = require_positive_int("d_in", d_in)
        self.d_out = require_positive_int("d_out", d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(T, Din)`` or ``(B, T, Din)``; mask bool, True = may attend.
        Returns: context ``(..., T, Dout)``."""
        require_rank("x", x, (2, 3), "(T, Din) or (B, T, Din)")
        require_features("x", x, self.d_in, "(..., T, Din)", "Din")
        context, weights = scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x), mask)
        self.last_attn_weights = weights.detach()
        return context


class CausalAttention(nn.Module):
    """Causal self-attention with dropout on the weights (Raschka (2024, ch. 3)).

    Args:
        d_in: input width ``Din``.
        d_out: query/key/value width ``Dout``.
        context_length: longest sequence the module accepts.
        dropout: probability of dropping an attention weight during training.
        qkv_bias: add a bias to the three projections.
    """

    def __init__(
        self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False
    ) -> None:
        super().__init__()
        self.d_in = require_positive_int("d_in", d_in)
        self.d_out = require_positive_int("d_out", d_out)
        self.context_length = require_positive_int("context_length", context_length)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        # True = may attend (the book stores the inverse, triu(..., diagonal=1)).
        self.register_buffer("mask", causal_mask(context_length), persistent=False)
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, T, Din)``; mask optional extra mask (e.g. padding), True = may attend.
        Returns: context ``(B, T, Dout)``."""
        require_rank("x", x, (3,), "(B, T, Din)")
        require_features("x", x, self.d_in, "(B, T, Din)", "Din")
        num_tokens = x.shape[1]
        require_length("x", num_tokens, self.context_length)
        allowed = combine_masks(self.mask[:num_tokens, :num_tokens], mask)  # (T, T) & mask
        context, weights = scaled_dot_product_attention(
            self.W_query(x),
            self.W_key(x),
            self.W_value(x),
            allowed,
            dropout_p=self.dropout.p if self.training else 0.0,
        )
        self.last_attn_weights = weights.detach()
        return context
