"""Plots and explorers for the seq2seq notebooks (06-08).

Shapes: ``T`` generated tokens, ``Ts`` source tokens. matplotlib and ipywidgets are imported
inside the functions, so importing this module stays light. Heatmaps go through
:func:`attnlib.plotting.plot_attention`; explorers through :func:`attnlib.widgets.explorer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from .data import PairDataset, Vocab


@torch.no_grad()
def translate(
    model: nn.Module, text: str, src_vocab: Vocab, tgt_vocab: Vocab, max_len: int = 60
) -> tuple[str, torch.Tensor | None, list[str], list[str]]:
    """Greedy-decode one source string.

    Returns:
        ``(output, weights, src_labels, out_labels)``: the output string, the ``(T, Ts)``
        attention weights (None without attention), and token labels for plotting.
    """
    src = torch.tensor([src_vocab.encode(text)])  # (1, Ts)
    tokens, weights = model.greedy_decode(src, max_len)
    ids = tokens[0].tolist()
    length = ids.index(tgt_vocab.eos_id) + 1 if tgt_vocab.eos_id in ids else len(ids)
    out_labels = tgt_vocab.tokens(ids[:length])
    weights = None if weights is None else weights[0, :length]  # (T, Ts)
    return tgt_vocab.decode(ids), weights, src_vocab.tokens(src[0]), out_labels


def plot_alignment(model: nn.Module, text: str, src_vocab: Vocab, tgt_vocab: Vocab, *, name: str = ""):
    """Heatmap of where each output token of ``model`` looks in the source ``text``.

    The title shows the source and the model's output, after ``name`` if given."""
    output, weights, src_labels, out_labels = translate(model, text, src_vocab, tgt_vocab)
    if weights is None:
        raise ValueError("this model has no attention weights to plot")
    from .plotting import plot_attention

    return plot_attention(
        weights,
        src_labels,
        out_labels,
        xlabel="source character",
        ylabel="output character",
        suptitle=f"{name + ': ' if name else ''}{text!r} -> {output!r}",
        panel_size=max(3.2, 0.16 * max(weights.shape)),  # about 0.16 inch per token
    )


def plot_alignments(
    models: Mapping[str, nn.Module],
    text: str,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    cols: int | None = None,
    panel_size: float = 3.0,
):
    """One heatmap per model for the same source ``text``, in a grid of ``cols`` columns.

    Each panel's rows are that model's own output tokens (models may write different
    outputs); its title gives the model's name and output.
    """
    import math

    import matplotlib.pyplot as plt

    from .plotting import CMAP

    results = {name: translate(m, text, src_vocab, tgt_vocab) for name, m in models.items()}
    cols = cols or len(results)
    rows = math.ceil(len(results) / cols)
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(panel_size * cols * 1.3 + 1, (panel_size + 0.5) * rows),
        squeeze=False,
        constrained_layout=True,
    )
    image = None
    for i, (name, (output, weights, src_labels, out_labels)) in enumerate(results.items()):
        ax = axes[i // cols][i % cols]
        image = ax.imshow(weights.numpy(), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(src_labels)), src_labels, fontsize=7)
        ax.set_yticks(range(len(out_labels)), out_labels, fontsize=7)
        ax.set_xlabel("source character")
        if i % cols == 0:
            ax.set_ylabel("output character")
        ax.set_title(f"{name}: {output}", fontsize=9)
    for j in range(len(results), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    fig.suptitle(repr(text))
    return fig


def plot_length_curves(
    reports: Mapping[str, Mapping[str, Sequence]], *, metric: str = "token_accuracy", ax=None
):
    """Accuracy against source length, one line per model (reports of ``accuracy_by_length``)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.6), constrained_layout=True)
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


def alignment_explorer(models: Mapping[str, nn.Module], data: PairDataset, *, examples: int = 50):
    """Pick a test example (or type a source) and a model; see the alignment heatmap.

    While the source box holds text, the example slider is disabled: the typed source is shown.

    Args:
        models: name -> trained model with attention.
        data: where the examples come from (its vocabularies are used).
        examples: how many of the first examples the slider offers.
    """
    import ipywidgets as widgets

    from .widgets import explorer

    def draw(example: int, model: str, text: str) -> None:
        source = text.strip() or data.pairs[example][0]
        try:
            plot_alignment(models[model], source, data.src_vocab, data.tgt_vocab, name=model)
        except ValueError as error:  # e.g. a typed source shorter than a local window
            print(f"{source!r}: {error}")

    example = widgets.IntSlider(value=0, min=0, max=min(examples, len(data)) - 1, description="example")
    text = widgets.Text(
        value="", placeholder="or type a source", description="source", continuous_update=False
    )

    # A typed source replaces the example, so the slider is disabled (not silently ignored)
    # while the box holds text; clearing the box brings the slider and its example back.
    def typed(change: dict) -> None:
        example.disabled = bool(change["new"].strip())

    text.observe(typed, names="value")
    return explorer(
        draw,
        example=example,
        model=widgets.Dropdown(options=list(models), description="model"),
        text=text,
    )


def copy_explorer(model: nn.Module, vocab: Vocab, *, reverse: bool = False, max_len: int = 50):
    """Slide the length of a random digit string; see which digits the model gets right.

    Args:
        model: a trained model of the digit task.
        vocab: the digit vocabulary.
        reverse: the task reverses the string instead of copying it.
        max_len: longest string offered.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from .data import digit_pairs
    from .widgets import explorer

    def draw(length: int, seed: int) -> None:
        source, target = digit_pairs(1, seed, min_len=length, max_len=length, reverse=reverse)[0]
        output = translate(model, source, vocab, vocab, max_len=length + 5)[0]
        right = [i < len(output) and output[i] == c for i, c in enumerate(target)]
        _, ax = plt.subplots(figsize=(max(6.0, 0.22 * length), 1.9), constrained_layout=True)
        ax.bar(range(length), [1] * length, color=["#21918c" if r else "#fde725" for r in right])
        ax.set_xticks(range(length), list(target), fontsize=8)
        ax.set_yticks([])
        ax.set_xlabel("target digit (teal: right, yellow: wrong)")
        ax.set_title(f"{sum(right)}/{length} digits right; model wrote {output!r}", fontsize=9)

    return explorer(
        draw,
        length=widgets.IntSlider(value=10, min=5, max=max_len, description="length"),
        seed=widgets.IntSlider(value=0, min=0, max=99, description="string #"),
    )
