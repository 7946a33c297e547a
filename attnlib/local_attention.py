"""Attention that restricts where a scorer may look: Luong's local attention and hard attention.

Shapes: ``B`` batch, ``d_hid`` hidden size, ``Ts`` source length, ``Tq`` queries (decoder steps
scored at once), ``D`` the half window (``half_window``), the ``D`` of Luong et al. (2015, §3.2).
As in the rest of the RNN family (seq2seq, attention_decoders, scorers), ``d_hid`` is the hidden
size: there are no attention heads here.

Taught in notebook 09 (Luong attention).

Both wrap a global scorer of :mod:`attnlib.scorers` and are called exactly like one,
``weights = attention(hidden, encoder_outputs, mask, step=t)``; only ``attend`` changes:

* :class:`LocalAttention` (Luong et al., 2015, §3.2) softmaxes the scores inside a window of
  ``2D+1`` source positions around ``p_t`` (local-m: ``p_t = t``; local-p: a predicted
  ``p_t`` and a Gaussian around it). ``make_attention("local-m" | "local-p", d_hid)`` builds one.
* :class:`HardAttention` puts all the weight on the arg-max position of a soft scorer. Xu et
  al. (2015) sample the position instead and train with a REINFORCE-style estimator; the
  arg-max here reads a trained soft model the hard way.

Each keeps ``last_attn_weights`` (detached) from its latest call. :func:`make_attention` builds
any of the six scorers of :data:`SCORERS` by name: it is here, and not in :mod:`attnlib.scorers`,
because this module sees the global scorers and the local ones.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_positive_int
from .functional import masked_softmax
from .i18n import tr
from .scorers import AttentionGeneral, AttentionParams, AttentionSimple, Scorer

__all__ = ["SCORERS", "HardAttention", "LocalAttention", "make_attention"]


class LocalAttention(Scorer):
    """Luong's local attention: a global scorer restricted to a window of ``2w+1`` positions.

    * ``mode="m"`` (local-m, monotonic): the window is centred on ``p_t = t``, the decoder step.
    * ``mode="p"`` (local-p, predictive): ``p_t = S · sigmoid(vᵀ tanh(W_p h_t))`` with ``S`` the
      real source length; the window is centred on ``round(p_t)`` and the weights inside it are
      multiplied by ``exp(-(s - p_t)² / (2σ²))`` with ``σ = D/2``, so they sum to less than 1.
      The Gaussian is what lets gradients reach ``W_p`` and ``v``.

    Args:
        hidden_size: ``d_hid``.
        half_window: ``D``; each step sees at most ``2D+1`` source positions
            (``D >= 1`` for local-p, whose Gaussian needs ``σ > 0``).
        mode: ``"m"`` or ``"p"``.
        score: name of the global score used inside the window (``"general"`` as in Luong).
    """

    def __init__(self, hidden_size: int, half_window: int, mode: str = "p", score: str = "general") -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        if isinstance(half_window, bool) or not isinstance(half_window, int) or half_window < 0:
            raise ValueError(f"expected half_window D to be an int >= 0, got {half_window!r}")
        if mode not in ("m", "p"):
            raise ValueError(f"expected mode 'm' (monotonic) or 'p' (predictive), got {mode!r}")
        if mode == "p" and half_window < 1:
            raise ValueError(
                f"local-p needs half_window D >= 1 (its Gaussian has sigma = D/2), got {half_window}"
            )
        if score.startswith("local"):
            raise ValueError(f"the score inside a local window must be global, got {score!r}")
        self.half_window, self.mode = half_window, mode
        self.sigma = half_window / 2
        self.scorer = make_attention(score, hidden_size)
        if mode == "p":
            self.W_p = nn.Linear(hidden_size, hidden_size, bias=False)
            self.v_p = nn.Linear(hidden_size, 1, bias=False)
        self.last_attn_weights: torch.Tensor | None = None
        self.last_positions: torch.Tensor | None = None

    def attend(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int | torch.Tensor = 0,
    ) -> torch.Tensor:
        b, tq, ts = query.shape[0], query.shape[1], keys.shape[1]
        window = 2 * self.half_window + 1
        if window > ts:
            raise ValueError(
                tr(
                    "local window 2D+1={window} (D={half_window}) is larger than the source "
                    "length Ts={ts}; choose D <= {largest} or global attention"
                ).format(window=window, half_window=self.half_window, ts=ts, largest=(ts - 1) // 2)
            )
        lengths = torch.full((b,), ts) if mask is None else mask.sum(dim=1)  # (B,)
        if self.mode == "m":
            steps = step + torch.arange(tq, device=query.device)  # (Tq,)
            p = steps.to(query.dtype).expand(b, tq)  # (B, Tq)
        else:
            gate = self.v_p(torch.tanh(self.W_p(query))).squeeze(-1)  # (B, Tq, d_hid) -> (B, Tq)
            p = lengths[:, None].to(query.dtype) * torch.sigmoid(gate)  # (B, Tq)
        positions = torch.arange(ts, device=query.device, dtype=query.dtype)  # (Ts,)
        distance = positions[None, None, :] - p[:, :, None]  # (B, Tq, Ts)
        in_window = (positions[None, None, :] - p.round()[:, :, None]).abs() <= self.half_window
        visible = in_window if mask is None else in_window & mask[:, None, :]  # (B, Tq, Ts)
        weights = masked_softmax(self.scorer.cached_score(query, keys), visible)  # (B, Tq, Ts)
        if self.mode == "p":
            weights = weights * torch.exp(-(distance**2) / (2 * self.sigma**2))
        self.last_positions = p.detach()
        return weights


class HardAttention(Scorer):
    """Hard attention: all weight on the arg-max position of a soft scorer.

    The arg-max is piecewise constant, so no gradient reaches the scorer: training it needs
    sampling and REINFORCE-style estimators instead of backpropagation. Use it to read a
    trained soft model the hard way.

    Args:
        soft: any scorer of :mod:`attnlib.scorers` or of this module (its parameters are shared,
            not copied).
    """

    def __init__(self, soft: Scorer) -> None:
        super().__init__()
        self.soft = soft
        self.hidden_size = soft.hidden_size
        self.last_attn_weights: torch.Tensor | None = None

    def attend(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int | torch.Tensor = 0,
    ) -> torch.Tensor:
        soft = self.soft.attend(query, keys, mask, step)  # (B, Tq, Ts)
        hard = torch.zeros_like(soft).scatter_(-1, soft.argmax(dim=-1, keepdim=True), 1.0)
        return hard * (soft.sum(dim=-1, keepdim=True) > 0)  # a fully masked row stays zero


SCORERS = ("dot", "scaled_dot", "general", "concat", "local-m", "local-p")


def make_attention(name: str, hidden_size: int, *, half_window: int = 3) -> Scorer:
    """Build an attention module by name: one of :data:`SCORERS` (``"additive"`` and
    ``"bahdanau"`` are accepted for ``"concat"``).

    It lives here, beside the local variants, because it builds the scorers of both modules
    (and :class:`LocalAttention` builds its inner global scorer with it).

    Args:
        name: the score.
        hidden_size: ``d_hid``.
        half_window: ``D`` of the local variants.

    Returns:
        a new scorer, called as ``attention(hidden, encoder_outputs, mask, step=t)``.
    """
    if name == "dot":
        return AttentionSimple(hidden_size, scaled=False)
    if name == "scaled_dot":
        return AttentionSimple(hidden_size)
    if name == "general":
        return AttentionGeneral(hidden_size)
    if name in ("concat", "additive", "bahdanau"):
        return AttentionParams(hidden_size)
    if name in ("local-m", "local-p"):
        return LocalAttention(hidden_size, half_window, mode=name[-1])
    raise ValueError(f"unknown attention {name!r}; expected one of {', '.join(SCORERS)}")
