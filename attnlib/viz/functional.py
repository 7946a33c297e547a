"""One query's attention, drawn and explored: the pictures of notebooks 01 and 02.

Shapes: ``T`` tokens, ``D`` token width, ``Dk`` query/key width.

Drawn in notebooks 01 (dot-product attention) and 02 (trainable weights).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from ..functional import attention_scores
from ..i18n import N_
from .drawing import CONTEXT, DECODER, ENCODER, QUERY, WEIGHT, arrow, axes_or_new, box
from .explorers import explorer, kept_figure, retitle
from .heatmaps import plot_bars, replot_attention, replot_bars

__all__ = ["attention_diagram", "query_explorer", "temperature_explorer"]


def attention_diagram(
    tokens: Sequence[str], query: int = 0, *, projections: bool = True, ax: Any = None
) -> Any:
    """Draw one query's attention over ``T`` tokens: scores, softmax weights, weighted sum.

    Rows from the bottom: the tokens ``x_i``; their keys ``k_i``; the scores ``ω_i = q·k_i``;
    the weights ``α_i`` (one softmax over the row, of ``ω_i/√d_k`` with projections); the weighted
    values ``α_i v_i``; their sum, the context vector ``z``. Without projections (notebook 01) keys
    and values are the tokens themselves and the query is the query token ``x_q``. Tokens are
    numbered from 0, as Python indexes them, so token ``query`` is drawn as ``x_{query}``.

    Args:
        tokens: the token labels, one column each (``T``).
        query: index of the token whose query is drawn.
        projections: label keys, values and query as ``k_i = x_i W_k``, ``v_i``, ``q`` (notebook
            02 on) rather than the raw tokens ``x_i``.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if not tokens:
        raise ValueError("expected at least one token, got none")
    if not 0 <= query < len(tokens):
        raise ValueError(f"expected query in [0, {len(tokens)}) (a token index), got {query}")
    t = len(tokens)
    gap = 1.25
    ax = axes_or_new(ax, (max(6.5, 1.2 * t + 3.5), 5.2))
    key = "k_{%d}" if projections else "x_{%d}"
    value = "v_{%d}" if projections else "x_{%d}"
    q = f"q = x_{{{query}}} W_q" if projections else f"q = x_{{{query}}}"
    rows = {"key": 1.0, "score": 2.2, "weight": 3.4, "value": 4.6}
    for i, token in enumerate(tokens):
        x = i * gap
        weight = "bold" if i == query else "normal"
        ax.text(x, 0.1, token, ha="center", va="center", fontsize=10, fontweight=weight)
        arrow(ax, (x, 0.35), (x, rows["key"] - 0.3))
        box(ax, x, rows["key"], f"${key % i}$", ENCODER)
        arrow(ax, (x, rows["key"] + 0.3), (x, rows["score"] - 0.3))
        box(ax, x, rows["score"], f"$\\omega_{{{i}}}$", QUERY)
        arrow(ax, (x, rows["score"] + 0.3), (x, rows["weight"] - 0.3))
        box(ax, x, rows["weight"], f"$\\alpha_{{{i}}}$", WEIGHT)
        arrow(ax, (x, rows["weight"] + 0.3), (x, rows["value"] - 0.3))
        box(ax, x, rows["value"], f"$\\alpha_{{{i}}} {value % i}$", CONTEXT, width=1.0)
    right = (t - 1) * gap
    z_x, z_y = right / 2, 5.9
    box(ax, z_x, z_y, "$z$", DECODER, width=0.6)
    for i in range(t):
        ax.plot([i * gap, z_x], [rows["value"] + 0.3, z_y - 0.3], color=CONTEXT, lw=0.7, alpha=0.6)
    box(ax, -1.9, rows["score"], f"${q}$", QUERY, width=1.5 if projections else 1.3)
    ax.plot([-1.9 + 0.65, right + 0.5], [rows["score"] - 0.42] * 2, color="black", lw=0.6, ls=":")
    side = right + 0.9
    notes = {
        "key": "keys $k_i = x_i W_k$" if projections else "keys: the tokens",
        "score": "scores $\\omega_i = q \\cdot k_i$" if projections else "scores $\\omega_i = q \\cdot x_i$",
        # Notebook 02 on scales the scores before the softmax; notebook 01 does not yet.
        "weight": "weights: softmax$(\\omega_i/\\sqrt{d_k})$"
        if projections
        else "weights: softmax over the row",
        "value": "weighted values" + (" ($v_i = x_i W_v$)" if projections else ""),
    }
    for row, text in notes.items():
        ax.text(side, rows[row], text, va="center", fontsize=9)
    ax.text(
        z_x + 0.5,
        z_y,
        "context vector $z = \\sum_i \\alpha_i " + value.replace("_{%d}", "_i") + "$",
        va="center",
        fontsize=9,
    )
    ax.set(xlim=(-2.8, side + 2.6), ylim=(-0.3, 6.4))
    ax.set_title(f"attention of one query ({tokens[query]!r}) over {t} tokens")
    ax.set_axis_off()
    return ax


def query_explorer(inputs: torch.Tensor, tokens: Sequence[str]):
    """Pick a query token; see its dot-product scores, softmax weights and context vector.

    Args:
        inputs: ``(T, D)`` token embeddings.
        tokens: ``T`` token strings.
    """
    figure = None  # kept between redraws and updated in place

    def draw(query: int) -> Any:
        nonlocal figure
        scores = inputs @ inputs[query]  # (T, D) @ (D,) -> (T,)
        weights = torch.softmax(scores, dim=0)
        context = weights @ inputs  # (T,) @ (T, D) -> (D,)
        title = f"scores for query '{tokens[query]}'"
        suptitle = "context vector = " + ", ".join(f"{v:.4f}" for v in context.tolist())
        if figure is not None:  # redrawn in place: new bars, their numbers, limits and titles
            for ax, values in zip(figure.axes, (scores, weights), strict=True):
                replot_bars(ax, values)
            figure.axes[0].set_title(title)
            retitle(figure, suptitle)
            return figure
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2), constrained_layout=True)
        plot_bars(scores, tokens, ax=a1, ylabel="score  x_i · q", title=title)
        plot_bars(
            weights, tokens, ax=a2, ylabel="weight", title="softmax weights (sum to 1)", color="#21918c"
        )
        fig.suptitle(suptitle)
        figure = kept_figure(fig)
        return figure

    picker = widgets.ToggleButtons(
        options=[(t, i) for i, t in enumerate(tokens)], value=1, description=N_("query")
    )
    return explorer(draw, query=picker)


def temperature_explorer(queries: torch.Tensor, keys: torch.Tensor, tokens: Sequence[str]):
    """Slide the factor that multiplies the scores; watch the softmax sharpen or flatten.

    Args:
        queries: ``(T, Dk)``. keys: ``(T, Dk)``. tokens: ``T`` labels.
    """
    raw = attention_scores(queries, keys, scale=1.0).detach()  # (T, T)
    d_k = queries.shape[-1]

    figure = None  # kept between redraws and updated in place

    def draw(scale: float) -> Any:
        nonlocal figure
        weights = torch.softmax(raw * scale, dim=-1)
        entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1).mean()
        figure = replot_attention(
            figure,
            weights,
            tokens,
            annotate=len(tokens) <= 8,
            vmax=1.0,
            suptitle=f"scale = {scale:.3f}   (1/sqrt(d_k) = {d_k**-0.5:.3f})\n"
            f"mean entropy {entropy:.3f} nats (uniform: {math.log(len(tokens)):.3f})",
        )
        return figure

    slider = widgets.FloatLogSlider(
        value=d_k**-0.5, base=10, min=-2, max=2, step=0.02, description=N_("scale"), readout_format=".3f"
    )
    return explorer(draw, scale=slider)
