"""Exercise checks for notebook 09 (Luong attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Ts`` source length, ``Tq`` decoder steps scored at once, ``H`` hidden size,
``L`` LSTM layers, ``V`` vocabulary, ``D`` half-window of local attention.

The references are attnlib's own code: ``AttentionGeneral.score``, ``LuongDecoder`` and
:func:`attnlib.local_attention.make_attention`. Local-m's window weighting, which ``LocalAttention.attend``
computes inline rather than as a function, is written here from attnlib's pieces;
tests/check/test_luong_attention.py proves it agrees with the code that inlines it. attnlib
has no location-based score (Luong et al., 2015, eq. 8): its reference is written here, from
``masked_softmax``. Inputs come from local ``torch.Generator`` s and modules are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import AttentionGeneral, LuongDecoder, make_attention, masked_softmax
from ..evaluation import count_parameters
from ..local_attention import SCORERS, LocalAttention
from ._core import (
    FAIL,
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    generator,
    not_a_distribution,
    predictions_not_yet,
    run_check,
    run_check_parts,
    seeded,
    slips,
    whole_number,
)
from ._reach import own
from .bahdanau_attention import STEP_HIDDEN, decoder_case, source_mask

__all__ = ["general_scores", "local_m_weights", "location_weights", "luong_step", "scorer_parameters"]

#: The hint of 9.2 and 9.3 for weights that are no distribution over the source, whatever the slip.
_NOT_A_DISTRIBUTION = not_a_distribution(
    "each step's weights over the source positions it sees sum to 1 (a step that sees none gets zeros)"
)


def _reference_general(query: torch.Tensor, keys: torch.Tensor, w_a: torch.Tensor) -> torch.Tensor:
    with seeded(0):
        attention = AttentionGeneral(keys.shape[-1])
    with torch.no_grad():
        attention.W_a.weight.copy_(w_a)
        return attention.score(query, keys)  # (B, Tq, Ts)


def _general_case(name: str, b: int, tq: int, ts: int, h: int, seed: int) -> Case:
    gen = generator(seed)
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
    return run_check(
        "Exercise 9.1 — Luong's general score",
        student_fn,
        _reference_general,
        cases,
        mistakes,
        forbidden=[own(AttentionGeneral, "project_keys", "score_projected", what="AttentionGeneral.score")],
    )


def _location(
    query, w_a, mask, *, rows="first", transpose=True, masked=True, after=False, dim=-1, softmax=True
):
    """Luong's location-based weights (eq. 8) with a knob per typical slip; defaults are right."""
    ts = mask.shape[1]
    scores = query @ (w_a.T if transpose else w_a)  # (B, Tq, H) @ (H, S) -> (B, Tq, S)
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
    score per source position from the decoder state alone. ``query`` ``(B, Tq, H)``, ``w_a``
    ``(S, H)`` the weight of ``nn.Linear(H, S, bias=False)`` with ``S >= Ts`` (one row per source
    position; a source of ``Ts`` positions uses the first ``Ts`` rows), ``mask`` ``(B, Ts)`` True
    for real source tokens; padded positions get weight 0.
    """
    cases = [
        _location_case("B=1, one step, S=Ts=H=5 (no padding)", 1, 1, 5, 5, [5], 5, seed=101),
        _location_case(
            "B=2, S=8 rows for a source of Ts=6, the second padded", 2, 1, 4, 8, [6, 4], 6, seed=102
        ),
        _location_case("B=2, three steps at once, S=H=5 rows, Ts=4", 2, 3, 5, 5, [4, 3], 4, seed=103),
    ]
    table = [
        (
            "use the FIRST Ts rows of W_a, one per source position 0 .. Ts-1: `scores[..., :Ts]` "
            "(Luong et al.'s footnote 6: a short sentence uses the top part of a_t)",
            {"rows": "all"},
        ),
        ("position s is row s of W_a: keep the first Ts rows, not the last ones", {"rows": "last"}),
        ("W_a is an nn.Linear weight (S, H): W_a h_t is `query @ w_a.T`", {"transpose": False}),
        ("return the weights: softmax over the source positions", {"softmax": False}),
        (
            "padded positions got weight: leave them out of the softmax (masked_fill with -inf where "
            "mask is False, or attnlib.masked_softmax)",
            {"masked": False},
        ),
        (
            "zeroing the padding after the softmax leaves weights that sum to less than 1: mask the "
            "scores *before* the softmax",
            {"after": True},
        ),
        (
            "the softmax runs over the source positions (the last axis), not over the decoder steps",
            {"dim": 1},
        ),
    ]
    return run_check(
        "Exercise 9.2 — Luong's location-based weights",
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
):
    """Local-m weights with a knob per typical slip; all knobs at their default give attnlib's."""
    tq, ts = scores.shape[1], scores.shape[2]
    positions = torch.arange(ts)  # (Ts,)
    centres = (step if use_step else 0) + offset + torch.arange(tq)  # (Tq,): p_t = t
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
        _local_m_case("one step t=3 of a source of 9, D=2", 1, 1, [9], 9, 2, step=3, seed=111),
        _local_m_case(
            "steps 0 to 3 at once: the window is cut at position 0", 1, 4, [8], 8, 2, step=0, seed=112
        ),
        _local_m_case(
            "B=2, steps 2 to 5, the second source padded (5 of 8 real)", 2, 4, [8, 5], 8, 1, step=2, seed=113
        ),
        _local_m_case(
            "B=2, steps 5 to 8, D=1: the short source (4 real) ends before some windows",
            2,
            4,
            [9, 4],
            9,
            1,
            step=5,
            seed=114,
        ),
    ]
    table = [
        (
            "row i of scores is output step t = step + i: centre its window on step + i, not on i",
            {"use_step": False},
        ),
        (
            "steps count from 0: the first row is step t = `step`, centred on s = step, not step + 1",
            {"offset": 1},
        ),
        ("the window holds 2D + 1 positions: |s - t| <= D, the ends included", {"strict": True}),
        (
            "zeroing the positions outside the window after a softmax over the whole source leaves "
            "weights that sum to less than 1: local-m is eq. 7 *inside* the window, so leave the other "
            "positions out of the softmax",
            {"before": False},
        ),
        ("padded positions got weight: the window must also leave out the padding (`mask`)", {"pad": False}),
        (
            "local-m has no Gaussian: that is local-p's, which needs it to train its predicted p_t "
            "(local-m's p_t = t is fixed)",
            {"gaussian": True},
        ),
        (
            "a window that lies wholly on padding leaves no visible position, and softmax over all -inf "
            "is NaN: give such rows zero weights (attnlib.masked_softmax does, as does torch's fused kernel)",
            {"empty_rows_zero": False},
        ),
    ]
    return run_check(
        "Exercise 9.3 — local-m: the window around p_t = t",
        student_fn,
        _reference_local_m,
        cases,
        [*slips(_local_m, table), _NOT_A_DISTRIBUTION],
        forbidden=[own(LocalAttention, "attend", what="LocalAttention.attend")],
    )


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
        return f"unknown name(s) {unknown}: use the names of attnlib.local_attention.SCORERS, {list(SCORERS)}"
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
    """Exercise 9.4 (prediction): which of ``attnlib.local_attention.SCORERS`` have no parameters (a list
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
    forbidden = [
        own(LuongDecoder, "forward", "_forward_sequence", "_attentional", what="LuongDecoder.forward")
    ]
    return run_check_parts(title, student_fn, _reference_luong_step, cases, by_result, 4, forbidden=forbidden)
