"""Decoding strategies for the encoder-decoder Transformer: greedy search and beam search.

Shapes: ``B`` batch, ``Ts`` source length, ``T`` tokens generated so far, ``D`` model width,
``L`` layers, ``H`` heads, ``K`` beams, ``V`` target vocabulary.

Both strategies encode the source once, then grow the target one token at a time. Each step
asks the model for the next token's log-probabilities given the whole prefix
(``model._next_log_probs``, which re-runs the decoder on the prefix: no cache, simple, and fine
for short outputs); a strategy only decides which prefixes to keep. Both run in eval mode (no
dropout) and restore the model's previous mode. The model calls them as its own methods:
``model.greedy_decode(src, max_len)`` and ``model.beam_search(src, max_len, beam_size)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ._validate import require_length, require_positive_int
from .masks import padding_mask
from .modes import evaluating

if TYPE_CHECKING:
    from .transformer import Transformer


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick the most likely token at each step until every sequence has emitted EOS.

    Runs in eval mode (no dropout) and restores the previous mode.

    Args:
        model: the :class:`~attnlib.transformer.Transformer` that scores each next token.
        src: ``(B, Ts)`` source ids.
        max_len: most tokens to generate (EOS included); at most ``max_seq_len``.

    Returns:
        ``tokens`` ``(B, T)`` with ``T <= max_len``: the generated ids after SOS, EOS
        included, PAD after it; and the cross-attention ``weights`` ``(B, L, H, T, Ts)``
        that produced them (row ``t`` is the step that chose ``tokens[:, t]``).
    """
    require_positive_int("max_len", max_len)
    require_length("max_len", max_len, model.max_seq_len, "max_seq_len")
    model._require_tokens("src", src, model.src_vocab_size)
    src_mask = padding_mask(src, model.pad_id)  # (B, 1, 1, Ts)
    with evaluating(model):
        memory = model.encode(src, src_mask)  # (B, Ts, D)
        return _greedy(model, memory, src_mask, max_len)


def _greedy(
    model: Transformer, memory: torch.Tensor, src_mask: torch.Tensor, max_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    b, device = memory.shape[0], memory.device
    ys = torch.full((b, 1), model.sos_id, dtype=torch.long, device=device)  # (B, 1): SOS
    done = torch.zeros(b, dtype=torch.bool, device=device)
    for _ in range(max_len):
        next_token = model._next_log_probs(ys, memory, src_mask).argmax(dim=-1)  # (B,)
        next_token = next_token.masked_fill(done, model.pad_id)
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, T + 1)
        done |= next_token == model.eos_id
        if bool(done.all()):
            break
    return ys[:, 1:], model.attention_weights()["cross"]


@torch.no_grad()
def beam_search(
    model: Transformer, src: torch.Tensor, max_len: int, beam_size: int = 4, length_penalty: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the ``beam_size`` most likely prefixes per sequence; return the best one.

    A finished beam (it emitted EOS) is carried on with PAD at no cost, so finished and
    unfinished hypotheses compete on the same score. With ``beam_size=1`` this is exactly
    :func:`greedy_decode`. Runs in eval mode and restores the previous mode.

    Args:
        model: the :class:`~attnlib.transformer.Transformer` that scores each next token.
        src: ``(B, Ts)`` source ids.
        max_len: most tokens to generate (EOS included).
        beam_size: beams ``K`` per sequence.
        length_penalty: ``alpha``; the final choice ranks ``log p / length ** alpha``
            (0 = plain log-probability).

    Returns:
        ``tokens`` ``(B, T)`` as in :func:`greedy_decode`, and their log-probabilities ``(B,)``.
    """
    require_positive_int("max_len", max_len)
    require_length("max_len", max_len, model.max_seq_len, "max_seq_len")
    k = require_positive_int("beam_size", beam_size)
    if k > model.tgt_vocab_size:
        raise ValueError(f"expected beam_size <= tgt_vocab_size={model.tgt_vocab_size}, got {k}")
    model._require_tokens("src", src, model.src_vocab_size)
    src_mask = padding_mask(src, model.pad_id)  # (B, 1, 1, Ts)
    with evaluating(model):
        memory = model.encode(src, src_mask)  # (B, Ts, D)
        return _beam(model, memory, src_mask, max_len, k, length_penalty)


def _beam(
    model: Transformer,
    memory: torch.Tensor,
    src_mask: torch.Tensor,
    max_len: int,
    k: int,
    length_penalty: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    b, v, device = memory.shape[0], model.tgt_vocab_size, memory.device
    memory = memory.repeat_interleave(k, dim=0)  # (B*K, Ts, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*K, 1, 1, Ts)
    ys = torch.full((b * k, 1), model.sos_id, dtype=torch.long, device=device)
    scores = torch.full((b, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live beam at the start, so the K beams do not all repeat it
    done = torch.zeros(b, k, dtype=torch.bool, device=device)
    pad_only = torch.full((v,), float("-inf"), device=device)
    pad_only[model.pad_id] = 0.0
    for _ in range(max_len):
        log_probs = model._next_log_probs(ys, memory, src_mask).view(b, k, v)  # (B, K, V)
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
