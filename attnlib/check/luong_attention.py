"""Exercise checks for notebook 09 (Luong attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Ts`` source length, ``Tq`` decoder steps scored at once, ``H`` hidden size,
``L`` LSTM layers, ``V`` vocabulary, ``D`` half-window of local attention.

The references are attnlib's own code: ``AttentionGeneral.score``, ``LocalAttention``'s predicted
positions, ``LuongDecoder`` and :func:`attnlib.scorers.make_attention`. The local-p window
weighting, which ``LocalAttention.attend`` computes inline rather than as a function, is written
here from attnlib's pieces; tests/test_checks_luong_attention.py proves it agrees with the code
that inlines it. Inputs come from local ``torch.Generator`` s and modules are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import AttentionGeneral, LocalAttention, LuongDecoder, make_attention, masked_softmax
from ..evaluation import count_parameters
from ..scorers import SCORERS
from ._core import (
    FAIL,
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    predictions_not_yet,
    run_check,
    run_check_parts,
    seeded,
    slips,
    whole_number,
)
from .bahdanau_attention import STEP_HIDDEN, decoder_case, source_mask

__all__ = ["general_scores", "local_p_position", "local_p_weights", "luong_step", "scorer_parameters"]


def _reference_general(query: torch.Tensor, keys: torch.Tensor, w_a: torch.Tensor) -> torch.Tensor:
    with seeded(0):
        attention = AttentionGeneral(keys.shape[-1])
    with torch.no_grad():
        attention.W_a.weight.copy_(w_a)
        return attention.score(query, keys)  # (B, Tq, Ts)


def _general_case(name: str, b: int, tq: int, ts: int, h: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(b, tq, h), (b, ts, h), (h, h)]
    return Case(name, tuple(torch.randn(s, generator=gen) for s in shapes))


def general_scores(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.1: ``student_fn(query, keys, w_a) -> scores (B, Tq, Ts)``.

    Luong's *general* score ``h_tᵀ W_a h_s`` of every decoder state (``query`` ``(B, Tq, H)``)
    with every encoder output (``keys`` ``(B, Ts, H)``); ``w_a`` ``(H, H)`` is the weight of
    ``nn.Linear(H, H, bias=False)``, so ``W_a h_s`` is ``keys @ w_a.T``. As
    ``AttentionGeneral.score`` computes it.
    """
    cases = [
        _general_case("one decoder step: B=2, Tq=1, Ts=5, H=4", 2, 1, 5, 4, seed=81),
        _general_case("B=1, Tq=Ts=3, H=2", 1, 3, 3, 2, seed=82),
        _general_case("B=2, Tq=4, Ts=6, H=3", 2, 4, 6, 3, seed=83),
    ]

    def bilinear(q, k, w):
        return q @ w @ k.transpose(1, 2)  # (B, Tq, H) @ (H, H) @ (B, H, Ts) -> (B, Tq, Ts)

    mistakes = [
        Mistake(
            "W_a is transposed: h_tᵀ W_a h_s is `query @ w_a @ keys.transpose(1, 2)` (with nn.Linear, "
            "W_a h_s is `keys @ w_a.T`)",
            lambda q, k, w: bilinear(q, k, w.T),
        ),
        Mistake(
            "that is Luong's *dot* score: *general* puts the learned matrix W_a between h_t and h_s",
            lambda q, k, w: q @ k.transpose(1, 2),
        ),
        Mistake(
            "the general score has no 1/sqrt(H) scaling (that is scaled_dot's)",
            lambda q, k, w: bilinear(q, k, w) / q.shape[-1] ** 0.5,
        ),
        Mistake(
            "return the scores, before the softmax",
            lambda q, k, w: torch.softmax(bilinear(q, k, w), dim=-1),
        ),
        Mistake(
            "rows are decoder steps (queries), columns source positions: (B, Tq, Ts), not its transpose",
            lambda q, k, w: bilinear(q, k, w).transpose(1, 2),
        ),
    ]
    return run_check("Exercise 9.1 — Luong's general score", student_fn, _reference_general, cases, mistakes)


def _reference_position(query: torch.Tensor, w_p: torch.Tensor, v_p: torch.Tensor, mask: torch.Tensor):
    h = query.shape[-1]
    with seeded(0):  # p_t does not depend on the window: any D that fits the source will do
        local = LocalAttention(h, min(1, (mask.shape[1] - 1) // 2), mode="p")
    with torch.no_grad():
        local.W_p.weight.copy_(w_p)
        local.v_p.weight.copy_(v_p[None, :])  # (1, H): nn.Linear(H, 1)
        local.attend(query, torch.zeros(*mask.shape, h), mask)  # the keys do not matter for p_t
    return local.last_positions  # (B, Tq)


def _position(query, w_p, v_p, mask, *, length=None, transpose=False, tanh=True, sigmoid=True):
    s = mask.sum(dim=1) if length is None else length(mask)  # (B,)
    gate = (torch.tanh if tanh else (lambda t: t))(query @ (w_p if transpose else w_p.T)) @ v_p  # (B, Tq)
    return s[:, None] * (torch.sigmoid(gate) if sigmoid else gate)  # (B, Tq)


def _position_case(name: str, b: int, tq: int, h: int, lengths: list[int], ts: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    query = torch.randn(b, tq, h, generator=gen)
    w_p, v_p = torch.randn(h, h, generator=gen), torch.randn(h, generator=gen) * 2
    return Case(name, (query, w_p, v_p, source_mask(lengths, ts)))


def local_p_position(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.2: ``student_fn(query, w_p, v_p, mask) -> p (B, Tq)``.

    Local-p's predicted source position ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` for each
    decoder state of ``query`` ``(B, Tq, H)``; ``w_p`` ``(H, H)`` is an ``nn.Linear`` weight
    (``W_p h_t`` is ``query @ w_p.T``), ``v_p`` ``(H,)``, ``mask`` ``(B, Ts)`` True for real source
    tokens, and ``S`` each source's real length. As ``LocalAttention(mode="p")`` computes it.
    """
    cases = [
        _position_case("B=1, one step, a source of 7 (no padding)", 1, 1, 4, [7], 7, seed=84),
        _position_case("B=2, the second source padded (4 of 8 real)", 2, 1, 4, [8, 4], 8, seed=85),
        _position_case("B=2, three steps at once, H=5", 2, 3, 5, [6, 9], 9, seed=86),
    ]
    mistakes = [
        Mistake(
            "S is each source's *real* length, `mask.sum(dim=1)`, not the padded length Ts: p_t must "
            "land inside the real sentence",
            lambda q, w, v, m: _position(
                q, w, v, m, length=lambda mm: torch.full((mm.shape[0],), mm.shape[1])
            ),
        ),
        Mistake(
            "W_p is an nn.Linear weight (out, in): W_p h_t is `query @ w_p.T`",
            lambda q, w, v, m: _position(q, w, v, m, transpose=True),
        ),
        Mistake(
            "Luong (and attnlib) scale by S itself, not S - 1",
            lambda q, w, v, m: _position(q, w, v, m, length=lambda mm: mm.sum(dim=1) - 1),
        ),
        Mistake(
            "the tanh is missing: v_pᵀ tanh(W_p h_t)",
            lambda q, w, v, m: _position(q, w, v, m, tanh=False),
        ),
        Mistake(
            "the sigmoid is missing: it squeezes the gate into (0, 1), so that p_t lies in (0, S)",
            lambda q, w, v, m: _position(q, w, v, m, sigmoid=False),
        ),
        Mistake(
            "keep p_t real-valued: the window is centred on round(p_t), but the Gaussian of exercise 9.3 "
            "uses p_t itself (and a rounded p_t would pass no gradient to W_p and v_p)",
            lambda q, w, v, m: _position(q, w, v, m).round(),
        ),
        Mistake(
            "S has shape (B,): to scale each source's row of p, give it a trailing axis, "
            "`mask.sum(dim=1, keepdim=True)` (B, 1); (B, Tq) * (B,) multiplies the wrong way",
            lambda q, w, v, m: torch.sigmoid(torch.tanh(q @ w.T) @ v) * m.sum(dim=1),
        ),
        Mistake(
            "return (B, Tq): squeeze the last axis of the gate, e.g. `.squeeze(-1)`",
            lambda q, w, v, m: _position(q, w, v, m)[..., None],
        ),
    ]
    return run_check(
        "Exercise 9.2 — local-p: the predicted position", student_fn, _reference_position, cases, mistakes
    )


def _local_p(
    scores,
    p,
    mask,
    half_window,
    *,
    sigma=None,
    window=True,
    renormalise_window=True,
    centre=None,
    factor=2.0,
    gaussian=True,
    renormalise=False,
    pad=True,
    strict=False,
):
    """Local-p weights with knobs for the typical slips; all knobs at their default give attnlib's."""
    ts = scores.shape[-1]
    positions = torch.arange(ts, dtype=scores.dtype)  # (Ts,)
    centre = p.round() if centre is None else centre(p)  # (B, Tq)
    offset = (positions[None, None, :] - centre[:, :, None]).abs()  # (B, Tq, Ts)
    in_window = offset < half_window if strict else offset <= half_window
    visible = mask[:, None, :] if pad else torch.ones_like(in_window)  # (B, 1, Ts)
    if window and renormalise_window:
        visible = visible & in_window
    weights = masked_softmax(scores, visible)  # (B, Tq, Ts)
    if window and not renormalise_window:
        weights = weights * in_window
    if gaussian:
        sigma = half_window / 2 if sigma is None else sigma
        distance = positions[None, None, :] - p[:, :, None]  # (B, Tq, Ts)
        weights = weights * torch.exp(-(distance**2) / (factor * sigma**2))
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights


def _reference_local_p(scores: torch.Tensor, p: torch.Tensor, mask: torch.Tensor, half_window: int):
    # LocalAttention.attend for mode "p", with the scores and p_t given: softmax inside the window
    # [round(p_t) - D, round(p_t) + D] and the real tokens, times exp(-(s - p_t)² / (2σ²)), σ = D/2.
    return _local_p(scores, p, mask, half_window)


def _local_case(name: str, p: list[list[float]], lengths: list[int], ts: int, d: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(len(p), len(p[0]), ts, generator=gen)
    return Case(name, (scores, torch.tensor(p), source_mask(lengths, ts), d))


def local_p_weights(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.3: ``student_fn(scores, p, mask, half_window) -> weights (B, Tq, Ts)``.

    ``scores`` ``(B, Tq, Ts)``, ``p`` ``(B, Tq)`` real-valued predicted positions, ``mask``
    ``(B, Ts)`` True for real source tokens, ``half_window`` ``D``. Softmax over the positions
    ``s`` with ``|s - round(p_t)| <= D`` that are real tokens (zero elsewhere), then times
    ``exp(-(s - p_t)² / (2σ²))`` with ``σ = D / 2``. As ``LocalAttention(mode="p")`` computes it.
    """
    cases = [
        _local_case("one step, p=4.3, D=2, Ts=9", [[4.3]], [9], 9, 2, seed=87),
        _local_case("p=0.8 near the start: the window is cut at 0", [[0.8]], [7], 7, 2, seed=88),
        _local_case(
            "B=2, three steps, the second source padded",
            [[1.2, 3.7, 5.6], [0.4, 2.6, 4.9]],
            [8, 5],
            8,
            2,
            seed=89,
        ),
        _local_case("D=1: windows of 3 positions", [[2.7, 6.2]], [10], 10, 1, seed=90),
        _local_case("D=3, p=6.6 near the end of a padded source", [[6.6], [3.2]], [8, 6], 9, 3, seed=91),
    ]
    table = [  # (hint, the knobs of _local_p that make the slip)
        (
            "positions outside the window [round(p_t) - D, round(p_t) + D] must get weight 0: leave them "
            "out of the softmax, together with the padding",
            {"window": False},
        ),
        (
            "zeroing the positions outside the window after the softmax leaves weights that sum to less "
            "than 1 before the Gaussian: mask them *before* the softmax",
            {"renormalise_window": False},
        ),
    ]
    after_sigma = [
        ("the exponent is -(s - p_t)² / (2 sigma²): the factor 2 is missing", {"factor": 1.0}),
    ]
    later = [
        (
            "multiply the window's softmax weights by the Gaussian exp(-(s - p_t)² / (2 sigma²))",
            {"gaussian": False},
        ),
        (
            "do not renormalise after the Gaussian: local-p's weights sum to less than 1, which is what "
            "favours positions near p_t",
            {"renormalise": True},
        ),
        (
            "padded positions got weight: the window must also leave out the padding (`mask`)",
            {"pad": False},
        ),
        ("centre the window on round(p_t), not on its integer part (floor)", {"centre": torch.floor}),
        ("the window holds 2D + 1 positions: |s - round(p_t)| <= D, the ends included", {"strict": True}),
    ]
    mistakes = [
        *slips(_local_p, table),
        Mistake(
            "sigma = D / 2 (Luong et al.): with sigma = D the Gaussian is twice as wide",
            lambda *a: _local_p(*a, sigma=a[3]),
        ),
        *slips(_local_p, after_sigma),
        Mistake(
            "the Gaussian is centred on the real-valued p_t; only the window is centred on round(p_t)",
            _gaussian_at_round,
        ),
        *slips(_local_p, later),
    ]
    return run_check(
        "Exercise 9.3 — local-p: window and Gaussian", student_fn, _reference_local_p, cases, mistakes
    )


def _gaussian_at_round(scores, p, mask, half_window):
    weights = _local_p(scores, p, mask, half_window, gaussian=False)
    positions = torch.arange(scores.shape[-1], dtype=scores.dtype)
    distance = positions[None, None, :] - p.round()[:, :, None]
    return weights * torch.exp(-(distance**2) / (2 * (half_window / 2) ** 2))


#: Hidden size of exercise 9.4.
SCORER_HIDDEN = 64


def _scorer_parameter_counts() -> dict[str, int]:
    with seeded(0):
        return {name: count_parameters(make_attention(name, SCORER_HIDDEN)) for name in SCORERS}


def _names_hint(names: set[str], expected: set[str]) -> str:
    h = SCORER_HIDDEN
    why = {
        "general": f"general has its matrix W_a ({h} x {h})",
        "concat": "concat (Bahdanau's additive score) has W, b and v",
        "local-m": "local-m restricts a *general* scorer to a window (attnlib's default), so it has W_a",
        "local-p": "local-p has W_p and v_p to predict p_t, plus the W_a of its general scorer",
        "dot": "dot is h_tᵀ h_s: nothing in it is learned",
        "scaled_dot": "scaled_dot divides by sqrt(H), a fixed number (a buffer in attnlib), not a parameter",
    }
    unknown = sorted(names - set(SCORERS))
    if unknown:
        return f"unknown name(s) {unknown}: use the names of attnlib.scorers.SCORERS, {list(SCORERS)}"
    wrong = sorted(names - expected) + sorted(expected - names)
    return "; ".join(why[n] for n in wrong)


def _concat_hint(answer: Any) -> str:
    h = SCORER_HIDDEN
    hints = {
        2 * h * h + h: "2H x H + H counts W and only one of the two H-sized pieces: attnlib's concat "
        "(AttentionParams) has both the bias b of nn.Linear(2H, H) and the vector v",
        2 * h * h: "nn.Linear(2H, H) has a bias b (H numbers), and there is v (H numbers)",
        2 * h * h + 2 * h * h: "W maps the 2H-wide [h_t; h_s] to H outputs: 2H x H weights, not 2H x 2H",
        h * h + 2 * h: "W acts on the concatenation [h_t; h_s], 2H inputs: 2H x H weights",
        h * h + h: "W acts on the concatenation [h_t; h_s], 2H inputs; and count the bias b and v",
    }
    generic = "concat = nn.Linear(2H, H) (weights and bias) plus the vector v of H numbers"
    return hints.get(whole_number(answer), generic)


def scorer_parameters(parameter_free: Any, concat_parameters: Any) -> Verdict:
    """Exercise 9.4 (prediction): which of ``attnlib.scorers.SCORERS`` have no parameters (a list
    of names), and how many parameters ``make_attention("concat", 64)`` has.
    """
    title = "Exercise 9.4 — which scorers learn?"
    if parameter_free is ... or concat_parameters is ...:
        return predictions_not_yet(title)
    counts = _scorer_parameter_counts()
    expected_names = sorted(n for n in SCORERS if counts[n] == 0)
    parts = []
    if isinstance(parameter_free, str) or not isinstance(parameter_free, (list, tuple, set)):
        parts.append(
            Verdict(
                False,
                f"{FAIL} parameter-free scorers: you answered {parameter_free!r}.\n"
                "   hint: answer with a list of names, e.g. ['dot', 'general']",
            )
        )
    else:
        names = {str(n).strip().lower() for n in parameter_free}
        if names == set(expected_names):
            parts.append(Verdict(True, ""))
        else:
            parts.append(
                Verdict(
                    False,
                    f"{FAIL} parameter-free scorers: you named {sorted(names)}; that is not it.\n"
                    f"   hint: {_names_hint(names, set(expected_names))}",
                )
            )
    parts.append(
        check_answer(
            "parameters of concat", concat_parameters, counts["concat"], _concat_hint(concat_parameters)
        )
    )
    return combined(
        title,
        parts,
        f"right, {expected_names} have no parameters and concat has {counts['concat']} "
        f"for H={SCORER_HIDDEN}.",
    )


def _luong_step(
    decoder,
    x,
    hidden,
    cell,
    encoder_outputs,
    mask,
    feed,
    *,
    new_query=True,
    feeding=True,
    context_first=True,
    squash=True,
    from_attentional=True,
    layer=-1,
):
    """One step of a :class:`LuongDecoder` from its parts, each typical slip a knob."""
    rnn_input = decoder.embedding(x)  # (B,) -> (B, H)
    rnn_input = torch.cat((rnn_input, feed if feeding else torch.zeros_like(feed)), dim=1)  # (B, 2H)
    outputs, (new_hidden, new_cell) = decoder.rnn(rnn_input.unsqueeze(1), (hidden, cell))  # (B, 1, H)
    query = (new_hidden if new_query else hidden)[layer].unsqueeze(1)  # (B, 1, H)
    scores = decoder.attention.score(query, encoder_outputs)  # (B, 1, Ts)
    weights = masked_softmax(scores, None if mask is None else mask[:, None, :])  # (B, 1, Ts)
    context = torch.bmm(weights, encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, H) -> (B, H)
    h_t = outputs.squeeze(1)  # (B, H): the top layer's new state
    pair = (context, h_t) if context_first else (h_t, context)
    attentional = decoder.W_c(torch.cat(pair, dim=1))  # (B, 2H) -> (B, H)
    attentional = torch.tanh(attentional) if squash else attentional
    logits = decoder.fc(attentional if from_attentional else h_t)  # (B, V)
    return logits, new_hidden, new_cell, attentional


def _reference_luong_step(decoder, x, hidden, cell, encoder_outputs, mask, feed):
    decoder._feed = feed  # h~_{t-1}; a step other than 0 keeps it
    logits, hidden, cell = decoder(x, hidden, cell, encoder_outputs, mask, step=1)
    attentional, decoder._feed = decoder._feed, None
    return logits, hidden, cell, attentional


def _luong_case(name: str, lengths: list[int], ts: int, layers: int, seed: int) -> Case:
    # The last input is feed (B, H): h~_{t-1}, the previous attentional state.
    make = lambda v, h, n: LuongDecoder(v, h, n, AttentionGeneral(h))  # noqa: E731
    return decoder_case(name, make, lengths, ts, layers, seed, STEP_HIDDEN)


def luong_step(student_fn: Callable[..., tuple]) -> Verdict:
    """Exercise 9.5 (build it): ``student_fn(decoder, x, hidden, cell, encoder_outputs, mask, feed)
    -> (logits, hidden, cell, attentional)``, one step of ``decoder``, a :class:`LuongDecoder`
    with input feeding, built from its parts (Luong et al., 2015, §3).

    ``x`` ``(B,)`` previous tokens, ``hidden`` and ``cell`` ``(L, B, H)``, ``encoder_outputs``
    ``(B, Ts, H)``, ``mask`` ``(B, Ts)`` True for real source tokens, ``feed`` ``(B, H)`` the
    previous attentional state; ``logits`` ``(B, V)``, ``attentional`` ``(B, H)``.
    """
    title = "Exercise 9.5 — one step of Luong's decoder"
    cases = [
        _luong_case("B=2, no padding", [5, 5], 5, layers=1, seed=91),
        _luong_case("B=2, the second source padded (2 of 5 real)", [5, 2], 5, layers=1, seed=92),
        _luong_case("B=3, two LSTM layers, padded sources", [6, 3, 4], 6, layers=2, seed=93),
    ]
    mistakes = [
        Mistake(
            "that is Bahdanau's order: the query must be the NEW top-layer state h_t, from the LSTM "
            "step you just ran, not the hidden that came in",
            lambda *a: _luong_step(*a, new_query=False)[0],
        ),
        Mistake(
            "`feed` (the previous attentional state) must join the embedded token as the LSTM's input: "
            "torch.cat((embedded, feed), dim=1)",
            lambda *a: _luong_step(*a, feeding=False)[0],
        ),
        Mistake(
            "W_c was built for [c_t; h_t], context first: torch.cat((context, h_t), dim=1)",
            lambda *a: _luong_step(*a, context_first=False)[0],
        ),
        Mistake(
            "the attentional state is tanh(W_c [c_t; h_t]): the tanh is missing",
            lambda *a: _luong_step(*a, squash=False)[0],
        ),
        Mistake(
            "predict from the attentional state h~_t = tanh(W_c[c_t; h_t]), not from h_t: "
            "otherwise the context never reaches the logits",
            lambda *a: _luong_step(*a, from_attentional=False)[0],
        ),
        Mistake(
            "the padding gets weight: mask the scores before the softmax (attnlib.masked_softmax, "
            "or masked_fill with -inf where mask is False)",
            lambda d, x, h, c, enc, m, f: _luong_step(d, x, h, c, enc, None, f)[0],
        ),
        Mistake(
            "with two LSTM layers the query is the TOP layer's state, hidden[-1], not hidden[0]",
            lambda *a: _luong_step(*a, layer=0)[0],
        ),
    ]

    def part_mistakes(index: int, name: str) -> list[Mistake]:
        return [
            Mistake(
                "return the four results in the order (logits, hidden, cell, attentional)",
                lambda *a: _luong_step(*a)[{1: 2, 2: 1, 3: 1}[index]],
            ),
            Mistake(
                "the logits are right; now return the new attentional state tanh(W_c[c_t; h_t]) that "
                "the next step gets as `feed`, not the `feed` that came in"
                if name == "attentional"
                else f"the logits are right; now return the LSTM's NEW {name} state, not the one you got",
                lambda d, x, h, c, enc, m, f: {1: h, 2: c, 3: f}[index],
            ),
        ]

    by_result = {0: mistakes, 3: part_mistakes(3, "attentional"), 1: part_mistakes(1, "hidden")}
    by_result[2] = part_mistakes(2, "cell")
    return run_check_parts(title, student_fn, _reference_luong_step, cases, by_result, 4)
