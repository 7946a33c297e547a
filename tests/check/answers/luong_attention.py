"""Answers to the checks of notebook 09."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import attnlib
from attnlib.check.luong_attention import LOCAL_P_CONFIG, _concat, _luong_decode
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def right_concat(query, keys, w_a, b_a, v_a):
    h = query.shape[-1]
    q = query @ w_a[:, :h].T + b_a  # (B, Tq, d_hid) @ (d_hid, A) -> (B, Tq, A): the bias on the queries' half
    k = keys @ w_a[:, h:].T  # (B, Ts, d_hid) @ (d_hid, A) -> (B, Ts, A): once for every step
    return torch.tanh(q.unsqueeze(2) + k.unsqueeze(1)) @ v_a  # (B, Tq, Ts, A) @ (A,) -> (B, Tq, Ts)


def right_concat_linear(query, keys, w_a, b_a, v_a):
    """Also right: nn.functional.linear on each half, einsum for v_a."""
    w_q, w_k = w_a.chunk(2, dim=1)  # (A, d_hid) each: the columns that meet h_t, then those that meet h̄_s
    energy = torch.tanh(F.linear(query, w_q)[:, :, None] + F.linear(keys, w_k, b_a)[:, None])
    return torch.einsum("bqsa,a->bqs", energy, v_a)


def right_location(query, w_a, mask):
    scores = query @ w_a[: mask.shape[1]].T  # (B, Tq, d_hid) @ (d_hid, Ts) -> (B, Tq, Ts)
    return torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)


def right_local_m(scores, mask, half_window, step):
    positions = torch.arange(scores.shape[-1])  # (Ts,)
    steps = step + torch.arange(scores.shape[1])  # (Tq,): p_t = t
    visible = ((positions - steps[:, None]).abs() <= half_window) & mask[:, None, :]  # (B, Tq, Ts)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return weights.nan_to_num(0.0)  # a window wholly on padding: zero weights, not NaN


def good_luong_decode(decoder, targets, hidden, cell, encoder_outputs, mask):
    """The steps written from the equations, h~ fed from one step into the next."""
    feed = encoder_outputs.new_zeros(targets.shape[0], decoder.hidden_size)  # h~_{-1} = 0: (B, d_hid)
    logits = []
    for t in range(targets.shape[1]):
        rnn_input = torch.cat((decoder.embedding(targets[:, t]), feed), dim=1)  # (B, 2 d_hid)
        outputs, (hidden, cell) = decoder.rnn(rnn_input.unsqueeze(1), (hidden, cell))  # (B, 1, d_hid)
        scores = decoder.attention.score(outputs, encoder_outputs)  # (B, 1, Ts): the NEW state asks
        weights = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
        context = (weights @ encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, d_hid) -> (B, d_hid)
        feed = torch.tanh(decoder.W_c(torch.cat((context, outputs.squeeze(1)), dim=1)))  # h~_t: (B, d_hid)
        logits.append(decoder.fc(feed))  # (B, V)
    return torch.stack(logits, dim=1)  # (B, T, V)


def decode_with_masked_softmax(decoder, targets, hidden, cell, encoder_outputs, mask):
    """Also right: attnlib.masked_softmax (notebook 03), the feed kept as (B, 1, d_hid)."""
    feed = encoder_outputs.new_zeros(targets.shape[0], 1, decoder.hidden_size)  # (B, 1, d_hid)
    embedded = decoder.embedding(targets)  # (B, T, d_hid)
    logits = []
    for t in range(targets.shape[1]):
        outputs, (hidden, cell) = decoder.rnn(
            torch.cat((embedded[:, t : t + 1], feed), dim=2), (hidden, cell)
        )
        weights = attnlib.masked_softmax(
            decoder.attention.score(hidden[-1:].transpose(0, 1), encoder_outputs), mask[:, None, :]
        )  # (B, 1, Ts)
        feed = torch.tanh(
            decoder.W_c(torch.cat((weights @ encoder_outputs, outputs), dim=2))
        )  # (B, 1, d_hid)
        logits.append(decoder.fc(feed))  # (B, 1, V)
    return torch.cat(logits, dim=1)  # (B, T, V)


H_P = LOCAL_P_CONFIG["hidden_size"]
LOCAL_P = (
    H_P * H_P + H_P + 2 * H_P * H_P + H_P + H_P
)  # W_p, v_p; concat's nn.Linear(2 d_hid, d_hid) with bias, v

RIGHT = {
    "concat_scores": [right_concat, right_concat_linear],
    "location_weights": [right_location],
    "local_m_weights": [right_local_m],
    "luong_decode": [good_luong_decode, decode_with_masked_softmax],
    "local_p_parameters": [given(LOCAL_P), given(float(LOCAL_P))],
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


def lm_clamped(scores, mask, half_window, step):
    """p_t clamped into the source, min(t, Ts - 1): a step past its end still sees the last tokens."""
    positions = torch.arange(scores.shape[-1])
    steps = (step + torch.arange(scores.shape[1])).clamp(max=scores.shape[-1] - 1)
    visible = ((positions - steps[:, None]).abs() <= half_window) & mask[:, None, :]
    return torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1).nan_to_num(0.0)


def concat_slip(**knobs):
    """The concat score with one of its knobs turned to a typical mistake."""
    return lambda *a: _concat(*a, **knobs)


def decode_slip(**knobs):
    """The reference decoding with one of its knobs turned to a typical mistake."""
    return lambda *a: _luong_decode(*a, **knobs)


def concat_keys_first(query, keys, w_a, b_a, v_a):
    """The halves swapped: the first d_hid columns taken for the keys'."""
    h = query.shape[-1]
    return torch.tanh((query @ w_a[:, h:].T)[:, :, None] + (keys @ w_a[:, :h].T + b_a)[:, None]) @ v_a


def concat_no_tanh(query, keys, w_a, b_a, v_a):
    h = query.shape[-1]
    return ((query @ w_a[:, :h].T)[:, :, None] + (keys @ w_a[:, h:].T + b_a)[:, None]) @ v_a


WRONG = {
    "concat_scores": [
        (concat_keys_first, "You swapped the halves"),
        (concat_slip(bias="twice"), "not on both"),
        (concat_slip(bias="none"), "nn.Linear(2 d_hid, A) has a bias"),
        (concat_slip(transpose=False), "`query @ w_a[:, :d_hid].T`"),
        (concat_no_tanh, "the tanh is missing"),
        (concat_slip(tanh="outside"), "not tanh(v_aᵀ ...)"),
        (concat_slip(pairs=False), "each query must meet every key"),
        (lambda *a: right_concat(*a).transpose(1, 2), "not its transpose"),
        (lambda *a: torch.softmax(right_concat(*a), dim=-1), "before the softmax"),
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
        (lm_clamped, "do not move its window back into the sentence"),
        (  # the window in the softmax, the padding zeroed after it
            lambda s, m, d, t: local_m(s, m, d, t, pad=False) * m[:, None, :],
            "does not sum to 1 along the last axis",
        ),
    ],
    "luong_decode": [
        (decode_slip(feed_with="zeros"), "yours stays at zero"),
        (decode_slip(feed_with="state"), "not the LSTM's own state h_t"),
        (decode_slip(feed_with="context"), "not the context c_t"),
        (decode_slip(first_feed="state"), "start from zeros"),
        (decode_slip(carry_state=False), "carry the LSTM's NEW (hidden, cell)"),
        (decode_slip(new_query=False), "Bahdanau's order"),
        (decode_slip(context_first=False), "context first"),
        (decode_slip(squash=False), "the tanh is missing"),
        (decode_slip(from_attentional=False), "never reaches the logits"),
        (decode_slip(masked=False), "the padding gets weight"),
        (decode_slip(layer=0), "TOP layer"),
        (decode_slip(stack_dim=0), "batch first"),
    ],
    "local_p_parameters": [
        (given(H_P * H_P + H_P), "also holds the scorer it uses inside its window"),
        (given(LOCAL_P - H_P * H_P), "has a matrix W_p before v_p"),
        (given(LOCAL_P - H_P), "one vector of d_hid numbers is missing"),
        (given(LOCAL_P + H_P), "neither W_p nor v_p has a bias"),
        (
            given(H_P * H_P + H_P + H_P * H_P),
            "a general scorer's d_hid x d_hid, or concat's nn.Linear(2 d_hid, d_hid) alone",
        ),
        (
            given(2 * H_P * H_P + H_P),
            "a general scorer's d_hid x d_hid, or concat's nn.Linear(2 d_hid, d_hid) alone",
        ),
        (given(LOCAL_P - H_P + H_P * H_P), "v_p is a vector"),
        (given(LOCAL_P + 2 * LOCAL_P_CONFIG["half_window"] + 1), "neither D nor sigma = D/2 is a parameter"),
        (given(LOCAL_P + 1), "sigma = D/2 is a fixed number"),
        (given(1234), "count every learned tensor"),
    ],
}


# ----------------------------------------------------------------------------- out of reach
def _concat_by_scorer(query, keys, w_a, b_a, v_a):
    """attnlib's concat scorer with the weights copied in (its width A is d_hid, as in case 1)."""
    with torch.random.fork_rng(devices=[]):  # its random init is overwritten
        scorer = attnlib.AttentionParams(query.shape[-1])
    with torch.no_grad():
        scorer.attn.weight.copy_(w_a)
        scorer.attn.bias.copy_(b_a)
        scorer.v.copy_(v_a)
    return scorer.score(query, keys)


def _concat_by_pairs(query, keys, w_a, b_a, v_a):
    """Every pair concatenated, as section 1 does: torch.cat, which the exercise forbids."""
    tq, ts = query.shape[1], keys.shape[1]
    pairs = torch.cat(
        (query[:, :, None].expand(-1, -1, ts, -1), keys[:, None].expand(-1, tq, -1, -1)), dim=-1
    )
    return torch.tanh(pairs @ w_a.T + b_a) @ v_a


def _local_m_by_module(scores, mask, half_window, step):
    local = attnlib.LocalAttention(1, half_window, mode="m", score="dot")
    return local.attend(scores[..., :1], scores.new_ones(scores.shape[0], scores.shape[-1], 1), mask, step)


OUT_OF_REACH = {
    "concat_scores": [
        (_concat_by_scorer, "calls attnlib's own `AttentionParams.score`"),
        (_concat_by_pairs, "calls `torch.cat`"),
    ],
    "local_m_weights": [(_local_m_by_module, "calls attnlib's own `LocalAttention.attend`")],
    "luong_decode": [
        (lambda d, y, h, c, enc, m: d(y, h, c, enc, m)[0], "calls attnlib's own `LuongDecoder.forward`"),
        (  # the module one step at a time
            lambda d, y, h, c, enc, m: torch.stack(
                [d(y[:, t], h, c, enc, m, step=t)[0] for t in range(y.shape[1])], dim=1
            ),
            "calls attnlib's own `LuongDecoder.forward`",
        ),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "concat_scores": [stub],
    "location_weights": [stub],
    "local_m_weights": [stub],
    "luong_decode": [stub],
    "local_p_parameters": [given(...)],
}
_RAISED = (crashes, "raised AttributeError", "args[0].no_such_attribute")
CRASHES = {
    "concat_scores": [_RAISED],
    "location_weights": [_RAISED],
    "local_m_weights": [_RAISED],
    "luong_decode": [(crashes, "no_such_attribute")],
}
