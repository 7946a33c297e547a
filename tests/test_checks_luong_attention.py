"""The checks of notebook 09 accept right answers and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch
from student_answers import assert_todo_then_error, crashes

from attnlib import LocalAttention, check
from attnlib.check import luong_attention
from tests.checks_shared import assert_hint

# ----------------------------------------------------------------------------- right answers


def right_general(query, keys, w_a):
    return query @ w_a @ keys.transpose(1, 2)  # (B, Tq, H) @ (H, H) @ (B, H, Ts) -> (B, Tq, Ts)


def right_position(query, w_p, v_p, mask):
    gate = torch.tanh(query @ w_p.T) @ v_p  # (B, Tq)
    return mask.sum(dim=1, keepdim=True) * torch.sigmoid(gate)


def right_local(scores, p, mask, half_window):
    positions = torch.arange(scores.shape[-1])  # (Ts,)
    centre = p.round()[..., None]  # (B, Tq, 1)
    visible = ((positions - centre).abs() <= half_window) & mask[:, None, :]  # (B, Tq, Ts)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    sigma = half_window / 2
    return weights * torch.exp(-((positions - p[..., None]) ** 2) / (2 * sigma**2))


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.general_scores, right_general),
        (check.local_p_position, right_position),
        (check.local_p_weights, right_local),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


@pytest.mark.parametrize("half_window", [1, 2, 3])
def test_local_p_reference_is_what_local_attention_computes(half_window):
    torch.manual_seed(half_window)
    local = LocalAttention(6, half_window, mode="p", score="general")
    query, keys = torch.randn(3, 4, 6), torch.randn(3, 9, 6)
    mask = torch.arange(9)[None, :] < torch.tensor([[9], [7], [8]])  # (B, Ts)
    with torch.no_grad():
        local.W_p.weight.mul_(3)  # spread the predicted positions over the source
        expected = local.attend(query, keys, mask)
        scores = local.scorer.score(query, keys)
    got = luong_attention._reference_local_p(scores, local.last_positions, mask, half_window)
    torch.testing.assert_close(got, expected)


def test_predicted_position_reference_is_local_attentions():
    torch.manual_seed(0)
    local = LocalAttention(5, 1, mode="p")
    query, mask = torch.randn(2, 3, 5), torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        local.attend(query, torch.randn(2, 6, 5), mask)
    got = luong_attention._reference_position(query, local.W_p.weight, local.v_p.weight[0], mask)
    torch.testing.assert_close(got, local.last_positions)
    torch.testing.assert_close(got, right_position(query, local.W_p.weight, local.v_p.weight[0], mask))


# ----------------------------------------------------------------------------- typical mistakes


def position(query, w_p, v_p, mask, s=None, transform=torch.sigmoid, inner=torch.tanh):
    s = mask.sum(dim=1) if s is None else s
    return s[:, None] * transform(inner(query @ w_p.T) @ v_p)


def local(
    scores, p, mask, d, *, sigma=None, window="before", centre=torch.round, two=2, renorm=False, pad=True
):
    positions = torch.arange(scores.shape[-1])
    in_window = (positions - centre(p)[..., None]).abs() <= d
    keep = mask[:, None, :] if pad else torch.ones_like(in_window)
    if window == "before":
        keep = keep & in_window
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    if window == "after":
        weights = weights * in_window
    sigma = d / 2 if sigma is None else sigma
    weights = weights * torch.exp(-((positions - p[..., None]) ** 2) / (two * sigma**2))
    return weights / weights.sum(-1, keepdim=True) if renorm else weights


WRONG = [
    (check.general_scores, lambda q, k, w: q @ w.T @ k.transpose(1, 2), "W_a is transposed"),
    (check.general_scores, lambda q, k, w: q @ k.transpose(1, 2), "*dot* score"),
    (check.general_scores, lambda q, k, w: right_general(q, k, w) / q.shape[-1] ** 0.5, "no 1/sqrt(H)"),
    (check.general_scores, lambda q, k, w: torch.softmax(right_general(q, k, w), -1), "before the softmax"),
    (check.general_scores, lambda q, k, w: k @ w.T @ q.transpose(1, 2), "not its transpose"),
    (
        check.local_p_position,
        lambda q, w, v, m: position(q, w, v, m, s=torch.full((m.shape[0],), m.shape[1])),
        "*real* length",
    ),
    (check.local_p_position, lambda q, w, v, m: position(q, w.T, v, m), "`query @ w_p.T`"),
    (check.local_p_position, lambda q, w, v, m: position(q, w, v, m, s=m.sum(1) - 1), "not S - 1"),
    (
        check.local_p_position,
        lambda q, w, v, m: position(q, w, v, m, inner=lambda t: t),
        "the tanh is missing",
    ),
    (
        check.local_p_position,
        lambda q, w, v, m: position(q, w, v, m, transform=lambda t: t),
        "the sigmoid is missing",
    ),
    (check.local_p_position, lambda *a: position(*a).round(), "keep p_t real-valued"),
    (check.local_p_position, lambda *a: position(*a).unsqueeze(-1), "squeeze the last axis"),
    (
        check.local_p_position,
        lambda q, w, v, m: torch.sigmoid(torch.tanh(q @ w.T) @ v) * m.sum(dim=1),
        "give it a trailing axis",
    ),
    (check.local_p_weights, lambda *a: local(*a, window="none"), "outside the window"),
    (check.local_p_weights, lambda *a: local(*a, window="after"), "mask them *before* the softmax"),
    (check.local_p_weights, lambda s, p, m, d: local(s, p, m, d, sigma=d), "sigma = D / 2"),
    (check.local_p_weights, lambda *a: local(*a, two=1), "the factor 2 is missing"),
    (check.local_p_weights, lambda *a: local(*a, renorm=True), "do not renormalise"),
    (check.local_p_weights, lambda *a: local(*a, pad=False), "also leave out the padding"),
    (check.local_p_weights, lambda *a: local(*a, centre=torch.floor), "not on its integer part"),
]


def gaussian_at_round(scores, p, mask, d):
    weights = local(scores, p, mask, d, sigma=float("inf"))  # the window's softmax, no Gaussian yet
    positions = torch.arange(scores.shape[-1])
    return weights * torch.exp(-((positions - p.round()[..., None]) ** 2) / (2 * (d / 2) ** 2))


def no_gaussian(scores, p, mask, d):
    return local(scores, p, mask, d, sigma=float("inf"))


def strict_window(scores, p, mask, d):
    positions = torch.arange(scores.shape[-1])
    keep = ((positions - p.round()[..., None]).abs() < d) & mask[:, None, :]
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return weights * torch.exp(-((positions - p[..., None]) ** 2) / (2 * (d / 2) ** 2))


WRONG += [
    (check.local_p_weights, gaussian_at_round, "the Gaussian is centred on the real-valued p_t"),
    (check.local_p_weights, no_gaussian, "multiply the window's softmax weights by the Gaussian"),
    (check.local_p_weights, strict_window, "the ends included"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- predictions


def test_scorer_parameters_prediction():
    concat = 2 * 64 * 64 + 64 + 64  # nn.Linear(2H, H) with bias, and v
    assert check.scorer_parameters(["dot", "scaled_dot"], concat).status == "pass"
    assert check.scorer_parameters(("Scaled_dot", "dot"), float(concat)).status == "pass"
    assert check.scorer_parameters(..., concat).status == "todo"
    for names, count, hint in [
        (["dot"], concat, "scaled_dot divides by sqrt(H)"),
        (["dot", "scaled_dot", "general"], concat, "general has its matrix W_a"),
        (["dot", "scaled_dot", "local-m"], concat, "local-m restricts a *general* scorer"),
        (["dot", "scaled_dot", "local-p"], concat, "W_p and v_p"),
        (["dot", "scaled_dot", "concat"], concat, "concat (Bahdanau's additive score) has W, b and v"),
        (["dot", "additive"], concat, "unknown name"),
        ("dot", concat, "answer with a list of names"),
        (["dot", "scaled_dot"], concat - 64, "has both the bias b of nn.Linear(2H, H) and the vector v"),
        (["dot", "scaled_dot"], 2 * 64 * 64, "has a bias b"),
        (["dot", "scaled_dot"], 64 * 64 + 2 * 64, "2H inputs"),
        (["dot", "scaled_dot"], 4 * 64 * 64, "not 2H x 2H"),
        (["dot", "scaled_dot"], 1234, "nn.Linear(2H, H)"),
    ]:
        verdict = check.scorer_parameters(names, count)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.general_scores, check.local_p_position, check.local_p_weights]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised AttributeError", "args[0].no_such_attribute")


def _good_luong_step(decoder, x, hidden, cell, encoder_outputs, mask, feed):
    rnn_input = torch.cat((decoder.embedding(x), feed), dim=1)  # (B, 2H)
    outputs, (hidden, cell) = decoder.rnn(rnn_input.unsqueeze(1), (hidden, cell))  # (B, 1, H)
    h_t = outputs.squeeze(1)
    scores = decoder.attention.score(outputs, encoder_outputs).squeeze(1)  # (B, Ts)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    context = (weights.unsqueeze(-1) * encoder_outputs).sum(dim=1)  # (B, H)
    attentional = torch.tanh(decoder.W_c(torch.cat((context, h_t), dim=1)))
    return decoder.fc(attentional), hidden, cell, attentional


def test_luong_step_accepts_a_step_written_from_the_equations():
    verdict = check.luong_step(_good_luong_step)
    assert verdict and verdict.status == "pass", verdict.message


@pytest.mark.parametrize(
    ("knobs", "hint"),
    [
        ({"new_query": False}, "Bahdanau's order"),
        ({"feeding": False}, "`feed`"),
        ({"context_first": False}, "context first"),
        ({"squash": False}, "tanh is missing"),
        ({"from_attentional": False}, "never reaches the logits"),
        ({"layer": 0}, "TOP layer"),
    ],
)
def test_luong_step_names_each_typical_mistake(knobs, hint):
    from attnlib.check.luong_attention import _luong_step

    verdict = check.luong_step(lambda *a: _luong_step(*a, **knobs))
    assert not verdict and hint in verdict.message, verdict.message


def test_luong_step_catches_unmasked_padding_and_stale_states():
    from attnlib.check.luong_attention import _luong_step

    unmasked = check.luong_step(lambda d, x, h, c, enc, m, f: _luong_step(d, x, h, c, enc, None, f))
    assert not unmasked and "padding gets weight" in unmasked.message
    stale_feed = check.luong_step(lambda d, x, h, c, enc, m, f: (*_luong_step(d, x, h, c, enc, m, f)[:3], f))
    assert not stale_feed and "not the `feed` that came in" in stale_feed.message

    def stale_cell(d, x, h, c, enc, m, f):
        logits, hidden, _, attentional = _luong_step(d, x, h, c, enc, m, f)
        return logits, hidden, c, attentional

    verdict = check.luong_step(stale_cell)
    assert not verdict and "NEW cell state" in verdict.message


def test_luong_step_stub_and_crash():
    assert_todo_then_error(check.luong_step, crashes, "no_such_attribute")
