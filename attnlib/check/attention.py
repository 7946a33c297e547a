"""Exercise checks for notebooks 01 (dot-product attention) and 02 (trainable weights).

Shapes: ``B`` batch, ``T`` tokens, ``Tq``/``Tk`` query/key length, ``D`` embedding width,
``Dq``/``Dkv`` widths of the sequence that asks and of the one that is read, ``Dk`` query/key
width, ``Dv`` value width.

Each check runs the student's function on a few cases, simplest first, against a reference
(attnlib's own functions where they exist), and recognises the typical mistakes (softmax over the
wrong dimension, the scale forgotten or wrong, a role taken from the wrong sequence, ...).
Prediction checks name the misconception behind each wrong answer. See :mod:`attnlib.check._core`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ..functional import masked_softmax
from ..functional import scaled_dot_product_attention as _sdpa
from ._core import FAIL, PASS, TODO, Case, Mistake, Verdict, check_answer, run_check

__all__ = [
    "cosine_context_vectors",
    "cross_attention",
    "cross_attention_shapes",
    "drop_the_scale",
    "fixed_self_attention",
    "softmax",
    "top_token",
]

# The six-token sentence "Your journey starts with one step" of notebooks 01-03 (Raschka (2024, ch. 3)).
TOKENS = ("Your", "journey", "starts", "with", "one", "step")
INPUTS = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)  # (T, D) = (6, 3)


def _randn(*shape: int, seed: int) -> torch.Tensor:
    """Deterministic inputs that do not touch the global random state."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# Notebook 01
# ---------------------------------------------------------------------------------------------


def _naive_softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def softmax(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 1.1: ``student_fn(scores) -> weights``, softmax over the last dimension.

    ``scores`` has shape ``(..., Tk)``; the result has the same shape, each slice along the last
    dimension positive and summing to 1. Large scores (around 1000) must not give NaN.
    """
    cases = [
        Case("the six scores of 'journey' (1-D)", (INPUTS @ INPUTS[1],)),
        Case("a (4, 4) matrix of scores", (_randn(4, 4, seed=10),)),
        Case("all 6x6 scores of the sentence", (INPUTS @ INPUTS.T,)),
        Case("a batch (2, 4, 5)", (_randn(2, 4, 5, seed=11),)),
        Case("large scores around 1000", (torch.tensor([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 990.0]]),)),
    ]
    mistakes = [
        Mistake(
            "exp(1000) overflows to inf and inf/inf is NaN: subtract each row's maximum before exp "
            "(softmax(x) equals softmax(x - max), so the result does not change)",
            _naive_softmax,
        ),
        Mistake(
            "the rows do not sum to 1: divide exp(scores) by its sum over the last dimension",
            lambda x: torch.exp(x),
        ),
        Mistake(
            "the rows do not sum to 1: divide exp(scores - max) by its sum over the last dimension",
            lambda x: torch.exp(x - x.amax(dim=-1, keepdim=True)),
        ),
        Mistake(
            "you normalised over the wrong dimension: sum over the last one, dim=-1 (each query's "
            "row of scores must sum to 1), not dim=0",
            lambda x: torch.softmax(x, dim=0),
        ),
        Mistake(
            "you divided by the sum of *every* entry: sum over the last dimension only, "
            "`e.sum(dim=-1, keepdim=True)`",
            lambda x: torch.exp(x) / torch.exp(x).sum(),
        ),
        Mistake(
            "the sum needs `keepdim=True`: without it the row sums lose their last axis, and "
            "broadcasting divides entry [i, j] by the sum of row j instead of row i",
            lambda x: torch.exp(x) / torch.exp(x).sum(dim=-1),
        ),
    ]
    return run_check("Exercise 1.1 — softmax", student_fn, masked_softmax, cases, mistakes)


def _cosine_scores(x: torch.Tensor) -> torch.Tensor:
    unit = x / x.norm(dim=-1, keepdim=True)  # (T, D): every token scaled to length 1
    return unit @ unit.T  # (T, D) @ (D, T) -> (T, T)


def _cosine_context(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(_cosine_scores(x), dim=-1) @ x  # (T, T) @ (T, D) -> (T, D)


def _scores_then_context(scores: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores, dim=-1) @ x


def _unit(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return x / x.norm(dim=dim, keepdim=True)


def _sum_of_squares(x: torch.Tensor) -> torch.Tensor:
    return (x * x).sum(dim=-1, keepdim=True)  # (T, 1)


def cosine_context_vectors(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 1.2: ``student_fn(inputs) -> context``, ``(T, D) -> (T, D)``, attention that ignores length.

    The score of query ``i`` against key ``j`` is the cosine of their angle,
    ``x_i · x_j / (|x_i| |x_j|)``; the weights are its softmax over the keys, and the context
    averages the *original* inputs: ``softmax(cos) @ inputs``.
    """
    cases = [
        Case("the six tokens of 'Your journey starts with one step'", (INPUTS,)),
        Case(
            "a token and its double (same direction, same cosines), negative entries",
            (torch.tensor([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 1.0], [-1.0, 0.5, 2.0]]),),
        ),
        Case("T=5 tokens of width D=4", (_randn(5, 4, seed=12),)),
        Case("a single token, T=1", (_randn(1, 3, seed=14),)),
    ]
    mistakes = [
        Mistake(
            "the cosines only decide the weights; the context averages the original `inputs`, "
            "not the normalised vectors (a value keeps its length)",
            lambda x: _scores_then_context(_cosine_scores(x), _unit(x)),
        ),
        Mistake(
            "divide by the length of the query as well as the key's: the cosine divides the dot "
            "product by both lengths",
            lambda x: _scores_then_context(x @ _unit(x).T, x),
        ),
        Mistake(
            "divide by the length of the key as well as the query's: otherwise long keys still win",
            lambda x: _scores_then_context(_unit(x) @ x.T, x),
        ),
        Mistake(
            "normalise each *token* (a row, dim=-1) to length 1; you normalised each feature column (dim=0)",
            lambda x: _scores_then_context(_unit(x, dim=0) @ _unit(x, dim=0).T, x),
        ),
        Mistake(
            "divide by the lengths |x| = sqrt(sum of squares), not by the sums of squares",
            lambda x: _scores_then_context((x @ x.T) / (_sum_of_squares(x) * _sum_of_squares(x).T), x),
        ),
        Mistake(
            "the length of a vector is sqrt(sum of its squared entries), not the sum of its entries",
            lambda x: _scores_then_context(
                (x / x.sum(dim=-1, keepdim=True)) @ (x / x.sum(dim=-1, keepdim=True)).T, x
            ),
        ),
        Mistake(
            "these are the plain dot products of this notebook: divide each one by the lengths of "
            "its query and its key",
            lambda x: _scores_then_context(x @ x.T, x),
        ),
        Mistake(
            "the cosines still need a softmax to become weights before they mix the inputs",
            lambda x: _cosine_scores(x) @ x,
        ),
        Mistake(
            "each *row* of the weights must sum to 1 (one row per query): softmax over dim=-1",
            lambda x: torch.softmax(_cosine_scores(x), dim=0) @ x,
        ),
        Mistake(
            "you returned the weights, not the context: multiply them with the inputs",
            lambda x: torch.softmax(_cosine_scores(x), dim=-1),
        ),
    ]
    return run_check(
        "Exercise 1.2 — attention that ignores length", student_fn, _cosine_context, cases, mistakes
    )


def top_token(answer: Any) -> Verdict:
    """Exercise 1.3: predict which token 'journey' attends to most once 'with' is doubled.

    ``answer`` is a token string, e.g. ``"step"``. The embedding of 'with' (``inputs[3]``) is
    replaced by twice itself; 'journey' (``inputs[1]``) is the query, as in notebook 01.
    """
    title = "Exercise 1.3 — predict the top token"
    doubled = INPUTS.clone()
    doubled[3] = 2 * doubled[3]
    scores = doubled @ doubled[1]  # (T, D) @ (D,) -> (T,)
    expected = TOKENS[int(scores.argmax())]
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(TOKENS):
        return Verdict(
            False, f'{FAIL} {title}: answer with the token as a string, e.g. "step", not its index.'
        )
    hint = (
        "doubling a key vector doubles its dot product with the query: take the scores "
        "`attn_scores_1` printed in notebook 01, double the score of 'with' and compare; "
        "softmax keeps the order of the scores"
    )
    if answer == "journey":
        hint = "a token does not always attend most to itself; " + hint
    return check_answer(title, answer, expected, hint)


# ---------------------------------------------------------------------------------------------
# Notebook 02
# ---------------------------------------------------------------------------------------------


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


def _cross_case(b: int, tq: int, tk: int, dq: int, dkv: int, dk: int, dv: int, seed: int) -> tuple:
    gen = torch.Generator().manual_seed(seed)
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
    mistakes = [
        Mistake(
            "the roles are swapped: the queries are projections of `x_q` (the tokens that ask), the "
            "keys and values projections of `x_kv` (the tokens that are read)",
            lambda xq, xkv, wq, wk, wv: _plain_attention(xkv @ wq, xq @ wk, xq @ wv),
        ),
        Mistake(
            "this is self-attention on `x_q`: in cross-attention the keys and the values are "
            "projections of `x_kv`",
            lambda xq, xkv, wq, wk, wv: _plain_attention(xq @ wq, xq @ wk, xq @ wv),
        ),
        Mistake(
            "the values must come from the same tokens as the keys (`x_kv`): the weight of key j "
            "mixes in value j",
            lambda xq, xkv, wq, wk, wv: _plain_attention(xq @ wq, xkv @ wk, xq @ wv),
        ),
        Mistake(
            "the keys come from `x_kv`: the queries are matched against the tokens being read, "
            "not against themselves",
            lambda xq, xkv, wq, wk, wv: _plain_attention(xq @ wq, xq @ wk, xkv @ wv),
        ),
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
        Mistake(
            "you scaled by the width of the input `x_q`; the scale comes from the width Dk of the "
            "*projected* queries and keys, `W_key.shape[-1]`",
            lambda *args: _cross_attention(*args, scale=1.0 / math.sqrt(args[0].shape[-1])),
        ),
        Mistake(
            "you scaled by the width of the input `x_kv`; the scale comes from the width Dk of the "
            "*projected* queries and keys, `W_key.shape[-1]`",
            lambda *args: _cross_attention(*args, scale=1.0 / math.sqrt(args[1].shape[-1])),
        ),
        Mistake(
            "softmax over the wrong dimension: each query's weights over the keys must sum to 1, "
            "so use dim=-1 (the keys), not dim=-2 (the queries)",
            lambda *args: _cross_attention(*args, dim=-2),
        ),
    ]
    return run_check(
        "Exercise 2.1 — cross-attention with projections", student_fn, _cross_attention, cases, mistakes
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
    gen = torch.Generator().manual_seed(seed)
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
        Case("a batch (2, 5, 4), Dout=3", (_randn(2, 5, 4, seed=31), *_seeded_weights(4, 3, seed=32))),
        Case("a single token, T=1", (_randn(1, 3, seed=33), *_seeded_weights(3, 2, seed=34))),
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
    return run_check("Exercise 2.2 — find the bug", student_fn, _self_attention, cases, mistakes)


def cross_attention_shapes(context_shape: Any, weights_shape: Any) -> Verdict:
    """Exercise 2.3: predict the shapes of ``(context, weights)`` for cross-attention.

    ``query`` ``(3, 4, 16)``, ``key`` ``(3, 9, 16)``, ``value`` ``(3, 9, 40)``; give each
    shape as a tuple, e.g. ``(1, 2, 3)``.
    """
    title = "Exercise 2.3 — predict the shapes"
    query, key, value = torch.zeros(3, 4, 16), torch.zeros(3, 9, 16), torch.zeros(3, 9, 40)
    context, weights = _sdpa(query, key, value)
    expected_context, expected_weights = tuple(context.shape), tuple(weights.shape)
    if context_shape is ... or weights_shape is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    context_hints = {
        (3, 9, 40): "the context has one row per *query* (Tq=4), not per key",
        (3, 4, 16): "each context row is a weighted sum of *value* rows, so its width is Dv=40",
        (3, 9, 16): "one row per query (Tq=4), each as wide as a value (Dv=40)",
    }
    weights_hints = {
        (3, 9, 4): "the weights are (B, Tq, Tk): one row per query, one column per key",
        (3, 4, 4): "queries and keys need not be equally many: one column per key (Tk=9)",
        (3, 9, 9): "one row per query (Tq=4), one column per key (Tk=9)",
        (3, 4, 16): "the weights compare queries with keys: (B, Tq, Tk), the width Dk is summed away",
    }
    parts = [
        check_answer(
            "context", _as_tuple(context_shape), expected_context, _hint(context_shape, context_hints)
        ),
        check_answer(
            "weights", _as_tuple(weights_shape), expected_weights, _hint(weights_shape, weights_hints)
        ),
    ]
    if all(parts):
        return Verdict(
            True, f"{PASS} {title}: right, context {expected_context} and weights {expected_weights}.", "pass"
        )
    wrong = "\n".join("   " + p.message.replace("\n", "\n   ") for p in parts if not p)
    return Verdict(False, f"{FAIL} {title}:\n{wrong}")


_ENTROPY_CHOICES = ("a", "b", "c", "d")
_NO_OVERFLOW = (
    "torch's softmax subtracts each row's maximum before `exp` (exercise 1.1), so large scores never overflow"
)


def drop_the_scale(unscaled_entropy: Any, scaled_entropy: Any) -> Verdict:
    """Exercise 2.4: predict how the entropy of the weights changes with ``d_k`` (an ablation).

    Random queries and keys (mean 0, variance 1), 8 keys per query; as ``d_k`` grows, the mean
    entropy of each query's weights (a) rises towards ln 8, (b) stays about the same, (c) falls
    towards 0, or (d) becomes NaN. ``unscaled_entropy`` is the answer for the raw dot products
    (``scale=1.0``), ``scaled_entropy`` for the scores divided by ``sqrt(d_k)``; each a letter.
    """
    title = "Exercise 2.4 — ablation: drop the √d_k"
    if unscaled_entropy is ... or scaled_entropy is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    unscaled_hints = {
        "a": "larger scores do not make the weights flatter: softmax turns a wider spread of "
        "scores into sharper weights (try a large factor in the temperature explorer)",
        "b": "without the scale the variance of the scores grows like d_k (the first experiment), "
        "so the weights cannot stay the same",
        "d": _NO_OVERFLOW,
    }
    scaled_hints = {
        "a": "with the scale the scores have variance 1 for every d_k, so the weights hardly depend on d_k",
        "c": "with the scale the scores have variance 1 for every d_k, so the weights hardly depend on d_k",
        "d": _NO_OVERFLOW,
    }
    parts = [
        _choice("without the scale", unscaled_entropy, "c", unscaled_hints),
        _choice("with the scale", scaled_entropy, "b", scaled_hints),
    ]
    if all(parts):
        return Verdict(
            True,
            f"{PASS} {title}: right: without the scale the entropy falls towards 0 (each query "
            "ends up attending to one key); with it, it stays about the same. Now run the experiment.",
            "pass",
        )
    wrong = "\n".join("   " + p.message.replace("\n", "\n   ") for p in parts if not p)
    return Verdict(False, f"{FAIL} {title}:\n{wrong}")


def _choice(title: str, answer: Any, expected: str, hints: dict[str, str]) -> Verdict:
    letter = answer.strip().lower() if isinstance(answer, str) else answer
    if letter not in _ENTROPY_CHOICES:
        return Verdict(
            False, f'{FAIL} {title}: answer with one letter, "a", "b", "c" or "d"; got {answer!r}.'
        )
    return check_answer(title, letter, expected, hints.get(letter, ""))


def _as_tuple(shape: Any) -> Any:
    return tuple(shape) if isinstance(shape, (list, torch.Size)) else shape


def _hint(answer: Any, hints: dict[tuple[int, ...], str]) -> str:
    default = "query (B, Tq, Dk), key (B, Tk, Dk), value (B, Tk, Dv): follow the two matmuls"
    try:
        return hints.get(_as_tuple(answer), default)
    except TypeError:  # an unhashable answer, e.g. a tuple holding a list
        return default
