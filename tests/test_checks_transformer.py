"""The checks of notebook 11 accept right answers and explain each typical wrong one."""

from __future__ import annotations

import itertools

import pytest
import torch
from student_answers import assert_todo_then_error

from attnlib import check
from attnlib.check import transformer as tr_checks
from attnlib.transformer import Transformer
from tests.checks_shared import assert_hint, shape_error

# ----------------------------------------------------------------------------- right answers


def right_beam(scores, log_probs):
    b, k, v = log_probs.shape
    candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K*V)
    top, index = candidates.topk(k, dim=-1)
    return top, index // v, index % v


def right_beam_sorted(scores, log_probs):
    b, k, v = log_probs.shape
    ordered, index = (scores[..., None] + log_probs).reshape(b, -1).sort(dim=-1, descending=True)
    index = index[:, :k]
    return ordered[:, :k], torch.div(index, v, rounding_mode="floor"), torch.remainder(index, v)


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.beam_step, right_beam),
        (check.beam_step, right_beam_sorted),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_beam_step_reference_keeps_the_k_best_sequences():
    """Iterated from one live beam with K large enough to keep every prefix, the step ends with
    exactly the K most likely sequences (found by enumerating all of them) and their totals."""
    gen = torch.Generator().manual_seed(0)
    k, v, steps = 9, 3, 3  # K = V ** (steps - 1): no prefix is ever dropped, so the search is exact
    table = torch.log_softmax(torch.randn(v, v, generator=gen) * 2, dim=-1)  # next token | last token
    scores = torch.tensor([[0.0] + [float("-inf")] * (k - 1)])  # (1, K)
    prefixes = [[0] for _ in range(k)]  # every sequence starts with token 0
    for _ in range(steps):
        log_probs = table[[p[-1] for p in prefixes]][None]  # (1, K, V)
        scores, beam, token = tr_checks._reference_beam_step(scores, log_probs)
        prefixes = [prefixes[b] + [t] for b, t in zip(beam[0].tolist(), token[0].tolist(), strict=True)]
    every = {
        seq: sum(table[a, b].item() for a, b in itertools.pairwise((0, *seq)))
        for seq in itertools.product(range(v), repeat=steps)
    }
    best = sorted(every.items(), key=lambda item: -item[1])[:k]
    assert [tuple(p[1:]) for p in prefixes] == [seq for seq, _ in best]
    torch.testing.assert_close(scores[0], torch.tensor([s for _, s in best]))


def test_the_toy_table_runs_through_attnlibs_decoders():
    assert tr_checks._decode_table(None) == "a"  # greedy
    assert tr_checks._decode_table(1) == "a"  # a beam of 1 is greedy
    assert tr_checks._decode_table(2) == "b"
    assert tr_checks._sequence_probability("a") == pytest.approx(0.5 * 0.4)
    assert tr_checks._sequence_probability("b") == pytest.approx(0.4 * 0.9)
    assert tr_checks._table().sum(dim=-1).allclose(torch.ones(len(tr_checks.TABLE_TOKENS)))


# ----------------------------------------------------------------------------- typical mistakes


def beam_forgot_score(scores, log_probs):
    b, k, v = log_probs.shape
    top, index = log_probs.reshape(b, -1).topk(k, dim=-1)
    return top, index // v, index % v


def beam_per_beam(scores, log_probs):
    best, token = log_probs.max(dim=-1)
    return scores + best, torch.arange(scores.shape[1]).repeat(scores.shape[0], 1), token


def beam_swapped(scores, log_probs):
    top, beam, token = right_beam(scores, log_probs)
    return top, token, beam


def beam_by_k(scores, log_probs):
    b, k, _ = log_probs.shape
    top, index = (scores[..., None] + log_probs).reshape(b, -1).topk(k, dim=-1)
    return top, index // k, index % k


def beam_step_scores(scores, log_probs):
    _, beam, token = right_beam(scores, log_probs)
    return log_probs[torch.arange(scores.shape[0])[:, None], beam, token], beam, token


def beam_multiplied(scores, log_probs):
    b, k, v = log_probs.shape
    top, index = (scores[..., None] * log_probs).reshape(b, -1).topk(k, dim=-1)
    return top, index // v, index % v


WRONG = [
    (check.beam_step, beam_forgot_score, "add each beam's running score first"),
    (check.beam_step, beam_per_beam, "not the best token of each beam"),
    (check.beam_step, beam_swapped, "you swapped them"),
    (check.beam_step, beam_by_k, "not by K"),
    (check.beam_step, beam_step_scores, "return the new running scores"),
    (check.beam_step, beam_multiplied, "log-probabilities add up"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- predictions


def test_attention_map_count_prediction():
    layers, heads = 2, 8
    expected = 3 * layers * heads  # encoder self, decoder self, cross: one map per layer and head
    torch.manual_seed(0)
    model = Transformer(10, 10, dim=64, n_heads=heads, n_layers=layers, hidden_dim=128, dropout=0.0)
    model(torch.tensor([[5, 6, 7], [5, 0, 0]]), torch.tensor([[1, 4, 4, 2], [1, 4, 2, 0]]))
    assert sum(w.shape[1] * w.shape[2] for w in model.attention_weights().values()) == expected
    assert check.attention_map_count(expected).status == "pass"
    assert check.attention_map_count(float(expected)).status == "pass"
    assert check.attention_map_count(...).status == "todo"
    assert "expected a number" in check.attention_map_count("48 maps").message
    for wrong, hint in [
        (layers * heads, "of three kinds"),
        (2 * layers * heads, "*two* attentions"),
        (3 * layers, "has its own map"),
        (3 * heads, "count the 2 layers too"),
        (4 * layers * heads, "not four"),
        (6 * layers * heads, "not 2 of each per side"),
        (7, "count layers x heads for each kind"),
    ]:
        verdict = check.attention_map_count(wrong)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, (
            wrong,
            verdict.message,
        )


def test_greedy_vs_beam_prediction():
    assert check.greedy_vs_beam("a", "b").status == "pass"
    assert check.greedy_vs_beam("a <eos>", ["b"]).status == "pass"
    assert check.greedy_vs_beam(..., "b").status == "todo"
    for greedy, beam, hint in [
        ("b", "b", "after <sos> that is 'a' (0.5)"),
        ("ab", "b", "after 'a' the most likely next token is <eos>"),
        ("a", "a", "b <eos> = 0.4 x 0.9 = 0.36"),
        ("a", "ab", "b <eos> = 0.4 x 0.9 = 0.36"),
    ]:
        verdict = check.greedy_vs_beam(greedy, beam)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message
        assert verdict.message.count("❌") == 1 + (greedy != "a") + (beam != "b")


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.beam_step]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(
        check_fn, shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)"
    )
