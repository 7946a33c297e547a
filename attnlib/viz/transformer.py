"""The whole Transformer and its decoding loop drawn, and its cross-attention explored: notebook 11.

Shapes: ``B`` examples, ``L`` layers, ``H`` heads, ``Tt``/``Ts`` target/source length.

Drawn in notebook 11 (the Transformer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import torch
from matplotlib import rcParams
from matplotlib.patches import Rectangle

from ..i18n import N_, tr
from .drawing import BLOCK, CONTEXT, DECODER, ENCODER, QUERY, WEIGHT, arrow, axes_or_new, block_outline, box
from .explorers import explorer
from .heatmaps import replot_attention

__all__ = ["cross_attention_explorer", "decoding_loop_diagram", "outline_cells", "transformer_diagram"]

_WIDTH = 3.4  # every box of the two columns


def _column(ax: Any, x: float, y: float, parts: Sequence[tuple[str, str]]) -> float:
    """Boxes stacked upwards from ``y``, an arrow into each; returns the height above the last."""
    for text, colour in parts:
        arrow(ax, (x, y), (x, y + 0.35))
        y += 0.65
        box(ax, x, y, text, colour, width=_WIDTH)
        y += 0.3
    return y


def _stack(
    ax: Any, x: float, y: float, sublayers: Sequence[str], colour: str, label: str
) -> tuple[float, dict]:
    """One layer's sublayers in a dashed frame labelled ``label`` (the repeat count) on its right."""
    bottom, centres = y, {}
    for sublayer in sublayers:
        y = _column(ax, x, y, [(sublayer, colour)])
        centres[sublayer] = y - 0.3
    ax.add_patch(Rectangle((x - 2.0, bottom + 0.1), 4.0, y - bottom, fill=False, ls="--", ec=colour, lw=1.2))
    ax.text(x + 2.1, (bottom + y) / 2, label, color=colour, va="center", fontsize=10)
    return y + 0.1, centres


def transformer_diagram(n_layers: int | None = None, *, ax: Any = None) -> Any:
    """Draw the encoder-decoder Transformer from token ids to next-token probabilities.

    Left, the encoder: source ids, embedding times sqrt(D), plus the positional encoding, then
    the encoder layers (self-attention, feed-forward), whose output is the memory. Right, the
    decoder: the target shifted right, embedded the same way, the decoder layers (masked
    self-attention, cross-attention, feed-forward), a linear head and a softmax. An arrow
    carries the memory into the cross-attention of every decoder layer. Residuals and norms
    are left out (notebook 10's :func:`transformer_layer_diagram` draws them).

    Args:
        n_layers: layers per stack, written on each frame ("N" if None).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if n_layers is not None and (not isinstance(n_layers, int) or n_layers < 1):
        raise ValueError(f"expected n_layers a positive int or None, got {n_layers!r}")
    ax = axes_or_new(ax, (10.0, 7.0))
    times = f"$\\times$ {'N' if n_layers is None else n_layers}"
    embed = [("embedding $\\times\\sqrt{D}$", ENCODER), ("+ positional encoding", WEIGHT)]
    # encoder, left
    ax.text(0.0, -0.45, "source ids $x_1 \\dots x_{T_s}$", ha="center", va="center", fontsize=10)
    y = _column(ax, 0.0, -0.25, embed)
    y, _ = _stack(ax, 0.0, y, ["self-attention", "feed-forward"], ENCODER, f"{times}\nencoder\nlayers")
    y = _column(ax, 0.0, y, [("memory: one vector per source token", CONTEXT)])
    memory_y = y - 0.3
    # decoder, right
    x = 6.5
    ax.text(
        x, -0.45, "target shifted right: <sos> $y_1 \\dots y_{t-1}$", ha="center", va="center", fontsize=10
    )
    y = _column(ax, x, -0.25, [("embedding $\\times\\sqrt{D}$", DECODER), embed[1]])
    y, centres = _stack(
        ax,
        x,
        y,
        ["masked self-attention", "cross-attention", "feed-forward"],
        DECODER,
        f"{times}\ndecoder\nlayers",
    )
    y = _column(ax, x, y, [("linear head: logits", CONTEXT), ("softmax", QUERY)])
    ax.text(x, y + 0.3, "$p(y_t \\mid y_{<t}, x)$: next-token probabilities", ha="center", fontsize=10)
    ax.annotate(
        "",
        xy=(x - _WIDTH / 2 - 0.05, centres["cross-attention"]),
        xytext=(_WIDTH / 2 + 0.05, memory_y),
        arrowprops={"arrowstyle": "->", "lw": 1.4, "color": CONTEXT, "connectionstyle": "arc3,rad=-0.2"},
    )
    ax.text(
        (x + 0.0) / 2, (memory_y + centres["cross-attention"]) / 2 + 0.8,
        "keys and values\nof every cross-attention", color=CONTEXT, ha="center", fontsize=9,
    )  # fmt: skip
    ax.set_title("the encoder-decoder Transformer (residuals and LayerNorms as in notebook 10)", fontsize=11)
    ax.set(xlim=(-2.3, x + 3.3), ylim=(-0.8, y + 0.8))
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def decoding_loop_diagram(target: Sequence[str] = tuple("2026-11-19"), *, ax: Any = None) -> Any:
    """Draw autoregressive (greedy) decoding: encode once, then decode, append, repeat until EOS.

    Left, the loop: the source is encoded once into the memory; the decoder reads every token
    so far (starting with SOS) and the memory, the head picks the next token, and the token is
    appended until it is EOS. Right, the steps for ``target``: the first three and the last.

    Args:
        target: the tokens the loop writes before EOS (EOS is added).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    tokens = [str(t) for t in target]
    if not tokens:
        raise ValueError("expected at least one target token, got none")
    ax = axes_or_new(ax, (12.0, 3.8))
    ax.text(0.0, -0.45, "source ids", ha="center", va="center", fontsize=10)
    y = _column(ax, 0.0, -0.25, [("encoder: runs once", ENCODER), ("memory", CONTEXT)])
    memory_y = y - 0.3
    x = 4.2
    box(ax, x, 0.4, "tokens so far: <sos> $y_1 \\dots y_t$", QUERY, width=_WIDTH)
    y = _column(ax, x, 0.7, [("decoder + head", DECODER), ("argmax: next token $y_{t+1}$", WEIGHT)])
    arrow(ax, (_WIDTH / 2 + 0.05, memory_y), (x - _WIDTH / 2 - 0.05, 1.35), color=CONTEXT, lw=1.2)
    ax.text(x, y + 0.35, "stop when $y_{t+1}$ is <eos>", ha="center", fontsize=10)
    # back down: append the new token and go round again
    ax.plot(
        [x + _WIDTH / 2, x + _WIDTH / 2 + 0.5, x + _WIDTH / 2 + 0.5],
        [y - 0.3, y - 0.3, 0.4],
        color="black",
        lw=1.0,
    )
    arrow(ax, (x + _WIDTH / 2 + 0.5, 0.4), (x + _WIDTH / 2 + 0.02, 0.4))
    ax.text(x + _WIDTH / 2 + 0.6, (y - 0.3 + 0.4) / 2, "else append it\nand repeat", fontsize=9, va="center")
    steps = [(t, tokens[:t], tokens[t]) for t in range(min(3, len(tokens)))]
    if len(tokens) > 3:
        steps.append(None)  # the steps left out
    steps.append((len(tokens), tokens, "<eos>"))
    read_width = len(" ".join(["<sos>", *tokens]))  # the longest prefix, in characters
    right, top = x + 4.6, y
    for row, step in enumerate(steps):
        line = (
            "…"
            if step is None
            else (f"step {step[0] + 1:<3d} {' '.join(['<sos>', *step[1]]):<{read_width}}  →  {step[2]}")
        )
        ax.text(right, top - 0.55 * row, line, fontsize=10, va="center", family="monospace")
    ax.text(right, top + 0.55, "read by the decoder → token written", fontsize=10, va="center", color=DECODER)
    ax.set_title("autoregressive decoding: the encoder once, the decoder once per new token", fontsize=11)
    ax.set(xlim=(-2.0, right + 0.17 * (read_width + 18)), ylim=(-0.8, top + 1.0))
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def outline_cells(ax: Any, rows: range, columns: range, label: str | None = None) -> Rectangle:
    """Outline a block of a heatmap's cells with a dashed box, optionally named above the panel.

    The box is ``block_outline``'s, as in notebook 09's ``plot_alignments``: red on viridis,
    mid-grey in greyscale. The name sits above the panel's top edge, centred over the box's columns, so
    that it covers no cell; the panel's title moves up to make room for it.

    Args:
        ax: the heatmap's axes (cell ``(i, j)`` centred on ``(j, i)``, as ``imshow`` draws it).
        rows: the outlined rows, 0-based, e.g. ``range(8, 10)``.
        columns: the outlined columns, 0-based.
        label: the block's name, written above the panel over its columns (and kept as the
            box's label), or None.

    Returns:
        The box.
    """
    if len(rows) == 0 or len(columns) == 0 or rows.step != 1 or columns.step != 1:
        raise ValueError(f"expected two non-empty ranges with step 1, got {rows} and {columns}")
    outline = ax.add_patch(block_outline(rows, columns, label or ""))
    if label is not None:
        ax.annotate(
            label, xy=((columns.start + columns.stop - 1) / 2, 1.0), xycoords=("data", "axes fraction"),
            xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=9, color=BLOCK,
            annotation_clip=False,
        )  # fmt: skip
        # the title above the names (9 points of text and 2 of gap; the same on every call)
        ax.set_title(ax.get_title(), fontsize=ax.title.get_fontsize(), pad=rcParams["axes.titlepad"] + 13)
    return outline


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

    heads = [(tr("mean"), -1)] + [(str(h), h) for h in range(n_heads)]  # (label, value)
    return explorer(
        draw,
        example=widgets.IntSlider(value=0, min=0, max=b - 1, description=N_("example")),
        layer=widgets.IntSlider(value=n_layers - 1, min=0, max=n_layers - 1, description=N_("layer")),
        head=widgets.ToggleButtons(options=heads, value=0, description=N_("head")),
    )
