"""Answers to the checks of notebook 09."""

from __future__ import annotations

import torch

import attnlib
from attnlib.check.luong_attention import _luong_step
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

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


def good_luong_step(decoder, x, hidden, cell, encoder_outputs, mask, feed):
    """A step written from the equations."""
    rnn_input = torch.cat((decoder.embedding(x), feed), dim=1)  # (B, 2H)
    outputs, (hidden, cell) = decoder.rnn(rnn_input.unsqueeze(1), (hidden, cell))  # (B, 1, H)
    h_t = outputs.squeeze(1)
    scores = decoder.attention.score(outputs, encoder_outputs).squeeze(1)  # (B, Ts)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    context = (weights.unsqueeze(-1) * encoder_outputs).sum(dim=1)  # (B, H)
    attentional = torch.tanh(decoder.W_c(torch.cat((context, h_t), dim=1)))
    return decoder.fc(attentional), hidden, cell, attentional


CONCAT = 2 * 64 * 64 + 64 + 64  # the concat scorer's parameters: nn.Linear(2H, H) with bias, and v

RIGHT = {
    "general_scores": [right_general],
    "location_weights": [right_location],
    "local_m_weights": [right_local_m],
    "luong_step": [good_luong_step],
    "scorer_parameters": [given(["dot", "scaled_dot"], CONCAT), given(("Scaled_dot", "dot"), float(CONCAT))],
}

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


def luong_slip(**knobs):
    """The reference step with one of its knobs turned to a typical mistake."""
    return lambda *a: _luong_step(*a, **knobs)


def stale_cell(d, x, h, c, enc, m, f):
    logits, hidden, _, attentional = _luong_step(d, x, h, c, enc, m, f)
    return logits, hidden, c, attentional


WRONG = {
    "general_scores": [
        (lambda q, k, w: q @ w.T @ k.transpose(1, 2), "W_a is transposed"),
        (lambda q, k, w: q @ k.transpose(1, 2), "*dot* score"),
        (lambda q, k, w: right_general(q, k, w) / q.shape[-1] ** 0.5, "no 1/sqrt(H)"),
        (lambda q, k, w: torch.softmax(right_general(q, k, w), -1), "before the softmax"),
        (lambda q, k, w: k @ w.T @ q.transpose(1, 2), "not its transpose"),
    ],
    "location_weights": [
        (lambda q, w, m: torch.softmax(q @ w.T, dim=-1), "use the FIRST Ts rows"),
        (lambda q, w, m: right_location(q, w[-m.shape[1] :], m), "not the last ones"),
        (lambda q, w, m: right_location(q, w.T, m), "`query @ w_a.T`"),
        (lambda q, w, m: q @ w[: m.shape[1]].T, "return the weights"),
        (lambda q, w, m: torch.softmax(q @ w[: m.shape[1]].T, dim=-1), "leave them out of the softmax"),
        (
            lambda q, w, m: torch.softmax(q @ w[: m.shape[1]].T, dim=-1) * m[:, None, :],
            "mask the scores *before* the softmax",
        ),
        (
            lambda q, w, m: torch.softmax(
                (q @ w[: m.shape[1]].T).masked_fill(~m[:, None, :], -torch.inf), dim=1
            ),
            "not over the decoder steps",
        ),
        (  # the softmax over all S rows of W_a, then cut to the source's Ts: a distribution no more
            lambda q, w, m: torch.softmax(q @ w.T, dim=-1)[..., : m.shape[1]] * m[:, None, :],
            "does not sum to 1 along the last axis",
        ),
    ],
    "local_m_weights": [
        (lambda s, m, d, t: right_local_m(s, m, d, 0), "centre its window on step + i"),
        (lambda s, m, d, t: right_local_m(s, m, d, t + 1), "steps count from 0"),
        (lambda s, m, d, t: local_m(s, m, d, t, strict=True), "the ends included"),
        (lambda s, m, d, t: local_m(s, m, d, t, after=True), "*inside* the window"),
        (lambda s, m, d, t: local_m(s, m, d, t, pad=False), "also leave out the padding"),
        (lambda s, m, d, t: local_m(s, m, d, t, gaussian=True), "local-m has no Gaussian"),
        (lambda s, m, d, t: local_m(s, m, d, t, nan_rows=True), "give such rows zero weights"),
        (  # the window in the softmax, the padding zeroed after it
            lambda s, m, d, t: local_m(s, m, d, t, pad=False) * m[:, None, :],
            "does not sum to 1 along the last axis",
        ),
    ],
    "luong_step": [
        (luong_slip(new_query=False), "Bahdanau's order"),
        (luong_slip(feeding=False), "`feed`"),
        (luong_slip(context_first=False), "context first"),
        (luong_slip(squash=False), "tanh is missing"),
        (luong_slip(from_attentional=False), "never reaches the logits"),
        (luong_slip(layer=0), "TOP layer"),
        # unmasked padding and stale states
        (lambda d, x, h, c, enc, m, f: _luong_step(d, x, h, c, enc, None, f), "padding gets weight"),
        (
            lambda d, x, h, c, enc, m, f: (*_luong_step(d, x, h, c, enc, m, f)[:3], f),
            "not the `feed` that came in",
        ),
        (stale_cell, "NEW cell state"),
    ],
    "scorer_parameters": [  # (the scorers without parameters, the concat scorer's count)
        (given(["dot"], CONCAT), "scaled_dot divides by sqrt(H)"),
        (given(["dot", "scaled_dot", "general"], CONCAT), "general has its matrix W_a"),
        (given(["dot", "scaled_dot", "local-m"], CONCAT), "local-m restricts a *general* scorer"),
        (given(["dot", "scaled_dot", "local-p"], CONCAT), "W_p and v_p"),
        (given(["dot", "scaled_dot", "concat"], CONCAT), "concat (Bahdanau's additive score) has W, b and v"),
        (given(["dot", "additive"], CONCAT), "unknown name"),
        (given("dot", CONCAT), "answer with a list of names"),
        (
            given(["dot", "scaled_dot"], CONCAT - 64),
            "has both the bias b of nn.Linear(2H, H) and the vector v",
        ),
        (given(["dot", "scaled_dot"], 2 * 64 * 64), "has a bias b"),
        (given(["dot", "scaled_dot"], 64 * 64 + 2 * 64), "2H inputs"),
        (given(["dot", "scaled_dot"], 4 * 64 * 64), "not 2H x 2H"),
        (given(["dot", "scaled_dot"], 1234), "nn.Linear(2H, H)"),
    ],
}


# ----------------------------------------------------------------------------- out of reach
def _general_by_scorer(query, keys, w_a):
    with torch.random.fork_rng(devices=[]):  # its random init is overwritten
        scorer = attnlib.AttentionGeneral(w_a.shape[0])
    with torch.no_grad():
        scorer.W_a.weight.copy_(w_a)
    return scorer.score(query, keys)


def _local_m_by_module(scores, mask, half_window, step):
    local = attnlib.LocalAttention(1, half_window, mode="m", score="dot")
    return local.attend(scores[..., :1], scores.new_ones(scores.shape[0], scores.shape[-1], 1), mask, step)


OUT_OF_REACH = {
    "general_scores": [(_general_by_scorer, "calls attnlib's own `AttentionGeneral.score`")],
    "local_m_weights": [(_local_m_by_module, "calls attnlib's own `LocalAttention.attend`")],
    "luong_step": [
        (
            lambda d, x, h, c, enc, m, feed: d(x, h, c, enc, m, feed),
            "calls attnlib's own `LuongDecoder.forward`",
        ),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "general_scores": [stub],
    "location_weights": [stub],
    "local_m_weights": [stub],
    "luong_step": [stub],
    "scorer_parameters": [given(..., CONCAT)],
}
_RAISED = (crashes, "raised AttributeError", "args[0].no_such_attribute")
CRASHES = {
    "general_scores": [_RAISED],
    "location_weights": [_RAISED],
    "local_m_weights": [_RAISED],
    "luong_step": [(crashes, "no_such_attribute")],
}
