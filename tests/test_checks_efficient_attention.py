"""The checks of notebook 13's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib import (
    apply_rotary,
    attention_scores,
    check,
    receptive_field,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from tests.student_answers import assert_todo_then_error


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


def test_right_answers_pass():
    for fn, answer in [
        (check.combine_partial_attention, right_combine),
        (check.longformer_mask, right_longformer),
        (check.layers_needed, right_layers),
        (check.rotate_half_rope, right_rotate_half),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message


def test_the_right_answers_mean_what_the_notebook_says():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 6), torch.randn(10, 6), torch.randn(10, 4)
    parts = []
    for keys in (slice(0, 4), slice(4, 10)):
        parts += [
            scaled_dot_product_attention(q, k[keys], v[keys])[0],
            torch.logsumexp(attention_scores(q, k[keys]), -1),
        ]
    torch.testing.assert_close(right_combine(*parts), scaled_dot_product_attention(q, k, v)[0])
    # layers_needed is the first depth whose receptive field reaches that far back
    for distance, window in [(10, 3), (9, 4), (5, 8)]:
        t = distance + 1
        depth = right_layers(distance, window)
        assert receptive_field(sliding_window_mask(t, window), depth)[-1, 0]
        assert depth == 1 or not receptive_field(sliding_window_mask(t, window), depth - 1)[-1, 0]
    # rotate-half RoPE is the interleaved one with the features listed in another order
    x, pos = torch.randn(2, 5, 8), torch.arange(5) + 3
    perm = torch.cat([torch.arange(0, 8, 2), torch.arange(1, 8, 2)])
    torch.testing.assert_close(right_rotate_half(x[..., perm], pos), apply_rotary(x, pos)[..., perm])


def _mass(l1, l2):
    return l1.exp()[..., None], l2.exp()[..., None]


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
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
)
def test_combine_mistakes_get_their_hints(wrong, hint):
    verdict = check.combine_partial_attention(wrong)
    assert not verdict and hint in verdict.message, verdict.message


def _global(size, gl):
    g = torch.zeros(size, dtype=torch.bool)
    g[gl] = True
    return g


def _near(size, one_side, strict=False):
    d = torch.arange(size)[:, None] - torch.arange(size)[None, :]
    return (d.abs() < one_side) if strict else (d.abs() <= one_side)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda t, s, g: ~right_longformer(t, s, g), "inverted"),
        (lambda t, s, g: _near(t, s) | _global(t, g)[None, :], "you have only the column"),
        (lambda t, s, g: _near(t, s) | _global(t, g)[:, None], "you have only the row"),
        (
            lambda t, s, g: _near(t, s, strict=True) | _global(t, g)[:, None] | _global(t, g)[None, :],
            "too narrow",
        ),
        (lambda t, s, g: _near(t, s), "global tokens are missing"),
        (lambda t, s, g: right_longformer(t, s, g).long(), "boolean"),
    ],
)
def test_longformer_mistakes_get_their_hints(wrong, hint):
    verdict = check.longformer_mask(wrong)
    assert not verdict and hint in verdict.message, verdict.message


def test_a_causal_longformer_with_global_tokens_gets_the_causal_hint():
    def causal(t, s, g):
        d = torch.arange(t)[:, None] - torch.arange(t)[None, :]
        gl = _global(t, g)
        return ((d.abs() <= s) & (d >= 0)) | gl[:, None] | gl[None, :]

    verdict = check.longformer_mask(causal)
    assert not verdict and "not causal" in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda d, w: d // (w - 1), "round up"),
        (lambda d, w: math.ceil(d / w), "include the query itself"),
        (lambda d, w: d // w, "and round up"),
        (lambda d, w: math.ceil((d + 1) / (w - 1)), "not the tokens themselves"),
    ],
)
def test_layers_mistakes_get_their_hints(wrong, hint):
    verdict = check.layers_needed(wrong)
    assert not verdict and hint in verdict.message, verdict.message


def _rh(x, p, sign=1.0, exponent=2.0):
    half = x.shape[-1] // 2
    theta = 10000.0 ** (-exponent * torch.arange(half) / x.shape[-1])
    ang = p[:, None] * theta[None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * ang.cos() - sign * b * ang.sin(), sign * a * ang.sin() + b * ang.cos()], dim=-1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, p: apply_rotary(x, p), "interleaved layout"),
        (lambda x, p: _rh(x, p, sign=-1.0), "wrong way"),
        (lambda x, p: _rh(x, p, exponent=1.0), "the exponent has 2i"),
        (lambda x, p: _rh(x, torch.arange(x.shape[-2])), "not by the index t"),
        (lambda x, p: x, "nothing is rotated"),
    ],
)
def test_rope_mistakes_get_their_hints(wrong, hint):
    verdict = check.rotate_half_rope(wrong)
    assert not verdict and hint in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("check_fn", "crash_text"),
    [
        (check.combine_partial_attention, "no_such_attribute"),
        (check.longformer_mask, "no_such_attribute"),
        (check.rotate_half_rope, "no_such_attribute"),
    ],
)
def test_stub_and_crash(check_fn, crash_text):
    assert_todo_then_error(check_fn, lambda *a: a[0].no_such_attribute, crash_text)


def test_layers_needed_stub_and_crash():
    assert_todo_then_error(check.layers_needed, lambda d, w: d / (w - w), "ZeroDivisionError")
