"""An LSTM drawn, traced and explored: the pictures of notebook 06, and the learning-rate plot of 07 and 11.

Shapes: ``B`` batch, ``T`` steps, ``D`` input (embedding) width, ``d_hid`` hidden size, ``V``
vocabulary.

Drawn in notebook 06 (sequence models); :func:`plot_lr_schedule` draws the schedule of
``attnlib.training.train`` in notebook 07 and Vaswani et al.'s beside it in notebook 11.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from torch import nn

from ..data import Vocab
from ..i18n import N_, tr
from ..sequences import TRACE_NAMES, lstm_trace
from .drawing import CONTEXT, DECODER, ENCODER, QUERY, arrow, axes_or_new, box
from .explorers import explorer, kept_figure
from .heatmaps import CMAP

__all__ = ["gate_explorer", "lstm_diagram", "plot_lr_schedule"]


def lstm_diagram(tokens: Sequence[str] = ("<sos>", "3", "5", "7"), *, ax: Any = None) -> Any:
    """Draw an LSTM language model unrolled over time, trained with teacher forcing.

    Step ``t`` reads token ``x_t`` (its embedding ``e_t``), updates the cell state ``c_t`` and
    the hidden state ``h_t`` from ``c_{t-1}`` and ``h_{t-1}``, and turns ``h_t`` into
    next-token probabilities ``p_t``, scored against token ``x_{t+1}``. Every step is the
    same cell with the same weights; only the states flow from left to right.

    Args:
        tokens: the sequence; the model reads each token but the last and predicts each but
            the first (``T = len(tokens) - 1`` steps).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if len(tokens) < 2:
        raise ValueError(f"expected at least two tokens (one to read, one to predict), got {list(tokens)!r}")
    steps = len(tokens) - 1
    gap = 1.6
    ax = axes_or_new(ax, (max(6.0, 1.5 * steps + 2.5), 4.6))
    rows = {"embed": 0.0, "cell": 1.3, "prob": 2.6}
    for t in range(steps):
        x = t * gap
        ax.text(x, -0.9, tokens[t], ha="center", va="center", fontsize=10)
        arrow(ax, (x, -0.65), (x, rows["embed"] - 0.3))
        box(ax, x, rows["embed"], f"$e_{{{t + 1}}}$", QUERY, width=0.7)
        arrow(ax, (x, rows["embed"] + 0.3), (x, rows["cell"] - 0.3))
        box(ax, x, rows["cell"], "LSTM", ENCODER, width=0.9)
        arrow(ax, (x, rows["cell"] + 0.3), (x, rows["prob"] - 0.3))
        ax.text(x + 0.08, (rows["cell"] + rows["prob"]) / 2, f"$h_{{{t + 1}}}$", va="center", fontsize=9)
        box(ax, x, rows["prob"], f"$p_{{{t + 1}}}$", DECODER, width=0.7)
        arrow(ax, (x, rows["prob"] + 0.3), (x, rows["prob"] + 0.65))
        ax.text(
            x, rows["prob"] + 0.9, tokens[t + 1], ha="center", va="center", fontsize=10, fontweight="bold"
        )
        # the states handed to the next step: c on the upper line, h on the lower
        start = x - gap + 0.45 if t else x - gap + 0.2
        for dy, name in ((0.12, "c"), (-0.12, "h")):
            arrow(ax, (start, rows["cell"] + dy), (x - 0.45, rows["cell"] + dy), color=CONTEXT)
            ax.text((start + x - 0.45) / 2, rows["cell"] + dy + (0.13 if dy > 0 else -0.15),
                    f"${name}_{{{t}}}$", ha="center", va="center", fontsize=8, color=CONTEXT)  # fmt: skip
    right = (steps - 1) * gap
    notes = {
        "embed": "embedding: $e_t$ = row $x_t$ of the table",
        "cell": "gates $i, f, g, o$; states $c_t$, $h_t$",
        "prob": "$p_t$ = softmax($W h_t + b$), scored against $x_{t+1}$",
    }
    for row, text in notes.items():
        ax.text(right + 0.75, rows[row], text, va="center", fontsize=9)
    ax.text(right + 0.75, rows["prob"] + 0.9, "targets: the input shifted by one", va="center", fontsize=9)
    ax.text(right + 0.75, -0.9, "inputs (teacher forcing: the true tokens)", va="center", fontsize=9)
    ax.set(xlim=(-gap + 0.1, right + 4.4), ylim=(-1.3, rows["prob"] + 1.25))
    ax.set_title(f"an LSTM unrolled over {steps} steps: one cell, the same weights at every step")
    ax.set_axis_off()
    return ax


def _check_model(model: nn.Module) -> None:
    for part, kind in (("embedding", nn.Embedding), ("rnn", nn.LSTM), ("fc", nn.Linear)):
        if not isinstance(getattr(model, part, None), kind):
            raise TypeError(f"expected a model with .{part} an nn.{kind.__name__}, as in notebook 06")


def gate_explorer(model: nn.Module, vocab: Vocab, sequences: Sequence[str], *, max_temperature: float = 3.0):
    """Step through a sequence: the LSTM's gates and states, and the next-token distribution.

    Left: one quantity of :data:`~attnlib.sequences.TRACE_NAMES` for every hidden unit (rows) and step
    (columns), the current step outlined. Right: the probabilities of the next token after the
    current step, ``softmax(logits / temperature)``, the true next token marked.

    Args:
        model: a next-token model with ``embedding`` (``nn.Embedding``), ``rnn`` (one-layer,
            batch-first ``nn.LSTM``) and ``fc`` (``nn.Linear(d_hid, V)``), as in notebook 06.
        vocab: its vocabulary; each sequence is read as ``<sos>`` + its symbols + ``<eos>``.
        sequences: the sequences offered by the first slider; the step slider ends at the
            chosen sequence's last step.
        max_temperature: the largest temperature on the slider.

    Returns:
        An ``ipywidgets.VBox``.
    """
    _check_model(model)
    if not sequences:
        raise ValueError("expected at least one sequence, got none")
    traces, logits, labels, all_ids = [], [], [], []
    for text in sequences:  # computed once: moving a slider only redraws
        ids = torch.tensor([vocab.encode(text, sos=True, eos=True)])  # (1, T+1)
        with torch.no_grad():
            embedded = model.embedding(ids[:, :-1])  # (1, T, D): teacher forcing reads all but the last
            trace = lstm_trace(model.rnn, embedded)
            logits.append(model.fc(trace["hidden state h"])[0])  # (T, d_hid) -> (T, V)
        traces.append({name: value[0] for name, value in trace.items()})  # (T, d_hid) each
        labels.append(vocab.tokens(ids[0]))
        all_ids.append(ids[0].tolist())
    symbols = vocab.tokens(range(len(vocab)))

    kept: dict[str, Any] = {}  # the figure and the artists a redraw updates, for one sequence

    def draw(example: int, step: int, quantity: str, temperature: float) -> Any:
        tokens = labels[example]
        t = min(step, len(tokens) - 2)  # a shorter sequence stops at its last step
        values = traces[example][quantity].T  # (d_hid, T)
        signed = quantity in ("candidate g", "cell state c", "hidden state h")
        lim = max(1.0, float(values.abs().max())) if quantity == "cell state c" else 1.0
        probs = torch.softmax(logits[example][t] / temperature, dim=-1)  # (V,)
        gold = all_ids[example][t + 1]
        # teal marks what is right, as in notebook 07's copy explorer; the rest in grey
        colours = ["#21918c" if i == gold else "#b0b0b0" for i in range(len(symbols))]
        left_title = f"{quantity}, every step"
        right_title = f"after {tokens[t]!r} (step {t + 1}), temperature {temperature:.2f}"
        if kept.get("example") == example:  # the same sequence: redrawn in place
            image = kept["image"]
            image.set_data(values.numpy())
            image.set_cmap("PuOr" if signed else CMAP)
            image.set_clim(-lim if signed else 0.0, lim)  # the colour bar follows
            kept["step"].set_x(t - 0.5)
            image.axes.set_title(left_title)
            for bar, prob, colour in zip(kept["bars"], probs.tolist(), colours, strict=True):
                bar.set_height(prob)
                bar.set_facecolor(colour)
            kept["bars"][0].axes.set_title(right_title)
            return kept["figure"]
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1.1, 1]}, constrained_layout=True
        )
        image = left.imshow(
            values.numpy(),
            aspect="auto",
            cmap="PuOr" if signed else CMAP,
            vmin=-lim if signed else 0.0,
            vmax=lim,
        )
        kept["step"] = left.add_patch(
            plt.Rectangle((t - 0.5, -0.5), 1, values.shape[0], fill=False, ec="black", lw=2)
        )
        left.set_xticks(range(values.shape[1]), tokens[:-1])
        left.set(xlabel="input token (step)", ylabel="hidden unit", title=left_title)
        fig.colorbar(image, ax=left, shrink=0.8)
        kept["bars"] = right.bar(range(len(symbols)), probs.numpy(), color=colours)
        right.set_xticks(range(len(symbols)), symbols, rotation=90)
        right.set_ylim(0, 1)
        right.set(xlabel="next token (teal: the true one)", ylabel="probability")
        right.set_title(right_title)
        fig.suptitle("".join(tokens[1:-1]))
        # another sequence has other step labels, so it gets a new figure and layout
        kept.update(example=example, image=image, figure=kept_figure(fig))
        return fig

    def last_step(example: int) -> int:
        return len(labels[example]) - 2  # steps read <sos> and the symbols, not <eos>

    example = widgets.IntSlider(value=0, min=0, max=len(sequences) - 1, description=N_("sequence"))
    step = widgets.IntSlider(value=min(2, last_step(0)), min=0, max=last_step(0), description=N_("step"))

    # The step slider ends at the sequence's last step (a step past it would draw nothing new).
    # Registered before the explorer's redraw, so that the redraw sees the clamped step.
    def fit_step(change: dict) -> None:
        step.max = last_step(change["new"])

    example.observe(fit_step, names="value")
    return explorer(
        draw,
        example=example,
        step=step,
        quantity=widgets.Dropdown(  # each option's label translated, its value the English name
            options=[(tr(name), name) for name in TRACE_NAMES], value="cell state c", description=N_("show")
        ),
        temperature=widgets.FloatSlider(
            value=1.0,
            min=0.1,
            max=max_temperature,
            step=0.1,
            description=N_("temperature"),
            continuous_update=True,
        ),
    )


def plot_lr_schedule(schedules: Mapping[str, Sequence[float]], *, ax: Any = None) -> Any:
    """Learning rate against optimiser step, one line per schedule, each peak marked.

    Args:
        schedules: name -> the learning rate of every step, in order (``History.lr`` of
            :func:`attnlib.training.train`, or any schedule computed step by step). Step 1 is
            the first entry.
        ax: axes to draw into; a new figure when None.

    Returns:
        The axes.
    """
    if not schedules:
        raise ValueError("expected at least one schedule, got none")
    for name, rates in schedules.items():
        if len(rates) == 0:
            raise ValueError(f"expected the learning rate of every step for {name!r}, got an empty list")
    ax = axes_or_new(ax, (6.5, 3.4))
    styles = ["-", "--", "-.", ":"]
    colours = ["#3b528b", "#21918c", "#5ec962", "#440154"]  # viridis, without its pale yellow
    for i, (name, rates) in enumerate(schedules.items()):
        rates = [float(r) for r in rates]
        steps = range(1, len(rates) + 1)
        colour = colours[i % 4]
        ax.plot(steps, rates, styles[i % 4], color=colour, lw=1.8, label=name)
        peak = max(range(len(rates)), key=rates.__getitem__)  # the first step at the largest rate
        ax.plot([peak + 1], [rates[peak]], "o", color=colour, ms=6)
        ax.annotate(
            f"peak {rates[peak]:.3g}\nat step {peak + 1}",
            (peak + 1, rates[peak]),
            xytext=(10, -10),
            textcoords="offset points",
            va="top",
            fontsize=9,
            color=colour,
        )
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("learning rate")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    return ax
