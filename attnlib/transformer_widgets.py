"""Interactive explorers for the Transformer notebooks (09 and 10).

Shapes: ``T`` positions, ``D`` width, ``L`` layers, ``H`` heads, ``Tt``/``Ts`` target/source
length. Built on :func:`attnlib.widgets.explorer` and :mod:`attnlib.plotting`; matplotlib and
ipywidgets are imported only when an explorer is made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .blocks import sinusoidal_encoding
from .plotting import CMAP, plot_attention
from .widgets import explorer


def positional_encoding_explorer(max_len: int = 100, dim: int = 64):
    """Pick a pair of encoding dimensions and a position; see the pair turn on its circle.

    Left: the pair's sine and cosine over all positions. Middle: the same pair as points
    ``(cos, sin)`` for positions ``0..p``, which walk round the unit circle at the pair's own
    speed. Right: the whole encoding vector of position ``p``.

    Args:
        max_len: positions ``T`` shown.
        dim: encoding width ``D``.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    pe = sinusoidal_encoding(max_len, dim)  # (T, D)
    positions = torch.arange(max_len)
    turn = torch.linspace(0, 2 * math.pi, 200)

    def draw(pair: int, position: int) -> None:
        sin_col, cos_col = pe[:, 2 * pair], pe[:, 2 * pair + 1]  # (T,) each
        wavelength = 2 * math.pi * 10000 ** (2 * pair / dim)
        _, (a1, a2, a3) = plt.subplots(
            1, 3, figsize=(13, 3.6), constrained_layout=True, gridspec_kw={"width_ratios": [2, 1.1, 2]}
        )
        a1.plot(positions, sin_col, label=f"sin (dim {2 * pair})", color="#3b528b")
        a1.plot(positions, cos_col, label=f"cos (dim {2 * pair + 1})", color="#5ec962")
        a1.axvline(position, color="grey", linestyle=":")
        a1.set(
            xlabel="position", ylabel="value", title=f"pair {pair}: wavelength {wavelength:,.1f} positions"
        )
        a1.legend(loc="lower left", fontsize=8)
        a2.plot(torch.cos(turn), torch.sin(turn), color="lightgrey")
        seen = slice(0, position + 1)
        a2.scatter(cos_col[seen], sin_col[seen], c=positions[seen], cmap=CMAP, vmin=0, vmax=max_len - 1, s=12)
        a2.scatter(cos_col[position], sin_col[position], color="#fde725", edgecolor="black", s=60, zorder=3)
        a2.set(xlabel="cos", ylabel="sin", title=f"positions 0..{position}", aspect="equal")
        colours = ["#fde725" if d // 2 == pair else "#3b528b" for d in range(dim)]
        a3.bar(range(dim), pe[position], color=colours)
        a3.set(
            xlabel="dimension",
            ylabel="value",
            ylim=(-1.1, 1.1),
            title=f"PE[{position}] (pair {pair} highlighted)",
        )

    return explorer(
        draw,
        pair=widgets.IntSlider(value=0, min=0, max=dim // 2 - 1, description="pair i"),
        position=widgets.IntSlider(value=10, min=0, max=max_len - 1, description="position"),
    )


def cross_attention_explorer(
    weights: torch.Tensor, sources: Sequence[Sequence[str]], outputs: Sequence[Sequence[str]]
):
    """Step through examples, layers and heads of a Transformer's cross-attention.

    Args:
        weights: ``(B, L, H, Tt, Ts)`` cross-attention weights (e.g. from ``greedy_decode``).
        sources: per example, its source tokens (at most ``Ts``; padding is cut off).
        outputs: per example, its generated tokens (at most ``Tt``).
    """
    import ipywidgets as widgets

    w = weights.detach()
    b, n_layers, n_heads = w.shape[:3]
    if len(sources) != b or len(outputs) != b:
        raise ValueError(f"expected {b} sources and outputs, got {len(sources)} and {len(outputs)}")

    def draw(example: int, layer: int, head: int) -> None:
        src, out = list(sources[example]), list(outputs[example])
        grid = w[example, layer, :, : len(out), : len(src)]  # (H, Tt, Ts)
        shown = grid.mean(0) if head == -1 else grid[head]  # (Tt, Ts)
        which = "mean over heads" if head == -1 else f"head {head}"
        plot_attention(
            shown,
            src,
            out,
            xlabel="source token",
            ylabel="generated token",
            vmax=1.0,
            suptitle=f"example {example}, layer {layer}, {which}",
        )

    heads = [("mean", -1)] + [(str(h), h) for h in range(n_heads)]
    return explorer(
        draw,
        example=widgets.IntSlider(value=0, min=0, max=b - 1, description="example"),
        layer=widgets.IntSlider(value=n_layers - 1, min=0, max=n_layers - 1, description="layer"),
        head=widgets.ToggleButtons(options=heads, value=0, description="head"),
    )
