"""Plots and explorers build, label what they show, and respond to their controls."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from attnlib import viz
from attnlib.viz import explorers, plot_attention, plot_bars


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_one_map_has_token_labels_and_a_colour_bar(tokens):
    w = torch.softmax(torch.randn(6, 6), -1)
    fig = plot_attention(w, tokens, xlabel="key", ylabel="query")
    heat, bar = fig.axes
    assert [t.get_text() for t in heat.get_xticklabels()] == tokens
    assert [t.get_text() for t in heat.get_yticklabels()] == tokens
    assert heat.get_xlabel() == "key" and heat.get_ylabel() == "query"
    assert bar.get_ylabel() == "attention weight"


def test_a_boolean_mask_gets_two_colours_and_a_two_entry_key(tokens):
    import attnlib

    mask = attnlib.causal_mask(6)  # (T, T) bool, True = may attend
    fig = plot_attention(torch.stack([mask, ~mask]), tokens, titles=["causal", "its complement"])
    *heat, bar = fig.axes
    assert [t.get_text() for t in bar.get_yticklabels()] == ["may attend", "masked"]
    assert bar.get_ylabel() == "mask"
    # Exactly two colours on every panel, and the same colour means the same thing on both.
    colours = [im.to_rgba(im.get_array()) for im in (ax.get_images()[0] for ax in heat)]
    assert all(len({tuple(c) for c in rgba.reshape(-1, 4).tolist()}) == 2 for rgba in colours)
    may_attend = [rgba[m.numpy()] for rgba, m in zip(colours, (mask, ~mask), strict=True)]
    masked = [rgba[(~m).numpy()] for rgba, m in zip(colours, (mask, ~mask), strict=True)]
    assert all((c == may_attend[0][0]).all() for c in may_attend)
    assert all((c == masked[0][0]).all() for c in masked)
    assert not (may_attend[0][0] == masked[0][0]).all()
    # A float map keeps its continuous colour bar.
    assert plot_attention(mask.float(), tokens).axes[-1].get_ylabel() == "attention weight"


def test_heads_and_grids_get_one_panel_each():
    assert len(plot_attention(torch.rand(3, 4, 5)).axes) == 3 + 1
    fig = plot_attention(torch.rand(2, 3, 4, 4), titles=[["a", "b", "c"], ["d", "e", "f"]])
    assert [ax.get_title() for ax in fig.axes[:6]] == list("abcdef")


def test_labels_must_match_the_weights(tokens):
    with pytest.raises(ValueError, match="expected 6 x_labels"):
        plot_attention(torch.rand(6, 6), tokens[:5])
    with pytest.raises(ValueError, match=r"\(Tq, Tk\)"):
        plot_attention(torch.rand(6))


def test_bars_label_tokens(tokens):
    ax = plot_bars(torch.rand(6), tokens, ylabel="weight")
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens and ax.get_ylabel() == "weight"


def test_explorers_draw_and_redraw_when_a_control_changes(inputs, tokens, monkeypatch):
    shown = []  # (figure number of axes, suptitle) for every plt.show() an explorer makes

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        shown.append((len(fig.axes), fig._suptitle.get_text() if fig._suptitle else ""))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    scores = inputs @ inputs.T
    weights = torch.softmax(scores, -1)
    cases = [
        (viz.query_explorer(inputs, tokens), 0, 3, "context vector"),
        (viz.temperature_explorer(inputs, inputs, tokens), 0, 2.0, "scale = 2.000"),
        (viz.mask_explorer(scores, tokens), 1, 2, "padding=2"),
        (viz.dropout_explorer(weights, tokens), 0, 0.2, "p=0.20"),
        (viz.head_explorer(torch.rand(1, 2, 6, 6), tokens), 0, 1, "head 1 of 2"),
    ]
    for box, index, value, expected_title in cases:
        before = len(shown)
        box.children[0].children[index].value = value
        assert len(shown) == before + 1, "changing a control must redraw once"
        n_axes, title = shown[-1]
        assert n_axes >= 2 and expected_title in title


@pytest.mark.parametrize("attention", [False, True])
def test_seq2seq_diagram_draws_one_box_per_state_and_names_the_context(attention):
    from matplotlib.patches import FancyBboxPatch

    from attnlib.viz import seq2seq_diagram

    ax = seq2seq_diagram(["a", "b", "c"], ["x", "y"], attention=attention)
    texts = [t.get_text() for t in ax.texts]
    assert [f"$h_{j}$" for j in (1, 2, 3)] == [t for t in texts if t.startswith("$h")]
    assert [f"$s_{t}$" for t in (1, 2, 3)] == [t for t in texts if t.startswith("$s")]  # <sos> x y
    assert "<sos>" in texts and "<eos>" in texts
    assert texts.count("x") == texts.count("y") == 2  # read by one step, written by another
    contexts = [t for t in texts if t.startswith("$c")]
    assert contexts == ([f"$c_{t}$" for t in (1, 2, 3)] if attention else ["$c$"])
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == 3 + 3 + len(contexts)
    assert "attention" in ax.get_title()
    plt.close(ax.figure)


def test_seq2seq_diagram_rejects_empty_sequences():
    from attnlib.viz import seq2seq_diagram

    with pytest.raises(ValueError, match="at least one source and one target token"):
        seq2seq_diagram([], ["x"])


@pytest.mark.parametrize("projections", [False, True])
def test_attention_diagram_has_a_score_weight_and_weighted_value_per_token(tokens, projections):
    from attnlib.viz import attention_diagram

    ax = attention_diagram(tokens, query=1, projections=projections)
    texts = [t.get_text() for t in ax.texts]
    n = len(tokens)
    # Tokens are numbered from 0, as the notebooks' prose and code count them.
    assert [f"$\\omega_{{{i}}}$" for i in range(n)] == [t for t in texts if t.startswith("$\\omega")]
    assert [f"$\\alpha_{{{i}}}$" for i in range(n)] == [
        t for t in texts if t.startswith("$\\alpha_{") and t[-1] == "$" and " " not in t
    ]
    assert ("$q = x_{1} W_q$" if projections else "$q = x_{1}$") in texts
    assert ("$k_{0}$" if projections else "$x_{0}$") in texts
    assert "$z$" in texts and all(token in texts for token in tokens)
    # Notebook 02's scores are divided by sqrt(d_k) before the softmax; notebook 01's are not.
    assert any("\\sqrt{d_k}" in t for t in texts) == projections
    plt.close(ax.figure)
    with pytest.raises(ValueError, match=r"expected query in \[0, 6\)"):
        attention_diagram(tokens, query=6)


def test_multihead_diagram_draws_one_box_per_head():
    from attnlib.viz import multihead_diagram

    ax = multihead_diagram(3)
    texts = [t.get_text() for t in ax.texts]
    assert [t for t in texts if t.startswith("head")] == ["head 0", "head 1", "head 2"]
    assert "H = 3" in ax.get_title()
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="expected num_heads an int from 1 to 6"):
        multihead_diagram(0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layer_diagram_wraps_every_sublayer_in_a_residual(norm_first):
    from attnlib.viz import transformer_layer_diagram

    ax = transformer_layer_diagram(norm_first=norm_first)
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("+") == 5  # 2 sublayers in the encoder layer, 3 in the decoder layer
    assert texts.count("LayerNorm") == 5  # one per sublayer, before (pre-LN) or after (post-LN)
    assert {"self-attention", "masked self-attention", "cross-attention"} <= set(texts)
    assert ("pre-LN" if norm_first else "post-LN") in ax.get_title()
    plt.close(ax.figure)


@pytest.mark.parametrize("n_layers", [None, 3])
def test_transformer_diagram_draws_both_stacks_in_the_order_they_run(n_layers):
    from matplotlib.patches import Rectangle

    from attnlib.viz import transformer_diagram

    ax = transformer_diagram(n_layers)
    texts = [t.get_text() for t in ax.texts]
    boxes = {t.get_text(): t.get_position()[1] for t in ax.texts}  # label -> height of its centre
    decoder = ["masked self-attention", "cross-attention", "feed-forward", "linear head: logits", "softmax"]
    assert [boxes[name] for name in decoder] == sorted(boxes[name] for name in decoder)  # bottom to top
    assert boxes["self-attention"] < boxes["feed-forward"] < boxes["memory: one vector per source token"]
    assert texts.count("+ positional encoding") == 2 and texts.count("embedding $\\times\\sqrt{D}$") == 2
    count = "N" if n_layers is None else str(n_layers)
    assert sum(t.startswith(f"$\\times$ {count}\n") for t in texts) == 2  # one frame per stack
    assert sum(isinstance(p, Rectangle) and p.get_linestyle() == "--" for p in ax.patches) == 2
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="expected n_layers a positive int"):
        transformer_diagram(0)


def test_decoding_loop_diagram_appends_one_token_per_step_until_eos():
    from attnlib.viz import decoding_loop_diagram

    ax = decoding_loop_diagram(list("2026"))
    texts = [t.get_text() for t in ax.texts]
    steps = [t.split() for t in texts if t.startswith("step ")]
    assert [s[:2] for s in steps] == [["step", "1"], ["step", "2"], ["step", "3"], ["step", "5"]]
    assert steps[0][2:] == ["<sos>", "→", "2"] and steps[1][2:] == ["<sos>", "2", "→", "0"]
    assert steps[-1][2:] == ["<sos>", "2", "0", "2", "6", "→", "<eos>"]  # the whole target read, then EOS
    assert "…" in texts and "encoder: runs once" in texts
    plt.close(ax.figure)
    short = [t.get_text() for t in decoding_loop_diagram(["a"]).texts if t.get_text().startswith("step ")]
    assert [t.split()[2:] for t in short] == [["<sos>", "→", "a"], ["<sos>", "a", "→", "<eos>"]]
    with pytest.raises(ValueError, match="at least one target token"):
        decoding_loop_diagram([])


def test_outline_cells_covers_exactly_its_cells():
    from attnlib.viz import outline_cells

    fig = plot_attention(torch.rand(6, 8))
    ax = fig.axes[0]
    ax.set_title("head 0")
    box = outline_cells(ax, range(2, 4), range(5, 8), "day")
    assert box.get_xy() == (4.5, 1.5) and (box.get_width(), box.get_height()) == (3, 2)
    assert box.get_label() == "day" and "day" in [t.get_text() for t in ax.texts]
    # the name: over the box's columns, above the panel (on no cell), and below the title
    name = next(t for t in ax.texts if t.get_text() == "day")
    fig.canvas.draw()
    panel, written = ax.get_window_extent(), name.get_window_extent()
    corners = ax.transData.transform([(4.5, 0), (7.5, 0)])[:, 0]  # the box's left and right edges
    assert corners[0] < (written.x0 + written.x1) / 2 < corners[1]
    assert written.y0 >= panel.y1 and ax.title.get_window_extent().y0 >= written.y1
    unnamed = outline_cells(ax, range(0, 1), range(0, 1))
    assert unnamed.get_xy() == (-0.5, -0.5) and [t.get_text() for t in ax.texts].count("day") == 1
    with pytest.raises(ValueError, match="non-empty ranges"):
        outline_cells(ax, range(3, 3), range(0, 2))


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_decoder_step_diagram_puts_the_query_where_each_paper_does(kind):
    from attnlib.viz import decoder_step_diagram

    ax = decoder_step_diagram(kind)
    texts = [t.get_text() for t in ax.texts]
    assert sum(t.startswith("score, softmax: ") for t in texts) == 1
    assert ("$s_{t-1}$" in texts) == (kind == "bahdanau")  # Bahdanau scores the previous state
    assert ("$h_t$" in texts) == (kind == "luong")  # Luong scores the new one
    assert any("tanh(W_c" in t for t in texts) == (kind == "luong")
    plt.close(ax.figure)


def test_decoder_step_diagram_draws_bahdanau_in_his_own_symbols():
    from attnlib.viz import decoder_step_diagram

    ax = decoder_step_diagram("bahdanau")
    texts = [t.get_text() for t in ax.texts]
    # Notebook 08's letters: decoder states s, annotations h_j, weights alpha (Bahdanau et al., §3.1).
    assert {"$s_{t-1}$", "$s_t$", "$h_1 \\dots h_{T_s}$"} <= set(texts)
    assert not any("bar h" in t or "h_{t-1}" in t or "softmax$(W h_t)$" in t for t in texts)
    assert any("alpha_{tj} h_j" in t for t in texts)
    # The deep output (appendix A.2.2) reads s_{t-1}, y_{t-1} and c_t through a maxout layer,
    # then the linear layer W_o, then the softmax, in that order.
    (output,) = [t for t in texts if "maxout" in t]
    assert all(symbol in output for symbol in ("s_{t-1}", "y_{t-1}", "c_t", "softmax"))
    assert output.index("maxout") < output.index("W_o") < output.index("softmax")
    # The series' LSTM also reads s_{t-1}'s memory cell, and the figure says so.
    assert any(t.startswith("$s_{t-1}$ and") and "its cell" in t for t in texts)
    plt.close(ax.figure)


def test_decoder_step_diagram_rejects_an_unknown_kind():
    from attnlib.viz import decoder_step_diagram

    with pytest.raises(ValueError, match="'bahdanau' or 'luong'"):
        decoder_step_diagram("transformer")


def test_lstm_diagram_draws_one_cell_per_step_and_shifts_the_targets():
    from attnlib.viz import lstm_diagram

    ax = lstm_diagram(["<sos>", "1", "4", "7"])
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("LSTM") == 3  # one cell per step: every token but the last is read
    assert [t for t in texts if t.startswith("$e_")] == ["$e_{1}$", "$e_{2}$", "$e_{3}$"]
    assert [t for t in texts if t.startswith("$p_{")] == ["$p_{1}$", "$p_{2}$", "$p_{3}$"]
    assert [t for t in texts if t.startswith("$c_")] == ["$c_{0}$", "$c_{1}$", "$c_{2}$"]
    assert texts.count("<sos>") == 1 and texts.count("7") == 1 and texts.count("1") == 2  # read and predicted
    assert "3 steps" in ax.get_title()
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="at least two tokens"):
        lstm_diagram(["<sos>"])


# Every control of every explorer either changes what is drawn or is disabled, in every state
# the explorer can reach by moving its controls (a silent conflict, such as a typed source
# overriding the example slider, fails here).


def _alternatives(control) -> list:
    """Values other than the current one that ``control`` offers: for a slider its nearest
    neighbour first (a step that changes nothing is the usual silent conflict), then its ends."""
    import math

    import ipywidgets as ipw

    if isinstance(control, ipw.Checkbox):
        values = [not control.value]
    elif isinstance(control, ipw.FloatLogSlider):
        exponent = math.log(control.value, control.base)
        near = [
            e for e in (exponent - control.step, exponent + control.step) if control.min <= e <= control.max
        ]
        values = [control.base**e for e in (*near[:1], control.min, control.max)]
    elif isinstance(control, (ipw.IntSlider, ipw.FloatSlider)):
        near = [
            v
            for v in (control.value - control.step, control.value + control.step)
            if control.min <= v <= control.max
        ]
        values = [*near[:1], control.min, control.max]
    elif isinstance(control, ipw.Text):
        values = ["", "12 May 2021"]
    else:  # Dropdown, ToggleButtons
        values = list(control._options_values)
    return [v for v in values if v != control.value]


def _fingerprint(fig) -> str:
    """What a figure shows, without rendering it: texts, images, bars, lines and points."""
    parts: list = [fig._suptitle.get_text() if fig._suptitle else ""]
    for ax in fig.axes:
        parts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_xlim(), ax.get_ylim()]
        parts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts]
        parts += [im.get_array().tobytes() for im in ax.images]
        parts += [(p.get_xy(), p.get_height(), tuple(p.get_facecolor())) for p in ax.patches]
        parts += [line.get_xydata().tobytes() for line in ax.lines]
        parts += [c.get_offsets().tobytes() for c in ax.collections]
    return repr(parts)


@pytest.fixture
def drawings(monkeypatch):
    """Fingerprints of the figures explorers show, newest last."""
    from tests.viz.test_explorers import record_shown

    return record_shown(monkeypatch, _fingerprint)


def assert_every_control_matters(box, drawings: list[str], printed=lambda: "") -> int:
    """Move each control to each of its values; in every state reached, every other enabled
    control must change the drawing. Returns the number of (state, control) pairs checked."""
    controls = list(box.children[0].children)
    checked = 0

    def current() -> tuple[str, str]:
        return drawings[-1], printed()

    for mover in controls:
        for value in _alternatives(mover)[-2:]:  # the ends, where conflicts live
            if mover.disabled:
                break
            mover.value = value
            for control in controls:
                if control.disabled:
                    continue
                before, old = current(), control.value
                for other in _alternatives(control)[:1]:
                    control.value = other
                    assert current() != before, f"{control.description}={other!r} changed nothing"
                    control.value = old
                    checked += 1
    return checked


def test_every_explorer_control_changes_the_drawing_or_is_disabled(inputs, tokens, drawings):
    scores = inputs @ inputs.T
    weights = torch.softmax(scores, -1)
    for box in [
        viz.query_explorer(inputs, tokens),
        viz.temperature_explorer(inputs, inputs, tokens),
        viz.mask_explorer(scores, tokens),
        viz.dropout_explorer(weights, tokens),
        viz.head_explorer(torch.rand(1, 2, 6, 6), tokens),
    ]:
        assert assert_every_control_matters(box, drawings) >= 1


def test_dropout_controls_that_change_nothing_are_disabled(inputs, tokens, drawings):
    p, seed, training = (
        viz.dropout_explorer(torch.softmax(inputs @ inputs.T, -1), tokens).children[0].children
    )
    assert not p.disabled and not seed.disabled
    training.value = False  # eval: dropout is the identity
    assert p.disabled and seed.disabled
    training.value = True
    p.value = 0.0  # nothing is dropped, whatever the seed
    assert not p.disabled and seed.disabled


def test_positional_encoding_explorer_draws_each_pair_as_the_table_stores_it(monkeypatch):
    from attnlib.blocks import sinusoidal_encoding
    from attnlib.viz import positional_encoding_explorer
    from tests.viz.test_explorers import record_shown

    # the circle's points, read when shown: (x, y) = (PE[p, 2i], PE[p, 2i + 1]) = (sin, cos)
    shown = record_shown(monkeypatch, lambda fig: fig.axes[1].collections[0].get_offsets().copy())
    pe = sinusoidal_encoding(20, 8)  # (T, D)
    pair, position = positional_encoding_explorer(max_len=20, dim=8).children[0].children
    # it opens at position 10 on the first pair that turns less than half a circle by then
    assert (pair.value, position.value) == (1, 10)  # wavelengths 2π ≈ 6.3, then 20π ≈ 62.8
    torch.testing.assert_close(torch.as_tensor(shown[-1], dtype=torch.float), pe[:11, 2:4])
    assert positional_encoding_explorer().children[0].children[0].value == 5  # D = 64: 26.5 positions
    for i, p in [(0, 10), (2, 19), (1, 0)]:  # the last one redraws in place
        pair.value, position.value = i, p
        torch.testing.assert_close(
            torch.as_tensor(shown[-1], dtype=torch.float), pe[: p + 1, 2 * i : 2 * i + 2]
        )


def test_transformer_explorers_controls_all_matter(drawings):
    from attnlib.viz import cross_attention_explorer, positional_encoding_explorer

    assert assert_every_control_matters(positional_encoding_explorer(max_len=20, dim=8), drawings) >= 2
    torch.manual_seed(0)
    w = torch.softmax(torch.randn(2, 2, 2, 4, 5), -1)  # (B, L, H, Tt, Ts)
    box = cross_attention_explorer(w, [list("abcde"), list("vwxyz")], [list("ABCD"), list("WXYZ")])
    assert assert_every_control_matters(box, drawings) >= 3


def _date_models():
    from attnlib import DecoderWithAttention, Encoder, Seq2Seq, date_datasets, make_attention

    _, test = date_datasets(10, n_test=5)
    torch.manual_seed(0)
    models = {}
    for name in ("general", "dot"):
        decoder = DecoderWithAttention(len(test.tgt_vocab), 8, 1, make_attention(name, 8))
        models[name] = Seq2Seq(Encoder(len(test.src_vocab), 8, 1), decoder, "cpu").eval()
    return models, test


def test_alignment_explorer_disables_the_slider_while_a_source_is_typed(drawings):
    from attnlib.viz import alignment_explorer

    models, test = _date_models()
    box = alignment_explorer(models, test, examples=3)
    example, _, text = box.children[0].children
    text.value = "12 May 2021"
    assert example.disabled, "a typed source replaces the example: the slider must say so"
    text.value = "  "  # blank: the example is shown again
    assert not example.disabled
    text.value = ""
    assert assert_every_control_matters(box, drawings) >= 3


def test_copy_explorer_controls_all_matter(drawings):
    from attnlib import Decoder, Encoder, Seq2Seq
    from attnlib.tasks import digit_vocab
    from attnlib.viz import copy_explorer

    vocab = digit_vocab()
    torch.manual_seed(0)
    model = Seq2Seq(Encoder(len(vocab), 8, 1), Decoder(len(vocab), 8, 1), "cpu").eval()
    assert assert_every_control_matters(copy_explorer(model, vocab, max_len=8), drawings) >= 2


def test_gate_explorer_controls_all_matter(drawings):
    from attnlib.viz import gate_explorer
    from tests.viz.test_explorers import _tiny_lstm_lm  # the same tiny LSTM language model

    box = gate_explorer(*_tiny_lstm_lm(), ["1357", "24680", "12"])
    assert assert_every_control_matters(box, drawings) >= 4


def test_plot_alignments_outlines_each_block_on_every_panel_and_names_it_once():
    from matplotlib.patches import Rectangle

    from attnlib import DecoderWithAttention, Encoder, LuongDecoder, Seq2Seq, date_datasets, make_attention
    from attnlib.viz import plot_alignments

    _, test = date_datasets(10, n_test=5)
    src_vocab, tgt_vocab = test.src_vocab, test.tgt_vocab
    torch.manual_seed(0)
    decoders = {
        "bahdanau": DecoderWithAttention(len(tgt_vocab), 8, 1, make_attention("dot", 8)),
        "luong": LuongDecoder(len(tgt_vocab), 8, 1, make_attention("general", 8)),
    }
    models = {name: Seq2Seq(Encoder(len(src_vocab), 8, 1), d, "cpu").eval() for name, d in decoders.items()}
    blocks = {"year": (range(0, 4), range(4, 8)), "day": (range(9, 10), range(0, 1))}
    fig = plot_alignments(models, "5.3.2024", src_vocab, tgt_vocab, blocks=blocks)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2
    for i, ax in enumerate(panels):
        boxes = {p.get_label(): p for p in ax.patches if isinstance(p, Rectangle)}
        assert set(boxes) == {"year", "day"}
        # A block covers exactly its cells: column c spans c - 0.5 to c + 0.5 in imshow's coordinates.
        assert boxes["year"].get_xy() == (3.5, -0.5)
        assert (boxes["year"].get_width(), boxes["year"].get_height()) == (4, 4)
        assert boxes["day"].get_xy() == (-0.5, 8.5)
        names = [t.get_text() for t in ax.texts]
        assert (sorted(names) == ["day", "year"]) == (i == 0)  # only the first panel names them
    plt.close(fig)
    plain = plot_alignments(models, "5.3.2024", src_vocab, tgt_vocab)
    assert not any(isinstance(p, Rectangle) for ax in plain.axes for p in ax.patches)
    plt.close(plain)
