"""Train any attnlib seq2seq model on a :class:`~attnlib.data.PairDataset`: loop, history, progress bar.

Shapes: ``B`` batch, ``Ts`` source length, ``Tt`` target length (SOS ... EOS), ``T`` generated
length, ``V`` target vocabulary.

Taught in notebook 06 (sequence models); every later notebook that trains uses it.

The loop only relies on the seq2seq protocol that the RNN models and the Transformer share,
:class:`Seq2SeqModel`: ``model(src, tgt)`` returns logits ``(B, Tt-1, V)``
predicting ``tgt[:, 1:]`` (and, for validation, ``model.greedy_decode(src, max_len)``; the
metrics are in :mod:`attnlib.evaluation`).

Training is deterministic for a seed (one thread, see :func:`attnlib.reproducible`).
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from . import evaluation
from ._validate import require_positive_int
from .data import PairDataset

__all__ = ["History", "Seq2SeqModel", "progress_bar", "progress_kind", "sequence_loss", "train"]


@runtime_checkable
class Seq2SeqModel(Protocol):
    """What :func:`train` needs of a model, and :mod:`attnlib.evaluation` of one it scores.

    :class:`attnlib.seq2seq.Seq2Seq`, :class:`attnlib.transformer.Transformer` (and any
    ``nn.Module`` with these two methods) qualify; ``isinstance(model, Seq2SeqModel)`` checks that
    both exist. Training alone needs only the first, ``model(src, tgt)``:
    :class:`attnlib.gpt.NextTokenModel` has just that, and ``train`` trains it (without a
    validation set, which would decode).
    """

    def __call__(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: ``src`` ``(B, Ts)`` and ``tgt`` ``(B, Tt)`` (SOS ... EOS) give logits
        ``(B, Tt-1, V)`` predicting ``tgt[:, 1:]``."""
        ...

    def greedy_decode(self, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(tokens, weights)``: ``tokens`` ``(B, T <= max_len)`` after SOS, each row ending at
        EOS with PAD after it; ``weights`` the attention of each step, or None."""
        ...


@dataclass
class History:
    """What :func:`train` did.

    Attributes:
        loss: mean training loss of each epoch.
        valid: validation metrics after each epoch (empty without validation data).
        steps: optimiser steps taken.
        lr: the learning rate of each step (warm-up and cosine included).
        seconds: wall-clock training time.
        stopped_early: True if ``max_seconds`` ran out before the last epoch ended.
    """

    loss: list[float] = field(default_factory=list)
    valid: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    lr: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False


def sequence_loss(logits: torch.Tensor, tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` ``(B, Tt-1, V)`` against ``tgt[:, 1:]``, PAD ignored."""
    gold = tgt[:, 1:]  # (B, Tt-1)
    if logits.shape[:2] != gold.shape:
        raise ValueError(
            f"expected logits (B, Tt-1, V) = {(*gold.shape, 'V')} for tgt {tuple(tgt.shape)}, "
            f"got {tuple(logits.shape)}"
        )
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), gold.reshape(-1), ignore_index=pad_id)


def progress_kind(environ: Mapping[str, str] | None = None) -> str:
    """Which progress bar fits where the code runs.

    - ``"widget"``: a Jupyter kernel that a Jupyter server started for a notebook front end
      (JupyterLab, Notebook 7: the server sets ``JPY_SESSION_NAME``) with ipywidgets
      installed. A widget bar, not text on stderr, which JupyterLab shows as a pink block.
    - ``"kernel"``: any other kernel (nbval, ``make execute``, other front ends): plain text
      on stdout, so the stored outputs read as text, not as warnings.
    - ``"terminal"``: no kernel: plain text on stderr, as command-line tools do.
    """
    environ = os.environ if environ is None else environ
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    if ip is None or not hasattr(ip, "kernel"):
        return "terminal"
    if environ.get("JPY_SESSION_NAME") and importlib.util.find_spec("ipywidgets") is not None:
        return "widget"
    return "kernel"


def progress_bar(total: int, *, disable: bool = False, kind: str | None = None):
    """A tqdm bar over ``total`` steps of the kind :func:`progress_kind` picks; it clears itself
    when closed (``leave=False``), and ``bar.write`` prints lines above it."""
    kind = kind or progress_kind()
    if kind == "widget":
        from tqdm.notebook import tqdm as widget_bar

        return widget_bar(total=total, disable=disable, leave=False)
    from tqdm.std import tqdm

    file = sys.stdout if kind == "kernel" else sys.stderr
    return tqdm(total=total, disable=disable, file=file, mininterval=5.0, leave=False)


def train(
    model: Seq2SeqModel,
    data: PairDataset,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float = 1.0,
    cosine: bool = True,
    warmup: float = 0.0,
    valid: PairDataset | None = None,
    curriculum: list[int] | None = None,
    max_seconds: float | None = None,
    seed: int = 0,
    progress: bool = True,
    log: bool = True,
) -> History:
    """Train ``model`` with Adam, gradient clipping and (by default) a cosine learning rate.

    Args:
        model: a seq2seq model (:class:`Seq2SeqModel`; ``greedy_decode`` is
            needed only with ``valid``). Left in eval mode when training ends.
        data: training pairs; batches group similar lengths and come in a seeded order.
        epochs: passes over ``data``.
        batch_size: examples per step.
        lr: peak learning rate of Adam.
        clip: largest gradient norm (``clip_grad_norm_``); ``0`` turns clipping off.
        cosine: after the warm-up, decay the learning rate from ``lr`` towards 0 along half a
            cosine: step ``s = 0, 1, ..., S-1`` of the ``S`` steps after the warm-up uses
            ``lr * (1 + cos(pi * s / S)) / 2``, so the last rate is small but not 0. False
            keeps ``lr`` constant after the warm-up.
        warmup: fraction of the steps, rounded to ``W`` whole steps, over which the learning
            rate first rises linearly: step ``k = 0, 1, ..., W-1`` uses ``lr * (k + 1) / W``,
            from ``lr / W`` (not 0) up to ``lr``. A short warm-up lets a large ``lr`` start
            without the first updates blowing up Adam's estimates.
        valid: if given, exact match and token accuracy on it are logged after each epoch.
        curriculum: the longest source length used in each epoch, e.g. ``[20, 30, 40, 50]``
            (short examples first); one entry per epoch. None uses every example every epoch.
        max_seconds: time budget; training stops after the step that exceeds it (the result
            then depends on the machine's speed: leave it None for reproducible runs).
        seed: seeds torch and Python's ``random`` (teacher forcing) before training.
        progress: show a progress bar (see :func:`progress_bar`); False imports no tqdm.
        log: print one line per epoch.

    Returns:
        A :class:`History`.
    """
    require_positive_int("epochs", epochs)
    require_positive_int("batch_size", batch_size)
    if curriculum is not None and len(curriculum) != epochs:
        raise ValueError(f"expected one curriculum length per epoch ({epochs}), got {len(curriculum)}")
    stages = [data] * epochs
    if curriculum is not None:
        stages = [data.subset(torch.nonzero(data.src_lengths <= n).flatten()) for n in curriculum]
    torch.manual_seed(seed)
    random.seed(seed)
    pad_id = data.tgt_vocab.pad_id
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"expected warmup, a fraction of the steps, in [0, 1), got {warmup}")
    # fused: one kernel updates every parameter (the same update rule as the default loop
    # over tensors, rounded differently in the last bits); the small models trained here
    # spend up to a tenth of each step in the optimiser otherwise.
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    total = sum(math.ceil(len(stage) / batch_size) for stage in stages)
    warm = round(warmup * total)

    def lr_factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        if not cosine:
            return 1.0
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor) if cosine or warm else None
    history = History()
    start = time.perf_counter()
    bar = progress_bar(total) if progress else None  # no bar, no tqdm import

    def say(line: str) -> None:  # above the bar, if there is one
        if bar is None:
            print(line)
        else:
            bar.write(line, file=sys.stdout)

    for epoch, stage in enumerate(stages):
        model.train()
        losses = []
        for src, tgt in stage.batches(batch_size, shuffle=True, seed=seed + epoch, by_length=True):
            loss = sequence_loss(model(src, tgt), tgt, pad_id)
            optimizer.zero_grad()
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip, foreach=True)
            history.lr.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append(loss.item())
            history.steps += 1
            if bar is not None:
                bar.update()
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                history.stopped_early = True
                break
        history.loss.append(sum(losses) / len(losses))
        line = f"epoch {epoch + 1:2d}/{epochs}  loss {history.loss[-1]:.4f}"
        if valid is not None:
            history.valid.append(evaluation.evaluate(model, valid))
            line += "  valid exact {exact_match:.4f}  token {token_accuracy:.4f}".format(**history.valid[-1])
        if log:
            say(line)
        if history.stopped_early:
            if log:
                say(f"time budget of {max_seconds} s used up: stopped early")
            break
    if bar is not None:
        bar.close()
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
