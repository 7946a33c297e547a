"""The checks of notebook 12's exercises accept right answers and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch

from attnlib import GPT, cached_attention, check, kv_cache_bytes
from tests.student_answers import assert_todo_then_error


def right_probs(logits, temperature, top_k):
    if top_k is not None:
        kth = torch.topk(logits, top_k).values[..., -1:]  # (..., 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits / temperature, dim=-1)


def probs_then_renormalise(logits, temperature, top_k):
    # Also right: zero the tokens outside the top k after the softmax, then divide by the new sum.
    p = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None:
        p = p * (p >= torch.topk(p, top_k).values[..., -1:])
    return p / p.sum(-1, keepdim=True)


def right_top_p(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    drop = probs.cumsum(dim=-1) - probs >= p  # the mass before each token already reaches p
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def top_p_shift_right(logits, p):
    # Also right (the usual library recipe): drop where the running total passes p, shifted right by one.
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop = sorted_logits.softmax(dim=-1).cumsum(dim=-1) > p
    drop[..., 1:] = drop[..., :-1].clone()
    drop[..., 0] = False
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def right_step(query, key, value, k_cache, v_cache):
    keys = torch.cat([k_cache, key], dim=2)  # (B, H, T + 1, Dh)
    values = torch.cat([v_cache, value], dim=2)
    weights = torch.softmax(
        query @ keys.transpose(-2, -1) / query.shape[-1] ** 0.5, dim=-1
    )  # (B, H, 1, T + 1)
    return weights @ values, keys, values


def test_right_answers_pass():
    for fn, answer in [
        (check.sampling_probs, right_probs),
        (check.sampling_probs, probs_then_renormalise),
        (check.top_p_logits, right_top_p),
        (check.top_p_logits, top_p_shift_right),
        (check.cached_attention_step, right_step),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message
    assert check.kv_cache_memory(603_979_776).status == "pass"
    assert check.kv_cache_memory(2 * 12 * 8 * 12 * 1024 * 64 * 4.0).status == "pass"


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


def _keep(logits, k, fill=float("-inf"), strict=False):
    if k is None:
        return logits
    kth = torch.topk(logits, k).values[..., -1:]
    return logits.masked_fill(logits <= kth if strict else logits < kth, fill)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, t, k: torch.softmax(_keep(x, k) * t, -1), "you multiplied"),
        (
            lambda x, t, k: torch.softmax(_keep(x, k, fill=0.0) / t, -1),
            "fill their logits with float('-inf')",
        ),
        (lambda x, t, k: torch.softmax(x / t, -1) * _keep(x, k).isfinite(), "must sum to 1 again"),
        (lambda x, t, k: torch.softmax(_keep(x, k, strict=True) / t, -1), "one token fewer than k"),
        (
            lambda x, t, k: torch.softmax(
                x.masked_fill(x > torch.topk(x, k, largest=False).values[..., -1:], float("-inf")) / t
                if k
                else x / t,
                -1,
            ),
            "the k *smallest*",
        ),
        (lambda x, t, k: torch.softmax(x / t, -1), "top_k was ignored"),
        (lambda x, t, k: torch.softmax(_keep(x, k), -1), "temperature was ignored"),
        (lambda x, t, k: torch.softmax(_keep(x, k) / t, 0), "the last axis (dim=-1)"),
    ],
)
def test_sampling_probs_explains_typical_mistakes(wrong, hint):
    verdict = check.sampling_probs(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def _nucleus(logits, p, descending=True, total_from=1, keep_top=True, fill=float("-inf")):
    # total_from=1 compares the mass before each token with p (right), 0 the mass including it.
    probs, order = torch.softmax(logits, -1).sort(-1, descending=descending)
    drop = (probs.cumsum(-1) - total_from * probs) >= p
    if keep_top:
        drop[..., 0] = False
    return logits.masked_fill(drop.scatter(-1, order, drop), fill)


def _late(logits, p):
    probs, order = torch.softmax(logits, -1).sort(-1, descending=True)
    drop = probs.cumsum(-1) - probs >= p
    drop = torch.cat([torch.zeros_like(drop[..., :1]), drop[..., :-1]], -1)  # one more token kept
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _shift_without_top(logits, p):
    sorted_logits, order = logits.sort(-1, descending=True)
    drop = sorted_logits.softmax(-1).cumsum(-1) > p
    drop[..., 1:] = drop[..., :-1].clone()  # forgot drop[..., 0] = False
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _columns(logits, p):
    return right_top_p(logits.T, p).T if logits.dim() == 2 else right_top_p(logits, p)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, p: _nucleus(x, p, descending=False), "descending=True"),
        (lambda x, p: _nucleus(x, p, total_from=0), "one token too early"),
        (_late, "one token too many"),
        (_shift_without_top, "must still be kept"),
        (lambda x, p: _nucleus(x, p, fill=0.0), "float('-inf')"),
        (_columns, "the last axis (dim=-1), not dim=0"),
        (lambda x, p: torch.softmax(right_top_p(x, p), -1), "not probabilities"),
    ],
)
def test_top_p_logits_explains_typical_mistakes(wrong, hint):
    verdict = check.top_p_logits(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def _scores(q, keys):
    return q @ keys.transpose(-2, -1) / q.shape[-1] ** 0.5


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (
            lambda q, k, v, kc, vc: (
                torch.softmax(_scores(q, kc), -1) @ vc,
                torch.cat([kc, k], 2),
                torch.cat([vc, v], 2),
            ),
            "append its key and value to the caches *before*",
        ),
        (lambda q, k, v, kc, vc: (right_step(q, k, v, kc, vc)[0], kc, vc), "return the caches"),
        (
            lambda q, k, v, kc, vc: (
                right_step(q, k, v, kc, vc)[0],
                torch.cat([k, kc], 2),
                torch.cat([v, vc], 2),
            ),
            "append at the *end*",
        ),
        (
            lambda q, k, v, kc, vc: (
                torch.cat([vc, v], 2)[:, :, :1],
                torch.cat([kc, k], 2),
                torch.cat([vc, v], 2),
            ),
            "last row of the causal mask is all True",
        ),
        (
            lambda q, k, v, kc, vc: (
                torch.softmax(q @ torch.cat([kc, k], 2).transpose(-2, -1), -1) @ torch.cat([vc, v], 2),
                torch.cat([kc, k], 2),
                torch.cat([vc, v], 2),
            ),
            "1 / sqrt(Dh)",
        ),
        (
            lambda q, k, v, kc, vc: (
                torch.softmax(_scores(q, torch.cat([kc, k], 2)), -2) @ torch.cat([vc, v], 2),
                torch.cat([kc, k], 2),
                torch.cat([vc, v], 2),
            ),
            "not over the single query",
        ),
    ],
)
def test_cached_attention_step_explains_typical_mistakes(wrong, hint):
    verdict = check.cached_attention_step(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_kv_cache_memory_wants_a_number():
    verdict = check.kv_cache_memory("576 MiB")
    assert (
        verdict.status == "fail"
        and "expected a number" in verdict.message
        and "str '576 MiB'" in verdict.message
    )


def test_kv_cache_memory_prediction():
    n = kv_cache_bytes(n_layers=12, n_kv_heads=12, head_dim=64, seq_len=1024, batch=8, bytes_per_value=4)
    assert n == 603_979_776
    assert check.kv_cache_memory(...).status == "todo"
    for wrong, hint in [
        (n // 2, "a key AND a value"),
        (n // 4, "count bytes, not numbers"),
        (n // 12, "a factor 12 is missing"),
        (n // 8, "each of the 8 sequences"),
        (n * 12, "H x Dh = D, not H x D"),
        (n * 8, "not bits"),
        (576, "MiB"),
        (603.98, "MB"),
        (0.5625, "GiB"),
        (12345, "multiply what one cached position costs"),
    ]:
        verdict = check.kv_cache_memory(wrong)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, (
            wrong,
            verdict.message,
        )


@pytest.mark.parametrize("fn", [check.sampling_probs, check.top_p_logits, check.cached_attention_step])
def test_stub_and_crash(fn):
    assert_todo_then_error(fn, lambda *args: args[0].no_such_attribute, "AttributeError", "no_such_attribute")


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.sampling_probs(right_probs)
    check.top_p_logits(right_top_p)
    check.cached_attention_step(right_step)
    check.kv_cache_memory(1)
    assert torch.equal(state, torch.random.get_rng_state())
