"""Scaled dot-product attention, the function every attention module in attnlib calls.

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``Dk`` query/key width,
``Dv`` value width. Inputs are ``(Tq, Dk)``, ``(B, Tq, Dk)`` or ``(B, H, Tq, Dk)``.

``scores`` are before softmax, ``weights`` after, and the result is ``context``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import require_probability, require_rank
from .masks import causal_mask, require_bool_mask

_LAYOUTS = {2: "(Tq, Dk)", 3: "(B, Tq, Dk)", 4: "(B, H, Tq, Dk)"}


def attention_scores(query: torch.Tensor, key: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Scaled dot products of every query with every key.

    Args:
        query: ``(..., Tq, Dk)``.
        key: ``(..., Tk, Dk)``.
        scale: factor applied to the dot products; ``1 / sqrt(Dk)`` if None.

    Returns:
        ``(..., Tq, Tk)`` scores (before softmax).
    """
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    return query @ key.transpose(-2, -1) * scale  # (..., Tq, Dk) @ (..., Dk, Tk) -> (..., Tq, Tk)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the keys (last dimension), giving masked keys zero weight.

    A query whose keys are all masked gets all-zero weights instead of NaN, as in torch's
    fused attention kernels; its gradient is zero too.

    Args:
        scores: ``(..., Tq, Tk)``.
        mask: bool, True = may attend, broadcastable to ``scores``.

    Returns:
        ``(..., Tq, Tk)`` weights; each row sums to 1, or to 0 if fully masked.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    row_visible = mask.any(dim=-1, keepdim=True)  # (..., Tq, 1)
    # Softmax of an all -inf row is NaN (0/0); give such rows finite scores, then zero them.
    scores = scores.masked_fill(~row_visible, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~row_visible, 0.0)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    is_causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ · scale) V, returning the context and the attention weights.

    Computes what ``torch.nn.functional.scaled_dot_product_attention`` computes, with the
    same mask meaning, and also returns the weights so they can be plotted.

    Args:
        query: ``(B, H, Tq, Dk)``, ``(B, Tq, Dk)`` or ``(Tq, Dk)``.
        key: same rank as ``query``, ``(..., Tk, Dk)``.
        value: same rank, ``(..., Tk, Dv)``; ``Dv`` may differ from ``Dk``.
        mask: bool, True = may attend, broadcastable to the scores ``(..., Tq, Tk)``.
        dropout_p: dropout probability applied to the weights (whenever > 0, like torch;
            modules pass 0 in eval mode).
        scale: multiplies the dot products; ``1 / sqrt(Dk)`` if None.
        is_causal: also apply a causal mask (requires ``Tq == Tk``).

    Returns:
        ``context`` of shape ``(..., Tq, Dv)`` and ``weights`` of shape ``(..., Tq, Tk)``.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_rank(name, t, (2, 3, 4), "(Tq, Dk), (B, Tq, Dk) or (B, H, Tq, Dk)")
    layout = _LAYOUTS[query.ndim]
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(
            f"expected query, key and value of the same rank {layout}, got shapes "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(
            f"query and key must share their feature size Dk, got query {tuple(query.shape)} "
            f"and key {tuple(key.shape)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key and value must have the same length Tk, got key {tuple(key.shape)} "
            f"and value {tuple(value.shape)}"
        )
    if query.shape[:-2] != key.shape[:-2] or key.shape[:-2] != value.shape[:-2]:
        raise ValueError(
            f"query, key and value must share their leading (batch/head) sizes, got "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    dropout_p = require_probability("dropout_p", dropout_p)
    tq, tk = query.shape[-2], key.shape[-2]
    scores_shape = (*query.shape[:-1], tk)

    if mask is not None:
        require_bool_mask(mask)
        try:
            broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
        except RuntimeError:
            broadcast = None
        if broadcast != torch.Size(scores_shape):
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                f"{tuple(scores_shape)}; for single-head (B, Tq, Tk) scores a padding mask is "
                "(B, 1, Tk), for multi-head (B, H, Tq, Tk) scores it is (B, 1, 1, Tk)"
            )
    if is_causal:
        if tq != tk:
            raise ValueError(f"is_causal needs Tq == Tk, got Tq={tq} and Tk={tk}")
        causal = causal_mask(tq, device=query.device)
        mask = causal if mask is None else mask & causal

    scores = attention_scores(query, key, scale)  # (..., Tq, Tk)
    weights = masked_softmax(scores, mask)  # (..., Tq, Tk)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    context = weights @ value  # (..., Tq, Tk) @ (..., Tk, Dv) -> (..., Tq, Dv)
    return context, weights
