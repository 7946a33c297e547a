"""How attnlib's attention compares with PyTorch's own, as ratios measured side by side.

Run with ``make bench`` (or ``python benchmarks/attention.py``). Every row times attnlib and
its PyTorch counterpart on the same inputs and weights, forward and backward, alternating
between the two in every round so that both see the same machine; it prints the median of
each and their ratio. An absolute time on a shared CPU means little; a ratio measured this
way holds much better. Nothing here is a test: CI never asserts a time.

Rows:

* ``MultiHeadAttention`` on the fast path (``need_weights=False``) and on the explicit path
  (``need_weights=True``, what notebooks that plot weights use) against
  ``nn.MultiheadAttention`` (``need_weights=False``, its own fast path), with and without a
  causal mask, at T = 128, 512 and 1024, on one and two threads;
* ``attnlib.functional.scaled_dot_product_attention`` (the explicit path) against a plain
  explicit ``softmax(Q Kᵀ / √d + mask) V`` and against ``F.scaled_dot_product_attention``;
* a causal sliding window (notebook 13): ``attnlib.tiled.tiled_attention(..., window=w)``, which
  skips the tiles outside the band, against attnlib's explicit attention and
  ``F.scaled_dot_product_attention`` given the same boolean window mask (both compute all T²
  scores), forward only, T = 512 to 8192; with the peak memory of each (``attnlib.memory``);
* one training step of notebook 11's Transformer (same batch, loss and optimiser step) against
  ``nn.Transformer`` holding the same layers, with the same embeddings and output layer.

``--quick`` runs fewer rounds (a smoke test of the script itself).
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

import attnlib
from attnlib.functional import scaled_dot_product_attention
from attnlib.masks import sliding_window_mask
from attnlib.memory import peak_memory
from attnlib.tiled import tiled_attention
from attnlib.transformer import Transformer

try:
    from attnlib.torch_reference import to_torch_transformer
except ImportError:  # attnlib before 0.2.0's split, to measure the code as it was
    from attnlib.transformer import to_torch_transformer

# (B, T, D, heads) per sequence length, as in the measurements of docs/performance.md.
SHAPES = {128: (8, 128, 256, 8), 512: (4, 512, 256, 8), 1024: (2, 1024, 512, 8)}


def timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def side_by_side(steps: dict[str, Callable[[], object]], rounds: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds of each step, the steps alternating within every round."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            times[name].append(timed(step))
    return {name: statistics.median(t) for name, t in times.items()}


def fwd_bwd(module: nn.Module, x: torch.Tensor, call: Callable[[nn.Module, torch.Tensor], torch.Tensor]):
    def step() -> None:
        module.zero_grad(set_to_none=True)
        x.grad = None
        call(module, x).sum().backward()

    return step


def nn_mha(m: nn.Module, x: torch.Tensor, upper: torch.Tensor | None, causal: bool) -> torch.Tensor:
    return m(x, x, x, attn_mask=upper, need_weights=False, is_causal=causal)[0]


def same_weights(ours: attnlib.MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        roles = (ours.W_query, ours.W_key, ours.W_value)
        theirs.in_proj_weight.copy_(torch.cat([r.weight for r in roles]))  # (3D, D)
        theirs.in_proj_bias.copy_(torch.cat([r.bias for r in roles]))  # (3D,)
        theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


def mha_rows(rounds: int) -> list[tuple[str, dict[str, float]]]:
    rows = []
    for t, (b, _, d, h) in SHAPES.items():
        for causal in (False, True):
            torch.manual_seed(0)
            ours = attnlib.MultiHeadAttention(d, d, t, 0.0, h, qkv_bias=True, causal=causal)
            theirs = nn.MultiheadAttention(d, h, batch_first=True)
            same_weights(ours, theirs)
            x = torch.randn(b, t, d, requires_grad=True)
            upper = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None  # True = masked out
            steps = {"nn.MultiheadAttention": fwd_bwd(theirs, x, partial(nn_mha, upper=upper, causal=causal))}
            if hasattr(ours, "need_weights"):
                fast = copy.deepcopy(ours)
                fast.need_weights = False
                steps["attnlib fast path"] = fwd_bwd(fast, x, nn.Module.__call__)
            steps["attnlib explicit path"] = fwd_bwd(ours, x, nn.Module.__call__)
            name = f"B={b} T={t} D={d} H={h} {'causal' if causal else 'no mask'}"
            rows.append((name, side_by_side(steps, rounds)))
    return rows


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The textbook explicit attention, with nothing else: softmax(Q Kᵀ / √d + mask) V."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, T, Dh) @ (B, H, Dh, T) -> (B, H, T, T)
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v  # (B, H, T, T) @ (B, H, T, Dh)


def ours_explicit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return scaled_dot_product_attention(q, k, v, mask)[0]


def torch_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def qkv_step(attention: Callable[..., torch.Tensor], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask):
    def step() -> None:
        for tensor in (q, k, v):
            tensor.grad = None
        attention(q, k, v, mask).sum().backward()

    return step


def functional_rows(rounds: int) -> list[tuple[str, dict[str, float]]]:
    rows = []
    b, h, dh = 4, 8, 32
    for t in SHAPES:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, t, dh, requires_grad=True) for _ in range(3))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        steps = {
            "plain explicit": qkv_step(plain_attention, q, k, v, mask),
            "attnlib explicit path": qkv_step(ours_explicit, q, k, v, mask),
            "F.scaled_dot_product_attention": qkv_step(torch_fused, q, k, v, mask),
        }
        rows.append((f"B={b} H={h} T={t} Dh={dh} causal", side_by_side(steps, rounds)))
    return rows


class TorchSeq2Seq(nn.Module):
    """``nn.Transformer`` between copies of ``model``'s embeddings, positional encoding and output layer."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.dim, self.pad_id = model.dim, model.pad_id
        self.src_embedding = copy.deepcopy(model.src_embedding)
        self.tgt_embedding = copy.deepcopy(model.tgt_embedding)
        self.pos_encoder = copy.deepcopy(model.pos_encoder)
        self.core = to_torch_transformer(model)
        self.output = copy.deepcopy(model.output)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        tgt_in = tgt[:, :-1]
        src_x = self.pos_encoder(self.src_embedding(src) * math.sqrt(self.dim))  # (B, Ts, D)
        tgt_x = self.pos_encoder(self.tgt_embedding(tgt_in) * math.sqrt(self.dim))  # (B, Tt-1, D)
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], dtype=torch.bool)
        padded = src == self.pad_id  # (B, Ts), True = masked out, as nn.Transformer means it
        out = self.core(
            src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=padded,
            memory_key_padding_mask=padded, tgt_is_causal=True,
        )  # fmt: skip
        return self.output(out)  # (B, Tt-1, V)


def notebook_11_model(vocab_sizes: tuple[int, int]) -> Transformer:
    torch.manual_seed(0)
    return Transformer(
        *vocab_sizes,
        dim=64,
        n_heads=4,
        n_layers=2,
        hidden_dim=128,
        max_seq_len=64,
        dropout=0.0,
        norm_first=True,
    )


def transformer_rows(rounds: int) -> list[tuple[str, dict[str, float]]]:
    from attnlib.tasks import date_datasets
    from attnlib.training import sequence_loss

    train_set, _ = date_datasets(2000, 10, seed=0)
    sizes = (len(train_set.src_vocab), len(train_set.tgt_vocab))
    ours = notebook_11_model(sizes)
    theirs = TorchSeq2Seq(ours)
    src, tgt = train_set.batch(range(32))
    pad = train_set.tgt_vocab.pad_id

    def step_of(model: nn.Module) -> Callable[[], None]:
        optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)

        def step() -> None:
            optimiser.zero_grad(set_to_none=True)
            sequence_loss(model(src, tgt), tgt, pad).backward()
            optimiser.step()

        return step

    steps = {"nn.Transformer": step_of(theirs), "attnlib Transformer": step_of(ours)}
    if hasattr(attnlib, "fast_attention"):
        steps["attnlib Transformer, fast path"] = step_of(attnlib.fast_attention(notebook_11_model(sizes)))
    return [
        (
            "notebook 11's Transformer, batch 32, Adam",
            side_by_side(steps, rounds if rounds < 9 else rounds * 4),
        )
    ]


WINDOW_LENGTHS = (512, 1024, 2048, 4096, 8192)


def window_rows(rounds: int, window: int = 256) -> list[tuple[str, dict[str, float]]]:
    """Forward seconds, B=1, H=2, Dh=32, a causal window of ``window`` keys; the peak memory of
    each method, in MB, is printed as it goes."""
    rows = []
    for t in WINDOW_LENGTHS:
        q, k, v = torch.randn(3, 1, 2, t, 32).unbind(0)
        band = sliding_window_mask(t, window)  # (T, T): True = may attend
        steps = {
            "F.sdpa + mask": partial(F.scaled_dot_product_attention, q, k, v, attn_mask=band),
            "attnlib + mask": partial(scaled_dot_product_attention, q, k, v, band),
            "tiled, window": partial(tiled_attention, q, k, v, is_causal=True, window=window),
        }
        peaks = "  ".join(f"{name}: {peak_memory(step) / 1e6:8.2f} MB" for name, step in steps.items())
        print(f"  T={t:<5d} w={window}, peak memory (mask made beforehand): {peaks}", flush=True)
        rows.append((f"T={t}, w={window}, B=1, H=2, Dh=32", side_by_side(steps, rounds, warmup=1)))
    return rows


def report(title: str, rows: list[tuple[str, dict[str, float]]], reference: str) -> None:
    print(f"\n{title} (median ms; ratio = time / {reference})")
    for name, times in rows:
        base = times[reference]
        cells = "  ".join(f"{k}: {v * 1e3:7.2f} ms ({v / base:4.2f}x)" for k, v in times.items())
        print(f"  {name:34s} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: check that the script runs")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", choices=["mha", "functional", "window", "transformer"], nargs="+")
    args = parser.parse_args()
    rounds = 2 if args.quick else 9
    print(f"torch {torch.__version__}, CPU code path {torch.backends.cpu.get_cpu_capability()}")
    only = set(args.only or ["mha", "functional", "window", "transformer"])
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(f"\n=== {threads} thread{'s' if threads > 1 else ''} ===")
        if "mha" in only:
            report("Multi-head attention, forward + backward", mha_rows(rounds), "nn.MultiheadAttention")
        if "functional" in only:
            report(
                "Scaled dot-product attention, forward + backward", functional_rows(rounds), "plain explicit"
            )
        if "window" in only:
            report("Causal sliding window, forward", window_rows(rounds), "F.sdpa + mask")
        if "transformer" in only:
            report("Training step", transformer_rows(rounds), "nn.Transformer")


if __name__ == "__main__":
    main()
