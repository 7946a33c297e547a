"""Shared by the seq2seq tests: a teacher-forced decoder run one step at a time."""

from __future__ import annotations

import torch


def decode_step_by_step(model, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits ``(B, T-1, V)`` and attention weights ``(B, T-1, Ts)`` of ``model.decoder`` called
    once per target token ``tgt[:, t]``, the reference for its one-call teacher-forced path."""
    keys, hidden, cell, mask = model.encode(src)
    steps, weights = [], []
    for t in range(tgt.shape[1] - 1):
        out, hidden, cell = model.decoder(tgt[:, t], hidden, cell, keys, mask, step=t)
        steps.append(out)
        weights.append(model.decoder.last_attn_weights)
    return torch.stack(steps, dim=1), torch.stack(weights, dim=1)
