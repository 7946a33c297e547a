"""The checks of notebook 02 accept right answers and explain the typical wrong ones.

Three tests that try notebook 01's checks along with 02's stay whole here: the predictions,
their placeholders, and the global random state."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from student_answers import assert_todo_then_error, crashes

from attnlib import check
from tests.checks_shared import assert_hint, cosine_context_ok, softmax_ok

# ----------------------------------------------------------------------------- student answers


def attention_ok(query, key, value):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return torch.softmax(scores, dim=-1) @ value


def self_attention_ok(x, w_query, w_key, w_value):
    return attention_ok(x @ w_query, x @ w_key, x @ w_value)


def cross_attention_ok(x_q, x_kv, w_query, w_key, w_value):
    return attention_ok(x_q @ w_query, x_kv @ w_key, x_kv @ w_value)


def cross_attention_with_torch(x_q, x_kv, w_query, w_key, w_value):
    return F.scaled_dot_product_attention(x_q @ w_query, x_kv @ w_key, x_kv @ w_value)


# ----------------------------------------------------------------------------- right answers


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.cross_attention, cross_attention_ok),
        (check.cross_attention, cross_attention_with_torch),
        (check.fixed_self_attention, self_attention_ok),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict, verdict.message
    assert verdict.status == "pass"
    assert verdict.message.startswith("Passed: ")


def test_predictions_pass():
    assert check.top_token("with").status == "pass"
    assert check.cross_attention_shapes((3, 4, 40), (3, 4, 9)).status == "pass"
    assert check.cross_attention_shapes(torch.Size([3, 4, 40]), [3, 4, 9]).status == "pass"
    assert check.drop_the_scale("c", "b").status == "pass"
    assert check.drop_the_scale(" C", "B").status == "pass"


# ----------------------------------------------------------------------------- typical mistakes


def _cross(scale=None, dim=-1, roles="q kv kv"):
    def fn(x_q, x_kv, w_query, w_key, w_value):
        src = {"q": x_q, "kv": x_kv}
        q_src, k_src, v_src = (src[r] for r in roles.split())
        queries, keys, values = q_src @ w_query, k_src @ w_key, v_src @ w_value
        s = 1 / math.sqrt(keys.shape[-1]) if scale is None else scale(x_q, x_kv, keys, values)
        return torch.softmax(queries @ keys.transpose(-2, -1) * s, dim=dim) @ values

    return fn


WRONG_CROSS = [
    (_cross(roles="kv q q"), "roles are swapped"),
    (_cross(roles="q q q"), "self-attention on `x_q`"),
    (_cross(roles="q kv q"), "same tokens as the keys"),
    (_cross(roles="q q kv"), "the keys come from `x_kv`"),
    (_cross(scale=lambda xq, xkv, k, v: 1.0), "scale is missing"),
    (_cross(scale=lambda xq, xkv, k, v: 1 / k.shape[-1]), "divided by Dk"),
    (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(v.shape[-1])), "value width Dv"),
    (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(xq.shape[-1])), "width of the input `x_q`"),
    (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(xkv.shape[-1])), "width of the input `x_kv`"),
    (_cross(dim=-2), "not dim=-2"),
    (_cross(dim=1), "not dim=-2"),
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
    [(check.cross_attention, w, h) for w, h in WRONG_CROSS]
    + [(check.fixed_self_attention, w, h) for w, h in WRONG_SELF_ATTENTION],
)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


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


@pytest.mark.parametrize(
    ("unscaled", "scaled", "hint"),
    [
        ("a", "b", "do not make the weights flatter"),
        ("b", "b", "grows like d_k"),
        ("d", "b", "never overflow"),
        ("c", "a", "variance 1 for every d_k"),
        ("c", "c", "variance 1 for every d_k"),
        ("c", "d", "never overflow"),
        ("e", "b", "one letter"),
        (3, "b", "one letter"),
    ],
)
def test_drop_the_scale_wrong_predictions(unscaled, scaled, hint):
    verdict = check.drop_the_scale(unscaled, scaled)
    assert not verdict
    assert verdict.status == "fail"
    assert hint in verdict.message


def test_drop_the_scale_reports_each_part():
    verdict = check.drop_the_scale("a", "c")
    assert "without the scale" in verdict.message and "with the scale" in verdict.message


# ----------------------------------------------------------------------------- not yet / crashes


@pytest.mark.parametrize(
    "check_fn",
    [
        check.cross_attention,
        check.fixed_self_attention,
    ],
)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "AttributeError")


def test_prediction_placeholders_are_todo():
    assert check.top_token(...).status == "todo"
    assert check.cross_attention_shapes(..., ...).status == "todo"
    assert check.drop_the_scale(..., "b").status == "todo"


def test_checks_leave_the_global_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    check.softmax(softmax_ok)
    check.cross_attention(cross_attention_ok)
    check.cosine_context_vectors(cosine_context_ok)
    check.fixed_self_attention(self_attention_ok)
    assert torch.equal(torch.rand(3), expected)
