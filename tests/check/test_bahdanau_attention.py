"""What only notebook 08's checks do (the rest: test_harness.py, answers/bahdanau_attention.py):
their references are attnlib's additive attention, a slip gets its hint whether it crashes or
not, and inputs edited in place spoil nothing."""

from __future__ import annotations

import pytest
import torch

from attnlib import AttentionParams, check
from attnlib.check import bahdanau_attention
from tests.check.answers.bahdanau_attention import all_steps, right_all_steps
from tests.check.verdicts import assert_hint

# ----------------------------------------------------------------------------- the references


def test_per_step_reference_is_attnlibs_additive_score():
    """With keys as wide as the state (n = 2n is impossible, so U_a here takes H), W = [W_a | U_a] and
    b = 0 make AttentionParams score exactly what exercise 8.1's per-step reference scores."""
    torch.manual_seed(0)
    h, tq, ts = 4, 3, 5
    queries, keys = torch.randn(2, tq, h), torch.randn(2, ts, h)
    w_a, u_a, v_a = torch.randn(h, h), torch.randn(h, h), torch.randn(h)
    attention = AttentionParams(h)
    with torch.no_grad():
        attention.attn.weight.copy_(torch.cat((w_a, u_a), dim=1))
        attention.attn.bias.zero_()
        attention.v.copy_(v_a)
        expected = attention.score(queries, keys)  # (B, Tq, Ts)
    torch.testing.assert_close(bahdanau_attention._per_step_scores(queries, keys, w_a, u_a, v_a), expected)


def test_module_reference_is_attnlibs_attention_and_context():
    """Exercise 8.2's reference gives AttentionParams' weights (W = [W_a | U_a], b = 0) and their
    weighted sum of the keys, as DecoderWithAttention computes its context."""
    torch.manual_seed(1)
    h = 3
    query, keys = torch.randn(2, h), torch.randn(2, 5, h)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    params = {
        "W_a.weight": torch.randn(h, h),
        "U_a.weight": torch.randn(h, h),
        "v_a.weight": torch.randn(1, h),
    }
    attention = AttentionParams(h)
    with torch.no_grad():
        attention.attn.weight.copy_(torch.cat((params["W_a.weight"], params["U_a.weight"]), dim=1))
        attention.attn.bias.zero_()
        attention.v.copy_(params["v_a.weight"][0])
        weights = attention(query[None], keys, mask)  # (L=1, B, H) -> (B, Ts)
    cfg = {"query_size": h, "key_size": h, "attn_size": h}
    context, got = bahdanau_attention._reference_module(cfg, query, keys, mask, params)
    torch.testing.assert_close(got, weights)
    torch.testing.assert_close(context, torch.bmm(weights[:, None], keys)[:, 0])


# ----------------------------------------------------------------------------- slips that crash somewhere


@pytest.mark.parametrize("knob", ["w_t", "u_t"])
def test_a_forgotten_transpose_gets_its_hint_where_it_crashes_and_where_it_does_not(knob):
    verdict = check.precomputed_scores(lambda *a: all_steps(*a, **{knob: False}))
    assert not verdict and verdict.status == "error" and "Traceback" not in verdict.message
    assert "hint:" in verdict.message and "`queries @ W_a.T`" in verdict.message, verdict.message

    def square_cases_only(queries, keys, w_a, u_a, v_a):
        try:  # where the matrix is square the slip runs and gives wrong numbers
            return all_steps(queries, keys, w_a, u_a, v_a, **{knob: False})
        except RuntimeError:
            return right_all_steps(queries, keys, w_a, u_a, v_a)

    assert_hint(check.precomputed_scores, square_cases_only, "`queries @ W_a.T`")


def test_pairing_queries_with_keys_gets_its_hint_where_it_crashes_and_where_it_does_not():
    verdict = check.precomputed_scores(lambda *a: all_steps(*a, pairs=True))
    assert verdict.status == "error" and "each query must meet every key" in verdict.message

    def where_it_runs(*args):
        try:
            return all_steps(*args, pairs=True)
        except RuntimeError:
            return right_all_steps(*args)

    assert_hint(check.precomputed_scores, where_it_runs, "each query must meet every key")


def test_student_cannot_spoil_later_cases_by_editing_inputs_in_place():
    def edits_in_place(queries, keys, w_a, u_a, v_a):
        result = right_all_steps(queries, keys, w_a, u_a, v_a)
        keys.zero_()
        v_a.zero_()
        return result

    assert check.precomputed_scores(edits_in_place)
