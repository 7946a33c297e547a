"""Answers to the checks of notebook 13."""

from __future__ import annotations

import math

import torch

from attnlib import apply_rotary
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def right_combine(context1, lse1, context2, lse2):
    lse = torch.logaddexp(lse1, lse2)
    return torch.exp(lse1 - lse)[..., None] * context1 + torch.exp(lse2 - lse)[..., None] * context2


def right_longformer(size, one_side, global_tokens):
    pos = torch.arange(size)
    mask = (pos[:, None] - pos[None, :]).abs() <= one_side
    for g in global_tokens:
        mask[g, :] = True
        mask[:, g] = True
    return mask


def right_layers(distance, window):
    return -(-distance // (window - 1))


def right_rotate_half(x, positions):
    half = x.shape[-1] // 2
    theta = 10000.0 ** (-2 * torch.arange(half) / x.shape[-1])
    angles = positions[:, None] * theta[None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1)


RIGHT = {
    "combine_partial_attention": [right_combine],
    "longformer_mask": [right_longformer],
    "layers_needed": [right_layers],
    "rotate_half_rope": [right_rotate_half],
}

# ----------------------------------------------------------------------------- typical mistakes


def _mass(l1, l2):
    return l1.exp()[..., None], l2.exp()[..., None]


def _global(size, gl):
    g = torch.zeros(size, dtype=torch.bool)
    g[gl] = True
    return g


def _near(size, one_side, strict=False):
    d = torch.arange(size)[:, None] - torch.arange(size)[None, :]
    return (d.abs() < one_side) if strict else (d.abs() <= one_side)


def causal_longformer(t, s, g):
    """A causal window with global tokens: Longformer's window looks both ways."""
    d = torch.arange(t)[:, None] - torch.arange(t)[None, :]
    gl = _global(t, g)
    return ((d.abs() <= s) & (d >= 0)) | gl[:, None] | gl[None, :]


def _rh(x, p, sign=1.0, exponent=2.0):
    half = x.shape[-1] // 2
    theta = 10000.0 ** (-exponent * torch.arange(half) / x.shape[-1])
    ang = p[:, None] * theta[None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * ang.cos() - sign * b * ang.sin(), sign * a * ang.sin() + b * ang.cos()], dim=-1)


WRONG = {
    "combine_partial_attention": [
        (lambda o1, l1, o2, l2: (o1 + o2) / 2, "not equally important"),
        (
            lambda o1, l1, o2, l2: (l1 / (l1 + l2))[..., None] * o1 + (l2 / (l1 + l2))[..., None] * o2,
            "lse is a logarithm",
        ),
        (lambda o1, l1, o2, l2: _mass(l1, l2)[0] * o1 + _mass(l1, l2)[1] * o2, "TOTAL mass"),
        (lambda o1, l1, o2, l2: right_combine(o2, l1, o1, l2), "swapped"),
        (
            lambda o1, l1, o2, l2: (_mass(l1, l2)[0] * o1 + _mass(l1, l2)[1] * o2) / sum(_mass(l1, l2)),
            "overflows",
        ),
        (lambda o1, l1, o2, l2: torch.where((l1 > l2)[..., None], o1, o2), "hard choice"),
    ],
    "longformer_mask": [
        (lambda t, s, g: ~right_longformer(t, s, g), "inverted"),
        (lambda t, s, g: _near(t, s) | _global(t, g)[None, :], "you have only the column"),
        (lambda t, s, g: _near(t, s) | _global(t, g)[:, None], "you have only the row"),
        (
            lambda t, s, g: _near(t, s, strict=True) | _global(t, g)[:, None] | _global(t, g)[None, :],
            "too narrow",
        ),
        (lambda t, s, g: _near(t, s), "global tokens are missing"),
        (lambda t, s, g: right_longformer(t, s, g).long(), "boolean"),
        (causal_longformer, "not causal"),
    ],
    "layers_needed": [
        (lambda d, w: d // (w - 1), "round up"),
        (lambda d, w: math.ceil(d / w), "include the query itself"),
        (lambda d, w: d // w, "and round up"),
        (lambda d, w: math.ceil((d + 1) / (w - 1)), "not the tokens themselves"),
    ],
    "rotate_half_rope": [
        (lambda x, p: apply_rotary(x, p), "interleaved layout"),
        (lambda x, p: _rh(x, p, sign=-1.0), "wrong way"),
        (lambda x, p: _rh(x, p, exponent=1.0), "the exponent has 2i"),
        (lambda x, p: _rh(x, torch.arange(x.shape[-2])), "not by the index t"),
        (lambda x, p: x, "nothing is rotated"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "combine_partial_attention": [stub],
    "longformer_mask": [stub],
    "layers_needed": [stub],
    "rotate_half_rope": [stub],
}
CRASHES = {
    "combine_partial_attention": [(crashes, "no_such_attribute")],
    "longformer_mask": [(crashes, "no_such_attribute")],
    "layers_needed": [(lambda d, w: d / (w - w), "ZeroDivisionError")],
    "rotate_half_rope": [(crashes, "no_such_attribute")],
}
