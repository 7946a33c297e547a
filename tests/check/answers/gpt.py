"""Answers to the checks of notebook 12."""

from __future__ import annotations

import torch

import attnlib
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


def right_top_p_probs(logits, p, temperature):
    probs = torch.softmax(logits / temperature, dim=-1)  # the temperature first
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked  # the mass ranked above each token
    last = ranked.masked_fill(before >= p, float("inf")).amin(dim=-1, keepdim=True)  # the last one kept
    kept = probs * (probs >= last)  # its ties too
    return kept / kept.sum(dim=-1, keepdim=True)


def top_p_by_count(logits, p, temperature):
    # Also right: count the nucleus, then keep every logit >= the m-th largest (12.1's rule).
    scaled = logits / temperature
    if p >= 1:
        return torch.softmax(scaled, dim=-1)
    ranked = torch.softmax(scaled, dim=-1).sort(dim=-1, descending=True).values
    m = (ranked.cumsum(dim=-1) < p).sum(dim=-1, keepdim=True) + 1  # the first m reach p
    mth = scaled.sort(dim=-1, descending=True).values.gather(-1, m.clamp(max=scaled.shape[-1]) - 1)
    return torch.softmax(scaled.masked_fill(scaled < mth, float("-inf")), dim=-1)


def top_p_row_by_row(logits, p, temperature):
    # Also right: a loop over the rows, in plain Python.
    flat = (logits / temperature).reshape(-1, logits.shape[-1])
    out = torch.zeros_like(flat)
    for r, row in enumerate(flat):
        probs = torch.softmax(row, dim=-1)
        total, last = 0.0, None
        for q in sorted(probs.tolist(), reverse=True):
            if total >= p:
                break
            total, last = total + q, q
        keep = probs >= last
        out[r] = torch.where(keep, probs, 0.0) / probs[keep].sum()
    return out.reshape(logits.shape)


def right_step(query, key, value, k_cache, v_cache):
    keys = torch.cat([k_cache, key], dim=2)  # (B, H, T + 1, Dh)
    values = torch.cat([v_cache, value], dim=2)
    weights = torch.softmax(
        query @ keys.transpose(-2, -1) / query.shape[-1] ** 0.5, dim=-1
    )  # (B, H, 1, T + 1)
    return weights @ values, keys, values


ROLLING_BYTES = 75_497_472  # 2 x 24 layers x 3 sequences x 4 key/value heads x 1024 positions x 64 x 2 bytes
ROLLING_SLOT = 451  # position 2,499 mod 1,024

RIGHT = {
    "sampling_probs": [right_probs, probs_then_renormalise],
    "top_p_probs": [right_top_p_probs, top_p_by_count, top_p_row_by_row],
    "cached_attention_step": [right_step],
    "rolling_kv_cache": [
        given(ROLLING_BYTES, ROLLING_SLOT),
        given(2 * 24 * 3 * 4 * min(2500, 1024) * 64 * 2.0, 2499 % 1024),
    ],
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


def _nucleus(logits, p, temperature, descending=True, before=True, keep_top=True, ties=True):
    # before=True compares the mass ranked above each token with p (right), False the mass including it.
    scaled = logits / temperature
    probs = torch.softmax(scaled, dim=-1)
    ranked = probs.sort(dim=-1, descending=descending).values
    drop = ranked.cumsum(dim=-1) - before * ranked >= p
    if keep_top:
        drop[..., 0] = False
    kept_values = ranked.masked_fill(drop, float("inf") if descending else float("-inf"))
    last = kept_values.amin(-1, keepdim=True) if descending else kept_values.amax(-1, keepdim=True)
    keep = probs >= last if descending else probs <= last
    return scaled.masked_fill(~keep, float("-inf"))  # the kept tempered logits, the others -inf


def _probs(logits, p, temperature, **slip):
    return torch.softmax(_nucleus(logits, p, temperature, **slip), dim=-1)


def _heated_after(logits, p, temperature):
    # The nucleus of softmax(logits), at temperature 1; the temperature only afterwards.
    kept = _nucleus(logits, p, 1.0).isfinite()
    return torch.softmax((logits / temperature).masked_fill(~kept, float("-inf")), dim=-1)


def _late(logits, p, temperature):
    scaled = logits / temperature
    probs, order = torch.softmax(scaled, -1).sort(-1, descending=True)
    drop = probs.cumsum(-1) - probs >= p
    drop = torch.cat([torch.zeros_like(drop[..., :1]), drop[..., :-1]], -1)  # one more token kept
    return torch.softmax(scaled.masked_fill(drop.scatter(-1, order, drop), float("-inf")), -1)


def _shift_without_top(logits, p, temperature):
    scaled = logits / temperature
    sorted_logits, order = scaled.sort(-1, descending=True)
    drop = sorted_logits.softmax(-1).cumsum(-1) > p
    drop[..., 1:] = drop[..., :-1].clone()  # forgot drop[..., 0] = False
    return torch.softmax(scaled.masked_fill(drop.scatter(-1, order, drop), float("-inf")), -1)


def _exact_nucleus(logits, p, temperature):
    # The smallest set by position: of the tokens tied with the last one, only those sorted first.
    scaled = logits / temperature
    probs, order = torch.softmax(scaled, -1).sort(-1, descending=True)
    drop = probs.cumsum(-1) - probs >= p
    return torch.softmax(scaled.masked_fill(drop.scatter(-1, order, drop), float("-inf")), -1)


def _stable_first(logits, p, temperature):
    # The same with a stable sort: ties broken by position in the vocabulary.
    scaled = logits / temperature
    order = scaled.argsort(dim=-1, descending=True, stable=True)
    probs = torch.softmax(scaled, -1).gather(-1, order)
    drop = probs.cumsum(-1) - probs >= p
    return torch.softmax(scaled.masked_fill(drop.scatter(-1, order, drop), float("-inf")), -1)


def _not_renormalised(logits, p, temperature):
    return torch.softmax(logits / temperature, -1) * _nucleus(logits, p, temperature).isfinite()


def _zero_filled(logits, p, temperature):
    kept = _nucleus(logits, p, temperature)
    return torch.softmax(torch.where(kept.isfinite(), kept, 0.0), -1)


def _columns(logits, p, temperature):
    if logits.dim() == 1:
        return right_top_p_probs(logits, p, temperature)
    return right_top_p_probs(logits.transpose(0, -1), p, temperature).transpose(0, -1)


def _p_one_untempered(logits, p, temperature):
    # A shortcut for p = 1 that forgot the temperature.
    if p >= 1:
        return torch.softmax(logits, dim=-1)
    return right_top_p_probs(logits, p, temperature)


def _heated_numerator_top_p(logits, p, temperature):
    # The kept tokens' exp(z / T), divided by a sum taken at temperature 1.
    kept = _nucleus(logits, p, temperature) * temperature  # the kept logits, the others -inf
    return torch.exp(kept / temperature) / torch.exp(kept).sum(-1, keepdim=True)


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
    "top_p_probs": [
        (_heated_after, "apply the temperature FIRST"),
        (lambda x, p, t: _probs(x, p, 1 / t), "you multiplied"),  # x / (1 / t) = x * t
        (lambda x, p, t: _probs(x, p, 1.0), "the temperature was ignored"),
        (_p_one_untempered, "the temperature was ignored"),
        (lambda x, p, t: _probs(x, p, t, descending=False), "descending=True"),
        (lambda x, p, t: _probs(x, p, t, before=False), "one token too early"),
        (_late, "one token too many"),
        (_shift_without_top, "must still be kept"),
        (_not_renormalised, "you only zeroed the others"),
        (_zero_filled, "float('-inf')"),
        (_columns, "the last axis (dim=-1), not dim=0"),
        (lambda x, p, t: _nucleus(x, p, t), "not the filtered logits"),
        (lambda x, p, t: right_top_p_probs(x / t, p, t), "applied the temperature twice"),
        (_exact_nucleus, "drops tokens tied with the last one kept"),
        (_stable_first, "drops tokens tied with the last one kept"),
        (_heated_numerator_top_p, "does not sum to 1 along the last axis"),
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
    "rolling_kv_cache": [
        (given(2 * 24 * 3 * 24 * 2500 * 64 * 2, ROLLING_SLOT), "that is section 5's cache"),
        (given(ROLLING_BYTES * 6, ROLLING_SLOT), "not the H = 24 query heads"),
        (given(2 * 24 * 3 * 4 * 1024 * 1536 * 2, ROLLING_SLOT), "not G x D"),
        (given(2 * 24 * 3 * 4 * 2500 * 64 * 2, ROLLING_SLOT), "the rolling buffer keeps only the last W"),
        (given(2 * 24 * 3 * 4 * 2000 * 64 * 2, ROLLING_SLOT), "the rolling buffer keeps only the last W"),
        (given(2 * 24 * 3 * 4 * 1025 * 64 * 2, ROLLING_SLOT), "not W + 1"),
        (given(24 * 3 * 4 * 1024 * 64 * 2, ROLLING_SLOT), "a key AND a value"),
        (given(ROLLING_BYTES * 2, ROLLING_SLOT), "not 4 (that is float32)"),
        (given(ROLLING_BYTES // 24, ROLLING_SLOT), "x 24 layers"),
        (given(ROLLING_BYTES // 3, ROLLING_SLOT), "each of the 3 sequences"),
        (given(ROLLING_BYTES * 8, ROLLING_SLOT), "not bits"),
        (given(72, ROLLING_SLOT), "MiB"),
        (given(75.5, ROLLING_SLOT), "MB"),
        (given(0.0703125, ROLLING_SLOT), "GiB"),
        (given(12345, ROLLING_SLOT), "multiply what one cached position costs"),
        (given(ROLLING_BYTES, 2500 % 1024), "positions count from 0"),
        (given(ROLLING_BYTES, 2499), "position i goes to slot i mod W"),
        (given(ROLLING_BYTES, 2499 % 1025), "not W + 1: take the position mod"),
        (given(ROLLING_BYTES, 1999 % 1024), "the prompt is cached too"),
        (given(ROLLING_BYTES, 2499 - 1024), "is a position (the one whose key"),
        (given(ROLLING_BYTES, 7), "position i is written into slot i mod W"),
    ],
}

TOLD = {"rolling_kv_cache": [(given("72 MiB", ROLLING_SLOT), "fail", "expected a number", "str '72 MiB'")]}


# ----------------------------------------------------------------------------- out of reach
def _nucleus_by_top_k(logits, p, temperature):
    # Count the nucleus, then let attnlib's top-k (which keeps ties with the k-th) do the rest.
    scaled = logits / temperature
    ranked = torch.softmax(scaled, dim=-1).sort(dim=-1, descending=True).values
    m = int(((ranked.cumsum(dim=-1) - ranked) < p).sum(dim=-1).max())
    return torch.softmax(attnlib.top_k_logits(scaled, m), dim=-1)


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
    "top_p_probs": [
        (attnlib.top_p_logits, "hands back attnlib's own `top_p_logits`"),
        (
            lambda x, p, t: torch.softmax(attnlib.top_p_logits(x / t, p), dim=-1),
            "calls attnlib's own `top_p_logits`",
        ),
        (lambda x, p, t: attnlib.next_token_probs(x, t, top_p=p), "calls attnlib's own `next_token_probs`"),
        (_nucleus_by_top_k, "calls attnlib's own `top_k_logits`"),
    ],
    "cached_attention_step": [(_cache_by_library, "calls attnlib's own `KVCache.append`")],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "sampling_probs": [stub],
    "top_p_probs": [stub],
    "cached_attention_step": [stub],
    "rolling_kv_cache": [given(..., ...), given(ROLLING_BYTES, ...)],
}
_RAISED = (crashes, "AttributeError", "no_such_attribute")
CRASHES = {"sampling_probs": [_RAISED], "top_p_probs": [_RAISED], "cached_attention_step": [_RAISED]}
