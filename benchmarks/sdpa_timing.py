"""Notebook 13's table of attention time against T, with as many rounds as asked.

The same calls as the notebook's section 3 (B = 1, H = 4, Dh = 32, causal, float32, one
thread): attnlib's attention, ``F.scaled_dot_product_attention`` and ``tiled_attention``,
forward and forward + backward (q, k and v all require grad, so every method computes dQ, dK
and dV). After one warm-up call each, every round runs the six calls of one T in turn; the
table gives the median of each over the rounds and its ratio to ``F.sdpa`` of the same kind.

    python benchmarks/sdpa_timing.py --rounds 25
    ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX ONEDNN_MAX_CPU_ISA=AVX python benchmarks/sdpa_timing.py

docs/performance.md records the runs. Not a test: nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F

import attnlib
from attnlib.tiled import tiled_attention

METHODS = {
    "attnlib": lambda q, k, v: attnlib.scaled_dot_product_attention(q, k, v, is_causal=True)[0],
    "F.sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "tiled (Python)": lambda q, k, v: tiled_attention(q, k, v, is_causal=True),
}
KINDS = {"forward": "fwd", "forward + backward": "fwd+bwd"}


def median_times(calls, rounds=3):
    """Median seconds of each call over `rounds` rounds (odd); within a round the calls take turns."""
    for call in calls.values():
        call()  # warm-up
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: sorted(seconds)[rounds // 2] for name, seconds in times.items()}


def forward_backward(attend, q, k, v):
    """One forward and backward call, with q, k and v all requiring grad (dQ, dK, dV computed)."""
    q, k, v = (x.clone().requires_grad_() for x in (q, k, v))
    return lambda: attend(q, k, v).sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25, help="rounds per T (odd; the notebook uses 3)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512, 1024])
    args = parser.parse_args()
    if args.rounds < 1 or args.rounds % 2 == 0:
        parser.error(f"--rounds must be odd and positive, got {args.rounds}")
    attnlib.reproducible()  # seed 123, one thread, as in the notebook
    print(
        f"torch {torch.__version__}, path {torch.backends.cpu.get_cpu_capability()}, "
        f"{torch.get_num_threads()} thread, load average {os.getloadavg()[0]:.1f}, {args.rounds} rounds"
    )
    timings = {(name, kind): [] for name in METHODS for kind in KINDS}
    for t in args.lengths:
        q, k, v = torch.randn(3, 1, 4, t, 32).unbind(0)  # (B, H, T, Dh) each
        calls = {}
        for name, attend in METHODS.items():
            calls[name, "forward"] = lambda attend=attend, q=q, k=k, v=v: attend(q, k, v)
            calls[name, "forward + backward"] = forward_backward(attend, q, k, v)
        for key, seconds in median_times(calls, args.rounds).items():
            timings[key].append(seconds)
    print(f"{f'median of {args.rounds}, x F.sdpa':26s}" + "".join(f"T={t:<16d}" for t in args.lengths))
    for (name, kind), values in timings.items():
        base = timings["F.sdpa", kind]
        cells = "".join(f"{s * 1e3:8.2f}ms {s / b:5.2f}x " for s, b in zip(values, base, strict=True))
        print(f"{name + ', ' + KINDS[kind]:26s}" + cells)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
