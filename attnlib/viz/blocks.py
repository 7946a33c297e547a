"""A Transformer layer drawn, and sinusoidal positions explored: the pictures of notebook 10.

Shapes: ``T`` positions, ``D`` encoding width.

Drawn in notebook 10 (the Transformer's building blocks).
"""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from ..blocks import sinusoidal_encoding
from ..i18n import N_
from .drawing import CONTEXT, DECODER, ENCODER, QUERY, arrow, axes_or_new, box, residual_add
from .explorers import explorer, kept_figure
from .heatmaps import CMAP

__all__ = ["positional_encoding_explorer", "transformer_layer_diagram"]


def transformer_layer_diagram(*, norm_first: bool = False, ax: Any = None) -> Any:
    """Draw one encoder layer and one decoder layer, post-LN or pre-LN.

    Every sublayer is wrapped in a residual connection: post-LN (the paper) computes
    ``LayerNorm(x + sublayer(x))``, pre-LN ``x + sublayer(LayerNorm(x))``. The decoder's
    cross-attention takes its keys and values from the encoder's output (the memory).

    Args:
        norm_first: draw pre-LN instead of post-LN.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    ax = axes_or_new(ax, (9.0, 6.4))
    encoder = ["self-attention", "feed-forward"]
    decoder = ["masked self-attention", "cross-attention", "feed-forward"]
    tops = {}
    for x, name, sublayers, colour in (
        (0.0, "encoder layer", encoder, ENCODER),
        (5.0, "decoder layer", decoder, DECODER),
    ):
        y = 0.0
        ax.text(x, y - 0.55, "input $x$", ha="center", va="center", fontsize=10)
        for sublayer in sublayers:
            start = y
            parts = ["LayerNorm", sublayer] if norm_first else [sublayer]
            for part in parts:
                arrow(ax, (x, y + 0.05 if part is parts[0] else y - 0.2), (x, y + 0.35))
                y += 0.65
                box(ax, x, y, part, QUERY if part == "LayerNorm" else colour, width=2.8)
                if part == "cross-attention":
                    tops["cross"] = y  # where the memory comes in
                y += 0.3
            y = residual_add(ax, x, y, start + 0.1, skip_dx=1.6)
            if not norm_first:
                arrow(ax, (x, y - 0.02), (x, y + 0.35))
                y += 0.65
                box(ax, x, y, "LayerNorm", QUERY, width=2.8)
                y += 0.3
        ax.text(x, y + 0.4, name, ha="center", va="center", fontsize=11, color=colour, fontweight="bold")
        tops[name] = y
    ax.annotate(
        "",
        xy=(5.0 - 1.45, tops["cross"]),
        xytext=(0.6, tops["encoder layer"] + 0.15),
        arrowprops={"arrowstyle": "->", "lw": 1.2, "color": CONTEXT, "connectionstyle": "arc3,rad=0.25"},
    )
    # Above the encoder's name, where the arrow starts: no box or residual line runs there.
    ax.text(
        0.0,
        tops["encoder layer"] + 0.75,
        "memory (the encoder's output):\nkeys and values of cross-attention",
        fontsize=9,
        color=CONTEXT,
        ha="center",
        va="bottom",
    )
    note = (
        "pre-LN: x + sublayer(LayerNorm(x)); a final LayerNorm after the stack"
        if norm_first
        else ("post-LN (the paper): LayerNorm(x + sublayer(x))")
    )
    ax.set_title(note, fontsize=11)
    ax.set(xlim=(-2.4, 7.6), ylim=(-0.9, max(tops["encoder layer"], tops["decoder layer"]) + 0.8))
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def positional_encoding_explorer(max_len: int = 100, dim: int = 64):
    """Pick a pair of encoding dimensions and a position; see the pair turn on its circle.

    Left: the pair's sine and cosine over all positions. Middle: the same pair as points
    ``(sin, cos)``, in the order the table stores them (dimension ``2i`` across, ``2i + 1`` up),
    for positions ``0..p``: they start at the top of the unit circle and walk round it clockwise
    at the pair's own speed. Right: the whole encoding vector of position ``p``.

    It opens at position 10 on the first pair slow enough to turn less than half a circle over
    positions 0 to 10 (pair 5 when ``D = 64``), where the clockwise walk is easy to follow.

    Args:
        max_len: positions ``T`` shown.
        dim: encoding width ``D``.
    """
    pe = sinusoidal_encoding(max_len, dim)  # (T, D)
    positions = torch.arange(max_len)
    turn = torch.linspace(0, 2 * math.pi, 200)
    start = 10  # the position shown first
    wavelengths = [2 * math.pi * 10000 ** (2 * i / dim) for i in range(dim // 2)]
    first_pair = next((i for i, w in enumerate(wavelengths) if w > 2 * start), dim // 2 - 1)
    # some room between the panels, so the circle's label and the bars' do not crowd each other
    layout = {"wspace": 0.08}

    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates

    def draw(pair: int, position: int) -> Any:
        sin_col, cos_col = pe[:, 2 * pair], pe[:, 2 * pair + 1]  # (T,) each
        wavelength = wavelengths[pair]
        seen = slice(0, position + 1)
        colours = ["#fde725" if d // 2 == pair else "#3b528b" for d in range(dim)]
        titles = (
            f"pair {pair}: wavelength {wavelength:,.1f} positions",
            f"positions 0..{position}",
            f"PE[{position}] (pair {pair} highlighted)",
        )
        names = (f"sin (dim {2 * pair})", f"cos (dim {2 * pair + 1})")
        if kept:  # redrawn in place: new curves, points, bars and titles
            figure = kept["figure"]
            if kept["pair"] != pair:
                for line, column, name, text in zip(
                    kept["curves"], (sin_col, cos_col), names, kept["legend"].get_texts(), strict=True
                ):
                    line.set_ydata(column.numpy())
                    line.set_label(name)
                    text.set_text(name)
                figure.axes[0].relim()
                figure.axes[0].autoscale_view()
                # another pair's curves span another range, and their ticks may need more room:
                # the layout is solved again for this view
                figure.set_layout_engine("constrained", **layout)
                kept["pair"] = pair
            kept["now"].set_xdata([position, position])
            kept["walk"].set_offsets(torch.stack([sin_col[seen], cos_col[seen]], 1).numpy())
            kept["walk"].set_array(positions[seen].numpy())
            kept["here"].set_offsets([[float(sin_col[position]), float(cos_col[position])]])
            for bar, value, colour in zip(kept["bars"], pe[position].tolist(), colours, strict=True):
                bar.set_height(value)
                bar.set_facecolor(colour)
            for ax, title in zip(figure.axes, titles, strict=True):
                ax.set_title(title)
            return figure
        fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(13, 3.6), gridspec_kw={"width_ratios": [2, 1.1, 2]})
        fig.set_layout_engine("constrained", **layout)
        kept["curves"] = (
            a1.plot(positions, sin_col, label=names[0], color="#3b528b")[0],
            a1.plot(positions, cos_col, label=names[1], color="#5ec962")[0],
        )
        kept["now"] = a1.axvline(position, color="grey", linestyle=":")
        a1.set(xlabel="position", ylabel="value", title=titles[0])
        kept["legend"] = a1.legend(loc="lower left", fontsize=8)
        a2.plot(torch.sin(turn), torch.cos(turn), color="lightgrey")
        # (sin, cos) as the table stores the pair: position 0 sits at the top, (0, 1)
        kept["walk"] = a2.scatter(
            sin_col[seen], cos_col[seen], c=positions[seen], cmap=CMAP, vmin=0, vmax=max_len - 1, s=12
        )
        kept["here"] = a2.scatter(
            sin_col[position], cos_col[position], color="#fde725", edgecolor="black", s=60, zorder=3
        )
        # fixed limits round the unit circle: a redraw moves the points without rescaling
        a2.set(
            xlabel="sin (dim 2i)",
            ylabel="cos (dim 2i + 1)",
            title=titles[1],
            aspect="equal",
            xlim=(-1.1, 1.1),
            ylim=(-1.1, 1.1),
        )
        kept["bars"] = a3.bar(range(dim), pe[position], color=colours)
        a3.set(xlabel="dimension", ylabel="value", ylim=(-1.1, 1.1), title=titles[2])
        kept.update(pair=pair, figure=kept_figure(fig))
        return fig

    return explorer(
        draw,
        pair=widgets.IntSlider(value=first_pair, min=0, max=dim // 2 - 1, description=N_("pair i")),
        position=widgets.IntSlider(
            value=min(start, max_len - 1), min=0, max=max_len - 1, description=N_("position")
        ),
    )
