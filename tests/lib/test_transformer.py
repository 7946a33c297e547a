"""The Transformer and its blocks against PyTorch's own: nn.Transformer, nn.LayerNorm, formulas."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnlib import decoding
from attnlib.blocks import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    PositionalEncoding,
    add_norm,
    sinusoidal_encoding,
)
from attnlib.masks import causal_mask, padding_mask, to_masked_out
from attnlib.torch_reference import to_torch_transformer
from attnlib.transformer import Transformer

PAD, SOS, EOS = 0, 1, 2
SRC_V, TGT_V = 20, 16


def small(**kw) -> Transformer:
    args = dict(dim=32, n_heads=4, n_layers=2, hidden_dim=64, max_seq_len=24)
    args.update(kw)
    return Transformer(SRC_V, TGT_V, **args)


def batch(seed: int = 0, b: int = 4, ts: int = 9, tt: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    """Random source and target ids with some padding (never a fully padded sequence)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, SRC_V, (b, ts), generator=g)
    tgt = torch.randint(3, TGT_V, (b, tt), generator=g)
    tgt[:, 0] = SOS
    for i in range(b):
        ls = int(torch.randint(2, ts + 1, (1,), generator=g))
        lt = int(torch.randint(2, tt + 1, (1,), generator=g))
        src[i, ls:] = PAD
        tgt[i, lt - 1] = EOS
        tgt[i, lt:] = PAD
    return src, tgt


# ----- positional encoding --------------------------------------------------------------------
def test_sinusoidal_encoding_matches_formula() -> None:
    max_len, dim = 50, 16
    pe = sinusoidal_encoding(max_len, dim)
    rows = []
    for pos in range(max_len):
        row = []
        for i in range(dim // 2):
            angle = pos / 10000 ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]  # columns 2i and 2i + 1
        rows.append(row)
    want = torch.tensor(rows, dtype=torch.float64)
    torch.testing.assert_close(pe.double(), want, atol=1e-5, rtol=0)


@settings(max_examples=25, deadline=None)
@given(pos=st.integers(0, 60), shift=st.integers(0, 30))
def test_shift_is_a_fixed_rotation(pos: int, shift: int) -> None:
    """PE[pos + k] is a linear map of PE[pos] that depends on k only: one 2-D rotation per pair."""
    dim = 8
    pe = sinusoidal_encoding(100, dim).double()
    freqs = 1.0 / 10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (D/2,)
    c, s = torch.cos(shift * freqs), torch.sin(shift * freqs)
    sin_p, cos_p = pe[pos, 0::2], pe[pos, 1::2]
    # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
    torch.testing.assert_close(pe[pos + shift, 0::2], sin_p * c + cos_p * s, atol=1e-5, rtol=0)
    torch.testing.assert_close(pe[pos + shift, 1::2], cos_p * c - sin_p * s, atol=1e-5, rtol=0)


def test_positional_encoding_is_a_buffer_added_to_x() -> None:
    module = PositionalEncoding(16, max_seq_len=30)
    assert "pe" in module.state_dict() and not list(module.parameters())
    x = torch.randn(2, 7, 16)
    torch.testing.assert_close(module(x), x + sinusoidal_encoding(30, 16)[:7])
    with pytest.raises(ValueError, match="more than max_seq_len=30"):
        module(torch.zeros(1, 31, 16))
    with pytest.raises(ValueError, match="even dim"):
        sinusoidal_encoding(10, 7)


# ----- feed-forward, LayerNorm, residual ---------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(dim=st.integers(1, 40), eps=st.sampled_from([1e-6, 1e-5, 1e-2]), seed=st.integers(0, 99))
def test_layer_norm_matches_torch(dim: int, eps: float, seed: int) -> None:
    torch.manual_seed(seed)
    ours, theirs = LayerNorm(dim, eps), nn.LayerNorm(dim, eps=eps)
    with torch.no_grad():
        ours.gamma.normal_(), ours.beta.normal_()
        theirs.weight.copy_(ours.gamma), theirs.bias.copy_(ours.beta)
    x = torch.randn(3, 5, dim) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)


def test_feed_forward_and_add_norm() -> None:
    torch.manual_seed(0)
    ff, norm = FeedForward(8, 32, dropout=0.0), LayerNorm(8)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(ff(x), ff.w2(torch.relu(ff.w1(x))))
    torch.testing.assert_close(add_norm(x, ff, norm, nn.Identity()), norm(x + ff(x)))
    torch.testing.assert_close(add_norm(x, ff, norm, nn.Identity(), norm_first=True), x + ff(norm(x)))


def test_layers_keep_shapes_and_weights() -> None:
    torch.manual_seed(0)
    enc, dec = EncoderLayer(16, 4, 32, 0.0), DecoderLayer(16, 4, 32, 0.0)
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    memory = enc(src)
    assert memory.shape == (2, 6, 16) and dec(tgt, memory).shape == (2, 4, 16)
    assert enc.attention.last_attn_weights.shape == (2, 4, 6, 6)
    assert dec.cross_attention.last_attn_weights.shape == (2, 4, 4, 6)
    future = dec.self_attention.last_attn_weights.triu(diagonal=1)
    assert torch.count_nonzero(future) == 0  # causal even without a tgt_mask


# ----- the whole model against nn.Transformer ------------------------------------------------------
@pytest.mark.parametrize(("norm_first", "final_norm"), [(False, False), (False, True), (True, True)])
def test_matches_torch_transformer(norm_first: bool, final_norm: bool) -> None:
    torch.manual_seed(1)
    model = small(norm_first=norm_first, final_norm=final_norm).eval()
    ref = to_torch_transformer(model).eval()
    if not final_norm:  # the paper has no norm after the stacks
        assert isinstance(ref.encoder.norm, nn.Identity) and isinstance(ref.decoder.norm, nn.Identity)
    src, tgt = batch(seed=2)
    tgt_in = tgt[:, :-1]
    embed = lambda emb, ids: model.pos_encoder(emb(ids) * math.sqrt(model.dim))  # noqa: E731
    with torch.no_grad():
        states = ref(
            embed(model.src_embedding, src),
            embed(model.tgt_embedding, tgt_in),
            tgt_mask=to_masked_out(causal_mask(tgt_in.shape[1])),  # torch: True = masked out
            src_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt_in == PAD,
            memory_key_padding_mask=src == PAD,
        )
        memory = ref.encoder(embed(model.src_embedding, src), src_key_padding_mask=src == PAD)
        torch.testing.assert_close(model(src, tgt), model.output(states), atol=1e-5, rtol=0)
        torch.testing.assert_close(model.encode(src), memory, atol=1e-5, rtol=0)


def test_reference_parameter_order_and_xavier_init() -> None:
    torch.manual_seed(0)
    model = small()
    names = [n for n, _ in model.named_parameters()]
    assert names[:3] == [
        "src_embedding.weight",
        "tgt_embedding.weight",
        "encoder_layers.0.attention.W_query.weight",
    ]
    for name, p in model.named_parameters():
        if p.dim() > 1:
            bound = math.sqrt(6 / (p.shape[0] + p.shape[1]))
            assert p.abs().max() <= bound, name
    assert "pos_encoder.pe" in model.state_dict()


# ----- masks: causality and padding --------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(position=st.integers(1, 5), new_token=st.integers(3, TGT_V - 1))
def test_decoder_is_causal(position: int, new_token: int) -> None:
    torch.manual_seed(0)
    model = small().eval()
    src, tgt = batch(seed=3)
    changed = tgt.clone()
    changed[:, position] = new_token
    before, after = model(src, tgt), model(src, changed)
    # logits at step t see tgt[:, :t + 1]; steps before `position` must not move
    torch.testing.assert_close(before[:, :position], after[:, :position], atol=0, rtol=0)


def test_padding_is_never_attended() -> None:
    torch.manual_seed(0)
    model = small().eval()
    src, tgt = batch(seed=4)
    logits = model(src, tgt)
    weights = model.attention_weights()
    src_pad = (src == PAD)[:, None, None, None, :]  # (B, 1, 1, 1, Ts)
    tgt_pad = (tgt[:, :-1] == PAD)[:, None, None, None, :]
    assert torch.count_nonzero(weights["encoder_self"].masked_select(src_pad)) == 0
    assert torch.count_nonzero(weights["cross"].masked_select(src_pad)) == 0
    assert torch.count_nonzero(weights["decoder_self"].masked_select(tgt_pad)) == 0
    # more padding on the source changes nothing
    longer = torch.cat([src, torch.full((src.shape[0], 5), PAD)], dim=1)
    # Longer rows change how the matmuls are blocked: equal up to float32 rounding (measured
    # 1.2e-6 on an AVX2 CPU), not bit for bit.
    torch.testing.assert_close(model(longer, tgt), logits, atol=1e-5, rtol=0)
    for w in weights.values():  # every query sees at least one real key
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))


# ----- decoding --------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_of_one_is_greedy(seed: int) -> None:
    torch.manual_seed(seed)
    model = small().eval()
    src, _ = batch(seed=seed, b=6)
    greedy, weights = model.greedy_decode(src, max_len=12)
    beam, scores = model.beam_search(src, max_len=12, beam_size=1)
    assert torch.equal(beam, greedy)
    assert weights.shape == (6, 2, 4, greedy.shape[1], src.shape[1])
    # the beam's score is the greedy sequence's log-probability under teacher forcing
    tgt = torch.cat([torch.full((6, 1), SOS), greedy], dim=1)
    log_probs = model(src, tgt).log_softmax(-1).gather(-1, greedy[..., None])[..., 0]
    is_eos = (greedy == EOS).long()
    real = (is_eos.cumsum(1) - is_eos) == 0  # up to and including the first EOS
    torch.testing.assert_close(scores, (log_probs * real).sum(-1), atol=1e-4, rtol=0)


def test_greedy_output_format() -> None:
    torch.manual_seed(0)
    model = small().eval()
    src, _ = batch(seed=5, b=8)
    tokens, _ = model.greedy_decode(src, max_len=10)
    assert tokens.shape[0] == 8 and tokens.shape[1] <= 10
    for row in tokens.tolist():
        if EOS in row:
            assert all(t == PAD for t in row[row.index(EOS) + 1 :])
    dropping = small(dropout=0.5).train()  # decoding switches dropout off, then restores the mode
    first, _ = dropping.greedy_decode(src, max_len=10)
    again, _ = dropping.beam_search(src, max_len=10, beam_size=1)
    assert torch.equal(first, again) and dropping.training


def test_the_decoding_methods_are_the_strategies_of_attnlib_decoding() -> None:
    torch.manual_seed(0)
    model = small(dropout=0.5).train()
    src, _ = batch(seed=8, b=5)
    tokens, weights = model.greedy_decode(src, max_len=10)
    tokens_again, scores = model.beam_search(src, max_len=10, beam_size=3, length_penalty=0.6)
    assert model.training and not scores.requires_grad  # mode restored, no graph kept
    model.eval()
    with torch.no_grad():
        src_mask = padding_mask(src, PAD)
        memory = model.encode(src, src_mask)
        assert torch.equal(decoding.greedy_search(model, memory, src_mask, 10), tokens)
        assert torch.equal(model.attention_weights()["cross"], weights)
        same_tokens, same_scores = decoding.beam_search(model, memory, src_mask, 10, 3, 0.6)
    assert torch.equal(tokens_again, same_tokens) and torch.equal(scores, same_scores)


def test_a_search_reaches_the_model_only_through_next_log_probs() -> None:
    class Table:  # a Searchable that is no Transformer: the next token is always the last + 1
        sos_id, eos_id, pad_id, tgt_vocab_size = 1, 4, 0, 6

        def next_log_probs(self, ys, memory, src_mask):
            return torch.log_softmax(
                10.0 * torch.nn.functional.one_hot((ys[:, -1] + 1) % 6, 6).float(), dim=-1
            )

    memory, src_mask = torch.zeros(2, 3, 8), torch.ones(2, 1, 1, 3, dtype=torch.bool)
    assert decoding.greedy_search(Table(), memory, src_mask, 5).tolist() == [[2, 3, 4]] * 2
    tokens, _ = decoding.beam_search(Table(), memory, src_mask, 5, beam_size=2)
    assert tokens.tolist() == [[2, 3, 4, 0, 0]] * 2  # PAD after EOS while the other beam ran on


def test_overfits_a_small_batch() -> None:
    torch.manual_seed(0)
    model = small(dim=32, n_layers=1, dropout=0.0)
    src, tgt = batch(seed=6, b=8, ts=8, tt=6)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(120):
        logits = model(src, tgt)
        loss = nn.functional.cross_entropy(logits.transpose(1, 2), tgt[:, 1:], ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    tokens, _ = model.eval().greedy_decode(src, max_len=tgt.shape[1] - 1)
    assert torch.equal(tokens, tgt[:, 1 : 1 + tokens.shape[1]])


# ----- bad input -------------------------------------------------------------------------------
def test_bad_input_gives_clear_errors() -> None:
    model = small().eval()
    src, tgt = batch(seed=7)
    with pytest.raises(ValueError, match=r"src ids in \[0, 20\).*got ids from 0 to 25"):
        model(src.masked_fill(src == 5, 25), tgt)
    with pytest.raises(ValueError, match=r"tgt ids in \[0, 16\)"):
        model(src, tgt - 1)
    with pytest.raises(TypeError, match="integer token ids"):
        model(src.float(), tgt)
    with pytest.raises(ValueError, match="30 tokens, more than max_seq_len=24"):
        model(torch.ones(2, 30, dtype=torch.long), tgt[:2])
    with pytest.raises(ValueError, match="max_seq_len=24"):
        model.greedy_decode(src, max_len=25)
    with pytest.raises(ValueError, match="dim=30 is not divisible by n_heads=4"):
        Transformer(SRC_V, TGT_V, dim=30, n_heads=4)
    with pytest.raises(ValueError, match=r"src_mask of shape .*got \(4, 9\)"):
        model.encode(src, src != PAD)
    with pytest.raises(ValueError, match=r"tgt_mask of shape .*got \(4, 1, 7, 7\)"):
        memory = model.encode(src)
        model.decode(tgt[:, :-1], memory, None, torch.ones(4, 1, 7, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean mask"):
        model.encode(src, (src != PAD)[:, None, None, :].long())
    with pytest.raises(ValueError, match=r"\(B, T\) token ids"):
        model.encode(src[0])
