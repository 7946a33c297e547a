"""Exercise checks for notebook 07 (seq2seq without attention); see :mod:`attnlib.check._core`.

Shapes: ``N`` sequences, ``B`` batch, ``Ts`` source length, ``H`` hidden size (``d_hid`` in the
hints, as in the notebooks), ``L`` LSTM layers, ``V`` vocabulary.

The references are attnlib's own code: :func:`attnlib.data.pad_sequences` and ``Seq2Seq.encode``.
Inputs come from local ``torch.Generator`` s and models are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import Decoder, Encoder, Seq2Seq
from ..data import pad_sequences
from ..i18n import N_, fmt
from ._core import (
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    predictions_not_yet,
    require_integer_ids,
    run_check,
    seeded,
)
from ._reach import own, torch_api

__all__ = ["context_size", "pad_batch", "reverse_source"]


def _left_padded(seqs: list[list[int]], pad_id: int) -> torch.Tensor:
    t = max(len(s) for s in seqs)
    return torch.tensor([[pad_id] * (t - len(s)) + list(s) for s in seqs])


#: Out of reach while exercise 7.1 runs: attnlib's answer, and torch's function that pads a list of tensors.
PAD_FORBIDDEN = (
    own(pad_sequences),
    torch_api(
        "nn.utils.rnn.pad_sequence",
        (torch.nn.utils.rnn, "pad_sequence"),
        hint=N_("make the (N, T) tensor with torch.full and copy each sequence into the start of its row"),
    ),
)


def pad_batch(student_fn: Callable[[list[list[int]], int], torch.Tensor]) -> Verdict:
    """Exercise 7.1: ``student_fn(seqs, pad_id) -> (N, T)`` integer ids, padded on the right.

    ``seqs`` is a list of ``N`` lists of ids of different lengths; ``T`` is the longest length
    and every shorter row is filled up with ``pad_id`` after its real ids, as
    :func:`attnlib.data.pad_sequences` does.
    """
    title = N_("Exercise 7.1 — pad a batch")
    cases = [
        Case("three sequences, pad_id=0", ([[5, 6, 7], [8, 9], [4]], 0)),
        Case("the longest sequence is not the first", ([[3, 4], [5, 6, 7, 8, 9], [10, 11, 12]], 0)),
        Case("pad_id=13", ([[4, 5, 6], [7], [8, 9]], 13)),
        Case("all of the same length: nothing to pad", ([[1, 2], [3, 4]], 0)),
        Case("one sequence of one id", ([[7]], 0)),
    ]
    mistakes = [
        Mistake(
            "pad on the right: the real ids start at position 0 and the padding comes after them "
            "(the encoder and the masks of attnlib assume right padding)",
            _left_padded,
        ),
        Mistake(
            "fill with `pad_id`, not with 0: the padding id is an argument",
            lambda seqs, pad_id: pad_sequences(seqs, 0),
        ),
        Mistake(
            "return one tensor (e.g. `torch.full((N, T), pad_id, dtype=torch.long)` filled row by row), "
            "not a Python list",
            lambda seqs, pad_id: pad_sequences(seqs, pad_id).tolist(),
        ),
    ]
    verdict = run_check(title, student_fn, pad_sequences, cases, mistakes, forbidden=PAD_FORBIDDEN)
    return require_integer_ids(verdict, title, student_fn, cases[0])


def _reversed_source(src: torch.Tensor, pad_id: int, *, pad: int | None = None) -> torch.Tensor:
    """Each row's real tokens in reverse order, the padding left where it was (on the right).

    ``pad`` is the id treated as padding (``pad_id`` unless a mistake says otherwise)."""
    pad = pad_id if pad is None else pad
    lengths = (src != pad).sum(dim=1, keepdim=True)  # (B, 1)
    index = lengths - 1 - torch.arange(src.shape[1])  # (B, Ts): position to read, < 0 in the padding
    reversed_ = src.gather(1, index.clamp(min=0))  # (B, Ts)
    return torch.where(index >= 0, reversed_, torch.full_like(src, pad_id))


def _ids(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])  # (B, Ts), padded on the right


def reverse_source(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 7.2: ``student_fn(src, pad_id) -> (B, Ts)``: every source reversed, padding kept
    on the right (Sutskever et al., 2014, §3.3).

    ``src`` ``(B, Ts)`` holds token ids padded on the right with ``pad_id``.
    """
    cases = [
        Case("one source, no padding", (_ids([[5, 6, 7, 8]], 0), 0)),
        Case("a padded batch", (_ids([[5, 6, 7, 8], [9, 10], [11, 12, 13]], 0), 0)),
        Case("a source of one token", (_ids([[4], [5, 6, 7]], 0), 0)),
        Case("padding id 3 (not 0)", (_ids([[5, 6, 7], [8, 9]], 3), 3)),
    ]
    mistakes = [
        Mistake(
            "compare with pad_id, not with 0: the padding id is an argument",
            lambda s, p: _reversed_source(s, p, pad=0),
        ),
        Mistake(
            "the padding moved to the front: flipping a whole row reverses the <pad> tokens too. "
            "Reverse only each row's real tokens (its length is the number of tokens != pad_id) and "
            "keep the padding on the right, where the encoder expects it",
            lambda s, p: s.flip(1),
        ),
        Mistake(
            "you reversed the order of the sequences in the batch (dim 0); reverse along time (dim 1)",
            lambda s, p: s.flip(0),
        ),
    ]
    return run_check(
        N_("Exercise 7.2 — reverse the source, keep the padding"),
        student_fn,
        _reversed_source,
        cases,
        mistakes,
    )


#: The model of exercise 7.3 (vocabulary size, hidden size H, layers L).
CONTEXT_MODEL = {"vocab_size": 14, "hidden_size": 32, "num_layers": 3}


def _numbers_from_encoder(length: int) -> int:
    """Numbers the decoder of a no-attention Seq2Seq receives for one source of ``length`` ids."""
    v, h, layers = CONTEXT_MODEL.values()
    with seeded(0):
        model = Seq2Seq(Encoder(v, h, layers), Decoder(v, h, layers), "cpu")
    src = torch.full((1, length), 7)  # (1, Ts): any digit
    with torch.no_grad():
        _, hidden, cell, _ = model.encode(src)
    return hidden.numel() + cell.numel()


def _context_hint(answer: Any, length: int) -> str:
    h, layers = CONTEXT_MODEL["hidden_size"], CONTEXT_MODEL["num_layers"]
    hints = {
        layers * h: N_("an LSTM hands over two states, hidden *and* cell: count both"),
        2 * h: fmt("each of the {layers} layers has its own hidden and cell state", layers=layers),
        h: fmt(
            "count every layer's hidden and cell state: two tensors of shape (L, B, d_hid) = "
            "({layers}, 1, {h})",
            layers=layers,
            h=h,
        ),
        4 * layers * h: N_(
            "Seq2Seq.encode adds the two directions' final states: (2L, B, d_hid) -> (L, B, d_hid)"
        ),
    }
    generic = N_(
        "Seq2Seq.encode hands the decoder `hidden` and `cell`, each (L, B, d_hid) after adding the two "
        "directions"
    )
    if not isinstance(answer, (int, float)) or isinstance(answer, bool):
        return generic
    if answer in hints:
        return hints[answer]
    if answer and answer % length == 0:
        return N_(
            "the decoder without attention never sees the encoder outputs (one per position): only the "
            "final states reach it, and their size does not depend on the length"
        )
    return generic


def context_size(numbers_for_5_digits: Any, numbers_for_50_digits: Any) -> Verdict:
    """Exercise 7.3 (prediction): how many numbers the decoder of
    ``Seq2Seq(Encoder(14, 32, 3), Decoder(14, 32, 3), "cpu")`` receives from the encoder for one
    source of 5 digits, and for one of 50 digits (``hidden`` and ``cell`` together).
    """
    title = N_("Exercise 7.3 — the size of the bottleneck")
    if numbers_for_5_digits is ... or numbers_for_50_digits is ...:
        return predictions_not_yet(title)
    parts = [
        check_answer(fmt("{n} digits", n=n), answer, _numbers_from_encoder(n), _context_hint(answer, n))
        for n, answer in ((5, numbers_for_5_digits), (50, numbers_for_50_digits))
    ]
    notes = []
    if numbers_for_5_digits != numbers_for_50_digits:
        notes.append(N_("   (one more thing: the final state has the same size for every length)"))
    return combined(
        title,
        parts,
        fmt(
            "right, {numbers} numbers for 5 digits and for 50 alike: one fixed-size state, "
            "whatever the length.",
            numbers=_numbers_from_encoder(5),
        ),
        *notes,
    )
