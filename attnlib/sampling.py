"""From next-token logits to a token: temperature, top-k, top-p and greedy.

Shapes: ``B`` batch, ``T`` prompt tokens, ``N`` new tokens, ``V`` vocabulary.

Taught in notebook 12 (a GPT with a KV cache).

:meth:`attnlib.gpt.GPT.generate` draws every token with :func:`sample_next`, which samples
from :func:`next_token_probs`: ``softmax(top_p(top_k(logits) / temperature))`` (temperature 0
is greedy). This module knows logits, not models.
"""

from __future__ import annotations

import torch

from ._validate import require_rank

__all__ = ["next_token_probs", "require_sampling", "sample_next", "top_k_logits", "top_p_logits"]


def require_sampling(temperature: float, top_k: int | None, top_p: float | None = None) -> None:
    """Raise unless ``temperature >= 0``, ``top_k`` is None or a positive int, ``top_p`` None or in (0, 1]."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"expected temperature >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"expected top_k, a number of tokens >= 1 (or None for all), got {top_k!r}")
    _require_top_p(top_p)


def _require_top_p(top_p: float | None) -> None:
    """Raise unless ``top_p`` is None or a probability in (0, 1]: p = 0 would keep no token."""
    if top_p is not None and (
        isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1
    ):
        raise ValueError(f"expected top_p, a probability in (0, 1] (or None for all), got {top_p!r}")


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


def top_p_logits(logits: torch.Tensor, p: float | None) -> torch.Tensor:
    """Nucleus filter (Holtzman et al., 2020, §3.1): keep the fewest most likely tokens whose
    probability reaches ``p``, set the others to ``-inf``.

    Tokens are ranked by ``softmax(logits)``; a token is kept while the probability of the
    tokens ranked above it is still below ``p``, so the most likely token is always kept and
    the kept set is the smallest whose total reaches ``p``. ``p`` None or 1 keeps everything.

    Args:
        logits: ``(..., V)``.
        p: the probability the kept tokens must reach, in ``(0, 1]``, or None for all.

    Returns:
        ``(..., V)`` logits.

    Raises:
        ValueError: if ``p`` is not None and not in ``(0, 1]``.
    """
    _require_top_p(p)
    if p is None or p >= 1:
        return logits
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)  # (..., V) each
    before = probs.cumsum(dim=-1) - probs  # (..., V): mass of the tokens ranked above each one
    drop_sorted = before >= p  # the top token has 0 before it: always kept
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    *,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution generation samples from: ``softmax(top_p(top_k(logits) / temperature))``.

    Temperature 0 is the limit: all probability on the most likely token (the first one
    if several tie). The nucleus is taken from the distribution at this temperature.

    Args:
        logits: ``(..., V)``.
        temperature: ``> 1`` flattens, ``< 1`` sharpens, 0 is greedy.
        top_k: keep only the ``top_k`` most likely tokens (None: all).
        top_p: then keep only the fewest most likely tokens whose probability reaches
            ``top_p`` (None: all).

    Returns:
        ``(..., V)`` probabilities summing to 1.
    """
    require_sampling(temperature, top_k, top_p)
    if temperature == 0:
        greedy = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
        return torch.zeros_like(logits).scatter_(-1, greedy, 1.0)
    return torch.softmax(top_p_logits(top_k_logits(logits, top_k) / temperature, top_p), dim=-1)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    *,
    top_p: float | None = None,
) -> torch.Tensor:
    """Draw one token per row from :func:`next_token_probs` (argmax when ``temperature == 0``).

    Args:
        logits: ``(B, V)``.
        temperature, top_k, top_p: as :func:`next_token_probs`.
        generator: random numbers for the draw.

    Returns:
        ``(B,)`` token ids.
    """
    require_rank("logits", logits, (2,), "(B, V)")
    if temperature == 0:
        require_sampling(temperature, top_k, top_p)
        return logits.argmax(dim=-1)
    probs = next_token_probs(logits, temperature, top_k, top_p=top_p)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
