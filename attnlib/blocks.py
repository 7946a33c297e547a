"""The Transformer's building blocks: positional encoding, feed-forward, LayerNorm, layers.

Shapes: ``B`` batch, ``T`` tokens (``Ts`` source, ``Tt`` target), ``D`` model width
(``dim``), ``H`` heads, ``F`` feed-forward width (``hidden_dim``).

Taught in notebook 10 (the Transformer's building blocks).

Each block keeps a small, fixed signature and parameter order (``PositionalEncoding``,
``FeedForward``, ``LayerNorm``, ``EncoderLayer``, ``DecoderLayer``). Attention is attnlib's own
:class:`~attnlib.multihead.MultiHeadAttention` (with biases, as in ``nn.MultiheadAttention``),
so every layer keeps its heads' weights.
Norm placement: post-LN ``norm(x + sublayer(x))`` as in the paper (and
``nn.Transformer``'s default), or pre-LN ``x + sublayer(norm(x))`` with ``norm_first=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    require_divisible,
    require_features,
    require_positive_int,
    require_probability,
    require_rank,
)
from .multihead import MultiHeadAttention

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "LayerNorm",
    "PositionalEncoding",
    "add_norm",
    "sinusoidal_encoding",
]


def sinusoidal_encoding(max_len: int, dim: int) -> torch.Tensor:
    """The fixed positional encoding of "Attention Is All You Need".

    ``PE[pos, 2i] = sin(pos / 10000^(2i/D))`` and ``PE[pos, 2i+1] = cos(pos / 10000^(2i/D))``:
    each pair of columns is a point turning on a circle at its own frequency.

    Args:
        max_len: number of positions ``T``.
        dim: encoding width ``D`` (even).

    Returns:
        ``(T, D)`` float tensor.
    """
    require_positive_int("max_len", max_len)
    require_positive_int("dim", dim)
    if dim % 2:
        raise ValueError(f"expected an even dim (sine and cosine come in pairs), got dim={dim}")
    position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)  # (T, 1)
    # 1 / 10000^(2i/D), computed as exp(-2i ln(10000) / D) like many implementations.
    div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))  # (D/2,)
    angles = position * div_term  # (T, 1) * (D/2,) -> (T, D/2)
    pe = torch.zeros(max_len, dim)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to a batch of embeddings (Vaswani et al., 2017, §3.5).

    The table is a registered buffer: saved in the ``state_dict``, moved by ``.to()``,
    never trained.

    Args:
        dim: model width ``D``.
        max_seq_len: longest sequence accepted.
    """

    def __init__(self, dim: int, max_seq_len: int = 5000) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_encoding(max_seq_len, dim).unsqueeze(0))  # (1, T, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(B, T, D)``. Returns: ``x + PE[:T]``, ``(B, T, D)``."""
        require_rank("x", x, (3,), "(B, T, D)")
        require_features("x", x, self.pe.shape[-1], "(B, T, D)")
        if x.shape[1] > self.pe.shape[1]:
            raise ValueError(f"x has {x.shape[1]} tokens, more than max_seq_len={self.pe.shape[1]}")
        return x + self.pe[:, : x.shape[1]]  # (B, T, D) + (1, T, D)


class FeedForward(nn.Module):
    """Position-wise feed-forward block: ``w2(dropout(relu(w1(x))))``, the same MLP at every token.

    Args:
        dim: model width ``D``.
        hidden_dim: inner width ``F`` (4 D in the paper).
        dropout: dropout after the ReLU.
    """

    def __init__(self, dim: int, hidden_dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.w1 = nn.Linear(require_positive_int("dim", dim), require_positive_int("hidden_dim", hidden_dim))
        self.w2 = nn.Linear(hidden_dim, dim)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(B, T, D)``. Returns: ``(B, T, D)``."""
        return self.w2(self.dropout(torch.relu(self.w1(x))))  # (B, T, D) -> (B, T, F) -> (B, T, D)


class LayerNorm(nn.Module):
    """Layer normalisation: normalise each token's features, then scale and shift.

    ``y = gamma * (x - mean) / sqrt(var + eps) + beta`` with the biased variance over the last
    dimension, what ``nn.LayerNorm(dim, eps)`` computes (``gamma`` is its ``weight``, ``beta``
    its ``bias``; Ba et al., 2016, call them the gain and the bias, and ``gamma``/``beta`` are
    BatchNorm's names). Notebook 10 writes the formula out and checks it against this module; here
    it is one call to ``F.layer_norm``, whose single fused kernel (forward and backward) trains
    the series' small Transformers about a sixth faster than the five operations of the formula.

    Args:
        dim: feature width ``D``.
        eps: added to the variance (1e-6 by default here, ``nn.LayerNorm`` uses 1e-5).
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(require_positive_int("dim", dim)))
        self.beta = nn.Parameter(torch.zeros(dim))

    def extra_repr(self) -> str:
        return f"{self.gamma.shape[0]}, eps={self.eps}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(..., D)``. Returns: ``(..., D)``."""
        require_features("x", x, self.gamma.shape[0], "(..., D)")
        return F.layer_norm(x, self.gamma.shape, self.gamma, self.beta, self.eps)


def add_norm(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    *,
    norm_first: bool = False,
) -> torch.Tensor:
    """Residual connection and normalisation around one sublayer.

    Post-LN (the paper): ``norm(x + dropout(sublayer(x)))``.
    Pre-LN: ``x + dropout(sublayer(norm(x)))``; the residual path stays un-normalised, which
    keeps gradients tame in deep stacks (the stack then needs a final norm).

    Notebook 10 compares the two placements with it; the layers of attnlib write the same
    residual lines out (``x = x + self.dropout(sublayer(norm(x)))``) rather than call it.

    Args:
        x: ``(B, T, D)``.
        sublayer: maps ``(B, T, D)`` to ``(B, T, D)`` (attention or feed-forward).
        norm: the sublayer's :class:`LayerNorm`.
        dropout: dropout on the sublayer's output.
        norm_first: pre-LN instead of post-LN.

    Returns:
        ``(B, T, D)``.
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def _attention(dim: int, n_heads: int, dropout: float, max_seq_len: int, causal: bool) -> MultiHeadAttention:
    return MultiHeadAttention(dim, dim, max_seq_len, dropout, n_heads, qkv_bias=True, causal=causal)


class EncoderLayer(nn.Module):
    """Self-attention over the whole source (padding masked), then feed-forward.

    Args:
        dim: model width ``D``.
        n_heads: heads ``H`` (``dim`` must be a multiple); attnlib's ``num_heads``, kept short in
            this published signature.
        hidden_dim: feed-forward width ``F``.
        dropout: dropout on attention weights, in the feed-forward block and on each
            sublayer's output.
        max_seq_len: longest sequence accepted.
        norm_first: pre-LN instead of the paper's post-LN.
        eps: LayerNorm epsilon.
    """

    def __init__(
        self,
        dim: int,
        n_heads: int,
        hidden_dim: int,
        dropout: float = 0.1,
        *,
        max_seq_len: int = 512,
        norm_first: bool = False,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        require_divisible(dim, n_heads, "dim", "n_heads")
        self.norm_first = norm_first
        self.attention = _attention(dim, n_heads, dropout, max_seq_len, causal=False)
        self.attention_norm = LayerNorm(dim, eps)
        self.feed_forward = FeedForward(dim, hidden_dim, dropout)
        self.ffn_norm = LayerNorm(dim, eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x ``(B, Ts, D)``; mask bool, True = may attend, e.g. ``(B, 1, 1, Ts)``.
        Returns: ``(B, Ts, D)``."""
        if self.norm_first:  # pre-LN: x + sublayer(norm(x))
            x = x + self.dropout(self.attention(self.attention_norm(x), mask=mask))
            return x + self.dropout(self.feed_forward(self.ffn_norm(x)))
        # post-LN: norm(x + sublayer(x))
        x = self.attention_norm(x + self.dropout(self.attention(x, mask=mask)))
        return self.ffn_norm(x + self.dropout(self.feed_forward(x)))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder's output, then feed-forward.

    The self-attention is always causal (its module applies the causal mask itself), so a
    target token can never see a later one whatever ``tgt_mask`` says.

    Args: as :class:`EncoderLayer`.
    """

    def __init__(
        self,
        dim: int,
        n_heads: int,
        hidden_dim: int,
        dropout: float = 0.1,
        *,
        max_seq_len: int = 512,
        norm_first: bool = False,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        require_divisible(dim, n_heads, "dim", "n_heads")
        self.norm_first = norm_first
        self.self_attention = _attention(dim, n_heads, dropout, max_seq_len, causal=True)
        self.self_attn_norm = LayerNorm(dim, eps)
        self.cross_attention = _attention(dim, n_heads, dropout, max_seq_len, causal=False)
        self.cross_attn_norm = LayerNorm(dim, eps)
        self.feed_forward = FeedForward(dim, hidden_dim, dropout)
        self.ffn_norm = LayerNorm(dim, eps)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        enc_output: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Args:
            x: target states ``(B, Tt, D)``.
            enc_output: the encoder's output ``(B, Ts, D)`` (keys and values of cross-attention).
            src_mask: True = may attend, e.g. ``(B, 1, 1, Ts)`` (source padding).
            tgt_mask: True = may attend, e.g. ``(B, 1, Tt, Tt)`` (target padding & causal).

        Returns:
            ``(B, Tt, D)``.
        """
        if self.norm_first:  # pre-LN: x + sublayer(norm(x))
            x = x + self.dropout(self.self_attention(self.self_attn_norm(x), mask=tgt_mask))
            x = x + self.dropout(self.cross_attention(self.cross_attn_norm(x), enc_output, src_mask))
            return x + self.dropout(self.feed_forward(self.ffn_norm(x)))
        # post-LN: norm(x + sublayer(x))
        x = self.self_attn_norm(x + self.dropout(self.self_attention(x, mask=tgt_mask)))
        x = self.cross_attn_norm(x + self.dropout(self.cross_attention(x, enc_output, src_mask)))
        return self.ffn_norm(x + self.dropout(self.feed_forward(x)))
