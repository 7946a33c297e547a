"""Exercise checks for notebook 04 (dropout on attention weights; see attnlib.check._core).

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``Dk`` query/key width,
``Dv`` value width.

Random draws cannot be compared with a reference, so exercises 4.1 and 4.3 hand the student
the keep-mask (True = this weight survives) that dropout drew, and 4.2 asks for the mean and
variance over all draws, a formula. Every case is built from a local ``torch.Generator`` and
never touches the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import attention_scores, causal_mask, masked_softmax
from ..i18n import N_, tr
from ._core import Case, Mistake, Verdict, generator, result_part, run_check

__all__ = ["attention_with_dropout", "classic_dropout", "dropout_row_sum_stats"]


def _causal_weights(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """Causal attention weights of the given ``(..., T, T)`` shape, each row summing to 1."""
    scores = torch.randn(shape, generator=gen)
    return masked_softmax(scores, causal_mask(shape[-1]))  # (..., T, T)


def _keep(gen: torch.Generator, shape: tuple[int, ...], p: float) -> torch.Tensor:
    return torch.rand(shape, generator=gen) >= p  # bool, True = kept (probability 1 - p)


def _reference_dropout(weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    # What torch.nn.Dropout computes once it has drawn ``keep``: zero the rest, rescale the kept.
    return weights * keep / (1 - p)


def _classic_dropout(weights: torch.Tensor, keep: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    # Dropout as first published (Hinton et al. 2012; Srivastava et al. 2014, §1 and Figure 2):
    # nothing is rescaled in training; at test time every weight is multiplied by the probability
    # of being kept, the factor its training value averages to.
    return weights * keep if training else weights * (1 - p)


def _classic_cases() -> list[Case]:
    gen = generator(4)
    cases = []
    for name, shape, p, training in [
        (N_("train mode, one 4x4 map, p=0.25"), (4, 4), 0.25, True),
        (N_("eval mode, one 4x4 map, p=0.25"), (4, 4), 0.25, False),
        (N_("train mode, a batch (2, 5, 5), p=0.6"), (2, 5, 5), 0.6, True),
        (N_("eval mode, a batch (2, 5, 5), p=0.6"), (2, 5, 5), 0.6, False),
        (N_("eval mode, heads (2, 3, 4, 4), p=0.1"), (2, 3, 4, 4), 0.1, False),
        (N_("train mode, p=0: nothing is dropped"), (3, 3), 0.0, True),
        (N_("eval mode, p=0"), (3, 3), 0.0, False),
    ]:
        cases.append(Case(name, (_causal_weights(gen, shape), _keep(gen, shape, p), p, training)))
    return cases


def _train_as(train_fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """A wrong answer that is right in eval mode and computes ``train_fn`` in train mode."""
    return lambda w, keep, p, training: train_fn(w, keep, p) if training else w * (1 - p)


def _eval_as(eval_fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """A wrong answer that is right in train mode and computes ``eval_fn`` in eval mode."""
    return lambda w, keep, p, training: w * keep if training else eval_fn(w, keep, p)


def classic_dropout(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 4.1: ``student_fn(weights, keep, p, training) -> weights``, dropout as first published.

    ``weights`` ``(..., Tq, Tk)`` float, ``keep`` bool of the same shape (True = the weight
    survives; in eval mode nothing is dropped and ``keep`` must be ignored), ``p`` the
    probability of dropping, ``training`` the mode. In train mode the survivors keep their
    value (no rescale); in eval mode the weights are scaled so that they equal the train-mode
    weights on average.
    """
    eval_hint = N_(
        "unchanged weights are larger than what train mode gives on average: there a weight is "
        "kept with probability 1-p and not rescaled, so it averages to (1-p) times its value, and "
        "eval mode must return that average"
    )
    mistakes = [
        # Eval-mode slips first: each of them is right in train mode.
        Mistake(eval_hint, _eval_as(lambda w, keep, p: w)),
        Mistake(
            "eval mode must shrink the weights, not grow them: in training a weight is kept with "
            "probability 1-p and is 0 otherwise, so it averages to less than its value",
            _eval_as(lambda w, keep, p: w / (1 - p)),
        ),
        Mistake(
            "scale by the probability of being KEPT, 1-p (Srivastava et al. 2014 call it p: their p is the "
            "probability of keeping, PyTorch's the probability of dropping)",
            _eval_as(lambda w, keep, p: w * p),
        ),
        Mistake(
            "in eval mode nothing is dropped: use every weight and ignore `keep`",
            _eval_as(lambda w, keep, p: w * keep * (1 - p)),
        ),
        Mistake(
            "dropout is random only in train mode; in eval mode nothing is dropped: use every "
            "weight and ignore `keep`",
            _eval_as(lambda w, keep, p: w * keep),
        ),
        Mistake(
            "in the original form the survivors keep their value in training: no 1/(1-p) there (that is "
            "inverted dropout, what nn.Dropout does today; here eval mode compensates instead)",
            _train_as(lambda w, keep, p: w * keep / (1 - p)),
        ),
        Mistake(
            "in training, multiply the weights by the keep-mask only: the scale (1-p) belongs to eval mode",
            _train_as(lambda w, keep, p: w * keep * (1 - p)),
        ),
        Mistake(
            "True in `keep` marks the weights that survive: you zeroed the kept ones and kept the "
            "dropped ones",
            _train_as(lambda w, keep, p: w * ~keep),
        ),
    ]
    return run_check(
        N_("Exercise 4.1 — dropout as first published"),
        student_fn,
        _classic_dropout,
        _classic_cases(),
        mistakes,
    )


def _row_sum_stats(weights: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    # Row sum S = sum_j w_j k_j / (1-p) with independent k_j ~ Bernoulli(1-p):
    # E[S] = sum_j w_j and Var[S] = sum_j w_j^2 p(1-p) / (1-p)^2 = p / (1-p) * sum_j w_j^2.
    return weights.sum(dim=-1), p / (1 - p) * (weights**2).sum(dim=-1)  # (..., Tq) each


def _fully_masked_rows(gen: torch.Generator, t: int) -> torch.Tensor:
    """Causal weights behind two left pads: the pads' rows see no key and are all zeros (attnlib)."""
    real = torch.arange(t) >= 2  # (Tk,) the first two keys are padding
    return masked_softmax(torch.randn(t, t, generator=gen), causal_mask(t) & real)  # (T, T)


def _row_sum_cases() -> list[Case]:
    gen = generator(6)
    return [
        Case("one 4x4 causal map, p=0.5", (_causal_weights(gen, (4, 4)), 0.5)),
        Case("a batch (2, 5, 5), p=0.1", (_causal_weights(gen, (2, 5, 5)), 0.1)),
        Case("heads (2, 3, 4, 4), p=0.3", (_causal_weights(gen, (2, 3, 4, 4)), 0.3)),
        Case(
            "left padding: rows 0 and 1 see no key (all weights 0), p=0.5", (_fully_masked_rows(gen, 5), 0.5)
        ),
        Case("p=0: nothing is dropped", (_causal_weights(gen, (3, 3)), 0.0)),
    ]


def dropout_row_sum_stats(student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> Verdict:
    """Exercise 4.2: ``student_fn(weights, p) -> (mean, variance)`` of each row's sum after dropout.

    ``weights`` ``(..., Tq, Tk)`` are attention weights (a fully masked row is all zeros), ``p``
    the probability of dropping. Dropout keeps each weight independently with probability 1-p
    and rescales the kept ones by 1/(1-p); the result is the expected value and the variance,
    over the draws, of each query's row sum: two tensors of shape ``(..., Tq)``.
    """
    # The mean is checked first, then the variance; each mistake models one part only.
    cases = _row_sum_cases()
    mean_mistakes = [
        Mistake(
            "a row sums to 1 only if its query sees a key: a fully masked row is all zeros and sums "
            "to 0 whatever is dropped. The mean of the row sum is the sum of the weights' means",
            lambda w, p: torch.ones(w.shape[:-1]),
        ),
        Mistake(
            "the kept weights are rescaled by 1/(1-p), so on average dropout leaves each weight, and the "
            "row sum, unchanged: no factor (1-p) in the mean",
            lambda w, p: (1 - p) * w.sum(dim=-1),
        ),
        Mistake(
            "each weight is kept only with probability 1-p: its mean is (1-p) * w/(1-p) = w, not w/(1-p)",
            lambda w, p: w.sum(dim=-1) / (1 - p),
        ),
    ]
    var_mistakes = [
        Mistake(
            "a kept weight is w/(1-p), not w: the constant 1/(1-p) comes out of a variance squared, "
            "so each weight adds w^2 * p(1-p) / (1-p)^2 = w^2 * p/(1-p)",
            lambda w, p: p * (1 - p) * (w**2).sum(dim=-1),
        ),
        Mistake(
            "a keep-or-drop draw (1 with probability 1-p, else 0) has variance p(1-p), not p",
            lambda w, p: p / (1 - p) ** 2 * (w**2).sum(dim=-1),
        ),
        Mistake(
            "the weights are dropped independently, so the variance of the row sum is the sum of the "
            "weights' variances, and a constant factor w comes out squared: sum the w^2, not the w",
            lambda w, p: p / (1 - p) * w.sum(dim=-1),
        ),
        Mistake(
            "that is the standard deviation; the variance is its square",
            lambda w, p: (p / (1 - p) * (w**2).sum(dim=-1)).sqrt(),
        ),
        Mistake(
            "the row sum adds up the Tk weights of one query: sum over the last axis (the keys), "
            "not over the queries",
            lambda w, p: p / (1 - p) * (w**2).sum(dim=-2),
        ),
    ]
    title = N_("Exercise 4.2 — the spread of a row sum")
    parts = [
        (N_("the mean (first result)"), mean_mistakes),
        (N_("the variance (second result)"), var_mistakes),
    ]
    for index, (name, part_mistakes) in enumerate(parts):
        verdict = run_check(
            title,
            result_part(student_fn, index, 2),
            result_part(_row_sum_stats, index, 2),
            cases,
            part_mistakes,
        )
        if verdict.status == "fail":  # a wrong result: say which of the two it is
            shown = tr(title)  # the title as the verdict shows it, in the current language
            which = tr("{title}, {part}").format(title=shown, part=tr(name))
            return Verdict(False, verdict.message.replace(shown, which, 1))
        if not verdict:
            return verdict
    return verdict


def _reference_attention(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, keep: torch.Tensor, p: float
) -> torch.Tensor:
    scores = attention_scores(queries, keys)  # (..., T, T)
    weights = masked_softmax(scores, causal_mask(scores.shape[-1]))
    return _reference_dropout(weights, keep, p) @ values  # (..., T, T) @ (..., T, Dv) -> (..., T, Dv)


def _attention_cases() -> list[Case]:
    gen = generator(5)
    cases = []
    for name, batch, t, dk, dv, p in [
        (N_("B=1, T=3, p=0.5"), (1,), 3, 2, 2, 0.5),
        (N_("B=2, T=6, p=0.2"), (2,), 6, 4, 3, 0.2),
        (N_("heads (2, 2, 5, .), p=0.6"), (2, 2), 5, 4, 4, 0.6),
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
        N_("Exercise 4.3 — dropout in the right place"),
        student_fn,
        _reference_attention,
        _attention_cases(),
        mistakes,
    )
