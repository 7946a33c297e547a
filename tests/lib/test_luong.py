"""LuongDecoder follows Luong et al. (2015, §3): step, attend with h_t, h̃_t = tanh(W_c[c_t; h_t])."""

from __future__ import annotations

import copy

import pytest
import torch

from attnlib.attention_decoders import LuongDecoder
from attnlib.data import PAD_ID
from attnlib.local_attention import SCORERS, make_attention
from attnlib.seq2seq import Encoder, Seq2Seq
from tests.lib.decoding import decode_step_by_step

V, H = 11, 6


def make_model(name: str = "general", *, feeding: bool = True, layers: int = 1) -> Seq2Seq:
    torch.manual_seed(0)
    decoder = LuongDecoder(V, H, layers, make_attention(name, H, half_window=1), input_feeding=feeding)
    return Seq2Seq(Encoder(V, H, layers), decoder, "cpu", teacher_forcing_ratio=1.0)


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.tensor([[4, 5, 6, 7, 8], [9, 4, 5, PAD_ID, PAD_ID]])  # (B, Ts): row 1 padded
    tgt = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 9, 2, PAD_ID]])  # (B, Tt)
    return src, tgt


def lstm_by_hand(lstm: torch.nn.LSTM, x, h, c):
    """One step of a one-layer LSTM from its gate equations (PyTorch's gate order i, f, g, o)."""
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


@pytest.mark.parametrize("feeding", [True, False])
def test_two_steps_follow_luongs_equations(feeding):
    """Step t: h_t from the LSTM (input: token, and h̃_{t-1} with input feeding); a_t from the
    general score h_tᵀ W_a h̄_s (eq. 8) over real tokens; c_t = Σ a_t(s) h̄_s; h̃_t = tanh(W_c[c_t; h_t])
    (eq. 5); logits = W_s h̃_t (eq. 6)."""
    model = make_model(feeding=feeding)
    src, tgt = padded_batch()
    keys, hidden, cell, mask = model.encode(src)
    dec = model.decoder
    h, c = hidden[0], cell[0]  # (B, H)
    feed = torch.zeros(2, H)
    for t in range(2):
        logits, hidden, cell = dec(tgt[:, t], hidden, cell, keys, mask, step=t)
        x = dec.embedding(tgt[:, t])
        x = torch.cat((x, feed), dim=1) if feeding else x
        h, c = lstm_by_hand(dec.rnn, x, h, c)
        scores = torch.einsum("bh,bsh->bs", h, dec.attention.W_a(keys)).masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, Ts)
        context = torch.einsum("bs,bsh->bh", weights, keys)
        feed = torch.tanh(torch.cat((context, h), dim=1) @ dec.W_c.weight.T)  # h̃_t
        torch.testing.assert_close(hidden[0], h)
        torch.testing.assert_close(dec.last_attn_weights, weights)
        torch.testing.assert_close(logits, dec.fc(feed))
    assert (dec.last_attn_weights[1, 3:] == 0).all()  # padding


@pytest.mark.parametrize("name", SCORERS)
@pytest.mark.parametrize("feeding", [True, False])
def test_sequence_call_equals_step_by_step(name, feeding):
    model = make_model(name, feeding=feeding, layers=2)
    src, tgt = padded_batch()
    fast = model(src, tgt)  # teacher forcing: one decoder call for all steps
    fast_weights = model.last_attn_weights
    slow, slow_weights = decode_step_by_step(model, src, tgt)
    torch.testing.assert_close(fast, slow)
    torch.testing.assert_close(fast_weights, slow_weights)


def test_input_feeding_widens_the_lstm_input_and_changes_the_output():
    fed, plain = make_model(feeding=True), make_model(feeding=False)
    assert fed.decoder.rnn.input_size == 2 * H and plain.decoder.rnn.input_size == H
    extra = sum(p.numel() for p in fed.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == 4 * H * H  # the LSTM's input weights meet H more features, for 4 gates


def test_step_zero_starts_a_new_sequence():
    model = make_model()
    src, _ = padded_batch()
    first = model.greedy_decode(src, 6)
    again = model.greedy_decode(src, 6)  # h̃ left over from the first run must not leak in
    torch.testing.assert_close(first[0], again[0])
    torch.testing.assert_close(first[1], again[1])


def test_gradients_reach_every_part_and_a_trained_model_copies():
    model = make_model("concat")
    src, tgt = padded_batch()
    model(src, tgt, teacher_forcing_ratio=0.5).sum().backward()  # step by step: h̃ kept with a graph
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    twin = copy.deepcopy(model)
    torch.testing.assert_close(twin.greedy_decode(src, 5)[0], model.greedy_decode(src, 5)[0])


def test_mismatched_attention_size_raises():
    with pytest.raises(ValueError, match="hidden_size=4"):
        LuongDecoder(V, H, 1, make_attention("dot", 4))


def test_the_step_diagram_draws_the_lstm_inputs_luongs_decoder_uses():
    import matplotlib.pyplot as plt

    from attnlib.viz import decoder_step_diagram

    texts = [t.get_text() for t in decoder_step_diagram("luong").texts]
    plt.close("all")
    # The LSTM reads its previous state and memory cell (not labelled c, the context's symbol)
    # and [y_{t-1}; h~_{t-1}]: an input 2H wide with input feeding (the default drawn), H without
    # it (the "optional" of the dashed arrow, which carries h~_t to step t+1).
    assert "$h_{t-1}$ and its cell" in texts
    assert not any("c_{t-1}" in t for t in texts)
    assert any("t+1" in t and "optional" in t for t in texts)
    assert any("y_{t-1}" in t and r"\tilde h_{t-1}" in t for t in texts)
    assert any("optional" in t for t in texts)
    assert make_model(feeding=True).decoder.rnn.input_size == 2 * H
    assert make_model(feeding=False).decoder.rnn.input_size == H
