"""The encoder-decoder Transformer of "Attention Is All You Need", (Vaswani et al., 2017).

Shapes: ``B`` batch, ``Ts``/``Tt`` source/target length, ``D`` model width, ``H`` heads,
``L`` layers, ``K`` beams, ``V`` target vocabulary.

It follows the seq2seq protocol every model in attnlib follows, so one training loop trains
them all: ``model(src, tgt)`` teacher-forces ``tgt[:, :-1]`` and returns logits
``(B, Tt - 1, V)`` that predict ``tgt[:, 1:]``; ``model.greedy_decode(src, max_len)`` returns
``(tokens, weights)``. Masks are boolean, True = may attend, built with :mod:`attnlib.masks`.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import nn

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

    # ----- decoding ----------------------------------------------------------------------
    def _next_log_probs(self, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        # Re-runs the decoder on the whole prefix (no cache): simple, and fine for short outputs.
        states = self.decode(ys, memory, src_mask, self._tgt_mask(ys))  # (B, T, D)
        return torch.log_softmax(self.output(states[:, -1]), dim=-1)  # (B, V)

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Pick the most likely token at each step until every sequence has emitted EOS.

        Runs in eval mode (no dropout) and restores the previous mode.

        Args:
            src: ``(B, Ts)`` source ids.
            max_len: most tokens to generate (EOS included); at most ``max_seq_len``.

        Returns:
            ``tokens`` ``(B, T)`` with ``T <= max_len``: the generated ids after SOS, EOS
            included, PAD after it; and the cross-attention ``weights`` ``(B, L, H, T, Ts)``
            that produced them (row ``t`` is the step that chose ``tokens[:, t]``).
        """
        require_positive_int("max_len", max_len)
        require_length("max_len", max_len, self.max_seq_len, "max_seq_len")
        self._require_tokens("src", src, self.src_vocab_size)
        src_mask = padding_mask(src, self.pad_id)  # (B, 1, 1, Ts)
        with evaluating(self):
            memory = self.encode(src, src_mask)  # (B, Ts, D)
            return self._greedy(memory, src_mask, max_len)

    def _greedy(
        self, memory: torch.Tensor, src_mask: torch.Tensor, max_len: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, device = memory.shape[0], memory.device
        ys = torch.full((b, 1), self.sos_id, dtype=torch.long, device=device)  # (B, 1): SOS
        done = torch.zeros(b, dtype=torch.bool, device=device)
        for _ in range(max_len):
            next_token = self._next_log_probs(ys, memory, src_mask).argmax(dim=-1)  # (B,)
            next_token = next_token.masked_fill(done, self.pad_id)
            ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, T + 1)
            done |= next_token == self.eos_id
            if bool(done.all()):
                break
        return ys[:, 1:], self.attention_weights()["cross"]

    @torch.no_grad()
    def beam_search(
        self, src: torch.Tensor, max_len: int, beam_size: int = 4, length_penalty: float = 0.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keep the ``beam_size`` most likely prefixes per sequence; return the best one.

        A finished beam (it emitted EOS) is carried on with PAD at no cost, so finished and
        unfinished hypotheses compete on the same score. With ``beam_size=1`` this is exactly
        :meth:`greedy_decode`. Runs in eval mode and restores the previous mode.

        Args:
            src: ``(B, Ts)`` source ids.
            max_len: most tokens to generate (EOS included).
            beam_size: beams ``K`` per sequence.
            length_penalty: ``alpha``; the final choice ranks ``log p / length ** alpha``
                (0 = plain log-probability).

        Returns:
            ``tokens`` ``(B, T)`` as in :meth:`greedy_decode`, and their log-probabilities ``(B,)``.
        """
        require_positive_int("max_len", max_len)
        require_length("max_len", max_len, self.max_seq_len, "max_seq_len")
        k = require_positive_int("beam_size", beam_size)
        if k > self.tgt_vocab_size:
            raise ValueError(f"expected beam_size <= tgt_vocab_size={self.tgt_vocab_size}, got {k}")
        self._require_tokens("src", src, self.src_vocab_size)
        src_mask = padding_mask(src, self.pad_id)  # (B, 1, 1, Ts)
        with evaluating(self):
            memory = self.encode(src, src_mask)  # (B, Ts, D)
            return self._beam(memory, src_mask, max_len, k, length_penalty)

    def _beam(
        self, memory: torch.Tensor, src_mask: torch.Tensor, max_len: int, k: int, length_penalty: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, v, device = memory.shape[0], self.tgt_vocab_size, memory.device
        memory = memory.repeat_interleave(k, dim=0)  # (B*K, Ts, D)
        src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*K, 1, 1, Ts)
        ys = torch.full((b * k, 1), self.sos_id, dtype=torch.long, device=device)
        scores = torch.full((b, k), float("-inf"), device=device)
        scores[:, 0] = 0.0  # one live beam at the start, so the K beams do not all repeat it
        done = torch.zeros(b, k, dtype=torch.bool, device=device)
        pad_only = torch.full((v,), float("-inf"), device=device)
        pad_only[self.pad_id] = 0.0
        for _ in range(max_len):
            log_probs = self._next_log_probs(ys, memory, src_mask).view(b, k, v)  # (B, K, V)
            log_probs = torch.where(done[..., None], pad_only, log_probs)
            candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K*V)
            scores, index = candidates.topk(k, dim=-1)  # (B, K)
            beam, token = index // v, index % v  # (B, K) each
            prefix = ys.view(b, k, -1).gather(1, beam[..., None].expand(-1, -1, ys.shape[1]))  # (B, K, T)
            ys = torch.cat([prefix, token[..., None]], dim=-1).view(b * k, -1)  # (B*K, T + 1)
            done = done.gather(1, beam) | (token == self.eos_id)
            if bool(done.all()):
                break
        hyps = ys.view(b, k, -1)[:, :, 1:]  # (B, K, T)
        ranked = scores
        if length_penalty:
            lengths = (hyps != self.pad_id).sum(-1).clamp_min(1).float()  # (B, K)
            ranked = scores / lengths**length_penalty
        best = ranked.argmax(dim=-1)  # (B,)
        rows = torch.arange(b, device=device)
        return hyps[rows, best], scores[rows, best]


def to_torch_transformer(model: Transformer) -> nn.Transformer:
    """A ``torch.nn.Transformer`` (batch first, ReLU) holding a copy of ``model``'s layers.

    Embeddings, positional encoding and the output head are not part of ``nn.Transformer``;
    feed it ``model``'s embedded inputs. ``nn.Transformer`` always ends each stack with a
    LayerNorm: copied when ``model`` has final norms, replaced by ``nn.Identity`` otherwise.
    ``nn.MultiheadAttention`` fuses the three input projections into one ``in_proj``. Its
    nested-tensor fast path is switched off, so its encoder output keeps the (unused) values
    at padded positions, as ``model``'s does.
    """
    enc0 = model.encoder_layers[0]
    with warnings.catch_warnings():  # torch warns that pre-LN rules out its nested-tensor path
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        ref = nn.Transformer(
            model.dim, model.n_heads, model.n_layers, model.n_layers,
            enc0.feed_forward.w1.out_features, enc0.dropout.p, batch_first=True,
            norm_first=enc0.norm_first, layer_norm_eps=enc0.ffn_norm.eps,
        )  # fmt: skip
    # Its eval-mode fast path packs padded batches into nested tensors and returns zeros at
    # padded positions; switch that off so every position can be compared.
    ref.encoder.use_nested_tensor = False

    def attention(theirs: nn.MultiheadAttention, ours: nn.Module) -> None:
        roles = (ours.W_query, ours.W_key, ours.W_value)
        theirs.in_proj_weight.copy_(torch.cat([r.weight for r in roles]))  # (3D, D)
        theirs.in_proj_bias.copy_(torch.cat([r.bias for r in roles]))  # (3D,)
        theirs.out_proj.load_state_dict(ours.out_proj.state_dict())

    def norm(theirs: nn.Module, ours: nn.Module) -> nn.Module:
        if isinstance(ours, nn.Identity):
            return nn.Identity()
        theirs.weight.copy_(ours.gamma)
        theirs.bias.copy_(ours.beta)
        return theirs

    def feed_forward(theirs: nn.Module, ours: nn.Module) -> None:
        theirs.linear1.load_state_dict(ours.feed_forward.w1.state_dict())
        theirs.linear2.load_state_dict(ours.feed_forward.w2.state_dict())

    with torch.no_grad():
        for theirs, ours in zip(ref.encoder.layers, model.encoder_layers, strict=True):
            attention(theirs.self_attn, ours.attention)
            feed_forward(theirs, ours)
            norm(theirs.norm1, ours.attention_norm)
            norm(theirs.norm2, ours.ffn_norm)
        for theirs, ours in zip(ref.decoder.layers, model.decoder_layers, strict=True):
            attention(theirs.self_attn, ours.self_attention)
            attention(theirs.multihead_attn, ours.cross_attention)
            feed_forward(theirs, ours)
            norm(theirs.norm1, ours.self_attn_norm)
            norm(theirs.norm2, ours.cross_attn_norm)
            norm(theirs.norm3, ours.ffn_norm)
        ref.encoder.norm = norm(ref.encoder.norm, model.encoder_norm)
        ref.decoder.norm = norm(ref.decoder.norm, model.decoder_norm)
    return ref.train(model.training)
