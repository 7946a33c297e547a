"""Training loop and evaluation of attnlib.training, on any model of the seq2seq protocol."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlib import training
from attnlib.attention_decoders import DecoderWithAttention
from attnlib.data import EOS_ID, PAD_ID, SOS_ID, PairDataset
from attnlib.evaluation import accuracy_by_length, count_parameters, evaluate, predict_scores, score_batch
from attnlib.local_attention import make_attention
from attnlib.seq2seq import Encoder, Seq2Seq
from attnlib.tasks import digit_datasets, digit_vocab
from attnlib.training import sequence_loss, train


def small_model(vocab_size: int, hidden: int = 32, seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    decoder = DecoderWithAttention(vocab_size, hidden, 1, make_attention("general", hidden))
    return Seq2Seq(Encoder(vocab_size, hidden, 1), decoder, "cpu", teacher_forcing_ratio=1.0)


class Oracle(nn.Module):
    """Follows the protocol and always answers with the target it was built with."""

    def __init__(self, data: PairDataset, wrong_from: int | None = None) -> None:
        super().__init__()
        self.answers = {tuple(s[s != PAD_ID].tolist()): t for s, t in zip(data.src, data.tgt, strict=True)}
        self.wrong_from = wrong_from

    def greedy_decode(self, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, None]:
        rows = [self.answers[tuple(s[s != PAD_ID].tolist())][1 : max_len + 1] for s in src]
        tokens = torch.stack(rows)
        if self.wrong_from is not None:
            tokens[:, self.wrong_from] = SOS_ID  # never a correct target token
        return tokens, None


def test_sequence_loss_is_cross_entropy_over_real_tokens():
    torch.manual_seed(0)
    tgt = torch.tensor([[SOS_ID, 4, 5, EOS_ID], [SOS_ID, 6, EOS_ID, PAD_ID]])
    logits = torch.randn(2, 3, 7)
    real = tgt[:, 1:] != PAD_ID
    expected = F.cross_entropy(logits[real], tgt[:, 1:][real])
    torch.testing.assert_close(sequence_loss(logits, tgt, PAD_ID), expected)
    with pytest.raises(ValueError, match=r"expected logits \(B, Tt-1, V\)"):
        sequence_loss(torch.randn(2, 4, 7), tgt, PAD_ID)


def test_score_batch_counts_tokens_and_exact_matches():
    tgt = torch.tensor([[SOS_ID, 4, 5, EOS_ID], [SOS_ID, 6, EOS_ID, PAD_ID], [SOS_ID, 7, 8, EOS_ID]])
    tokens = torch.tensor(
        [[4, 5, EOS_ID, PAD_ID, PAD_ID], [6, 9, EOS_ID, PAD_ID, PAD_ID], [7, EOS_ID, PAD_ID, PAD_ID, PAD_ID]]
    )
    exact, correct, total = score_batch(tokens, tgt, PAD_ID)
    assert exact.tolist() == [True, False, False]
    assert correct.tolist() == [3, 1, 1]
    assert total.tolist() == [3, 2, 3]
    short = score_batch(tokens[:, :1], tgt, PAD_ID)  # a cut-off prediction is not exact
    assert short[0].tolist() == [False, False, False]


def test_evaluation_works_for_any_protocol_model():
    _, test = digit_datasets(5, 60, seed=0, min_len=3, max_len=12)
    assert evaluate(Oracle(test), test) == {"exact_match": 1.0, "token_accuracy": 1.0}
    wrong = evaluate(Oracle(test, wrong_from=0), test)
    assert wrong["exact_match"] == 0.0
    expected = 1 - len(test) / int((test.tgt[:, 1:] != PAD_ID).sum())
    assert wrong["token_accuracy"] == pytest.approx(expected)


def test_accuracy_by_length_groups_every_example():
    _, test = digit_datasets(5, 200, seed=0, min_len=5, max_len=50)
    report = accuracy_by_length(Oracle(test, wrong_from=20), test, bin_width=5)
    assert sum(report["n"]) == len(test)
    assert report["label"][0].startswith("5-") and report["label"][-1].endswith("-50")
    assert report["length"] == sorted(report["length"])
    exact = dict(zip(report["length"], report["exact_match"], strict=True))
    assert exact[5] == 1.0 and exact[max(exact)] == 0.0  # only long targets reach token 20


def test_given_scores_give_the_same_report_without_decoding_again():
    _, test = digit_datasets(5, 200, seed=0, min_len=5, max_len=50)
    model = Oracle(test, wrong_from=20)
    scores = predict_scores(model, test)
    assert evaluate(model, test, scores=scores) == evaluate(model, test)
    assert accuracy_by_length(model, test, scores=scores) == accuracy_by_length(model, test)
    assert evaluate(None, test, scores=scores) == evaluate(model, test)  # the model is not used
    with pytest.raises(ValueError, match=r"expected scores of shape \(N,\) = \(200,\).*\(10,\)"):
        evaluate(model, test, scores=tuple(t[:10] for t in scores))
    with pytest.raises(TypeError, match="from predict_scores"):
        accuracy_by_length(model, test, scores=scores[0])


def test_overfits_32_examples():
    vocab = digit_vocab()
    pairs = [(s, s) for s, _ in digit_datasets(32, 1, seed=1, min_len=3, max_len=6)[0].pairs]
    data = PairDataset(pairs, vocab, vocab)
    model = small_model(len(vocab))
    history = train(model, data, epochs=100, batch_size=32, lr=1e-2, progress=False, log=False)
    assert history.steps == 100 and not history.stopped_early
    assert history.loss[-1] < history.loss[0] / 10
    assert evaluate(model, data)["exact_match"] >= 0.9


def test_training_without_a_progress_bar_imports_no_tqdm(monkeypatch, capsys):
    for name in ("tqdm", "tqdm.std", "tqdm.notebook"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it now raises ImportError
    train_data, _ = digit_datasets(32, 1, seed=0, min_len=3, max_len=6)
    history = train(small_model(len(train_data.src_vocab), hidden=16), train_data, epochs=2, progress=False)
    assert history.steps == 2
    assert capsys.readouterr().out.splitlines() == [
        f"epoch  {e}/2  loss {history.loss[e - 1]:.4f}" for e in (1, 2)
    ]


def test_training_is_deterministic_for_a_seed():
    train_data, valid = digit_datasets(64, 16, seed=0, min_len=3, max_len=6)

    def run():
        model = small_model(len(train_data.src_vocab), hidden=16)
        history = train(model, train_data, epochs=2, batch_size=16, valid=valid, progress=False, log=False)
        return history, model

    (h1, m1), (h2, m2) = run(), run()
    assert h1.loss == h2.loss and h1.valid == h2.valid and len(h1.valid) == 2
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(p1, p2)


def test_time_budget_stops_early():
    train_data, _ = digit_datasets(64, 1, seed=0, min_len=3, max_len=6)
    model = small_model(len(train_data.src_vocab), hidden=16)
    history = train(model, train_data, epochs=5, batch_size=16, max_seconds=0.0, progress=False, log=False)
    assert history.stopped_early and history.steps == 1 and len(history.loss) == 1


def test_learning_rate_warms_up_then_follows_a_cosine():
    train_data, _ = digit_datasets(160, 1, seed=0, min_len=3, max_len=6)
    model = small_model(len(train_data.src_vocab), hidden=16)
    history = train(
        model, train_data, epochs=1, batch_size=16, lr=0.01, warmup=0.2, progress=False, log=False
    )
    assert history.steps == len(history.lr) == 10
    torch.testing.assert_close(history.lr[:2], [0.005, 0.01])  # 2 warm-up steps: lr/2, lr
    cosine = [0.005 * (1 + math.cos(math.pi * s / 8)) for s in range(8)]  # over the other 8 steps
    torch.testing.assert_close(history.lr[2:], cosine)
    flat = train(
        small_model(len(train_data.src_vocab), hidden=16),
        train_data,
        epochs=1,
        batch_size=16,
        lr=0.01,
        cosine=False,
        progress=False,
        log=False,
    )
    assert flat.lr == [0.01] * 10
    with pytest.raises(ValueError, match=r"expected warmup, a fraction of the steps, in \[0, 1\), got 1.0"):
        train(model, train_data, epochs=1, warmup=1.0, progress=False, log=False)


@pytest.mark.parametrize("clip", [0.0, 0.05])
def test_gradients_are_clipped_every_step(monkeypatch, clip):
    calls = []
    real = nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, **kwargs):
        parameters = list(parameters)
        norm = real(parameters, max_norm, **kwargs)
        clipped = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters]))
        calls.append((max_norm, float(norm), float(clipped)))
        return norm

    monkeypatch.setattr(nn.utils, "clip_grad_norm_", spy)
    train_data, _ = digit_datasets(48, 1, seed=0, min_len=3, max_len=6)
    model = small_model(len(train_data.src_vocab), hidden=16)
    train(model, train_data, epochs=1, batch_size=16, clip=clip, progress=False, log=False)
    if clip == 0.0:
        assert calls == []
    else:
        assert len(calls) == 3
        assert all(max_norm == clip and after <= clip + 1e-5 for max_norm, _, after in calls)
        assert any(before > clip for _, before, _ in calls)  # clipping did something
    assert count_parameters(model) == sum(p.numel() for p in model.parameters())


class FakeKernelShell:
    kernel = object()


@pytest.fixture
def in_kernel(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=FakeKernelShell))


def test_progress_is_text_on_stderr_outside_a_kernel(monkeypatch, capsys):
    import types

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert training.progress_kind({"JPY_SESSION_NAME": "nb.ipynb"}) == "terminal"
    monkeypatch.delitem(sys.modules, "IPython")
    assert training.progress_kind({}) == "terminal"
    bar = training.progress_bar(3, kind="terminal")
    bar.update(3)
    bar.close()
    out, err = capsys.readouterr()
    assert "0/3" in err and out == ""  # the bar drawn at the start (then every 5 s)


def test_progress_is_a_widget_in_a_kernel_a_jupyter_server_started(in_kernel, monkeypatch):
    from tqdm.notebook import tqdm as widget_bar

    assert training.progress_kind({"JPY_SESSION_NAME": "notebooks/07.ipynb"}) == "widget"
    assert isinstance(training.progress_bar(3, disable=True, kind="widget"), widget_bar)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no ipywidgets
    assert training.progress_kind({"JPY_SESSION_NAME": "notebooks/07.ipynb"}) == "kernel"


def test_progress_is_text_on_stdout_under_nbval_and_nbconvert(in_kernel, capsys):
    """Kernels started by nbval and nbconvert (jupyter_client) get no JPY_SESSION_NAME."""
    assert training.progress_kind({}) == "kernel"
    bar = training.progress_bar(3, kind="kernel")
    bar.update(3)
    bar.write("epoch  1/1  loss 0.1000", file=sys.stdout)
    bar.close()
    out, err = capsys.readouterr()
    assert "0/3" in out and "epoch  1/1" in out and err == ""
