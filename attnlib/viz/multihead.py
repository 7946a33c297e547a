"""Multi-head attention drawn, and its heads stepped through: the pictures of notebook 05.

Shapes: ``B`` batch, ``T`` tokens, ``D`` model width, ``H`` heads, ``Dh = D / H`` head width.

Drawn in notebook 05 (multi-head attention).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from ..i18n import N_
from .drawing import DECODER, ENCODER, arrow, axes_or_new, box
from .explorers import explorer
from .heatmaps import replot_attention

__all__ = ["head_explorer", "multihead_diagram"]


def multihead_diagram(num_heads: int = 2, *, ax: Any = None) -> Any:
    """Draw multi-head attention: project, split into heads, attend per head, merge, project.

    Each of ``Q``, ``K``, ``V`` is drawn as a bar of width ``D`` cut into ``H`` slices of
    ``Dh = D / H`` features; head ``h`` attends with slice ``h`` of all three, and the heads'
    contexts are put side by side again before ``out_proj``.

    Args:
        num_heads: ``H``, heads drawn (1 to 6).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or not 1 <= num_heads <= 6:
        raise ValueError(f"expected num_heads an int from 1 to 6 (to fit the drawing), got {num_heads!r}")
    ax = axes_or_new(ax, (9.5, 5.2))
    shades = plt.get_cmap("viridis")([0.15 + 0.7 * h / max(1, num_heads - 1) for h in range(num_heads)])
    bar_w, slice_w = 2.4, 2.4 / num_heads

    def bar(x: float, y: float, label: str) -> None:
        for h in range(num_heads):
            ax.add_patch(Rectangle((x + h * slice_w, y), slice_w, 0.45, fc=shades[h], ec="black", lw=0.8))
        ax.text(x - 0.15, y + 0.22, label, ha="right", va="center", fontsize=10)

    box(ax, 3.9, 0.0, "$x$  (B, T, D)", ENCODER, width=2.0)
    for k, (name, proj) in enumerate([("Q", "W_q"), ("K", "W_k"), ("V", "W_v")]):
        x = 0.9 + k * 3.0
        arrow(ax, (3.9, 0.3), (x + bar_w / 2, 1.1))
        ax.text(x + bar_w / 2 + 0.1, 0.75, f"${proj}$", fontsize=9)
        bar(x, 1.15, f"${name}$")
    ax.text(9.6, 1.37, "split: (B, T, D) → (B, H, T, Dh)", va="center", fontsize=9)
    head_w = 8.4 / num_heads
    for h in range(num_heads):
        x = 0.9 + h * head_w + head_w / 2
        for k in range(3):
            arrow(ax, (0.9 + k * 3.0 + (h + 0.5) * slice_w, 1.6), (x, 2.45), color=shades[h], lw=0.8)
        ax.add_patch(Rectangle((x - 0.55, 2.5), 1.1, 0.6, fc=shades[h], ec="black", lw=0.8))
        ax.text(
            x,
            2.8,
            f"head {h}",
            ha="center",
            va="center",
            fontsize=9,
            color="white" if h < num_heads / 2 else "black",
        )
        arrow(ax, (x, 3.1), (3.9 - bar_w / 2 + (h + 0.5) * slice_w, 3.65), color=shades[h], lw=0.8)
    ax.text(9.6, 2.8, "softmax$(QK^\\top/\\sqrt{D_h})V$ in every head", va="center", fontsize=9)
    bar(3.9 - bar_w / 2, 3.7, "concat")
    ax.text(9.6, 3.92, "merge: (B, H, T, Dh) → (B, T, D)", va="center", fontsize=9)
    arrow(ax, (3.9, 4.15), (3.9, 4.55))
    box(ax, 3.9, 4.85, "out_proj → (B, T, D)", DECODER, width=2.6)
    ax.set(xlim=(-0.6, 13.6), ylim=(-0.5, 5.4))
    ax.set_title(f"multi-head attention, H = {num_heads}: one slice of Q, K and V per head")
    ax.set_axis_off()
    return ax


def head_explorer(weights: torch.Tensor, tokens: Sequence[str]):
    """Step through the heads of a multi-head module's weights.

    Args:
        weights: ``(H, T, T)`` or ``(B, H, T, T)`` (first batch element shown).
        tokens: ``T`` labels.
    """
    w = weights.detach()
    w = w[0] if w.ndim == 4 else w  # (H, T, T)

    figure = None  # kept between redraws and updated in place

    def draw(head: int) -> Any:
        nonlocal figure
        figure = replot_attention(
            figure,
            w[head],
            tokens,
            annotate=len(tokens) <= 8,
            vmax=1.0,
            suptitle=f"head {head} of {w.shape[0]}",
        )
        return figure

    return explorer(draw, head=widgets.IntSlider(value=0, min=0, max=w.shape[0] - 1, description=N_("head")))
