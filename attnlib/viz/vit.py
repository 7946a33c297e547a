"""Patches, the class token's attention and occlusion: the figures and explorer of notebook 14.

Shapes: ``Hi``/``Wi`` image side, ``P`` patch side, ``Gh``/``Gw`` patch grid, ``N`` patches,
``T = N + 1`` tokens (class token first), ``L`` layers, ``H`` heads, ``K`` classes.

Drawn in notebook 14 (attention in vision).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib import patheffects
from matplotlib.patches import Rectangle

from ..i18n import N_, tr
from ..modes import evaluating
from ..vit import VisionTransformer
from ..vit_probes import attention_rollout, occlude
from .drawing import CONTEXT, DECODER, ENCODER, QUERY, WEIGHT, arrow, axes_or_new, box
from .explorers import explorer, kept_figure, retitle
from .heatmaps import CMAP

__all__ = [
    "draw_image",
    "draw_patch_map",
    "plot_class_attention",
    "plot_position_similarity",
    "token_labels",
    "vit_diagram",
    "vit_explorer",
]


def token_labels(num_patches: int) -> list[str]:
    """``["cls", "p0", ..., "p{N-1}"]``: token ``k + 1`` is patch ``p{k}``, numbered row by row from 0.

    Patches count from 0 like :func:`attnlib.vit_probes.occlude`'s ``patch`` argument and the
    columns of a ``(B, N)`` tensor; the class token is token 0 and has no patch number.
    """
    return ["cls", *(f"p{k}" for k in range(num_patches))]


def _pixel_ticks(ax: Any, h: int, w: int, p: int) -> None:
    """The same ticks on every image and map: one per patch edge, labelled in pixels."""
    ax.set_xticks(range(0, w, p), [str(i) for i in range(0, w, p)])
    ax.set_yticks(range(0, h, p), [str(i) for i in range(0, h, p)])
    ax.set_xlabel("pixel column")
    ax.set_ylabel("pixel row")


def draw_image(ax: Any, image: torch.Tensor, *, patch_size: int = 2, title: str | None = None) -> Any:
    """A greyscale image (ink dark on white) with the ticks :func:`draw_patch_map` uses.

    Args:
        ax: matplotlib axes.
        image: ``(Hi, Wi)`` in ``[0, 1]``.
        patch_size: ``P``: a tick at every patch edge.
        title: the axes' title.

    Returns:
        The ``AxesImage``.
    """
    img = torch.as_tensor(image).detach().float()
    if img.ndim != 2:
        raise ValueError(f"expected image of shape (Hi, Wi), got {tuple(img.shape)}")
    shown = ax.imshow(img.numpy(), cmap="gray_r", vmin=0.0, vmax=1.0)
    _pixel_ticks(ax, img.shape[0], img.shape[1], patch_size)
    if title:
        ax.set_title(title, fontsize=9)
    return shown


def draw_patch_map(
    ax: Any,
    image: torch.Tensor,
    patch_map: torch.Tensor,
    *,
    vmax: float | None = None,
    labels: bool = True,
    title: str | None = None,
) -> Any:
    """One value per patch, drawn over the image: the map in colour, the digit's ink outlined.

    Args:
        ax: matplotlib axes.
        image: ``(Hi, Wi)`` (one channel).
        patch_map: ``(N,)`` or ``(Gh, Gw)`` values, patches row by row (e.g. the class token's
            attention to each patch).
        vmax: top of the colour scale (default: the largest value).
        labels: write each patch's label (``p0`` ...) in its middle, white on a black outline.
        title: the axes' title.

    Returns:
        The ``AxesImage`` of the map (for a colour bar).
    """
    img = torch.as_tensor(image).detach().float()
    if img.ndim != 2:
        raise ValueError(f"expected image of shape (Hi, Wi), got {tuple(img.shape)}")
    h, w = img.shape
    values = torch.as_tensor(patch_map).detach().float().flatten()
    side = round(values.numel() ** 0.5)
    if side * side != values.numel() or h % side or w % side:
        raise ValueError(
            f"expected a square grid of patches dividing a {h}x{w} image, got {values.numel()} values"
        )
    p = h // side
    shown = ax.imshow(
        _upsample(values, p).numpy(), cmap=CMAP, vmin=0.0, vmax=vmax, extent=(-0.5, w - 0.5, h - 0.5, -0.5)
    )
    _outline_ink(ax, img)
    for k in range(1, side):
        ax.axhline(k * p - 0.5, color="white", lw=0.6, alpha=0.7)
        ax.axvline(k * p - 0.5, color="white", lw=0.6, alpha=0.7)
    if labels:
        outline = [patheffects.withStroke(linewidth=2.2, foreground="black")]
        for k in range(side * side):
            r, c = divmod(k, side)
            ax.text(
                (c + 0.5) * p - 0.5,
                (r + 0.5) * p - 0.5,
                f"p{k}",
                fontsize=8,
                color="white",
                va="center",
                ha="center",
                path_effects=outline,
            )
    _pixel_ticks(ax, h, w, p)
    if title:
        ax.set_title(title, fontsize=9)
    return shown


def _upsample(values: torch.Tensor, p: int) -> torch.Tensor:
    side = round(values.numel() ** 0.5)
    grid = values.reshape(side, side)  # (Gh, Gw)
    return grid.repeat_interleave(p, 0).repeat_interleave(p, 1)  # (Gh, Gw) -> (Hi, Wi), nearest


def _outline_ink(ax: Any, img: torch.Tensor) -> Any:
    """The digit's ink outlined in white; the contour set, or None for a blank image."""
    if float(img.max()) > float(img.min()):
        level = float(img.min() + 0.5 * (img.max() - img.min()))
        # just under the patch grid's lines, as when it was drawn first, also when redrawn after them
        return ax.contour(img.numpy(), levels=[level], colors="white", linewidths=1.8, zorder=1.99)
    return None


def _update_vit_figure(
    kept: dict[str, Any],
    seen: torch.Tensor,
    values: torch.Tensor,
    before: torch.Tensor,
    after: torch.Tensor,
    titles: dict[str, str],
    after_label: str,
    example: int,
) -> Any:
    """:func:`vit_explorer`'s figure redrawn in place: the same picture a new figure would show."""
    fig = kept["figure"]
    a1, a2, a3 = kept["input"].axes, kept["map"].axes, kept["legend"].axes
    kept["input"].set_data(seen.numpy())
    a1.set_title(titles["input"])
    upsampled = _upsample(values.float(), seen.shape[0] // round(values.numel() ** 0.5))  # (Hi, Wi)
    kept["map"].set_data(upsampled.numpy())
    kept["map"].set_clim(0.0, float(upsampled.max()))  # vmax None: the largest value, as imshow scales it
    if kept.get("ink") is not None:
        kept["ink"].remove()
    kept["ink"] = _outline_ink(a2, seen)
    a2.set_title(titles["map"], fontsize=9)
    for bars, probs in ((kept["before"], before), (kept["after"], after)):
        for bar, prob in zip(bars, probs.tolist(), strict=True):
            bar.set_height(prob)
    kept["after"].set_label(after_label)
    kept["legend"].get_texts()[1].set_text(after_label)
    a3.set_title(titles["bars"], fontsize=9)
    retitle(fig, f"test image {example}")
    return fig


def plot_class_attention(image: torch.Tensor, weights: torch.Tensor, *, suptitle: str | None = None):
    """The class token's attention to every patch: one panel per layer and head, their mean, and rollout.

    Args:
        image: ``(Hi, Wi)``.
        weights: ``(L, H, T, T)`` one example's attention weights.
        suptitle: a title over the figure.

    Returns:
        The matplotlib ``Figure``.
    """
    w = torch.as_tensor(weights).detach().float()
    if w.ndim != 4:
        raise ValueError(f"expected weights of shape (L, H, T, T), got {tuple(w.shape)}")
    n_layers, n_heads = w.shape[:2]
    rollout = attention_rollout(w)[0, 1:]  # the class token's row, patches only: (N,)
    panels = [
        [(w[layer, head, 0, 1:], f"layer {layer}, head {head}") for head in range(n_heads)]
        + [(w[layer, :, 0, 1:].mean(0), f"layer {layer}, mean of heads")]
        for layer in range(n_layers)
    ]
    cols = n_heads + 1
    fig, axes = plt.subplots(
        n_layers + 1,
        cols,
        figsize=(2.5 * cols + 1, 2.5 * (n_layers + 1)),
        squeeze=False,
        constrained_layout=True,
    )
    vmax = float(max(m.max() for row in panels for m, _ in row))
    image_ = None
    for layer, row in enumerate(panels):
        for j, (values, title) in enumerate(row):
            image_ = draw_patch_map(
                axes[layer][j], image, values, vmax=vmax, labels=layer == 0 and j == 0, title=title
            )
    last = axes[n_layers]
    side = round(rollout.numel() ** 0.5)
    draw_image(last[0], image, patch_size=torch.as_tensor(image).shape[-1] // side, title="the image")
    rolled = draw_patch_map(last[1], image, rollout, labels=True, title="rollout (all layers)")
    for ax in last[2:]:
        ax.axis("off")
    # The rollout's own colour bar sits in the empty cell beside it: a colour bar attached to one
    # panel would widen that whole column of the grid and leave a gap in the rows above.
    cax = last[2].inset_axes((0.0, 0.1, 0.07, 0.8))
    fig.colorbar(rolled, cax=cax, label="rollout weight")
    fig.colorbar(image_, ax=axes[:n_layers], shrink=0.8, label="class token's attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def plot_position_similarity(pos_embed: torch.Tensor, *, suptitle: str | None = None):
    """Cosine similarity of each patch's position embedding with every other's (ViT Figure 7, centre).

    Tile ``(r, c)`` is a ``G x G`` map: the similarity of the embedding of the patch in grid row
    ``r``, column ``c`` with the embedding of every patch, laid out where those patches sit. The
    class token's embedding is left out (it has no place in the grid).

    Args:
        pos_embed: ``(1, 1 + G*G, D)`` or ``(1 + G*G, D)``, the class token first.
        suptitle: a title over the figure.

    Returns:
        The matplotlib ``Figure``.
    """
    pe = torch.as_tensor(pos_embed).detach().float()
    pe = pe[0] if pe.ndim == 3 else pe
    g = round((pe.shape[0] - 1) ** 0.5)
    if pe.ndim != 2 or g * g != pe.shape[0] - 1:
        raise ValueError(f"expected pos_embed of shape (1, 1 + G*G, D), got {tuple(pos_embed.shape)}")
    unit = torch.nn.functional.normalize(pe[1:], dim=-1)  # (N, D), one unit vector per patch
    similarity = unit @ unit.T  # (N, D) @ (D, N) -> (N, N)
    fig, axes = plt.subplots(
        g, g, figsize=(1.3 * g + 1.2, 1.3 * g + 0.4), squeeze=False, constrained_layout=True
    )
    shown = None
    for k in range(g * g):
        r, c = divmod(k, g)
        ax = axes[r][c]
        shown = ax.imshow(similarity[k].view(g, g).numpy(), cmap=CMAP, vmin=-1.0, vmax=1.0)
        ax.set_xticks([])
        ax.set_yticks([])
        if r == g - 1:
            ax.set_xlabel(str(c))
        if c == 0:
            ax.set_ylabel(str(r))
    fig.supxlabel("grid column of the patch")
    fig.supylabel("grid row of the patch")
    fig.colorbar(shown, ax=axes, shrink=0.8, label="cosine similarity of position embeddings")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def vit_diagram(num_patches_side: int = 2, *, ax: Any = None) -> Any:
    """Image -> patches -> tokens (+ class token, + positions) -> blocks -> head, as a schematic.

    Args:
        num_patches_side: patches per side drawn (the model of notebook 14 has 4; 2 keeps it legible).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    g = num_patches_side
    n = g * g
    ax = axes_or_new(ax, (13, 4.2))
    # The image and its patch grid.
    ax.add_patch(Rectangle((-0.2, 1.2), 2.0, 2.0, fc="#f0f0f0", ec="black"))
    for k in range(1, g):
        ax.plot([-0.2 + 2.0 * k / g] * 2, [1.2, 3.2], color="black", lw=0.8)
        ax.plot([-0.2, 1.8], [1.2 + 2.0 * k / g] * 2, color="black", lw=0.8)
    for k in range(n):
        r, c = divmod(k, g)
        ax.text(-0.2 + 2.0 * (c + 0.5) / g, 3.2 - 2.0 * (r + 0.5) / g, f"p{k}", ha="center", va="center")
    ax.text(0.8, 0.9, "image (C, Hi, Wi)\ncut into P x P patches", ha="center", va="top", fontsize=9)
    # Tokens: class token first, then one per patch; each gets its position embedding.
    x0, dx = 3.3, 1.1
    box(ax, x0, 3.6, "cls", CONTEXT, width=0.9)
    for k in range(n):
        x = x0 + dx * (k + 1)
        box(ax, x, 3.6, f"p{k}", QUERY, width=0.9)
        box(ax, x, 2.5, "Linear", ENCODER, width=0.9)
        arrow(ax, (x, 2.8), (x, 3.3))
    arrow(ax, (1.9, 2.2), (x0 + dx - 0.5, 2.5))
    ax.text(
        x0 + dx * (n + 1) / 2,
        1.9,
        "flatten each patch (C*P*P numbers),\none shared Linear to D",
        ha="center",
        va="top",
        fontsize=9,
    )
    for k in range(n + 1):
        ax.text(x0 + dx * k, 4.05, f"+ pos{k}", ha="center", fontsize=9, color=WEIGHT)
    ax.text(
        x0 + dx * n / 2, 4.45, "learned position embeddings, added", ha="center", fontsize=9, color=WEIGHT
    )
    # Blocks and head.
    last = x0 + dx * n
    bx = last + 1.9
    arrow(ax, (last + 0.5, 3.6), (bx - 1.0, 3.6))
    box(ax, bx, 3.6, "L x block", ENCODER, width=1.8)
    ax.text(bx, 3.1, "LayerNorm -> attention -> +\nLayerNorm -> MLP -> +", ha="center", va="top", fontsize=9)
    arrow(ax, (bx + 0.95, 3.6), (bx + 1.35, 3.6))
    box(ax, bx + 2.1, 3.6, "LayerNorm", ENCODER, width=1.4)
    arrow(ax, (bx + 2.85, 3.6), (bx + 3.25, 3.6))
    box(ax, bx + 4.1, 3.6, "head", DECODER, width=1.4)
    ax.text(bx + 4.1, 3.1, "reads the cls token\nonly: K class logits", ha="center", va="top", fontsize=9)
    ax.set_xlim(-0.5, bx + 5.0)
    ax.set_ylim(0.2, 4.8)
    ax.axis("off")
    ax.set_title("A vision transformer: an image becomes a sequence of patch tokens")
    return ax


def vit_explorer(
    model: VisionTransformer,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    background: float = 0.0,
):
    """Pick an image, a map (rollout, or a layer and head) and, optionally, a patch to occlude.

    Every redraw runs the model in eval mode (no dropout) and then gives it back its own mode.
    Left: the image (the occluded patch blanked). Middle: the chosen map of the class token's
    attention over the patches, on the image as the model sees it. Right: the predicted
    probabilities, before and after occluding.

    Args:
        model: a trained :class:`~attnlib.vit.VisionTransformer` (one channel).
        images: ``(B, 1, Hi, Wi)`` images to choose from.
        labels: ``(B,)`` their true classes.
        background: the value an occluded patch gets.
    """
    if images.ndim != 4 or images.shape[1] != 1 or len(labels) != len(images):
        raise ValueError(
            f"expected images (B, 1, Hi, Wi) and labels (B,), "
            f"got {tuple(images.shape)} and {tuple(labels.shape)}"
        )
    n_layers, n_heads = len(model.blocks), model.blocks[0].attn.num_heads
    p, n = model.patch_embed.patch_size, model.num_patches

    runs: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def run(example: int, occluded: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The image as the model sees it, its class probabilities and attention weights, computed
        once per image and occluded patch: moving the map or back to a setting only redraws."""
        if (example, occluded) not in runs:
            image = images[example : example + 1]  # (1, 1, Hi, Wi)
            seen = image if occluded < 0 else occlude(image, occluded, p, background)
            with evaluating(model), torch.no_grad():
                probs = torch.softmax(model(seen), -1)[0]  # (K,)
                weights = model.attention_weights()[0]  # of `seen`: (L, H, T, T)
            runs[example, occluded] = seen, probs, weights
        return runs[example, occluded]

    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates

    def draw(example: int, shown: tuple[int, int], occluded: int) -> Any:
        before = run(example, -1)[1]
        seen, after, weights = run(example, occluded)
        layer, head = shown
        if layer < 0:
            values, what = attention_rollout(weights)[0, 1:], "rollout"
        elif head < 0:
            values, what = weights[layer, :, 0, 1:].mean(0), f"layer {layer}, mean of heads"
        else:
            values, what = weights[layer, head, 0, 1:], f"layer {layer}, head {head}"
        truth = int(labels[example])
        titles = {
            "input": "input" + ("" if occluded < 0 else f" (p{occluded} occluded)"),
            "map": f"class token: {what}",
            "bars": f"true {truth}: p = {before[truth]:.3f} -> {after[truth]:.3f}; "
            f"predicted {int(after.argmax())}",
        }
        after_label = "occluded" if occluded >= 0 else "(same)"
        if kept:
            return _update_vit_figure(kept, seen[0, 0], values, before, after, titles, after_label, example)
        fig, (a1, a2, a3) = plt.subplots(
            1, 3, figsize=(12, 3.6), constrained_layout=True, gridspec_kw={"width_ratios": [1, 1.2, 1.6]}
        )
        kept["input"] = a1.imshow(seen[0, 0].numpy(), cmap="gray_r", vmin=0, vmax=float(images.max()))
        a1.set(title=titles["input"], xlabel="pixel column")
        a1.set_ylabel("pixel row")
        kept["map"] = draw_patch_map(a2, seen[0, 0], values, title=titles["map"])
        kept["ink"] = a2.collections[-1] if a2.collections else None  # the digit's outline
        fig.colorbar(kept["map"], ax=a2, shrink=0.8, label="weight")
        k = torch.arange(len(before))
        kept["before"] = a3.bar(k - 0.2, before.numpy(), width=0.4, color="#3b528b", label="original")
        kept["after"] = a3.bar(k + 0.2, after.numpy(), width=0.4, color="#5ec962", label=after_label)
        a3.set(xticks=k.tolist(), xlabel="class (digit)", ylabel="probability", ylim=(0, 1.05))
        kept["legend"] = a3.legend(fontsize=8, loc="upper left")
        a3.set_title(titles["bars"], fontsize=9)
        fig.suptitle(f"test image {example}")
        kept["figure"] = kept_figure(fig)
        return fig

    # Each option: (its label, in the current language; its value, the same in every language).
    maps = [(tr("rollout"), (-1, -1))]
    for layer in range(n_layers):
        maps.append((tr("layer {layer}, mean of heads").format(layer=layer), (layer, -1)))
        maps += [
            (tr("layer {layer}, head {head}").format(layer=layer, head=head), (layer, head))
            for head in range(n_heads)
        ]
    patches = [(tr("none"), -1)] + [(f"p{k}", k) for k in range(n)]
    return explorer(
        draw,
        example=widgets.IntSlider(value=0, min=0, max=len(images) - 1, description=N_("image")),
        shown=widgets.Dropdown(options=maps, value=(-1, -1), description=N_("map")),
        occluded=widgets.Dropdown(options=patches, value=-1, description=N_("occlude")),
    )
