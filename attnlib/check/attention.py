"""Exercise checks for notebooks 01 (dot-product attention) and 02 (trainable weights).

Shapes: ``B`` batch, ``T`` tokens, ``Tq``/``Tk`` query/key length, ``D`` embedding width,
``Dk`` query/key width, ``Dv`` value width.

Each check runs the student's function on a few cases, simplest first, against attnlib's own
implementation, and recognises the typical mistakes (softmax over the wrong dimension, the
scale forgotten or wrong, the key not transposed, ...). See :mod:`attnlib.check._core`.
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
    "all_context_vectors",
    "cross_attention_shapes",
    "fixed_self_attention",
    "scaled_dot_product_attention",
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


def _unscaled_attention(x: torch.Tensor) -> torch.Tensor:
    return _sdpa(x, x, x, scale=1.0)[0]


def all_context_vectors(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 1.2: ``student_fn(inputs) -> context``, ``(T, D) -> (T, D)``.

    Every token is at once query, key and value, with no trainable weights and no scaling:
    ``softmax(inputs @ inputs.T, dim=-1) @ inputs``, with matrix products, no loop.
    """
    cases = [
        Case("the six tokens of 'Your journey starts with one step'", (INPUTS,)),
        Case("T=4 tokens of width D=5", (_randn(4, 5, seed=12),)),
        Case("T=7 tokens of width D=2", (_randn(7, 2, seed=13),)),
        Case("a single token, T=1", (_randn(1, 3, seed=14),)),
    ]
    mistakes = [
        Mistake(
            "each *row* of the weights must sum to 1 (one row per query): softmax over dim=-1, "
            "then `weights @ inputs` (not `weights.T @ inputs`)",
            lambda x: torch.softmax(x @ x.T, dim=0) @ x,
        ),
        Mistake(
            "the scores still need a softmax to become weights before they mix the inputs",
            lambda x: (x @ x.T) @ x,
        ),
        Mistake(
            "notebook 01 does not scale the scores yet: use the plain dot products (scaling by "
            "1/sqrt(D) comes in notebook 02)",
            lambda x: _sdpa(x, x, x)[0],
        ),
        Mistake(
            "you returned the weights, not the context: multiply them with the inputs",
            lambda x: torch.softmax(x @ x.T, dim=-1),
        ),
    ]
    return run_check("Exercise 1.2 — all context vectors", student_fn, _unscaled_attention, cases, mistakes)


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


def _sdpa_context(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    return _sdpa(q, k, v, **kwargs)[0]


def _softmax_then_values(scores: torch.Tensor, v: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.softmax(scores, dim=dim) @ v


def scaled_dot_product_attention(
    student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> Verdict:
    """Exercise 2.1: ``student_fn(query, key, value) -> context``.

    ``query`` ``(B, Tq, Dk)``, ``key`` ``(B, Tk, Dk)``, ``value`` ``(B, Tk, Dv)``; returns
    ``softmax(query @ keyᵀ / sqrt(Dk)) @ value`` of shape ``(B, Tq, Dv)``.
    """
    cases = [
        Case(
            "B=1, Tq=Tk=4, Dk=Dv=4",
            (_randn(1, 4, 4, seed=21), _randn(1, 4, 4, seed=22), _randn(1, 4, 4, seed=23)),
        ),
        Case(
            "B=2, T=6, Dk=Dv=8",
            (_randn(2, 6, 8, seed=24), _randn(2, 6, 8, seed=25), _randn(2, 6, 8, seed=26)),
        ),
        Case(
            "cross-attention: B=2, Tq=5, Tk=7, Dk=16, Dv=32",
            (_randn(2, 5, 16, seed=27), _randn(2, 7, 16, seed=28), _randn(2, 7, 32, seed=29)),
        ),
    ]
    mistakes = [
        Mistake(
            "the scale is missing: divide the scores by sqrt(Dk) before the softmax",
            lambda q, k, v: _sdpa_context(q, k, v, scale=1.0),
        ),
        Mistake(
            "you divided by Dk; divide by its square root, `math.sqrt(Dk)` (or `Dk ** 0.5`)",
            lambda q, k, v: _sdpa_context(q, k, v, scale=1.0 / q.shape[-1]),
        ),
        Mistake(
            "you multiplied by sqrt(Dk); divide by it",
            lambda q, k, v: _sdpa_context(q, k, v, scale=math.sqrt(q.shape[-1])),
        ),
        Mistake(
            "softmax over the wrong dimension: each query's weights over the keys must sum to 1, "
            "so use dim=-1 (the keys), not dim=-2 (the queries)",
            lambda q, k, v: _softmax_then_values(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), v, -2),
        ),
        Mistake(
            "softmax over the wrong dimension: dim=0 is the batch; use dim=-1 (the keys)",
            lambda q, k, v: _softmax_then_values(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), v, 0),
        ),
        Mistake(
            "the key is not transposed: the scores are `query @ key.transpose(-2, -1)`, "
            "(B, Tq, Dk) @ (B, Dk, Tk) -> (B, Tq, Tk)",
            lambda q, k, v: _softmax_then_values(q @ k / math.sqrt(q.shape[-1]), v, -1),
        ),
        Mistake(
            "you scaled by the value width Dv; the scale comes from the query/key width Dk",
            lambda q, k, v: _sdpa_context(q, k, v, scale=1.0 / math.sqrt(v.shape[-1])),
        ),
    ]
    return run_check(
        "Exercise 2.1 — scaled dot-product attention", student_fn, _sdpa_context, cases, mistakes
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


def _as_tuple(shape: Any) -> Any:
    return tuple(shape) if isinstance(shape, (list, torch.Size)) else shape


def _hint(answer: Any, hints: dict[tuple[int, ...], str]) -> str:
    default = "query (B, Tq, Dk), key (B, Tk, Dk), value (B, Tk, Dv): follow the two matmuls"
    try:
        return hints.get(_as_tuple(answer), default)
    except TypeError:  # an unhashable answer, e.g. a tuple holding a list
        return default
