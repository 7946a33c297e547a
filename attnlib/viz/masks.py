"""What masking and dropout take out of the attention weights: the explorers of notebooks 03 and 04.

Shapes: ``T`` tokens; scores and weights are ``(T, T)``.

Drawn in notebooks 03 (masking) and 04 (dropout on attention weights).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import torch
import torch.nn.functional as F

from ..functional import masked_softmax
from ..i18n import N_
from ..masks import causal_mask, combine_masks
from .explorers import explorer
from .heatmaps import replot_attention

__all__ = ["dropout_explorer", "mask_explorer"]


def mask_explorer(scores: torch.Tensor, tokens: Sequence[str]):
    """Toggle the causal mask and slide how many trailing tokens are padding.

    Args:
        scores: ``(T, T)`` scores before softmax. tokens: ``T`` labels.
    """
    scores = scores.detach()
    t = scores.shape[-1]

    figure = None  # kept between redraws and updated in place

    def draw(causal: bool, n_pad: int) -> Any:
        nonlocal figure
        keep = torch.arange(t) < t - n_pad  # (T,) True for real tokens
        mask = combine_masks(causal_mask(t) if causal else None, keep[None, :] if n_pad else None)
        weights = masked_softmax(scores, mask)
        labels = [tok if k else f"{tok} [PAD]" for tok, k in zip(tokens, keep.tolist(), strict=True)]
        title = f"causal={causal}, padding={n_pad}: rows sum to " + " ".join(
            f"{s:.0f}" for s in weights.sum(-1).tolist()
        )
        figure = replot_attention(figure, weights, labels, annotate=t <= 8, vmax=1.0, suptitle=title)
        return figure

    return explorer(
        draw,
        causal=widgets.Checkbox(value=True, description=N_("causal")),
        n_pad=widgets.IntSlider(value=0, min=0, max=t, description=N_("pad tokens")),
    )


def dropout_explorer(weights: torch.Tensor, tokens: Sequence[str]):
    """Slide the dropout rate and the seed; see which weights drop and how the rest scale.

    In eval mode (``training`` unticked) ``p`` and ``seed`` are disabled, and ``seed`` also at
    ``p = 0``: nothing is dropped then.

    Args:
        weights: ``(T, T)`` attention weights. tokens: ``T`` labels.
    """
    weights = weights.detach()

    figure = None  # kept between redraws and updated in place

    def draw(p: float, seed: int, training: bool) -> Any:
        nonlocal figure
        # torch's own dropout under the chosen seed: seed 123, p=0.5 shows the draw printed in
        # Raschka (2024, ch. 3)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            dropped = F.dropout(weights, p, training=training)
        scale = 1 / (1 - p) if training else 1.0
        figure = replot_attention(
            figure,
            dropped,
            tokens,
            annotate=len(tokens) <= 8,
            vmax=float(weights.max()) * scale,
            suptitle=f"p={p:.2f}, {'train' if training else 'eval'}: kept weights x {scale:.2f}\n"
            "row sums " + " ".join(f"{s:.2f}" for s in dropped.sum(-1).tolist()),
        )
        return figure

    p = widgets.FloatSlider(value=0.5, min=0.0, max=0.9, step=0.05, description=N_("p"))
    seed = widgets.IntSlider(value=123, min=0, max=200, description=N_("seed"))
    training = widgets.Checkbox(value=True, description=N_("training"))

    # In eval mode dropout is the identity, and with p = 0 no draw drops anything: the
    # controls that would then change nothing are disabled rather than silently ignored.
    def enable(_change: object = None) -> None:
        p.disabled = not training.value
        seed.disabled = not training.value or p.value == 0

    for control in (p, training):
        control.observe(enable, names="value")
    enable()
    return explorer(draw, p=p, seed=seed, training=training)
