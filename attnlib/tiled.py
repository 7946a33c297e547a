"""Attention that never builds the whole score matrix: online softmax and tiled (flash-style) attention.

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``Dk``/``Dv`` query-key and
value width, ``bq``/``bk`` the rows and columns of one tile.

Taught in notebook 13 (attention made efficient).

Each function computes exactly what attnlib's reference computes and is checked against it
(``tests/lib/test_efficient.py``): :func:`online_softmax` equals ``torch.softmax`` and
:func:`tiled_attention` equals :func:`attnlib.functional.scaled_dot_product_attention` (masks
included). Masks are boolean, True = may attend.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_positive_int, require_rank
from .masks import combine_masks, require_bool_mask

__all__ = ["online_softmax", "tiled_attention"]


def online_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    """Softmax over the last dimension, its normaliser found in one pass over blocks.

    Safe softmax reads the scores three times (max, sum of exponentials, outputs). The online
    normaliser (Milakov & Gimelshein, 2018) keeps a running max ``m`` and a running sum ``ell``
    and rescales ``ell`` whenever the max grows: ``ell <- ell * exp(m_old - m_new) + sum exp(x - m_new)``,
    so max and sum come from one pass; the outputs ``exp(x - m) / ell`` need a second.

    Args:
        scores: ``(..., T)``.
        block_size: how many scores one step reads.

    Returns:
        ``(..., T)``, equal to ``torch.softmax(scores, dim=-1)`` (NaN for a row of all ``-inf``,
        as there).
    """
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        raise TypeError(f"expected scores to be a floating-point tensor, got {type(scores).__name__}")
    require_positive_int("block_size", block_size)
    m = torch.full_like(scores[..., :1], float("-inf"))  # (..., 1): running max
    ell = torch.zeros_like(scores[..., :1])  # (..., 1): running sum of exp(x - m)
    for start in range(0, scores.shape[-1], block_size):
        block = scores[..., start : start + block_size]  # (..., b)
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = _finite(m_new)  # exp(-inf - (-inf)) would be NaN; shift an all -inf row by 0
        ell = ell * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(scores - _finite(m)) / ell


def _finite(m: torch.Tensor) -> torch.Tensor:
    """The running max with ``-inf`` (nothing seen yet, or all masked) replaced by 0."""
    return m.masked_fill(m == float("-inf"), 0.0)


def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    is_causal: bool = False,
    window: int | None = None,
    block_q: int = 64,
    block_k: int = 64,
) -> torch.Tensor:
    """softmax(Q Kᵀ · scale) V, one ``(block_q, block_k)`` tile of scores at a time.

    FlashAttention's idea (Dao et al., 2022) in plain PyTorch, in the loop order of
    FlashAttention-2 (Dao, 2023; ICLR 2024): for each block of queries, walk over the blocks of keys and
    values keeping a running max ``m``, a running sum ``ell`` and an unnormalised output ``acc``;
    rescale ``ell`` and ``acc`` by ``exp(m_old - m_new)`` when the max grows; divide by ``ell`` once
    at the end. The ``(Tq, Tk)`` score matrix never exists, only one tile of it. With
    ``is_causal`` the tiles entirely above the diagonal are skipped, and with a ``window`` also
    those entirely below the band: a mask tensor would still compute every score, skipping does
    not. The running max, sum and output are kept in float32 at least (as real kernels do), so
    bfloat16 and float16 inputs lose precision only in the inputs and the result. No dropout.

    Args:
        query: ``(..., Tq, Dk)``; ``...`` is ``()``, ``(B,)`` or ``(B, H)``.
        key: ``(..., Tk, Dk)``.
        value: ``(..., Tk, Dv)``.
        mask: bool, True = may attend, broadcastable to ``(..., Tq, Tk)``.
        scale: multiplies the dot products; ``1 / sqrt(Dk)`` if None.
        is_causal: also apply a causal mask (requires ``Tq == Tk``).
        window: with ``is_causal``, a causal sliding window of this many keys, the query's own
            included: query ``i`` sees keys ``i - window + 1 .. i``, exactly
            :func:`attnlib.masks.sliding_window_mask`.
        block_q: queries per tile.
        block_k: keys per tile.

    Returns:
        ``context`` ``(..., Tq, Dv)``, equal to :func:`attnlib.functional.scaled_dot_product_attention`'s
        (a query whose keys are all masked gets zeros).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_rank(name, t, (2, 3, 4), "(Tq, Dk), (B, Tq, Dk) or (B, H, Tq, Dk)")
    if not (query.ndim == key.ndim == value.ndim) or key.shape[:-1] != value.shape[:-1]:
        raise ValueError(
            f"expected query (..., Tq, Dk), key (..., Tk, Dk) and value (..., Tk, Dv) of the same rank and "
            f"leading sizes, got {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
        )
    if query.shape[:-2] != key.shape[:-2] or query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query and key must share their leading sizes and Dk, got {tuple(query.shape)} "
            f"and {tuple(key.shape)}"
        )
    require_positive_int("block_q", block_q)
    require_positive_int("block_k", block_k)
    tq, tk = query.shape[-2], key.shape[-2]
    if is_causal and tq != tk:
        raise ValueError(f"is_causal needs Tq == Tk, got Tq={tq} and Tk={tk}")
    if window is not None:
        require_positive_int("window", window)
        if not is_causal:
            raise ValueError("window is a causal sliding window: it needs is_causal=True")
    scores_shape = (*query.shape[:-1], tk)
    if mask is not None:
        require_bool_mask(mask)
        try:
            ok = torch.broadcast_shapes(mask.shape, scores_shape) == torch.Size(scores_shape)
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape {scores_shape}"
            )
        mask = mask.expand(scores_shape)  # a view: no (Tq, Tk) copy is made
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale

    # Reduced-precision inputs keep their statistics and sums in float32 (float64 stays float64).
    acc_dtype = torch.promote_types(query.dtype, torch.float32)
    context = query.new_empty((*query.shape[:-1], value.shape[-1]))  # (..., Tq, Dv)
    for q0 in range(0, tq, block_q):
        q1 = min(q0 + block_q, tq)
        q_blk = query[..., q0:q1, :].to(acc_dtype) * scale  # (..., bq, Dk)
        m = torch.full(
            (*q_blk.shape[:-1], 1), float("-inf"), dtype=acc_dtype, device=query.device
        )  # (..., bq, 1)
        ell = torch.zeros_like(m)  # (..., bq, 1)
        acc = q_blk.new_zeros((*q_blk.shape[:-1], value.shape[-1]))  # (..., bq, Dv)
        k_end = min(tk, q1) if is_causal else tk  # causal: keys after the block's last query never count
        # window: keys before q0 - window + 1 are out of every query's band; start at their tile
        k_start = 0 if window is None else max(0, q0 - window + 1) // block_k * block_k
        for k0 in range(k_start, k_end, block_k):
            k1 = min(k0 + block_k, tk)
            k_blk, v_blk = (
                key[..., k0:k1, :].to(acc_dtype),
                value[..., k0:k1, :].to(acc_dtype),
            )  # (..., bk, D*)
            s = q_blk @ k_blk.transpose(-2, -1)  # (..., bq, Dk) @ (..., Dk, bk) -> (..., bq, bk)
            visible = None if mask is None else mask[..., q0:q1, k0:k1]  # (..., bq, bk)
            crosses_diagonal = is_causal and k1 - 1 > q0
            crosses_band_edge = window is not None and k0 <= q1 - 1 - window  # the last query misses k0
            if crosses_diagonal or crosses_band_edge:
                rows, cols = torch.arange(q0, q1)[:, None], torch.arange(k0, k1)[None, :]
                band = cols <= rows if window is None else (cols <= rows) & (cols > rows - window)
                visible = combine_masks(visible, band.to(query.device))  # (bq, bk)
            if visible is not None:
                s = s.masked_fill(~visible, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (..., bq, 1)
            shift = _finite(m_new)
            p = torch.exp(s - shift)  # (..., bq, bk); masked keys give exp(-inf) = 0
            rescale = torch.exp(m - shift)  # (..., bq, 1); 0 while nothing was visible
            ell = ell * rescale + p.sum(dim=-1, keepdim=True)
            acc = acc * rescale + p @ v_blk  # (..., bq, bk) @ (..., bk, Dv) -> (..., bq, Dv)
            m = m_new
        # ell == 0 only where every key was masked: attnlib gives such queries a zero context.
        out = torch.where(ell > 0, acc / ell.clamp_min(torch.finfo(ell.dtype).tiny), 0.0)  # (..., bq, Dv)
        context[..., q0:q1, :] = out.to(context.dtype)
    return context
