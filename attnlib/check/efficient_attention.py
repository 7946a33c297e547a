"""Exercise checks for notebook 13 (efficient attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Tq``/``Tk`` query/key length, ``Dv`` value width, ``T`` positions,
``Dh`` head width.

Inputs come from a local ``torch.Generator``, so a check never moves the student's seed. The
hints recognise the usual slips: halves averaged instead of weighted by their softmax mass, a
log-sum-exp used as if it were a mass, exponentials that overflow; a one-directional global
token, a causal or one-too-narrow window; rounding down or counting the query itself as a
step; RoPE with the other pairing, the wrong direction or the wrong frequencies.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import apply_rotary, attention_scores, rotary_angles, scaled_dot_product_attention
from ._core import Case, Mistake, Verdict, as_numbers, generator, run_check

__all__ = ["combine_partial_attention", "layers_needed", "longformer_mask", "rotate_half_rope"]


# --- 13.1: combine two halves of the keys ---------------------------------------------------


def _combine(o1: torch.Tensor, lse1: torch.Tensor, o2: torch.Tensor, lse2: torch.Tensor) -> torch.Tensor:
    lse = torch.logaddexp(lse1, lse2)  # (..., Tq): log of the total mass
    w1, w2 = torch.exp(lse1 - lse)[..., None], torch.exp(lse2 - lse)[..., None]  # (..., Tq, 1) each
    return w1 * o1 + w2 * o2  # (..., Tq, Dv)


def _halves(
    name: str, tq: int, split: int, tk: int, seed: int, *, spread: float = 1.0, hide_first: bool = False
) -> Case:
    """Attention of ``tq`` queries over ``tk`` keys, computed separately on keys ``:split`` and ``split:``."""
    g = generator(seed)
    q, k, v = (
        torch.randn(tq, 4, generator=g) * spread,
        torch.randn(tk, 4, generator=g),
        torch.randn(tk, 3, generator=g),
    )
    parts = []
    for keys in (slice(0, split), slice(split, tk)):
        scores = attention_scores(q, k[keys])  # (Tq, Tk_half)
        mask = torch.zeros_like(scores, dtype=torch.bool) if hide_first and keys.start == 0 else None
        context, _ = scaled_dot_product_attention(q, k[keys], v[keys], mask)  # (Tq, Dv); zeros if all hidden
        lse = torch.logsumexp(scores if mask is None else scores.masked_fill(~mask, float("-inf")), dim=-1)
        parts += [context, lse]
    return Case(name, tuple(parts))


def combine_partial_attention(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 13.1: ``student_fn(context1, lse1, context2, lse2) -> context``.

    Each half of the keys gave its own normalised context ``(Tq, Dv)`` and the log-sum-exp of its
    scores ``(Tq,)``; the result must equal attention over all the keys at once.
    """
    cases = [
        _halves("3 queries, 4 + 4 keys", 3, 4, 8, 0),
        _halves("5 queries, 2 + 7 keys", 5, 2, 9, 1),
        _halves("large scores (|score| up to a few hundred)", 4, 3, 6, 2, spread=120.0),
        _halves(
            "every key of the first half masked (lse1 = -inf, context1 = 0)", 3, 3, 6, 3, hide_first=True
        ),
    ]
    mistakes = [
        Mistake(
            "the two halves are not equally important: weight each context by its share of the total "
            "softmax mass, not 1/2 each",
            lambda o1, l1, o2, l2: (o1 + o2) / 2,
        ),
        Mistake(
            "lse is a logarithm: a half's mass is exp(lse), and the weights are the masses divided by "
            "their sum",
            lambda o1, l1, o2, l2: (l1 / (l1 + l2))[..., None] * o1 + (l2 / (l1 + l2))[..., None] * o2,
        ),
        Mistake(
            "each context is already normalised within its half: weight it by its mass divided by the "
            "TOTAL mass, so that the two weights add up to 1",
            lambda o1, l1, o2, l2: l1.exp()[..., None] * o1 + l2.exp()[..., None] * o2,
        ),
        Mistake(
            "the weights are swapped: the first context goes with the first half's mass",
            lambda o1, l1, o2, l2: _combine(o2, l1, o1, l2),
        ),
        Mistake(
            "exp(lse) overflows float32 once lse passes about 88: subtract the larger lse (or the log of "
            "the total) before exponentiating, as the online softmax subtracts its running max",
            lambda o1, l1, o2, l2: (
                (l1.exp()[..., None] * o1 + l2.exp()[..., None] * o2) / (l1.exp() + l2.exp())[..., None]
            ),
        ),
        Mistake(
            "keeping only the half with the larger mass is a hard choice: both halves contribute, in "
            "proportion to their masses",
            lambda o1, l1, o2, l2: torch.where((l1 >= l2)[..., None], o1, o2),
        ),
    ]
    return run_check(
        "Exercise 13.1 — combine two halves of the keys", student_fn, _combine, cases, mistakes, atol=1e-5
    )


# --- 13.2: Longformer's mask ----------------------------------------------------------------


def _longformer(size: int, one_side: int, global_tokens: list[int]) -> torch.Tensor:
    pos = torch.arange(size)
    near = (pos[:, None] - pos[None, :]).abs() <= one_side  # (T, T): the window, both sides
    is_global = torch.zeros(size, dtype=torch.bool)
    is_global[global_tokens] = True
    return near | is_global[:, None] | is_global[None, :]  # a global token sees all, and all see it


def _longformer_variant(
    *, rows: bool = True, cols: bool = True, causal: bool = False, narrow: bool = False
) -> Callable:
    def wrong(size: int, one_side: int, global_tokens: list[int]) -> torch.Tensor:
        pos = torch.arange(size)
        diff = pos[:, None] - pos[None, :]  # (T, T): query minus key
        near = (diff.abs() < one_side) if narrow else (diff.abs() <= one_side)
        if causal:
            near = near & (diff >= 0)
        g = torch.zeros(size, dtype=torch.bool)
        g[global_tokens] = True
        return near | (g[:, None] & rows) | (g[None, :] & cols)

    return wrong


def longformer_mask(student_fn: Callable[[int, int, list[int]], torch.Tensor]) -> Verdict:
    """Exercise 13.2: ``student_fn(size, one_side, global_tokens) -> (T, T) bool``, True = may attend.

    Query ``i`` may attend to key ``j`` when ``|i - j| <= one_side``, or when ``i`` or ``j`` is one
    of the ``global_tokens``.
    """
    cases = [
        Case("T=8, one_side=1, global token 0", (8, 1, [0])),
        Case("T=10, one_side=2, global tokens 0 and 6", (10, 2, [0, 6])),
        Case("T=6, one_side=0 (each token alone), global token 5", (6, 0, [5])),
        Case("T=5, one_side=1, no global token", (5, 1, [])),
    ]
    mistakes = [
        Mistake("the mask is inverted: in attnlib True means *may attend*", lambda *a: ~_longformer(*a)),
        Mistake(
            "global attention goes both ways: every token attends to a global token (its column) AND a "
            "global token attends to every token (its row); you have only the column",
            _longformer_variant(rows=False),
        ),
        Mistake(
            "global attention goes both ways: a global token attends to every token (its row) AND every "
            "token attends to it (its column); you have only the row",
            _longformer_variant(cols=False),
        ),
        Mistake(
            "Longformer's window is not causal: a token sees `one_side` neighbours on EACH side, "
            "after it too",
            _longformer_variant(causal=True),
        ),
        Mistake(
            "the window is one key too narrow on each side: |i - j| may equal one_side",
            _longformer_variant(narrow=True),
        ),
        Mistake(
            "the global tokens are missing: combine the window with them using `|`",
            _longformer_variant(rows=False, cols=False),
        ),
        as_numbers(_longformer, "add `.bool()`"),
    ]
    return run_check("Exercise 13.2 — Longformer's mask", student_fn, _longformer, cases, mistakes)


# --- 13.3: how many layers ------------------------------------------------------------------


def _layers_needed(distance: int, window: int) -> int:
    return math.ceil(distance / (window - 1))  # each layer carries information w - 1 positions further


def layers_needed(student_fn: Callable[[int, int], int]) -> Verdict:
    """Exercise 13.3: ``student_fn(distance, window) -> L``, the fewest sliding-window layers
    through which a token ``distance`` positions back can influence the output."""
    cases = [
        Case("distance 10, window 3", (10, 3)),
        Case("distance 9, window 4", (9, 4)),
        Case("distance 1, window 2", (1, 2)),
        Case("distance 5, window 8 (inside one window)", (5, 8)),
        Case("distance 100, window 11", (100, 11)),
        Case("distance 131072, window 4097", (131072, 4097)),
    ]
    mistakes = [
        Mistake(
            "round up, not down: L layers reach L·(w - 1) positions back, and that must be at least "
            "the distance",
            lambda d, w: d // (w - 1),
        ),
        Mistake(
            "one layer moves information w - 1 positions, not w: the window's w keys include the "
            "query itself",
            lambda d, w: math.ceil(d / w),
        ),
        Mistake(
            "one layer moves information w - 1 positions, not w (the window includes the query "
            "itself); and round up",
            lambda d, w: d // w,
        ),
        Mistake(
            "the distance counts positions between the two tokens, not the tokens themselves: "
            "token i - d is d steps back",
            lambda d, w: math.ceil((d + 1) / (w - 1)),
        ),
    ]
    return run_check("Exercise 13.3 — how many layers?", student_fn, _layers_needed, cases, mistakes)


# --- 13.4: RoPE, the rotate-half layout -----------------------------------------------------


def _rotate_half(
    x: torch.Tensor, positions: torch.Tensor, *, sign: float = 1.0, base: float = 10000.0
) -> torch.Tensor:
    half = x.shape[-1] // 2
    angles = rotary_angles(positions, x.shape[-1], base)  # (T, Dh/2): RoPE's own angles m * theta_i
    cos, sin = torch.cos(angles), sign * torch.sin(angles)
    a, b = x[..., :half], x[..., half:]  # (..., T, Dh/2): pair i is (a_i, b_i)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def _rope_case(name: str, shape: tuple[int, ...], offset: int, seed: int) -> Case:
    g = generator(seed)
    return Case(name, (torch.randn(shape, generator=g), torch.arange(shape[-2]) + offset))


def rotate_half_rope(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 13.4: ``student_fn(x, positions) -> (..., T, Dh)``: RoPE with feature ``i`` paired
    with feature ``i + Dh/2``, ``theta_i = 10000^(-2i/Dh)``."""
    cases = [
        _rope_case("two vectors, Dh=4, positions 1 and 2", (2, 4), 1, 0),
        _rope_case("T=5, Dh=8, positions 0..4", (5, 8), 0, 1),
        _rope_case("B=2, H=3, T=4, Dh=16, positions 7..10", (2, 3, 4, 16), 7, 2),
    ]
    mistakes = [
        Mistake(
            "this is the interleaved layout of section 6 (features 2i and 2i+1 together); here feature i "
            "pairs with feature i + Dh/2",
            lambda x, p: apply_rotary(x, p),
        ),
        Mistake(
            "you rotate the wrong way (by -mθ): the first half becomes a·cos - b·sin, the second "
            "a·sin + b·cos",
            lambda x, p: _rotate_half(x, p, sign=-1.0),
        ),
        Mistake(
            "the frequencies: θ_i = 10000^(-2i/Dh) for pair i = 0 .. Dh/2 - 1 (the exponent has 2i, "
            "as in the sinusoidal encoding)",
            lambda x, p: _rotate_half(x, p, base=100.0),  # 10000^(-i/Dh) = 100^(-2i/Dh)
        ),
        Mistake("nothing is rotated: the output equals the input", lambda x, p: x.clone()),
        Mistake(
            "the positions are given: rotate by positions[t], not by the index t",
            lambda x, p: _rotate_half(x, torch.arange(x.shape[-2])),
        ),
    ]
    return run_check(
        "Exercise 13.4 — RoPE, the rotate-half layout", student_fn, _rotate_half, cases, mistakes
    )
