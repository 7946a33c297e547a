"""Answers to the checks of notebook 01."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import attnlib
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def softmax_ok(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def cosine_context_ok(inputs):
    unit = inputs / inputs.norm(dim=-1, keepdim=True)
    return torch.softmax(unit @ unit.T, dim=-1) @ inputs


def cosine_context_with_torch(inputs):
    cos = F.cosine_similarity(inputs[:, None, :], inputs[None, :, :], dim=-1)  # (T, T)
    return torch.softmax(cos, dim=-1) @ inputs


RIGHT = {
    "softmax": [softmax_ok],
    "cosine_context_vectors": [cosine_context_ok, cosine_context_with_torch],
    "top_token": [given("with")],
}

# ----------------------------------------------------------------------------- typical mistakes


def _exp_over_sum(dim=-1, keepdim=True):
    def fn(s):
        e = torch.exp(s)
        return e / (e.sum() if dim is None else e.sum(dim=dim, keepdim=keepdim))

    return fn


def _minus(shift, keepdim=True):
    """exp(s - shift(s)) over its sum along the last axis (with or without keepdim)."""

    def fn(s):
        e = torch.exp(s - shift(s))
        return e / e.sum(dim=-1, keepdim=keepdim)

    return fn


def _max_on_top_only(s):  # the shift in the numerator, not in the sum
    return torch.exp(s - s.amax(dim=-1, keepdim=True)) / torch.exp(s).sum(dim=-1, keepdim=True)


def _over_the_mean(s):  # divided by the mean instead of the sum
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return e / e.mean(dim=-1, keepdim=True)


def _unit(x, dim=-1):
    return x / x.norm(dim=dim, keepdim=True)


def _context_from(scores_fn, values_fn=lambda x: x):
    return lambda x: torch.softmax(scores_fn(x), dim=-1) @ values_fn(x)


WRONG = {
    "softmax": [
        (_exp_over_sum(), "overflows"),
        (lambda s: torch.exp(s), "do not sum to 1"),
        (lambda s: torch.exp(s - s.amax(dim=-1, keepdim=True)), "do not sum to 1"),
        (_exp_over_sum(dim=0), "wrong dimension"),
        (_exp_over_sum(dim=None), "sum of *every* entry"),
        (_exp_over_sum(keepdim=False), "keepdim=True"),
        (_minus(lambda s: s.amax()), "not the maximum of the whole tensor"),
        (_minus(lambda s: s.max()), "not the maximum of the whole tensor"),
        (_minus(lambda s: s.amax(dim=-1)), "`x.amax(dim=-1)` loses the last axis"),
        (_minus(lambda s: s.max(dim=-1).values), "`x.amax(dim=-1)` loses the last axis"),
        (_minus(lambda s: s.amax(dim=-1), keepdim=False), "the maximum and the sum both need"),
        (_max_on_top_only, "does not sum to 1 along the last axis"),
        (_over_the_mean, "does not sum to 1 along the last axis"),
    ],
    "cosine_context_vectors": [
        (_context_from(lambda x: _unit(x) @ _unit(x).T, _unit), "not the normalised vectors"),
        (_context_from(lambda x: x @ _unit(x).T), "length of the query as well"),
        (_context_from(lambda x: _unit(x) @ x.T), "length of the key as well"),
        (_context_from(lambda x: _unit(x, 0) @ _unit(x, 0).T), "each feature column"),
        (
            _context_from(
                lambda x: x @ x.T / ((x**2).sum(-1, keepdim=True) * (x**2).sum(-1, keepdim=True).T)
            ),
            "not by the sums of squares",
        ),
        (
            _context_from(lambda x: (x / x.sum(-1, keepdim=True)) @ (x / x.sum(-1, keepdim=True)).T),
            "not the sum of its entries",
        ),
        (_context_from(lambda x: x @ x.T), "plain dot products"),
        (lambda x: (_unit(x) @ _unit(x).T) @ x, "still need a softmax"),
        (lambda x: torch.softmax(_unit(x) @ _unit(x).T, dim=0) @ x, "each *row* of the weights"),
        (lambda x: torch.softmax(_unit(x) @ _unit(x).T, dim=-1), "returned the weights"),
    ],
    "top_token": [
        (given("journey"), "does not always attend most to itself"),
        (given("starts"), "doubling a key vector doubles"),
    ],
}

TOLD = {"top_token": [(given(3), "fail", "as a string")]}

# ----------------------------------------------------------------------------- out of reach
SOFTMAX = "calls `torch.softmax`"
OUT_OF_REACH = {
    "softmax": [
        (lambda s: torch.softmax(s, dim=-1), SOFTMAX),
        (lambda s: torch.softmax(s, dim=0), SOFTMAX),
        (lambda s: s.softmax(dim=-1), SOFTMAX),
        (lambda s: F.softmax(s, dim=-1), SOFTMAX),
        (lambda s: torch.nn.Softmax(dim=-1)(s), SOFTMAX),
        (lambda s: torch.special.softmax(s, dim=-1), SOFTMAX),
        (lambda s: torch.log_softmax(s, dim=-1).exp(), "calls `torch.log_softmax`"),
        (lambda s: F.log_softmax(s, dim=-1).exp(), "calls `torch.log_softmax`"),
        (attnlib.masked_softmax, "hands back attnlib's own `masked_softmax`"),
        (lambda s: attnlib.masked_softmax(s), "calls attnlib's own `masked_softmax`"),
        (lambda s: attnlib.online_softmax(s, 2), "calls attnlib's own `online_softmax`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {"softmax": [stub], "cosine_context_vectors": [stub], "top_token": [given(...)]}
CRASHES = {
    "softmax": [(crashes, "AttributeError")],
    "cosine_context_vectors": [(crashes, "AttributeError")],
}
