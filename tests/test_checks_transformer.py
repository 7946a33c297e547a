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


def right_smoothed(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)  # (B, T)
    keep = target != pad_id
    return loss[keep].mean()


def right_smoothed_distribution(logits, target, eps, pad_id):
    v = logits.shape[-1]
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / v  # (B, T, V)
    log_probs = logits - logits.logsumexp(dim=-1, keepdim=True)
    per_token = -(smoothed * log_probs).sum(dim=-1)  # (B, T)
    keep = (target != pad_id).float()
    return (per_token * keep).sum() / keep.sum()


def right_smoothed_as_float(logits, target, eps, pad_id):
    return right_smoothed(logits, target, eps, pad_id).item()  # "one number": a Python float is fine


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.beam_step, right_beam),
        (check.beam_step, right_beam_sorted),
        (check.label_smoothed_loss, right_smoothed),
        (check.label_smoothed_loss, right_smoothed_distribution),
        (check.label_smoothed_loss, right_smoothed_as_float),
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


def test_pytorch_smooths_over_all_v_classes_and_averages_over_real_tokens():
    """What exercise 11.4 teaches is what F.cross_entropy computes: the target (1 - eps) * one-hot
    + eps / V (the target class included), the mean over the positions whose target is not pad_id."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 4, generator=gen)  # (B, T, V)
    target = torch.tensor([[1, 2, 3], [3, 0, 0]])  # pad_id 0
    eps, v = 0.2, 4
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / v
    per_token = -(smoothed * torch.log_softmax(logits, dim=-1)).sum(dim=-1)  # (B, T)
    expected = per_token[target != 0].mean()
    torch.testing.assert_close(tr_checks._reference_smoothed_loss(logits, target, eps, 0), expected)
    torch.testing.assert_close(tr_checks._smoothed_loss(logits, target, eps, 0), expected)


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


def smoothed_over_others(logits, target, eps, pad_id):
    v = logits.shape[-1]
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / (v - 1) * (
        1 - torch.nn.functional.one_hot(target, v)
    )
    per_token = -(smoothed * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
    return per_token[target != pad_id].mean()


def smoothed_unweighted_target(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)
    loss = -log_probs.gather(-1, target[..., None])[..., 0] - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_with_padding(logits, target, eps, pad_id):
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, v), target.reshape(-1), label_smoothing=eps)


def smoothed_over_all_positions(logits, target, eps, pad_id):
    per_token = right_smoothed_per_token(logits, target, eps)
    return (per_token * (target != pad_id)).sum() / target.numel()


def smoothed_per_sequence(logits, target, eps, pad_id):
    per_token = right_smoothed_per_token(logits, target, eps)
    keep = target != pad_id
    return ((per_token * keep).sum(dim=1) / keep.sum(dim=1)).mean()


def right_smoothed_per_token(logits, target, eps):
    log_probs = torch.log_softmax(logits, dim=-1)
    return (1 - eps) * -log_probs.gather(-1, target[..., None])[..., 0] - eps * log_probs.mean(dim=-1)


def smoothed_log_of_softmax(logits, target, eps, pad_id):
    log_probs = torch.log(torch.softmax(logits, dim=-1))  # log(0) = -inf where a probability underflows
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_naive_exp(logits, target, eps, pad_id):
    probs = logits.exp() / logits.exp().sum(dim=-1, keepdim=True)  # inf / inf for large logits
    log_probs = probs.log()
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_summed_over_classes(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.sum(dim=-1)  # eps on every class, not eps/V
    return loss[target != pad_id].mean()


def smoothed_not_at_all(logits, target, eps, pad_id):
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, v), target.reshape(-1), ignore_index=pad_id)


WRONG = [
    (check.beam_step, beam_forgot_score, "add each beam's running score first"),
    (check.beam_step, beam_per_beam, "not the best token of each beam"),
    (check.beam_step, beam_swapped, "you swapped them"),
    (check.beam_step, beam_by_k, "not by K"),
    (check.beam_step, beam_step_scores, "return the new running scores"),
    (check.beam_step, beam_multiplied, "log-probabilities add up"),
    (check.label_smoothed_loss, smoothed_over_others, "the V - 1 other classes"),
    (check.label_smoothed_loss, smoothed_unweighted_target, "weight the target's -log p by 1 - eps"),
    (check.label_smoothed_loss, smoothed_with_padding, "positions whose target is pad_id must not count"),
    (check.label_smoothed_loss, smoothed_over_all_positions, "not by B * T"),
    (check.label_smoothed_loss, smoothed_per_sequence, "not per sequence"),
    (check.label_smoothed_loss, smoothed_log_of_softmax, "log(0) = -inf"),
    (check.label_smoothed_loss, smoothed_naive_exp, "inf / inf is nan"),
    (check.label_smoothed_loss, smoothed_summed_over_classes, "do not sum it"),
    (check.label_smoothed_loss, smoothed_not_at_all, "plain cross-entropy"),
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
        assert verdict.message.count("Wrong: ") == 1 + (greedy != "a") + (beam != "b")


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.beam_step, check.label_smoothed_loss]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(
        check_fn, shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)"
    )


def test_label_smoothed_loss_reports_a_wrong_float_and_a_wrong_shape():
    wrong_float = check.label_smoothed_loss(lambda logits, target, eps, pad_id: 0.5)
    assert not wrong_float and "first difference" in wrong_float.message, wrong_float.message
    per_token = check.label_smoothed_loss(
        lambda logits, target, eps, pad_id: right_smoothed_per_token(logits, target, eps)
    )
    assert not per_token and "expected shape ()" in per_token.message, per_token.message
