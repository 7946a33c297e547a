"""Answers to the checks of notebook 04."""

from __future__ import annotations

import torch

import attnlib
from tests.check.verdicts import stub

# ----------------------------------------------------------------------------- right answers


def right_dropout(weights, keep, p):
    return weights.masked_fill(~keep, 0.0) / (1 - p)


def right_classic(weights, keep, p, training):
    if training:
        return weights.masked_fill(~keep, 0.0)  # the survivors keep their value
    return weights * (1 - p)  # the training average of every weight


def right_row_sum_stats(weights, p):
    mean = weights.sum(dim=-1)  # (..., Tq): each kept weight w/(1-p) times its chance 1-p
    variance = p / (1 - p) * (weights**2).sum(dim=-1)  # independent draws: the variances add up
    return mean, variance


def right_attention(queries, keys, values, keep, p):
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5  # (..., T, T)
    weights = attnlib.masked_softmax(scores, attnlib.causal_mask(scores.shape[-1]))
    return weights * keep / (1 - p) @ values  # (..., T, T) @ (..., T, Dv) -> (..., T, Dv)


RIGHT = {
    "classic_dropout": [right_classic],
    "dropout_row_sum_stats": [right_row_sum_stats],
    "attention_with_dropout": [right_attention],
}

# ----------------------------------------------------------------------------- typical mistakes


def renormalised_attention(queries, keys, values, keep, p):
    """Drops the right weights, then (wrongly) makes each row sum to 1 again."""
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    weights = attnlib.masked_softmax(scores, attnlib.causal_mask(scores.shape[-1])) * keep
    return weights / weights.sum(-1, keepdim=True) @ values


def buggy_attention(queries, keys, values, keep, p):
    """The function notebook 04 hands out: dropout on the scores, before softmax."""
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    scores = scores * keep / (1 - p)
    mask = attnlib.causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ values


WRONG = {
    "classic_dropout": [
        (lambda w, keep, p, training: w * keep if training else w, "eval mode must return that average"),
        (lambda w, keep, p, training: w * keep if training else w / (1 - p), "must shrink the weights"),
        (lambda w, keep, p, training: w * keep if training else w * p, "probability of being KEPT"),
        (
            lambda w, keep, p, training: w * keep * (1 - p) if training else w * (1 - p),
            "belongs to eval mode",
        ),
        (lambda w, keep, p, training: w * keep * (1 - p), "belongs to eval mode"),
        (lambda w, keep, p, training: w * keep, "ignore `keep`"),
        (lambda w, keep, p, training: w * keep / (1 - p) if training else w, "that is inverted dropout"),
        (lambda w, keep, p, training: w * keep / (1 - p) if training else w * (1 - p), "no 1/(1-p) there"),
        (
            lambda w, keep, p, training: w * ~keep if training else w * (1 - p),
            "marks the weights that survive",
        ),
    ],
    "dropout_row_sum_stats": [
        (lambda w, p: (torch.ones(w.shape[:-1]), right_row_sum_stats(w, p)[1]), "a fully masked row"),
        (lambda w, p: ((1 - p) * w.sum(-1), right_row_sum_stats(w, p)[1]), "no factor (1-p) in the mean"),
        (lambda w, p: (w.sum(-1) / (1 - p), right_row_sum_stats(w, p)[1]), "not w/(1-p)"),
        (lambda w, p: (w.sum(-1), p * (1 - p) * (w**2).sum(-1)), "comes out of a variance squared"),
        (lambda w, p: (w.sum(-1), p / (1 - p) ** 2 * (w**2).sum(-1)), "has variance p(1-p), not p"),
        (lambda w, p: (w.sum(-1), p / (1 - p) * w.sum(-1)), "sum the w^2, not the w"),
        (lambda w, p: (w.sum(-1), right_row_sum_stats(w, p)[1].sqrt()), "that is the standard deviation"),
        (lambda w, p: (w.sum(-1), p / (1 - p) * (w**2).sum(-2)), "not over the queries"),
    ],
    "attention_with_dropout": [
        (buggy_attention, "dropout belongs on the weights AFTER softmax"),  # the handed-out bug
        (renormalised_attention, "must not be renormalised"),
        (lambda q, k, v, keep, p: right_attention(q, k, v, keep, p) * (1 - p), "scaled up by 1/(1-p)"),
        (
            lambda q, k, v, keep, p: (
                torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) * keep / (1 - p) @ v
            ),
            "causal mask is missing",
        ),
    ],
}

# A mistake no hint models still says which of the two results is wrong; only the mean, no variance.
TOLD = {
    "dropout_row_sum_stats": [
        (lambda w, p: (w.sum(-1) + 0.1, right_row_sum_stats(w, p)[1]), "fail", "the mean (first result)"),
        (
            lambda w, p: (w.sum(-1), right_row_sum_stats(w, p)[1] + 0.1),
            "fail",
            "the variance (second result)",
        ),
        (lambda w, p: w.sum(-1), "fail", "case 1/5"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes


def broken(weights, *args):
    return weights @ torch.ones(7, 7)  # a shape error in the student's code


NOT_YET = {"classic_dropout": [stub], "dropout_row_sum_stats": [stub], "attention_with_dropout": [stub]}
_RAISED = (
    broken,
    "your code raised RuntimeError",
    "weights @ torch.ones(7, 7)",
)  # points at the student's line
CRASHES = {
    "classic_dropout": [_RAISED],
    "dropout_row_sum_stats": [_RAISED],
    "attention_with_dropout": [_RAISED],
}
