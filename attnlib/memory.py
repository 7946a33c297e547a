"""What attention costs in memory: measure a peak on the CPU, or count a key/value cache.

Shapes: ``B`` batch, ``L`` layers, ``G`` key/value heads, ``T`` cached positions, ``Dh`` head width.

Taught in notebook 13 (attention made efficient); notebook 12 (a GPT with a KV cache) counts its
cache with :func:`kv_cache_bytes`.

:func:`peak_memory` measures what a function allocates at its peak (notebook 13 compares
attention's ``(Tq, Tk)`` score matrix with a tiled version that never builds it);
:func:`kv_cache_bytes` is the formula for a decoder's key/value cache (notebook 12's
:class:`~attnlib.kv_cache.KVCache`, and how grouped-query attention shrinks it).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ._validate import require_positive_int

__all__ = ["kv_cache_bytes", "peak_memory"]


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
        require_positive_int(name, n)
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
