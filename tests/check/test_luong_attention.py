"""What only notebook 09's checks do (the rest: test_harness.py, answers/luong_attention.py):
their references are what attnlib's LocalAttention, scorers and LuongDecoder compute."""

from __future__ import annotations

import pytest
import torch

from attnlib import AttentionGeneral, AttentionParams, LocalAttention, LuongDecoder, count_parameters
from attnlib.check import luong_attention
from tests.check.answers.luong_attention import LOCAL_P, WRONG, good_luong_decode, right_concat, right_local_m


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
    w_a = torch.nn.Linear(5, 8, bias=False)  # d_hid=5 -> S=8 source positions
    query, mask = torch.randn(2, 3, 5), torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        got = luong_attention._reference_location(query, w_a.weight, mask)
        scores = w_a(query)[..., :6]  # (B, Tq, Ts)
    expected = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got.sum(dim=-1), torch.ones(2, 3))


def test_concat_reference_is_what_attention_params_scores():
    # Exercise 9.1's reference (every pair concatenated) and its right answer (the keys' half once)
    # are attnlib's concat scorer, whose W_a has A = d_hid outputs.
    torch.manual_seed(0)
    scorer = AttentionParams(3)
    query, keys = torch.randn(2, 4, 3), torch.randn(2, 5, 3)
    args = (query, keys, scorer.attn.weight, scorer.attn.bias, scorer.v)
    with torch.no_grad():
        expected = scorer.score(query, keys)
        torch.testing.assert_close(luong_attention._reference_concat(*args), expected)
        torch.testing.assert_close(right_concat(*args), expected)
        torch.testing.assert_close(luong_attention._concat(*args), expected)


def test_local_p_answer_is_the_modules_count_and_every_hint_has_a_wrong_answer():
    module = LocalAttention(**luong_attention.LOCAL_P_CONFIG)
    assert count_parameters(module) == LOCAL_P
    assert count_parameters(module) == 32 * 32 + 32 + count_parameters(
        AttentionParams(32)
    )  # W_p, v_p, scorer
    hints = luong_attention._local_p_hints()
    assert LOCAL_P not in hints
    asserted = [hint for _, hint in WRONG["local_p_parameters"]]
    for hint in hints.values():
        assert any(text in hint for text in asserted), hint


def test_luong_decode_reference_is_the_module_step_by_step():
    # The module's all-at-once call with input feeding equals its one-step calls, which carry h~.
    torch.manual_seed(0)
    decoder = LuongDecoder(9, 4, 2, AttentionGeneral(4))
    targets, hidden, cell = torch.randint(3, 9, (2, 5)), torch.randn(2, 2, 4), torch.randn(2, 2, 4)
    keys, mask = torch.randn(2, 6, 4), torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    with torch.no_grad():
        expected = luong_attention._reference_luong_decode(decoder, targets, hidden, cell, keys, mask)
        steps, h, c = [], hidden, cell
        for t in range(5):
            logits, h, c = decoder(targets[:, t], h, c, keys, mask, step=t)
            steps.append(logits)
        torch.testing.assert_close(torch.stack(steps, dim=1), expected)
        torch.testing.assert_close(
            luong_attention._luong_decode(decoder, targets, hidden, cell, keys, mask), expected
        )
        torch.testing.assert_close(good_luong_decode(decoder, targets, hidden, cell, keys, mask), expected)
