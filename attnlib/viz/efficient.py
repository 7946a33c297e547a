"""Tiles, windows and rotations: the figures and the explorer of notebook 13 (efficient attention).

Shapes: ``T`` positions, ``w`` window, ``L`` layers, ``Dh`` head width.

Drawn in notebook 13 (attention made efficient).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from .._validate import require_positive_int
from ..i18n import N_
from ..masks import receptive_field, sliding_window_mask
from ..rotary import apply_rotary
from .drawing import axes_or_new
from .explorers import explorer, kept_figure, retitle
from .heatmaps import CMAP

__all__ = ["gpu_memory_diagram", "receptive_field_explorer", "rope_score_figure", "tiling_diagram"]


def tiling_diagram(
    size: int = 8,
    block: int = 2,
    *,
    causal: bool = True,
    window: int | None = None,
    current: tuple[int, int] = (2, 1),
    ax=None,
):
    """The score matrix cut into tiles, as tiled (flash) attention visits them.

    One row of tiles is one block of queries; its tiles are visited left to right while the
    running max, sum and output are kept for those queries only. With ``causal`` the tiles
    entirely above the diagonal are never computed, and with a causal sliding ``window`` (keys
    ``i - window + 1 .. i``) neither are those entirely below the band. A legend names the four
    kinds of tile.

    Args:
        size: positions ``T`` (queries = keys).
        block: positions per tile side.
        causal: grey out the tiles a causal mask skips.
        window: grey out the tiles outside a causal sliding window of this many keys too.
        current: ``(query block, key block)`` of the tile being computed.
        ax: matplotlib axes to draw on (a new figure if None).
    """
    require_positive_int("size", size)
    require_positive_int("block", block)
    if window is not None:
        require_positive_int("window", window)
        causal = True  # a sliding window is causal
    n = -(-size // block)  # tiles per side
    qi, kj = current
    ax = axes_or_new(ax, (6.4, 5.2))
    palette = plt.get_cmap(CMAP)
    colours = {
        "current": palette(0.85),
        "done": palette(0.55),
        "to come": palette(0.25),
        "skipped": "#eeeeee",
    }
    for i in range(n):
        for j in range(n):
            q_first, q_last = i * block, min((i + 1) * block, size) - 1
            k_first, k_last = j * block, min((j + 1) * block, size) - 1
            above = causal and k_first > q_last  # every key after every query
            below = window is not None and k_last <= q_first - window  # every key out of every band
            kind = (
                "skipped"
                if above or below
                else "current"
                if (i, j) == (qi, kj)
                else "done"
                if (i < qi) or (i == qi and j < kj)
                else "to come"
            )
            ax.add_patch(
                Rectangle(
                    (j * block, i * block), block, block, facecolor=colours[kind], edgecolor="white", lw=2
                )
            )
            label = "skipped" if kind == "skipped" else f"S[{i},{j}]"
            text_colour = {"skipped": "grey", "current": "black"}.get(kind, "white")
            centre = ((j + 0.5) * block, (i + 0.5) * block)
            ax.text(*centre, label, ha="center", va="center", fontsize=8, color=text_colour)
    ax.add_patch(Rectangle((0, qi * block), size, block, fill=False, edgecolor="black", lw=2.5))
    handles = [
        Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor="grey", label=f"{kind} tile")
        for kind, colour in colours.items()
    ]
    handles.append(
        Rectangle(
            (0, 0), 1, 1, fill=False, edgecolor="black", lw=2.5, label="query block: its m, ell, acc kept"
        )
    )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    ax.set(xlim=(0, size), ylim=(size, 0), aspect="equal", xlabel="key position (blocks of K, V)")
    band = "causal" if window is None and causal else "full" if not causal else f"causal window w={window}"
    ax.set(
        ylabel="query position (blocks of Q)",
        title=f"T={size}, tiles of {block}x{block}, {band}: one tile exists at a time",
    )
    return ax


def gpu_memory_diagram(ax=None):
    """The two GPU memories that FlashAttention is about, and the tiles moving between them.

    A large, slow box (HBM, the GPU's main memory, holding ``Q``, ``K``, ``V`` and ``O`` whole)
    and a small, fast one (SRAM, on the chip, holding one tile at a time), with the A100 figures
    of Dao et al. (2022, §2.1). One arrow loads blocks of ``Q``, ``K``, ``V`` into SRAM; the other
    writes a finished block of ``O`` back. The ``T x T`` scores and weights stay in SRAM, tile by
    tile. Sizes are not to scale (the real HBM holds about 200,000 to 420,000 times what one SM's
    SRAM holds). Each block of ``O`` is written once in FlashAttention-2's loop order (Dao, 2023),
    which attnlib's ``tiled_attention`` follows; in FlashAttention's Algorithm 1 (Dao et al., 2022)
    a block of ``O`` is written again on every pass of the outer loop.

    Args:
        ax: matplotlib axes to draw on (a new figure if None).

    Returns:
        The axes. The two memories are the patches with gid ``"HBM"`` and ``"SRAM"``; the two
        arrows are annotations with gid ``"load"`` (HBM to SRAM) and ``"write"`` (SRAM to HBM).
    """
    ax = axes_or_new(ax, (9.0, 3.8))
    palette = plt.get_cmap(CMAP)
    slow, fast, data = palette(0.2), palette(0.85), palette(0.55)
    ax.add_patch(Rectangle((0.2, 0.4), 4.6, 4.8, facecolor=slow, edgecolor="black", gid="HBM"))
    ax.text(
        2.5,
        4.75,
        "HBM: large, slow (off the chip)\nA100: 40-80 GB, 1.5-2.0 TB/s",
        ha="center",
        va="center",
        color="white",
        fontsize=10,
    )
    for column, name in enumerate("QKVO"):  # each matrix whole, cut into blocks of rows
        x = 0.6 + column * 1.05
        for row in range(5):
            ax.add_patch(Rectangle((x, 0.8 + row * 0.65), 0.75, 0.6, facecolor=data, edgecolor="white"))
        ax.text(x + 0.375, 4.1, name, ha="center", va="center", color="white", fontsize=11)
    ax.add_patch(Rectangle((6.8, 1.5), 3.4, 2.4, facecolor=fast, edgecolor="black", gid="SRAM"))
    ax.text(
        8.5,
        3.35,
        "SRAM: small, fast (on the chip)\nA100: 192 KB per SM, 108 SMs,\nabout 19 TB/s",
        ha="center",
        va="center",
        color="black",
        fontsize=8.5,
    )
    ax.add_patch(Rectangle((7.6, 1.8), 1.8, 0.8, facecolor=data, edgecolor="black"))
    ax.text(8.5, 2.2, "one tile: S, P,\nm, $\\ell$, acc", ha="center", va="center", color="white", fontsize=8)
    style = {"arrowstyle": "->", "lw": 1.6}
    load = ax.annotate("", xy=(6.8, 3.0), xytext=(4.8, 3.0), arrowprops=style)
    load.set_gid("load")
    ax.text(5.82, 3.2, "load blocks\nof Q, K, V", ha="center", va="bottom", fontsize=9)
    write = ax.annotate("", xy=(4.8, 1.2), xytext=(6.8, 2.0), arrowprops=style)
    write.set_gid("write")
    ax.text(
        5.82,
        1.25,
        "write a block\nof O (once, in\nFlashAttention-2's\nloop order)",
        ha="center",
        va="top",
        fontsize=9,
    )
    ax.set(xlim=(0, 10.4), ylim=(0, 5.6), aspect="equal")
    ax.set_axis_off()
    ax.set_title(
        "The two GPU memories of FlashAttention; A100 figures from Dao et al. (2022, §2.1); not to scale",
        fontsize=10,
    )
    return ax


def receptive_field_explorer(max_len: int = 40):
    """Choose a sliding window ``w``, a depth ``L`` and a query; see what that query can reach.

    Left: one layer's sliding-window mask, the query's row outlined. Right: which inputs can
    influence which outputs after ``L`` such layers (the boolean matrix power of the mask),
    with the query's reach ``min(q + 1, L (w - 1) + 1)`` in the title.

    Args:
        max_len: sequence length ``T`` shown.
    """
    require_positive_int("max_len", max_len)

    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates

    def draw(window: int, layers: int, query: int) -> Any:
        mask = sliding_window_mask(max_len, window)
        reach = receptive_field(mask, layers)
        titles = [
            f"one layer: window w={window}",
            f"after L={layers} layers: {int(reach[query].sum())} inputs reach query {query}",
        ]
        suptitle = (
            f"reach of one output: L·(w-1)+1 = {layers * (window - 1) + 1} positions (fewer near the start)"
        )
        if kept:  # redrawn in place: new maps, outlines and titles
            for image, row, grid, title in zip(
                kept["maps"], kept["rows"], [mask, reach], titles, strict=True
            ):
                image.set_data(grid.float().numpy())
                row.set_y(query - 0.5)
                image.axes.set_title(title)
            retitle(kept["figure"], suptitle)
            return kept["figure"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 5), constrained_layout=True)
        kept["maps"], kept["rows"] = [], []
        for ax, grid, title in zip(axes, [mask, reach], titles, strict=True):
            kept["maps"].append(ax.imshow(grid.float().numpy(), cmap=CMAP, vmin=0, vmax=1))
            kept["rows"].append(
                ax.add_patch(
                    Rectangle((-0.5, query - 0.5), max_len, 1, fill=False, edgecolor="#fde725", lw=2)
                )
            )
            ax.set(xlabel="input position (key)", ylabel="output position (query)", title=title)
        fig.suptitle(suptitle)
        kept["figure"] = kept_figure(fig)
        return fig

    return explorer(
        draw,
        window=widgets.IntSlider(value=3, min=1, max=12, description=N_("window w")),
        layers=widgets.IntSlider(value=2, min=1, max=8, description=N_("layers L")),
        query=widgets.IntSlider(value=max_len - 1, min=0, max=max_len - 1, description=N_("query")),
    )


def rope_score_figure(head_dim: int = 64, max_offset: int = 64, seed: int = 0):
    """RoPE scores against the offset ``m - n``, for the same query and key placed at two
    different absolute starts (the curves coincide), next to a 2-D picture of one pair turning.

    Args:
        head_dim: ``Dh``.
        max_offset: largest ``m - n`` drawn.
        seed: for the random query and key.
    """
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, head_dim, generator=g).unbind(0)  # (1, Dh) each
    offsets = torch.arange(max_offset + 1)

    def scores(start: int) -> torch.Tensor:
        rq = apply_rotary(q.expand(len(offsets), -1), start + offsets)  # query at n + offset
        rk = apply_rotary(k, torch.tensor([start]))  # key at n = start
        return (rq * rk).sum(-1)  # (offsets,)

    fig, (a1, a2) = plt.subplots(
        1, 2, figsize=(12, 4), constrained_layout=True, gridspec_kw={"width_ratios": [2, 1]}
    )
    palette = plt.get_cmap(CMAP)
    for start, colour, style in [(0, palette(0.2), "-"), (1000, palette(0.7), "--")]:
        a1.plot(offsets, scores(start), style, color=colour, label=f"key at position {start}")
    a1.set(
        xlabel="offset m - n (query position - key position)",
        ylabel="score q_m · k_n",
        title="RoPE: the score depends on m - n only",
    )
    a1.legend()
    # (1, 2): one pair, the only and so the fastest frequency theta_0 = base^0 = 1 rad per position
    pair = torch.tensor([[1.0, 0.0]])
    turned = apply_rotary(pair.expand(8, -1), torch.arange(8))  # (8, 2)
    a2.scatter(turned[:, 0], turned[:, 1], c=torch.arange(8), cmap=CMAP, s=60)
    for m, (x, y) in enumerate(turned.tolist()):
        a2.annotate(f"m={m}", (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    a2.set(xlabel="feature 2i", ylabel="feature 2i+1", title="pair 0 at positions 0..7 (θ₀ = 1 rad)")
    a2.set(aspect="equal", xlim=(-1.4, 1.4), ylim=(-1.4, 1.4))
    return fig
