"""Masks: True = may attend, as in torch.nn.functional.scaled_dot_product_attention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib import (
    causal_mask,
    combine_masks,
    from_masked_out,
    length_mask,
    padding_mask,
    scaled_dot_product_attention,
    to_masked_out,
)


def test_causal_mask_is_lower_triangular_and_matches_is_causal():
    m = causal_mask(4)
    assert m.dtype == torch.bool
    assert m.tolist() == [[i >= j for j in range(4)] for i in range(4)]
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 3, generator=g) for _ in range(3))
    torch.testing.assert_close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
    )


def test_padding_mask_from_ids_and_from_lengths_agree():
    tokens = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 0, 0, 0]])
    by_ids = padding_mask(tokens, pad_id=0)
    by_lengths = length_mask(torch.tensor([3, 2]), max_len=5)
    assert by_ids.shape == (2, 1, 1, 5)
    assert torch.equal(by_ids, by_lengths)
    assert by_ids[0, 0, 0].tolist() == [True, True, True, False, False]


def test_length_mask_defaults_to_longest():
    assert length_mask([1, 3]).shape == (2, 1, 1, 3)


def test_combine_masks_is_and_with_broadcasting():
    pad = length_mask([3, 2], max_len=4)  # (2, 1, 1, 4)
    combined = combine_masks(pad, causal_mask(4))
    assert combined.shape == (2, 1, 4, 4)
    assert torch.equal(combined, pad & causal_mask(4))
    assert combine_masks(None, None) is None
    assert torch.equal(combine_masks(None, causal_mask(2)), causal_mask(2))


def test_conventions_convert_both_ways_and_agree_with_nn_multihead():
    masked_out = torch.triu(torch.ones(4, 4), diagonal=1)  # the mask of Raschka (2024, ch. 3)
    assert torch.equal(from_masked_out(masked_out), causal_mask(4))
    assert torch.equal(to_masked_out(causal_mask(4)), masked_out.bool())
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(6, 2, batch_first=True).eval()
    x = torch.randn(2, 4, 6)
    _, torch_weights = mha(x, x, x, attn_mask=to_masked_out(causal_mask(4)), average_attn_weights=False)
    q, k, _ = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    split = lambda t: t.view(2, 4, 2, 3).transpose(1, 2)  # noqa: E731
    _, ours = scaled_dot_product_attention(split(q), split(k), split(k), causal_mask(4))
    torch.testing.assert_close(ours, torch_weights)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: causal_mask(0), ValueError, "size >= 1"),
        (lambda: causal_mask(2.0), TypeError, "int"),
        (lambda: padding_mask(torch.zeros(3), 0), ValueError, r"\(B, Tk\)"),
        (lambda: padding_mask(torch.zeros(2, 3), 0), TypeError, "integer token ids"),
        (lambda: length_mask([2, -1]), ValueError, ">= 0"),
        (lambda: length_mask([2, 5], max_len=4), ValueError, "shorter than the longest"),
        (lambda: combine_masks(torch.ones(2, 3)), TypeError, "boolean mask"),
        (lambda: combine_masks(causal_mask(3), causal_mask(4)), ValueError, "do not broadcast"),
        (lambda: from_masked_out(torch.tensor([0.0, 0.5])), ValueError, "0/1 mask"),
    ],
)
def test_bad_masks_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
