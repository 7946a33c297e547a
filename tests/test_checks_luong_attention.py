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


def right_location(query, w_a, mask):
    scores = query @ w_a[: mask.shape[1]].T  # (B, Tq, H) @ (H, Ts) -> (B, Tq, Ts)
    return torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)


def right_local_m(scores, mask, half_window, step):
    positions = torch.arange(scores.shape[-1])  # (Ts,)
    steps = step + torch.arange(scores.shape[1])  # (Tq,): p_t = t
    visible = ((positions - steps[:, None]).abs() <= half_window) & mask[:, None, :]  # (B, Tq, Ts)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return weights.nan_to_num(0.0)  # a window wholly on padding: zero weights, not NaN


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.general_scores, right_general),
        (check.location_weights, right_location),
        (check.local_m_weights, right_local_m),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


@pytest.mark.parametrize("half_window", [1, 2, 3])
@pytest.mark.parametrize("step", [0, 3, 6])
def test_local_m_reference_is_what_local_attention_computes(half_window, step):
    torch.manual_seed(half_window)
    local = LocalAttention(6, half_window, mode="m", score="general")
    query, keys = torch.randn(3, 4, 6), torch.randn(3, 9, 6)
    mask = torch.arange(9)[None, :] < torch.tensor([[9], [7], [4]])  # (B, Ts); row 2 ends early
    with torch.no_grad():
        expected = local.attend(query, keys, mask, step)
        scores = local.scorer.score(query, keys)
    got = luong_attention._reference_local_m(scores, mask, half_window, step)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(right_local_m(scores, mask, half_window, step), expected)


def test_location_reference_is_a_linear_layer_then_a_masked_softmax():
    torch.manual_seed(0)
    w_a = torch.nn.Linear(5, 8, bias=False)  # H=5 -> S=8 source positions
    query, mask = torch.randn(2, 3, 5), torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        got = luong_attention._reference_location(query, w_a.weight, mask)
        scores = w_a(query)[..., :6]  # (B, Tq, Ts)
    expected = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got.sum(dim=-1), torch.ones(2, 3))


# ----------------------------------------------------------------------------- typical mistakes


def local_m(scores, mask, d, step, *, strict=False, after=False, pad=True, gaussian=False, nan_rows=False):
    positions = torch.arange(scores.shape[-1])
    steps = step + torch.arange(scores.shape[1])
    distance = (positions - steps[:, None]).abs()  # (Tq, Ts)
    in_window = distance < d if strict else distance <= d
    keep = mask[:, None, :] if pad else torch.ones_like(mask)[:, None, :]
    if not after:
        keep = keep & in_window
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    weights = weights if nan_rows else weights.nan_to_num(0.0)
    if after:
        weights = weights * in_window
    if gaussian:
        weights = weights * torch.exp(-((positions - steps[:, None]) ** 2) / (2 * (d / 2) ** 2))
    return weights


WRONG = [
    (check.general_scores, lambda q, k, w: q @ w.T @ k.transpose(1, 2), "W_a is transposed"),
    (check.general_scores, lambda q, k, w: q @ k.transpose(1, 2), "*dot* score"),
    (check.general_scores, lambda q, k, w: right_general(q, k, w) / q.shape[-1] ** 0.5, "no 1/sqrt(H)"),
    (check.general_scores, lambda q, k, w: torch.softmax(right_general(q, k, w), -1), "before the softmax"),
    (check.general_scores, lambda q, k, w: k @ w.T @ q.transpose(1, 2), "not its transpose"),
    (check.location_weights, lambda q, w, m: torch.softmax(q @ w.T, dim=-1), "use the FIRST Ts rows"),
    (check.location_weights, lambda q, w, m: right_location(q, w[-m.shape[1] :], m), "not the last ones"),
    (check.location_weights, lambda q, w, m: right_location(q, w.T, m), "`query @ w_a.T`"),
    (check.location_weights, lambda q, w, m: q @ w[: m.shape[1]].T, "return the weights"),
    (
        check.location_weights,
        lambda q, w, m: torch.softmax(q @ w[: m.shape[1]].T, dim=-1),
        "leave them out of the softmax",
    ),
    (
        check.location_weights,
        lambda q, w, m: torch.softmax(q @ w[: m.shape[1]].T, dim=-1) * m[:, None, :],
        "mask the scores *before* the softmax",
    ),
    (
        check.location_weights,
        lambda q, w, m: torch.softmax((q @ w[: m.shape[1]].T).masked_fill(~m[:, None, :], -torch.inf), dim=1),
        "not over the decoder steps",
    ),
    (check.local_m_weights, lambda s, m, d, t: right_local_m(s, m, d, 0), "centre its window on step + i"),
    (check.local_m_weights, lambda s, m, d, t: right_local_m(s, m, d, t + 1), "steps count from 0"),
    (check.local_m_weights, lambda s, m, d, t: local_m(s, m, d, t, strict=True), "the ends included"),
    (check.local_m_weights, lambda s, m, d, t: local_m(s, m, d, t, after=True), "*inside* the window"),
    (check.local_m_weights, lambda s, m, d, t: local_m(s, m, d, t, pad=False), "also leave out the padding"),
    (check.local_m_weights, lambda s, m, d, t: local_m(s, m, d, t, gaussian=True), "local-m has no Gaussian"),
    (
        check.local_m_weights,
        lambda s, m, d, t: local_m(s, m, d, t, nan_rows=True),
        "give such rows zero weights",
    ),
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

FUNCTION_CHECKS = [check.general_scores, check.location_weights, check.local_m_weights]


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


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    for check_fn in [*FUNCTION_CHECKS, check.luong_step]:
        check_fn(lambda *args: None)
    check.location_weights(right_location)
    check.local_m_weights(right_local_m)
    check.luong_step(_good_luong_step)
    check.scorer_parameters(["dot"], 0)
    assert torch.equal(state, torch.random.get_rng_state())
