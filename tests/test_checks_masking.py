"""The checks of notebook 03 accept right answers and explain the typical wrong ones."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from student_answers import assert_todo_then_error, crashes

import attnlib
from attnlib import check

# ----------------------------------------------------------------------------- student answers


def window_ok(t, window):
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    return (j <= i) & (i - j < window)


def window_from_trils(t, window):
    ones = torch.ones(t, t, dtype=torch.bool)
    return ones.tril() & ~ones.tril(diagonal=-window)


def prefix_lm_ok(prefix_lengths, t):
    in_prefix = torch.arange(t)[None, :] < prefix_lengths[:, None]  # (B, T)
    return attnlib.causal_mask(t) | in_prefix[:, None, None, :]  # (T, T) | (B, 1, 1, T) -> (B, 1, T, T)


def prefix_lm_loop(prefix_lengths, t):
    mask = torch.zeros(len(prefix_lengths), 1, t, t, dtype=torch.bool)
    for b, p in enumerate(prefix_lengths.tolist()):
        for i in range(t):
            for j in range(t):
                mask[b, 0, i, j] = j <= i or j < p
    return mask


def masked_softmax_ok(scores, mask):
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0)


# ----------------------------------------------------------------------------- right answers


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.sliding_window_mask, window_ok),
        (check.sliding_window_mask, window_from_trils),
        (check.prefix_lm_mask, prefix_lm_ok),
        (check.prefix_lm_mask, prefix_lm_loop),
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


def _pairs(t):
    return torch.arange(t)[:, None], torch.arange(t)[None, :]


def _window(condition):
    def fn(t, w):
        i, j = _pairs(t)
        return condition(i, j, w)

    return fn


WRONG_WINDOW = [
    (_window(lambda i, j, w: (j > i) | (j <= i - w)), "inverted"),
    (_window(lambda i, j, w: (j <= i) & (i - j <= w)), "one key too many"),
    (_window(lambda i, j, w: (j <= i) & (i - j < w - 1)), "one key too few"),
    (_window(lambda i, j, w: (j < i) & (i - j <= w)), "attend to itself"),
    (_window(lambda i, j, w: (i - j).abs() < w), "band around the diagonal"),
    (_window(lambda i, j, w: i - j < w), "window alone is not causal"),
    (lambda t, w: torch.ones(t, t, dtype=torch.bool).tril(), "plain causal mask"),
    (_window(lambda i, j, w: (j >= i) & (j - i < w)), "your band lies above it"),
    (_window(lambda i, j, w: ((j <= i) & (i - j < w)).float()), "must be boolean"),
    (_window(lambda i, j, w: ((j <= i) & (i - j < w)).int()), "must be boolean"),
]


def _prefix(p, t):
    return torch.arange(t)[None, :] < p[:, None]  # (B, T)


WRONG_PREFIX_LM = [
    (lambda p, t: ~prefix_lm_ok(p, t), "inverted"),
    (lambda p, t: attnlib.causal_mask(t) & _prefix(p, t)[:, None, None, :], "combine the two with `|`"),
    (lambda p, t: attnlib.causal_mask(t) | _prefix(p, t)[:, None, :, None], "the key axis comes last"),
    (
        lambda p, t: attnlib.causal_mask(t) | (torch.arange(t)[None, :] <= p[:, None])[:, None, None, :],
        "not `<=`",
    ),
    (lambda p, t: _prefix(p, t)[:, None, None, :].repeat(1, 1, t, 1), "the causal part"),
    (lambda p, t: prefix_lm_ok(p[:1].repeat(len(p)), t), "its own prefix length"),
    (lambda p, t: prefix_lm_ok(p, t).squeeze(1), "add the head axis"),
    (lambda p, t: prefix_lm_ok(p, t).float(), "must be boolean"),
    (lambda p, t: prefix_lm_ok(p, t).int(), "must be boolean"),
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
    [(check.sliding_window_mask, w, h) for w, h in WRONG_WINDOW]
    + [(check.prefix_lm_mask, w, h) for w, h in WRONG_PREFIX_LM]
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


@pytest.mark.parametrize(
    "check_fn", [check.sliding_window_mask, check.prefix_lm_mask, check.masked_softmax_safe]
)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised")


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
        result = attnlib.masked_softmax(scores, mask)
        scores.zero_()
        mask.fill_(False)
        return result

    assert check.masked_softmax_safe(edits_in_place)
