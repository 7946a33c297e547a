"""The LSTM trace equals nn.LSTM, and the gate explorer redraws on every control."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

from attnlib.sequences import TRACE_NAMES, lstm_trace
from attnlib.tasks import digit_vocab
from attnlib.viz import explorers, gate_explorer


class TinyLM(nn.Module):
    def __init__(self, vocab_size: int, embed: int = 3, hidden: int = 4) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed)
        self.rnn = nn.LSTM(embed, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, vocab_size)


def test_lstm_trace_matches_nn_lstm():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 5, batch_first=True)
    x = torch.randn(2, 6, 3)
    trace = lstm_trace(lstm, x)
    outputs, (_, c_n) = lstm(x)
    assert set(trace) == set(TRACE_NAMES) and all(v.shape == (2, 6, 5) for v in trace.values())
    torch.testing.assert_close(trace["hidden state h"], outputs.detach())
    torch.testing.assert_close(trace["cell state c"][:, -1], c_n[0].detach())
    for gate in ("input gate i", "forget gate f", "output gate o"):
        assert bool(((trace[gate] > 0) & (trace[gate] < 1)).all())


def test_lstm_trace_rejects_what_it_cannot_trace():
    with pytest.raises(ValueError, match="one-layer, one-direction"):
        lstm_trace(nn.LSTM(3, 4, num_layers=2, batch_first=True), torch.randn(1, 2, 3))
    with pytest.raises(ValueError, match=r"expected x of shape \(B, T, D\) with D=3"):
        lstm_trace(nn.LSTM(3, 4, batch_first=True), torch.randn(1, 2, 5))


def test_gate_explorer_redraws_when_any_control_changes(monkeypatch):
    shown = []

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        shown.append((fig._suptitle.get_text(), [ax.get_title() for ax in fig.axes]))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    vocab = digit_vocab()
    torch.manual_seed(0)
    box = gate_explorer(TinyLM(len(vocab)), vocab, ["1357", "24680"])
    example, step, quantity, temperature = box.children[0].children
    assert len(shown) == 1
    for control, value, expected in [
        (example, 1, "24680"),
        (step, 3, "step 4"),
        (quantity, "forget gate f", "forget gate f"),
        (temperature, 2.5, "temperature 2.50"),
    ]:
        before = len(shown)
        control.value = value
        assert len(shown) == before + 1, "changing a control must redraw once"
        suptitle, titles = shown[-1]
        assert expected in suptitle + " ".join(titles)
    assert shown[-1] != shown[-2]


def test_gate_explorer_needs_the_notebook_model():
    with pytest.raises(TypeError, match=r"\.embedding an nn\.Embedding"):
        gate_explorer(nn.Module(), digit_vocab(), ["12"])


def test_the_step_slider_ends_at_the_chosen_sequence(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda: plt.close("all"))
    monkeypatch.setattr(explorers, "_show", lambda fig: None)
    vocab = digit_vocab()
    torch.manual_seed(0)
    box = gate_explorer(TinyLM(len(vocab)), vocab, ["1357", "24680", "12"])
    example, step, _, _ = box.children[0].children
    assert step.max == 4  # <sos> 1 3 5 7: five steps, 0..4
    step.value = 4
    example.value = 1
    assert step.max == 5 and step.value == 4
    example.value = 2
    assert step.max == 2 and step.value == 2  # clamped: no step past the sequence's end


def test_the_true_next_token_is_teal_as_right_digits_are_in_07(monkeypatch):
    # 06's explorer and 07's copy explorer give one colour one meaning: teal marks what is right.
    from matplotlib.colors import to_hex

    bars = []

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        right = (fig or plt.gcf()).axes[1]
        bars.append([to_hex(patch.get_facecolor()) for patch in right.patches])
        plt.close("all")

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    vocab = digit_vocab()
    torch.manual_seed(0)
    gate_explorer(TinyLM(len(vocab)), vocab, ["1357"])  # first drawn at step 2: after <sos> 1 3, then 5
    teal = [vocab.tokens(range(len(vocab)))[i] for i, colour in enumerate(bars[-1]) if colour == "#21918c"]
    assert teal == ["5"]


def test_plot_lr_schedule_draws_what_train_used():
    """The line is the schedule ``train`` recorded step by step, and the marked peak sits at the
    end of the warm-up."""
    from attnlib.data import PairDataset
    from attnlib.training import train
    from attnlib.viz import plot_lr_schedule

    vocab = digit_vocab()
    pairs = [(s, s) for s in ("12", "345", "6789", "01", "2468", "135", "97", "864")] * 5
    data = PairDataset(pairs, vocab, vocab)

    class Copy(TinyLM):
        def forward(self, src, tgt):
            outputs, _ = self.rnn(self.embedding(tgt[:, :-1]))  # (B, Tt-1, d_hid)
            return self.fc(outputs)  # (B, Tt-1, V)

    torch.manual_seed(0)
    history = train(
        Copy(len(vocab)), data, epochs=2, batch_size=4, lr=0.01, warmup=0.2, seed=0, progress=False, log=False
    )
    warm = round(0.2 * history.steps)
    ax = plot_lr_schedule({"train": history.lr})
    line, peak = ax.lines
    assert list(line.get_xdata()) == list(range(1, history.steps + 1))
    assert [float(v) for v in line.get_ydata()] == pytest.approx(history.lr)
    assert (peak.get_xdata()[0], float(peak.get_ydata()[0])) == (warm, pytest.approx(0.01))
    assert ax.get_xlabel() == "optimiser step" and ax.get_ylabel() == "learning rate"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["train"]
    plt.close("all")


def test_plot_lr_schedule_draws_one_line_and_one_peak_per_schedule():
    from attnlib.viz import plot_lr_schedule

    fig, ax = plt.subplots()
    plot_lr_schedule({"rises then falls": [1.0, 3.0, 2.0], "falls": [5.0, 4.0]}, ax=ax)
    assert len(ax.lines) == 4  # a line and a peak marker each
    peaks = [(float(m.get_xdata()[0]), float(m.get_ydata()[0])) for m in ax.lines[1::2]]
    assert peaks == [(2.0, 3.0), (1.0, 5.0)]
    assert ax.get_ylim()[0] == 0
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one schedule"):
        plot_lr_schedule({})
    with pytest.raises(ValueError, match="'empty'"):
        plot_lr_schedule({"empty": []})
