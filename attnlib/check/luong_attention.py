"""Exercise checks for notebook 09 (Luong attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Ts`` source length, ``Tq`` decoder steps scored at once, ``d_hid`` hidden size,
``L`` LSTM layers, ``V`` vocabulary, ``D`` half-window of local attention.

The references: the concat score of every concatenated pair (9.1), which
tests/check/test_luong_attention.py proves equal to ``AttentionParams.score``; ``LuongDecoder``'s own
forward pass over all teacher-forced steps (9.5); and ``LocalAttention``'s parameter count (9.4).
Local-m's window weighting, which ``LocalAttention.attend`` computes inline rather than as a
function, is written here from attnlib's pieces; tests/check/test_luong_attention.py proves it
agrees with the code that inlines it. attnlib has no location-based score (Luong et al., 2015,
§3.1): its reference is written here, from
``masked_softmax``. Inputs come from local ``torch.Generator`` s and modules are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import AttentionGeneral, AttentionParams, LuongDecoder, masked_softmax
from ..evaluation import count_parameters
from ..i18n import N_, fmt
from ..local_attention import LocalAttention
from ._core import (
    Case,
    Verdict,
    check_answer,
    generator,
    not_a_distribution,
    run_check,
    seeded,
    slips,
    whole_number,
)
from ._reach import own, torch_api
from .bahdanau_attention import STEP_HIDDEN, STEP_VOCAB, source_mask

__all__ = ["concat_scores", "local_m_weights", "local_p_parameters", "location_weights", "luong_decode"]

#: The hint of 9.2 and 9.3 for weights that are no distribution over the source, whatever the slip.
_NOT_A_DISTRIBUTION = not_a_distribution(
    "each step's weights over the source positions it sees sum to 1 (a step that sees none gets zeros)"
)


def _reference_concat(query, keys, w_a, b_a, v_a):
    """Luong's *concat* score, one (query, key) pair at a time: ``v_aᵀ tanh(W_a [h_t; h̄_s] + b_a)``,
    the concatenation built for every pair, as notebook 09's section 1 writes it."""
    tq, ts = query.shape[1], keys.shape[1]
    pairs = torch.cat(
        (query[:, :, None, :].expand(-1, -1, ts, -1), keys[:, None, :, :].expand(-1, tq, -1, -1)), dim=-1
    )  # (B, Tq, Ts, 2 d_hid): [h_t; h̄_s] for every pair
    return (
        torch.tanh(pairs @ w_a.T + b_a) @ v_a
    )  # (B, Tq, Ts, 2 d_hid) @ (2 d_hid, A) -> (B, Tq, Ts, A) -> (B, Tq, Ts)


def _concat(
    query,
    keys,
    w_a,
    b_a,
    v_a,
    *,
    halves="query first",
    bias="once",
    transpose=True,
    tanh="inside",
    pairs=True,
    order="steps first",
    softmax=False,
):
    """The concat score with the key half of W_a applied once, a knob per typical slip; defaults are right."""
    h = query.shape[-1]
    w_q, w_k = (
        (w_a[:, :h], w_a[:, h:]) if halves == "query first" else (w_a[:, h:], w_a[:, :h])
    )  # (A, d_hid) each
    if not transpose:
        w_q, w_k = w_q.T, w_k.T
    q = query @ w_q.T  # (B, Tq, d_hid) @ (d_hid, A) -> (B, Tq, A)
    k = keys @ w_k.T  # (B, Ts, d_hid) @ (d_hid, A) -> (B, Ts, A): once for every step
    if bias == "twice":
        q, k = q + b_a, k + b_a
    elif bias == "once":
        k = k + b_a
    energy = q[:, :, None, :] + k[:, None, :, :] if pairs else q + k  # (B, Tq, Ts, A)
    if tanh == "inside":
        scores = torch.tanh(energy) @ v_a  # (B, Tq, Ts, A) @ (A,) -> (B, Tq, Ts)
    else:
        scores = energy @ v_a if tanh == "none" else torch.tanh(energy @ v_a)
    if order != "steps first":
        scores = scores.transpose(1, 2)
    return torch.softmax(scores, dim=-1) if softmax else scores


def _concat_case(name: str, b: int, tq: int, ts: int, h: int, a: int, seed: int) -> Case:
    gen = generator(seed)
    shapes = [(b, tq, h), (b, ts, h), (a, 2 * h), (a,), (a,)]
    return Case(name, tuple(torch.randn(s, generator=gen) for s in shapes))


#: Out of reach while exercise 9.1 runs: attnlib's concat scorer, and the concatenation itself.
CONCAT_FORBIDDEN = (
    own(AttentionParams, "project_keys", "score_projected", what="AttentionParams.score"),
    torch_api(
        "torch.cat",
        (torch, "cat"),
        (torch, "concat"),
        (torch, "concatenate"),
        hint=N_(
            "split W_a's columns instead: W_a [h_t; h̄_s] = W_a[:, :d_hid] h_t + W_a[:, d_hid:] h̄_s, "
            "so that no pair is ever concatenated"
        ),
    ),
)


def concat_scores(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.1: ``student_fn(query, keys, w_a, b_a, v_a) -> scores (B, Tq, Ts)``.

    Luong's *concat* score ``v_aᵀ tanh(W_a [h_t; h̄_s])`` (Luong et al., 2015, §3.1), with attnlib's
    bias: ``query`` ``(B, Tq, d_hid)`` decoder states, ``keys`` ``(B, Ts, d_hid)`` encoder outputs, ``w_a``
    ``(A, 2 d_hid)`` and ``b_a`` ``(A,)`` the weight and bias of ``nn.Linear(2 d_hid, A)`` applied to
    ``[h_t; h̄_s]``, ``v_a`` ``(A,)``. The key half of ``W_a`` is applied to the keys once for all
    steps, and no pair is concatenated (``torch.cat`` is out of reach). Compared with the scores of
    every concatenated pair, as ``AttentionParams.score`` computes them.
    """
    cases = [
        _concat_case(N_("one decoder step: B=1, Tq=1, Ts=3, d_hid=A=2"), 1, 1, 3, 2, 2, seed=81),
        _concat_case(N_("every step at once: B=2, Tq=Ts=4, d_hid=A=3"), 2, 4, 4, 3, 3, seed=82),
        _concat_case(
            N_("B=2, Tq=3, Ts=5, d_hid=2, A=4 (W_a maps to A != d_hid features)"), 2, 3, 5, 2, 4, seed=83
        ),
        _concat_case(N_("a one-token source: B=3, Tq=2, Ts=1, d_hid=3, A=2"), 3, 2, 1, 3, 2, seed=84),
    ]
    table = [
        (
            N_(
                "W_a meets [h_t; h̄_s], the query first: its first d_hid columns multiply h_t and its last "
                "d_hid "
                "columns h̄_s. You swapped the halves"
            ),
            {"halves": "key first"},
        ),
        (
            N_(
                "the bias b_a is added once per pair: W_a [h_t; h̄_s] + b_a. Put it on one half only (the "
                "keys' half, computed once), not on both"
            ),
            {"bias": "twice"},
        ),
        (
            N_(
                "nn.Linear(2 d_hid, A) has a bias: W_a [h_t; h̄_s] + b_a. Add b_a once, to one of the two "
                "halves"
            ),
            {"bias": "none"},
        ),
        (
            N_(
                "w_a is an nn.Linear weight (A, 2 d_hid): its halves act as `query @ w_a[:, :d_hid].T` and "
                "`keys @ w_a[:, d_hid:].T`"
            ),
            {"transpose": False},
        ),
        (N_("the tanh is missing: v_aᵀ tanh(W_a [h_t; h̄_s] + b_a)"), {"tanh": "none"}),
        (
            "the tanh goes inside, before the dot product with v_a: v_aᵀ tanh(...), not tanh(v_aᵀ ...)",
            {"tanh": "outside"},
        ),
        (
            N_(
                "each query must meet every key: give the projected queries an axis for the keys and the "
                "projected keys one for the queries, (B, Tq, 1, A) + (B, 1, Ts, A) -> (B, Tq, Ts, A)"
            ),
            {"pairs": False},
        ),
        (
            N_("rows are decoder steps (queries), columns source positions: (B, Tq, Ts), not its transpose"),
            {"order": "positions first"},
        ),
        (N_("return the scores, before the softmax"), {"softmax": True}),
    ]
    return run_check(
        N_("Exercise 9.1 — Luong's concat score, the keys' half once"),
        student_fn,
        _reference_concat,
        cases,
        slips(_concat, table),
        forbidden=CONCAT_FORBIDDEN,
    )


def _location(
    query, w_a, mask, *, rows="first", transpose=True, masked=True, after=False, dim=-1, softmax=True
):
    """Luong's location-based weights (eq. 8) with a knob per typical slip; defaults are right."""
    ts = mask.shape[1]
    scores = query @ (w_a.T if transpose else w_a)  # (B, Tq, d_hid) @ (d_hid, S) -> (B, Tq, S)
    scores = {"first": scores[..., :ts], "last": scores[..., -ts:], "all": scores}[rows]  # (B, Tq, Ts)
    if not softmax:
        return scores
    visible = mask[:, None, :] if masked and not after and rows != "all" else None  # (B, 1, Ts)
    weights = masked_softmax(scores, visible) if dim == -1 else torch.softmax(scores, dim=dim)
    return weights * mask[:, None, :] if after else weights


def _reference_location(query: torch.Tensor, w_a: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    # a_t = softmax(W_a h_t) (Luong et al., 2015, eq. 8), keeping the first Ts rows of W_a
    # (their footnote 6) and leaving the padding out of the softmax.
    return _location(query, w_a, mask)


def _location_case(name: str, b: int, tq: int, h: int, rows: int, lengths: list[int], ts: int, seed: int):
    gen = generator(seed)
    query, w_a = torch.randn(b, tq, h, generator=gen), torch.randn(rows, h, generator=gen)
    return Case(name, (query, w_a, source_mask(lengths, ts)))


def location_weights(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.2: ``student_fn(query, w_a, mask) -> weights (B, Tq, Ts)``.

    Luong's *location-based* weights ``a_t = softmax(W_a h_t)`` (Luong et al., 2015, eq. 8): one
    score per source position from the decoder state alone. ``query`` ``(B, Tq, d_hid)``, ``w_a``
    ``(S, d_hid)`` the weight of ``nn.Linear(d_hid, S, bias=False)`` with ``S >= Ts`` (one row per source
    position; a source of ``Ts`` positions uses the first ``Ts`` rows), ``mask`` ``(B, Ts)`` True
    for real source tokens; padded positions get weight 0.
    """
    cases = [
        _location_case(N_("B=1, one step, S=Ts=d_hid=5 (no padding)"), 1, 1, 5, 5, [5], 5, seed=101),
        _location_case(
            N_("B=2, S=8 rows for a source of Ts=6, the second padded"), 2, 1, 4, 8, [6, 4], 6, seed=102
        ),
        _location_case(N_("B=2, three steps at once, S=d_hid=5 rows, Ts=4"), 2, 3, 5, 5, [4, 3], 4, seed=103),
    ]
    table = [
        (
            N_(
                "use the FIRST Ts rows of W_a, one per source position 0 .. Ts-1: `scores[..., :Ts]` "
                "(Luong et al.'s footnote 6: a short sentence uses the top part of a_t)"
            ),
            {"rows": "all"},
        ),
        (N_("position s is row s of W_a: keep the first Ts rows, not the last ones"), {"rows": "last"}),
        (N_("W_a is an nn.Linear weight (S, d_hid): W_a h_t is `query @ w_a.T`"), {"transpose": False}),
        (N_("return the weights: softmax over the source positions"), {"softmax": False}),
        (
            N_(
                "padded positions got weight: leave them out of the softmax (masked_fill with -inf where "
                "mask is False, or attnlib.masked_softmax)"
            ),
            {"masked": False},
        ),
        (
            N_(
                "zeroing the padding after the softmax leaves weights that sum to less than 1: mask the "
                "scores *before* the softmax"
            ),
            {"after": True},
        ),
        (
            N_("the softmax runs over the source positions (the last axis), not over the decoder steps"),
            {"dim": 1},
        ),
    ]
    return run_check(
        N_("Exercise 9.2 — Luong's location-based weights"),
        student_fn,
        _reference_location,
        cases,
        [*slips(_location, table), _NOT_A_DISTRIBUTION],
    )


def _local_m(
    scores,
    mask,
    half_window,
    step,
    *,
    offset=0,
    use_step=True,
    strict=False,
    before=True,
    pad=True,
    gaussian=False,
    empty_rows_zero=True,
    clamp=False,
):
    """Local-m weights with a knob per typical slip; all knobs at their default give attnlib's."""
    tq, ts = scores.shape[1], scores.shape[2]
    positions = torch.arange(ts)  # (Ts,)
    centres = (step if use_step else 0) + offset + torch.arange(tq)  # (Tq,): p_t = t
    if clamp:
        centres = centres.clamp(max=ts - 1)
    distance = (positions[None, :] - centres[:, None]).abs()  # (Tq, Ts)
    in_window = distance < half_window if strict else distance <= half_window  # (Tq, Ts)
    keep = mask[:, None, :] if pad else torch.ones_like(mask)[:, None, :]  # (B, 1, Ts)
    if before:
        keep = keep & in_window  # (B, Tq, Ts)
    if empty_rows_zero:
        weights = masked_softmax(scores, keep)
    else:
        weights = torch.softmax(
            scores.masked_fill(~keep, float("-inf")), dim=-1
        )  # NaN where nothing is visible
    if not before:
        weights = weights * in_window
    if gaussian:
        sigma = half_window / 2
        weights = weights * torch.exp(-((positions[None, :] - centres[:, None]) ** 2) / (2 * sigma**2))
    return weights


def _reference_local_m(scores: torch.Tensor, mask: torch.Tensor, half_window: int, step: int) -> torch.Tensor:
    # LocalAttention.attend for mode "m", with the scores given: step i of the call is output step
    # t = step + i, centred on p_t = t; softmax over |s - t| <= D and the real tokens.
    return _local_m(scores, mask, half_window, step)


def _local_m_case(
    name: str, b: int, tq: int, lengths: list[int], ts: int, d: int, step: int, seed: int
) -> Case:
    gen = generator(seed)
    return Case(name, (torch.randn(b, tq, ts, generator=gen), source_mask(lengths, ts), d, step))


def local_m_weights(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.3: ``student_fn(scores, mask, half_window, step) -> weights (B, Tq, Ts)``.

    Local-m (Luong et al., 2015, §3.2): the ``Tq`` rows of ``scores`` ``(B, Tq, Ts)`` are the output
    steps ``t = step, step + 1, ...``; step ``t`` sees the positions ``s`` with ``|s - t| <= D``
    (``D = half_window``) that are real tokens (``mask`` ``(B, Ts)``), with softmax weights over
    those alone (eq. 7 inside the window), 0 elsewhere; a step that sees nothing gets all zeros.
    As ``LocalAttention(mode="m")`` computes it.
    """
    cases = [
        _local_m_case(N_("one step t=3 of a source of 9, D=2"), 1, 1, [9], 9, 2, step=3, seed=111),
        _local_m_case(
            N_("steps 0 to 3 at once: the window is cut at position 0"), 1, 4, [8], 8, 2, step=0, seed=112
        ),
        _local_m_case(
            N_("B=2, steps 2 to 5, the second source padded (5 of 8 real)"),
            2,
            4,
            [8, 5],
            8,
            1,
            step=2,
            seed=113,
        ),
        _local_m_case(
            N_("B=2, steps 5 to 8, D=1: the short source (4 real) ends before some windows"),
            2,
            4,
            [9, 4],
            9,
            1,
            step=5,
            seed=114,
        ),
        _local_m_case(
            N_("steps 5 to 8 of a source of 5, D=1: steps 6 to 8 are past its end and see nothing"),
            1,
            4,
            [5],
            5,
            1,
            step=5,
            seed=115,
        ),
    ]
    table = [
        (
            N_("row i of scores is output step t = step + i: centre its window on step + i, not on i"),
            {"use_step": False},
        ),
        (
            N_("steps count from 0: the first row is step t = `step`, centred on s = step, not step + 1"),
            {"offset": 1},
        ),
        (N_("the window holds 2D + 1 positions: |s - t| <= D, the ends included"), {"strict": True}),
        (
            N_(
                "zeroing the positions outside the window after a softmax over the whole source leaves "
                "weights that sum to less than 1: local-m is eq. 7 *inside* the window, so leave the other "
                "positions out of the softmax"
            ),
            {"before": False},
        ),
        (
            N_("padded positions got weight: the window must also leave out the padding (`mask`)"),
            {"pad": False},
        ),
        (
            N_(
                "local-m has no Gaussian: that is local-p's, which needs it to train its predicted p_t "
                "(local-m's p_t = t is fixed)"
            ),
            {"gaussian": True},
        ),
        (
            N_(
                "a window that lies wholly on padding leaves no visible position, and softmax over all -inf "
                "is NaN: give such rows zero weights (attnlib.masked_softmax does, as does torch's fused "
                "kernel)"
            ),
            {"empty_rows_zero": False},
        ),
        (
            N_(
                "p_t = t even past the end of the source: a step whose window holds no position of the "
                "source sees nothing and gets zero weights; do not move its window back into the sentence"
            ),
            {"clamp": True},
        ),
    ]
    return run_check(
        N_("Exercise 9.3 — local-m: the window around p_t = t"),
        student_fn,
        _reference_local_m,
        cases,
        [*slips(_local_m, table), _NOT_A_DISTRIBUTION],
        forbidden=[own(LocalAttention, "attend", what="LocalAttention.attend")],
    )


#: Exercise 9.4's module: local-p with a concat score inside its window.
LOCAL_P_CONFIG = {"hidden_size": 32, "half_window": 5, "mode": "p", "score": "concat"}


def _local_p_hints() -> dict[int, str]:
    """Exercise 9.4's hints, by the wrong count each slip gives."""
    h, d = LOCAL_P_CONFIG["hidden_size"], LOCAL_P_CONFIG["half_window"]
    predictor = h * h + h  # W_p (d_hid x d_hid) and v_p (d_hid): p_t = S sigmoid(v_pᵀ tanh(W_p h_t))
    concat = 2 * h * h + h + h  # nn.Linear(2 d_hid, d_hid) with its bias, and v
    right = predictor + concat
    return {
        predictor: N_(
            "local-p also holds the scorer it uses inside its window: here concat, an "
            "nn.Linear(2 d_hid, d_hid) with its bias, and the vector v"
        ),
        right - h * h: N_(
            "p_t = S sigmoid(v_pᵀ tanh(W_p h_t)) has a matrix W_p before v_p: d_hid x d_hid more"
        ),
        right - h: N_(
            "one vector of d_hid numbers is missing: count v_p, the bias of concat's "
            "nn.Linear(2 d_hid, d_hid) and concat's v, d_hid numbers each"
        ),
        right + h: N_(
            "one vector of d_hid numbers too many: neither W_p nor v_p has a bias (local-p's p_t has "
            "none, in Luong's formula or in attnlib)"
        ),
        predictor + h * h: N_(
            "that is W_p, v_p and a general scorer's d_hid x d_hid, or concat's nn.Linear(2 d_hid, d_hid) "
            "alone: local-p holds p_t's W_p and v_p AND, with score='concat', the concat scorer "
            "(nn.Linear(2 d_hid, d_hid) with its bias, and v)"
        ),
        right - h + h * h: N_(
            "v_p is a vector: v_pᵀ tanh(W_p h_t) is one number per step, so v_p has d_hid "
            "entries, not d_hid x d_hid"
        ),
        right + 2 * d + 1: fmt(
            "the window of 2D+1 = {size} positions is fixed by the half-window D={d}, a number you "
            "choose: neither D nor sigma = D/2 is a parameter",
            size=2 * d + 1,
            d=d,
        ),
        right + 1: N_("sigma = D/2 is a fixed number, not a parameter; nor is S, the source length"),
    }


def local_p_parameters(n_parameters: Any) -> Verdict:
    """Exercise 9.4 (prediction): the number of parameters of
    ``LocalAttention(32, half_window=5, mode="p", score="concat")``: local-p's ``W_p`` ``(d_hid, d_hid)`` and
    ``v_p`` ``(d_hid,)``, neither with a bias, plus its concat scorer, ``AttentionParams(32)``.
    """
    with torch.random.fork_rng(devices=[]):  # a few kilobytes; the global seed is not touched
        expected = count_parameters(LocalAttention(**LOCAL_P_CONFIG))
    generic = N_(
        "count every learned tensor: W_p (d_hid x d_hid) and v_p (d_hid) of p_t, then the concat "
        "scorer's nn.Linear(2 d_hid, d_hid) with its bias, and its v"
    )
    hint = _local_p_hints().get(whole_number(n_parameters), generic)
    return check_answer(N_("Exercise 9.4 — parameters of local-p"), n_parameters, expected, hint)


def _luong_decode(
    decoder,
    targets,
    hidden,
    cell,
    encoder_outputs,
    mask,
    *,
    feed_with="attentional",
    first_feed="zeros",
    new_query=True,
    context_first=True,
    squash=True,
    from_attentional=True,
    masked=True,
    layer=-1,
    carry_state=True,
    stack_dim=1,
):
    """All teacher-forced steps of a :class:`LuongDecoder` with input feeding, from its parts, each
    typical slip a knob; all knobs at their default give what the module computes."""
    b, h = targets.shape[0], decoder.hidden_size
    feed = encoder_outputs.new_zeros(b, h) if first_feed == "zeros" else hidden[-1]  # h~_{-1}: (B, d_hid)
    state = (hidden, cell)
    all_logits = []
    for t in range(targets.shape[1]):
        rnn_input = torch.cat(
            (decoder.embedding(targets[:, t]), feed), dim=1
        )  # (B, 2 d_hid): [y_{t-1}; h~_{t-1}]
        outputs, new_state = decoder.rnn(rnn_input.unsqueeze(1), state)  # (B, 1, d_hid)
        query = (new_state[0] if new_query else state[0])[layer].unsqueeze(1)  # (B, 1, d_hid)
        scores = decoder.attention.score(query, encoder_outputs)  # (B, 1, Ts)
        weights = masked_softmax(scores, mask[:, None, :] if masked else None)  # (B, 1, Ts)
        context = torch.bmm(weights, encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, d_hid) -> (B, d_hid)
        h_t = outputs.squeeze(1)  # (B, d_hid): the top layer's new state
        pair = (context, h_t) if context_first else (h_t, context)
        attentional = decoder.W_c(torch.cat(pair, dim=1))  # (B, 2 d_hid) -> (B, d_hid)
        attentional = torch.tanh(attentional) if squash else attentional  # h~_t
        all_logits.append(decoder.fc(attentional if from_attentional else h_t))  # (B, V)
        feed = {"attentional": attentional, "state": h_t, "context": context, "zeros": feed}[feed_with]
        if carry_state:
            state = new_state
    return torch.stack(all_logits, dim=stack_dim)  # T x (B, V) -> (B, T, V)


def _reference_luong_decode(decoder, targets, hidden, cell, encoder_outputs, mask):
    with torch.no_grad():
        logits, _, _ = decoder(targets, hidden, cell, encoder_outputs, mask)  # (B, T): all steps at once
    return logits  # (B, T, V)


def _decode_case(name: str, lengths: list[int], ts: int, steps: int, layers: int, seed: int) -> Case:
    """``(decoder, targets, hidden, cell, encoder_outputs, mask)``: a LuongDecoder with input feeding and
    a general score, ``steps`` teacher-forced input tokens per row."""
    v, h, b = STEP_VOCAB, STEP_HIDDEN, len(lengths)
    with seeded(seed):
        decoder = LuongDecoder(v, h, layers, AttentionGeneral(h))  # input_feeding=True, the default
    gen = generator(seed)
    targets = torch.randint(3, v, (b, steps), generator=gen)  # (B, T): y_{t-1} for t = 0 .. T-1
    hidden, cell = torch.randn(layers, b, h, generator=gen), torch.randn(layers, b, h, generator=gen)
    encoder_outputs = torch.randn(b, ts, h, generator=gen)  # (B, Ts, d_hid)
    return Case(name, (decoder, targets, hidden, cell, encoder_outputs, source_mask(lengths, ts)))


def luong_decode(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.5: ``student_fn(decoder, targets, hidden, cell, encoder_outputs, mask) -> logits
    (B, T, V)``: every teacher-forced step of ``decoder``, a :class:`LuongDecoder` with input feeding
    (Luong et al., 2015, §3.3), from its parts: the attentional state ``h̃_t`` of each step joins the
    embedded token of the next, starting from ``h̃_{-1} = 0``.

    ``targets`` ``(B, T)`` the input tokens, ``hidden`` and ``cell`` ``(L, B, d_hid)``, ``encoder_outputs``
    ``(B, Ts, d_hid)``, ``mask`` ``(B, Ts)`` True for real source tokens. Compared with the module's own
    ``decoder(targets, hidden, cell, encoder_outputs, mask)``.
    """
    cases = [
        _decode_case(N_("one step, T=1: B=2, no padding"), [5, 5], 5, steps=1, layers=1, seed=91),
        _decode_case(N_("T=3 steps: B=2, no padding"), [5, 5], 5, steps=3, layers=1, seed=92),
        _decode_case(N_("T=4 steps: B=2, the second source padded (2 of 5 real)"), [5, 2], 5, 4, 1, seed=93),
        _decode_case(N_("T=3 steps: B=2, two LSTM layers, padded sources"), [6, 3], 6, 3, layers=2, seed=94),
    ]
    table = [
        (
            N_(
                "input feeding: after each step, `feed` becomes that step's attentional state h̃_t, which the "
                "next step reads with its token; yours stays at zero"
            ),
            {"feed_with": "zeros"},
        ),
        (
            N_(
                "feed the attentional state h̃_t = tanh(W_c[c_t; h_t]) into the next step, not the LSTM's "
                "own state h_t (the LSTM has that already, in `hidden`)"
            ),
            {"feed_with": "state"},
        ),
        (
            N_(
                "feed the attentional state h̃_t = tanh(W_c[c_t; h_t]) into the next step, not the context c_t"
            ),
            {"feed_with": "context"},
        ),
        (
            N_(
                "before the first step there is no h̃ yet: start from zeros, h̃_{-1} = 0, as LuongDecoder does "
                "(not from the encoder's state hidden[-1])"
            ),
            {"first_feed": "state"},
        ),
        (
            N_(
                "carry the LSTM's NEW (hidden, cell) into the next step; yours starts every step from the "
                "states that came in"
            ),
            {"carry_state": False},
        ),
        (
            N_(
                "that is Bahdanau's order: the query must be the NEW top-layer state h_t, from the LSTM step "
                "you just ran, not the state that came in"
            ),
            {"new_query": False},
        ),
        (
            N_("W_c was built for [c_t; h_t], context first: torch.cat((context, h_t), dim=1)"),
            {"context_first": False},
        ),
        (N_("the attentional state is tanh(W_c [c_t; h_t]): the tanh is missing"), {"squash": False}),
        (
            N_(
                "predict from the attentional state h̃_t = tanh(W_c[c_t; h_t]), not from h_t: otherwise the "
                "context never reaches the logits"
            ),
            {"from_attentional": False},
        ),
        (
            N_(
                "the padding gets weight: mask the scores before the softmax (attnlib.masked_softmax, or "
                "masked_fill with -inf where mask is False)"
            ),
            {"masked": False},
        ),
        (
            N_("with two LSTM layers the query is the TOP layer's state, hidden[-1], not hidden[0]"),
            {"layer": 0},
        ),
        (N_("stack the steps' logits along dim=1: (B, T, V), batch first"), {"stack_dim": 0}),
    ]
    return run_check(
        N_("Exercise 9.5 — Luong's decoder with input feeding, every step"),
        student_fn,
        _reference_luong_decode,
        cases,
        slips(_luong_decode, table),
        forbidden=[
            own(LuongDecoder, "forward", "_forward_sequence", "_attentional", what="LuongDecoder.forward")
        ],
    )
