"""What only notebook 09's checks do (the rest: test_harness.py, answers/luong_attention.py):
their references are what attnlib's LocalAttention and scorers compute."""

from __future__ import annotations

import pytest
import torch

from attnlib import LocalAttention
from attnlib.check import luong_attention
from tests.check.answers.luong_attention import right_local_m


@pytest.mark.parametrize("half_window", [1, 2, 3])
@pytest.mark.parametrize("step", [0, 3, 6])
def test_local_m_reference_is_what_local_attention_computes(half_window, step):
    torch.manual_seed(half_window)
    local = LocalAttention(6, half_window, mode="m", score="general")
    query, keys = torch.randn(3, 4, 6), torch.randn(3, 9, 6)
    mask = torch.arange(9)[None, :] < torch.tensor([[9], [7], [4]])  # (B, Ts); row 2 ends early
    with torch.no_grad():
        expected = local.attend(query, keys, mask, step)
        scores = local.scorer.score(query, keys)
    got = luong_attention._reference_local_m(scores, mask, half_window, step)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(right_local_m(scores, mask, half_window, step), expected)


def test_location_reference_is_a_linear_layer_then_a_masked_softmax():
    torch.manual_seed(0)
    w_a = torch.nn.Linear(5, 8, bias=False)  # H=5 -> S=8 source positions
    query, mask = torch.randn(2, 3, 5), torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        got = luong_attention._reference_location(query, w_a.weight, mask)
        scores = w_a(query)[..., :6]  # (B, Tq, Ts)
    expected = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got.sum(dim=-1), torch.ones(2, 3))
