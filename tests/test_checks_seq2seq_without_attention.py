"""The checks of notebook 07 accept right answers and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch
from student_answers import assert_todo_then_error, crashes

from attnlib import check
from attnlib.check import seq2seq_without_attention
from attnlib.data import pad_sequences
from tests.checks_shared import assert_hint

# ----------------------------------------------------------------------------- right answers


def right_pad(seqs, pad_id):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)  # (N, T)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out


def right_pad_torch(seqs, pad_id):
    return torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(s) for s in seqs], batch_first=True, padding_value=pad_id
    )


def right_reverse(src, pad_id):
    rows = [[tok for tok in row if tok != pad_id][::-1] for row in src.tolist()]
    return pad_sequences(rows, pad_id=pad_id)


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.pad_batch, right_pad),
        (check.pad_batch, right_pad_torch),
        (check.pad_batch, pad_sequences),
        (check.reverse_source, right_reverse),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_reversed_source_reverses_each_row_and_keeps_its_padding():
    rows = [[5, 6, 7, 8], [9, 10], [11]]
    src = pad_sequences(rows, pad_id=3)
    expected = pad_sequences([r[::-1] for r in rows], pad_id=3)
    torch.testing.assert_close(seq2seq_without_attention._reversed_source(src, 3), expected)


# ----------------------------------------------------------------------------- typical mistakes


def left_pad(seqs, pad_id):
    t = max(len(s) for s in seqs)
    return torch.tensor([[pad_id] * (t - len(s)) + s for s in seqs])


WRONG = [
    (check.pad_batch, left_pad, "pad on the right"),
    (check.pad_batch, lambda seqs, pad_id: right_pad(seqs, 0), "fill with `pad_id`"),
    (check.pad_batch, lambda seqs, pad_id: right_pad(seqs, pad_id).tolist(), "not a Python list"),
    (check.pad_batch, lambda seqs, pad_id: right_pad(seqs, pad_id).float(), "must be integers"),
    (check.reverse_source, lambda s, p: s.flip(1), "the padding moved to the front"),
    (check.reverse_source, lambda s, p: s.flip(0), "order of the sequences in the batch"),
    (check.reverse_source, lambda s, p: right_reverse(s, 0), "compare with pad_id"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- predictions


def test_context_size_prediction():
    h, layers = 32, 3
    expected = 2 * layers * h  # hidden and cell, (L, B, H) each, directions summed
    assert check.context_size(expected, expected).status == "pass"
    assert check.context_size(float(expected), expected).status == "pass"
    assert check.context_size(..., expected).status == "todo"
    for five, fifty, hint in [
        (layers * h, layers * h, "hidden *and* cell"),
        (2 * h, 2 * h, "each of the 3 layers"),
        (h, h, "count every layer's hidden and cell"),
        (4 * layers * h, 4 * layers * h, "adds the two directions"),
        (5 * h, 50 * h, "never sees the encoder outputs"),
        (expected, 10 * expected, "the same size for every length"),
        (7, 7, "Seq2Seq.encode hands the decoder"),
    ]:
        verdict = check.context_size(five, fifty)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.pad_batch, check.reverse_source]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised AttributeError", "args[0].no_such_attribute")
