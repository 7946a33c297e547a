"""From next-token logits to a token: temperature, top-k, greedy, and greedy completion.

Shapes: ``B`` batch, ``T`` prompt tokens, ``N`` new tokens, ``V`` vocabulary.

:meth:`attnlib.gpt.GPT.generate` draws every token with :func:`sample_next`, which samples
from :func:`next_token_probs`: ``softmax(top_k(logits) / temperature)`` (temperature 0 is
greedy). :func:`complete` runs greedy generation on a batch of prompts and cuts each
completion at its first EOS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ._validate import require_rank

if TYPE_CHECKING:
    from .gpt import GPT


def require_sampling(temperature: float, top_k: int | None) -> None:
    """Raise unless ``temperature >= 0`` and ``top_k`` is None or a positive int."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"expected temperature >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"expected top_k, a number of tokens >= 1 (or None for all), got {top_k!r}")


def top_k_logits(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the others to ``-inf`` (Fan et al., 2018).

    Ties with the ``k``-th largest are kept. ``k`` larger than ``V`` keeps everything.

    Args:
        logits: ``(..., V)``.
        k: tokens to keep, or None for all.

    Returns:
        ``(..., V)`` logits.
    """
    if k is None or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
    return logits.masked_fill(logits < kth, float("-inf"))


def next_token_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """The distribution generation samples from: ``softmax(top_k(logits) / temperature)``.

    Temperature 0 is the limit: all probability on the most likely token (the first one
    if several tie).

    Args:
        logits: ``(..., V)``.
        temperature: ``> 1`` flattens, ``< 1`` sharpens, 0 is greedy.
        top_k: keep only the ``top_k`` most likely tokens (None: all).

    Returns:
        ``(..., V)`` probabilities summing to 1.
    """
    require_sampling(temperature, top_k)
    if temperature == 0:
        greedy = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
        return torch.zeros_like(logits).scatter_(-1, greedy, 1.0)
    return torch.softmax(top_k_logits(logits, top_k) / temperature, dim=-1)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one token per row from :func:`next_token_probs` (argmax when ``temperature == 0``).

    Args:
        logits: ``(B, V)``.
        temperature, top_k: as :func:`next_token_probs`.
        generator: random numbers for the draw.

    Returns:
        ``(B,)`` token ids.
    """
    require_rank("logits", logits, (2,), "(B, V)")
    if temperature == 0:
        require_sampling(temperature, top_k)
        return logits.argmax(dim=-1)
    probs = next_token_probs(logits, temperature, top_k)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


@torch.no_grad()
def complete(
    model: GPT, prompts: torch.Tensor, max_new_tokens: int, eos_id: int, *, use_cache: bool = True
) -> torch.Tensor:
    """Greedy completions of a batch of equally long prompts, cut after the first EOS.

    Args:
        model: the GPT.
        prompts: ``(B, T)`` ids (e.g. ``SOS`` then the prompt's characters).
        max_new_tokens: most tokens to add.
        eos_id: the id that ends a completion; everything after it becomes ``eos_id`` too.

    Returns:
        ``(B, max_new_tokens)`` the new ids only.
    """
    new = model.generate(prompts, max_new_tokens, temperature=0.0, use_cache=use_cache)[:, prompts.shape[1] :]
    ended = (new == eos_id).long().cummax(dim=1).values.bool()  # (B, N): at or after the first EOS
    return new.masked_fill(ended, eos_id)
