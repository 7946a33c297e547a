"""Exercise checks for notebook 03 (masking).

Shapes: ``B`` batch, ``H`` heads, ``T`` tokens, ``Tq``/``Tk`` query/key length.

Masks follow attnlib's convention: boolean, True = may attend (as in
``torch.nn.functional.scaled_dot_product_attention``). The hints recognise the usual slips:
the opposite convention, a window one key too wide or too narrow, a mask that lets a token see
the future, ``&`` where ``|`` is meant, 0/1 floats instead of booleans, a shape that does not
broadcast over heads, and NaN left in a fully masked row. The references are attnlib's own masks
(:func:`attnlib.sliding_window_mask`, :func:`attnlib.causal_mask`, :func:`attnlib.length_mask`) and
:func:`attnlib.masked_softmax`. See :mod:`attnlib.check._core`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import causal_mask as _causal_mask
from .. import length_mask, masked_softmax, scaled_dot_product_attention
from .. import sliding_window_mask as _sliding_window_mask
from ..i18n import N_
from ._core import Case, Mistake, Verdict, as_numbers, generator, not_a_distribution, run_check
from ._reach import own

__all__ = ["masked_softmax_safe", "prefix_lm_mask", "sliding_window_mask"]


def _positions(t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Query positions ``(T, 1)`` and key positions ``(1, T)``, broadcasting to every pair."""
    pos = torch.arange(t)
    return pos[:, None], pos[None, :]


def _window_mistake(condition: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> Callable:
    def wrong(t: int, window: int) -> torch.Tensor:
        i, j = _positions(t)
        return condition(i, j, window)

    return wrong


def sliding_window_mask(student_fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Exercise 3.1: ``student_fn(T, window) -> (T, T) bool``, a causal sliding window.

    Query ``i`` may attend to key ``j`` when ``i - window < j <= i``: itself and the
    ``window - 1`` keys before it (fewer near the start; the causal mask when ``window >= T``).
    """
    cases = [
        Case("T=6, window=3", (6, 3)),
        Case("T=8, window=2", (8, 2)),
        Case("T=5, window=1: each token sees only itself", (5, 1)),
        Case("T=4, window=10 (wider than the sequence)", (4, 10)),
        Case("T=1, window=1", (1, 1)),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend*; True must mark the keys "
            "inside the window",
            lambda t, w: ~_sliding_window_mask(t, w),
        ),
        Mistake(
            "each query sees one key too many: `window` counts the visible keys, the query itself "
            "included (with window=3, query 5 sees keys 3, 4 and 5)",
            _window_mistake(lambda i, j, w: (j <= i) & (j >= i - w)),
        ),
        Mistake(
            "each query sees one key too few: `window` counts the visible keys, the query itself "
            "included (with window=3, query 5 sees keys 3, 4 and 5)",
            _window_mistake(lambda i, j, w: (j <= i) & (j > i - w + 1)),
        ),
        Mistake(
            "a token must be allowed to attend to itself: the window includes the query's own position",
            _window_mistake(lambda i, j, w: (j < i) & (j >= i - w)),
        ),
        Mistake(
            "a band around the diagonal lets a token see the tokens after it: keep only keys at or "
            "before the query (j <= i)",
            _window_mistake(lambda i, j, w: (i - j).abs() < w),
        ),
        Mistake(
            "the window alone is not causal: every key after the query is visible; it must also "
            "satisfy j <= i (combine the two conditions with `&`)",
            _window_mistake(lambda i, j, w: j > i - w),
        ),
        Mistake(
            "this is the plain causal mask: a query must not see keys more than window - 1 positions back",
            lambda t, w: _causal_mask(t),
        ),
        Mistake(
            "rows are queries and columns keys: query i (row i) sees keys at or *before* i, below the "
            "diagonal; your band lies above it",
            lambda t, w: _sliding_window_mask(t, w).T,
        ),
        as_numbers(_sliding_window_mask, "add `.bool()`"),
    ]
    return run_check(
        N_("Exercise 3.1 — a sliding-window mask"),
        student_fn,
        _sliding_window_mask,
        cases,
        mistakes,
        forbidden=[own(_sliding_window_mask)],
    )


def _prefix_lm_mask(prefix_lengths: torch.Tensor, t: int) -> torch.Tensor:
    # A key is visible when it is at or before the query, or in the sentence's prefix.
    return _causal_mask(t) | length_mask(prefix_lengths, t)  # (T, T) | (B, 1, 1, T) -> (B, 1, T, T)


def _in_prefix(prefix_lengths: torch.Tensor, t: int) -> torch.Tensor:
    return length_mask(prefix_lengths, t)[:, 0, 0]  # (B, T): is key j in the prefix?


def prefix_lm_mask(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 3.2: ``student_fn(prefix_lengths, T) -> (B, 1, T, T) bool``, a prefix-LM mask.

    ``prefix_lengths`` ``(B,)`` integers. Query ``i`` of sentence ``b`` may attend to key ``j``
    when ``j <= i`` (causal) or ``j < prefix_lengths[b]`` (the prefix is visible to every query).
    """
    cases = [
        Case("one sentence, T=5, prefix of 2", (torch.tensor([2]), 5)),
        Case("three sentences, T=4, prefixes 3, 1 and 0", (torch.tensor([3, 1, 0]), 4)),
        Case("prefix = the whole sentence, and a prefix of 2; T=5", (torch.tensor([5, 2]), 5)),
        Case("one token, no prefix", (torch.tensor([0]), 1)),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend*",
            lambda p, t: ~_prefix_lm_mask(p, t),
        ),
        Mistake(
            "a key is visible if it is at or before the query OR in the prefix: combine the two "
            "with `|`; `&` keeps only the keys that are both",
            lambda p, t: _causal_mask(t) & _in_prefix(p, t)[:, None, None, :],
        ),
        Mistake(
            "the prefix is a set of *keys* that every query may see (the key axis comes last); you "
            "let the queries in the prefix see every key, the tokens to be predicted included",
            lambda p, t: _causal_mask(t) | _in_prefix(p, t)[:, None, :, None],
        ),
        Mistake(
            "a prefix of length p holds positions 0 .. p-1: compare the key position with `<`, not `<=`",
            lambda p, t: _causal_mask(t) | (torch.arange(t)[None, :] <= p[:, None])[:, None, None, :],
        ),
        Mistake(
            "after the prefix a query must still see the keys at or before its own position (the "
            "causal part)",
            lambda p, t: _in_prefix(p, t)[:, None, None, :].expand(-1, 1, t, t),
        ),
        Mistake(
            "each sentence has its own prefix length: use `prefix_lengths[b]` for sentence b, not the "
            "first one for all",
            lambda p, t: _prefix_lm_mask(p[:1].expand(len(p)), t),
        ),
        Mistake(
            "the shape (B, T, T) does not broadcast over the heads of (B, H, T, T) scores: add the "
            "head axis, (B, 1, T, T)",
            lambda p, t: _prefix_lm_mask(p, t)[:, 0],
        ),
        as_numbers(_prefix_lm_mask, "drop the `.float()`/`.int()`"),
    ]
    return run_check(N_("Exercise 3.2 — a prefix-LM mask"), student_fn, _prefix_lm_mask, cases, mistakes)


def _naive_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def _unshifted_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """exp of the scores, hidden ones zeroed, over the sum: zeros for a fully masked row, but no
    maximum subtracted, so large scores overflow."""
    e = torch.exp(scores) * mask
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)


def masked_softmax_safe(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 3.3: ``student_fn(scores, mask) -> weights``, a fully masked row giving zeros.

    ``scores`` ``(..., Tq, Tk)``; ``mask`` bool, True = may attend, broadcastable to
    ``scores``. Each row of the weights sums to 1, or is all zeros if the mask hides every key.
    """
    gen = generator(41)
    scores_6 = torch.randn(6, 6, generator=gen)
    scores_b = torch.randn(2, 4, 5, generator=gen)
    pad = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])[:, None, :]
    left_pad = torch.tensor([False, False, True, True, True, True])  # two pad tokens on the left
    cases = [
        Case("causal mask, T=6", (scores_6, _causal_mask(6))),
        Case("padding mask (2, 1, 5) over scores (2, 4, 5)", (scores_b, pad)),
        Case(
            "left padding with a causal mask: two fully masked rows", (scores_6, _causal_mask(6) & left_pad)
        ),
        Case("every key masked", (scores_b, torch.zeros(2, 1, 5, dtype=torch.bool))),
        Case("large scores around 1000, a padding mask", (1000.0 + scores_b, pad)),
    ]
    mistakes = [
        Mistake(
            "a row whose keys are all masked is all -inf, and softmax then computes 0/0 = NaN: "
            "give such rows zero weights (e.g. find them with `mask.any(dim=-1, keepdim=True)`)",
            _naive_masked_softmax,
        ),
        Mistake(
            "with a large negative number instead of -inf a fully masked row gets uniform weights "
            "1/Tk; it must get zeros",
            lambda s, m: torch.softmax(s.masked_fill(~m, -1e9), dim=-1),
        ),
        Mistake(
            "the mask is inverted: True means *may attend*, so fill the scores where the mask is "
            "False (`~mask`) with -inf",
            lambda s, m: masked_softmax(s, ~m),
        ),
        Mistake(
            "zeroing weights after the softmax leaves rows that no longer sum to 1: fill the scores "
            "with -inf *before* the softmax (or renormalise)",
            lambda s, m: torch.softmax(s, dim=-1) * m,
        ),
        Mistake(
            "softmax over the wrong dimension: each query's weights over the keys sum to 1, dim=-1",
            lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-2).nan_to_num(0.0),
        ),
        Mistake(
            "exp(1000) overflows to inf and inf/inf is NaN: subtract each row's maximum before exp "
            "(softmax(x) equals softmax(x - max)), or fill the hidden scores with -inf and let "
            "torch.softmax do it",
            _unshifted_masked_softmax,
        ),
        not_a_distribution(
            "each query's weights over the keys it may see sum to 1; only a row whose keys are all masked "
            "is all zeros"
        ),
    ]
    return run_check(
        N_("Exercise 3.3 — masked softmax without NaN"),
        student_fn,
        masked_softmax,
        cases,
        mistakes,
        forbidden=[own(masked_softmax), own(scaled_dot_product_attention)],
    )
