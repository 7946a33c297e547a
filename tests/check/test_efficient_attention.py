"""What only notebook 13's checks do (the rest: test_harness.py, answers/efficient_attention.py):
the right answers mean what the notebook says, by attnlib's own functions."""

from __future__ import annotations

import torch

from attnlib import (
    apply_rotary,
    attention_scores,
    receptive_field,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from tests.check.answers.efficient_attention import right_combine, right_layers, right_rotate_half


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
