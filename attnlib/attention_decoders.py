"""RNN decoders with attention: Bahdanau's order and Luong's order.

Shapes: ``B`` batch, ``Ts`` source length, ``T`` decoder steps run at once, ``d_hid`` hidden size
(also the embedding width ``E`` here), ``L`` LSTM layers, ``V`` target vocabulary.

Taught in notebooks 08 (Bahdanau attention) and 09 (Luong attention).

* :class:`DecoderWithAttention` (Bahdanau et al., 2015): the attention module (any of
  :mod:`attnlib.scorers`) weighs the encoder outputs using the previous state, and the
  resulting context is concatenated with the embedded input token before the LSTM.
* :class:`LuongDecoder` (Luong et al., 2015): the LSTM steps first, its new state is the
  query, and ``tanh(W_c [c_t; h_t])`` predicts the token (optionally fed into the next step).

Both plug into :class:`attnlib.seq2seq.Seq2Seq` in place of the baseline
:class:`~attnlib.seq2seq.Decoder`, and take one step (``x`` of shape ``(B,)``) or all
teacher-forced steps (``(B, T)``) per call.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_positive_int
from .scorers import require_inputs
from .seq2seq import lstm_step

__all__ = ["DecoderWithAttention", "LuongDecoder", "require_attention_size"]


def require_attention_size(attention_module: nn.Module, hidden_size: int) -> None:
    """Raise unless ``attention_module`` was built for the decoder's ``hidden_size``."""
    size = getattr(attention_module, "hidden_size", None)
    if size != hidden_size:
        raise ValueError(
            f"attention_module was built for hidden_size={size}, the decoder has "
            f"hidden_size={hidden_size}; build both with the same d_hid"
        )


class DecoderWithAttention(nn.Module):
    """One decoding step with attention (Bahdanau et al., 2015, §3.1).

    Score, weights, context: the attention module turns the previous state into weights over
    the source; their weighted sum of encoder outputs is the context, which joins the embedded
    input token as the LSTM's input.

    Args:
        vocab_size: target vocabulary size ``V``.
        hidden_size: ``d_hid``.
        num_layers: ``L``.
        attention_module: any module of :mod:`attnlib.scorers` built for ``d_hid``.

    A call with ``x`` of shape ``(B, T)`` runs all ``T`` teacher-forced steps and returns
    ``(B, T, V)`` logits: the same steps, with the input tokens embedded and the outputs turned
    into logits once for all steps instead of once per step.
    """

    accepts_sequences = True

    def __init__(
        self, vocab_size: int, hidden_size: int, num_layers: int, attention_module: nn.Module
    ) -> None:
        super().__init__()
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.num_layers = require_positive_int("num_layers", num_layers)
        require_attention_size(attention_module, hidden_size)
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
        cell ``(L, B, d_hid)``; encoder_outputs ``(B, Ts, d_hid)``; mask ``(B, Ts)`` True for real source
        tokens; step the output position ``t`` of ``x`` (of its first column).

        Returns: ``predictions`` ``(B, V)`` or ``(B, T, V)`` (logits) and the new ``hidden``,
        ``cell``. ``last_attn_weights`` holds ``(B, Ts)`` or ``(B, T, Ts)``."""
        if x.ndim == 2:
            return self._forward_sequence(x, hidden, cell, encoder_outputs, mask, step)
        embedded = self.embedding(x.unsqueeze(1))  # (B,) -> (B, 1, d_hid)
        weights = self.attention(hidden, encoder_outputs, mask, step=step)  # (B, Ts)
        context = torch.bmm(
            weights.unsqueeze(1), encoder_outputs
        )  # (B, 1, Ts) @ (B, Ts, d_hid) -> (B, 1, d_hid)
        rnn_input = torch.cat((embedded, context), dim=2)  # (B, 1, 2 d_hid)
        output, hidden, cell = lstm_step(self.rnn, rnn_input.squeeze(1), hidden, cell)  # (B, d_hid)
        self.last_attn_weights = weights.detach()
        return self.fc(output), hidden, cell  # (B, d_hid) -> (B, V)

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
        require_inputs(hidden, encoder_outputs, mask, self.hidden_size)
        embedded = self.embedding(x)  # (B, T) -> (B, T, d_hid)
        outputs, all_weights = [], []
        for t in range(x.shape[1]):
            query = hidden[-1].unsqueeze(1)  # (B, 1, d_hid): the top layer's previous state
            weights = self.attention.attend(query, encoder_outputs, mask, step + t)  # (B, 1, Ts)
            context = torch.bmm(weights, encoder_outputs).squeeze(
                1
            )  # (B, 1, Ts) @ (B, Ts, d_hid) -> (B, d_hid)
            rnn_input = torch.cat((embedded[:, t], context), dim=1)  # (B, 2 d_hid)
            output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, d_hid)
            outputs.append(output)
            all_weights.append(weights)
        self.last_attn_weights = torch.cat(all_weights, dim=1).detach()  # (B, T, Ts)
        return self.fc(torch.stack(outputs, dim=1)), hidden, cell  # (B, T, d_hid) -> (B, T, V)


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
        hidden_size: ``d_hid``.
        num_layers: ``L``.
        attention_module: any module of :mod:`attnlib.scorers` built for ``d_hid``.
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
        self.hidden_size = require_positive_int("hidden_size", hidden_size)
        self.num_layers = require_positive_int("num_layers", num_layers)
        require_attention_size(attention_module, hidden_size)
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
        """From the top-layer states ``(B, T, d_hid)`` and their weights ``(B, T, Ts)`` to the
        attentional states ``h̃`` ``(B, T, d_hid)``; ``fc`` turns them into logits."""
        context = torch.bmm(weights, encoder_outputs)  # (B, T, Ts) @ (B, Ts, d_hid) -> (B, T, d_hid)
        return torch.tanh(self.W_c(torch.cat((context, outputs), dim=2)))  # (B, T, 2 d_hid) -> (B, T, d_hid)

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
        cell ``(L, B, d_hid)``; encoder_outputs ``(B, Ts, d_hid)``; mask ``(B, Ts)`` True for real source
        tokens; step the output position ``t`` of ``x`` (of its first column).

        Returns: ``predictions`` ``(B, V)`` or ``(B, T, V)`` (logits) and the new ``hidden``,
        ``cell``. ``last_attn_weights`` holds ``(B, Ts)`` or ``(B, T, Ts)``."""
        if x.ndim == 2:
            return self._forward_sequence(x, hidden, cell, encoder_outputs, mask, step)
        b = x.shape[0]
        if step == 0 or self._feed is None or self._feed.shape[0] != b:
            self._feed = encoder_outputs.new_zeros(b, self.hidden_size)  # h̃_{-1} = 0
        rnn_input = self.embedding(x)  # (B,) -> (B, d_hid)
        if self.input_feeding:
            rnn_input = torch.cat((rnn_input, self._feed), dim=1)  # (B, 2 d_hid)
        output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, d_hid): h_t
        outputs = output.unsqueeze(1)  # (B, 1, d_hid)
        weights = self.attention(hidden, encoder_outputs, mask, step=step)  # scores h_t = hidden[-1]: (B, Ts)
        attentional = self._attentional(outputs, encoder_outputs, weights.unsqueeze(1))  # (B, 1, d_hid)
        self._feed = attentional.squeeze(1)  # (B, d_hid): h̃_t, fed into step t + 1
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
        require_inputs(hidden, encoder_outputs, mask, self.hidden_size)
        embedded = self.embedding(x)  # (B, T) -> (B, T, d_hid)
        if not self.input_feeding:
            outputs, (hidden, cell) = self.rnn(embedded, (hidden, cell))  # (B, T, d_hid): h_1 .. h_T
            weights = self.attention.attend(outputs, encoder_outputs, mask, step)  # (B, T, Ts)
            attentional = self._attentional(outputs, encoder_outputs, weights)  # (B, T, d_hid)
        else:
            feed = encoder_outputs.new_zeros(x.shape[0], 1, self.hidden_size)  # h̃_{-1} = 0: (B, 1, d_hid)
            all_feeds, all_weights = [], []
            for t in range(x.shape[1]):
                rnn_input = torch.cat((embedded[:, t], feed[:, 0]), dim=1)  # (B, 2 d_hid)
                output, hidden, cell = lstm_step(self.rnn, rnn_input, hidden, cell)  # (B, d_hid)
                output = output.unsqueeze(1)  # (B, 1, d_hid)
                weights = self.attention.attend(output, encoder_outputs, mask, step + t)  # (B, 1, Ts)
                feed = self._attentional(output, encoder_outputs, weights)  # (B, 1, d_hid): h̃_t
                all_feeds.append(feed)
                all_weights.append(weights)
            attentional = torch.cat(all_feeds, dim=1)  # (B, T, d_hid)
            weights = torch.cat(all_weights, dim=1)  # (B, T, Ts)
        self._feed = None
        self.last_attn_weights = weights.detach()
        return self.fc(attentional), hidden, cell  # (B, T, d_hid) -> (B, T, V)
