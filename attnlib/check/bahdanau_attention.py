"""Exercise checks for notebook 08 (Bahdanau attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Ts`` source length, ``Tq`` decoder steps scored at once, ``d_hid`` hidden size,
``L`` LSTM layers, ``V`` vocabulary. In the paper's notation (Bahdanau et al., 2015, appendix
A.1.2, A.2.2): ``n`` the decoder state's width, ``2n`` an annotation's (forward and backward states
concatenated, eq. 7), ``n'`` the alignment model's hidden width.

The references are attnlib's own code where attnlib has it (``AttentionParams.score``,
``DecoderWithAttention``); the paper's alignment model with separate ``W_a`` and ``U_a`` and
annotations of width ``2n`` is written here, and tests/check/test_bahdanau_attention.py proves it
agrees with ``AttentionParams`` where the widths let both apply. The module exercise (8.2) declares
its spec here and runs on the engine of :mod:`attnlib.check._modules`. Inputs come from local
``torch.Generator`` s and modules are built inside :func:`attnlib.check._core.seeded`, so a check
never moves the global seed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import nn

from .. import AttentionParams, DecoderWithAttention, length_mask, masked_softmax
from ..i18n import N_, fmt, tr
from ._core import (
    PASS,
    Case,
    Mistake,
    Verdict,
    generator,
    hint_line,
    not_a_distribution,
    run_check,
    run_check_parts,
    seeded,
)
from ._modules import ModuleExercise, check_module, load_by_name, parameters_problem
from ._reach import own

__all__ = ["additive_module", "decoder_step", "precomputed_scores"]


def source_mask(lengths: list[int], ts: int) -> torch.Tensor:
    """``(B, Ts)`` bool, True for the real tokens of sources of these ``lengths``."""
    return length_mask(lengths, ts)[:, 0, 0]  # (B, 1, 1, Ts) -> (B, Ts)


#: Vocabulary and hidden size of the decoders whose step exercises 8.3 and 9.5 check.
STEP_VOCAB, STEP_HIDDEN = 9, 4


def decoder_case(
    name: str,
    make_decoder: Callable[[int, int, int], nn.Module],
    lengths: list[int],
    ts: int,
    layers: int,
    seed: int,
    *extra: int,
) -> Case:
    """One decoder step's inputs: ``(decoder, x, hidden, cell, encoder_outputs, mask, *more)``.

    ``make_decoder(V, d_hid, L)`` builds the decoder (under ``seed``); ``mask`` ``(B, Ts)`` marks the real
    tokens of sources of these ``lengths``; ``extra`` are the widths of further random ``(B, width)``
    inputs (Luong's ``feed``).
    """
    v, h, b = STEP_VOCAB, STEP_HIDDEN, len(lengths)
    with seeded(seed):
        decoder = make_decoder(v, h, layers)
    gen = generator(seed)
    x = torch.randint(3, v, (b,), generator=gen)  # (B,) previous tokens
    hidden, cell = torch.randn(layers, b, h, generator=gen), torch.randn(layers, b, h, generator=gen)
    outputs = torch.randn(b, ts, h, generator=gen)  # (B, Ts, d_hid)
    more = tuple(torch.randn(b, width, generator=gen) for width in extra)
    return Case(name, (decoder, x, hidden, cell, outputs, source_mask(lengths, ts), *more))


def _step(decoder, x, hidden, cell, encoder_outputs, mask, *, context_first=False):
    """A decoder step built from ``decoder``'s parts, with the order of the LSTM input as a knob."""
    embedded = decoder.embedding(x.unsqueeze(1))  # (B,) -> (B, 1, d_hid)
    weights = decoder.attention(hidden, encoder_outputs, mask)  # (B, Ts)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, Ts) @ (B, Ts, d_hid) -> (B, 1, d_hid)
    pair = (context, embedded) if context_first else (embedded, context)
    outputs, (hidden, cell) = decoder.rnn(torch.cat(pair, dim=2), (hidden, cell))  # (B, 1, d_hid)
    return decoder.fc(outputs.squeeze(1)), hidden, cell  # (B, V)


def _decoder_case(name: str, lengths: list[int], ts: int, layers: int, seed: int) -> Case:
    return decoder_case(
        name, lambda v, h, n: DecoderWithAttention(v, h, n, AttentionParams(h)), lengths, ts, layers, seed
    )


def _reference_step(decoder, x, hidden, cell, encoder_outputs, mask):
    return decoder(x, hidden, cell, encoder_outputs, mask)


def decoder_step(student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> Verdict:
    """Exercise 8.3 (find the bug): ``student_fn(decoder, x, hidden, cell, encoder_outputs, mask)
    -> (logits, hidden, cell)``, one step of ``decoder``, a :class:`DecoderWithAttention`.

    ``x`` ``(B,)`` previous tokens, ``hidden`` and ``cell`` ``(L, B, d_hid)``, ``encoder_outputs``
    ``(B, Ts, d_hid)``, ``mask`` ``(B, Ts)`` True for real source tokens; ``logits`` ``(B, V)``.
    """
    title = N_("Exercise 8.3 — find the bug in the decoder step")
    cases = [
        _decoder_case(N_("B=2, no padding"), [5, 5], 5, layers=1, seed=79),
        _decoder_case(N_("B=2, the second source padded (2 of 5 real)"), [5, 2], 5, layers=1, seed=80),
        _decoder_case(N_("B=3, two LSTM layers, padded sources"), [6, 3, 4], 6, layers=2, seed=81),
    ]
    mistakes = [
        Mistake(
            "this is still the bug: without the mask the attention gives weight to <pad> positions; "
            "pass it on, `decoder.attention(hidden, encoder_outputs, mask)`",
            lambda d, x, h, c, enc, m: _step(d, x, h, c, enc, None)[0],
        ),
        Mistake(
            "the mask is inverted: True marks the real source tokens, pass `mask` as it is",
            lambda d, x, h, c, enc, m: _step(d, x, h, c, enc, ~m)[0],
        ),
        Mistake(
            "the LSTM was built for [embedded; context] in this order: torch.cat((embedded, context), dim=2)",
            lambda *a: _step(*a, context_first=True)[0],
        ),
    ]

    def state_mistakes(index: int, name: str) -> list[Mistake]:
        return [
            Mistake(
                fmt(
                    "the logits are right; now return the LSTM's *new* {name} state (for the next step), "
                    "not the {name} that came in",
                    name=name,
                ),
                lambda d, x, h, c, enc, m: (h, c)[index - 1],
            ),
            Mistake(
                "return the three results in the order (logits, hidden, cell)",
                lambda *a: _step(*a)[3 - index],
            ),
            Mistake(
                "return three things, (logits, hidden, cell), as DecoderWithAttention does",
                lambda *a: _step(*a)[0],
            ),
        ]

    by_result = {0: mistakes, 1: state_mistakes(1, "hidden"), 2: state_mistakes(2, "cell")}
    forbidden = [
        own(DecoderWithAttention, "forward", "_forward_sequence", what="DecoderWithAttention.forward")
    ]
    return run_check_parts(title, student_fn, _reference_step, cases, by_result, 3, forbidden=forbidden)


# ---------------------------------------------------------------------------------------------
# Exercise 8.1: U_a h_j once per batch, the scores of every decoder step at once
# ---------------------------------------------------------------------------------------------


def _per_step_scores(queries, keys, w_a, u_a, v_a):
    """The reference: ``scores[:, i, j] = v_aᵀ tanh(W_a queries[:, i] + U_a keys[:, j])``, the paper's
    ``e_{i+1, j+1}`` (it counts from 1, the tensors from 0: ``queries[:, i]`` is ``s_i``, the state
    before step ``i+1``), one decoder step at a time, ``U_a h_j`` recomputed at every step as a
    decoder that knows nothing better would."""
    rows = []
    for i in range(queries.shape[1]):
        projected_query = queries[:, i] @ w_a.T  # (B, n) @ (n, n') -> (B, n')
        projected_keys = keys @ u_a.T  # (B, Ts, 2n) @ (2n, n') -> (B, Ts, n')
        rows.append(torch.tanh(projected_query[:, None, :] + projected_keys) @ v_a)  # (B, Ts)
    return torch.stack(rows, dim=1)  # (B, Tq, Ts)


def _all_steps(
    queries, keys, w_a, u_a, v_a, *, tanh=True, tanh_outside=False, w_t=True, u_t=True, pairs=False
):
    """The scores of all steps at once, with a knob per typical slip."""
    q = queries @ (w_a.T if w_t else w_a)  # (B, Tq, n) @ (n, n') -> (B, Tq, n')
    k = keys @ (u_a.T if u_t else u_a)  # (B, Ts, 2n) @ (2n, n') -> (B, Ts, n')
    energy = q + k if pairs else q[:, :, None, :] + k[:, None, :, :]  # (B, Tq, Ts, n')
    if tanh_outside:
        return torch.tanh(energy @ v_a)
    return (torch.tanh(energy) if tanh else energy) @ v_a  # (B, Tq, Ts, n') @ (n',) -> (B, Tq, Ts)


def _steps_case(name: str, b: int, tq: int, ts: int, n: int, n_att: int, seed: int) -> Case:
    gen = generator(seed)
    queries = torch.randn(b, tq, n, generator=gen)  # s_0 ... s_{Tq-1}
    keys = torch.randn(b, ts, 2 * n, generator=gen)  # annotations h_j, 2n wide
    w_a, u_a = torch.randn(n_att, n, generator=gen), torch.randn(n_att, 2 * n, generator=gen)
    return Case(name, (queries, keys, w_a, u_a, torch.randn(n_att, generator=gen)))


def precomputed_scores(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 8.1: ``student_fn(queries, keys, W_a, U_a, v_a) -> scores (B, Tq, Ts)``.

    ``queries`` ``(B, Tq, n)`` the decoder states ``s_{i-1}`` of ``Tq`` steps, ``keys`` ``(B, Ts, 2n)``
    the annotations, ``W_a`` ``(n', n)``, ``U_a`` ``(n', 2n)``, ``v_a`` ``(n',)`` (Bahdanau et al.,
    2015, A.1.2, A.2.2); ``U_a h_j`` is computed once for all steps. Compared with the scores computed
    one step at a time.
    """
    cases = [
        _steps_case(N_("B=1, Tq=2 steps, Ts=3, n=2 (keys 2n=4), n'=3"), 1, 2, 3, 2, 3, seed=81),
        _steps_case(N_("B=2, Tq=Ts=4, n=n'=3 (W_a square)"), 2, 4, 4, 3, 3, seed=82),
        _steps_case(N_("B=2, Tq=3, Ts=5, n=2, n'=2n=4 (U_a square)"), 2, 3, 5, 2, 4, seed=83),
        _steps_case(N_("one decoder step, Tq=1"), 3, 1, 4, 2, 5, seed=84),
    ]
    transpose = N_(
        "the paper writes W_a s and U_a h_j for column vectors; with vectors in rows that is "
        "`queries @ W_a.T` and `keys @ U_a.T` (as nn.Linear computes x @ weight.T)"
    )
    pairs = N_(
        "each query must meet every key: give the projected queries an axis for the keys and the "
        "projected keys one for the queries, (B, Tq, 1, n') + (B, 1, Ts, n') -> (B, Tq, Ts, n')"
    )
    mistakes = [
        Mistake(
            "the tanh is missing: e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j); without it the score is "
            "linear and the query's part cancels in the softmax",
            lambda *a: _all_steps(*a, tanh=False),
        ),
        Mistake(
            "the tanh goes inside, before the dot product with v_a: v_aᵀ tanh(...), not tanh(v_aᵀ ...)",
            lambda *a: _all_steps(*a, tanh_outside=True),
        ),
        Mistake(transpose, lambda *a: _all_steps(*a, w_t=False)),
        Mistake(transpose, lambda *a: _all_steps(*a, u_t=False)),
        Mistake(pairs, lambda *a: _all_steps(*a, pairs=True)),
        Mistake(
            "queries and keys are on the wrong axes: scores[b, i, j] is step i's query against source "
            "position j, so the queries' axis comes first, (B, Tq, 1, n') + (B, 1, Ts, n')",
            lambda *a: _all_steps(*a).transpose(1, 2),
        ),
        Mistake(
            "return the scores e_ij, before the softmax",
            lambda *a: torch.softmax(_all_steps(*a), dim=-1),
        ),
    ]
    verdict = run_check(
        N_("Exercise 8.1 — U_a h_j once for every step"), student_fn, _per_step_scores, cases, mistakes
    )
    # Two slips crash wherever the shapes do not happen to fit: the same slip, the same hint.
    if verdict.status == "error" and "cannot be multiplied" in verdict.message:  # a forgotten .T
        return Verdict(False, f"{verdict.message}\n" + hint_line(transpose), "error")
    if verdict.status == "error" and "must match the size of tensor" in verdict.message:
        return Verdict(False, f"{verdict.message}\n" + hint_line(pairs), "error")
    if verdict:
        return Verdict(
            True,
            f"{PASS} "
            + tr(
                "{title}: all {n} cases pass; your scores equal those computed one decoder step at a time."
            ).format(title=tr(N_("Exercise 8.1 — U_a h_j once for every step")), n=len(cases)),
            "pass",
        )
    return verdict


# ---------------------------------------------------------------------------------------------
# Exercise 8.2: the paper's alignment model as an nn.Module
# ---------------------------------------------------------------------------------------------


def _module_config(query_size: int, key_size: int, attn_size: int) -> dict:
    return {"query_size": query_size, "key_size": key_size, "attn_size": attn_size}


def _expected_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    return {
        "W_a.weight": (cfg["attn_size"], cfg["query_size"]),
        "U_a.weight": (cfg["attn_size"], cfg["key_size"]),
        "v_a.weight": (1, cfg["attn_size"]),
    }


def _module_case(name: str, cfg: dict, lengths: list[int], ts: int, seed: int) -> Case:
    gen = generator(seed)
    b = len(lengths)
    query = torch.randn(b, cfg["query_size"], generator=gen)  # s_{i-1}
    keys = torch.randn(b, ts, cfg["key_size"], generator=gen)  # h_j
    params = {name: torch.randn(shape, generator=gen) for name, shape in _expected_shapes(cfg).items()}
    return Case(name, (cfg, query, keys, source_mask(lengths, ts), params))


def _module_cases() -> list[Case]:
    return [
        _module_case(
            N_("B=2, query_size=key_size=3 (no padding)"), _module_config(3, 3, 4), [5, 5], 5, seed=85
        ),
        _module_case(
            N_("B=2, the second source padded (2 of 4 real)"), _module_config(2, 4, 3), [4, 2], 4, seed=86
        ),
        _module_case(
            N_("B=3 sources of lengths 6, 3, 5; key_size=2*query_size"),
            _module_config(3, 6, 5),
            [6, 3, 5],
            6,
            87,
        ),
        _module_case(N_("one source position, Ts=1"), _module_config(2, 4, 2), [1, 1], 1, seed=88),
    ]


def _additive_module_variant(
    cfg,
    query,
    keys,
    mask,
    params,
    *,
    tanh=True,
    sides="right",
    dim=-1,
    masking="fill",
    use_v=True,
    pool="sum",
):
    """Reference (all knobs at their defaults) and the typical slips: ``(context, weights)``."""
    w_a, u_a, v_a = params["W_a.weight"], params["U_a.weight"], params["v_a.weight"][0]
    if sides == "swapped":  # W_a on the annotations, U_a on the state
        q, k = query @ u_a.T, keys @ w_a.T
    else:
        q, k = query @ w_a.T, keys @ u_a.T  # (B, n') and (B, Ts, n')
    energy = q[:, None, :] + k  # (B, 1, n') + (B, Ts, n') -> (B, Ts, n')
    energy = torch.tanh(energy) if tanh else energy
    scores = energy @ v_a if use_v else energy.sum(dim=-1)  # (B, Ts, n') @ (n',) -> (B, Ts)
    if masking == "fill":
        weights = masked_softmax(scores, mask)
    elif masking == "inverted":
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=dim)
    elif masking == "after":
        weights = torch.softmax(scores, dim=dim) * mask
    else:
        weights = torch.softmax(scores, dim=dim)
    if masking == "fill" and dim != -1:
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim).nan_to_num(0.0)
    if pool == "unsqueezed":
        return torch.bmm(weights.unsqueeze(1), keys), weights  # (B, 1, Ts) @ (B, Ts, 2n) -> (B, 1, 2n)
    weighted = weights[:, :, None] * keys  # (B, Ts, 1) * (B, Ts, 2n) -> (B, Ts, 2n)
    context = weighted.sum(dim=1) if pool == "sum" else weighted.mean(dim=1)  # (B, 2n)
    return context, weights


def _reference_module(cfg, query, keys, mask, params):
    return _additive_module_variant(cfg, query, keys, mask, params)


def _unfit(module: nn.Module, cfg: dict) -> str | None:
    def hint(missing: set[str], extra: set[str]) -> str:
        if not missing and not extra:
            return N_(
                "nn.Linear(in, out) holds a weight of shape (out, in): W_a maps the decoder state "
                "(query_size) and U_a an annotation (key_size) to attn_size, v_a maps attn_size to 1"
            )
        if any(n.endswith(".bias") for n in extra):
            return N_(
                "no biases here: this exercise leaves them out, as the paper's equations do: "
                "nn.Linear(..., bias=False)"
            )
        return N_(
            "the check copies its weights into yours, so it needs these names: self.W_a, "
            "self.U_a and self.v_a, each an nn.Linear(..., bias=False)"
        )

    return parameters_problem(cfg, module, _expected_shapes(cfg), N_("are not the expected ones"), hint)


def _slip(index: int, **knobs: object) -> Callable[..., torch.Tensor]:
    """Result ``index`` (0 the context, 1 the weights) of the module with one typical slip."""
    return lambda *args: _additive_module_variant(*args, **knobs)[index]


#: The typical slips of 8.2, by result: the weights first, each result with its own slips; weights that do
#: not sum to 1 over the source positions and match no slip get the structural hint of every softmax.
_MODULE_MISTAKES = {
    1: [
        Mistake("return two things in this order, (context, weights)", _slip(0)),
        Mistake(
            "the tanh is missing: e_j = v_aᵀ tanh(W_a s + U_a h_j); without it the state's part is the "
            "same for every j and cancels in the softmax",
            _slip(1, tanh=False),
        ),
        Mistake(
            "W_a and U_a are on the wrong sides: W_a (query_size -> attn_size) multiplies the decoder "
            "state, U_a (key_size -> attn_size) the annotations h_j",
            _slip(1, sides="swapped"),
        ),
        Mistake(
            "score with v_a: self.v_a(torch.tanh(...)).squeeze(-1), not a plain sum over the attn_size axis",
            _slip(1, use_v=False),
        ),
        Mistake(
            "softmax over the source positions (dim=-1 of the (B, Ts) scores): dim=0 mixes the "
            "sentences of the batch",
            _slip(1, dim=0),
        ),
        Mistake(
            "padded positions got weight: the mask is ignored. Fill the scores with -inf where the mask "
            "is False before the softmax (`scores.masked_fill(~mask, float('-inf'))`)",
            _slip(1, masking="none"),
        ),
        Mistake(
            "the mask is inverted: True marks the real source tokens, so fill the scores where it is False",
            _slip(1, masking="inverted"),
        ),
        Mistake(
            "zeroing the padded weights after the softmax leaves rows that sum to less than 1: mask the "
            "scores before the softmax",
            _slip(1, masking="after"),
        ),
        not_a_distribution(
            "the weights are the softmax of the masked scores over the source positions, dim=-1"
        ),
    ],
    0: [
        Mistake(
            "the context is the weighted *sum* of the annotations (the weights already sum to 1), "
            "not the mean",
            _slip(0, pool="mean"),
        ),
        Mistake(
            "return one context per sentence, (B, key_size): squeeze the step axis that bmm leaves",
            _slip(0, pool="unsqueezed"),
        ),
    ],
}


@functools.cache
def _module_exercise() -> ModuleExercise:
    """Exercise 8.2's spec, built at its first check, not at import (which stays light)."""
    return ModuleExercise(
        title=N_("Exercise 8.2 — Bahdanau's alignment model as an nn.Module"),
        check="additive_module",
        example="MyAdditiveAttention",
        init="(query_size, key_size, attn_size)",
        forward="query, keys, mask",
        cases=_module_cases(),
        reference=_reference_module,
        unfit=_unfit,
        fit=lambda module, cfg, query, keys, mask, params: load_by_name(module, params),
        mistakes=_MODULE_MISTAKES,
    )


def additive_module(student_cls: object) -> Verdict:
    """Exercise 8.2: a class ``MyAdditiveAttention(nn.Module)``, Bahdanau's alignment model.

    Built as ``cls(query_size, key_size, attn_size)`` with parameters ``W_a`` ``nn.Linear(query_size,
    attn_size, bias=False)``, ``U_a`` ``nn.Linear(key_size, attn_size, bias=False)`` and ``v_a``
    ``nn.Linear(attn_size, 1, bias=False)`` (A.1.2, A.2.2 of Bahdanau et al., 2015); the check
    copies weights into them and compares ``module(query, keys, mask) -> (context, weights)``,
    ``query`` ``(B, query_size)``, ``keys`` ``(B, Ts, key_size)``, ``mask`` ``(B, Ts)`` True for real
    source tokens, ``context`` ``(B, key_size)``, ``weights`` ``(B, Ts)``.
    """
    return check_module(_module_exercise(), student_cls)
