"""Exercise checks for notebook 13 (efficient attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Tq``/``Tk`` query/key length, ``Dv`` value width, ``T`` positions,
``Dh`` head width.

Inputs come from a local ``torch.Generator``, so a check never moves the student's seed. The
hints recognise the usual slips: halves averaged instead of weighted by their softmax mass, a
log-sum-exp used as if it were a mass, exponentials that overflow; a one-directional global
token, a causal or one-too-narrow window; dilated windows taken as neighbouring keys, layers
OR-ed instead of composed, the gaps of the receptive field filled in; RoPE with the other
pairing, the wrong direction or the wrong frequencies.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import apply_rotary, attention_scores, receptive_field, rotary_angles, scaled_dot_product_attention
from ..i18n import N_
from ._core import Case, Mistake, Verdict, as_numbers, generator, run_check
from ._reach import own

__all__ = ["combine_partial_attention", "dilated_receptive_field", "longformer_mask", "rotate_half_rope"]


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
        _halves(N_("3 queries, 4 + 4 keys"), 3, 4, 8, 0),
        _halves(N_("5 queries, 2 + 7 keys"), 5, 2, 9, 1),
        _halves(N_("large scores (|score| up to a few hundred)"), 4, 3, 6, 2, spread=120.0),
        _halves(
            N_("every key of the first half masked (lse1 = -inf, context1 = 0)"), 3, 3, 6, 3, hide_first=True
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
        N_("Exercise 13.1 — combine two halves of the keys"), student_fn, _combine, cases, mistakes, atol=1e-5
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
            "the window of this exercise (Longformer's bidirectional one, §3.1) is not causal: a token sees "
            "`one_side` neighbours on EACH side, after it too",
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
    return run_check(N_("Exercise 13.2 — Longformer's mask"), student_fn, _longformer, cases, mistakes)


# --- 13.3: the receptive field of dilated windows -------------------------------------------


def _steps(window: int, dilation: int) -> set[int]:
    """How far back one dilated layer reaches: 0 (the query itself), d, 2d, ..., (w - 1) d."""
    return {k * dilation for k in range(window)}


def _reach_by_distance(
    window: int, dilations: list[int], steps: Callable[[int, int], set[int]] = _steps
) -> set[int]:
    """Every distance a chain of one step per layer covers: the sums of one step from each layer."""
    reach = {0}
    for dilation in dilations:
        reach = {r + s for r in reach for s in steps(window, dilation)}
    return reach


def _as_mask(size: int, distances: set[int]) -> torch.Tensor:
    """``(T, T)`` bool: True where input ``j`` can influence output ``i``: ``i - j`` in ``distances``."""
    gap = torch.arange(size)[:, None] - torch.arange(size)[None, :]  # (T, T): i - j
    return torch.isin(gap, torch.tensor(sorted(distances), dtype=torch.long))


def _dilated_field(size: int, window: int, dilations: list[int]) -> torch.Tensor:
    # A set of distances, not attnlib's receptive_field (out of reach while the student's code runs).
    return _as_mask(size, _reach_by_distance(window, dilations))


def _dilated_mask(size: int, window: int, dilation: int, *, both_sides: bool = False) -> torch.Tensor:
    """One layer's mask: query ``i`` sees keys ``i - k d``, ``k = 0 .. w - 1`` (``both_sides``: also
    ``i + k d``)."""
    gap = torch.arange(size)[:, None] - torch.arange(size)[None, :]  # (T, T): i - j
    near = gap.abs() if both_sides else gap
    return (near >= 0) & (near <= (window - 1) * dilation) & (gap % dilation == 0)


def _field_variant(
    size: int,
    window: int,
    dilations: list[int],
    *,
    steps: Callable[[int, int], set[int]] = _steps,
    layers: str = "all",
    fill: bool = False,
) -> torch.Tensor:
    """The receptive field with one typical slip: other ``steps`` per layer, only some ``layers``
    ("first", "last", "same": the first dilation for every layer), or the gaps filled in."""
    chosen = {
        "all": dilations,
        "first": dilations[:1],
        "last": dilations[-1:],
        "same": dilations[:1] * len(dilations),
    }
    reach = _reach_by_distance(window, chosen[layers], steps)
    return _as_mask(size, set(range(max(reach) + 1)) if fill else reach)


def _paths(size: int, window: int, dilations: list[int]) -> torch.Tensor:
    """How many chains join each input to each output: the product of the layers' 0/1 masks."""
    reach = torch.eye(size, dtype=torch.long)
    for dilation in dilations:
        reach = _dilated_mask(size, window, dilation).long() @ reach  # (T, T) @ (T, T) -> (T, T)
    return reach


def _union(size: int, window: int, dilations: list[int]) -> torch.Tensor:
    out = torch.zeros(size, size, dtype=torch.bool)
    for dilation in dilations:
        out |= _dilated_mask(size, window, dilation)
    return out


def _both_sides(size: int, window: int, dilations: list[int]) -> torch.Tensor:
    reach = torch.eye(size)
    for dilation in dilations:
        reach = ((_dilated_mask(size, window, dilation, both_sides=True).float() @ reach) > 0).float()
    return reach.bool()


#: The hint of a receptive field that does not chain the layers.
_COMPOSE = N_(
    "an input reaches the output through a chain of one step per layer: compose every layer's mask (a "
    "boolean matrix product); one layer alone, or the layers OR-ed together, is not that"
)


def dilated_receptive_field(student_fn: Callable[[int, int, list[int]], torch.Tensor]) -> Verdict:
    """Exercise 13.3: ``student_fn(size, window, dilations) -> (T, T)`` bool: True where input ``j``
    can influence output ``i`` through a stack of causal dilated sliding-window layers, layer ``l``
    letting query ``i`` see keys ``i - k * dilations[l]``, ``k = 0 .. window - 1``.

    Output ``i`` reaches input ``j`` when ``i - j`` is a sum of one step ``k * d_l`` per layer, which
    leaves gaps when the dilations share a factor. attnlib's ``receptive_field`` is out of reach.
    """
    cases = [
        Case(
            "three layers, dilation 1 each: the stacked window of section 5 (T=10, w=3)", (10, 3, [1, 1, 1])
        ),
        Case("one layer, dilation 2 (T=10, w=3)", (10, 3, [2])),
        Case("dilations 1 and 3: no gap (T=12, w=3)", (12, 3, [1, 3])),
        Case("dilations 2 and 2: odd distances never reached (T=12, w=3)", (12, 3, [2, 2])),
        Case("dilations 1, 2, 4 with w=2: each layer doubles the reach (T=10)", (10, 2, [1, 2, 4])),
        Case("dilations 3 and 2: gaps, and a reach longer than the sequence (T=9, w=3)", (9, 3, [3, 2])),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: True means *can influence* (rows are outputs, columns inputs)",
            lambda *a: ~_dilated_field(*a),
        ),
        Mistake(
            "rows are the outputs (queries) and columns the inputs: output i can only be influenced by "
            "inputs j <= i; yours is the transpose",
            lambda *a: _dilated_field(*a).T,
        ),
        Mistake(
            "the window is causal, as in section 5: keys at or before the query, not on both sides",
            _both_sides,
        ),
        Mistake(
            "each layer has its own dilation: layer l uses dilations[l], not the first one for all",
            lambda *a: _field_variant(*a, layers="same"),
        ),
        Mistake(
            "a dilated layer's w keys are spread d apart: i, i - d, ..., i - (w - 1) d; you took w "
            "neighbouring keys (the window of section 5), whatever the dilation",
            lambda *a: _field_variant(*a, steps=lambda w, d: set(range(w))),
        ),
        Mistake(
            "a dilated window still has w keys, spread over (w - 1) d + 1 positions; you kept only the "
            "keys i - k d that fall among the w nearest",
            lambda *a: _field_variant(*a, steps=lambda w, d: set(range(0, w, d))),
        ),
        Mistake(
            "the window includes the query itself (distance 0), as in section 5: keys i, i - d, ..., "
            "i - (w - 1) d; without it every chain must move back at every layer",
            lambda *a: _field_variant(*a, steps=lambda w, d: {k * d for k in range(1, w + 1)}),
        ),
        Mistake(  # before the layers' hints: two narrow layers can reach as far as one wide one
            "each layer's window has w keys, i, i - d, ..., i - (w - 1) d; yours has w - 1 (a `<` where "
            "`<=` belongs?)",
            lambda *a: _field_variant(*a, steps=lambda w, d: {k * d for k in range(w - 1)}),
        ),
        Mistake(
            "each layer's window has w keys, i, i - d, ..., i - (w - 1) d; yours has w + 1",
            lambda *a: _field_variant(*a, steps=lambda w, d: {k * d for k in range(w + 1)}),
        ),
        *(
            Mistake(_COMPOSE, wrong)
            for wrong in (
                _union,
                lambda *a: _field_variant(*a, layers="last"),
                lambda *a: _field_variant(*a, layers="first"),
            )
        ),
        Mistake(
            "the farthest input is right, but not every distance up to it is reached: a distance is a sum of "
            "one step k * d per layer, and with dilations 2 and 2, say, no odd distance is",
            lambda *a: _field_variant(*a, fill=True),
        ),
        Mistake(
            "the product of 0/1 masks counts the chains from input j to output i; what is asked is whether "
            "one exists: compare with 0 (> 0) and return a bool mask",
            _paths,
        ),
        as_numbers(_dilated_field, "add `.bool()`"),
    ]
    return run_check(
        N_("Exercise 13.3 — the receptive field of dilated windows"),
        student_fn,
        _dilated_field,
        cases,
        mistakes,
        forbidden=[own(receptive_field)],
    )


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
        _rope_case(N_("two vectors, Dh=4, positions 1 and 2"), (2, 4), 1, 0),
        _rope_case(N_("T=5, Dh=8, positions 0..4"), (5, 8), 0, 1),
        _rope_case(N_("B=2, H=3, T=4, Dh=16, positions 7..10"), (2, 3, 4, 16), 7, 2),
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
        N_("Exercise 13.4 — RoPE, the rotate-half layout"), student_fn, _rotate_half, cases, mistakes
    )
