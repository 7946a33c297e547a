"""Scaled dot-product attention, the function every attention module in attnlib calls.

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``Dk`` query/key width,
``Dv`` value width. Inputs are ``(Tq, Dk)``, ``(B, Tq, Dk)`` or ``(B, H, Tq, Dk)``.

Taught in notebook 01 (dot-product attention); its fast path, :func:`fused_attention`, in notebook
13 (attention made efficient).

``scores`` are before softmax, ``weights`` after, and the result is ``context``.

Two public functions, both checking their inputs: :func:`scaled_dot_product_attention` (the
explicit path, which returns the weights) and :func:`fused_attention` (the fast path,
``F.scaled_dot_product_attention``, no weights). The attention modules
(:mod:`attnlib.multihead`, :mod:`attnlib.fused_qkv`, :mod:`attnlib.gqa`) make one call,
``_attend``, which picks the path by their ``need_weights`` switch
(:class:`attnlib.fast_path.FastPathAttention`) and skips the checks their ``forward`` already ran.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import require_probability, require_rank
from .masks import causal_mask, require_bool_mask

__all__ = [
    "attention_scores",
    "fused_attention",
    "masked_softmax",
    "require_attention_inputs",
    "require_mask_fits",
    "scaled_dot_product_attention",
]

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
    # The product is a fresh tensor, so it is scaled in place: one (..., Tq, Tk) copy fewer.
    return (query @ key.transpose(-2, -1)).mul_(scale)  # (..., Tq, Dk) @ (..., Dk, Tk) -> (..., Tq, Tk)


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
    return _softmax_masked_out(scores.masked_fill(~mask, float("-inf")), mask)


def _softmax_masked_out(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax of ``scores`` whose masked keys already hold ``-inf``; fully masked rows get 0."""
    row_visible = mask.any(dim=-1, keepdim=True)  # (..., Tq, 1), as small as the mask
    if bool(row_visible.all()):  # the usual case: two passes over the scores saved
        return torch.softmax(scores, dim=-1)
    # Softmax of an all -inf row is NaN (0/0); give such rows finite scores, then zero them.
    scores = scores.masked_fill(~row_visible, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~row_visible, 0.0)


def require_attention_inputs(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    is_causal: bool = False,
    enable_gqa: bool = False,
) -> float:
    """Raise a clear error unless the arguments fit scaled dot-product attention.

    The checks of :func:`scaled_dot_product_attention` and :func:`fused_attention`, written
    once; the attention modules run them on what a caller hands in (the mask) and skip them
    for the queries, keys and values that their own projections just made.

    Args:
        query, key, value, mask, dropout_p, is_causal: as in :func:`scaled_dot_product_attention`.
        enable_gqa: keys and values may have fewer heads than the queries (``H`` a multiple of
            their ``G``), as in ``F.scaled_dot_product_attention(..., enable_gqa=True)``.

    Returns:
        ``dropout_p`` as a float.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_rank(name, t, (2, 3, 4), "(Tq, Dk), (B, Tq, Dk) or (B, H, Tq, Dk)")
    layout = _LAYOUTS[query.ndim]
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not t.is_floating_point():
            raise TypeError(
                f"expected {name} to hold floating-point numbers, got dtype {t.dtype}; "
                f"convert it first, e.g. {name}.float()"
            )
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(
            f"expected query, key and value of one dtype, got {query.dtype}, {key.dtype} and "
            f"{value.dtype}; convert them to one, e.g. .float()"
        )
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
    grouped = enable_gqa and query.ndim == 4 and key.shape[:-2] == value.shape[:-2]
    grouped = grouped and query.shape[0] == key.shape[0] and query.shape[1] % key.shape[1] == 0
    if not grouped and (query.shape[:-2] != key.shape[:-2] or key.shape[:-2] != value.shape[:-2]):
        raise ValueError(
            f"query, key and value must share their leading (batch/head) sizes, got "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    dropout_p = require_probability("dropout_p", dropout_p)
    tq, tk = query.shape[-2], key.shape[-2]
    if mask is not None:
        require_mask_fits(mask, (*query.shape[:-1], tk))
    if is_causal and tq != tk:
        raise ValueError(f"is_causal needs Tq == Tk, got Tq={tq} and Tk={tk}")
    return dropout_p


def require_mask_fits(mask: torch.Tensor, scores_shape: tuple[int, ...]) -> None:
    """Raise unless ``mask`` is boolean and broadcasts to ``scores_shape`` ``(..., Tq, Tk)``."""
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
    dropout_p = require_attention_inputs(query, key, value, mask, dropout_p, is_causal=is_causal)
    return _explicit_attention(query, key, value, mask, dropout_p, scale, is_causal=is_causal)


def _explicit_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
    scale: float | None = None,
    *,
    is_causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`scaled_dot_product_attention` without its input checks (see :func:`_attend`)."""
    if is_causal:
        causal = causal_mask(query.shape[-2], device=query.device)
        mask = causal if mask is None else mask & causal
    scores = attention_scores(query, key, scale)  # (..., Tq, Tk), a fresh tensor
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        # Masked in place (the scores are ours): masked_softmax's numbers without its copy.
        weights = _softmax_masked_out(scores.masked_fill_(~mask, float("-inf")), mask)  # (..., Tq, Tk)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    context = weights @ value  # (..., Tq, Tk) @ (..., Tk, Dv) -> (..., Tq, Dv)
    return context, weights


def fused_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    is_causal: bool = False,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """The fast path: ``torch.nn.functional.scaled_dot_product_attention``, context only.

    The same function as :func:`scaled_dot_product_attention` (same mask meaning, fully masked
    query rows get zeros) computed by PyTorch's fused kernels, which never hold the whole
    ``(..., Tq, Tk)`` weights in memory: so there are no weights to return or plot.

    Args:
        query, key, value, mask, dropout_p, scale, is_causal: as in
            :func:`scaled_dot_product_attention`.
        enable_gqa: ``key`` and ``value`` ``(B, G, Tk, D)`` may have fewer heads than ``query``
            ``(B, H, Tq, Dk)``; query head ``h`` uses key/value head ``h // (H / G)``.

    Returns:
        ``context`` ``(..., Tq, Dv)``.
    """
    dropout_p = require_attention_inputs(
        query, key, value, mask, dropout_p, is_causal=is_causal, enable_gqa=enable_gqa
    )
    return _fused_attention(
        query, key, value, mask, dropout_p, scale, is_causal=is_causal, enable_gqa=enable_gqa
    )


def _fused_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
    scale: float | None = None,
    *,
    is_causal: bool = False,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """:func:`fused_attention` without its input checks (see :func:`_attend`)."""
    if is_causal and mask is not None:  # torch takes one or the other
        mask = mask & causal_mask(query.shape[-2], device=query.device)
        is_causal = False
    return F.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
        enable_gqa=enable_gqa,
    )  # fmt: skip


def _attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
    scale: float | None = None,
    *,
    is_causal: bool = False,
    enable_gqa: bool = False,
    need_weights: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The one attention call of attnlib's attention modules: the explicit path or the fast one.

    ``need_weights`` picks the path: True computes :func:`scaled_dot_product_attention`'s scores,
    softmax and weights (to be kept and plotted); False is the fast path, :func:`fused_attention`,
    the same function without the weights. Neither checks its inputs: a module checks what its
    caller hands it (the mask) once, in ``forward``, and its own projections make the queries,
    keys and values; the checks would otherwise run again in every layer of every step.

    Args:
        query: ``(B, H, Tq, Dk)``.
        key, value: ``(B, G, Tk, Dk)``; ``G = H``, or a divisor of ``H`` with ``enable_gqa``.
        mask, dropout_p, scale, is_causal: as in :func:`scaled_dot_product_attention`.
        enable_gqa: query head ``h`` reads key/value head ``h // (H / G)``, as in
            :func:`fused_attention` (the explicit path repeats the ``G`` heads to ``H``).
        need_weights: the explicit path (True) or the fast path (False).

    Returns:
        ``context`` ``(B, H, Tq, Dk)`` and ``weights`` ``(B, H, Tq, Tk)``, or None on the fast path.
    """
    if not need_weights:
        context = _fused_attention(
            query, key, value, mask, dropout_p, scale, is_causal=is_causal, enable_gqa=enable_gqa
        )  # (B, H, Tq, Dk)
        return context, None
    if enable_gqa:
        group = query.shape[-3] // key.shape[-3]  # H / G query heads per key/value head
        key = key.repeat_interleave(group, dim=-3)  # (B, G, Tk, Dk) -> (B, H, Tk, Dk): head h gets h // group
        value = value.repeat_interleave(group, dim=-3)  # (B, H, Tk, Dk)
    return _explicit_attention(query, key, value, mask, dropout_p, scale, is_causal=is_causal)
