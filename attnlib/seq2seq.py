"""RNN encoder-decoder (seq2seq) with and without attention (Bahdanau et al., 2015; Luong et al., 2015).

Shapes: ``B`` batch, ``Ts`` source length, ``Tt`` target length (SOS ... EOS), ``H`` hidden size,
``L`` LSTM layers, ``V`` target vocabulary.

* :class:`Encoder`: a bidirectional LSTM; its outputs are projected back to ``H`` (``fc`` +
  tanh) and serve as keys and values; the two directions' final states are summed to start
  the decoder.
* :class:`DecoderWithAttention`: Bahdanau's order: the attention module (any of
  :mod:`attnlib.scorers`) weighs the encoder outputs using the previous state, and the
  resulting context is concatenated with the embedded input token before the LSTM.
* :class:`LuongDecoder`: Luong's order: the LSTM steps first, its new state is the query, and
  ``tanh(W_c [c_t; h_t])`` predicts the token (optionally fed into the next step).
* :class:`Decoder`: the baseline without attention; the encoder's final state is the one
  fixed-size vector that carries the whole source.
* :class:`Seq2Seq`: teacher-forced training pass and batched greedy decoding.

Every seq2seq model in attnlib (these and the Transformer) follows one protocol:
``model(src, tgt)`` with ``src`` ``(B, Ts)`` and ``tgt`` ``(B, Tt)`` returns logits
``(B, Tt-1, V)`` predicting ``tgt[:, 1:]``, and ``model.greedy_decode(src, max_len)`` returns
``(tokens, weights)``. Parameters are created in a fixed order (embedding, LSTM, output
layer), so the same seed gives the same tensors.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ._checks import check_positive_int, check_rank
from .data import EOS_ID, PAD_ID, SOS_ID
from .scorers import check_inputs


def check_token_ids(name: str, ids: torch.Tensor, vocab_size: int, layout: str) -> None:
    """Raise unless ``ids`` is an integer tensor of rank 2 with values in ``[0, vocab_size)``."""
    check_rank(name, ids, (2,), layout)
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise TypeError(f"expected integer token ids in {name}, got dtype {ids.dtype}")
    if ids.numel() == 0:
        raise ValueError(f"expected a non-empty {name} {layout}, got shape {tuple(ids.shape)}")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"expected {name} ids in [0, {vocab_size}) (the vocabulary size), got values from {low} to {high}"
        )


def check_attention_size(attention_module: nn.Module, hidden_size: int) -> None:
    """Raise unless ``attention_module`` was built for the decoder's ``hidden_size``."""
    size = getattr(attention_module, "hidden_size", None)
    if size != hidden_size:
        raise ValueError(
            f"attention_module was built for hidden_size={size}, the decoder has "
            f"hidden_size={hidden_size}; build both with the same H"
        )


def lstm_step(
    rnn: nn.LSTM, x: torch.Tensor, hidden: torch.Tensor, cell: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One time step of ``rnn``: the top layer's output ``(B, H)`` and the new ``hidden``, ``cell``.

    Computes ``rnn(x.unsqueeze(1), (hidden, cell))`` layer by layer with ``torch.lstm_cell``
    (dropout between layers in training mode, as ``nn.LSTM`` applies it): bit for bit what
    ``nn.LSTM`` computes on PyTorch's own CPU kernels. A decoder steps its LSTM once per output
    token on a small batch, where ``nn.LSTM``'s per-call work (argument checks, and oneDNN's
    set-up when it is enabled) costs about as much as the arithmetic.

    Args:
        rnn: a one-directional ``nn.LSTM`` without projections.
        x: the step's input ``(B, I)``.
        hidden, cell: ``(L, B, H)``.
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
        h, c = torch.lstm_cell(layer_input, (hidden[layer], cell[layer]), *weights, *biases)  # (B, H) each
        hs.append(h)
        cs.append(c)
        layer_input = h
    return layer_input, torch.stack(hs), torch.stack(cs)  # (B, H), (L, B, H), (L, B, H)


class Encoder(nn.Module):
    """Bidirectional LSTM encoder (Bahdanau et al., 2015, §3.2).

    Args:
        vocab_size: source vocabulary size.
        hidden_size: ``H``: embedding width, LSTM width per direction, output width.
        num_layers: ``L``.
        pad_id: padding id; padded positions are skipped (packed), so each sequence's final
            states are those after its last real token.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int, *, pad_id: int = PAD_ID) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_layers = check_positive_int("num_layers", num_layers)
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
            ``outputs`` ``(B, Ts, H)``, and the final ``hidden`` and ``cell`` states, each
            ``(2L, B, H)`` (layer-major, direction-minor, as ``nn.LSTM`` returns them).
        """
        check_token_ids("src", x, self.vocab_size, "(B, Ts)")
        lengths = (x != self.pad_id).sum(dim=1)  # (B,)
        if (lengths == 0).any():
            empty = torch.nonzero(lengths == 0).flatten().tolist()
            raise ValueError(f"source sequences {empty[:5]} are empty (only padding)")
        embedded = self.embedding(x)  # (B, Ts) -> (B, Ts, H)
        if bool((lengths == x.shape[1]).all()):
            outputs, (hidden, cell) = self.rnn(embedded)  # (B, Ts, 2H)
        else:
            packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
            outputs, (hidden, cell) = self.rnn(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=x.shape[1])
        outputs = torch.tanh(self.fc(outputs))  # (B, Ts, 2H) -> (B, Ts, H)
        return outputs, hidden, cell


class DecoderWithAttention(nn.Module):
    """One decoding step with attention (Bahdanau et al., 2015, §3.1).

    Score, weights, context: the attention module turns the previous state into weights over
    the source; their weighted sum of encoder outputs is the context, which joins the embedded
    input token as the LSTM's input.

    Args:
        vocab_size: target vocabulary size ``V``.
        hidden_size: ``H``.
        num_layers: ``L``.
        attention_module: any module of :mod:`attnlib.scorers` built for ``H``.

    A call with ``x`` of shape ``(B, T)`` runs all ``T`` teacher-forced steps and returns
    ``(B, T, V)`` logits: the same steps, with the input tokens embedded and the outputs turned
    into logits once for all steps instead of once per step.
    """

    accepts_sequences = True

    def __init__(
        self, vocab_size: int, hidden_size: int, num_layers: int, attention_module: nn.Module
    ) -> None:
        super().__init__()
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_layers = check_positive_int("num_layers", num_layers)
        check_attention_size(attention_module, hidden_size)
        self.attention = attention_module
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=hidden_size)
        self.rnn = nn.LSTM(
            input_size=hidden_size * 2,  # embedded token + context
            hidden_size=hidden_size,
            num_layers=num_layers,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_size, vocab_size)
        self.last_attn_weights: torch.Tensor | None = None

    def forward(
        self,
        x: torch.Tensor,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Args: x ``(B,)`` input ids (one step) or ``(B, T)`` (all teacher-forced steps); hidden,
        cell ``(L, B, H)``; encoder_outputs ``(B, Ts, H)``; mask ``(B, Ts)`` True for real source
        tokens; step the output position ``t`` of ``x`` (of its first column).

        Returns: ``predictions`` ``(B, V)`` or ``(B, T, V)`` (logits) and the new ``hidden``,
        ``cell``. ``last_attn_weights`` holds ``(B, Ts)`` or ``(B, T, Ts)``."""
        if x.ndim == 2:
            return self._forward_sequence(x, hidden, cell, encoder_outputs, mask, step)
        embedded = self.embedding(x.unsqueeze(1))  # (B,) -> (B, 1, H)
        weights = self.attention(hidden, encoder_outputs, mask, step=step)  # (B, Ts)
        context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, Ts) @ (B, Ts, H) -> (B, 1, H)
        rnn_input = torch.cat((embedded, context), dim=2)  # (B, 1, 2H)
        output, hidden, cell = lstm_step(self.rnn, rnn_input.squeeze(1), hidden, cell)  # (B, H)
        self.last_attn_weights = weights.detach()
        return self.fc(output), hidden, cell  # (B, H) -> (B, V)

    def _forward_sequence(
        self,
        x: torch.Tensor,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None,
        step: int,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """All ``T`` steps of ``x`` ``(B, T)``. The steps stay a loop (each query is the state
        the step before left), but embedding and output layer run once, on all ``T`` steps."""
        check_inputs(hidden, encoder_outputs, mask, self.hidden_size)
        embedded = self.embedding(x)  # (B, T) -> (B, T, H)
        outputs, all_weights = [], []
        for t in range(x.shape[1]):
            query = hidden[-1].unsqueeze(1)  # (B, 1, H): the top layer's previous state
            weights = self.attention.attend(query, encoder_outputs, mask, step + t)  # (B, 1, Ts)
            context = torch.bmm(weights, encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, H) -> (B, H)
            rnn_input = torch.cat((embedded[:, t], context), dim=1)  # (B, 2H)
            output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, H)
            outputs.append(output)
            all_weights.append(weights)
        self.last_attn_weights = torch.cat(all_weights, dim=1).detach()  # (B, T, Ts)
        return self.fc(torch.stack(outputs, dim=1)), hidden, cell  # (B, T, H) -> (B, T, V)


class LuongDecoder(nn.Module):
    """Luong et al. (2015, §3): step first, then attend with the new state.

    At step ``t`` the LSTM reads the embedded input token (and, with input feeding, the previous
    attentional state ``h̃_{t-1}``) and gives the new top-layer state ``h_t``. The attention
    module scores ``h_t`` against the encoder outputs, ``c_t`` is their weighted sum, and

    * ``h̃_t = tanh(W_c [c_t; h_t])`` (eq. 5), the *attentional* state,
    * ``logits_t = W_s h̃_t`` (eq. 6; ``fc``, with a bias).

    Compare :class:`DecoderWithAttention` (Bahdanau): there the previous state ``h_{t-1}`` is
    the query, and the context enters the LSTM instead of the output layer.

    Input feeding (§3.3) concatenates ``h̃_{t-1}`` with the next input token's embedding, so
    the decoder knows where it attended before; it makes the steps sequential. Without it all
    teacher-forced steps run as one LSTM call followed by one batched attention.

    A one-step call (``x`` of shape ``(B,)``) keeps ``h̃_t`` for the next call; ``step=0`` starts
    a new sequence (``h̃_{-1} = 0``). A call with ``x`` of shape ``(B, T)`` runs all ``T``
    teacher-forced steps at once and returns ``(B, T, V)`` logits.

    Args:
        vocab_size: target vocabulary size ``V``.
        hidden_size: ``H``.
        num_layers: ``L``.
        attention_module: any module of :mod:`attnlib.scorers` built for ``H``.
        input_feeding: feed ``h̃_{t-1}`` into step ``t`` (Luong et al. §3.3).
    """

    accepts_sequences = True

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        num_layers: int,
        attention_module: nn.Module,
        *,
        input_feeding: bool = True,
    ) -> None:
        super().__init__()
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_layers = check_positive_int("num_layers", num_layers)
        check_attention_size(attention_module, hidden_size)
        self.attention = attention_module
        self.input_feeding = bool(input_feeding)
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=hidden_size)
        self.rnn = nn.LSTM(
            input_size=hidden_size * (2 if self.input_feeding else 1),  # token (+ h̃_{t-1})
            hidden_size=hidden_size,
            num_layers=num_layers,
            batch_first=True,
        )
        self.W_c = nn.Linear(hidden_size * 2, hidden_size, bias=False)  # [c_t; h_t] -> h̃_t
        self.fc = nn.Linear(hidden_size, vocab_size)  # W_s
        self.last_attn_weights: torch.Tensor | None = None
        self._feed: torch.Tensor | None = None

    def __getstate__(self) -> dict:
        # h̃ of the last step may hold part of an autograd graph: never copy or pickle it.
        return {**super().__getstate__(), "_feed": None}

    def _attentional(
        self, outputs: torch.Tensor, encoder_outputs: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """From the top-layer states ``(B, T, H)`` and their weights ``(B, T, Ts)`` to the
        attentional states ``h̃`` ``(B, T, H)``; ``fc`` turns them into logits."""
        context = torch.bmm(weights, encoder_outputs)  # (B, T, Ts) @ (B, Ts, H) -> (B, T, H)
        return torch.tanh(self.W_c(torch.cat((context, outputs), dim=2)))  # (B, T, 2H) -> (B, T, H)

    def forward(
        self,
        x: torch.Tensor,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None = None,
        step: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Args: x ``(B,)`` input ids (one step) or ``(B, T)`` (all teacher-forced steps); hidden,
        cell ``(L, B, H)``; encoder_outputs ``(B, Ts, H)``; mask ``(B, Ts)`` True for real source
        tokens; step the output position ``t`` of ``x`` (of its first column).

        Returns: ``predictions`` ``(B, V)`` or ``(B, T, V)`` (logits) and the new ``hidden``,
        ``cell``. ``last_attn_weights`` holds ``(B, Ts)`` or ``(B, T, Ts)``."""
        if x.ndim == 2:
            return self._forward_sequence(x, hidden, cell, encoder_outputs, mask, step)
        b = x.shape[0]
        if step == 0 or self._feed is None or self._feed.shape[0] != b:
            self._feed = encoder_outputs.new_zeros(b, self.hidden_size)  # h̃_{-1} = 0
        rnn_input = self.embedding(x)  # (B,) -> (B, H)
        if self.input_feeding:
            rnn_input = torch.cat((rnn_input, self._feed), dim=1)  # (B, 2H)
        output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, H): h_t
        outputs = output.unsqueeze(1)  # (B, 1, H)
        weights = self.attention(hidden, encoder_outputs, mask, step=step)  # scores h_t = hidden[-1]: (B, Ts)
        attentional = self._attentional(outputs, encoder_outputs, weights.unsqueeze(1))  # (B, 1, H)
        self._feed = attentional.squeeze(1)  # (B, H): h̃_t, fed into step t + 1
        self.last_attn_weights = weights.detach()
        return self.fc(self._feed), hidden, cell  # (B, V)

    def _forward_sequence(
        self,
        x: torch.Tensor,
        hidden: torch.Tensor,
        cell: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None,
        step: int,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """All ``T`` steps of ``x`` ``(B, T)``: one LSTM call without input feeding, a loop with it."""
        check_inputs(hidden, encoder_outputs, mask, self.hidden_size)
        embedded = self.embedding(x)  # (B, T) -> (B, T, H)
        if not self.input_feeding:
            outputs, (hidden, cell) = self.rnn(embedded, (hidden, cell))  # (B, T, H): h_1 .. h_T
            weights = self.attention.attend(outputs, encoder_outputs, mask, step)  # (B, T, Ts)
            attentional = self._attentional(outputs, encoder_outputs, weights)  # (B, T, H)
        else:
            feed = encoder_outputs.new_zeros(x.shape[0], 1, self.hidden_size)  # h̃_{-1} = 0: (B, 1, H)
            all_feeds, all_weights = [], []
            for t in range(x.shape[1]):
                rnn_input = torch.cat((embedded[:, t], feed[:, 0]), dim=1)  # (B, 2H)
                output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, H)
                output = output.unsqueeze(1)  # (B, 1, H)
                weights = self.attention.attend(output, encoder_outputs, mask, step + t)  # (B, 1, Ts)
                feed = self._attentional(output, encoder_outputs, weights)  # (B, 1, H): h̃_t
                all_feeds.append(feed)
                all_weights.append(weights)
            attentional = torch.cat(all_feeds, dim=1)  # (B, T, H)
            weights = torch.cat(all_weights, dim=1)  # (B, T, Ts)
        self._feed = None
        self.last_attn_weights = weights.detach()
        return self.fc(attentional), hidden, cell  # (B, T, H) -> (B, T, V)


class Decoder(nn.Module):
    """The baseline decoder without attention: the source reaches it only through the
    initial state, one fixed-size vector whatever the input length.

    Args:
        vocab_size: target vocabulary size ``V``.
        hidden_size: ``H``.
        num_layers: ``L``.
    """

    accepts_sequences = True

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_layers = check_positive_int("num_layers", num_layers)
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
        """Same call as :meth:`DecoderWithAttention.forward`; ``encoder_outputs``, ``mask`` and
        ``step`` are ignored. ``x`` may also be ``(B, T)``: then all ``T`` teacher-forced steps
        run in one LSTM call and the predictions are ``(B, T, V)``."""
        if x.ndim == 1:  # one step: (B,)
            output, hidden, cell = lstm_step(self.rnn, self.embedding(x), hidden, cell)  # (B, H)
            return self.fc(output), hidden, cell  # (B, V)
        outputs, (hidden, cell) = self.rnn(self.embedding(x), (hidden, cell))  # (B, T, H)
        return self.fc(outputs), hidden, cell  # (B, T, V)


class Seq2Seq(nn.Module):
    """Encoder and decoder together (teacher forcing, greedy decoding).

    Args:
        encoder: an :class:`Encoder`.
        decoder: a :class:`DecoderWithAttention` or a :class:`Decoder`.
        device: kept for the classic signature; new tensors are made on ``src``'s device.
        teacher_forcing_ratio: chance that a training step feeds the true previous token
            rather than the model's own guess; used when ``forward`` gets no ratio.
        sos_id, eos_id, pad_id: special token ids of the target vocabulary.
    """

    def __init__(
        self,
        encoder: Encoder,
        decoder: nn.Module,
        device: torch.device | str,
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
        """Run the encoder; returns ``encoder_outputs`` ``(B, Ts, H)``, the decoder's initial
        ``hidden`` and ``cell`` ``(L, B, H)`` (both directions summed) and the source ``mask``
        ``(B, Ts)``, True for real tokens (None when the batch has no padding at all)."""
        encoder_outputs, hidden, cell = self.encoder(src)
        b, layers = src.shape[0], self.encoder.num_layers
        hidden = hidden.view(layers, 2, b, -1).sum(dim=1)  # (2L, B, H) -> (L, B, H)
        cell = cell.view(layers, 2, b, -1).sum(dim=1)  # (2L, B, H) -> (L, B, H)
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
            src: ``(B, Ts)`` source ids. trg: ``(B, Tt)`` target ids ``SOS ... EOS PAD...``.
            teacher_forcing_ratio: defaults to the model's ratio in training mode and to 1
                (always the true previous token) in eval mode.

        Returns:
            ``(B, Tt-1, V)`` logits. The weights of every step are kept in
            ``last_attn_weights`` ``(B, Tt-1, Ts)`` (None without attention).
        """
        if teacher_forcing_ratio is None:
            teacher_forcing_ratio = self.teacher_forcing_ratio if self.training else 1.0
        check_rank("trg", trg, (2,), "(B, Tt)")
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
        check_positive_int("max_len", max_len)
        was_training = self.training
        self.eval()
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
        self.train(was_training)
        return torch.stack(tokens, dim=1), (torch.stack(weights, dim=1) if weights else None)
