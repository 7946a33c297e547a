"""The encoder-decoder Transformer of "Attention Is All You Need", (Vaswani et al., 2017).

Shapes: ``B`` batch, ``Ts``/``Tt`` source/target length, ``D`` model width, ``H`` heads,
``L`` layers, ``K`` beams, ``V`` target vocabulary.

Taught in notebook 11 (the Transformer).

It follows the seq2seq protocol every model in attnlib follows, so one training loop trains
them all: ``model(src, tgt)`` teacher-forces ``tgt[:, :-1]`` and returns logits
``(B, Tt - 1, V)`` that predict ``tgt[:, 1:]``; ``model.greedy_decode(src, max_len)`` returns
``(tokens, weights)``. Masks are boolean, True = may attend, built with :mod:`attnlib.masks`.

Two neighbours: :mod:`attnlib.decoding` holds the search strategies behind ``model.greedy_decode``
and ``model.beam_search`` (the model checks the arguments, encodes the source and offers one step,
:meth:`Transformer.next_log_probs`; a strategy only searches), and :mod:`attnlib.torch_reference`
copies a model into ``torch.nn.Transformer`` to check it against PyTorch's own.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import decoding
from ._validate import (
    require_divisible,
    require_length,
    require_positive_int,
    require_rank,
    require_token_ids,
)
from .blocks import DecoderLayer, EncoderLayer, LayerNorm, PositionalEncoding
from .masks import causal_mask, combine_masks, padding_mask, require_bool_mask
from .modes import evaluating

__all__ = ["Transformer"]


class Transformer(nn.Module):
    """Embeddings scaled by sqrt(D) plus sinusoidal positions, ``L`` encoder and ``L`` decoder
    layers, a linear output head; Xavier-initialised (Glorot & Bengio, 2010).

    Args:
        src_vocab_size: source vocabulary size.
        tgt_vocab_size: target vocabulary size ``V``.
        dim: model width ``D``.
        n_heads: heads ``H``; ``dim`` must be a multiple (attnlib's ``num_heads``; this
            published signature keeps the short name).
        n_layers: encoder layers, and as many decoder layers.
        hidden_dim: feed-forward width.
        max_seq_len: longest source or target sequence accepted.
        dropout: dropout probability everywhere (embeddings, attention weights, sublayers).
        pad_id, sos_id, eos_id: special token ids (the same in both vocabularies).
        norm_first: pre-LN layers instead of the paper's post-LN.
        final_norm: a LayerNorm after each stack (``nn.Transformer`` always has one; pre-LN
            needs one); defaults to ``norm_first``.
        eps: LayerNorm epsilon.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        dim: int = 512,
        n_heads: int = 8,
        n_layers: int = 6,
        hidden_dim: int = 2048,
        max_seq_len: int = 512,
        dropout: float = 0.1,
        *,
        pad_id: int = 0,
        sos_id: int = 1,
        eos_id: int = 2,
        norm_first: bool = False,
        final_norm: bool | None = None,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        require_divisible(dim, n_heads, "dim", "n_heads")
        self.src_vocab_size = require_positive_int("src_vocab_size", src_vocab_size)
        self.tgt_vocab_size = require_positive_int("tgt_vocab_size", tgt_vocab_size)
        self.dim, self.n_heads, self.n_layers = dim, n_heads, require_positive_int("n_layers", n_layers)
        self.max_seq_len = require_positive_int("max_seq_len", max_seq_len)
        self.pad_id, self.sos_id, self.eos_id = pad_id, sos_id, eos_id
        for name, token in (("pad_id", pad_id), ("sos_id", sos_id), ("eos_id", eos_id)):
            if not 0 <= token < min(src_vocab_size, tgt_vocab_size):
                raise ValueError(
                    f"expected {name} in [0, {min(src_vocab_size, tgt_vocab_size)}), got {token}"
                )

        self.src_embedding = nn.Embedding(src_vocab_size, dim)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, dim)
        self.pos_encoder = PositionalEncoding(dim, max_seq_len)
        self.dropout = nn.Dropout(dropout)
        layer_args = dict(max_seq_len=max_seq_len, norm_first=norm_first, eps=eps)
        self.encoder_layers = nn.ModuleList(
            [EncoderLayer(dim, n_heads, hidden_dim, dropout, **layer_args) for _ in range(n_layers)]
        )
        self.decoder_layers = nn.ModuleList(
            [DecoderLayer(dim, n_heads, hidden_dim, dropout, **layer_args) for _ in range(n_layers)]
        )
        final_norm = norm_first if final_norm is None else final_norm
        self.encoder_norm = LayerNorm(dim, eps) if final_norm else nn.Identity()
        self.decoder_norm = LayerNorm(dim, eps) if final_norm else nn.Identity()
        self.output = nn.Linear(dim, tgt_vocab_size)
        self._init_parameters()

    def _init_parameters(self) -> None:
        # Xavier-uniform on every matrix (embeddings included); biases and norms keep theirs.
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    # ----- input checks and masks -------------------------------------------------------
    def _require_tokens(self, name: str, tokens: torch.Tensor, vocab_size: int) -> None:
        require_token_ids(name, tokens, vocab_size)
        require_length(name, tokens.shape[1], self.max_seq_len, "max_seq_len")

    def _require_mask(self, name: str, mask: torch.Tensor | None, b: int, tq: int, tk: int) -> None:
        if mask is None:
            return
        require_bool_mask(mask)
        want = (b, self.n_heads, tq, tk)
        if (
            mask.ndim != 4
            or mask.shape[-1] != tk
            or any(m not in (1, w) for m, w in zip(mask.shape, want, strict=True))
        ):
            raise ValueError(
                f"expected {name} of shape (B, 1, 1, Tk) or (B, 1, Tq, Tk), broadcastable to "
                f"(B, H, Tq, Tk) = {want}, got {tuple(mask.shape)}"
            )

    def generate_mask(self, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Source padding mask and target padding-and-causal mask (True = may attend).

        Args:
            src: ``(B, Ts)`` source ids. tgt: ``(B, Tt)`` decoder input ids.

        Returns:
            ``src_mask`` ``(B, 1, 1, Ts)`` and ``tgt_mask`` ``(B, 1, Tt, Tt)``.
        """
        return padding_mask(src, self.pad_id), self._tgt_mask(tgt)

    def _tgt_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        causal = causal_mask(tgt.shape[1], device=tgt.device)  # (Tt, Tt)
        return combine_masks(padding_mask(tgt, self.pad_id), causal)  # (B, 1, Tt, Tt)

    # ----- the two stacks ----------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: src ``(B, Ts)`` ids; src_mask ``(B, 1, 1, Ts)`` (padding mask if None).
        Returns: the encoder's output ``(B, Ts, D)``."""
        self._require_tokens("src", src, self.src_vocab_size)
        b, ts = src.shape
        src_mask = padding_mask(src, self.pad_id) if src_mask is None else src_mask
        self._require_mask("src_mask", src_mask, b, ts, ts)
        x = self.dropout(self.pos_encoder(self.src_embedding(src) * math.sqrt(self.dim)))  # (B, Ts, D)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    def decode(
        self,
        tgt: torch.Tensor,
        enc_output: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Args:
            tgt: decoder input ids ``(B, Tt)``, starting with SOS.
            enc_output: ``(B, Ts, D)`` from :meth:`encode`.
            src_mask: ``(B, 1, 1, Ts)``, True = may attend.
            tgt_mask: ``(B, 1, Tt, Tt)`` or None; the decoder is causal either way.

        Returns:
            decoder states ``(B, Tt, D)`` (apply ``self.output`` for logits).
        """
        self._require_tokens("tgt", tgt, self.tgt_vocab_size)
        require_rank("enc_output", enc_output, (3,), "(B, Ts, D)")
        b, tt = tgt.shape
        if enc_output.shape[0] != b or enc_output.shape[-1] != self.dim:
            raise ValueError(
                f"expected enc_output of shape (B, Ts, D) with B={b}, D={self.dim}, "
                f"got {tuple(enc_output.shape)}"
            )
        self._require_mask("src_mask", src_mask, b, tt, enc_output.shape[1])
        self._require_mask("tgt_mask", tgt_mask, b, tt, tt)
        x = self.dropout(self.pos_encoder(self.tgt_embedding(tgt) * math.sqrt(self.dim)))  # (B, Tt, D)
        for layer in self.decoder_layers:
            x = layer(x, enc_output, src_mask, tgt_mask)
        return self.decoder_norm(x)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: feed ``tgt[:, :-1]``, predict ``tgt[:, 1:]``.

        Args:
            src: ``(B, Ts)`` source ids (PAD-padded).
            tgt: ``(B, Tt)`` target ids: SOS, tokens, EOS, then PAD.

        Returns:
            logits ``(B, Tt - 1, V)``.
        """
        self._require_tokens("tgt", tgt, self.tgt_vocab_size)
        if tgt.shape[1] < 2:
            raise ValueError(f"expected tgt with at least 2 tokens (SOS ... EOS), got {tuple(tgt.shape)}")
        tgt_in = tgt[:, :-1]  # (B, Tt - 1)
        src_mask, tgt_mask = self.generate_mask(src, tgt_in)
        enc_output = self.encode(src, src_mask)
        return self.output(self.decode(tgt_in, enc_output, src_mask, tgt_mask))  # (B, Tt-1, V)

    # ----- attention weights -------------------------------------------------------------
    def attention_weights(self) -> dict[str, torch.Tensor | None]:
        """The weights of the latest forward pass, every layer and head.

        Returns:
            ``{"encoder_self": (B, L, H, Ts, Ts), "decoder_self": (B, L, H, Tt, Tt),
            "cross": (B, L, H, Tt, Ts)}``; an entry is None before its first use.
        """

        def stack(modules: list[nn.Module]) -> torch.Tensor | None:
            weights = [m.last_attn_weights for m in modules]
            return None if any(w is None for w in weights) else torch.stack(weights, dim=1)

        return {
            "encoder_self": stack([layer.attention for layer in self.encoder_layers]),
            "decoder_self": stack([layer.self_attention for layer in self.decoder_layers]),
            "cross": stack([layer.cross_attention for layer in self.decoder_layers]),
        }

    # ----- decoding (the search strategies live in attnlib.decoding) -------------------------
    def next_log_probs(self, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of the token after each prefix: one step of a search.

        Re-runs the decoder on the whole prefix (no cache): simple, and fine for short outputs.

        Args:
            ys: ``(B, T)`` prefixes, starting with SOS.
            memory: ``(B, Ts, D)`` from :meth:`encode`.
            src_mask: ``(B, 1, 1, Ts)``, True = may attend.

        Returns:
            ``(B, V)`` log-probabilities of the next token.
        """
        states = self.decode(ys, memory, src_mask, self._tgt_mask(ys))  # (B, T, D)
        return torch.log_softmax(self.output(states[:, -1]), dim=-1)  # (B, V)

    def _encode_for_search(self, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Check a search's arguments and encode the source once (call in eval mode, no grad)."""
        require_positive_int("max_len", max_len)
        require_length("max_len", max_len, self.max_seq_len, "max_seq_len")
        self._require_tokens("src", src, self.src_vocab_size)
        src_mask = padding_mask(src, self.pad_id)  # (B, 1, 1, Ts)
        return self.encode(src, src_mask), src_mask  # (B, Ts, D), (B, 1, 1, Ts)

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy search (:func:`attnlib.decoding.greedy_search`), in eval mode, without gradients.

        Runs in eval mode (no dropout) and restores the previous mode.

        Args:
            src: ``(B, Ts)`` source ids.
            max_len: most tokens to generate (EOS included); at most ``max_seq_len``.

        Returns:
            ``tokens`` ``(B, T)`` with ``T <= max_len``: the generated ids after SOS, EOS
            included, PAD after it; and the cross-attention ``weights`` ``(B, L, H, T, Ts)``
            that produced them (row ``t`` is the step that chose ``tokens[:, t]``).
        """
        with evaluating(self):
            memory, src_mask = self._encode_for_search(src, max_len)
            tokens = decoding.greedy_search(self, memory, src_mask, max_len)  # (B, T)
            return tokens, self.attention_weights()["cross"]  # the last step's: it saw every token

    @torch.no_grad()
    def beam_search(
        self, src: torch.Tensor, max_len: int, beam_size: int = 4, length_penalty: float = 0.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Beam search (:func:`attnlib.decoding.beam_search`), in eval mode, without gradients.

        Runs in eval mode (no dropout) and restores the previous mode.

        Args:
            src: ``(B, Ts)`` source ids.
            max_len: most tokens to generate (EOS included).
            beam_size: beams ``K`` per sequence (``1`` is exactly :meth:`greedy_decode`).
            length_penalty: ``alpha``; the final choice ranks ``log p / length ** alpha``
                (0 = plain log-probability).

        Returns:
            the best ``tokens`` ``(B, T)`` per sequence, as in :meth:`greedy_decode`, and their
            log-probabilities ``(B,)``.
        """
        k = require_positive_int("beam_size", beam_size)
        if k > self.tgt_vocab_size:
            raise ValueError(f"expected beam_size <= tgt_vocab_size={self.tgt_vocab_size}, got {k}")
        with evaluating(self):
            memory, src_mask = self._encode_for_search(src, max_len)
            return decoding.beam_search(self, memory, src_mask, max_len, k, length_penalty)
