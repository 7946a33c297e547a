"""Boxes, arrows and residual joins: the primitives every schematic of the series is drawn with.

Shapes: none; coordinates are data units of one matplotlib ``Axes`` and a box is 0.6 high.
The colours are viridis's, so every diagram reads in greyscale and for colour-blind readers.

Used by the diagrams of notebooks 01 (dot-product attention) to 14 (attention in vision).
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

__all__ = [
    "BLOCK",
    "CONTEXT",
    "DECODER",
    "ENCODER",
    "QUERY",
    "WEIGHT",
    "arrow",
    "axes_or_new",
    "block_outline",
    "box",
    "residual_add",
]

ENCODER, DECODER, CONTEXT = "#31688e", "#35b779", "#440154"  # viridis: reads in greyscale too
QUERY, WEIGHT = "#b5de2b", "#21918c"  # viridis, light and mid
BLOCK = "#d62728"  # an outlined block of heatmap cells: red on viridis, mid-grey in greyscale


def axes_or_new(ax: Any, figsize: tuple[float, float]) -> Any:
    """``ax`` itself, or the axes of a new ``figsize``-inch figure (constrained layout) if None."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax


def box(ax: Any, x: float, y: float, text: str, colour: str, *, width: float = 0.8) -> None:
    """A rounded box centred on ``(x, y)`` with ``text`` in it."""
    # Dark text on the light colour, white on the dark ones, so every label reads on a projector.
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.3), width, 0.6, boxstyle="round,pad=0.04", fc=colour, ec="black", lw=0.8
        )
    )
    ax.text(x, y, text, ha="center", va="center", color="black" if colour == QUERY else "white", fontsize=10)


def arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], **style: Any) -> None:
    """An arrow from ``start`` to ``end``; ``style`` overrides matplotlib's ``arrowprops``."""
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "lw": 1.0, **style})


def residual_add(ax: Any, x: float, y: float, skip_from: float, *, skip_dx: float) -> float:
    """The ``+`` of a residual connection: an arrow up from ``y`` into a circled ``+``, joined by
    the skip line that leaves the column at height ``skip_from`` and detours ``skip_dx`` to the left.

    Returns:
        The height just above the ``+``, where the next part of the column starts.
    """
    arrow(ax, (x, y), (x, y + 0.4))
    y += 0.6
    ax.add_patch(Circle((x, y), 0.18, fc="white", ec="black", lw=0.8))
    ax.text(x, y, "+", ha="center", va="center", fontsize=11)
    ax.plot([x, x - skip_dx, x - skip_dx, x - 0.18], [skip_from, skip_from, y, y], color="black", lw=0.8)
    return y + 0.2


def block_outline(rows: range, columns: range, label: str = "") -> Rectangle:
    """The dashed box around a block of a heatmap's cells (cell ``(i, j)`` centred on ``(j, i)``,
    as ``imshow`` draws it), in :data:`BLOCK`; add it with ``ax.add_patch``. ``label`` is the
    box's matplotlib label (a legend or a test finds the box by it)."""
    return Rectangle(
        (columns.start - 0.5, rows.start - 0.5), len(columns), len(rows),
        fill=False, ec=BLOCK, lw=1.8, ls="--", label=label,
    )  # fmt: skip
