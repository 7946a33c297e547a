"""The checks of notebooks 01 and 02 accept right answers and explain the typical wrong ones."""

from __future__ import annotations

import math

import pytest
import torch
from student_answers import assert_todo_then_error, crashes

from attnlib import check

# ----------------------------------------------------------------------------- student answers


def softmax_ok(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def context_ok(inputs):
    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs


def attention_ok(query, key, value):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return torch.softmax(scores, dim=-1) @ value


def self_attention_ok(x, w_query, w_key, w_value):
    return attention_ok(x @ w_query, x @ w_key, x @ w_value)


# ----------------------------------------------------------------------------- right answers


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.softmax, softmax_ok),
        (check.softmax, lambda s: torch.softmax(s, dim=-1)),
        (check.all_context_vectors, context_ok),
        (check.scaled_dot_product_attention, attention_ok),
        (
            check.scaled_dot_product_attention,
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        ),
        (check.fixed_self_attention, self_attention_ok),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict, verdict.message
    assert verdict.status == "pass"
    assert "✅" in verdict.message


def test_predictions_pass():
    assert check.top_token("with").status == "pass"
    assert check.cross_attention_shapes((3, 4, 40), (3, 4, 9)).status == "pass"
    assert check.cross_attention_shapes(torch.Size([3, 4, 40]), [3, 4, 9]).status == "pass"


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

WRONG_CONTEXT = [
    (lambda x: torch.softmax(x @ x.T, dim=0) @ x, "each *row* of the weights"),
    (lambda x: torch.softmax(x @ x.T, dim=-1).T @ x, "each *row* of the weights"),
    (lambda x: (x @ x.T) @ x, "still need a softmax"),
    (lambda x: torch.softmax(x @ x.T / math.sqrt(x.shape[-1]), dim=-1) @ x, "does not scale"),
    (lambda x: torch.softmax(x @ x.T, dim=-1), "returned the weights"),
]


def _attn(scale=None, dim=-1, transpose=True):
    def fn(q, k, v):
        s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale(q, v)
        scores = q @ (k.transpose(-2, -1) if transpose else k) * s
        return torch.softmax(scores, dim=dim) @ v

    return fn


WRONG_ATTENTION = [
    (_attn(scale=lambda q, v: 1.0), "scale is missing"),
    (_attn(scale=lambda q, v: 1 / q.shape[-1]), "divided by Dk"),
    (_attn(scale=lambda q, v: math.sqrt(q.shape[-1])), "multiplied by sqrt(Dk)"),
    (_attn(dim=-2), "not dim=-2"),
    (_attn(dim=1), "not dim=-2"),
    (_attn(dim=0), "dim=0 is the batch"),
    (_attn(transpose=False), "key is not transposed"),
    (_attn(scale=lambda q, v: 1 / math.sqrt(v.shape[-1])), "value width Dv"),
]


def buggy_self_attention(x, w_query, w_key, w_value):
    queries, keys, values = x @ w_query, x @ w_key, x @ w_value
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-2)
    return weights @ values


WRONG_SELF_ATTENTION = [
    (buggy_self_attention, "this is still the bug"),
    (
        lambda x, wq, wk, wv: torch.softmax((x @ wq) @ (x @ wk).transpose(-2, -1), dim=-1) @ (x @ wv),
        "scale is missing",
    ),
]


@pytest.mark.parametrize(
    ("check_fn", "wrong", "hint"),
    [(check.softmax, w, h) for w, h in WRONG_SOFTMAX]
    + [(check.all_context_vectors, w, h) for w, h in WRONG_CONTEXT]
    + [(check.scaled_dot_product_attention, w, h) for w, h in WRONG_ATTENTION]
    + [(check.fixed_self_attention, w, h) for w, h in WRONG_SELF_ATTENTION],
)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    verdict = check_fn(wrong)
    assert not verdict
    assert verdict.status == "fail"
    assert "hint:" in verdict.message
    assert hint in verdict.message


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


@pytest.mark.parametrize(
    ("context_shape", "weights_shape", "hint"),
    [
        ((3, 9, 40), (3, 4, 9), "one row per *query*"),
        ((3, 4, 16), (3, 4, 9), "width is Dv=40"),
        ((3, 4, 40), (3, 9, 4), "one row per query, one column per key"),
        ((3, 4, 40), (3, 4, 4), "need not be equally many"),
        ((3, 4, 40), (3, 4, 16), "summed away"),
        ((3, 4, 40), (4, 9), "follow the two matmuls"),
    ],
)
def test_cross_attention_shapes_wrong_predictions(context_shape, weights_shape, hint):
    verdict = check.cross_attention_shapes(context_shape, weights_shape)
    assert not verdict
    assert hint in verdict.message


# ----------------------------------------------------------------------------- not yet / crashes


@pytest.mark.parametrize(
    "check_fn",
    [
        check.softmax,
        check.all_context_vectors,
        check.scaled_dot_product_attention,
        check.fixed_self_attention,
    ],
)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "AttributeError")


def test_prediction_placeholders_are_todo():
    assert check.top_token(...).status == "todo"
    assert check.cross_attention_shapes(..., ...).status == "todo"


def test_checks_leave_the_global_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    check.softmax(softmax_ok)
    check.scaled_dot_product_attention(attention_ok)
    check.fixed_self_attention(self_attention_ok)
    assert torch.equal(torch.rand(3), expected)
