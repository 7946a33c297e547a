"""Exercise checks for notebook 01 (dot-product attention); see :mod:`attnlib.check._core`.

Shapes: ``T`` tokens, ``D`` embedding width, ``Tk`` key length.

Each check runs the student's function on a few cases, simplest first, against a reference
(attnlib's own functions where they exist), and recognises the typical mistakes (softmax over the
wrong dimension, overflow, a length divided by the wrong thing, ...). Prediction checks name the
misconception behind each wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .. import masked_softmax
from ..i18n import N_, fmt, tr
from ..tiled import online_softmax
from ._core import FAIL, Case, Mistake, Verdict, check_answer, not_a_distribution, randn, run_check
from ._reach import own, torch_api

__all__ = ["cosine_context_vectors", "softmax", "top_token"]

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


def _naive_softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def _shifted_softmax(x: torch.Tensor, shift: torch.Tensor, keepdim: bool = True) -> torch.Tensor:
    """``exp(x - shift)`` over its sum along the last axis: the softmax, whatever ``shift`` subtracts,
    as long as it is one number per row."""
    e = torch.exp(x - shift)
    return e / e.sum(dim=-1, keepdim=keepdim)


#: Out of reach while exercise 1.1 runs: attnlib's softmaxes, and torch's, which the text forbids.
SOFTMAX_FORBIDDEN = (
    own(masked_softmax),
    own(online_softmax),
    torch_api(
        "torch.softmax",
        (torch, "softmax"),
        (torch.Tensor, "softmax"),
        (torch.special, "softmax"),
        (F, "softmax"),
        hint=N_("use torch.exp, .sum and .amax, as the exercise says"),
    ),
    torch_api(
        "torch.log_softmax",
        (torch, "log_softmax"),
        (torch.Tensor, "log_softmax"),
        (torch.special, "log_softmax"),
        (F, "log_softmax"),
        hint=N_(
            "exp(log_softmax(x)) is torch's softmax again: use torch.exp, .sum and .amax, as the text says"
        ),
    ),
)


def softmax(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 1.1: ``student_fn(scores) -> weights``, softmax over the last dimension.

    ``scores`` has shape ``(..., Tk)``; the result has the same shape, each slice along the last
    dimension positive and summing to 1. Large scores (around 1000) must not give NaN, nor rows
    far apart (a shift by the maximum of the whole tensor leaves the lower row all zeros: 0/0).
    """
    cases = [
        Case("the six scores of 'journey' (1-D)", (INPUTS @ INPUTS[1],)),
        Case("a (4, 4) matrix of scores", (randn(4, 4, seed=10),)),
        Case("all 6x6 scores of the sentence", (INPUTS @ INPUTS.T,)),
        Case("a batch (2, 4, 5)", (randn(2, 4, 5, seed=11),)),
        Case(
            "large scores around 1000, rows more than 100 apart",
            (torch.tensor([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 990.0], [880.0, 881.0, 882.0]]),),
        ),
    ]
    mistakes = [
        Mistake(
            "exp(1000) overflows to inf and inf/inf is NaN: subtract each row's maximum before exp "
            "(softmax(x) equals softmax(x - max), so the result does not change)",
            _naive_softmax,
        ),
        Mistake(
            "subtract each row's own maximum, `x.amax(dim=-1, keepdim=True)`, not the maximum of the whole "
            "tensor: a row far below it (880 against 1002) gets exp(-122) = 0 everywhere, and 0/0 = NaN",
            lambda x: _shifted_softmax(x, x.amax()),
        ),
        Mistake(
            "the maximum needs `keepdim=True` too: `x.amax(dim=-1)` loses the last axis, so broadcasting "
            "subtracts the maximum of row j from column j instead of each row's own maximum",
            lambda x: _shifted_softmax(x, x.amax(dim=-1)),
        ),
        Mistake(
            "the maximum and the sum both need `keepdim=True`: without it they lose the last axis, and "
            "broadcasting pairs entry [i, j] with row j instead of row i",
            lambda x: _shifted_softmax(x, x.amax(dim=-1), keepdim=False),
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
        not_a_distribution(),
    ]
    return run_check(
        N_("Exercise 1.1 — softmax"), student_fn, masked_softmax, cases, mistakes, forbidden=SOFTMAX_FORBIDDEN
    )


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
        Case("T=5 tokens of width D=4", (randn(5, 4, seed=12),)),
        Case("a single token, T=1", (randn(1, 3, seed=14),)),
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
        N_("Exercise 1.2 — attention that ignores length"), student_fn, _cosine_context, cases, mistakes
    )


def top_token(answer: Any) -> Verdict:
    """Exercise 1.3: predict which token 'journey' attends to most once 'with' is doubled.

    ``answer`` is a token string, e.g. ``"step"``. The embedding of 'with' (``inputs[3]``) is
    replaced by twice itself; 'journey' (``inputs[1]``) is the query, as in notebook 01.
    """
    title = N_("Exercise 1.3 — predict the top token")
    doubled = INPUTS.clone()
    doubled[3] = 2 * doubled[3]
    scores = doubled @ doubled[1]  # (T, D) @ (D,) -> (T,)
    expected = TOKENS[int(scores.argmax())]
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(TOKENS):
        return Verdict(
            False,
            f"{FAIL} "
            + tr('{title}: answer with the token as a string, e.g. "step", not its index.').format(
                title=tr(title)
            ),
        )
    hint = N_(
        "doubling a key vector doubles its dot product with the query: take the scores "
        "`attn_scores_1` printed in notebook 01, double the score of 'with' and compare; "
        "softmax keeps the order of the scores"
    )
    if answer == "journey":
        hint = fmt("a token does not always attend most to itself; {hint}", hint=fmt(hint))
    return check_answer(title, answer, expected, hint)
