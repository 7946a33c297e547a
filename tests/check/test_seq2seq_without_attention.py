"""What only notebook 07's checks do (the rest: test_harness.py, answers/seq2seq_without_attention.py)."""

from __future__ import annotations

import torch

from attnlib.check import seq2seq_without_attention
from attnlib.data import pad_sequences


def test_reversed_source_reverses_each_row_and_keeps_its_padding():
    rows = [[5, 6, 7, 8], [9, 10], [11]]
    src = pad_sequences(rows, pad_id=3)
    expected = pad_sequences([r[::-1] for r in rows], pad_id=3)
    torch.testing.assert_close(seq2seq_without_attention._reversed_source(src, 3), expected)
