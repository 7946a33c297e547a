"""Answers to the checks of notebook 12."""

from __future__ import annotations

import torch

import attnlib
from attnlib.sampling import top_p_logits
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


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


KV_CACHE_BYTES = 603_979_776  # 12 layers, 12 heads of 64, 1024 positions, 8 sequences, 4 bytes

RIGHT = {
    "sampling_probs": [right_probs, probs_then_renormalise],
    "top_p_logits": [right_top_p, top_p_shift_right],
    "cached_attention_step": [right_step],
    "kv_cache_memory": [given(KV_CACHE_BYTES), given(2 * 12 * 8 * 12 * 1024 * 64 * 4.0)],
}

# ----------------------------------------------------------------------------- typical mistakes


def _keep(logits, k, fill=float("-inf"), strict=False):
    if k is None:
        return logits
    kth = torch.topk(logits, k).values[..., -1:]
    return logits.masked_fill(logits <= kth if strict else logits < kth, fill)


def _exactly_k(logits, temperature, top_k):
    # torch.topk's k positions: of the tokens tied with the k-th, only those it happens to return.
    if top_k is not None:
        keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, torch.topk(logits, top_k).indices, True)
        logits = logits.masked_fill(~keep, float("-inf"))
    return torch.softmax(logits / temperature, dim=-1)


def _first_k_sorted(logits, temperature, top_k):
    # The k first of a stable sort: ties broken by position, still exactly k tokens.
    if top_k is not None:
        order = logits.argsort(dim=-1, descending=True, stable=True)
        keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order[..., :top_k], True)
        logits = logits.masked_fill(~keep, float("-inf"))
    return torch.softmax(logits / temperature, dim=-1)


def _heated_numerator(logits, temperature, top_k):
    # The temperature in exp(.) on top but not in the sum below it.
    kept = _keep(logits, top_k)
    return torch.exp(kept / temperature) / torch.exp(kept).sum(-1, keepdim=True)


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


def _scores(q, keys):
    return q @ keys.transpose(-2, -1) / q.shape[-1] ** 0.5


WRONG = {
    "sampling_probs": [
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
        (_exactly_k, "keeps exactly k tokens; the text says keep ties with the k-th"),
        (_first_k_sorted, "keeps exactly k tokens; the text says keep ties with the k-th"),
        (_heated_numerator, "does not sum to 1 along the last axis"),
    ],
    "top_p_logits": [
        (lambda x, p: _nucleus(x, p, descending=False), "descending=True"),
        (lambda x, p: _nucleus(x, p, total_from=0), "one token too early"),
        (_late, "one token too many"),
        (_shift_without_top, "must still be kept"),
        (lambda x, p: _nucleus(x, p, fill=0.0), "float('-inf')"),
        (_columns, "the last axis (dim=-1), not dim=0"),
        (lambda x, p: torch.softmax(right_top_p(x, p), -1), "not probabilities"),
    ],
    "cached_attention_step": [
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
    "kv_cache_memory": [
        (given(KV_CACHE_BYTES // 2), "a key AND a value"),
        (given(KV_CACHE_BYTES // 4), "count bytes, not numbers"),
        (given(KV_CACHE_BYTES // 12), "a factor 12 is missing"),
        (given(KV_CACHE_BYTES // 8), "each of the 8 sequences"),
        (given(KV_CACHE_BYTES * 12), "H x Dh = D, not H x D"),
        (given(KV_CACHE_BYTES * 8), "not bits"),
        (given(576), "MiB"),
        (given(603.98), "MB"),
        (given(0.5625), "GiB"),
        (given(12345), "multiply what one cached position costs"),
    ],
}

TOLD = {"kv_cache_memory": [(given("576 MiB"), "fail", "expected a number", "str '576 MiB'")]}


# ----------------------------------------------------------------------------- out of reach
def _cache_by_library(query, key, value, k_cache, v_cache):
    cache = attnlib.KVCache(1)
    cache.append(0, k_cache, v_cache)
    keys, values = cache.append(0, key, value)
    context, _ = attnlib.scaled_dot_product_attention(query, keys, values)
    return context, keys, values


OUT_OF_REACH = {
    "sampling_probs": [
        (attnlib.next_token_probs, "hands back attnlib's own `next_token_probs`"),
        (lambda x, t, k: attnlib.next_token_probs(x, t, k), "calls attnlib's own `next_token_probs`"),
        (
            lambda x, t, k: torch.softmax(attnlib.sampling.top_k_logits(x, k) / t, dim=-1),
            "calls attnlib's own `top_k_logits`",
        ),
    ],
    "top_p_logits": [
        (attnlib.top_p_logits, "hands back attnlib's own `top_p_logits`"),
        (lambda x, p: top_p_logits(x, p), "calls attnlib's own `top_p_logits`"),
        (  # through the sampler that calls it
            lambda x, p: x.masked_fill(attnlib.next_token_probs(x, top_p=p) == 0, float("-inf")),
            "calls attnlib's own `top_p_logits`",
        ),
    ],
    "cached_attention_step": [(_cache_by_library, "calls attnlib's own `KVCache.append`")],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "sampling_probs": [stub],
    "top_p_logits": [stub],
    "cached_attention_step": [stub],
    "kv_cache_memory": [given(...)],
}
_RAISED = (crashes, "AttributeError", "no_such_attribute")
CRASHES = {"sampling_probs": [_RAISED], "top_p_logits": [_RAISED], "cached_attention_step": [_RAISED]}
