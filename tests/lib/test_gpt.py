"""The GPT is causal, its KV cache changes nothing but the speed, and sampling does what it says."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib
from attnlib.data import PairDataset, Vocab
from attnlib.gpt import GPT, NextTokenModel, complete
from attnlib.kv_cache import KVCache, cached_attention
from attnlib.memory import kv_cache_bytes
from attnlib.sampling import next_token_probs, sample_next, top_k_logits, top_p_logits
from attnlib.tasks import addition_lines, addition_split
from attnlib.training import sequence_loss

V, CONTEXT = 11, 24


def small_gpt(seed: int = 0, **kwargs) -> GPT:
    torch.manual_seed(seed)
    model = GPT(V, CONTEXT, dim=16, n_heads=4, n_layers=2, **kwargs).eval()
    # N(0, 0.02) weights give almost flat distributions; larger ones make sampling and ties meaningful.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.5)
    return model


def prompt(b: int = 2, t: int = 5, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (b, t), generator=torch.Generator().manual_seed(seed))


# --- the model ---------------------------------------------------------------------------


def test_forward_shape_and_parts():
    model = small_gpt()
    assert model(prompt(3, 7)).shape == (3, 7, V)
    block = model.blocks[0]
    assert type(block.attention) is attnlib.MultiHeadAttention and block.attention.causal
    assert isinstance(block.feed_forward, attnlib.FeedForward) and isinstance(
        block.attention_norm, attnlib.LayerNorm
    )
    assert model.head.bias is None and model.position_embedding.weight.shape == (CONTEXT, 16)


def test_forward_equals_the_blocks_written_out():
    # Pre-LN, written with torch's own attention and layer norm; attnlib's LayerNorm uses eps=1e-6.
    model = small_gpt()
    idx = prompt(2, 6)
    x = model.token_embedding(idx) + model.position_embedding(torch.arange(6))
    for block in model.blocks:
        a = block.attention
        h = F.layer_norm(x, (16,), block.attention_norm.gamma, block.attention_norm.beta, 1e-6)
        q, k, v = (proj(h).view(2, 6, 4, 4).transpose(1, 2) for proj in (a.W_query, a.W_key, a.W_value))
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 6, 16)
        x = x + a.out_proj(context)
        h = F.layer_norm(x, (16,), block.ffn_norm.gamma, block.ffn_norm.beta, 1e-6)
        x = x + block.feed_forward.w2(torch.relu(block.feed_forward.w1(h)))
    x = F.layer_norm(x, (16,), model.final_norm.gamma, model.final_norm.beta, 1e-6)
    torch.testing.assert_close(model(idx), model.head(x))


@settings(max_examples=25, deadline=None)
@given(t=st.integers(2, 12), cut=st.integers(0, 10), seed=st.integers(0, 1000))
def test_logits_at_t_do_not_depend_on_later_tokens(t, cut, seed):
    cut = cut % (t - 1)  # tokens 0..cut kept, the later ones changed
    model = small_gpt()
    idx = prompt(2, t, seed)
    changed = idx.clone()
    changed[:, cut + 1 :] = (changed[:, cut + 1 :] + 1 + seed % (V - 1)) % V
    assert not torch.equal(idx, changed)
    torch.testing.assert_close(model(idx)[:, : cut + 1], model(changed)[:, : cut + 1])
    assert not torch.allclose(model(idx)[:, cut + 1 :], model(changed)[:, cut + 1 :])


def test_init_is_normal_002_and_tied_head_shares_the_embedding():
    torch.manual_seed(0)
    model = GPT(50, 32, dim=64, n_heads=4, n_layers=2)
    w = model.blocks[0].attention.W_query.weight
    assert abs(w.std().item() - 0.02) < 0.002 and not model.blocks[0].attention.W_query.bias.any()
    tied = GPT(50, 32, dim=64, n_heads=4, n_layers=2, tie_weights=True)
    assert tied.head.weight is tied.token_embedding.weight
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(model) - count(tied) == 50 * 64


def test_state_dict_names_are_multihead_attentions():
    # The blocks hold attnlib.MultiHeadAttention itself: its state_dict loads into one unchanged.
    model = small_gpt()
    mha = attnlib.MultiHeadAttention(16, 16, CONTEXT, 0.0, 4, qkv_bias=True)
    mha.load_state_dict(model.blocks[1].attention.state_dict())
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(mha(x), model.blocks[1].attention(x))


# --- the cache -----------------------------------------------------------------------------


def test_cached_attention_equals_multihead_attention():
    torch.manual_seed(0)
    mha = attnlib.MultiHeadAttention(16, 16, CONTEXT, 0.0, 4, qkv_bias=True).eval()
    x = torch.randn(2, 9, 16)
    full = mha(x)
    cache = KVCache(1)
    pieces = [cached_attention(mha, x[:, :4], cache, 0)]  # a prompt of 4 at once, then one at a time
    for t in range(4, 9):
        pieces.append(cached_attention(mha, x[:, t : t + 1], cache, 0))
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-6, rtol=1e-5)
    # chunks of several tokens after a non-empty cache use rows T..T+Tq of the causal mask
    cache = KVCache(1)
    chunked = torch.cat([cached_attention(mha, x[:, a:b], cache, 0) for a, b in [(0, 3), (3, 7), (7, 9)]], 1)
    torch.testing.assert_close(chunked, full, atol=1e-6, rtol=1e-5)
    cached_weights = mha.last_attn_weights  # (B, H, 2, 9): the last chunk's two queries
    mha(x)
    torch.testing.assert_close(cached_weights, mha.last_attn_weights[:, :, 7:], atol=1e-6, rtol=1e-5)


def test_cached_forward_equals_full_forward_and_cache_shapes():
    model = small_gpt()
    idx = prompt(3, 10)
    cache = model.new_cache()
    steps = [model(idx[:, :4], cache)] + [model(idx[:, t : t + 1], cache) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), model(idx), atol=1e-5, rtol=1e-5)
    assert len(cache) == 10 and len(cache.keys) == 2
    for keys, values in zip(cache.keys, cache.values, strict=True):
        assert keys.shape == values.shape == (3, 4, 10, 4)  # (B, H, T, Dh)
    assert (
        cache.nbytes
        == kv_cache_bytes(n_layers=2, n_kv_heads=4, head_dim=4, seq_len=10, batch=3, bytes_per_value=4)
        == 2 * 2 * 3 * 4 * 10 * 4 * 4
    )
    assert "KVCache(2 layers" in repr(cache)


@pytest.mark.parametrize("temperature, top_k", [(0.0, None), (1.0, None), (0.8, 3), (1.5, 5)])
def test_generation_with_cache_equals_without(temperature, top_k):
    model = small_gpt()
    idx = prompt(3, 4)
    runs = {
        use_cache: model.generate(
            idx,
            15,
            temperature=temperature,
            top_k=top_k,
            use_cache=use_cache,
            generator=torch.Generator().manual_seed(7),
        )
        for use_cache in (True, False)
    }
    assert runs[True].shape == (3, 19) and torch.equal(runs[True][:, :4], idx)
    assert torch.equal(runs[True], runs[False])
    # the logits generation used: the cached steps equal one full forward pass over the result
    seq = runs[True]
    cache = model.new_cache()
    steps = [model(seq[:, :4], cache)] + [model(seq[:, t : t + 1], cache) for t in range(4, 18)]
    torch.testing.assert_close(torch.cat(steps, dim=1), model(seq[:, :18]), atol=1e-5, rtol=1e-5)


def test_generation_restores_training_mode_and_zero_new_tokens():
    model = small_gpt().train()
    assert torch.equal(model.generate(prompt(), 0), prompt())
    assert model.training


def test_seeded_sampling_is_reproducible_and_differs_between_seeds():
    model = small_gpt()
    draw = lambda s: model.generate(prompt(4, 3), 12, generator=torch.Generator().manual_seed(s))  # noqa: E731
    assert torch.equal(draw(1), draw(1)) and not torch.equal(draw(1), draw(2))


# --- sampling ----------------------------------------------------------------------------


def test_top_k_never_samples_outside_the_k_best():
    logits = torch.randn(200, V, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    for k in (1, 2, 5):
        best = logits.topk(k, dim=-1).indices  # (B, k)
        for _ in range(20):
            token = sample_next(logits, 2.0, k, gen)  # a high temperature would reach every token
            assert bool((best == token[:, None]).any(-1).all())
    assert torch.equal(top_k_logits(logits, V + 3), logits)
    kept = top_k_logits(torch.tensor([[1.0, 3.0, 3.0, 2.0, 0.0]]), 2)  # a tie at the k-th value is kept
    assert torch.equal(kept.isfinite(), torch.tensor([[False, True, True, False, False]]))


def test_next_token_probs_against_the_formula():
    logits = torch.randn(3, V, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(next_token_probs(logits, 0.5), torch.softmax(logits * 2, dim=-1))
    probs = next_token_probs(logits, 1.0, 3)
    top = logits.topk(3, dim=-1)
    torch.testing.assert_close(probs.gather(-1, top.indices), torch.softmax(top.values, dim=-1))
    assert torch.allclose(probs.sum(-1), torch.ones(3)) and int((probs > 0).sum()) == 9
    greedy = next_token_probs(logits, 0.0)
    assert torch.equal(greedy.argmax(-1), logits.argmax(-1)) and torch.equal(greedy.sum(-1), torch.ones(3))


def test_temperature_towards_zero_is_greedy():
    model = small_gpt()
    greedy = model.generate(prompt(4, 3), 12, temperature=0.0)
    cold = model.generate(prompt(4, 3), 12, temperature=1e-4, generator=torch.Generator().manual_seed(3))
    assert torch.equal(cold, greedy)
    assert torch.equal(greedy[:, 3:4], model(prompt(4, 3))[:, -1].argmax(-1, keepdim=True))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"idx": torch.zeros(1, CONTEXT + 1, dtype=torch.long)}, ValueError, "more than context_length"),
        ({"max_new_tokens": CONTEXT}, ValueError, r"prompt \+ max_new_tokens has 28 tokens"),
        ({"top_k": 0}, ValueError, "top_k, a number of tokens >= 1"),
        ({"top_k": -2}, ValueError, "top_k"),
        ({"temperature": -0.5}, ValueError, "temperature >= 0"),
        ({"idx": torch.tensor([[1, V]])}, ValueError, rf"ids in \[0, {V}\).*from 1 to {V}"),
        ({"idx": torch.tensor([[-1, 2]])}, ValueError, "ids in"),
        ({"idx": torch.tensor([1, 2])}, ValueError, r"\(B, T\) token ids"),
        ({"idx": torch.tensor([[0.0, 1.0]])}, TypeError, "integer token ids"),
        ({"max_new_tokens": -1}, ValueError, "max_new_tokens, an int >= 0"),
    ],
)
def test_bad_input_fails_clearly(kwargs, error, match):
    args = {"idx": prompt(1, 4), "max_new_tokens": 3, **kwargs}
    with pytest.raises(error, match=match):
        small_gpt().generate(**args)


def test_forward_rejects_a_cache_that_would_overflow_the_context():
    model = small_gpt()
    cache = model.new_cache()
    model(prompt(1, CONTEXT - 1), cache)
    with pytest.raises(ValueError, match=r"context_length \(with 23 cached\)"):
        model(prompt(1, 2), cache)


def test_bad_construction_fails_clearly():
    with pytest.raises(ValueError, match="not divisible"):
        GPT(V, 8, dim=10, n_heads=4)
    with pytest.raises(ValueError, match="dropout"):
        GPT(V, 8, dim=8, n_heads=2, dropout=1.5)


# --- the task and the training adapter --------------------------------------------------


def test_addition_lines_are_right_distinct_and_seeded():
    lines = addition_lines(seed=0)
    assert len(lines) == 10_000 and len({line for _, line in lines}) == 10_000
    assert lines == addition_lines(seed=0) and lines != addition_lines(seed=1)
    assert addition_lines(5, seed=0) == lines[:5]
    for p, line in lines[:50]:
        a, b = int(p[:2]), int(p[3:5])
        assert line == p + f"{a + b:03d}" and len(line) == 9 and p.endswith("=")
    with pytest.raises(ValueError, match="expected n in"):
        addition_lines(10_001)


def test_next_token_model_follows_the_training_protocol():
    vocab = Vocab("0123456789+=")
    data = PairDataset(addition_lines(8, seed=0), vocab, vocab)
    torch.manual_seed(0)
    gpt = GPT(len(vocab), 16, dim=16, n_heads=2, n_layers=1)
    src, tgt = data.batch(range(8))
    logits = NextTokenModel(gpt)(src, tgt)
    assert logits.shape == (8, tgt.shape[1] - 1, len(vocab))
    torch.testing.assert_close(logits, gpt(tgt[:, :-1]))
    expected = F.cross_entropy(gpt(tgt[:, :-1]).transpose(1, 2), tgt[:, 1:])
    torch.testing.assert_close(sequence_loss(logits, tgt, vocab.pad_id), expected)


def test_complete_stops_at_eos_and_agrees_without_cache():
    model = small_gpt()
    p = prompt(5, 3)
    new = complete(model, p, 8, eos_id=2)
    assert new.shape == (5, 8) and torch.equal(new, complete(model, p, 8, eos_id=2, use_cache=False))
    raw = model.generate(p, 8, temperature=0.0)[:, 3:]
    for row, got in zip(raw.tolist(), new.tolist(), strict=True):
        end = row.index(2) if 2 in row else 8
        assert got[:end] == row[:end] and all(t == 2 for t in got[end:])


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    p=st.floats(0.05, 0.95),
    rows=st.integers(1, 3),
    scale=st.sampled_from([0.5, 2.0, 6.0]),
)
def test_top_p_keeps_the_smallest_most_likely_set_that_reaches_p(seed, p, rows, scale):
    logits = torch.randn(rows, 9, generator=torch.Generator().manual_seed(seed)) * scale
    probs = torch.softmax(logits, dim=-1)
    kept = top_p_logits(logits, p).isfinite()  # (rows, V)
    assert torch.equal(top_p_logits(logits, p)[kept], logits[kept])  # kept logits unchanged
    for row_probs, row_kept in zip(probs, kept, strict=True):
        assert row_kept[row_probs.argmax()]  # the most likely token is always kept
        assert (
            row_kept.all() or row_probs[row_kept].min() >= row_probs[~row_kept].max()
        )  # the most likely ones
        mass = row_probs[row_kept].sum()
        assert mass >= p - 1e-6 or row_kept.all()  # they reach p
        assert mass - row_probs[row_kept].min() < p + 1e-6  # without the last one they would not


def test_top_p_edge_cases_and_sampling():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    assert torch.equal(top_p_logits(logits, None), logits) and torch.equal(top_p_logits(logits, 1.0), logits)
    assert top_p_logits(logits, 1e-3).isfinite().tolist() == [[True, False, False, False]]
    probs = next_token_probs(logits, 1.0, top_p=0.8)  # softmax: 0.64, 0.24, 0.09, 0.03
    assert probs[0, 2:].eq(0).all() and torch.allclose(probs.sum(), torch.tensor(1.0))
    draws = sample_next(logits.expand(200, 4), 1.0, top_p=0.8, generator=torch.Generator().manual_seed(0))
    assert set(draws.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="top_p"):
        next_token_probs(logits, 1.0, top_p=0.0)
    for bad in (0.0, -0.1, 1.5, True, "0.9"):  # p = 0 would drop every token: all -inf, a NaN softmax
        with pytest.raises(ValueError, match=r"top_p, a probability in \(0, 1\]"):
            top_p_logits(logits, bad)
    with pytest.raises(ValueError, match="top_p"):
        small_gpt().generate(torch.zeros(1, 2, dtype=torch.long), 2, top_p=1.5)


def test_top_p_generation_with_cache_equals_without():
    model, start = small_gpt(), torch.randint(0, V, (3, 4), generator=torch.Generator().manual_seed(1))
    runs = [
        model.generate(start, 6, 1.2, 5, use_cache=c, generator=torch.Generator().manual_seed(2), top_p=0.7)
        for c in (True, False)
    ]
    assert torch.equal(runs[0], runs[1])


def test_addition_split_holds_out_both_orders():
    train, test = addition_split(1000, seed=0)
    assert len(test) == 1000 and len(train) == 9000
    assert sorted(train + test) == sorted(addition_lines(seed=0))
    seen = {prompt for prompt, _ in train}
    assert not any(f"{p[3:5]}+{p[:2]}=" in seen for p, _ in test)  # no held-out line's twin b+a trains
    assert test[:3] == addition_lines(3, seed=0)  # the seeded order is kept
    with pytest.raises(ValueError, match="n_test"):
        addition_split(10_000)
