"""The checks of notebook 01 accept right answers and explain the typical wrong ones."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from student_answers import assert_todo_then_error, crashes

from attnlib import check
from tests.checks_shared import assert_hint, cosine_context_ok, softmax_ok

# ----------------------------------------------------------------------------- student answers


def cosine_context_with_torch(inputs):
    cos = F.cosine_similarity(inputs[:, None, :], inputs[None, :, :], dim=-1)  # (T, T)
    return torch.softmax(cos, dim=-1) @ inputs


# ----------------------------------------------------------------------------- right answers


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.softmax, softmax_ok),
        (check.softmax, lambda s: torch.softmax(s, dim=-1)),
        (check.cosine_context_vectors, cosine_context_ok),
        (check.cosine_context_vectors, cosine_context_with_torch),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict, verdict.message
    assert verdict.status == "pass"
    assert verdict.message.startswith("Passed: ")


# ----------------------------------------------------------------------------- typical mistakes


def _exp_over_sum(dim=-1, keepdim=True):
    def fn(s):
        e = torch.exp(s)
        return e / (e.sum() if dim is None else e.sum(dim=dim, keepdim=keepdim))

    return fn


WRONG_SOFTMAX = [
    (_exp_over_sum(), "overflows"),
    (lambda s: torch.exp(s), "do not sum to 1"),
    (lambda s: torch.exp(s - s.amax(dim=-1, keepdim=True)), "do not sum to 1"),
    (lambda s: torch.softmax(s, dim=0), "wrong dimension"),
    (_exp_over_sum(dim=0), "wrong dimension"),
    (_exp_over_sum(dim=None), "sum of *every* entry"),
    (_exp_over_sum(keepdim=False), "keepdim=True"),
]


def _unit(x, dim=-1):
    return x / x.norm(dim=dim, keepdim=True)


def _context_from(scores_fn, values_fn=lambda x: x):
    return lambda x: torch.softmax(scores_fn(x), dim=-1) @ values_fn(x)


WRONG_COSINE = [
    (_context_from(lambda x: _unit(x) @ _unit(x).T, _unit), "not the normalised vectors"),
    (_context_from(lambda x: x @ _unit(x).T), "length of the query as well"),
    (_context_from(lambda x: _unit(x) @ x.T), "length of the key as well"),
    (_context_from(lambda x: _unit(x, 0) @ _unit(x, 0).T), "each feature column"),
    (
        _context_from(lambda x: x @ x.T / ((x**2).sum(-1, keepdim=True) * (x**2).sum(-1, keepdim=True).T)),
        "not by the sums of squares",
    ),
    (
        _context_from(lambda x: (x / x.sum(-1, keepdim=True)) @ (x / x.sum(-1, keepdim=True)).T),
        "not the sum of its entries",
    ),
    (_context_from(lambda x: x @ x.T), "plain dot products"),
    (lambda x: (_unit(x) @ _unit(x).T) @ x, "still need a softmax"),
    (lambda x: torch.softmax(_unit(x) @ _unit(x).T, dim=0) @ x, "each *row* of the weights"),
    (lambda x: torch.softmax(_unit(x) @ _unit(x).T, dim=-1), "returned the weights"),
]


@pytest.mark.parametrize(
    ("check_fn", "wrong", "hint"),
    [(check.softmax, w, h) for w, h in WRONG_SOFTMAX]
    + [(check.cosine_context_vectors, w, h) for w, h in WRONG_COSINE],
)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        ("journey", "does not always attend most to itself"),
        ("starts", "doubling a key vector doubles"),
        (3, "as a string"),
    ],
)
def test_top_token_wrong_predictions(answer, hint):
    verdict = check.top_token(answer)
    assert not verdict
    assert hint in verdict.message


# ----------------------------------------------------------------------------- not yet / crashes


@pytest.mark.parametrize(
    "check_fn",
    [
        check.softmax,
        check.cosine_context_vectors,
    ],
)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "AttributeError")
