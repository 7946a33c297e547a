"""Interactive explorers for the notebooks (ipywidgets + matplotlib).

Shapes: ``T`` tokens, ``D`` width, ``H`` heads. Imported lazily: nothing here loads
unless a notebook asks for an explorer. Each explorer returns a widget; display it by
leaving it as the last expression of a cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .functional import attention_scores, masked_softmax
from .masks import causal_mask, combine_masks
from .plotting import plot_attention, plot_bars


def explorer(draw: Callable[..., None], **controls: Any):
    """A row of controls above a plot that redraws whenever a control changes.

    Args:
        draw: called with the controls' values as keyword arguments; it draws with
            matplotlib (the figure is shown for it).
        **controls: ipywidgets controls, by the keyword ``draw`` expects.

    Returns:
        An ``ipywidgets.VBox``.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    out = widgets.Output()

    def redraw(_change: object = None) -> None:
        with out:
            out.clear_output(wait=True)
            draw(**{name: c.value for name, c in controls.items()})
            plt.show()

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), out])


def query_explorer(inputs: torch.Tensor, tokens: Sequence[str]):
    """Pick a query token; see its dot-product scores, softmax weights and context vector.

    Args:
        inputs: ``(T, D)`` token embeddings.
        tokens: ``T`` token strings.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def draw(query: int) -> None:
        scores = inputs @ inputs[query]  # (T, D) @ (D,) -> (T,)
        weights = torch.softmax(scores, dim=0)
        context = weights @ inputs  # (T,) @ (T, D) -> (D,)
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2), constrained_layout=True)
        plot_bars(scores, tokens, ax=a1, ylabel="score  x_i · q", title=f"scores for query '{tokens[query]}'")
        plot_bars(
            weights, tokens, ax=a2, ylabel="weight", title="softmax weights (sum to 1)", color="#21918c"
        )
        fig.suptitle("context vector = " + ", ".join(f"{v:.4f}" for v in context.tolist()))

    picker = widgets.ToggleButtons(
        options=[(t, i) for i, t in enumerate(tokens)], value=1, description="query"
    )
    return explorer(draw, query=picker)


def temperature_explorer(queries: torch.Tensor, keys: torch.Tensor, tokens: Sequence[str]):
    """Slide the factor that multiplies the scores; watch the softmax sharpen or flatten.

    Args:
        queries: ``(T, Dk)``. keys: ``(T, Dk)``. tokens: ``T`` labels.
    """
    import ipywidgets as widgets

    raw = attention_scores(queries, keys, scale=1.0).detach()  # (T, T)
    d_k = queries.shape[-1]

    def draw(scale: float) -> None:
        weights = torch.softmax(raw * scale, dim=-1)
        entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1).mean()
        plot_attention(
            weights,
            tokens,
            annotate=len(tokens) <= 8,
            vmax=1.0,
            suptitle=f"scale = {scale:.3f}   (1/sqrt(d_k) = {d_k**-0.5:.3f})\n"
            f"mean entropy {entropy:.3f} nats (uniform: {math.log(len(tokens)):.3f})",
        )

    slider = widgets.FloatLogSlider(
        value=d_k**-0.5, base=10, min=-2, max=2, step=0.02, description="scale", readout_format=".3f"
    )
    return explorer(draw, scale=slider)


def mask_explorer(scores: torch.Tensor, tokens: Sequence[str]):
    """Toggle the causal mask and slide how many trailing tokens are padding.

    Args:
        scores: ``(T, T)`` scores before softmax. tokens: ``T`` labels.
    """
    import ipywidgets as widgets

    scores = scores.detach()
    t = scores.shape[-1]

    def draw(causal: bool, n_pad: int) -> None:
        keep = torch.arange(t) < t - n_pad  # (T,) True for real tokens
        mask = combine_masks(causal_mask(t) if causal else None, keep[None, :] if n_pad else None)
        weights = masked_softmax(scores, mask)
        labels = [tok if k else f"{tok} [PAD]" for tok, k in zip(tokens, keep.tolist(), strict=True)]
        title = f"causal={causal}, padding={n_pad}: rows sum to " + " ".join(
            f"{s:.0f}" for s in weights.sum(-1).tolist()
        )
        plot_attention(weights, labels, annotate=t <= 8, vmax=1.0, suptitle=title)

    return explorer(
        draw,
        causal=widgets.Checkbox(value=True, description="causal"),
        n_pad=widgets.IntSlider(value=0, min=0, max=t, description="pad tokens"),
    )


def dropout_explorer(weights: torch.Tensor, tokens: Sequence[str]):
    """Slide the dropout rate and the seed; see which weights drop and how the rest scale.

    In eval mode (``training`` unticked) ``p`` and ``seed`` are disabled, and ``seed`` also at
    ``p = 0``: nothing is dropped then.

    Args:
        weights: ``(T, T)`` attention weights. tokens: ``T`` labels.
    """
    import ipywidgets as widgets

    weights = weights.detach()

    def draw(p: float, seed: int, training: bool) -> None:
        # torch's own dropout under the chosen seed: seed 123, p=0.5 shows the draw printed in
        # Raschka (2024, ch. 3)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            dropped = F.dropout(weights, p, training=training)
        scale = 1 / (1 - p) if training else 1.0
        plot_attention(
            dropped,
            tokens,
            annotate=len(tokens) <= 8,
            vmax=float(weights.max()) * scale,
            suptitle=f"p={p:.2f}, {'train' if training else 'eval'}: kept weights x {scale:.2f}\n"
            "row sums " + " ".join(f"{s:.2f}" for s in dropped.sum(-1).tolist()),
        )

    p = widgets.FloatSlider(value=0.5, min=0.0, max=0.9, step=0.05, description="p")
    seed = widgets.IntSlider(value=123, min=0, max=200, description="seed")
    training = widgets.Checkbox(value=True, description="training")

    # In eval mode dropout is the identity, and with p = 0 no draw drops anything: the
    # controls that would then change nothing are disabled rather than silently ignored.
    def enable(_change: object = None) -> None:
        p.disabled = not training.value
        seed.disabled = not training.value or p.value == 0

    for control in (p, training):
        control.observe(enable, names="value")
    enable()
    return explorer(draw, p=p, seed=seed, training=training)


def head_explorer(weights: torch.Tensor, tokens: Sequence[str]):
    """Step through the heads of a multi-head module's weights.

    Args:
        weights: ``(H, T, T)`` or ``(B, H, T, T)`` (first batch element shown).
        tokens: ``T`` labels.
    """
    import ipywidgets as widgets

    w = weights.detach()
    w = w[0] if w.ndim == 4 else w  # (H, T, T)

    def draw(head: int) -> None:
        plot_attention(
            w[head], tokens, annotate=len(tokens) <= 8, vmax=1.0, suptitle=f"head {head} of {w.shape[0]}"
        )

    return explorer(draw, head=widgets.IntSlider(value=0, min=0, max=w.shape[0] - 1, description="head"))
