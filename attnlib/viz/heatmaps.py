"""Heatmaps and bars of attention weights: one call for one map, a row of heads, or a grid.

Shapes: ``Tq``/``Tk`` query/key length, ``H`` heads, ``R``/``C`` rows/columns of a grid.

Used from notebook 01 (dot-product attention) on: every attention map of the series.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import BoundaryNorm, ListedColormap

from .drawing import axes_or_new
from .explorers import kept_figure, retitle

__all__ = [
    "CMAP",
    "MASK_COLOURS",
    "MASK_LABELS",
    "plot_attention",
    "plot_bars",
    "replot_attention",
    "replot_bars",
]

CMAP = "viridis"  # perceptually uniform: reads in greyscale and for colour-blind readers
#: A boolean mask's two colours, viridis's ends: dark = masked, light = may attend (apart in grey too).
MASK_COLOURS = ("#440154", "#fde725")
MASK_LABELS = ("masked", "may attend")


def _as_grid(weights: Any) -> torch.Tensor:
    w = torch.as_tensor(weights).detach().float().cpu()
    if w.ndim == 2:
        return w[None, None]  # (Tq, Tk) -> (1, 1, Tq, Tk)
    if w.ndim == 3:
        return w[None]  # (H, Tq, Tk) -> (1, H, Tq, Tk)
    if w.ndim == 4:
        return w
    raise ValueError(
        f"expected weights of shape (Tq, Tk), (H, Tq, Tk) or (R, C, Tq, Tk), got {tuple(w.shape)}"
    )


def plot_attention(
    weights: Any,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | Sequence[Sequence[str]] | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
    annotate: bool = False,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    cmap: str = CMAP,
    panel_size: float = 4.0,
    suptitle: str | None = None,
    colorbar_label: str | None = None,
):
    """Draw attention weights (or a boolean mask) as heatmaps with token labels and one shared key.

    Args:
        weights: ``(Tq, Tk)`` for one map, ``(H, Tq, Tk)`` for a row of heads, or
            ``(R, C, Tq, Tk)`` for a grid (e.g. layers x heads). Tensor or array.
        x_labels: ``Tk`` key tokens. y_labels: ``Tq`` query tokens (default: ``x_labels``
            when the map is square).
        titles: one title per panel (flat list, or nested ``R x C``).
        xlabel, ylabel: axis names.
        annotate: write each weight in its cell (for small maps).
        vmin, vmax: colour range; ``vmax`` defaults to the largest weight.
        cmap: a matplotlib colour map name.
        panel_size: inches per panel.
        suptitle: a title over the whole figure.
        colorbar_label: the colour bar's label; default "attention weight", or "mask" for a mask.

    A boolean ``weights`` is a mask (True = may attend): it is drawn in two colours with a
    two-entry key, "may attend" and "masked", instead of a continuous colour bar; ``vmin``,
    ``vmax``, ``cmap`` and ``annotate`` do not apply to it.

    Returns:
        The matplotlib ``Figure``.
    """
    is_mask = torch.as_tensor(weights).dtype == torch.bool
    grid = _as_grid(weights)  # (R, C, Tq, Tk)
    rows, cols, tq, tk = grid.shape
    if x_labels is not None and len(x_labels) != tk:
        raise ValueError(f"expected {tk} x_labels (one per key), got {len(x_labels)}")
    if y_labels is None and x_labels is not None and tq == tk:
        y_labels = x_labels
    if y_labels is not None and len(y_labels) != tq:
        raise ValueError(f"expected {tq} y_labels (one per query), got {len(y_labels)}")
    flat_titles: list[str | None] = [None] * (rows * cols)
    if titles is not None:
        flat = (
            [t for row in titles for t in row] if titles and not isinstance(titles[0], str) else list(titles)
        )
        if len(flat) != rows * cols:
            raise ValueError(f"expected {rows * cols} titles, got {len(flat)}")
        flat_titles = flat
    if is_mask:
        colour_kw: dict[str, Any] = {
            "cmap": ListedColormap(MASK_COLOURS),
            "norm": BoundaryNorm([-0.5, 0.5, 1.5], 2),
        }
        annotate = False
    else:
        vmax = float(grid.max()) if vmax is None else vmax
        colour_kw = {"cmap": cmap, "vmin": vmin, "vmax": vmax}

    width = panel_size * cols * max(tk / max(tq, 1), 0.6) + 1.2
    fig, axes = plt.subplots(
        rows, cols, figsize=(width, panel_size * rows), squeeze=False, constrained_layout=True
    )
    image = None
    for i in range(rows):
        for j in range(cols):
            ax = axes[i][j]
            image = ax.imshow(grid[i, j].numpy(), aspect="auto", **colour_kw)
            ax.set_xticks(
                range(tk),
                x_labels if x_labels is not None else range(tk),
                rotation=90 if x_labels is not None else 0,
            )
            ax.set_yticks(range(tq), y_labels if y_labels is not None else range(tq))
            if i == rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            title = flat_titles[i * cols + j]
            if title:
                ax.set_title(title)
            if annotate:
                _annotate(ax, grid[i, j], vmin or 0.0, vmax)
    if is_mask:
        bar = fig.colorbar(image, ax=axes, shrink=0.5, ticks=[1, 0], label=colorbar_label or "mask")
        bar.ax.set_yticklabels([MASK_LABELS[1], MASK_LABELS[0]])
    else:
        fig.colorbar(image, ax=axes, shrink=0.8, label=colorbar_label or "attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def replot_attention(figure: Any, weights: Any, x_labels: Sequence[str] | None = None,
                     y_labels: Sequence[str] | None = None, **options: Any):  # fmt: skip
    """:func:`plot_attention` of one map for an explorer: ``figure`` redrawn in place, or a new one.

    ``figure`` (a figure this function returned before, or None) is updated in place when it
    shows a map of the same shape, with the same labels and ``options`` other than ``vmax`` and
    ``suptitle``: new weights, colour range, cell numbers and title, and no new axes or colour
    bar. Otherwise a new figure is drawn. Either way it looks as :func:`plot_attention`
    draws it, and is not one of pyplot's figures (an explorer shows it, see
    :func:`~attnlib.viz.explorers.kept_figure`).

    Args:
        figure: the figure of the previous redraw, or None.
        weights: ``(Tq, Tk)``, not a mask. x_labels, y_labels, **options: as :func:`plot_attention`.

    Returns:
        The matplotlib ``Figure``.
    """
    w = torch.as_tensor(weights).detach().float().cpu()
    if w.ndim != 2:
        raise ValueError(f"expected weights of shape (Tq, Tk), got {tuple(w.shape)}")
    if y_labels is None and x_labels is not None and w.shape[0] == w.shape[1]:
        y_labels = x_labels
    fixed = {k: v for k, v in options.items() if k not in ("vmax", "suptitle")}
    key = (tuple(w.shape), fixed, list(x_labels or []), list(y_labels or []))
    if getattr(figure, "_attnlib_replot", None) != key:  # new labels need a new layout
        figure = kept_figure(plot_attention(w, x_labels, y_labels, **options))
        figure._attnlib_replot = key
        return figure
    ax, vmin = figure.axes[0], options.get("vmin", 0.0)
    vmax = options.get("vmax")
    vmax = float(w.max()) if vmax is None else vmax
    image = ax.images[0]
    image.set_data(w.numpy())
    image.set_clim(vmin, vmax)  # the colour bar follows
    if options.get("annotate"):
        middle = ((vmin or 0.0) + vmax) / 2
        for text, value in zip(ax.texts, w.flatten().tolist(), strict=True):
            text.set_text(f"{value:.2f}")
            text.set_color("black" if value > middle else "white")
    if options.get("suptitle"):
        retitle(figure, options["suptitle"])
    return figure


def _annotate(ax, w: torch.Tensor, vmin: float, vmax: float) -> None:
    middle = (vmin + vmax) / 2
    for (r, c), value in zip(
        torch.cartesian_prod(torch.arange(w.shape[0]), torch.arange(w.shape[1])).tolist(),
        w.flatten().tolist(),
        strict=True,
    ):
        ax.text(
            c,
            r,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=8,
            color="black" if value > middle else "white",
        )


_BAR_FORMAT = "%.3f"  # the number written on each bar


def plot_bars(
    values: Any,
    labels: Sequence[str],
    *,
    title: str | None = None,
    ylabel: str = "value",
    xlabel: str = "token",
    ax=None,
    color: str = "#3b528b",
):
    """A labelled bar chart of one value per token (scores or weights of one query).

    Returns the matplotlib ``Axes``.
    """
    v = torch.as_tensor(values).detach().float().cpu().flatten()
    if len(labels) != len(v):
        raise ValueError(f"expected {len(v)} labels, got {len(labels)}")
    ax = axes_or_new(ax, (5, 3))
    bars = ax.bar(range(len(v)), v.numpy(), color=color)
    ax.bar_label(bars, fmt=_BAR_FORMAT, fontsize=8)
    ax.set_xticks(range(len(v)), labels, rotation=30)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.margins(y=0.15)
    if title:
        ax.set_title(title)
    return ax


def replot_bars(ax: Any, values: Any) -> Any:
    """:func:`plot_bars` redrawn in place for an explorer: the axes ``plot_bars`` drew, with new values.

    New heights, the new numbers on them (placed above a bar, or below it when its value is
    negative, as ``bar_label`` places them) and new limits; labels, title and colour are kept.

    Args:
        ax: axes that :func:`plot_bars` drew. values: one value per bar, as many as before.

    Returns:
        The ``Axes``.
    """
    v = torch.as_tensor(values).detach().float().cpu().flatten()
    bars = ax.containers[0]
    if len(bars) != len(v):
        raise ValueError(f"expected {len(bars)} values (one per bar), got {len(v)}")
    for bar, value in zip(bars, v.tolist(), strict=True):
        bar.set_height(value)
    # bar_label writes and places each number from the container's datavalues, which
    # set_height does not touch: without this the old numbers would stand on the new bars
    bars.datavalues = v.numpy()
    for text in ax.texts[:]:  # the old numbers
        text.remove()
    ax.bar_label(bars, fmt=_BAR_FORMAT, fontsize=8)
    ax.relim()
    ax.autoscale_view()
    return ax
