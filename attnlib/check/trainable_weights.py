"""Exercise checks for notebook 02 (trainable weights); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` tokens, ``Tq``/``Tk`` query/key length, ``Din`` input width,
``Dq``/``Dkv`` widths of the sequence that asks and of the one that is read, ``Dk`` query/key
width, ``Dv``/``Dout`` value width.

Each check runs the student's function on a few cases, simplest first, against a reference
(attnlib's own functions where they exist), and recognises the typical mistakes (the scale
forgotten or wrong, a role taken from the wrong sequence, softmax over the wrong dimension, ...).
Prediction checks name the misconception behind each wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .. import SelfAttention, SelfAttentionV1
from .. import scaled_dot_product_attention as _sdpa
from ..i18n import N_, fmt, tr
from ._core import (
    FAIL,
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    generator,
    predictions_not_yet,
    randn,
    run_check,
)
from ._reach import own
from .dot_product_attention import INPUTS

__all__ = ["cross_attention", "cross_attention_shapes", "drop_the_scale", "fixed_self_attention"]


def _cross_attention(
    x_q: torch.Tensor,
    x_kv: torch.Tensor,
    w_query: torch.Tensor,
    w_key: torch.Tensor,
    w_value: torch.Tensor,
    *,
    scale: float | None = None,
    dim: int = -1,
) -> torch.Tensor:
    queries = x_q @ w_query  # (B, Tq, Dq) @ (Dq, Dk) -> (B, Tq, Dk)
    keys = x_kv @ w_key  # (B, Tk, Dkv) @ (Dkv, Dk) -> (B, Tk, Dk)
    values = x_kv @ w_value  # (B, Tk, Dkv) @ (Dkv, Dv) -> (B, Tk, Dv)
    scale = 1.0 / math.sqrt(keys.shape[-1]) if scale is None else scale
    scores = queries @ keys.transpose(-2, -1) * scale  # (B, Tq, Dk) @ (B, Dk, Tk) -> (B, Tq, Tk)
    return torch.softmax(scores, dim=dim) @ values  # (B, Tq, Tk) @ (B, Tk, Dv) -> (B, Tq, Dv)


def _plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return _sdpa(q, k, v)[0]


def _from_roles(q_from: str, k_from: str, v_from: str) -> Callable[..., torch.Tensor]:
    """Cross-attention with the queries, keys and values projected from ``"q"`` (x_q) or ``"kv"`` (x_kv)."""

    def wrong(xq, xkv, wq, wk, wv):
        x = {"q": xq, "kv": xkv}
        return _plain_attention(x[q_from] @ wq, x[k_from] @ wk, x[v_from] @ wv)

    return wrong


def _cross_case(b: int, tq: int, tk: int, dq: int, dkv: int, dk: int, dv: int, seed: int) -> tuple:
    gen = generator(seed)
    return (
        torch.randn(b, tq, dq, generator=gen),  # x_q
        torch.randn(b, tk, dkv, generator=gen),  # x_kv
        torch.randn(dq, dk, generator=gen) / math.sqrt(dq),  # W_query
        torch.randn(dkv, dk, generator=gen) / math.sqrt(dkv),  # W_key
        torch.randn(dkv, dv, generator=gen) / math.sqrt(dkv),  # W_value
    )


def cross_attention(
    student_fn: Callable[
        [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor
    ],
) -> Verdict:
    """Exercise 2.1: ``student_fn(x_q, x_kv, W_query, W_key, W_value) -> context``.

    ``x_q`` ``(B, Tq, Dq)`` asks (its projections are the queries), ``x_kv`` ``(B, Tk, Dkv)`` is
    read (its projections are the keys and the values); ``W_query`` ``(Dq, Dk)``, ``W_key``
    ``(Dkv, Dk)``, ``W_value`` ``(Dkv, Dv)``. Returns the scaled dot-product attention context
    ``(B, Tq, Dv)``.
    """
    cases = [
        Case("B=1, Tq=Tk=4, every width 3", _cross_case(1, 4, 4, 3, 3, 3, 3, seed=21)),
        Case("B=2, Tq=3 read Tk=5; Dq=5, Dkv=7, Dk=2, Dv=6", _cross_case(2, 3, 5, 5, 7, 2, 6, seed=22)),
        Case("B=3, Tq=6 read Tk=4; Dq=3, Dkv=4, Dk=4, Dv=2", _cross_case(3, 6, 4, 3, 4, 4, 2, seed=23)),
        Case("a single query, Tq=1, read Tk=7", _cross_case(2, 1, 7, 2, 3, 5, 5, seed=24)),
    ]
    roles = [  # (hint, which input each of the queries, keys and values is projected from)
        (
            N_(
                "the roles are swapped: the queries are projections of `x_q` (the tokens that ask), the "
                "keys and values projections of `x_kv` (the tokens that are read)"
            ),
            ("kv", "q", "q"),
        ),
        (
            N_(
                "this is self-attention on `x_q`: in cross-attention the keys and the values are "
                "projections of `x_kv`"
            ),
            ("q", "q", "q"),
        ),
        (
            N_(
                "the values must come from the same tokens as the keys (`x_kv`): the weight of key j "
                "mixes in value j"
            ),
            ("q", "kv", "q"),
        ),
        (
            N_(
                "the keys come from `x_kv`: the queries are matched against the tokens being read, "
                "not against themselves"
            ),
            ("q", "q", "kv"),
        ),
    ]
    mistakes = [
        *(Mistake(hint, _from_roles(*sources)) for hint, sources in roles),
        Mistake(
            "the scale is missing: divide the scores by sqrt(Dk) before the softmax",
            lambda *args: _cross_attention(*args, scale=1.0),
        ),
        Mistake(
            "you divided by Dk; divide by its square root",
            lambda *args: _cross_attention(*args, scale=1.0 / args[3].shape[-1]),
        ),
        Mistake(
            "you scaled by the value width Dv; the scale comes from the width Dk of the projected "
            "queries and keys",
            lambda *args: _cross_attention(*args, scale=1.0 / math.sqrt(args[4].shape[-1])),
        ),
        *(
            Mistake(
                fmt(
                    "you scaled by the width of the input `{name}`; the scale comes from the width Dk of "
                    "the *projected* queries and keys, `W_key.shape[-1]`",
                    name=name,
                ),
                lambda *args, i=i: _cross_attention(*args, scale=1.0 / math.sqrt(args[i].shape[-1])),
            )
            for i, name in enumerate(("x_q", "x_kv"))
        ),
        Mistake(
            "softmax over the wrong dimension: each query's weights over the keys must sum to 1, "
            "so use dim=-1 (the keys), not dim=-2 (the queries)",
            lambda *args: _cross_attention(*args, dim=-2),
        ),
    ]
    return run_check(
        N_("Exercise 2.1 — cross-attention with projections"), student_fn, _cross_attention, cases, mistakes
    )


def _self_attention(
    x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor
) -> torch.Tensor:
    # (..., T, Din) @ (Din, Dout) -> (..., T, Dout) for each projection
    return _sdpa(x @ w_query, x @ w_key, x @ w_value)[0]


def _buggy_self_attention(
    x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor
) -> torch.Tensor:
    keys, values = x @ w_key, x @ w_value
    scores = (x @ w_query) @ keys.transpose(-2, -1)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-2) @ values


def _seeded_weights(d_in: int, d_out: int, seed: int) -> tuple[torch.Tensor, ...]:
    gen = generator(seed)
    return tuple(torch.rand(d_in, d_out, generator=gen) for _ in range(3))


def fixed_self_attention(
    student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> Verdict:
    """Exercise 2.2: ``student_fn(x, W_query, W_key, W_value) -> context``, the bug fixed.

    ``x`` ``(T, Din)`` or ``(B, T, Din)``; each weight ``(Din, Dout)``; the context has shape
    ``(..., T, Dout)``, as :class:`attnlib.SelfAttentionV1` computes it.
    """
    cases = [
        Case("the six tokens, seed-123 weights (Din=3, Dout=2)", (INPUTS, *_seeded_weights(3, 2, seed=123))),
        Case("a batch (2, 5, 4), Dout=3", (randn(2, 5, 4, seed=31), *_seeded_weights(4, 3, seed=32))),
        Case("a single token, T=1", (randn(1, 3, seed=33), *_seeded_weights(3, 2, seed=34))),
    ]
    mistakes = [
        Mistake(
            "this is still the bug: the softmax runs over dim=-2 (the queries), so each *column* "
            "sums to 1; every query's weights over the keys must sum to 1, so use dim=-1",
            _buggy_self_attention,
        ),
        Mistake(
            "the scale is missing now: keep dividing the scores by sqrt(Dout) (the key width)",
            lambda x, wq, wk, wv: _sdpa(x @ wq, x @ wk, x @ wv, scale=1.0)[0],
        ),
    ]
    return run_check(
        N_("Exercise 2.2 — find the bug"),
        student_fn,
        _self_attention,
        cases,
        mistakes,
        forbidden=[own(SelfAttentionV1), own(SelfAttention)],
    )


def cross_attention_shapes(context_shape: Any, weights_shape: Any) -> Verdict:
    """Exercise 2.3: predict the shapes of ``(context, weights)`` for cross-attention.

    ``query`` ``(3, 4, 16)``, ``key`` ``(3, 9, 16)``, ``value`` ``(3, 9, 40)``; give each
    shape as a tuple, e.g. ``(1, 2, 3)``.
    """
    title = N_("Exercise 2.3 — predict the shapes")
    query, key, value = torch.zeros(3, 4, 16), torch.zeros(3, 9, 16), torch.zeros(3, 9, 40)
    context, weights = _sdpa(query, key, value)
    expected_context, expected_weights = tuple(context.shape), tuple(weights.shape)
    if context_shape is ... or weights_shape is ...:
        return predictions_not_yet(title)
    context_hints = {
        (3, 9, 40): N_("the context has one row per *query* (Tq=4), not per key"),
        (3, 4, 16): N_("each context row is a weighted sum of *value* rows, so its width is Dv=40"),
        (3, 9, 16): "one row per query (Tq=4), each as wide as a value (Dv=40)",
    }
    weights_hints = {
        (3, 9, 4): N_("the weights are (B, Tq, Tk): one row per query, one column per key"),
        (3, 4, 4): N_("queries and keys need not be equally many: one column per key (Tk=9)"),
        (3, 9, 9): "one row per query (Tq=4), one column per key (Tk=9)",
        (3, 4, 16): N_("the weights compare queries with keys: (B, Tq, Tk), the width Dk is summed away"),
    }
    parts = [
        check_answer(
            N_("context"), _as_tuple(context_shape), expected_context, _hint(context_shape, context_hints)
        ),
        check_answer(
            N_("weights"), _as_tuple(weights_shape), expected_weights, _hint(weights_shape, weights_hints)
        ),
    ]
    return combined(
        title,
        parts,
        fmt(
            "right, context {expected_context} and weights {expected_weights}.",
            expected_context=expected_context,
            expected_weights=expected_weights,
        ),
    )


_ENTROPY_CHOICES = ("a", "b", "c", "d")
_NO_OVERFLOW = N_(
    "torch's softmax subtracts each row's maximum before `exp` (exercise 1.1), so large scores never overflow"
)


def drop_the_scale(unscaled_entropy: Any, scaled_entropy: Any) -> Verdict:
    """Exercise 2.4: predict how the entropy of the weights changes with ``d_k`` (an ablation).

    Random queries and keys (mean 0, variance 1), 8 keys per query; as ``d_k`` grows, the mean
    entropy of each query's weights (a) rises towards ln 8, (b) stays about the same, (c) falls
    towards 0, or (d) becomes NaN. ``unscaled_entropy`` is the answer for the raw dot products
    (``scale=1.0``), ``scaled_entropy`` for the scores divided by ``sqrt(d_k)``; each a letter.
    """
    title = N_("Exercise 2.4 — ablation: drop the √d_k")
    if unscaled_entropy is ... or scaled_entropy is ...:
        return predictions_not_yet(title)
    unscaled_hints = {
        "a": N_(
            "larger scores do not make the weights flatter: softmax turns a wider spread of "
            "scores into sharper weights (try a large factor in the temperature explorer)"
        ),
        "b": N_(
            "without the scale the variance of the scores grows like d_k (the first experiment), "
            "so the weights cannot stay the same"
        ),
        "d": _NO_OVERFLOW,
    }
    scaled_hints = {
        "a": N_(
            "with the scale the scores have variance 1 for every d_k, so the weights hardly depend on d_k"
        ),
        "c": N_(
            "with the scale the scores have variance 1 for every d_k, so the weights hardly depend on d_k"
        ),
        "d": _NO_OVERFLOW,
    }
    parts = [
        _choice(N_("without the scale"), unscaled_entropy, "c", unscaled_hints),
        _choice(N_("with the scale"), scaled_entropy, "b", scaled_hints),
    ]
    return combined(
        title,
        parts,
        "right: without the scale the entropy falls towards 0 (each query ends up attending to one key); "
        "with it, it stays about the same.",
    )


def _choice(title: str, answer: Any, expected: str, hints: dict[str, str]) -> Verdict:
    letter = answer.strip().lower() if isinstance(answer, str) else answer
    if letter not in _ENTROPY_CHOICES:
        return Verdict(
            False,
            f"{FAIL} "
            + tr('{title}: answer with one letter, "a", "b", "c" or "d"; got {answer}.').format(
                title=tr(title), answer=repr(answer)
            ),
        )
    return check_answer(title, letter, expected, hints.get(letter, ""))


def _as_tuple(shape: Any) -> Any:
    return tuple(shape) if isinstance(shape, (list, torch.Size)) else shape


def _hint(answer: Any, hints: dict[tuple[int, ...], str]) -> str:
    default = N_("query (B, Tq, Dk), key (B, Tk, Dk), value (B, Tk, Dv): follow the two matmuls")
    try:
        return hints.get(_as_tuple(answer), default)
    except TypeError:  # an unhashable answer, e.g. a tuple holding a list
        return default
