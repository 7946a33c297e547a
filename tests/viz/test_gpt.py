"""The sampling explorer redraws on every control, and the diagram draws."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from attnlib import GPT, Vocab
from attnlib.gpt import encode_prompt
from attnlib.viz import explorers, gpt_diagram, sampling_explorer


def test_sampling_explorer_redraws_and_changes_with_every_control(monkeypatch):
    shown = []

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        ax = (fig or plt.gcf()).axes[0]
        heights = [round(p.get_height(), 6) for p in ax.patches]
        shown.append((ax.get_title(), heights))
        plt.close("all")

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    vocab = Vocab("0123456789+=")
    torch.manual_seed(0)
    model = GPT(len(vocab), 16, dim=16, n_heads=2, n_layers=1)
    with torch.no_grad():
        model.head.weight.normal_(0.0, 2.0)  # a peaked distribution, so the controls show
    box = sampling_explorer(model, vocab, "12+3", max_new_tokens=5)
    prompt, temperature, top_k, top_p = box.children[0].children
    assert len(shown) == 1 and len(shown[0][1]) == len(vocab)
    for control, value, expected in [
        (prompt, "45+6", "'45+6'"),
        (temperature, 0.3, "T=0.30"),
        (top_k, 2, "top-k=2"),
        (temperature, 0.0, "T=0.00"),
        (prompt, "9" * 30, "characters cut"),
        (temperature, 1.0, "T=1.00"),
        (top_p, 0.3, "top-p=0.30"),
    ]:
        before = len(shown)
        control.value = value
        assert len(shown) == before + 1, "changing a control must redraw once"
        assert expected in shown[-1][0]
        assert shown[-1] != shown[-2]
    top2 = shown[3][1]
    assert sum(h > 0 for h in top2) == 2 and abs(sum(top2) - 1) < 1e-5  # top-k=2: two bars, summing to 1
    assert sorted(shown[4][1])[-1] == 1.0  # temperature 0: all on one token
    nucleus = shown[7][1]
    assert sum(h > 0 for h in nucleus) == 1 and abs(sum(nucleus) - 1) < 1e-5  # top-p=0.3: the top token


def test_encode_prompt_starts_with_sos():
    vocab = Vocab("0123456789+=")
    assert encode_prompt(vocab, "").tolist() == [[vocab.sos_id]]
    assert encode_prompt(vocab, "1+").tolist() == [[vocab.sos_id, *vocab.encode("1+")]]


def test_gpt_diagram_draws_both_panels():
    fig = gpt_diagram(cached=3)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["decoder-only Transformer (GPT)", "one generation step with the KV cache (each layer)"]
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert "in the cache: positions 0..2" in texts and "$q_3$" in texts
    plt.close(fig)


def test_sampling_explorer_draws_in_eval_mode_and_gives_the_model_its_mode_back(monkeypatch):
    modes = []
    monkeypatch.setattr(plt, "show", lambda: plt.close("all"))
    monkeypatch.setattr(explorers, "_show", lambda fig: None)
    vocab = Vocab("0123456789+=")
    torch.manual_seed(0)
    model = GPT(len(vocab), 16, dim=16, n_heads=2, n_layers=1).train()
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    box = sampling_explorer(model, vocab, "12+3", max_new_tokens=2)
    box.children[0].children[1].value = 0.5  # temperature: one more redraw
    assert modes and not any(modes), "every forward pass of a redraw runs in eval mode (no dropout)"
    assert all(m.training for m in model.modules()), "the student's model keeps its own mode"
