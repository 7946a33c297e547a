"""How well a seq2seq model decodes: exact match, token accuracy, accuracy by source length.

Shapes: ``N`` examples, ``B`` batch, ``Tt`` target length (SOS ... EOS), ``T`` generated length.

Taught in notebook 07 (sequence to sequence without attention).

The scores come from greedy decoding with the model's ``greedy_decode`` (the
:class:`~attnlib.training.Seq2SeqModel` protocol), in eval mode, compared with the targets
position by position; :func:`count_parameters` is the one function here that decodes nothing.
:func:`predict_scores` decodes once; :func:`evaluate` and
:func:`accuracy_by_length` summarise its result (pass ``scores=`` to reuse one decoding).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_positive_int
from .data import PairDataset
from .modes import evaluating

__all__ = ["accuracy_by_length", "count_parameters", "evaluate", "predict_scores", "score_batch"]


@torch.no_grad()
def score_batch(
    tokens: torch.Tensor, tgt: torch.Tensor, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Compare generated tokens with the targets, position by position.

    Args:
        tokens: ``(B, T)`` generated tokens after SOS (as ``greedy_decode`` returns them).
        tgt: ``(B, Tt)`` targets ``SOS ... EOS PAD...``.
        pad_id: padding id.

    Returns:
        ``exact`` ``(B,)`` bool (every target token right, EOS included), ``correct`` and
        ``total`` ``(B,)``: right tokens and target tokens (EOS included) per example.
    """
    gold = tgt[:, 1:]  # (B, Tt-1)
    t = gold.shape[1]
    pred = torch.full_like(gold, pad_id)
    pred[:, : min(t, tokens.shape[1])] = tokens[:, :t]
    real = gold != pad_id  # (B, Tt-1)
    correct = ((pred == gold) & real).sum(dim=1)
    total = real.sum(dim=1)
    return correct == total, correct, total


@torch.no_grad()
def predict_scores(
    model: nn.Module, data: PairDataset, *, batch_size: int = 250, max_len: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`score_batch` for every example of ``data`` (greedy decoding, eval mode).

    Args:
        model: a seq2seq model (:class:`~attnlib.training.Seq2SeqModel`).
        data: the pairs to decode.
        batch_size: examples decoded at once.
        max_len: tokens to generate; defaults to the longest target (EOS included) + 5.

    Returns:
        ``exact``, ``correct``, ``total``, each ``(N,)``, in the order of ``data``.
    """
    require_positive_int("batch_size", batch_size)
    max_len = data.tgt.shape[1] - 1 + 5 if max_len is None else max_len
    n = len(data)
    exact = torch.zeros(n, dtype=torch.bool)
    correct = torch.zeros(n, dtype=torch.long)
    total = torch.zeros(n, dtype=torch.long)
    order = torch.sort(data.src_lengths, stable=True).indices  # similar lengths batch together
    with evaluating(model):
        for index in torch.split(order, batch_size):
            src, tgt = data.batch(index)
            tokens, _ = model.greedy_decode(src, max_len)  # (B, T)
            exact[index], correct[index], total[index] = score_batch(tokens, tgt, data.tgt_vocab.pad_id)
    return exact, correct, total


def evaluate(
    model: nn.Module,
    data: PairDataset,
    *,
    batch_size: int = 250,
    max_len: int | None = None,
    scores: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> dict[str, float]:
    """Exact-match and per-token accuracy of greedy decoding on ``data``.

    Args:
        scores: what :func:`predict_scores` returned for ``model`` and ``data``, to summarise
            instead of decoding ``data`` again.

    Returns:
        ``{"exact_match": ..., "token_accuracy": ...}``, fractions in [0, 1]. A token counts
        as right when it equals the target token at the same position (EOS included).
    """
    if scores is None:
        scores = predict_scores(model, data, batch_size=batch_size, max_len=max_len)
    exact, correct, total = _require_scores(scores, data)
    return {
        "exact_match": exact.float().mean().item(),
        "token_accuracy": (correct.sum() / total.sum()).item(),
    }


def _require_scores(
    scores: tuple[torch.Tensor, torch.Tensor, torch.Tensor], data: PairDataset
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if not isinstance(scores, tuple) or len(scores) != 3:
        raise TypeError(
            f"expected scores = (exact, correct, total) from predict_scores, got {type(scores).__name__}"
        )
    shapes = [tuple(t.shape) for t in scores]
    if any(shape != (len(data),) for shape in shapes):
        raise ValueError(
            f"expected scores of shape (N,) = ({len(data)},), one per example of data, got {shapes}"
        )
    return scores


def accuracy_by_length(
    model: nn.Module,
    data: PairDataset,
    *,
    bin_width: int = 5,
    batch_size: int = 250,
    scores: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> dict[str, list]:
    """Accuracy of greedy decoding grouped by source length.

    Args:
        bin_width: lengths ``[a, a + bin_width)`` form one group, counting from the shortest
            source; a last group shorter than half a width joins the one before.
        scores: what :func:`predict_scores` returned for ``model`` and ``data``, to group
            instead of decoding ``data`` again.

    Returns:
        Lists, one entry per non-empty group, shortest first: ``"length"`` (the shortest
        length in the group), ``"label"`` (e.g. ``"5-9"``), ``"n"`` (examples), ``"exact_match"``
        and ``"token_accuracy"``.
    """
    require_positive_int("bin_width", bin_width)
    if scores is None:
        scores = predict_scores(model, data, batch_size=batch_size)
    exact, correct, total = _require_scores(scores, data)
    first, longest = int(data.src_lengths.min()), int(data.src_lengths.max())
    group = (data.src_lengths - first) // bin_width  # (N,)
    last = (longest - first) // bin_width
    if last > 0 and longest - (first + last * bin_width) + 1 < bin_width / 2:
        group = group.clamp(max=last - 1)  # a short last group joins the one before
    out: dict[str, list] = {"length": [], "label": [], "n": [], "exact_match": [], "token_accuracy": []}
    for g in sorted(set(group.tolist())):
        sel = group == g
        lo, hi = int(data.src_lengths[sel].min()), int(data.src_lengths[sel].max())
        out["length"].append(lo)
        out["label"].append(f"{lo}-{hi}" if hi > lo else str(lo))
        out["n"].append(int(sel.sum()))
        out["exact_match"].append(exact[sel].float().mean().item())
        out["token_accuracy"].append((correct[sel].sum() / total[sel].sum()).item())
    return out


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
