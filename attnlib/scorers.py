"""Attention for RNN seq2seq: one interface, several ways to score a source position.

Shapes: ``B`` batch, ``L`` decoder layers, ``d_hid`` hidden size, ``Ts`` source length, ``Tq`` queries
(decoder steps scored at once; 1 inside :class:`~attnlib.attention_decoders.DecoderWithAttention`).
``d_hid`` is the hidden size in this family of RNN modules (seq2seq, attention_decoders, scorers,
local_attention: no attention heads here), as in notebooks 06-09; ``D`` is local attention's half window
(``half_window``), the ``D`` of Luong et al. (2015, §3.2).

Taught in notebooks 08 (Bahdanau attention) and 09 (Luong attention).

Every module here is called the way the seq2seq decoder calls it::

    weights = attention(hidden, encoder_outputs, mask, step=t)   # (L, B, d_hid), (B, Ts, d_hid) -> (B, Ts)

The query is the decoder's top-layer state ``hidden[-1]``; the keys (and values) are the
encoder outputs. ``mask`` ``(B, Ts)`` is True for real source tokens: padding never receives
weight. Underneath, ``attend(query, keys, mask, step)`` scores many queries at once and every
global scorer defines ``score(query, keys) -> scores (B, Tq, Ts)``:

==============  ======================================  ===================================
name            score(h_t, h_s)                         module
==============  ======================================  ===================================
``dot``         h_tᵀ h_s                                ``AttentionSimple(d_hid, scaled=False)``
``scaled_dot``  h_tᵀ h_s / sqrt(d_hid)                  ``AttentionSimple(d_hid)``
``general``     h_tᵀ W_a h_s                            ``AttentionGeneral(d_hid)`` (Luong)
``concat``      vᵀ tanh(W [h_t; h_s] + b)               ``AttentionParams(d_hid)``
                                                        (Bahdanau's additive score)
``local-m``     a scorer inside a window around t       ``LocalAttention(d_hid, D, mode="m")``
``local-p``     ... around a predicted p_t, Gaussian    ``LocalAttention(d_hid, D, mode="p")``
==============  ======================================  ===================================

Each keeps ``last_attn_weights`` (detached) from its latest call. This module holds
:class:`Scorer`, the base every scorer derives from, and the global scorers, which score every
source position; the local ones and hard attention, which restrict where a scorer may look, are
in :mod:`attnlib.local_attention`, with :func:`~attnlib.local_attention.make_attention`, which
builds any of the six by name. A new score is a :class:`Scorer` with ``score_projected`` (and
``project_keys`` if part of it depends on the keys only), and a name in ``make_attention``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_positive_int, require_rank
from .functional import attention_scores, masked_softmax

__all__ = [
    "AdditiveAttention",
    "AttentionGeneral",
    "AttentionParams",
    "AttentionSimple",
    "DotAttention",
    "Scorer",
    "require_inputs",
]


class Scorer(nn.Module):
    """The base of every scorer: the shared ``forward`` and ``attend``.

    A scorer sets ``hidden_size`` and defines ``score_projected(query, projected)`` (and
    ``project_keys(keys)`` when part of its score depends on the keys only, so that it is computed
    once per batch); ``score`` is the two together.
    """

    hidden_size: int
    _key_cache: tuple | None = None

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """The part of the score that depends on the keys only: ``(B, Ts, d_hid) -> (B, Ts, d_hid)``."""
        return keys

    def score_projected(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scores of every query against every key.

        Args:
            query: ``(B, Tq, d_hid)``. keys: ``(B, Ts, d_hid)``.

        Returns:
            ``(B, Tq, Ts)`` scores (before softmax).
        """
        return self.score_projected(query, self.project_keys(keys))

    def cached_score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """:meth:`score`, projecting the keys once for all the steps of a decoded batch.

        The projection is reused while ``keys`` is the very same tensor and no parameter has
        changed in place (an optimiser step bumps their version counters).
        """
        versions = tuple(p._version for p in self.parameters())
        cache = self._key_cache
        if cache is None or cache[0] is not keys or cache[1] != versions:
            cache = self._key_cache = (keys, versions, self.project_keys(keys))
        return self.score_projected(query, cache[2])

    def __getstate__(self) -> dict:
        # The cache may hold part of an autograd graph: never copy or pickle it.
        return {**super().__getstate__(), "_key_cache": None}

    def attend(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int | torch.Tensor = 0,
    ) -> torch.Tensor:
        """Weights of ``Tq`` queries over the source.

        Args:
            query: ``(B, Tq, d_hid)``. keys: ``(B, Ts, d_hid)``.
            mask: ``(B, Ts)`` bool, True = may attend.
            step: index of the first query's decoder step (used by local-m only).

        Returns:
            ``(B, Tq, Ts)`` weights.
        """
        scores = self.cached_score(query, keys)  # (B, Tq, Ts)
        return masked_softmax(scores, None if mask is None else mask[:, None, :])

    def forward(
        self,
        hidden: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int = 0,
    ) -> torch.Tensor:
        """Attention weights of the decoder's top-layer state over the encoder outputs.

        Args:
            hidden: ``(L, B, d_hid)`` decoder state (the decoder passes the LSTM's ``hidden``).
            encoder_outputs: ``(B, Ts, d_hid)``.
            mask: ``(B, Ts)`` bool, True for real source tokens.
            step: decoder step ``t`` (0 for the first output token).

        Returns:
            ``(B, Ts)`` weights: non-negative, zero on masked positions.
        """
        require_inputs(hidden, encoder_outputs, mask, self.hidden_size)
        query = hidden[-1].unsqueeze(1)  # (B, d_hid) -> (B, 1, d_hid)
        weights = self.attend(query, encoder_outputs, mask, step).squeeze(1)  # (B, Ts)
        self.last_attn_weights = weights.detach()
        return weights


def require_inputs(
    hidden: torch.Tensor, encoder_outputs: torch.Tensor, mask: torch.Tensor | None, size: int
) -> None:
    """Raise ``ValueError`` unless the shapes fit ``(L, B, d_hid)``, ``(B, Ts, d_hid)``, ``(B, Ts)``."""
    require_rank("hidden", hidden, (3,), "(L, B, d_hid)")
    require_rank("encoder_outputs", encoder_outputs, (3,), "(B, Ts, d_hid)")
    if hidden.shape[-1] != size or encoder_outputs.shape[-1] != size:
        raise ValueError(
            f"expected hidden (L, B, d_hid) and encoder_outputs (B, Ts, d_hid) with d_hid={size} (the "
            f"attention's hidden_size), got {tuple(hidden.shape)} and {tuple(encoder_outputs.shape)}"
        )
    if hidden.shape[1] != encoder_outputs.shape[0]:
        raise ValueError(
            f"hidden {tuple(hidden.shape)} and encoder_outputs {tuple(encoder_outputs.shape)} "
            "disagree on the batch size B"
        )
    if mask is not None and (mask.dtype != torch.bool or mask.shape != encoder_outputs.shape[:2]):
        raise ValueError(
            f"expected a bool mask of shape (B, Ts) = {tuple(encoder_outputs.shape[:2])}, "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )


class AttentionSimple(Scorer):
    """Parameter-free dot-product attention (``scaled_dot``, or Luong's ``dot``).

    Args:
        hidden_size: ``d_hid``; the scores are divided by ``sqrt(d_hid)`` (kept in a buffer).
        scaled: False gives Luong's plain ``dot`` score (no division).
    """

    def __init__(self, hidden_size: int, *, scaled: bool = True) -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.scaled = scaled
        self.register_buffer("scale_factor", torch.sqrt(torch.FloatTensor([hidden_size])))
        self.last_attn_weights: torch.Tensor | None = None

    def score_projected(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        scores = attention_scores(
            query, projected, scale=1.0
        )  # (B, Tq, d_hid) @ (B, d_hid, Ts) -> (B, Tq, Ts)
        return scores / self.scale_factor if self.scaled else scores


class AttentionGeneral(Scorer):
    """Luong's *general* score ``h_tᵀ W_a h_s``: a learned bilinear form.

    Args:
        hidden_size: ``d_hid``.
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.W_a = nn.Linear(hidden_size, hidden_size, bias=False)
        self.last_attn_weights: torch.Tensor | None = None

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.W_a(keys)  # (B, Ts, d_hid) -> (B, Ts, d_hid)

    def score_projected(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        return attention_scores(query, projected, scale=1.0)  # (B, Tq, d_hid) @ (B, d_hid, Ts) -> (B, Tq, Ts)


class AttentionParams(Scorer):
    """Additive attention ``vᵀ tanh(W [h_t; h_s] + b)`` (Bahdanau et al., 2015).

    Bahdanau's score, which Luong calls *concat*. The paper writes it
    ``v_aᵀ tanh(W_a s_{i-1} + U_a h_j)`` (appendix A.1.2): ``W`` here is ``[W_a U_a]``, one
    ``Linear(2 d_hid, d_hid)``, whose bias ``b`` the paper leaves out of its equations; the attention width
    ``n'`` is ``d_hid``. ``v`` starts uniform in [0, 1). Since ``U_a h_j`` does not depend on the
    decoder step, the paper notes it can be precomputed (A.1.2): the key half of ``W`` is applied
    once per batch rather than to every (query, key) concatenation, which gives the same scores
    faster.

    Args:
        hidden_size: ``d_hid``.
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.attn = nn.Linear(hidden_size * 2, hidden_size)
        self.v = nn.Parameter(torch.rand(hidden_size))
        self.last_attn_weights: torch.Tensor | None = None

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        w_keys = self.attn.weight[:, self.hidden_size :]  # (d_hid, 2 d_hid): columns that meet h_s
        return keys @ w_keys.T + self.attn.bias  # (B, Ts, d_hid) @ (d_hid, d_hid) -> (B, Ts, d_hid)

    def score_projected(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        # W [h_t; h_s] + b = W_q h_t + (W_k h_s + b): the key half is projected once per batch.
        w_query = self.attn.weight[:, : self.hidden_size]  # (d_hid, 2 d_hid): columns that meet h_t
        q = query @ w_query.T  # (B, Tq, d_hid) @ (d_hid, d_hid) -> (B, Tq, d_hid)
        energy = torch.tanh(q[:, :, None, :] + projected[:, None, :, :])  # (B, Tq, Ts, d_hid)
        return energy @ self.v  # (B, Tq, Ts, d_hid) @ (d_hid,) -> (B, Tq, Ts)


# Descriptive names beside the published ones. The classes keep the names of the seq2seq
# tutorial this series follows (AttentionSimple, AttentionParams), so that its code runs against
# attnlib unchanged and a printed model reads as it does there; these aliases say what each scores.
DotAttention = AttentionSimple  # Luong's "dot" (and "scaled_dot" with scaled=True)
AdditiveAttention = AttentionParams  # Bahdanau's additive score, Luong's "concat"
