"""Exercise checks for notebook 03 (masking).

Shapes: ``B`` batch, ``H`` heads, ``T`` tokens, ``Tq``/``Tk`` query/key length.

Masks follow attnlib's convention: boolean, True = may attend (as in
``torch.nn.functional.scaled_dot_product_attention``). The hints recognise the usual slips:
the opposite convention, a missing diagonal, 0/1 floats instead of booleans, a shape that
does not broadcast over heads and queries, and NaN left in a fully masked row.
See :mod:`attnlib.check._core`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..functional import masked_softmax
from ..masks import causal_mask as _causal_mask
from ..masks import padding_mask as _padding_mask
from ._core import Case, Mistake, Verdict, run_check

__all__ = ["causal_mask", "masked_softmax_safe", "padding_mask"]


def causal_mask(student_fn: Callable[[int], torch.Tensor]) -> Verdict:
    """Exercise 3.1: ``student_fn(T) -> (T, T) bool``, True = may attend (query ``i`` sees keys ``0..i``)."""
    cases = [Case("T=4", (4,)), Case("T=7", (7,)), Case("T=1", (1,))]
    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend*, so keep the lower triangle "
            "(tril); triu(..., diagonal=1) is the masked-out convention of Raschka (2024, ch. 3)",
            lambda t: ~_causal_mask(t),
        ),
        Mistake(
            "a token must be allowed to attend to itself: keep the diagonal (tril with diagonal=0)",
            lambda t: torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1),
        ),
        Mistake(
            "query i is row i and may see keys 0..i, the *lower* triangle; triu lets it see the future",
            lambda t: torch.ones(t, t, dtype=torch.bool).triu(),
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers: add `dtype=torch.bool` "
            "or `.bool()`",
            lambda t: torch.ones(t, t).tril(),
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers: add `dtype=torch.bool` "
            "or `.bool()`",
            lambda t: torch.ones(t, t, dtype=torch.long).tril(),
        ),
    ]
    return run_check("Exercise 3.1 — causal mask", student_fn, _causal_mask, cases, mistakes)


def padding_mask(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 3.2: ``student_fn(tokens, pad_id) -> (B, 1, 1, Tk) bool``, False at padding.

    ``tokens`` are ``(B, Tk)`` integer ids; the mask broadcasts over heads and queries of
    ``(B, H, Tq, Tk)`` scores.
    """
    cases = [
        Case("one sentence, no padding", (torch.tensor([[5, 8, 2, 9]]), 0)),
        Case("two sentences, the second padded", (torch.tensor([[5, 8, 2, 9, 4], [7, 3, 0, 0, 0]]), 0)),
        Case("pad_id=99", (torch.tensor([[1, 0, 99, 99], [4, 5, 6, 99], [2, 99, 99, 99]]), 99)),
        Case("a sequence that is all padding", (torch.tensor([[3, 1, 0], [0, 0, 0]]), 0)),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: True must mark the *real* tokens (tokens != pad_id), which may "
            "be attended to",
            lambda tok, pad: (tok == pad)[:, None, None, :],
        ),
        Mistake(
            "the shape (B, Tk) does not broadcast over heads and queries: insert two axes, "
            "`mask[:, None, None, :]` -> (B, 1, 1, Tk)",
            lambda tok, pad: tok != pad,
        ),
        Mistake(
            "(B, 1, Tk) suits single-head (B, Tq, Tk) scores; for (B, H, Tq, Tk) scores insert "
            "one more axis: (B, 1, 1, Tk)",
            lambda tok, pad: (tok != pad)[:, None, :],
        ),
        Mistake(
            "the key axis must come last: (B, 1, 1, Tk), i.e. `mask[:, None, None, :]`, not "
            "`mask[:, :, None, None]`",
            lambda tok, pad: (tok != pad)[:, :, None, None],
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers: drop the `.float()`/`.int()`",
            lambda tok, pad: (tok != pad)[:, None, None, :].float(),
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers: drop the `.float()`/`.int()`",
            lambda tok, pad: (tok != pad)[:, None, None, :].long(),
        ),
    ]
    return run_check("Exercise 3.2 — padding mask", student_fn, _padding_mask, cases, mistakes)


def _naive_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def masked_softmax_safe(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 3.3: ``student_fn(scores, mask) -> weights``, a fully masked row giving zeros.

    ``scores`` ``(..., Tq, Tk)``; ``mask`` bool, True = may attend, broadcastable to
    ``scores``. Each row of the weights sums to 1, or is all zeros if the mask hides every key.
    """
    gen = torch.Generator().manual_seed(41)
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
    ]
    return run_check("Exercise 3.3 — masked softmax without NaN", student_fn, masked_softmax, cases, mistakes)
