"""Where an attention decoder looks: one step drawn, and alignments plotted and explored.

Drawn in notebooks 08 (Bahdanau attention) and 09 (Luong attention).

The pictures of notebooks 08 and 09. Shapes: ``T`` generated tokens, ``Ts`` source tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from torch import nn

from ..data import PairDataset, Vocab
from ..i18n import N_
from ..seq2seq import translate
from .drawing import BLOCK, CONTEXT, DECODER, ENCODER, QUERY, WEIGHT, arrow, axes_or_new, block_outline, box
from .explorers import explorer
from .heatmaps import CMAP, plot_attention, replot_attention

__all__ = ["alignment_explorer", "decoder_step_diagram", "plot_alignment", "plot_alignments"]


def decoder_step_diagram(kind: str = "luong", *, ax: Any = None) -> Any:
    """Draw one decoder step with attention, in Bahdanau's order or in Luong's.

    Output steps ``t`` count from 1, as Bahdanau et al. do.
    Bahdanau et al. (2015, §3.1 and appendix A.2.2), in notebook 08's letters (the paper's, with
    ``t`` for its ``i`` and ``T_s`` for its ``T_x``): the *previous* decoder state ``s_{t-1}`` is
    scored against the annotations ``h_j``, the context ``c_t`` enters the recurrent step with
    ``y_{t-1}`` and gives the new state ``s_t`` (carried to step ``t+1``), and the next token is
    predicted by a deep output: a maxout layer over ``s_{t-1}``, ``y_{t-1}`` and ``c_t``, then
    the linear layer ``W_o`` and a softmax (A.2.2, ``p ∝ exp(y^T W_o t_i)`` with ``t_i`` the
    maxout units; eq. 4 writes ``s_t``).
    The recurrent step is drawn as an LSTM, the series' unit (the paper's is a gated unit), so
    it also reads the memory cell that goes with ``s_{t-1}``; the label on its input says so.
    Luong et al. (2015, §3) use ``h_t`` for the decoder state and ``h̄_s`` for the encoder
    outputs: they step the LSTM first, score the *new* state ``h_t``, and predict from
    ``h̃_t = tanh(W_c[c_t; h_t])``, which input feeding passes to the next step. Luong's panel
    shows the LSTM's recurrent input as :class:`~attnlib.LuongDecoder` computes it: the previous
    state ``h_{t-1}`` with its LSTM memory cell (not drawn as ``c``, the context's symbol), and
    ``[y_{t-1}; h̃_{t-1}]`` with input feeding (``input_feeding=True``, the default; without it,
    ``y_{t-1}`` alone). The dashed input-feeding arrow carries ``h̃_t`` to step ``t+1``.

    Args:
        kind: ``"bahdanau"`` or ``"luong"``.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    if kind not in ("bahdanau", "luong"):
        raise ValueError(f"expected kind 'bahdanau' or 'luong', got {kind!r}")
    ax = axes_or_new(ax, (5.2, 6.2))
    enc_x, dec_x, mid_x = 2.6, 0.0, 1.3
    wide = 1.9
    if kind == "bahdanau":
        y = {"query": 0.0, "score": 1.3, "context": 2.6, "lstm": 3.9, "state": 5.2, "out": 6.5}
        box(ax, dec_x, y["query"], "$s_{t-1}$", DECODER)
        box(ax, enc_x, y["query"], "$h_1 \\dots h_{T_s}$", ENCODER, width=1.4)
        ax.text(-1.45, y["lstm"], "$y_{t-1}$", ha="center", va="center", fontsize=11)
        arrow(ax, (-1.2, y["lstm"]), (dec_x - 0.45, y["lstm"]))
        box(ax, dec_x, y["lstm"], "LSTM", "#3b528b", width=0.9)
        arrow(ax, (dec_x - 0.3, y["query"] + 0.3), (dec_x - 0.3, y["lstm"] - 0.3))  # s_{t-1} into the LSTM
        # The series' LSTM also reads the memory cell that goes with s_{t-1} (not c: the context's symbol).
        ax.text(
            dec_x - 0.4, 2.1, "$s_{t-1}$ and\nits cell", ha="right", va="center", fontsize=8, color="grey"
        )
        arrow(ax, (mid_x - 0.3, y["context"] + 0.3), (dec_x + 0.3, y["lstm"] - 0.3), color=CONTEXT)
        box(ax, dec_x, y["state"], "$s_t$", DECODER)
        arrow(ax, (dec_x, y["lstm"] + 0.3), (dec_x, y["state"] - 0.3))
        arrow(ax, (dec_x + 0.45, y["state"]), (dec_x + 1.6, y["state"]), color="grey")
        ax.text(dec_x + 1.65, y["state"], "to step $t+1$", ha="left", va="center", fontsize=9, color="grey")
        # The deep output (A.2.2) reads s_{t-1}, y_{t-1} and c_t, not the new state s_t; the
        # linear layer W_o maps the maxout units to the vocabulary before the softmax.
        box(
            ax,
            dec_x,
            y["out"],
            "maxout$(s_{t-1}, y_{t-1}, c_t)$\n$\\to W_o \\to$ softmax",
            "#3b528b",
            width=2.4,
        )
        ax.plot(
            [dec_x - 0.45, -2.05, -2.05, dec_x - 1.2],
            [y["query"], y["query"], y["out"], y["out"]],
            color="grey",
            lw=0.9,
            ls="--",
        )  # s_{t-1} up to the output layer
        arrow(ax, (-2.05, y["out"]), (dec_x - 1.2, y["out"]), color="grey", ls="--")
        arrow(ax, (-1.45, y["lstm"] + 0.25), (dec_x - 0.8, y["out"] - 0.3), color="grey")  # y_{t-1}
        arrow(ax, (mid_x + 0.2, y["context"] + 0.3), (dec_x + 0.9, y["out"] - 0.3), color=CONTEXT)
        title = "Bahdanau: attend with $s_{t-1}$, then step"
        note = "$c_t$ enters the LSTM\nand the output layer"
        weights, context = "$\\alpha_t$", r"$c_t = \sum_j \alpha_{tj} h_j$"
    else:
        y = {"prev": -1.3, "lstm": 0.0, "query": 1.3, "score": 2.6, "context": 3.9, "state": 5.2, "out": 6.5}
        # The LSTM's recurrent input: its previous states, and (input feeding, §3.3) h̃_{t-1}
        # joined to the embedded token, as LuongDecoder(input_feeding=True) does.
        box(ax, dec_x, y["prev"], "$h_{t-1}$ and its cell", DECODER, width=1.9)
        arrow(ax, (dec_x, y["prev"] + 0.3), (dec_x, y["lstm"] - 0.3))
        ax.text(
            -1.55, y["lstm"], "[$y_{t-1}$;\n" + r"$\tilde h_{t-1}$]", ha="center", va="center", fontsize=10
        )
        arrow(ax, (-1.2, y["lstm"]), (dec_x - 0.45, y["lstm"]))
        box(ax, dec_x, y["lstm"], "LSTM", "#3b528b", width=0.9)
        box(ax, dec_x, y["query"], "$h_t$", DECODER)
        arrow(ax, (dec_x, y["lstm"] + 0.3), (dec_x, y["query"] - 0.3))
        box(ax, enc_x, y["query"], r"$\bar h_1 \dots \bar h_{T_s}$", ENCODER, width=1.4)
        box(ax, dec_x, y["state"], r"$\tilde h_t = \tanh(W_c[c_t; h_t])$", "#3b528b", width=2.3)
        arrow(ax, (dec_x - 0.3, y["query"] + 0.3), (dec_x - 0.3, y["state"] - 0.3))  # h_t
        arrow(ax, (mid_x - 0.2, y["context"] + 0.3), (dec_x + 0.4, y["state"] - 0.3), color=CONTEXT)
        box(ax, dec_x, y["out"], r"softmax$(W_s \tilde h_t)$", "#3b528b", width=wide)
        arrow(ax, (dec_x, y["state"] + 0.3), (dec_x, y["out"] - 0.3))
        arrow(ax, (dec_x - 1.2, y["state"]), (-1.55, y["lstm"] + 0.45), ls="--", color="grey")
        ax.text(
            -1.75,
            (y["state"] + y["lstm"]) / 2,
            "input\nfeeding\nto step\n$t+1$\n(optional)",
            ha="center",
            va="center",
            fontsize=8,
            color="grey",
        )
        title = "Luong: step, then attend with $h_t$"
        note = r"$c_t$ joins $h_t$ in $\tilde h_t$"
        weights, context = "$a_t$", r"$c_t = \sum_s a_t(s) \bar h_s$"
    box(ax, mid_x, y["score"], f"score, softmax: {weights}", WEIGHT, width=wide)
    arrow(ax, (dec_x + 0.3, y["query"] + 0.3), (mid_x - 0.3, y["score"] - 0.3), color=QUERY, lw=1.6)
    arrow(ax, (enc_x - 0.2, y["query"] + 0.3), (mid_x + 0.3, y["score"] - 0.3))
    box(ax, mid_x, y["context"], context, CONTEXT, width=wide)
    arrow(ax, (mid_x, y["score"] + 0.3), (mid_x, y["context"] - 0.3))
    arrow(ax, (enc_x + 0.1, y["query"] + 0.3), (mid_x + 0.8, y["context"] - 0.3))
    ax.text(dec_x, y["out"] + 0.6, "$y_t$", ha="center", va="center", fontsize=11)
    note_x = enc_x - 0.3 if kind == "bahdanau" else enc_x - 0.6  # right of the wider maxout box
    ax.text(note_x, y["out"], note, ha="left", va="center", fontsize=9)
    ax.set(xlim=(-2.3, 4.0), ylim=(-1.9, 7.4), title=title)
    ax.set_axis_off()
    return ax


def plot_alignment(model: nn.Module, text: str, src_vocab: Vocab, tgt_vocab: Vocab, *, name: str = ""):
    """Heatmap of where each output token of ``model`` looks in the source ``text``.

    The title shows the source and the model's output, after ``name`` if given."""
    output, weights, src_labels, out_labels = translate(model, text, src_vocab, tgt_vocab)
    if weights is None:
        raise ValueError("this model has no attention weights to plot")
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
    blocks: Mapping[str, tuple[range, range]] | None = None,
):
    """One heatmap per model for the same source ``text``, in a grid of ``cols`` columns.

    Each panel's rows are that model's own output tokens (models may write different
    outputs); its title gives the model's name and output.

    Args:
        models: name -> model, one panel each.
        text: the source string.
        src_vocab, tgt_vocab: the vocabularies of the source and the target.
        cols: panels per row; all in one row if None.
        panel_size: height of a panel in inches.
        blocks: name -> ``(output rows, source columns)``, both 0-based ranges: a dashed box
            outlined on every panel, so that the eye finds the same block in each; the first
            panel names it. Rows past a panel's output are clipped.

    Returns:
        The figure.
    """
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
        for label, (rows_in, cols_in) in (blocks or {}).items():
            ax.add_patch(block_outline(rows_in, cols_in, label))
            if i == 0:
                ax.text(
                    cols_in.start - 0.8,
                    (rows_in.start + rows_in.stop - 1) / 2,
                    label,
                    ha="right",
                    va="center",
                    fontsize=7,
                    color=BLOCK,
                    # half-transparent, so the heatmap cells under a name still show
                    bbox={"fc": "white", "alpha": 0.55, "ec": "none", "pad": 0.3},
                )
    for j in range(len(results), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    fig.suptitle(repr(text))
    return fig


def alignment_explorer(models: Mapping[str, nn.Module], data: PairDataset, *, examples: int = 50):
    """Pick a test example (or type a source) and a model; see the alignment heatmap.

    While the source box holds text, the example slider is disabled: the typed source is shown.

    Args:
        models: name -> trained model with attention.
        data: where the examples come from (its vocabularies are used).
        examples: how many of the first examples the slider offers.
    """
    translations: dict[tuple[str, str], tuple] = {}  # greedy decoding, once per model and source
    figure = None  # kept between redraws and updated in place while the map keeps its shape

    def draw(example: int, model: str, text: str) -> Any:
        nonlocal figure
        source = text.strip() or data.pairs[example][0]
        try:
            if (model, source) not in translations:
                translations[model, source] = translate(models[model], source, data.src_vocab, data.tgt_vocab)
            output, weights, src_labels, out_labels = translations[model, source]
            if weights is None:
                raise ValueError("this model has no attention weights to plot")
        except ValueError as error:  # e.g. a typed source shorter than a local window
            print(f"{source!r}: {error}")
            return None
        # as plot_alignment draws it
        figure = replot_attention(
            figure,
            weights,
            src_labels,
            out_labels,
            xlabel="source character",
            ylabel="output character",
            suptitle=f"{model}: {source!r} -> {output!r}",
            panel_size=max(3.2, 0.16 * max(weights.shape)),  # about 0.16 inch per token
        )
        return figure

    example = widgets.IntSlider(value=0, min=0, max=min(examples, len(data)) - 1, description=N_("example"))
    text = widgets.Text(
        value="", placeholder=N_("or type a source"), description=N_("source"), continuous_update=False
    )

    # A typed source replaces the example, so the slider is disabled (not silently ignored)
    # while the box holds text; clearing the box brings the slider and its example back.
    def typed(change: dict) -> None:
        example.disabled = bool(change["new"].strip())

    text.observe(typed, names="value")
    return explorer(
        draw,
        example=example,
        model=widgets.Dropdown(options=list(models), description=N_("model")),
        text=text,
    )
