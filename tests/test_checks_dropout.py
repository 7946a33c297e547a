"""The checks of notebook 04's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch

import attnlib
from attnlib import check


def right_dropout(weights, keep, p):
    return weights.masked_fill(~keep, 0.0) / (1 - p)


def right_classic(weights, keep, p, training):
    if training:
        return weights.masked_fill(~keep, 0.0)  # the survivors keep their value
    return weights * (1 - p)  # the training average of every weight


def right_attention(queries, keys, values, keep, p):
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5  # (..., T, T)
    weights = attnlib.masked_softmax(scores, attnlib.causal_mask(scores.shape[-1]))
    return weights * keep / (1 - p) @ values  # (..., T, T) @ (..., T, Dv) -> (..., T, Dv)


def renormalised_attention(queries, keys, values, keep, p):
    """Drops the right weights, then (wrongly) makes each row sum to 1 again."""
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    weights = attnlib.masked_softmax(scores, attnlib.causal_mask(scores.shape[-1])) * keep
    return weights / weights.sum(-1, keepdim=True) @ values


def buggy_attention(queries, keys, values, keep, p):
    """The function notebook 04 hands out: dropout on the scores, before softmax."""
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    scores = scores * keep / (1 - p)
    mask = attnlib.causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ values


def test_classic_dropout_accepts_a_right_answer():
    verdict = check.classic_dropout(right_classic)
    assert verdict and verdict.status == "pass", verdict.message


def test_classic_eval_mode_is_the_average_of_train_mode():
    # The idea the exercise rests on: averaged over many draws, train mode gives what eval mode gives.
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(6, 6), dim=-1)
    p = 0.3
    keep = torch.rand(20_000, 6, 6) >= p  # 20,000 independent keep-masks
    mean_train = right_classic(weights, keep, p, training=True).mean(dim=0)
    torch.testing.assert_close(
        mean_train, right_classic(weights, keep[0], p, training=False), atol=0.01, rtol=0
    )


def test_reference_dropout_is_what_torch_dropout_computes():
    # With torch's own keep-mask, the exercise's formula reproduces nn.Dropout exactly.
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(4, 6, 6), dim=-1)
    dropout = torch.nn.Dropout(0.3)
    torch.manual_seed(1)
    keep = dropout(torch.ones_like(weights)) != 0
    torch.manual_seed(1)
    torch.testing.assert_close(right_dropout(weights, keep, 0.3), dropout(weights))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda w, keep, p, training: w * keep if training else w, "eval mode must return that average"),
        (lambda w, keep, p, training: w * keep if training else w / (1 - p), "must shrink the weights"),
        (lambda w, keep, p, training: w * keep if training else w * p, "probability of being KEPT"),
        (
            lambda w, keep, p, training: w * keep * (1 - p) if training else w * (1 - p),
            "belongs to eval mode",
        ),
        (lambda w, keep, p, training: w * keep * (1 - p), "belongs to eval mode"),
        (lambda w, keep, p, training: w * keep, "ignore `keep`"),
        (lambda w, keep, p, training: w * keep / (1 - p) if training else w, "that is inverted dropout"),
        (lambda w, keep, p, training: w * keep / (1 - p) if training else w * (1 - p), "no 1/(1-p) there"),
        (
            lambda w, keep, p, training: w * ~keep if training else w * (1 - p),
            "marks the weights that survive",
        ),
    ],
)
def test_classic_dropout_explains_typical_mistakes(wrong, hint):
    verdict = check.classic_dropout(wrong)
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_classic_dropout_reports_wrong_shape_without_hint():
    verdict = check.classic_dropout(lambda w, keep, p, training: (w * keep).sum(-1))
    assert not verdict and "expected shape" in verdict.message and "hint" not in verdict.message


def right_row_sum_stats(weights, p):
    mean = weights.sum(dim=-1)  # (..., Tq): each kept weight w/(1-p) times its chance 1-p
    variance = p / (1 - p) * (weights**2).sum(dim=-1)  # independent draws: the variances add up
    return mean, variance


def test_row_sum_stats_accepts_a_right_answer():
    verdict = check.dropout_row_sum_stats(right_row_sum_stats)
    assert verdict and verdict.status == "pass", verdict.message


def test_row_sum_stats_are_what_torch_dropout_draws():
    # The formula the exercise asks for, against 20,000 draws of nn.Dropout on attnlib's weights,
    # with a fully masked row (all zeros) among them.
    torch.manual_seed(0)
    visible = attnlib.causal_mask(5) & (torch.arange(5) >= 1)  # key 0 is padding: row 0 sees nothing
    weights = attnlib.masked_softmax(torch.randn(5, 5), visible)
    p = 0.3
    sums = torch.nn.functional.dropout(weights.expand(20_000, 5, 5), p).sum(dim=-1)  # (N, Tq)
    mean, variance = right_row_sum_stats(weights, p)
    torch.testing.assert_close(sums.mean(0), mean, atol=0.02, rtol=0)
    torch.testing.assert_close(sums.var(0), variance, atol=0.01, rtol=0.05)
    assert mean[0] == 0 and variance[0] == 0


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda w, p: (torch.ones(w.shape[:-1]), right_row_sum_stats(w, p)[1]), "a fully masked row"),
        (lambda w, p: ((1 - p) * w.sum(-1), right_row_sum_stats(w, p)[1]), "no factor (1-p) in the mean"),
        (lambda w, p: (w.sum(-1) / (1 - p), right_row_sum_stats(w, p)[1]), "not w/(1-p)"),
        (lambda w, p: (w.sum(-1), p * (1 - p) * (w**2).sum(-1)), "comes out of a variance squared"),
        (lambda w, p: (w.sum(-1), p / (1 - p) ** 2 * (w**2).sum(-1)), "has variance p(1-p), not p"),
        (lambda w, p: (w.sum(-1), p / (1 - p) * w.sum(-1)), "sum the w^2, not the w"),
        (lambda w, p: (w.sum(-1), right_row_sum_stats(w, p)[1].sqrt()), "that is the standard deviation"),
        (lambda w, p: (w.sum(-1), p / (1 - p) * (w**2).sum(-2)), "not over the queries"),
    ],
)
def test_row_sum_stats_explains_typical_mistakes(wrong, hint):
    verdict = check.dropout_row_sum_stats(wrong)
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("wrong", "part"),
    [
        (lambda w, p: (w.sum(-1) + 0.1, right_row_sum_stats(w, p)[1]), "the mean (first result)"),
        (lambda w, p: (w.sum(-1), right_row_sum_stats(w, p)[1] + 0.1), "the variance (second result)"),
    ],
)
def test_row_sum_stats_names_the_wrong_result(wrong, part):
    # A mistake no hint models still says which of the two results is wrong.
    verdict = check.dropout_row_sum_stats(wrong)
    assert not verdict and verdict.status == "fail" and part in verdict.message, verdict.message


def test_row_sum_stats_without_the_variance_fails():
    verdict = check.dropout_row_sum_stats(lambda w, p: w.sum(-1))  # only the mean, no variance
    assert not verdict and verdict.status == "fail" and "case 1/5" in verdict.message


def test_row_sums_match_a_real_module():
    # The facts the prediction relies on, measured on attnlib.CausalAttention.
    torch.manual_seed(0)
    x = torch.rand(1, 6, 3)
    module = attnlib.CausalAttention(3, 2, 6, dropout=0.5)
    module.eval()
    module(x)
    torch.testing.assert_close(module.last_attn_weights.sum(-1), torch.ones(1, 6))
    module.train()
    module(x.expand(4000, 6, 3))  # 4000 independent dropout draws at once
    mean = module.last_attn_weights.sum(-1).mean(0, keepdim=True)  # (1, 6)
    assert torch.allclose(mean, torch.ones(1, 6), atol=0.05), mean


def test_attention_with_dropout_accepts_a_right_answer():
    verdict = check.attention_with_dropout(right_attention)
    assert verdict and verdict.status == "pass", verdict.message


def test_attention_with_dropout_explains_the_handed_out_bug():
    verdict = check.attention_with_dropout(buggy_attention)
    assert not verdict and "hint: dropout belongs on the weights AFTER softmax" in verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (renormalised_attention, "must not be renormalised"),
        (lambda q, k, v, keep, p: right_attention(q, k, v, keep, p) * (1 - p), "scaled up by 1/(1-p)"),
        (
            lambda q, k, v, keep, p: (
                torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) * keep / (1 - p) @ v
            ),
            "causal mask is missing",
        ),
    ],
)
def test_attention_with_dropout_explains_typical_mistakes(wrong, hint):
    verdict = check.attention_with_dropout(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message


@pytest.mark.parametrize(
    "fn", [check.classic_dropout, check.dropout_row_sum_stats, check.attention_with_dropout]
)
def test_a_stub_is_not_yet(fn):
    def stub(*args):
        raise NotImplementedError

    verdict = fn(stub)
    assert not verdict and verdict.status == "todo" and verdict.message.startswith("Not yet: ")


@pytest.mark.parametrize(
    "fn", [check.classic_dropout, check.dropout_row_sum_stats, check.attention_with_dropout]
)
def test_an_exception_is_reported_in_words(fn):
    def broken(weights, *args):
        return weights @ torch.ones(7, 7)  # a shape error in the student's code

    verdict = fn(broken)
    assert not verdict and verdict.status == "error"
    assert "your code raised RuntimeError" in verdict.message and "Traceback" not in verdict.message
    assert "weights @ torch.ones(7, 7)" in verdict.message  # points at the student's line


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.classic_dropout(right_classic)
    check.dropout_row_sum_stats(right_row_sum_stats)
    check.attention_with_dropout(right_attention)
    assert torch.equal(state, torch.random.get_rng_state())
