"""Character vocabularies, synthetic seq2seq tasks and padded batches (no downloads).

Shapes: ``N`` examples, ``B`` batch, ``Ts`` source length, ``Tt`` target length (with SOS and
EOS). Every tensor is batch-first and padded with ``PAD_ID``.

Two tasks, each generated from a seed so that every run sees the very same examples:

* **dates** (:func:`date_pairs`): a date written one of many human ways, e.g.
  ``"tuesday, 5 march 2024"``, ``"05/03/2024"`` (day first), ``"March 5th, 2024"``, to be
  normalised to ISO ``"2024-03-05"``.
* **digits** (:func:`digit_pairs`): copy or reverse a digit string of 5-50 digits; its length
  is the knob for measuring how accuracy changes with input length.

:class:`PairDataset` encodes string pairs into padded ``(N, Ts)`` / ``(N, Tt)`` id tensors and
yields batches trimmed to their longest member. Every seq2seq model in attnlib takes a batch
the same way: ``logits = model(src, tgt)`` predicts ``tgt[:, 1:]``.
"""

from __future__ import annotations

import datetime
import random
import string
from collections.abc import Iterable, Iterator, Sequence

import torch

from ._checks import check_positive_int

PAD, SOS, EOS, UNK = "<pad>", "<sos>", "<eos>", "<unk>"
PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3  # SOS=1, EOS=2 in every vocabulary


class Vocab:
    """Maps symbols (here single characters) to ids; ids 0-3 are PAD, SOS, EOS, UNK.

    Args:
        symbols: the ordinary symbols, in id order after the four special ones.
    """

    def __init__(self, symbols: Iterable[str]) -> None:
        self.itos: list[str] = [PAD, SOS, EOS, UNK]
        for s in symbols:
            if s in self.itos:
                raise ValueError(f"symbol {s!r} appears twice in the vocabulary")
            self.itos.append(s)
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.sos_id, self.eos_id, self.unk_id = PAD_ID, SOS_ID, EOS_ID, UNK_ID

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} symbols: {''.join(self.itos[4:])!r} + 4 special)"

    def encode(self, text: Sequence[str], *, sos: bool = False, eos: bool = False) -> list[int]:
        """Ids of the symbols of ``text`` (unknown symbols become UNK).

        Args:
            text: a string (one symbol per character) or a sequence of symbols.
            sos: prepend SOS. eos: append EOS.

        Returns:
            A list of ids.
        """
        if len(text) == 0:
            raise ValueError("cannot encode an empty sequence: expected at least one symbol")
        ids = [self.stoi.get(s, self.unk_id) for s in text]
        return [self.sos_id] * sos + ids + [self.eos_id] * eos

    def tokens(self, ids: Iterable[int] | torch.Tensor) -> list[str]:
        """Every id as its symbol (specials included), e.g. for plot labels; space shows as ␣."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"expected ids in [0, {len(self)}), got {bad[:5]}")
        return ["␣" if self.itos[i] == " " else self.itos[i] for i in ids]

    def decode(self, ids: Iterable[int] | torch.Tensor) -> str:
        """The string spelled by ``ids``: stops at the first EOS, skips PAD and SOS."""
        out = []
        for tok in self.tokens(ids):
            if tok == EOS:
                break
            if tok not in (PAD, SOS):
                out.append(" " if tok == "␣" else tok)
        return "".join(out)


# --- dates -------------------------------------------------------------------------------
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
DATE_SOURCE_SYMBOLS = string.ascii_lowercase + string.ascii_uppercase + string.digits + " ,./-"
DATE_TARGET_SYMBOLS = string.digits + "-"
FIRST_DATE, LAST_DATE = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def format_date(d: datetime.date, style: int) -> str:
    """Write ``d`` in human style number ``style`` (0 <= style < ``len(DATE_STYLES)``).

    Slashes and dots are always day first (European), so no string is ambiguous.
    """
    month, mon = MONTHS[d.month - 1], MONTHS[d.month - 1][:3]
    wday, wd = WEEKDAYS[d.weekday()], WEEKDAYS[d.weekday()][:3]
    styles = [
        f"{wday}, {d.day} {month} {d.year}",  # tuesday, 5 march 2024
        f"{d.day:02d}/{d.month:02d}/{d.year}",  # 05/03/2024
        f"{month.title()} {_ordinal(d.day)}, {d.year}",  # March 5th, 2024
        f"{d.day} {month} {d.year}",  # 5 march 2024
        f"{d.day} {mon} {d.year}",  # 5 mar 2024
        f"{mon.title()} {d.day}, {d.year}",  # Mar 5, 2024
        f"{d.day}.{d.month}.{d.year}",  # 5.3.2024
        f"{_ordinal(d.day)} of {month} {d.year}",  # 5th of march 2024
        f"{wd.title()} {d.day} {mon.title()} {d.year}",  # Tue 5 Mar 2024
        f"{d.day:02d}-{mon}-{d.year}",  # 05-mar-2024
        f"{month} {d.day} {d.year}",  # march 5 2024
        f"{d.year}/{d.month:02d}/{d.day:02d}",  # 2024/03/05
        f"{wday.title()}, {month.title()} {_ordinal(d.day)} {d.year}",  # Tuesday, March 5th 2024
        f"{d.day:02d}.{d.month:02d}.{d.year}",  # 05.03.2024
    ]
    return styles[style]


DATE_STYLES = 14


def date_pairs(
    n: int, seed: int = 0, *, first: datetime.date = FIRST_DATE, last: datetime.date = LAST_DATE
) -> list[tuple[str, str]]:
    """``n`` (human date, ISO date) pairs, uniformly random dates and styles.

    Args:
        n: number of pairs.
        seed: the same seed gives the same pairs.
        first, last: range of dates (inclusive).

    Returns:
        A list of ``(source, target)`` strings, e.g. ``("tuesday, 5 march 2024", "2024-03-05")``.
    """
    check_positive_int("n", n)
    if last < first:
        raise ValueError(f"expected first <= last, got {first} and {last}")
    rng = random.Random(seed)
    span = (last - first).days
    pairs = []
    for _ in range(n):
        d = first + datetime.timedelta(days=rng.randint(0, span))
        pairs.append((format_date(d, rng.randrange(DATE_STYLES)), d.isoformat()))
    return pairs


def date_vocabs() -> tuple[Vocab, Vocab]:
    """The fixed ``(source, target)`` vocabularies of the date task."""
    return Vocab(DATE_SOURCE_SYMBOLS), Vocab(DATE_TARGET_SYMBOLS)


# --- digits ------------------------------------------------------------------------------
def digit_pairs(
    n: int, seed: int = 0, *, min_len: int = 5, max_len: int = 50, reverse: bool = False
) -> list[tuple[str, str]]:
    """``n`` random digit strings and their copy (or reversal), lengths uniform in a range.

    Args:
        n: number of pairs.
        seed: the same seed gives the same pairs.
        min_len, max_len: shortest and longest string (inclusive).
        reverse: target is the reversed string instead of a copy.

    Returns:
        A list of ``(source, target)`` strings, e.g. ``("30917", "30917")``.
    """
    check_positive_int("n", n)
    check_positive_int("min_len", min_len)
    if max_len < min_len:
        raise ValueError(f"expected min_len <= max_len, got {min_len} and {max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        s = "".join(rng.choices(string.digits, k=rng.randint(min_len, max_len)))
        pairs.append((s, s[::-1] if reverse else s))
    return pairs


def digit_vocab() -> Vocab:
    """The vocabulary of the digit task (source and target alike)."""
    return Vocab(string.digits)


# --- tensors and batches -----------------------------------------------------------------
def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> torch.Tensor:
    """Stack id lists of different lengths into one ``(N, T)`` tensor, padded on the right."""
    if len(seqs) == 0:
        raise ValueError("expected at least one sequence, got none")
    if any(len(s) == 0 for s in seqs):
        raise ValueError("cannot pad an empty sequence: every sequence needs at least one id")
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)  # (N, T)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


class PairDataset:
    """Source/target string pairs as padded id tensors.

    Attributes:
        pairs: the ``(source, target)`` strings.
        src: ``(N, Ts)`` source ids (no SOS/EOS), PAD on the right.
        tgt: ``(N, Tt)`` target ids ``SOS ... EOS PAD...``.
        src_lengths: ``(N,)`` number of real source tokens.

    Args:
        pairs: ``(source, target)`` strings.
        src_vocab, tgt_vocab: vocabularies (they may be the same object).
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> None:
        if len(pairs) == 0:
            raise ValueError("expected at least one (source, target) pair, got none")
        self.pairs = list(pairs)
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.src = pad_sequences([src_vocab.encode(s) for s, _ in self.pairs])  # (N, Ts)
        self.tgt = pad_sequences([tgt_vocab.encode(t, sos=True, eos=True) for _, t in self.pairs])
        self.src_lengths = (self.src != PAD_ID).sum(dim=1)  # (N,)

    def __len__(self) -> int:
        return len(self.pairs)

    def __repr__(self) -> str:
        return f"PairDataset({len(self)} pairs, src {tuple(self.src.shape)}, tgt {tuple(self.tgt.shape)})"

    def subset(self, index: Sequence[int] | torch.Tensor) -> PairDataset:
        """A new dataset holding the pairs at ``index``."""
        index = torch.as_tensor(index, dtype=torch.long).tolist()
        return PairDataset([self.pairs[i] for i in index], self.src_vocab, self.tgt_vocab)

    def batch(self, index: Sequence[int] | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(src, tgt)`` of the examples at ``index``, trimmed to their longest member.

        Returns:
            ``src`` ``(B, Ts)`` and ``tgt`` ``(B, Tt)``.
        """
        index = torch.as_tensor(index, dtype=torch.long)
        src, tgt = self.src[index], self.tgt[index]
        ts = int((src != PAD_ID).sum(1).max())
        tt = int((tgt != PAD_ID).sum(1).max())
        return src[:, :ts], tgt[:, :tt]

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int = 0, by_length: bool = False
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Yield ``(src, tgt)`` batches covering the dataset once.

        Args:
            batch_size: examples per batch (the last batch may be smaller).
            shuffle: visit the examples in a random order fixed by ``seed``.
            seed: seed of the shuffle (use the epoch number for a new order each epoch).
            by_length: group examples of similar source length into the same batch
                (less padding, faster RNNs); batches still come in shuffled order.
        """
        check_positive_int("batch_size", batch_size)
        gen = torch.Generator().manual_seed(seed)
        order = torch.randperm(len(self), generator=gen) if shuffle else torch.arange(len(self))
        if by_length:
            # Sort by length (stable, so ties keep the shuffled order), cut, shuffle the cuts.
            order = order[torch.sort(self.src_lengths[order], stable=True).indices]
        chunks = list(torch.split(order, batch_size))
        if by_length and shuffle:
            chunks = [chunks[i] for i in torch.randperm(len(chunks), generator=gen).tolist()]
        for index in chunks:
            yield self.batch(index)


def date_datasets(n_train: int, n_test: int = 1000, seed: int = 0) -> tuple[PairDataset, PairDataset]:
    """Train and held-out test sets of the date task; no test source occurs in training.

    Returns:
        ``(train, test)`` :class:`PairDataset` s sharing :func:`date_vocabs`.
    """
    train_pairs = date_pairs(n_train, seed)
    seen = {s for s, _ in train_pairs}
    test_pairs: list[tuple[str, str]] = []
    for s, t in date_pairs(4 * n_test, seed + 10_000):
        if s not in seen:
            seen.add(s)  # no duplicates inside the test set either
            test_pairs.append((s, t))
    src_vocab, tgt_vocab = date_vocabs()
    return PairDataset(train_pairs, src_vocab, tgt_vocab), PairDataset(
        test_pairs[:n_test], src_vocab, tgt_vocab
    )


def digit_datasets(
    n_train: int, n_test: int = 1000, seed: int = 0, **kwargs: int | bool
) -> tuple[PairDataset, PairDataset]:
    """Train and test sets of the digit task (``kwargs`` go to :func:`digit_pairs`).

    Returns:
        ``(train, test)`` :class:`PairDataset` s sharing one :func:`digit_vocab`.
    """
    vocab = digit_vocab()
    train = PairDataset(digit_pairs(n_train, seed, **kwargs), vocab, vocab)
    test = PairDataset(digit_pairs(n_test, seed + 10_000, **kwargs), vocab, vocab)
    return train, test
