"""Encoder, attention scorers, decoders and Seq2Seq of attnlib (Bahdanau et al., 2015; Luong et al., 2015)."""

from __future__ import annotations

import copy
import io
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnlib.attention_decoders import DecoderWithAttention
from attnlib.data import EOS_ID, PAD_ID, SOS_ID, Vocab
from attnlib.local_attention import SCORERS, HardAttention, LocalAttention, make_attention
from attnlib.scorers import AttentionGeneral, AttentionParams, AttentionSimple
from attnlib.seq2seq import Decoder, Encoder, Seq2Seq, lstm_step, translate
from tests.lib.decoding import decode_step_by_step

H, V = 8, 13


def make_model(attention: str | None = "concat", layers: int = 1, seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    encoder = Encoder(V, H, layers)
    if attention is None:
        decoder = Decoder(V, H, layers)
    else:
        decoder = DecoderWithAttention(V, H, layers, make_attention(attention, H, half_window=1))
    return Seq2Seq(encoder, decoder, "cpu")


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.tensor([[4, 5, 6, 7, 8], [9, 10, 11, PAD_ID, PAD_ID], [12, 4, 5, 6, PAD_ID]])
    tgt = torch.tensor([[SOS_ID, 4, 5, EOS_ID], [SOS_ID, 6, EOS_ID, PAD_ID], [SOS_ID, 7, 8, EOS_ID]])
    return src, tgt


# --- the classic from-scratch modules, rewritten here to pin attnlib to them ------------
class RefEncoder(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.LSTM(hidden_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, hidden_size)

    def forward(self, x):
        outputs, (hidden, cell) = self.rnn(self.embedding(x))
        return torch.tanh(self.fc(outputs)), hidden, cell


class RefAttentionSimple(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.register_buffer("scale_factor", torch.sqrt(torch.FloatTensor([hidden_size])))

    def forward(self, hidden, encoder_outputs):
        energy = torch.bmm(hidden[-1].unsqueeze(1), encoder_outputs.transpose(1, 2)) / self.scale_factor
        return torch.softmax(energy, dim=2).squeeze(1)


class RefAttentionParams(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.attn = nn.Linear(hidden_size * 2, hidden_size)
        self.v = nn.Parameter(torch.rand(hidden_size))

    def forward(self, hidden, encoder_outputs):
        repeated = hidden[-1].unsqueeze(1).repeat(1, encoder_outputs.shape[1], 1)
        energy = torch.tanh(self.attn(torch.cat((repeated, encoder_outputs), dim=2)))
        return torch.softmax(torch.sum(self.v * energy, dim=2), dim=1)


class RefDecoder(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, attention_module):
        super().__init__()
        self.attention = attention_module
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.LSTM(hidden_size * 2, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden, cell, encoder_outputs):
        a = self.attention(hidden, encoder_outputs).unsqueeze(1)
        rnn_input = torch.cat((self.embedding(x.unsqueeze(1)), torch.bmm(a, encoder_outputs)), dim=2)
        outputs, (hidden, cell) = self.rnn(rnn_input, (hidden, cell))
        return self.fc(outputs.squeeze(1)), hidden, cell


@pytest.mark.parametrize(
    ("ours", "ref"), [(AttentionSimple, RefAttentionSimple), (AttentionParams, RefAttentionParams)]
)
def test_same_seed_gives_the_reference_tensors(ours, ref):
    """Same seed, same creation order: the classic encoder, attention and decoder."""
    src = torch.randint(1, V, (4, 6))
    torch.manual_seed(42)
    enc, dec = Encoder(V, H, 2), DecoderWithAttention(V, H, 2, ours(H))
    torch.manual_seed(42)
    ref_enc, ref_dec = RefEncoder(V, H, 2), RefDecoder(V, H, 2, ref(H))
    outputs, hidden, cell = enc(src)
    ref_outputs, ref_hidden, ref_cell = ref_enc(src)
    torch.testing.assert_close(cell, ref_cell)
    torch.testing.assert_close(outputs, ref_outputs)
    torch.testing.assert_close(hidden, ref_hidden)
    h, c = hidden.view(2, 2, 4, H).sum(1), cell.view(2, 2, 4, H).sum(1)
    x = torch.tensor([SOS_ID] * 4)
    torch.testing.assert_close(dec(x, h, c, outputs)[0], ref_dec(x, h, c, outputs)[0])
    torch.testing.assert_close(dec.attention(h, outputs), ref_dec.attention(h, outputs))


def test_shapes():
    src, tgt = padded_batch()
    model = make_model(layers=2)
    outputs, hidden, cell = model.encoder(src)
    assert outputs.shape == (3, 5, H) and hidden.shape == cell.shape == (4, 3, H)
    logits = model(src, tgt)
    assert logits.shape == (3, 3, V)  # Tt - 1 steps, predicting tgt[:, 1:]
    assert model.last_attn_weights.shape == (3, 3, 5)
    tokens, weights = model.greedy_decode(src, max_len=6)
    assert tokens.shape[0] == 3 and tokens.shape[1] <= 6
    assert weights.shape == (*tokens.shape, 5)


def test_encoder_skips_padding():
    """A padded sequence encodes exactly as it does alone (the backward LSTM starts at its end)."""
    src, _ = padded_batch()
    model = make_model()
    outputs, hidden, _ = model.encoder(src)
    alone, alone_hidden, _ = model.encoder(src[1:2, :3])
    torch.testing.assert_close(outputs[1, :3], alone[0])
    torch.testing.assert_close(hidden[:, 1], alone_hidden[:, 0])


def direct_scores(name: str, module: nn.Module, q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Each score written out one (query, key) pair at a time."""
    b, ts, h = keys.shape
    out = torch.empty(b, ts)
    for i in range(b):
        for j in range(ts):
            qi, kj = q[i], keys[i, j]
            if name == "dot":
                out[i, j] = qi @ kj
            elif name == "scaled_dot":
                out[i, j] = qi @ kj / math.sqrt(h)
            elif name == "general":
                out[i, j] = qi @ module.W_a.weight @ kj
            else:
                out[i, j] = module.v @ torch.tanh(module.attn.weight @ torch.cat([qi, kj]) + module.attn.bias)
    return out


@pytest.mark.parametrize("name", ["dot", "scaled_dot", "general", "concat"])
def test_each_scorer_agrees_with_its_formula(name):
    torch.manual_seed(0)
    module = make_attention(name, H)
    hidden, keys = torch.randn(2, 3, H), torch.randn(3, 5, H)
    expected = direct_scores(name, module, hidden[-1], keys)
    torch.testing.assert_close(module.score(hidden[-1][:, None], keys)[:, 0], expected)
    torch.testing.assert_close(module(hidden, keys), torch.softmax(expected, dim=-1))
    torch.testing.assert_close(module.last_attn_weights, torch.softmax(expected, dim=-1))


@pytest.mark.parametrize("name", SCORERS)
def test_padding_never_receives_attention(name):
    torch.manual_seed(0)
    module = make_attention(name, H, half_window=2)
    keys = torch.randn(3, 7, H)
    mask = torch.arange(7)[None, :] < torch.tensor([[7], [5], [3]])  # (B, Ts)
    for step in range(4):
        weights = module(torch.randn(1, 3, H), keys, mask, step=step)
        assert (weights[~mask] == 0).all()
        assert (weights >= 0).all() and (weights.sum(-1) <= 1 + 1e-6).all()
        if not name.startswith("local"):
            torch.testing.assert_close(weights.sum(-1), torch.ones(3))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(0, 12), st.sampled_from(["m", "p"]), st.integers(0, 10_000))
def test_local_window_is_respected(half_window, step, mode, seed):
    half_window = max(half_window, 1 if mode == "p" else 0)  # local-p needs D >= 1
    torch.manual_seed(seed)
    ts = 2 * half_window + 1 + 5
    module = LocalAttention(H, half_window, mode=mode)
    weights = module(torch.randn(1, 2, H), torch.randn(2, ts, H), step=step)  # (B, Ts)
    centre = module.last_positions.round()[:, 0]  # (B,)
    if mode == "m":
        assert (module.last_positions == step).all()
    else:
        assert ((module.last_positions >= 0) & (module.last_positions <= ts)).all()
    outside = (torch.arange(ts)[None, :] - centre[:, None]).abs() > half_window
    assert (weights[outside] == 0).all()
    assert (weights > 0).sum(-1).max() <= 2 * half_window + 1


def test_local_p_uses_a_gaussian_of_sigma_d_over_2():
    torch.manual_seed(0)
    module = LocalAttention(H, 2, mode="p")
    query, keys = torch.randn(1, 1, H), torch.randn(1, 9, H)
    weights = module.attend(query, keys)[0, 0]
    p = module.last_positions[0, 0]
    window = (torch.arange(9) - p.round()).abs() <= 2
    soft = torch.softmax(module.scorer.score(query, keys)[0, 0][window], dim=-1)
    gauss = torch.exp(-((torch.arange(9)[window] - p) ** 2) / (2 * 1.0**2))
    torch.testing.assert_close(weights[window], soft * gauss)
    torch.testing.assert_close(p, 9 * torch.sigmoid(module.v_p(torch.tanh(module.W_p(query))))[0, 0, 0])


def test_hard_attention_is_one_hot_and_blocks_gradients():
    torch.manual_seed(0)
    soft = AttentionGeneral(H)
    hard = HardAttention(soft)
    hidden, keys = torch.randn(1, 4, H), torch.randn(4, 6, H)
    mask = torch.arange(6)[None, :] < torch.tensor([[6], [4], [2], [1]])
    weights = hard(hidden, keys, mask)
    assert torch.equal(weights.sum(-1), torch.ones(4))
    assert torch.equal(weights.argmax(-1), soft(hidden, keys, mask).argmax(-1))
    assert (weights[~mask] == 0).all()
    assert not weights.requires_grad  # no path back to W_a: backprop cannot train it


def test_additive_score_is_the_papers_two_matrix_form():
    """Bahdanau et al. (2015, A.1.2) write v_aᵀ tanh(W_a s + U_a h_j): AttentionParams' one matrix on
    [s; h_j] is W = [W_a U_a] (plus nn.Linear's bias, which the paper leaves out of its equations)."""
    torch.manual_seed(0)
    module = AttentionParams(H)
    query, keys = torch.randn(2, 3, H), torch.randn(2, 5, H)  # (B, Tq, H), (B, Ts, H)
    w_a, u_a = module.attn.weight[:, :H], module.attn.weight[:, H:]
    energy = (query @ w_a.T)[:, :, None] + (keys @ u_a.T)[:, None] + module.attn.bias  # (B, Tq, Ts, H)
    torch.testing.assert_close(module.score(query, keys), torch.tanh(energy) @ module.v)


def test_cached_key_projection_follows_parameter_updates():
    torch.manual_seed(0)
    module = AttentionParams(H)
    hidden, keys = torch.randn(1, 2, H), torch.randn(2, 5, H)
    before = module(hidden, keys)
    with torch.no_grad():
        module.attn.weight.mul_(2.0)
    torch.testing.assert_close(
        module(hidden, keys), torch.softmax(module.score(hidden[-1][:, None], keys)[:, 0], -1)
    )
    assert not torch.allclose(before, module(hidden, keys))


def test_models_copy_and_pickle_right_after_a_training_step():
    src, tgt = padded_batch()
    model = make_model("general")
    model(src, tgt).sum().backward()  # the scorer now caches keys that carry a graph
    twin = copy.deepcopy(model)
    assert twin.decoder.attention._key_cache is None
    torch.testing.assert_close(twin.greedy_decode(src, 5)[0], model.greedy_decode(src, 5)[0])
    buffer = io.BytesIO()
    torch.save(model, buffer)
    assert buffer.tell() > 0


def test_greedy_decoding_stops_at_eos():
    """A stub decoder says EOS at step 1 for row 0 and at step 3 for row 1."""

    class Stub(nn.Module):
        hidden_size, num_layers, attention = H, 1, None
        last_attn_weights = None

        def forward(self, x, hidden, cell, encoder_outputs=None, mask=None, step=0):
            logits = torch.zeros(2, V)
            logits[:, 5 + step] = 1.0
            logits[torch.tensor([step == 1, step == 3]), EOS_ID] = 2.0
            return logits, hidden, cell

    torch.manual_seed(0)
    model = Seq2Seq(Encoder(V, H, 1), Stub(), "cpu")
    tokens, weights = model.greedy_decode(torch.tensor([[4, 5], [6, 7]]), max_len=10)
    assert weights is None
    assert tokens.tolist() == [[5, EOS_ID, PAD_ID, PAD_ID], [5, 6, 7, EOS_ID]]


def test_the_device_argument_is_optional_and_changes_nothing():
    torch.manual_seed(0)
    with_device = Seq2Seq(Encoder(V, H, 1), Decoder(V, H, 1), "cpu")
    torch.manual_seed(0)
    without = Seq2Seq(Encoder(V, H, 1), Decoder(V, H, 1))
    src, tgt = padded_batch()
    torch.testing.assert_close(with_device.eval()(src, tgt), without.eval()(src, tgt), rtol=0, atol=0)
    assert without.device is None


def test_translate_reads_one_string_as_greedy_decode_writes_it():
    vocab = Vocab("abcdefghij")
    model = make_model()  # attention over a batch of one: weights (T, Ts)
    output, weights, src_labels, out_labels = translate(model, "abc", vocab, vocab, max_len=6)
    tokens, all_weights = model.greedy_decode(torch.tensor([vocab.encode("abc")]), 6)
    assert output == vocab.decode(tokens[0].tolist()) and src_labels == vocab.tokens(vocab.encode("abc"))
    assert len(out_labels) == weights.shape[0] <= 6 and weights.shape[1] == len(src_labels)
    torch.testing.assert_close(weights, all_weights[0, : len(out_labels)])


def test_greedy_weights_are_zero_after_eos_and_rows_sum_to_one_before():
    model = make_model()
    src, _ = padded_batch()
    tokens, weights = model.greedy_decode(src, max_len=8)
    alive = torch.ones_like(tokens, dtype=torch.bool)
    alive[:, 1:] = (tokens[:, :-1] != EOS_ID).cumprod(dim=1).bool()
    torch.testing.assert_close(weights.sum(-1), alive.float())
    assert (weights[1, :, 3:] == 0).all()  # row 1's padding


def test_teacher_forcing_ratio():
    src, tgt = padded_batch()
    model = make_model()
    model.eval()
    forced = model(src, tgt)
    torch.testing.assert_close(model(src, tgt, teacher_forcing_ratio=1.0), forced)  # eval default
    free = model(src, tgt, teacher_forcing_ratio=0.0)
    torch.testing.assert_close(free[:, 0], forced[:, 0])  # the first input is SOS either way
    assert not torch.allclose(free, forced)


@pytest.mark.parametrize("name", SCORERS)
def test_attention_decoder_sequence_call_equals_step_by_step(name):
    src, tgt = padded_batch()
    model = make_model(name, layers=2)
    fast = model(src, tgt, teacher_forcing_ratio=1.0)  # one decoder call for all steps
    fast_weights = model.last_attn_weights
    fast.square().sum().backward()
    fast_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    slow, slow_weights = decode_step_by_step(model, src, tgt)
    torch.testing.assert_close(fast, slow)
    torch.testing.assert_close(fast_weights, slow_weights)
    slow.square().sum().backward()
    for fast_grad, p in zip(fast_grads, model.parameters(), strict=True):
        torch.testing.assert_close(fast_grad, p.grad)


def test_baseline_fast_path_equals_step_by_step():
    src, tgt = padded_batch()
    model = make_model(attention=None, layers=2)
    fast = model(src, tgt, teacher_forcing_ratio=1.0)
    _, hidden, cell, _ = model.encode(src)
    steps = []
    for t in range(tgt.shape[1] - 1):
        out, hidden, cell = model.decoder(tgt[:, t], hidden, cell)
        steps.append(out)
    torch.testing.assert_close(fast, torch.stack(steps, 1))
    assert model.greedy_decode(src, 4)[1] is None


def test_unknown_scorer_raises():
    with pytest.raises(ValueError, match="unknown attention 'cosine'; expected one of dot"):
        make_attention("cosine", H)


def test_local_p_needs_a_positive_half_window():
    with pytest.raises(ValueError, match="local-p needs half_window D >= 1"):
        LocalAttention(H, 0, mode="p")
    weights = LocalAttention(H, 0, mode="m")(torch.randn(1, 2, H), torch.randn(2, 5, H), step=2)
    assert torch.equal(weights, torch.tensor([[0.0, 0, 1, 0, 0]] * 2))  # D = 0: one position


def test_window_larger_than_the_source_raises():
    module = LocalAttention(H, 3, mode="m")
    with pytest.raises(ValueError, match=r"2D\+1=7 .* larger than the source length Ts=5"):
        module(torch.randn(1, 2, H), torch.randn(2, 5, H))


def test_mismatched_hidden_sizes_raise():
    with pytest.raises(ValueError, match="hidden_size=4, the decoder has hidden_size=8"):
        DecoderWithAttention(V, H, 1, AttentionParams(4))
    with pytest.raises(ValueError, match="agree on hidden_size, got 16 and 8"):
        Seq2Seq(Encoder(V, 16, 1), Decoder(V, H, 1), "cpu")
    with pytest.raises(ValueError, match="agree on num_layers"):
        Seq2Seq(Encoder(V, H, 2), Decoder(V, H, 1), "cpu")
    with pytest.raises(ValueError, match="with d_hid=8"):
        AttentionSimple(H)(torch.randn(1, 2, 4), torch.randn(2, 5, 4))


def test_bad_token_ids_and_empty_sequences_raise():
    model = make_model()
    with pytest.raises(ValueError, match=r"ids in \[0, 13\) .* got ids from 4 to 13"):
        model.encoder(torch.tensor([[4, 13]]))
    with pytest.raises(ValueError, match=r"ids in \[0, 13\)"):
        model.encoder(torch.tensor([[-1, 4]]))
    with pytest.raises(ValueError, match=r"sequences \[1\] are empty"):
        model.encoder(torch.tensor([[4, 5], [PAD_ID, PAD_ID]]))
    with pytest.raises(ValueError, match="non-empty"):
        model.encoder(torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="integer token ids"):
        model.encoder(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="Tt >= 2"):
        model(torch.tensor([[4, 5]]), torch.tensor([[SOS_ID]]))


@pytest.mark.parametrize(("layers", "dropout", "bias"), [(1, 0.0, True), (2, 0.3, True), (2, 0.0, False)])
def test_lstm_step_is_nn_lstm_bit_for_bit(layers, dropout, bias):
    torch.manual_seed(0)
    rnn = nn.LSTM(6, 5, num_layers=layers, dropout=dropout, bias=bias, batch_first=True)
    x = torch.randn(4, 6, requires_grad=True)
    hidden, cell = torch.randn(layers, 4, 5), torch.randn(layers, 4, 5)
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False  # PyTorch's own kernels, which lstm_step uses
    try:
        torch.manual_seed(1)  # the same dropout masks
        out, (h, c) = rnn(x.unsqueeze(1), (hidden, cell))
        grads = torch.autograd.grad(out.square().sum() + c.sum(), [x, rnn.weight_hh_l0])
    finally:
        torch.backends.mkldnn.enabled = before
    torch.manual_seed(1)
    out_step, h_step, c_step = lstm_step(rnn, x, hidden, cell)
    grads_step = torch.autograd.grad(out_step.square().sum() + c_step.sum(), [x, rnn.weight_hh_l0])
    assert torch.equal(out_step, out.squeeze(1)) and torch.equal(h_step, h) and torch.equal(c_step, c)
    assert all(torch.equal(a, b) for a, b in zip(grads, grads_step, strict=True))


def test_lstm_step_rejects_what_it_cannot_run():
    with pytest.raises(ValueError, match="one-directional"):
        lstm_step(
            nn.LSTM(6, 5, bidirectional=True), torch.zeros(2, 6), torch.zeros(2, 2, 5), torch.zeros(2, 2, 5)
        )
    with pytest.raises(ValueError, match=r"expected x of shape \(B, 6\) \(one step\), got \(2, 1, 6\)"):
        lstm_step(nn.LSTM(6, 5), torch.zeros(2, 1, 6), torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
