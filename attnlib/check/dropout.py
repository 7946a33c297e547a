"""Exercise checks for notebook 04 (dropout on attention weights; see attnlib.check._core).

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``Dk`` query/key width,
``Dv`` value width.

Random draws cannot be compared with a reference, so the exercises hand the student the
keep-mask (True = this weight survives) that dropout drew; every case is built from a local
``torch.Generator`` and never touches the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..functional import attention_scores, masked_softmax
from ..masks import causal_mask
from ._core import PASS, TODO, Case, Mistake, Verdict, check_answer, run_check

__all__ = ["attention_with_dropout", "dropout_row_sums", "dropout_weights"]


def _causal_weights(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """Causal attention weights of the given ``(..., T, T)`` shape, each row summing to 1."""
    scores = torch.randn(shape, generator=gen)
    return masked_softmax(scores, causal_mask(shape[-1]))  # (..., T, T)


def _keep(gen: torch.Generator, shape: tuple[int, ...], p: float) -> torch.Tensor:
    return torch.rand(shape, generator=gen) >= p  # bool, True = kept (probability 1 - p)


def _reference_dropout(weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    # What torch.nn.Dropout computes once it has drawn ``keep``: zero the rest, rescale the kept.
    return weights * keep / (1 - p)


def _dropout_cases() -> list[Case]:
    gen = torch.Generator().manual_seed(4)
    cases = []
    for name, shape, p in [
        ("one 4x4 map, p=0.5", (4, 4), 0.5),
        ("one 6x6 map, p=0.2", (6, 6), 0.2),
        ("a batch (2, 5, 5), p=0.75", (2, 5, 5), 0.75),
        ("heads (2, 3, 4, 4), p=0.1", (2, 3, 4, 4), 0.1),
        ("p=0: nothing is dropped", (3, 3), 0.0),
    ]:
        cases.append(Case(name, (_causal_weights(gen, shape), _keep(gen, shape, p), p)))
    return cases


def dropout_weights(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 4.1: ``student_fn(weights, keep, p) -> dropped weights``.

    ``weights`` ``(..., Tq, Tk)`` float, ``keep`` bool of the same shape (True = the weight
    survives), ``p`` the dropout probability; returns the same shape as ``weights``.
    """
    mistakes = [
        Mistake(
            "the kept weights must be scaled up by 1/(1-p); without it every row sums to about "
            "(1-p) on average instead of 1",
            lambda w, keep, p: w * keep,
        ),
        Mistake(
            "divide by (1-p), the probability of being KEPT, not by p (the two only agree when p=0.5)",
            lambda w, keep, p: w * keep / p,
        ),
        Mistake(
            "multiply by 1/(1-p), not by (1-p): the survivors must grow to make up for the dropped ones",
            lambda w, keep, p: w * keep * (1 - p),
        ),
        Mistake(
            "True in `keep` marks the weights that survive: you zeroed the kept ones and kept "
            "the dropped ones",
            lambda w, keep, p: w * ~keep / (1 - p),
        ),
    ]
    return run_check(
        "Exercise 4.1 — dropout on attention weights",
        student_fn,
        _reference_dropout,
        _dropout_cases(),
        mistakes,
    )


def dropout_row_sums(eval_row_sum: object, expected_train_row_sum: object) -> Verdict:
    """Exercise 4.2 (prediction): the row sums of causal attention weights behind dropout(p=0.5).

    Args:
        eval_row_sum: what every row of the weights sums to in eval mode.
        expected_train_row_sum: what a row sums to in train mode, on average over many draws.
    """
    title = "Exercise 4.2 — row sums"
    parts = [
        check_answer(
            f"{title}, eval mode",
            eval_row_sum,
            1.0,
            "eval mode switches dropout off: no weight is dropped or rescaled, and softmax weights "
            "over the visible keys sum to 1",
        ),
        check_answer(
            f"{title}, train mode (average)",
            expected_train_row_sum,
            1.0,
            {
                0.5: "half the weights are dropped, but the survivors are doubled (1/(1-p) = 2)",
                2.0: "the survivors are doubled, but on average only half of them survive",
            }.get(
                expected_train_row_sum if isinstance(expected_train_row_sum, (int, float)) else None,
                "each weight survives with probability 1-p and is then multiplied by 1/(1-p): "
                "its expected value is the weight itself",
            ),
        ),
    ]
    if all(v.status == "todo" for v in parts):
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    if all(parts):
        return Verdict(
            True,
            f"{PASS} {title}: right, 1.0 both times: in eval mode exactly, in train mode on average "
            "(one draw can give 0, 2 or anything between).",
            "pass",
        )
    return Verdict(False, "\n".join(v.message for v in parts if not v), "fail")


def _reference_attention(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, keep: torch.Tensor, p: float
) -> torch.Tensor:
    scores = attention_scores(queries, keys)  # (..., T, T)
    weights = masked_softmax(scores, causal_mask(scores.shape[-1]))
    return _reference_dropout(weights, keep, p) @ values  # (..., T, T) @ (..., T, Dv) -> (..., T, Dv)


def _attention_cases() -> list[Case]:
    gen = torch.Generator().manual_seed(5)
    cases = []
    for name, batch, t, dk, dv, p in [
        ("B=1, T=3, p=0.5", (1,), 3, 2, 2, 0.5),
        ("B=2, T=6, p=0.2", (2,), 6, 4, 3, 0.2),
        ("heads (2, 2, 5, .), p=0.6", (2, 2), 5, 4, 4, 0.6),
    ]:
        q = torch.randn(*batch, t, dk, generator=gen)
        k = torch.randn(*batch, t, dk, generator=gen)
        v = torch.randn(*batch, t, dv, generator=gen)
        cases.append(Case(name, (q, k, v, _keep(gen, (*batch, t, t), p), p)))
    return cases


def _dropout_on_scores(q, k, v, keep, p):
    scores = attention_scores(q, k) * keep / (1 - p)
    return masked_softmax(scores, causal_mask(scores.shape[-1])) @ v


def _dropout_then_renormalised(q, k, v, keep, p):
    dropped = masked_softmax(attention_scores(q, k), causal_mask(q.shape[-2])) * keep
    return dropped / dropped.sum(-1, keepdim=True).clamp_min(1e-12) @ v


def attention_with_dropout(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 4.3 (find the bug): ``student_fn(queries, keys, values, keep, p) -> context``.

    Causal scaled dot-product attention with dropout on the weights: ``queries``/``keys``
    ``(..., T, Dk)``, ``values`` ``(..., T, Dv)``, ``keep`` bool ``(..., T, T)``; returns
    ``(..., T, Dv)``.
    """
    mistakes = [
        Mistake(
            "dropout belongs on the weights AFTER softmax: a score set to 0 still gets weight exp(0) "
            "after softmax, so nothing is really dropped",
            _dropout_on_scores,
        ),
        Mistake(
            "the kept weights must not be renormalised to sum to 1: dropout rescales by 1/(1-p) only, "
            "so one draw's row may sum to more or less than 1",
            _dropout_then_renormalised,
        ),
        Mistake(
            "the kept weights must be scaled up by 1/(1-p)",
            lambda q, k, v, keep, p: (
                masked_softmax(attention_scores(q, k), causal_mask(q.shape[-2])) * keep @ v
            ),
        ),
        Mistake(
            "the causal mask is missing: token i may only attend to tokens 0..i",
            lambda q, k, v, keep, p: torch.softmax(attention_scores(q, k), dim=-1) * keep / (1 - p) @ v,
        ),
    ]
    return run_check(
        "Exercise 4.3 — dropout in the right place",
        student_fn,
        _reference_attention,
        _attention_cases(),
        mistakes,
    )
