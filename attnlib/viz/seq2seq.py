"""An encoder-decoder drawn, run on one string, and measured by length: notebooks 07 and 08.

Shapes: ``T`` generated tokens, ``Ts`` source tokens, ``Tt`` target tokens.

Drawn in notebooks 07 (sequence to sequence without attention) and 08 (Bahdanau attention).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from torch import nn

from ..data import Vocab
from ..i18n import N_
from ..seq2seq import translate
from ..tasks import digit_pairs
from .drawing import CONTEXT, DECODER, ENCODER, arrow, axes_or_new, box
from .explorers import explorer, kept_figure

__all__ = ["copy_explorer", "plot_length_curves", "seq2seq_diagram"]


def seq2seq_diagram(
    source: Sequence[str] = ("3", "1", "4"),
    target: Sequence[str] = ("3", "1", "4"),
    *,
    attention: bool = False,
    ax: Any = None,
) -> Any:
    """Draw an RNN encoder-decoder, with one context vector or with attention.

    The bidirectional encoder reads ``source`` into outputs ``h_j``. Without attention only
    its final state, the context vector ``c``, reaches the decoder; with attention every
    decoder step ``s_t`` reads all the ``h_j`` through its own weights and context ``c_t``.

    Args:
        source: source tokens, one box each (``Ts``).
        target: target tokens; the decoder reads ``<sos>`` and then each but the last, and
            writes each and then ``<eos>`` (``Tt + 1`` steps).
        attention: draw the attention of every decoder step instead of the one vector.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if not source or not target:
        raise ValueError(f"expected at least one source and one target token, got {source!r} and {target!r}")
    steps = len(target) + 1
    width = len(source) + steps + 2
    ax = axes_or_new(ax, (max(6.0, 0.9 * width), 3.8))
    dec_x0 = len(source) + 1.5
    for j, token in enumerate(source):
        ax.text(j, -0.9, token, ha="center", va="center", fontsize=11)
        arrow(ax, (j, -0.65), (j, -0.3))
        box(ax, j, 0, f"$h_{j + 1}$", ENCODER)
        if j:
            arrow(ax, (j - 0.6, 0.1), (j - 0.4, 0.1))
            arrow(ax, (j - 0.4, -0.1), (j - 0.6, -0.1))
    inputs, outputs = ["<sos>", *target], [*target, "<eos>"]
    out_dx = 0.22 if attention else 0.0  # with attention, c_t comes in where the output would leave
    for t in range(steps):
        x = dec_x0 + t
        ax.text(x, -0.9, inputs[t], ha="center", va="center", fontsize=9)
        arrow(ax, (x, -0.65), (x, -0.3))
        box(ax, x, 0, f"$s_{t + 1}$", DECODER)
        arrow(ax, (x + out_dx, 0.3), (x + out_dx, 0.65))
        ax.text(x + out_dx, 0.9, outputs[t], ha="center", va="center", fontsize=9)
        if t:
            arrow(ax, (x - 0.6, 0), (x - 0.4, 0))
    if attention:
        for t in range(steps):
            x = dec_x0 + t
            box(ax, x, 1.9, f"$c_{t + 1}$", CONTEXT, width=0.7)
            arrow(ax, (x - 0.2, 1.6), (x - 0.2, 0.3), color=CONTEXT)
            for j in range(len(source)):
                ax.plot([j, x], [0.3, 1.6], color=CONTEXT, lw=0.6, alpha=0.45)
        title = "with attention: every step $s_t$ gets its own context $c_t$ from all of $h_1 \\dots h_{T_s}$"
    else:
        c_x = (len(source) - 1 + dec_x0) / 2
        box(ax, c_x, 1.5, "$c$", CONTEXT, width=0.6)
        arrow(ax, (len(source) - 1 + 0.2, 0.3), (c_x - 0.2, 1.2), color=CONTEXT)
        arrow(ax, (0.2, 0.3), (c_x - 0.3, 1.25), color=CONTEXT)
        arrow(ax, (c_x + 0.2, 1.2), (dec_x0 - 0.2, 0.3), color=CONTEXT)
        title = "without attention: the decoder sees the source only through one context vector $c$"
    ax.text(-0.5, 2.55 if attention else 2.2, "encoder (bidirectional LSTM)", color=ENCODER, fontsize=10)
    ax.text(dec_x0 - 0.5, 2.55 if attention else 2.2, "decoder (LSTM)", color=DECODER, fontsize=10)
    ax.set(xlim=(-0.8, dec_x0 + steps - 0.2), ylim=(-1.3, 2.9 if attention else 2.5), title=title)
    ax.set_axis_off()
    return ax


def plot_length_curves(
    reports: Mapping[str, Mapping[str, Sequence]], *, metric: str = "token_accuracy", ax=None
):
    """Accuracy against source length, one line per model (reports of ``accuracy_by_length``)."""
    ax = axes_or_new(ax, (6.5, 3.6))
    styles = ["o-", "s--", "^-.", "d:"]
    colours = ["#3b528b", "#21918c", "#5ec962", "#440154"]  # viridis, without its pale yellow
    for i, (name, report) in enumerate(reports.items()):
        ax.plot(report["label"], report[metric], styles[i % 4], color=colours[i % 4], label=name)
    ax.set_xlabel("source length (digits)")
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def copy_explorer(model: nn.Module, vocab: Vocab, *, reverse: bool = False, max_len: int = 50):
    """Slide the length of a random digit string; see which digits the model gets right.

    Args:
        model: a trained model of the digit task.
        vocab: the digit vocabulary.
        reverse: the task reverses the string instead of copying it.
        max_len: longest string offered.
    """
    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates, for one length

    def draw(length: int, seed: int) -> Any:
        source, target = digit_pairs(1, seed, min_len=length, max_len=length, reverse=reverse)[0]
        output = translate(model, source, vocab, vocab, max_len=length + 5)[0]
        right = [i < len(output) and output[i] == c for i, c in enumerate(target)]
        colours = ["#21918c" if r else "#fde725" for r in right]
        title = f"{sum(right)}/{length} digits right; model wrote {output!r}"
        if kept.get("length") == length:  # redrawn in place: new colours, digits and title
            for bar, colour in zip(kept["bars"], colours, strict=True):
                bar.set_facecolor(colour)
            ax = kept["bars"][0].axes
            ax.set_xticklabels(list(target))
            ax.set_title(title, fontsize=9)
            return kept["figure"]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.22 * length), 1.9), constrained_layout=True)
        kept["bars"] = ax.bar(range(length), [1] * length, color=colours)
        ax.set_xticks(range(length), list(target), fontsize=8)
        ax.set_yticks([])
        ax.set_xlabel("target digit (teal: right, yellow: wrong)")
        ax.set_title(title, fontsize=9)
        # another length has another number of bars (and a wider figure): a new figure
        kept.update(length=length, figure=kept_figure(fig))
        return fig

    return explorer(
        draw,
        length=widgets.IntSlider(value=10, min=5, max=max_len, description=N_("length")),
        seed=widgets.IntSlider(value=0, min=0, max=99, description=N_("string #")),
    )
