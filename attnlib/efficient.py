"""Attention made efficient: online softmax, tiled (flash-style) attention, grouped-query and
sliding-window attention, and a way to measure peak memory on the CPU.

Shapes: ``B`` batch, ``H`` query heads, ``G`` key/value heads (groups), ``Tq``/``Tk`` query/key
length, ``Dh`` head width, ``Dk``/``Dv`` query-key and value width, ``D`` model width.

Each function computes exactly what attnlib's reference computes and is checked against it
(``tests/test_efficient.py``): :func:`online_softmax` equals ``torch.softmax``,
:func:`tiled_attention` equals :func:`attnlib.functional.scaled_dot_product_attention` (masks
included), and :class:`GroupedQueryAttention` with ``G = H`` equals
:class:`attnlib.MultiHeadAttention`. Masks are boolean, True = may attend.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import torch
from torch import nn

from ._checks import (
    check_divisible,
    check_features,
    check_length,
    check_positive_int,
    check_probability,
    check_rank,
)
from .functional import scaled_dot_product_attention
from .masks import causal_mask, check_bool_mask, combine_masks
from .multihead import merge_heads, split_heads
from .rotary import apply_rotary


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
    check_positive_int("block_size", block_size)
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
    block_q: int = 64,
    block_k: int = 64,
) -> torch.Tensor:
    """softmax(Q Kᵀ · scale) V, one ``(block_q, block_k)`` tile of scores at a time.

    FlashAttention's idea (Dao et al., 2022) in plain PyTorch, in the loop order of
    FlashAttention-2 (Dao, 2023): for each block of queries, walk over the blocks of keys and
    values keeping a running max ``m``, a running sum ``ell`` and an unnormalised output ``acc``;
    rescale ``ell`` and ``acc`` by ``exp(m_old - m_new)`` when the max grows; divide by ``ell`` once
    at the end. The ``(Tq, Tk)`` score matrix never exists, only one tile of it. With
    ``is_causal`` the tiles entirely above the diagonal are skipped. No dropout.

    Args:
        query: ``(..., Tq, Dk)``; ``...`` is ``()``, ``(B,)`` or ``(B, H)``.
        key: ``(..., Tk, Dk)``.
        value: ``(..., Tk, Dv)``.
        mask: bool, True = may attend, broadcastable to ``(..., Tq, Tk)``.
        scale: multiplies the dot products; ``1 / sqrt(Dk)`` if None.
        is_causal: also apply a causal mask (requires ``Tq == Tk``).
        block_q: queries per tile.
        block_k: keys per tile.

    Returns:
        ``context`` ``(..., Tq, Dv)``, equal to :func:`attnlib.functional.scaled_dot_product_attention`'s
        (a query whose keys are all masked gets zeros).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_rank(name, t, (2, 3, 4), "(Tq, Dk), (B, Tq, Dk) or (B, H, Tq, Dk)")
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
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    tq, tk = query.shape[-2], key.shape[-2]
    if is_causal and tq != tk:
        raise ValueError(f"is_causal needs Tq == Tk, got Tq={tq} and Tk={tk}")
    scores_shape = (*query.shape[:-1], tk)
    if mask is not None:
        check_bool_mask(mask)
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

    context = query.new_empty((*query.shape[:-1], value.shape[-1]))  # (..., Tq, Dv)
    for q0 in range(0, tq, block_q):
        q1 = min(q0 + block_q, tq)
        q_blk = query[..., q0:q1, :] * scale  # (..., bq, Dk)
        m = torch.full((*q_blk.shape[:-1], 1), float("-inf"), dtype=query.dtype)  # (..., bq, 1)
        ell = torch.zeros_like(m)  # (..., bq, 1)
        acc = torch.zeros((*q_blk.shape[:-1], value.shape[-1]), dtype=query.dtype)  # (..., bq, Dv)
        k_end = min(tk, q1) if is_causal else tk  # causal: keys after the block's last query never count
        for k0 in range(0, k_end, block_k):
            k1 = min(k0 + block_k, tk)
            s = q_blk @ key[..., k0:k1, :].transpose(-2, -1)  # (..., bq, Dk) @ (..., Dk, bk) -> (..., bq, bk)
            visible = None if mask is None else mask[..., q0:q1, k0:k1]  # (..., bq, bk)
            if is_causal and k1 - 1 > q0:  # the tile crosses the diagonal
                rows = torch.arange(q0, q1)[:, None]
                visible = combine_masks(visible, torch.arange(k0, k1)[None, :] <= rows)  # (bq, bk)
            if visible is not None:
                s = s.masked_fill(~visible, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (..., bq, 1)
            shift = _finite(m_new)
            p = torch.exp(s - shift)  # (..., bq, bk); masked keys give exp(-inf) = 0
            rescale = torch.exp(m - shift)  # (..., bq, 1); 0 while nothing was visible
            ell = ell * rescale + p.sum(dim=-1, keepdim=True)
            acc = acc * rescale + p @ value[..., k0:k1, :]  # (..., bq, bk) @ (..., bk, Dv) -> (..., bq, Dv)
            m = m_new
        # ell == 0 only where every key was masked: attnlib gives such queries a zero context.
        context[..., q0:q1, :] = torch.where(ell > 0, acc / ell.clamp_min(torch.finfo(ell.dtype).tiny), 0.0)
    return context


def peak_memory(fn: Callable[[], object]) -> int:
    """Bytes of CPU memory ``fn()`` needed at its peak, above what was allocated before.

    Runs ``fn`` under ``torch.profiler`` with ``profile_memory=True``, which records every
    allocation and every free of PyTorch's CPU allocator (inside fused kernels too) with its
    size and time, then replays them in time order and returns the largest running total. The
    result ``fn`` returns counts while it is alive; inputs made before the call do not.

    Args:
        fn: a function of no arguments, e.g. ``lambda: attention(q, k, v)``.

    Returns:
        The peak, in bytes.
    """
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    # Kineto, the profiler's C++ library, prints a "profiler_start/stop" line for every run unless
    # its log level is raised before its first use; a user's own setting wins.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:  # walk the tree of recorded events, collecting allocations and frees
        event = stack.pop()
        if event.tag == _EventType.Allocation and event.extra_fields.device.type == "cpu":
            events.append((event.start_time_ns, event.extra_fields.alloc_size))
        stack.extend(event.children)
    current = peak = 0
    for _, size in sorted(events):
        current += size  # frees have negative sizes
        peak = max(peak, current)
    return peak


def sliding_window_mask(size: int, window: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Causal sliding window: query ``i`` may attend to keys ``i - window + 1 .. i``.

    ``window`` counts the visible keys, the query's own position included; near the start a
    query sees fewer. With ``window >= size`` it is :func:`attnlib.causal_mask`.

    Args:
        size: sequence length ``T``.
        window: keys each query sees, ``w >= 1``.
        device: where to allocate the mask.

    Returns:
        ``(T, T)`` bool tensor, True = may attend.
    """
    check_positive_int("window", window)
    pos = torch.arange(check_positive_int("size", size), device=device)
    return causal_mask(size, device=device) & (pos[None, :] > pos[:, None] - window)  # (T, T)


def receptive_field(mask: torch.Tensor, n_layers: int) -> torch.Tensor:
    """Which inputs can influence which outputs through ``n_layers`` layers that all use ``mask``.

    Output ``i`` of one layer mixes the inputs ``j`` with ``mask[i, j]``; through ``L`` layers it
    reaches ``j`` when a chain ``i -> k1 -> ... -> j`` of allowed steps exists: the boolean
    matrix power ``mask^L``.

    Args:
        mask: ``(T, T)`` bool, True = may attend (its diagonal should be True, as a residual
            connection or attending to oneself makes it).
        n_layers: ``L >= 1``.

    Returns:
        ``(T, T)`` bool, True where input ``j`` reaches output ``i``.
    """
    check_rank("mask", check_bool_mask(mask), (2,), "(T, T)")
    check_positive_int("n_layers", n_layers)
    step = mask.float()
    reach = step
    for _ in range(n_layers - 1):
        reach = ((reach @ step) > 0).float()  # (T, T) @ (T, T) -> (T, T): one more allowed step
    return reach.bool()


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Size of a decoder's key/value cache: ``2 (K and V) x L x G x Dh x T x B x bytes``.

    Args:
        n_layers: decoder layers ``L``.
        n_kv_heads: key/value heads ``G`` per layer (``H`` for multi-head, 1 for multi-query).
        head_dim: ``Dh``.
        seq_len: cached positions ``T``.
        batch: sequences ``B``.
        bytes_per_value: 2 for float16/bfloat16, 4 for float32.
    """
    sizes = {"n_layers": n_layers, "n_kv_heads": n_kv_heads, "head_dim": head_dim, "seq_len": seq_len}
    for name, n in {**sizes, "batch": batch, "bytes_per_value": bytes_per_value}.items():
        check_positive_int(name, n)
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value


class GroupedQueryAttention(nn.Module):
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
    ) -> None:
        super().__init__()
        self.head_dim = check_divisible(d_out, num_heads)
        check_divisible(num_heads, num_kv_heads, "num_heads", "num_kv_heads")
        if window is not None and not causal:
            raise ValueError("window is a causal sliding window: it needs causal=True")
        if rotary and self.head_dim % 2:
            raise ValueError(f"rotary needs an even head width Dh, got Dh={self.head_dim}")
        self.d_in = check_positive_int("d_in", d_in)
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.context_length = check_positive_int("context_length", context_length)
        self.causal, self.window, self.rotary = causal, window, rotary
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)  # G heads, not H
        self.W_value = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.last_attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, T, Din)``; mask bool, True = may attend, broadcastable to ``(B, H, T, T)``.
        Returns: ``(B, T, D)``."""
        check_rank("x", x, (3,), "(B, T, Din)")
        check_features("x", x, self.d_in, "(B, T, Din)", "Din")
        t = x.shape[1]
        check_length("x", t, self.context_length)
        if self.window is not None:
            mask = combine_masks(sliding_window_mask(t, self.window, device=x.device), mask)
        elif self.causal:
            mask = combine_masks(causal_mask(t, device=x.device), mask)
        queries = split_heads(self.W_query(x), self.num_heads)  # (B, H, T, Dh)
        keys = split_heads(self.W_key(x), self.num_kv_heads)  # (B, G, T, Dh)
        values = split_heads(self.W_value(x), self.num_kv_heads)  # (B, G, T, Dh)
        if self.rotary:
            queries, keys = apply_rotary(queries), apply_rotary(keys)
        group = self.num_heads // self.num_kv_heads
        keys = keys.repeat_interleave(group, dim=1)  # (B, G, T, Dh) -> (B, H, T, Dh): head h gets h // group
        values = values.repeat_interleave(group, dim=1)  # (B, H, T, Dh)
        context, weights = scaled_dot_product_attention(
            queries, keys, values, mask, dropout_p=self.dropout.p if self.training else 0.0
        )  # (B, H, T, Dh), (B, H, T, T)
        self.last_attn_weights = weights.detach()
        return self.out_proj(merge_heads(context))  # (B, H, T, Dh) -> (B, T, D)
