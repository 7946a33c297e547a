"""What only notebook 13's checks do (the rest: test_harness.py, answers/efficient_attention.py):
the right answers mean what the notebook says, by attnlib's own functions."""

from __future__ import annotations

import pytest
import torch

from attnlib import (
    apply_rotary,
    attention_scores,
    receptive_field,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from attnlib.check import efficient_attention as efficient_checks
from tests.check.answers.efficient_attention import right_combine, right_field, right_rotate_half


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
    # rotate-half RoPE is the interleaved one with the features listed in another order
    x, pos = torch.randn(2, 5, 8), torch.arange(5) + 3
    perm = torch.cat([torch.arange(0, 8, 2), torch.arange(1, 8, 2)])
    torch.testing.assert_close(right_rotate_half(x[..., perm], pos), apply_rotary(x, pos)[..., perm])


@pytest.mark.parametrize(
    ("size", "window", "dilations"),
    [
        (8, 3, [1, 1]),
        (10, 3, [2]),
        (12, 3, [2, 2]),
        (12, 3, [1, 3]),
        (10, 2, [1, 2, 4]),
        (9, 3, [3, 2]),
        (20, 4, [2, 3, 1]),
    ],
)
def test_the_dilated_field_is_the_product_of_the_layers_masks(size, window, dilations):
    reference = efficient_checks._dilated_field(size, window, dilations)  # a set of distances
    torch.testing.assert_close(reference, right_field(size, window, dilations))  # boolean matrix products
    if set(dilations) == {1}:  # the notebook's case: attnlib's matrix power of the sliding window
        assert torch.equal(reference, receptive_field(sliding_window_mask(size, window), len(dilations)))
    if len(set(dilations)) == 1:  # one dilation d: the farthest input is L (w - 1) d back, every d-th one
        d, depth = dilations[0], len(dilations)
        reach = (window - 1) * d * depth
        row = reference[-1].flip(0)  # (T,): row[k] says whether the input k positions back is reached
        assert all(bool(row[k]) == (k % d == 0 and k <= reach) for k in range(size))


def test_a_dilated_stack_of_attention_layers_has_that_receptive_field():
    """Gradients through real attention layers with dilated masks reach exactly the inputs the field says."""
    torch.manual_seed(0)
    size, window, dilations = 14, 3, [3, 2]
    x = torch.randn(1, size, 8, requires_grad=True)
    h = x
    for d in dilations:
        layer_mask = efficient_checks._dilated_mask(size, window, d)  # (T, T)
        q = h @ torch.randn(8, 8)
        h = h + scaled_dot_product_attention(q, h, h, layer_mask)[0]  # residual, as in a Transformer
    (grad,) = torch.autograd.grad(h[0, -1].sum(), x)
    reached = grad[0].abs().sum(-1) > 0  # (T,)
    assert torch.equal(reached, efficient_checks._dilated_field(size, window, dilations)[-1])
