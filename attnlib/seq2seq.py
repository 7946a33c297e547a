"""RNN encoder-decoder (seq2seq): encoder, decoder without attention, the model, one translation.

Shapes: ``B`` batch, ``Ts`` source length, ``Tt`` target length (SOS ... EOS), ``T`` generated
length, ``d_hid`` hidden size (also the embedding width ``E`` here), ``L`` LSTM layers, ``V``
target vocabulary.

Taught in notebook 07 (sequence to sequence without attention); notebooks 08 and 09 build on it.

* :class:`Encoder`: a bidirectional LSTM (Bahdanau et al. used gated recurrent units); its
  outputs are projected back to ``d_hid`` (``fc`` + tanh; the paper keeps them ``2 d_hid`` wide) and serve
  as keys and values; the two directions' final states are summed to start the decoder (the
  paper: ``s_0 = tanh(W_s h←_1)``).
* :class:`~attnlib.attention_decoders.DecoderWithAttention` (Bahdanau's order) and
  :class:`~attnlib.attention_decoders.LuongDecoder` (Luong's order) are the decoders with
  attention, in :mod:`attnlib.attention_decoders`.
* :class:`Decoder`: the baseline without attention; the encoder's final state is the one
  fixed-size vector that carries the whole source.
* :class:`Seq2Seq`: teacher-forced training pass and batched greedy decoding.
* :func:`translate`: greedy-decode one string with any seq2seq model, for reading and plotting.

Every seq2seq model in attnlib (these and the Transformer) follows one protocol,
:class:`~attnlib.training.Seq2SeqModel` (beside the loop that trains it): ``model(src, tgt)`` with
``src`` ``(B, Ts)`` and ``tgt`` ``(B, Tt)`` returns logits ``(B, Tt-1, V)`` predicting
``tgt[:, 1:]``, and ``model.greedy_decode(src, max_len)`` returns ``(tokens, weights)``.
Parameters are created in a fixed order (embedding, LSTM, output layer), so the same seed gives
the same tensors.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ._validate import require_positive_int, require_rank, require_token_ids
from .data import EOS_ID, PAD_ID, SOS_ID, Vocab
from .modes import evaluating

__all__ = ["Decoder", "Encoder", "Seq2Seq", "lstm_step", "translate"]


def lstm_step(
    rnn: nn.LSTM, x: torch.Tensor, hidden: torch.Tensor, cell: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One time step of ``rnn``: the top layer's output ``(B, d_hid)`` and the new ``hidden``, ``cell``.

    Computes ``rnn(x.unsqueeze(1), (hidden, cell))`` layer by layer with ``torch.lstm_cell``
    (dropout between layers in training mode, as ``nn.LSTM`` applies it): bit for bit what
    ``nn.LSTM`` computes on PyTorch's own CPU kernels. A decoder steps its LSTM once per output
    token on a small batch, where ``nn.LSTM``'s per-call work (argument checks, and oneDNN's
    set-up when it is enabled) costs about as much as the arithmetic.

    Args:
        rnn: a one-directional ``nn.LSTM`` without projections.
        x: the step's input ``(B, I)``.
        hidden, cell: ``(L, B, d_hid)``.
    """
    if rnn.bidirectional or rnn.proj_size:
        raise ValueError("lstm_step runs a one-directional nn.LSTM without proj_size, one step at a time")
    if x.ndim != 2 or x.shape[1] != rnn.input_size:
        raise ValueError(f"expected x of shape (B, {rnn.input_size}) (one step), got {tuple(x.shape)}")
    hs, cs = [], []
    layer_input = x
    for layer in range(rnn.num_layers):
        if layer > 0 and rnn.dropout and rnn.training:
            layer_input = F.dropout(layer_input, rnn.dropout, training=True)
        weights = [getattr(rnn, f"{name}_l{layer}") for name in ("weight_ih", "weight_hh")]
        biases = (
            [getattr(rnn, f"{name}_l{layer}") for name in ("bias_ih", "bias_hh")]
            if rnn.bias
            else [None, None]
        )
        h, c = torch.lstm_cell(
            layer_input, (hidden[layer], cell[layer]), *weights, *biases
        )  # (B, d_hid) each
        hs.append(h)
        cs.append(c)
        layer_input = h
    return layer_input, torch.stack(hs), torch.stack(cs)  # (B, d_hid), (L, B, d_hid), (L, B, d_hid)


class Encoder(nn.Module):
    """Bidirectional LSTM encoder: the bidirectional encoder of Bahdanau et al. (2015, §3.2), changed.

    Where the paper differs (notebook 08 tabulates it):

    * units: LSTMs; the paper uses the gated hidden units of Cho et al. (2014), later called the GRU
      (appendix A.1.1);
    * annotations: the paper keeps ``h_j = [h→_j; h←_j]``, ``2n`` wide (eq. 7); here they are
      projected back to ``d_hid`` (``fc`` + tanh), so that keys, values and decoder state share one
      width and every scorer of :mod:`attnlib.scorers` applies;
    * the decoder's initial state: the paper's is ``s_0 = tanh(W_s h←_1)`` (A.2.2);
      :meth:`Seq2Seq.encode` sums the two directions' final states instead, with no layer.

    Args:
        vocab_size: source vocabulary size.
        hidden_size: ``d_hid``: embedding width, LSTM width per direction, output width.
        num_layers: ``L``.
        pad_id: padding id; padded positions are skipped (packed), so each sequence's final
            states are those after its last real token.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int, *, pad_id: int = PAD_ID) -> None:
        super().__init__()
        self.vocab_size = require_positive_int("vocab_size", vocab_size)
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.num_layers = require_positive_int("num_layers", num_layers)
        self.pad_id = pad_id
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=hidden_size)
        self.rnn = nn.LSTM(
            input_size=hidden_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            batch_first=True,
            bidirectional=True,
        )
        self.fc = nn.Linear(hidden_size * 2, hidden_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encode a padded batch.

        Args:
            x: ``(B, Ts)`` source ids, padded on the right with ``pad_id``.

        Returns:
            ``outputs`` ``(B, Ts, d_hid)``, and the final ``hidden`` and ``cell`` states, each
            ``(2L, B, d_hid)`` (layer-major, direction-minor, as ``nn.LSTM`` returns them).
        """
        require_token_ids("src", x, self.vocab_size, "(B, Ts)")
        lengths = (x != self.pad_id).sum(dim=1)  # (B,)
        if (lengths == 0).any():
            empty = torch.nonzero(lengths == 0).flatten().tolist()
            raise ValueError(f"source sequences {empty[:5]} are empty (only padding)")
        embedded = self.embedding(x)  # (B, Ts) -> (B, Ts, d_hid)
        if bool((lengths == x.shape[1]).all()):
            outputs, (hidden, cell) = self.rnn(embedded)  # (B, Ts, 2 d_hid)
        else:
            packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
            outputs, (hidden, cell) = self.rnn(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=x.shape[1])
        outputs = torch.tanh(self.fc(outputs))  # (B, Ts, 2 d_hid) -> (B, Ts, d_hid)
        return outputs, hidden, cell


class Decoder(nn.Module):
    """The baseline decoder without attention: the source reaches it only through the
    initial state, one fixed-size vector whatever the input length.

    Args:
        vocab_size: target vocabulary size ``V``.
        hidden_size: ``d_hid``.
        num_layers: ``L``.
    """

    accepts_sequences = True

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.num_layers = require_positive_int("num_layers", num_layers)
        self.attention = None
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=hidden_size)
        self.rnn = nn.LSTM(hidden_size, hidden_size, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)
        self.last_attn_weights: torch.Tensor | None = None

    def forward(
        self,
        x: torch.Tensor,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        encoder_outputs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        step: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Same call as :meth:`~attnlib.attention_decoders.DecoderWithAttention.forward`;
        ``encoder_outputs``, ``mask`` and ``step`` are ignored. ``x`` may also be ``(B, T)``: then
        all ``T`` teacher-forced steps run in one LSTM call and the predictions are ``(B, T, V)``."""
        if x.ndim == 1:  # one step: (B,)
            output, hidden, cell = lstm_step(self.rnn, self.embedding(x), hidden, cell)  # (B, d_hid)
            return self.fc(output), hidden, cell  # (B, V)
        outputs, (hidden, cell) = self.rnn(self.embedding(x), (hidden, cell))  # (B, T, d_hid)
        return self.fc(outputs), hidden, cell  # (B, T, V)


class Seq2Seq(nn.Module):
    """Encoder and decoder together (teacher forcing, greedy decoding).

    Args:
        encoder: an :class:`Encoder`.
        decoder: a :class:`Decoder`, or a decoder with attention of :mod:`attnlib.attention_decoders`.
        device: optional and unused, kept for the classic signature
            ``Seq2Seq(encoder, decoder, device)``; new tensors are made on ``src``'s device.
        teacher_forcing_ratio: chance that a training step feeds the true previous token
            rather than the model's own guess; used when ``forward`` gets no ratio.
        sos_id, eos_id, pad_id: special token ids of the target vocabulary.
    """

    def __init__(
        self,
        encoder: Encoder,
        decoder: nn.Module,
        device: torch.device | str | None = None,
        *,
        teacher_forcing_ratio: float = 0.5,
        sos_id: int = SOS_ID,
        eos_id: int = EOS_ID,
        pad_id: int = PAD_ID,
    ) -> None:
        super().__init__()
        for what in ("hidden_size", "num_layers"):
            if getattr(encoder, what) != getattr(decoder, what):
                raise ValueError(
                    f"encoder and decoder must agree on {what}, got {getattr(encoder, what)} "
                    f"and {getattr(decoder, what)}"
                )
        if not 0.0 <= teacher_forcing_ratio <= 1.0:
            raise ValueError(f"expected teacher_forcing_ratio in [0, 1], got {teacher_forcing_ratio}")
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        self.teacher_forcing_ratio = teacher_forcing_ratio
        self.sos_id, self.eos_id, self.pad_id = sos_id, eos_id, pad_id
        self.last_attn_weights: torch.Tensor | None = None

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the encoder; returns ``encoder_outputs`` ``(B, Ts, d_hid)``, the decoder's initial
        ``hidden`` and ``cell`` ``(L, B, d_hid)`` (both directions summed) and the source ``mask``
        ``(B, Ts)``, True for real tokens (None when the batch has no padding at all)."""
        encoder_outputs, hidden, cell = self.encoder(src)
        b, layers = src.shape[0], self.encoder.num_layers
        hidden = hidden.view(layers, 2, b, -1).sum(dim=1)  # (2L, B, d_hid) -> (L, B, d_hid)
        cell = cell.view(layers, 2, b, -1).sum(dim=1)  # (2L, B, d_hid) -> (L, B, d_hid)
        mask = src != self.pad_id  # (B, Ts)
        return encoder_outputs, hidden, cell, (None if bool(mask.all()) else mask)

    def forward(
        self, src: torch.Tensor, trg: torch.Tensor, teacher_forcing_ratio: float | None = None
    ) -> torch.Tensor:
        """Predict every target token after the first.

        Returns ``Tt-1`` steps, not ``Tt`` with an all-zero first row as in many from-scratch
        versions: the SOS at ``trg[:, 0]`` is given, never predicted, so ``logits[:, t]`` lines up with
        ``trg[:, t + 1]`` and a loss needs no slicing (a zero row would add a fake ``log V``).

        Args:
            src: ``(B, Ts)`` source ids. trg: ``(B, Tt)`` target ids ``SOS ... EOS PAD...``: what
                attnlib calls ``tgt`` everywhere else, under the name of the published
                ``Seq2Seq.forward(src, trg, teacher_forcing_ratio)`` this class follows.
            teacher_forcing_ratio: defaults to the model's ratio in training mode and to 1
                (always the true previous token) in eval mode.

        Returns:
            ``(B, Tt-1, V)`` logits. The weights of every step are kept in
            ``last_attn_weights`` ``(B, Tt-1, Ts)`` (None without attention).
        """
        if teacher_forcing_ratio is None:
            teacher_forcing_ratio = self.teacher_forcing_ratio if self.training else 1.0
        require_rank("trg", trg, (2,), "(B, Tt)")
        if trg.shape[0] != src.shape[0] or trg.shape[1] < 2:
            raise ValueError(
                f"expected trg (B, Tt) with the batch size of src {tuple(src.shape)} and Tt >= 2 "
                f"(SOS ... EOS), got {tuple(trg.shape)}"
            )
        encoder_outputs, hidden, cell, mask = self.encode(src)
        if teacher_forcing_ratio >= 1.0 and getattr(self.decoder, "accepts_sequences", False):
            # Every input is known: the decoder runs all steps in one call (one LSTM call
            # where it can).
            logits = self.decoder(trg[:, :-1], hidden, cell, encoder_outputs, mask)[0]  # (B, Tt-1, V)
            self.last_attn_weights = self.decoder.last_attn_weights
            return logits
        input, logits, weights = trg[:, 0], [], []
        for t in range(trg.shape[1] - 1):
            output, hidden, cell = self.decoder(input, hidden, cell, encoder_outputs, mask, step=t)
            logits.append(output)
            weights.append(self.decoder.last_attn_weights)
            teacher_force = teacher_forcing_ratio >= 1.0 or (
                teacher_forcing_ratio > 0.0 and random.random() < teacher_forcing_ratio
            )
            input = trg[:, t + 1] if teacher_force else output.argmax(1)
        self.last_attn_weights = None if weights[0] is None else torch.stack(weights, dim=1)
        return torch.stack(logits, dim=1)  # (B, Tt-1, V)

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_len: int = 50) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Decode a batch greedily (arg-max token each step) until every sequence emits EOS.

        Args:
            src: ``(B, Ts)`` source ids.
            max_len: most tokens generated per sequence (EOS included).

        Returns:
            ``tokens`` ``(B, T)`` with ``T <= max_len``: the tokens after SOS, each row ending
            at its EOS and padded after it; ``weights`` ``(B, T, Ts)``, the attention weights
            of each generated token (zero after EOS), or None for a decoder without attention.
        """
        require_positive_int("max_len", max_len)
        with evaluating(self):
            encoder_outputs, hidden, cell, mask = self.encode(src)
            b = src.shape[0]
            input = torch.full((b,), self.sos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(b, dtype=torch.bool, device=src.device)
            tokens, weights = [], []
            for t in range(max_len):
                output, hidden, cell = self.decoder(input, hidden, cell, encoder_outputs, mask, step=t)
                input = output.argmax(1).masked_fill(done, self.pad_id)  # (B,)
                tokens.append(input)
                if self.decoder.last_attn_weights is not None:
                    weights.append(self.decoder.last_attn_weights.masked_fill(done[:, None], 0.0))
                done = done | (input == self.eos_id)
                if bool(done.all()):
                    break
        return torch.stack(tokens, dim=1), (torch.stack(weights, dim=1) if weights else None)


@torch.no_grad()
def translate(
    model: nn.Module, text: str, src_vocab: Vocab, tgt_vocab: Vocab, max_len: int = 60
) -> tuple[str, torch.Tensor | None, list[str], list[str]]:
    """Greedy-decode one source string with any seq2seq model (:class:`Seq2Seq`, a Transformer).

    Args:
        model: a model with ``greedy_decode(src, max_len)`` (:class:`~attnlib.training.Seq2SeqModel`).
        text: the source string.
        src_vocab, tgt_vocab: the vocabularies of the source and the target.
        max_len: most tokens to generate (EOS included).

    Returns:
        ``(output, weights, src_labels, out_labels)``: the output string, the ``(T, Ts)``
        attention weights (None without attention), and token labels for plotting.
    """
    src = torch.tensor([src_vocab.encode(text)])  # (1, Ts)
    tokens, weights = model.greedy_decode(src, max_len)
    ids = tokens[0].tolist()
    length = ids.index(tgt_vocab.eos_id) + 1 if tgt_vocab.eos_id in ids else len(ids)
    out_labels = tgt_vocab.tokens(ids[:length])
    weights = None if weights is None else weights[0, :length]  # (T, Ts)
    return tgt_vocab.decode(ids), weights, src_vocab.tokens(src[0]), out_labels
