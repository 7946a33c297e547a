"""A GPT drawn, with its KV cache, and its sampling explored: the pictures of notebook 12.

Shapes: ``T`` tokens, ``V`` vocabulary, ``L`` layers.

Drawn in notebook 12 (a GPT with a KV cache).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from ..data import Vocab
from ..gpt import GPT, encode_prompt
from ..i18n import N_
from ..modes import evaluating
from ..sampling import next_token_probs
from .drawing import CONTEXT, DECODER, ENCODER, QUERY, WEIGHT, arrow, box, residual_add
from .explorers import explorer, kept_figure

__all__ = ["gpt_diagram", "sampling_explorer"]


def sampling_explorer(model: GPT, vocab: Vocab, prompt: str = "", *, max_new_tokens: int = 8, seed: int = 0):
    """Type a prompt, slide the temperature, top-k and top-p; see the next-token distribution and a sample.

    The bars are the distribution the next token is drawn from,
    ``softmax(top_p(top_k(logits) / T))`` (top-p = 1 keeps every token);
    the black ticks mark the model's own distribution (temperature 1, every token). The title
    shows a continuation sampled with those settings and a fixed seed (greedy at T = 0).

    Every redraw runs the model in eval mode (no dropout) and then gives it back its own mode.

    Args:
        model: a trained :class:`~attnlib.gpt.GPT` whose sequences start with ``vocab``'s SOS.
        vocab: its vocabulary (one character per token).
        prompt: the text typed first.
        max_new_tokens: the longest continuation shown.
        seed: seed of the sampled continuation.
    """
    labels = vocab.tokens(range(len(vocab)))

    logits_of: dict[str, torch.Tensor] = {}  # the model's next-token logits, once per prompt
    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates

    def draw(prompt: str, temperature: float, top_k: int, top_p: float) -> Any:
        nucleus = None if top_p >= 1 else top_p
        room = model.context_length - max_new_tokens - 1  # SOS + prompt + continuation must fit
        shown = prompt[-room:] if room > 0 else ""
        idx = encode_prompt(vocab, shown)  # (1, T)
        with evaluating(model), torch.no_grad():
            if shown not in logits_of:
                logits_of[shown] = model(idx)[0, -1]  # (V,)
            new = model.generate(
                idx,
                max_new_tokens,
                temperature,
                top_k,
                generator=torch.Generator().manual_seed(seed),
                top_p=nucleus,
            )[0, idx.shape[1] :]
        logits = logits_of[shown]
        probs = next_token_probs(logits, temperature, top_k, top_p=nucleus)  # (V,)
        plain = torch.softmax(logits, dim=-1)
        cut = "" if shown == prompt else f" (first {len(prompt) - len(shown)} characters cut)"
        title = (
            f"T={temperature:.2f}, top-k={top_k}, top-p={top_p:.2f}: '{shown}' -> '{vocab.decode(new)}'"
            f"  (seed {seed}){cut}"
        )
        if kept:  # redrawn in place: new bar heights, model ticks and title
            for bar, prob in zip(kept["bars"], probs.tolist(), strict=True):
                bar.set_height(prob)
            kept["model"].set_offsets(
                torch.stack([torch.arange(len(labels), dtype=plain.dtype), plain], 1).numpy()
            )
            kept["bars"][0].axes.set_title(title, fontsize=10)
            return kept["figure"]
        fig, ax = plt.subplots(figsize=(10, 3.4), constrained_layout=True)
        kept["bars"] = ax.bar(range(len(labels)), probs.numpy(), color=WEIGHT, label="sampled from")
        kept["model"] = ax.scatter(
            range(len(labels)), plain.numpy(), marker="_", s=250, color="black", label="model (T=1, all)"
        )
        ax.set_xticks(range(len(labels)), labels, rotation=45)
        ax.set(xlabel="next token", ylabel="probability", ylim=(0, 1.05))
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(title, fontsize=10)
        kept["figure"] = kept_figure(fig)
        return fig

    return explorer(
        draw,
        prompt=widgets.Text(value=prompt, description=N_("prompt")),
        temperature=widgets.FloatSlider(
            value=1.0, min=0.0, max=2.0, step=0.05, description=N_("temperature")
        ),
        top_k=widgets.IntSlider(value=len(vocab), min=1, max=len(vocab), description=N_("top-k")),
        top_p=widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description=N_("top-p")),
    )


def gpt_diagram(cached: int = 4) -> Any:
    """Draw a decoder-only block stack (left) and one generation step with the KV cache (right).

    Args:
        cached: positions already in the cache in the right panel.

    Returns:
        The matplotlib ``Figure``.
    """
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, 6), constrained_layout=True, gridspec_kw={"width_ratios": [1, 1.35]}
    )
    _block_stack(left)
    _cache_step(right, cached)
    return fig


def _block_stack(ax: Any) -> None:
    x, y = 0.0, 0.0
    ax.text(x, y - 0.5, "token ids $x_0 \\dots x_t$", ha="center", fontsize=10)
    arrow(ax, (x, y - 0.3), (x, y + 0.35))
    y += 0.65
    box(ax, x, y, "token + position embedding", ENCODER, width=3.6)
    y += 0.3
    bottom = y
    for sublayer in ("masked multi-head attention", "feed-forward"):
        start = y
        for part, colour in (("LayerNorm", QUERY), (sublayer, DECODER)):
            arrow(ax, (x, y + 0.05 if part == "LayerNorm" else y - 0.2), (x, y + 0.35))
            y += 0.65
            box(ax, x, y, part, colour, width=3.6)
            y += 0.3
        y = residual_add(ax, x, y, start + 0.15, skip_dx=2.05)
    ax.add_patch(
        Rectangle((x - 2.3, bottom + 0.05), 4.6, y - bottom, fill=False, ls="--", ec=DECODER, lw=1.2)
    )
    ax.text(x + 2.4, (bottom + y) / 2, "$\\times L$ blocks\n(pre-LN)", color=DECODER, va="center")
    for part, colour in (("final LayerNorm", QUERY), ("linear head → logits", CONTEXT)):
        arrow(ax, (x, y), (x, y + 0.4))
        y += 0.7
        box(ax, x, y, part, colour, width=3.6)
        y += 0.3
    ax.set_title("decoder-only Transformer (GPT)", fontsize=11)
    ax.set(xlim=(-2.7, 3.9), ylim=(-0.8, y + 0.3))
    ax.set_aspect("equal")
    ax.set_axis_off()


def _cache_step(ax: Any, cached: int) -> None:
    t = cached
    for row, (name, colour) in enumerate((("keys", ENCODER), ("values", WEIGHT))):
        y = 1.2 + 1.3 * row
        ax.text(-0.7, y + 0.4, name, ha="right", va="center", fontsize=10)
        for j in range(t + 1):
            new = j == t
            ax.add_patch(
                Rectangle(
                    (j * 1.1, y), 0.9, 0.8, fc="white" if new else colour, ec=colour, lw=2.0 if new else 0.8,
                    hatch="//" if new else None,
                )
            )  # fmt: skip
            letter = "v" if name == "values" else "k"
            ax.text(j * 1.1 + 0.45, y + 0.4, f"${letter}_{j}$", ha="center", va="center",
                    color="black" if new else "white", fontsize=10)  # fmt: skip
    ax.add_patch(Rectangle((-0.15, 1.05), (t - 1) * 1.1 + 1.2, 2.55, fill=False, ls="--", ec=CONTEXT, lw=1.2))
    ax.text((t - 1) * 0.55 + 0.45, 3.75, f"in the cache: positions 0..{t - 1}", ha="center", color=CONTEXT)
    ax.text(t * 1.1 + 0.45, 3.75, "new", ha="center", color=ENCODER)
    qx = t * 1.1 + 0.45
    ax.add_patch(Rectangle((qx - 0.45, -0.6), 0.9, 0.8, fc=QUERY, ec="black", lw=0.8))
    ax.text(qx, -0.2, f"$q_{t}$", ha="center", va="center", fontsize=10)
    for j in range(t + 1):
        arrow(ax, (qx, 0.2), (j * 1.1 + 0.45, 1.2), color="black" if j == t else "grey", lw=0.8)
    ax.text(
        (t * 1.1) / 2,
        -1.3,
        f"step {t}: token $x_{t}$ gives one query $q_{t}$ and one new key and value;\n"
        f"$q_{t}$ attends to all {t + 1} keys; only $k_{t}, v_{t}$ are computed now",
        ha="center",
        fontsize=10,
    )
    ax.set_title("one generation step with the KV cache (each layer)", fontsize=11)
    ax.set(xlim=(-1.9, (t + 1) * 1.1 + 0.3), ylim=(-1.9, 4.2))
    ax.set_aspect("equal")
    ax.set_axis_off()
