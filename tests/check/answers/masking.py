"""Answers to the checks of notebook 03."""

from __future__ import annotations

import torch

import attnlib
from attnlib.masks import sliding_window_mask
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def window_ok(t, window):
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    return (j <= i) & (i - j < window)


def window_from_trils(t, window):
    ones = torch.ones(t, t, dtype=torch.bool)
    return ones.tril() & ~ones.tril(diagonal=-window)


def prefix_lm_ok(prefix_lengths, t):
    in_prefix = torch.arange(t)[None, :] < prefix_lengths[:, None]  # (B, T)
    return attnlib.causal_mask(t) | in_prefix[:, None, None, :]  # (T, T) | (B, 1, 1, T) -> (B, 1, T, T)


def prefix_lm_loop(prefix_lengths, t):
    mask = torch.zeros(len(prefix_lengths), 1, t, t, dtype=torch.bool)
    for b, p in enumerate(prefix_lengths.tolist()):
        for i in range(t):
            for j in range(t):
                mask[b, 0, i, j] = j <= i or j < p
    return mask


def masked_softmax_ok(scores, mask):
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0)


RIGHT = {
    "sliding_window_mask": [window_ok, window_from_trils],
    "prefix_lm_mask": [prefix_lm_ok, prefix_lm_loop],
    "masked_softmax_safe": [masked_softmax_ok],
}

# ----------------------------------------------------------------------------- typical mistakes


def exp_times_mask_without_max(scores, mask):
    """exp, the hidden keys zeroed, over the sum plus a little: no NaN on a fully masked row, but
    exp(1000) is inf."""
    e = torch.exp(scores) * mask
    return e / (e.sum(dim=-1, keepdim=True) + 1e-9)


def _pairs(t):
    return torch.arange(t)[:, None], torch.arange(t)[None, :]


def _window(condition):
    def fn(t, w):
        i, j = _pairs(t)
        return condition(i, j, w)

    return fn


def _prefix(p, t):
    return torch.arange(t)[None, :] < p[:, None]  # (B, T)


def softmax_of_masked_scores(s, m):
    """Right but for fully masked rows, which come out as NaN."""
    return torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1)


WRONG = {
    "sliding_window_mask": [
        (_window(lambda i, j, w: (j > i) | (j <= i - w)), "inverted"),
        (_window(lambda i, j, w: (j <= i) & (i - j <= w)), "one key too many"),
        (_window(lambda i, j, w: (j <= i) & (i - j < w - 1)), "one key too few"),
        (_window(lambda i, j, w: (j < i) & (i - j <= w)), "attend to itself"),
        (_window(lambda i, j, w: (i - j).abs() < w), "band around the diagonal"),
        (_window(lambda i, j, w: i - j < w), "window alone is not causal"),
        (lambda t, w: torch.ones(t, t, dtype=torch.bool).tril(), "plain causal mask"),
        (_window(lambda i, j, w: (j >= i) & (j - i < w)), "your band lies above it"),
        (_window(lambda i, j, w: ((j <= i) & (i - j < w)).float()), "must be boolean"),
        (_window(lambda i, j, w: ((j <= i) & (i - j < w)).int()), "must be boolean"),
    ],
    "prefix_lm_mask": [
        (lambda p, t: ~prefix_lm_ok(p, t), "inverted"),
        (lambda p, t: attnlib.causal_mask(t) & _prefix(p, t)[:, None, None, :], "combine the two with `|`"),
        (lambda p, t: attnlib.causal_mask(t) | _prefix(p, t)[:, None, :, None], "the key axis comes last"),
        (
            lambda p, t: attnlib.causal_mask(t) | (torch.arange(t)[None, :] <= p[:, None])[:, None, None, :],
            "not `<=`",
        ),
        (lambda p, t: _prefix(p, t)[:, None, None, :].repeat(1, 1, t, 1), "the causal part"),
        (lambda p, t: prefix_lm_ok(p[:1].repeat(len(p)), t), "its own prefix length"),
        (lambda p, t: prefix_lm_ok(p, t).squeeze(1), "add the head axis"),
        (lambda p, t: prefix_lm_ok(p, t).float(), "must be boolean"),
        (lambda p, t: prefix_lm_ok(p, t).int(), "must be boolean"),
    ],
    "masked_softmax_safe": [
        (softmax_of_masked_scores, "0/0 = NaN"),
        (lambda s, m: torch.softmax(s.masked_fill(m == 0, -1e9), dim=-1), "uniform weights"),
        (lambda s, m: torch.softmax(s.masked_fill(m, float("-inf")), dim=-1).nan_to_num(0.0), "inverted"),
        (lambda s, m: torch.softmax(s, dim=-1) * m, "before* the softmax"),
        (
            lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-2).nan_to_num(0.0),
            "wrong dimension",
        ),
        (  # masked scores filled with 0, not -inf, and the weights zeroed after the softmax
            lambda s, m: torch.softmax(s.masked_fill(~m, 0.0), dim=-1) * m,
            "does not sum to 1 along the last axis",
        ),
        (exp_times_mask_without_max, "exp(1000) overflows to inf"),
    ],
}


# ----------------------------------------------------------------------------- out of reach
def _weights_by_attention(scores, mask):
    """attnlib's attention weights, with the scores as queries and the identity as keys."""
    keys = torch.eye(scores.shape[-1]).expand(*scores.shape[:-2], -1, -1)
    return attnlib.scaled_dot_product_attention(scores, keys, keys, mask, scale=1.0)[1]


OUT_OF_REACH = {
    "sliding_window_mask": [
        (attnlib.sliding_window_mask, "hands back attnlib's own `sliding_window_mask`"),
        (lambda t, w: sliding_window_mask(t, w), "calls attnlib's own `sliding_window_mask`"),
    ],
    "masked_softmax_safe": [
        (attnlib.masked_softmax, "hands back attnlib's own `masked_softmax`"),
        (lambda s, m: attnlib.functional.masked_softmax(s, m), "calls attnlib's own `masked_softmax`"),
        (_weights_by_attention, "calls attnlib's own `scaled_dot_product_attention`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {"sliding_window_mask": [stub], "prefix_lm_mask": [stub], "masked_softmax_safe": [stub]}
CRASHES = {
    "sliding_window_mask": [(crashes, "raised")],
    "prefix_lm_mask": [(crashes, "raised")],
    "masked_softmax_safe": [(crashes, "raised")],
}
