"""Answers to the checks of notebook 13."""

from __future__ import annotations

import torch

import attnlib
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


def _gap(size):
    pos = torch.arange(size)
    return pos[:, None] - pos[None, :]  # (T, T): i - j, output minus input


def dilated_layer(size, window, dilation, first=0, last=None):
    """One causal dilated window: query i sees keys i - k d for k = first .. last (window - 1)."""
    gap = _gap(size)
    last = window - 1 if last is None else last
    return (gap >= first * dilation) & (gap <= last * dilation) & (gap % dilation == 0)


def right_field(size, window, dilations):
    reach = torch.eye(size, dtype=torch.bool)  # (T, T): before any layer, each position is itself
    for d in dilations:
        reach = (dilated_layer(size, window, d).float() @ reach.float()) > 0  # one more step, any chain
    return reach


def right_field_by_distances(size, window, dilations):
    """The distances a chain covers (one step k * d per layer), then the (T, T) mask."""
    distances = {0}
    for d in dilations:
        distances = {r + k * d for r in distances for k in range(window)}
    gap = _gap(size)
    return torch.isin(gap, torch.tensor(sorted(distances)))


def right_field_from_window_masks(size, window, dilations):
    """attnlib.sliding_window_mask (notebook 13's building block) spans the dilated window."""
    reach = torch.eye(size)
    for d in dilations:
        layer = attnlib.sliding_window_mask(size, (window - 1) * d + 1) & (_gap(size) % d == 0)
        reach = ((layer.float() @ reach) > 0).float()
    return reach.bool()


def product(size, layers, count=False):
    reach = torch.eye(size)
    for layer in layers:
        reach = layer.float() @ reach
        reach = reach if count else (reach > 0).float()
    return reach.long() if count else reach.bool()


def right_rotate_half(x, positions):
    half = x.shape[-1] // 2
    theta = 10000.0 ** (-2 * torch.arange(half) / x.shape[-1])
    angles = positions[:, None] * theta[None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], dim=-1)


RIGHT = {
    "combine_partial_attention": [right_combine],
    "longformer_mask": [right_longformer],
    "dilated_receptive_field": [right_field, right_field_by_distances, right_field_from_window_masks],
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
    "dilated_receptive_field": [
        (lambda t, w, ds: ~right_field(t, w, ds), "the mask is inverted"),
        (lambda t, w, ds: right_field(t, w, ds).T, "yours is the transpose"),
        (
            lambda t, w, ds: product(t, [dilated_layer(t, w, d) | dilated_layer(t, w, d).T for d in ds]),
            "not on both sides",
        ),
        (lambda t, w, ds: product(t, [dilated_layer(t, w, ds[0]) for _ in ds]), "not the first one for all"),
        (
            lambda t, w, ds: product(t, [attnlib.sliding_window_mask(t, w) for _ in ds]),
            "you took w neighbouring keys",
        ),
        (
            lambda t, w, ds: product(t, [attnlib.sliding_window_mask(t, w) & (_gap(t) % d == 0) for d in ds]),
            "you kept only the keys",
        ),
        (
            lambda t, w, ds: product(t, [dilated_layer(t, w, d, 1, w) for d in ds]),
            "includes the query itself",
        ),
        (
            lambda t, w, ds: product(
                t, [(_gap(t) >= 0) & (_gap(t) < (w - 1) * d) & (_gap(t) % d == 0) for d in ds]
            ),
            "yours has w - 1",
        ),
        (lambda t, w, ds: product(t, [dilated_layer(t, w, d, 0, w) for d in ds]), "yours has w + 1"),
        (
            lambda t, w, ds: torch.stack([dilated_layer(t, w, d) for d in ds]).any(0),
            "or the layers OR-ed together",
        ),
        (lambda t, w, ds: dilated_layer(t, w, ds[-1]), "one layer alone"),
        (lambda t, w, ds: (_gap(t) >= 0) & (_gap(t) <= (w - 1) * sum(ds)), "not every distance up to it"),
        (lambda t, w, ds: product(t, [dilated_layer(t, w, d) for d in ds], count=True), "counts the chains"),
        (lambda t, w, ds: right_field(t, w, ds).float(), "must be boolean"),
    ],
    "rotate_half_rope": [
        (lambda x, p: apply_rotary(x, p), "interleaved layout"),
        (lambda x, p: _rh(x, p, sign=-1.0), "wrong way"),
        (lambda x, p: _rh(x, p, exponent=1.0), "the exponent has 2i"),
        (lambda x, p: _rh(x, torch.arange(x.shape[-2])), "not by the index t"),
        (lambda x, p: x, "nothing is rotated"),
    ],
}

# ----------------------------------------------------------------------------- out of reach


def field_by_matrix_power(size, window, dilations):
    """attnlib's receptive_field on one dilated mask: right only when every layer has the same dilation."""
    return attnlib.receptive_field(dilated_layer(size, window, dilations[0]), len(dilations))


OUT_OF_REACH = {
    "dilated_receptive_field": [(field_by_matrix_power, "calls attnlib's own `receptive_field`")],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "combine_partial_attention": [stub],
    "longformer_mask": [stub],
    "dilated_receptive_field": [stub],
    "rotate_half_rope": [stub],
}
CRASHES = {
    "combine_partial_attention": [(crashes, "no_such_attribute")],
    "longformer_mask": [(crashes, "no_such_attribute")],
    "dilated_receptive_field": [(crashes, "no_such_attribute")],
    "rotate_half_rope": [(crashes, "no_such_attribute")],
}
