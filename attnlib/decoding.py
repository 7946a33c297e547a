"""Search strategies for an encoder-decoder: greedy search and beam search.

Shapes: ``B`` batch, ``Ts`` source length, ``T`` tokens generated so far, ``D`` model width,
``K`` beams, ``V`` target vocabulary.

Taught in notebook 11 (the Transformer).

Both strategies start from an encoded source and grow the target one token at a time. Each step
asks the model for the next token's log-probabilities given the whole prefix, through the one
method a :class:`Searchable` model offers, ``model.next_log_probs(ys, memory, src_mask)``; a
strategy only decides which prefixes to keep. The model checks the arguments, encodes the source
and switches to eval mode: :meth:`attnlib.transformer.Transformer.greedy_decode` and
:meth:`~attnlib.transformer.Transformer.beam_search` call these on itself.
"""

from __future__ import annotations

from typing import Protocol

import torch

__all__ = ["Searchable", "beam_search", "greedy_search"]


class Searchable(Protocol):
    """What a search needs of a model: its special ids, its vocabulary size and one step.

    :class:`attnlib.transformer.Transformer` is one.

    Attributes:
        sos_id, eos_id, pad_id: the target's special token ids.
        tgt_vocab_size: ``V``.
    """

    sos_id: int
    eos_id: int
    pad_id: int
    tgt_vocab_size: int

    def next_log_probs(self, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """``ys`` ``(B, T)`` prefixes (SOS first), ``memory`` ``(B, Ts, D)``, ``src_mask``
        ``(B, 1, 1, Ts)`` -> log-probabilities of the next token ``(B, V)``."""
        ...


@torch.no_grad()
def greedy_search(
    model: Searchable, memory: torch.Tensor, src_mask: torch.Tensor, max_len: int
) -> torch.Tensor:
    """Pick the most likely token at each step until every sequence has emitted EOS.

    Args:
        model: scores each next token (in eval mode: the caller's business).
        memory: ``(B, Ts, D)`` the encoded source.
        src_mask: ``(B, 1, 1, Ts)``, True = may attend.
        max_len: most tokens to generate (EOS included).

    Returns:
        ``tokens`` ``(B, T)`` with ``T <= max_len``: the generated ids after SOS, EOS included,
        PAD after it.
    """
    b, device = memory.shape[0], memory.device
    ys = torch.full((b, 1), model.sos_id, dtype=torch.long, device=device)  # (B, 1): SOS
    done = torch.zeros(b, dtype=torch.bool, device=device)
    for _ in range(max_len):
        next_token = model.next_log_probs(ys, memory, src_mask).argmax(dim=-1)  # (B,)
        next_token = next_token.masked_fill(done, model.pad_id)
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, T + 1)
        done |= next_token == model.eos_id
        if bool(done.all()):
            break
    return ys[:, 1:]


@torch.no_grad()
def beam_search(
    model: Searchable,
    memory: torch.Tensor,
    src_mask: torch.Tensor,
    max_len: int,
    beam_size: int = 4,
    length_penalty: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the ``beam_size`` most likely prefixes per sequence; return the best one.

    A finished beam (it emitted EOS) is carried on with PAD at no cost, so finished and
    unfinished hypotheses compete on the same score. With ``beam_size=1`` this is exactly
    :func:`greedy_search`.

    Args:
        model: scores each next token (in eval mode: the caller's business).
        memory: ``(B, Ts, D)`` the encoded source.
        src_mask: ``(B, 1, 1, Ts)``, True = may attend.
        max_len: most tokens to generate (EOS included).
        beam_size: beams ``K`` per sequence, at most ``V``.
        length_penalty: ``alpha``; the final choice ranks ``log p / length ** alpha``
            (0 = plain log-probability).

    Returns:
        ``tokens`` ``(B, T)`` as in :func:`greedy_search`, and their log-probabilities ``(B,)``.
    """
    b, k, v, device = memory.shape[0], beam_size, model.tgt_vocab_size, memory.device
    memory = memory.repeat_interleave(k, dim=0)  # (B*K, Ts, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*K, 1, 1, Ts)
    ys = torch.full((b * k, 1), model.sos_id, dtype=torch.long, device=device)
    scores = torch.full((b, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live beam at the start, so the K beams do not all repeat it
    done = torch.zeros(b, k, dtype=torch.bool, device=device)
    pad_only = torch.full((v,), float("-inf"), device=device)
    pad_only[model.pad_id] = 0.0
    for _ in range(max_len):
        log_probs = model.next_log_probs(ys, memory, src_mask).view(b, k, v)  # (B, K, V)
        log_probs = torch.where(done[..., None], pad_only, log_probs)
        candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K*V)
        scores, index = candidates.topk(k, dim=-1)  # (B, K)
        beam, token = index // v, index % v  # (B, K) each
        prefix = ys.view(b, k, -1).gather(1, beam[..., None].expand(-1, -1, ys.shape[1]))  # (B, K, T)
        ys = torch.cat([prefix, token[..., None]], dim=-1).view(b * k, -1)  # (B*K, T + 1)
        done = done.gather(1, beam) | (token == model.eos_id)
        if bool(done.all()):
            break
    hyps = ys.view(b, k, -1)[:, :, 1:]  # (B, K, T)
    ranked = scores
    if length_penalty:
        lengths = (hyps != model.pad_id).sum(-1).clamp_min(1).float()  # (B, K)
        ranked = scores / lengths**length_penalty
    best = ranked.argmax(dim=-1)  # (B,)
    rows = torch.arange(b, device=device)
    return hyps[rows, best], scores[rows, best]
