"""What only notebook 03's checks do (the rest: test_harness.py, answers/masking.py): their
references agree with PyTorch, a NaN is reported with its case, and inputs edited in place
spoil nothing."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import attnlib
from attnlib import check
from tests.check.answers.masking import softmax_of_masked_scores


def test_reference_agrees_with_torch_on_fully_masked_rows():
    """attnlib (the reference of exercise 3.3) gives the zeros torch's own kernel gives."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 6, 4, generator=gen) for _ in range(3))
    mask = attnlib.causal_mask(6) & torch.tensor([False, False, True, True, True, True])
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    context, weights = attnlib.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(context, expected)
    assert torch.equal(weights[0, :2], torch.zeros(2, 6))


def test_nan_is_reported_with_the_case_that_produced_it():
    verdict = check.masked_softmax_safe(softmax_of_masked_scores)
    assert "fully masked rows" in verdict.message
    assert "got nan" in verdict.message


def test_window_reference_attends_to_the_last_window_keys():
    """PyTorch's attention under the reference mask of 3.1 equals attention over keys i-w+1 .. i."""
    from attnlib.check.masking import _sliding_window_mask

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(7, 4, generator=gen) for _ in range(3))
    for window in (1, 3, 10):
        got = F.scaled_dot_product_attention(q, k, v, attn_mask=_sliding_window_mask(7, window))
        for i in range(7):
            lo = max(0, i - window + 1)
            expected = F.scaled_dot_product_attention(q[i : i + 1], k[lo : i + 1], v[lo : i + 1])
            torch.testing.assert_close(got[i : i + 1], expected)
    assert torch.equal(_sliding_window_mask(5, 5), attnlib.causal_mask(5))


def test_prefix_lm_reference_is_causal_after_the_prefix_and_open_inside_it():
    from attnlib.check.masking import _prefix_lm_mask

    mask = _prefix_lm_mask(torch.tensor([0, 2, 4]), 4)[:, 0]  # (B, T, T)
    assert torch.equal(mask[0], attnlib.causal_mask(4))
    assert mask[1, :2, :2].all() and torch.equal(mask[1, 2:], attnlib.causal_mask(4)[2:])
    assert mask[2].all()


def test_student_cannot_spoil_later_cases_by_editing_inputs_in_place():
    def edits_in_place(scores, mask):
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        result = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
        scores.zero_()
        mask.fill_(False)
        return result

    assert check.masked_softmax_safe(edits_in_place)
