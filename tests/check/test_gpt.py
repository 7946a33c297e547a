"""What only notebook 12's checks do (the rest: test_harness.py, answers/gpt.py): the exercises'
answers are what attnlib's GPT cache and memory formula compute."""

from __future__ import annotations

import torch

from attnlib import GPT, cached_attention, kv_cache_bytes
from tests.check.answers.gpt import KV_CACHE_BYTES, right_step


def test_the_step_is_what_the_gpt_cache_computes():
    # The exercise's step, with a GPT layer's projections, is attnlib's cached_attention.
    torch.manual_seed(0)
    attention = GPT(10, 8, dim=8, n_heads=2, n_layers=1).blocks[0].attention
    x = torch.randn(1, 4, 8)
    cache = GPT(10, 8, dim=8, n_heads=2, n_layers=1).new_cache()
    cached_attention(attention, x[:, :3], cache, 0)
    split = lambda t: t.view(1, -1, 2, 4).transpose(1, 2)  # noqa: E731
    k_cache, v_cache = cache.keys[0], cache.values[0]
    new = x[:, 3:]
    context, keys, values = right_step(  # the new caches
        split(attention.W_query(new)),
        split(attention.W_key(new)),
        split(attention.W_value(new)),
        k_cache,
        v_cache,
    )
    expected = cached_attention(attention, new, cache, 0)
    torch.testing.assert_close(attention.out_proj(context.transpose(1, 2).reshape(1, 1, 8)), expected)
    torch.testing.assert_close((keys, values), (cache.keys[0], cache.values[0]))


def test_the_kv_cache_memory_answer_is_attnlibs_formula():
    n = kv_cache_bytes(n_layers=12, n_kv_heads=12, head_dim=64, seq_len=1024, batch=8, bytes_per_value=4)
    assert n == KV_CACHE_BYTES == 603_979_776
