"""A trained Transformer's cross-attention, explored: the explorer of notebook 11.

Shapes: ``B`` examples, ``L`` layers, ``H`` heads, ``Tt``/``Ts`` target/source length.

Drawn in notebook 11 (the Transformer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import torch

from .explorers import explorer
from .heatmaps import replot_attention

__all__ = ["cross_attention_explorer"]


def cross_attention_explorer(
    weights: torch.Tensor, sources: Sequence[Sequence[str]], outputs: Sequence[Sequence[str]]
):
    """Step through examples, layers and heads of a Transformer's cross-attention.

    Args:
        weights: ``(B, L, H, Tt, Ts)`` cross-attention weights (e.g. from ``greedy_decode``).
        sources: per example, its source tokens (at most ``Ts``; padding is cut off).
        outputs: per example, its generated tokens (at most ``Tt``).
    """
    w = weights.detach()
    b, n_layers, n_heads = w.shape[:3]
    if len(sources) != b or len(outputs) != b:
        raise ValueError(f"expected {b} sources and outputs, got {len(sources)} and {len(outputs)}")

    figure = None  # kept between redraws and updated in place

    def draw(example: int, layer: int, head: int) -> Any:
        nonlocal figure
        src, out = list(sources[example]), list(outputs[example])
        grid = w[example, layer, :, : len(out), : len(src)]  # (H, Tt, Ts)
        shown = grid.mean(0) if head == -1 else grid[head]  # (Tt, Ts)
        which = "mean over heads" if head == -1 else f"head {head}"
        figure = replot_attention(
            figure,
            shown,
            src,
            out,
            xlabel="source token",
            ylabel="generated token",
            vmax=1.0,
            suptitle=f"example {example}, layer {layer}, {which}",
        )
        return figure

    heads = [("mean", -1)] + [(str(h), h) for h in range(n_heads)]
    return explorer(
        draw,
        example=widgets.IntSlider(value=0, min=0, max=b - 1, description="example"),
        layer=widgets.IntSlider(value=n_layers - 1, min=0, max=n_layers - 1, description="layer"),
        head=widgets.ToggleButtons(options=heads, value=0, description="head"),
    )
