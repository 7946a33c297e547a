"""Vocabulary and batching of attnlib.data, and the synthetic tasks of attnlib.tasks."""

from __future__ import annotations

import datetime
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.data import EOS_ID, PAD_ID, SOS_ID, UNK_ID, PairDataset, Vocab, pad_sequences
from attnlib.tasks import (
    DATE_STYLES,
    FIRST_DATE,
    LAST_DATE,
    date_datasets,
    date_pairs,
    date_vocabs,
    digit_datasets,
    digit_pairs,
    digit_vocab,
    format_date,
)

# An independent reader of every style the generator writes (day first where numeric).
FORMATS = ["%A, %d %B %Y", "%d/%m/%Y", "%B %d, %Y", "%d %B %Y", "%d %b %Y", "%b %d, %Y",
           "%d.%m.%Y", "%d %B %Y", "%a %d %b %Y", "%d-%b-%Y", "%B %d %Y", "%Y/%m/%d",
           "%A, %B %d %Y", "%d.%m.%Y"]  # fmt: skip


def read_date(text: str) -> datetime.date:
    """Parse a generated date with strptime; fail unless exactly one reading exists."""
    plain = re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text).replace(" of ", " ")
    readings = set()
    for fmt in FORMATS:
        try:
            readings.add(datetime.datetime.strptime(plain, fmt).date())
        except ValueError:
            continue
    assert len(readings) == 1, f"{text!r} reads as {readings}"
    return readings.pop()


def test_vocab_specials_and_round_trip():
    vocab = Vocab("abc ")
    assert (vocab.pad_id, vocab.sos_id, vocab.eos_id, vocab.unk_id) == (PAD_ID, SOS_ID, EOS_ID, UNK_ID)
    assert (SOS_ID, EOS_ID) == (1, 2)  # the same in every vocabulary
    assert len(vocab) == 8
    ids = vocab.encode("ab c", sos=True, eos=True)
    assert ids == [SOS_ID, 4, 5, 7, 6, EOS_ID]
    assert vocab.decode([*ids, PAD_ID, PAD_ID]) == "ab c"
    assert vocab.tokens([4, 7, EOS_ID]) == ["a", "␣", "<eos>"]


def test_vocab_unknown_symbol_becomes_unk():
    assert Vocab("ab").encode("axb") == [4, UNK_ID, 5]


def test_decode_stops_at_first_eos():
    vocab = Vocab("ab")
    assert vocab.decode(torch.tensor([SOS_ID, 4, EOS_ID, 5, 5])) == "a"


@pytest.mark.parametrize("ids", [[4, 9], [-1], [2.5]])
def test_ids_outside_the_vocab_raise(ids):
    with pytest.raises(ValueError, match=r"expected ids in \[0, 6\)"):
        Vocab("ab").decode(ids)


def test_empty_sequences_raise():
    vocab = Vocab("ab")
    with pytest.raises(ValueError, match="empty"):
        vocab.encode("")
    with pytest.raises(ValueError, match="empty"):
        pad_sequences([[4], []])
    with pytest.raises(ValueError, match="at least one"):
        pad_sequences([])
    with pytest.raises(ValueError, match="at least one"):
        PairDataset([], vocab, vocab)


def test_duplicate_symbol_raises():
    with pytest.raises(ValueError, match="twice"):
        Vocab("aba")


def test_date_pairs_are_deterministic_for_a_seed():
    assert date_pairs(50, seed=7) == date_pairs(50, seed=7)
    assert date_pairs(50, seed=7) != date_pairs(50, seed=8)


def test_generated_dates_are_valid_and_match_their_source():
    pairs = date_pairs(2000, seed=3)
    styles = set()
    for source, target in pairs:
        day = datetime.date.fromisoformat(target)  # raises on an invalid date
        assert FIRST_DATE <= day <= LAST_DATE
        assert read_date(source) == day
        weekday = re.search(r"(mon|tue|wed|thu|fri|sat|sun)", source.lower())
        if weekday:
            assert day.strftime("%a").lower() == weekday.group(1)
        styles.add(next(s for s in range(DATE_STYLES) if format_date(day, s) == source))
    assert styles == set(range(DATE_STYLES))  # every style is used


@settings(max_examples=200, deadline=None)
@given(st.dates(FIRST_DATE, LAST_DATE), st.integers(0, DATE_STYLES - 1))
def test_every_style_reads_back_as_its_date(day, style):
    source = format_date(day, style)
    assert read_date(source) == day
    src_vocab, _ = date_vocabs()
    assert UNK_ID not in src_vocab.encode(source)


def test_digit_pairs_copy_reverse_and_lengths():
    copies = digit_pairs(300, seed=1, min_len=5, max_len=50)
    assert copies == digit_pairs(300, seed=1)
    assert all(s == t and s.isdigit() and 5 <= len(s) <= 50 for s, t in copies)
    assert {len(s) for s, _ in copies} >= {5, 50}
    reversals = digit_pairs(20, seed=1, reverse=True)
    assert [t for _, t in reversals] == [s[::-1] for s, _ in copies[:20]]
    with pytest.raises(ValueError, match="min_len <= max_len"):
        digit_pairs(3, min_len=9, max_len=4)


def test_pad_sequences_pads_on_the_right():
    out = pad_sequences([[5, 6, 7], [8]])
    assert torch.equal(out, torch.tensor([[5, 6, 7], [8, PAD_ID, PAD_ID]]))


def test_pair_dataset_layout_and_trimmed_batches():
    vocab = digit_vocab()
    data = PairDataset([("123", "321"), ("45", "54"), ("6", "6")], vocab, vocab)
    assert data.src.shape == (3, 3) and data.tgt.shape == (3, 5)
    assert data.tgt[1].tolist() == [SOS_ID, *vocab.encode("54"), EOS_ID, PAD_ID]
    assert data.src_lengths.tolist() == [3, 2, 1]
    src, tgt = data.batch([1, 2])
    assert src.shape == (2, 2) and tgt.shape == (2, 4)  # trimmed to the longest member
    assert vocab.decode(tgt[0]) == "54"


@pytest.mark.parametrize("by_length", [False, True])
def test_batches_cover_every_example_once_in_a_seeded_order(by_length):
    train, _ = digit_datasets(103, 5, seed=0)

    def seen(seed):
        return [
            vocab_text
            for src, _ in train.batches(10, shuffle=True, seed=seed, by_length=by_length)
            for vocab_text in (train.src_vocab.decode(row) for row in src)
        ]

    first = seen(0)
    assert sorted(first) == sorted(s for s, _ in train.pairs)
    assert first == seen(0)
    assert first != seen(1)


def test_by_length_batches_have_little_padding():
    train, _ = digit_datasets(400, 5, seed=0)
    for src, _ in train.batches(50, shuffle=True, by_length=True):
        lengths = (src != PAD_ID).sum(1)
        assert int(lengths.max() - lengths.min()) <= 8


def test_date_test_set_is_held_out():
    train, test = date_datasets(3000, 500, seed=0)
    assert len(test) == 500
    assert not {s for s, _ in train.pairs} & {s for s, _ in test.pairs}
