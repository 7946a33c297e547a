"""Character vocabularies and padded batches of (source, target) string pairs.

Shapes: ``N`` examples, ``B`` batch, ``Ts`` source length, ``Tt`` target length (with SOS and
EOS). Every tensor is batch-first and padded with ``PAD_ID``. The tasks themselves (dates,
digits, additions) are generated in :mod:`attnlib.tasks`.

Taught in notebook 06 (sequence models).

:class:`PairDataset` encodes string pairs into padded ``(N, Ts)`` / ``(N, Tt)`` id tensors and
yields batches trimmed to their longest member. Every seq2seq model in attnlib takes a batch
the same way: ``logits = model(src, tgt)`` predicts ``tgt[:, 1:]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import torch

from ._validate import require_positive_int

__all__ = [
    "EOS",
    "EOS_ID",
    "PAD",
    "PAD_ID",
    "SOS",
    "SOS_ID",
    "UNK",
    "UNK_ID",
    "PairDataset",
    "Vocab",
    "pad_sequences",
]

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
        require_positive_int("batch_size", batch_size)
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
