"""The checks of notebook 03 accept right answers and explain the typical wrong ones."""

from __future__ import annotations

import pytest
import torch
from student_answers import assert_todo_then_error, crashes

import attnlib
from attnlib import check

# ----------------------------------------------------------------------------- student answers


def causal_ok(t):
    return torch.tril(torch.ones(t, t, dtype=torch.bool))


def padding_ok(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


def masked_softmax_ok(scores, mask):
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0)


# ----------------------------------------------------------------------------- right answers


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.causal_mask, causal_ok),
        (check.causal_mask, attnlib.causal_mask),
        (check.padding_mask, padding_ok),
        (check.padding_mask, attnlib.padding_mask),
        (check.masked_softmax_safe, masked_softmax_ok),
        (check.masked_softmax_safe, attnlib.masked_softmax),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict, verdict.message
    assert verdict.status == "pass"


def test_reference_agrees_with_torch_on_fully_masked_rows():
    """attnlib (the reference of exercise 3.3) gives the zeros torch's own kernel gives."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 6, 4, generator=gen) for _ in range(3))
    mask = attnlib.causal_mask(6) & torch.tensor([False, False, True, True, True, True])
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    context, weights = attnlib.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(context, expected)
    assert torch.equal(weights[0, :2], torch.zeros(2, 6))


# ----------------------------------------------------------------------------- typical mistakes

WRONG_CAUSAL = [
    (lambda t: torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1), "inverted"),
    (lambda t: torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=-1), "keep the diagonal"),
    (lambda t: torch.triu(torch.ones(t, t, dtype=torch.bool)), "*lower* triangle"),
    (lambda t: torch.tril(torch.ones(t, t)), "must be boolean"),
    (lambda t: torch.tril(torch.ones(t, t, dtype=torch.long)), "must be boolean"),
]

WRONG_PADDING = [
    (lambda tok, pad: (tok == pad)[:, None, None, :], "inverted"),
    (lambda tok, pad: tok != pad, "does not broadcast over heads and queries"),
    (lambda tok, pad: (tok != pad).unsqueeze(1), "suits single-head"),
    (lambda tok, pad: (tok != pad)[:, :, None, None], "key axis must come last"),
    (lambda tok, pad: (tok != pad)[:, None, None, :].float(), "must be boolean"),
    (lambda tok, pad: (tok != pad)[:, None, None, :].int(), "must be boolean"),
]

WRONG_MASKED_SOFTMAX = [
    (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1), "0/0 = NaN"),
    (lambda s, m: torch.softmax(s.masked_fill(m == 0, -1e9), dim=-1), "uniform weights"),
    (lambda s, m: torch.softmax(s.masked_fill(m, float("-inf")), dim=-1).nan_to_num(0.0), "inverted"),
    (lambda s, m: torch.softmax(s, dim=-1) * m, "before* the softmax"),
    (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-2).nan_to_num(0.0), "wrong dimension"),
]


@pytest.mark.parametrize(
    ("check_fn", "wrong", "hint"),
    [(check.causal_mask, w, h) for w, h in WRONG_CAUSAL]
    + [(check.padding_mask, w, h) for w, h in WRONG_PADDING]
    + [(check.masked_softmax_safe, w, h) for w, h in WRONG_MASKED_SOFTMAX],
)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    verdict = check_fn(wrong)
    assert not verdict
    assert verdict.status == "fail"
    assert "hint:" in verdict.message
    assert hint in verdict.message


def test_nan_is_reported_with_the_case_that_produced_it():
    verdict = check.masked_softmax_safe(WRONG_MASKED_SOFTMAX[0][0])
    assert "fully masked rows" in verdict.message
    assert "got nan" in verdict.message


# ----------------------------------------------------------------------------- not yet / crashes


@pytest.mark.parametrize("check_fn", [check.causal_mask, check.padding_mask, check.masked_softmax_safe])
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised")


def test_student_cannot_spoil_later_cases_by_editing_inputs_in_place():
    def edits_in_place(scores, mask):
        result = attnlib.masked_softmax(scores, mask)
        scores.zero_()
        mask.fill_(False)
        return result

    assert check.masked_softmax_safe(edits_in_place)
