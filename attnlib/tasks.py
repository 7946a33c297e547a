"""Generated tasks, no downloads: dates to normalise, digits to copy, additions to complete.

Shapes: ``N`` examples. Every task is generated from a seed, so every run sees the very same
examples; :mod:`attnlib.data` turns the string pairs into padded id tensors.

Taught in notebook 06 (sequence models); the dates in notebook 07 (sequence to sequence without
attention), the additions in notebook 12 (a GPT with a KV cache).

* **dates** (:func:`date_pairs`): a date written one of many human ways, e.g.
  ``"tuesday, 5 march 2024"``, ``"05/03/2024"`` (day first), ``"March 5th, 2024"``, to be
  normalised to ISO ``"2024-03-05"``.
* **digits** (:func:`digit_pairs`): copy or reverse a digit string of 5-50 digits; its length
  is the knob for measuring how accuracy changes with input length.
* **addition** (:func:`addition_lines`): ``"07+12=019"``, a line a GPT learns to complete
  (notebook 12).
"""

from __future__ import annotations

import datetime
import random
import string

from ._validate import require_positive_int
from .data import PairDataset, Vocab

__all__ = [
    "DATE_SOURCE_SYMBOLS",
    "DATE_STYLES",
    "DATE_TARGET_SYMBOLS",
    "FIRST_DATE",
    "LAST_DATE",
    "MONTHS",
    "WEEKDAYS",
    "addition_lines",
    "addition_split",
    "date_datasets",
    "date_pairs",
    "date_vocabs",
    "digit_datasets",
    "digit_pairs",
    "digit_vocab",
    "format_date",
]

# --- dates ------------------------------------------------------------------------------
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
    require_positive_int("n", n)
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
    require_positive_int("n", n)
    require_positive_int("min_len", min_len)
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


def addition_lines(n: int | None = None, seed: int = 0, *, digits: int = 2) -> list[tuple[str, str]]:
    """Additions ``a+b=c`` written at a fixed width: ``"07+12=019"`` for 7 + 12.

    Operands have ``digits`` digits, the sum ``digits + 1``, all zero-padded, so every line
    has the same length and the same column always holds the same kind of digit.

    Args:
        n: how many lines, drawn without repetition; None gives all ``(10**digits)**2`` of
            them in a seeded order.
        seed: the same seed gives the same lines in the same order.
        digits: digits per operand.

    Returns:
        ``(prompt, line)`` pairs, e.g. ``("07+12=", "07+12=019")``.
    """
    require_positive_int("digits", digits)
    size = 10**digits
    order = list(range(size * size))
    random.Random(seed).shuffle(order)
    if n is not None:
        if not 1 <= n <= len(order):
            raise ValueError(f"expected n in [1, {len(order)}] (distinct additions), got {n}")
        order = order[:n]
    lines = []
    for i in order:
        a, b = divmod(i, size)
        prompt = f"{a:0{digits}d}+{b:0{digits}d}="
        lines.append((prompt, f"{prompt}{a + b:0{digits + 1}d}"))
    return lines


def addition_split(
    n_test: int = 1000, seed: int = 0, *, digits: int = 2
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """All :func:`addition_lines`, split so that no held-out sum is seen in either order.

    ``a+b`` and its commuted twin ``b+a`` always land on the same side: the held-out lines are
    the first unordered pairs ``{a, b}`` of the seeded order, both orders of each, until
    ``n_test`` lines (a pair that would overshoot is skipped for a later ``a+a``, which is one line).

    Args:
        n_test: held-out lines.
        seed: the order of :func:`addition_lines`.
        digits: digits per operand.

    Returns:
        ``(train, test)`` lists of ``(prompt, line)`` pairs, each in the seeded order.
    """
    lines = addition_lines(seed=seed, digits=digits)
    if not 1 <= n_test < len(lines):
        raise ValueError(f"expected n_test in [1, {len(lines) - 1}], got {n_test}")
    operands = lambda prompt: frozenset(prompt[:-1].split("+"))  # noqa: E731 - {a, b}, unordered
    held: set[frozenset[str]] = set()
    size = 0
    for prompt, _ in lines:
        pair = operands(prompt)
        cost = len(pair) if pair not in held else 0  # a+a is one line, a+b and b+a two
        if 0 < cost <= n_test - size:
            held.add(pair)
            size += cost
        if size == n_test:
            break
    test = [line for line in lines if operands(line[0]) in held]
    train = [line for line in lines if operands(line[0]) not in held]
    return train, test
