"""Exercise checks for notebook 12 (a GPT with a KV cache); see attnlib.check._core.

Shapes: ``B`` batch, ``H`` heads, ``T`` cached positions, ``Dh`` head width, ``V`` vocabulary.

The references are attnlib's own: :func:`attnlib.sampling.next_token_probs`, the cached step of
:func:`attnlib.kv_cache.cached_attention` (append, then attend with
:func:`attnlib.functional.scaled_dot_product_attention`) and :func:`attnlib.memory.kv_cache_bytes`.
Inputs come from local ``torch.Generator`` s, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import kv_cache_bytes, next_token_probs, scaled_dot_product_attention
from ._core import FAIL, PASS, Case, Mistake, Verdict, check_answer, run_check, same, wrong_type

__all__ = ["cached_attention_step", "kv_cache_memory", "sampling_probs"]


# ---------------------------------------------------------------------------------------------
# Exercise 12.1: temperature and top-k
# ---------------------------------------------------------------------------------------------


def _probs_case(name: str, shape: tuple[int, ...], temperature: float, top_k: int | None, seed: int) -> Case:
    logits = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 2.0
    return Case(name, (logits, temperature, top_k))


def _kth(logits: torch.Tensor, k: int) -> torch.Tensor:
    return torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)


def _keep(logits, k, *, fill=float("-inf"), strict=False, smallest=False):
    if k is None:
        return logits
    if smallest:
        kth = torch.topk(logits, k, dim=-1, largest=False).values[..., -1:]
        return logits.masked_fill(logits > kth, fill)
    kth = _kth(logits, k)
    return logits.masked_fill(logits <= kth if strict else logits < kth, fill)


def sampling_probs(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 12.1: ``student_fn(logits, temperature, top_k)`` -> ``(..., V)`` probabilities.

    ``softmax(top_k(logits) / temperature)`` over the last axis, with ``temperature > 0`` and
    ``top_k`` None (every token) or the number of most likely tokens kept, as
    :func:`attnlib.sampling.next_token_probs`.
    """
    cases = [
        _probs_case("one row of V=6 logits, T=1, top_k=None", (6,), 1.0, None, seed=121),
        _probs_case("(B, V) = (3, 8), T=0.5 (sharper), top_k=None", (3, 8), 0.5, None, seed=122),
        _probs_case("(B, V) = (3, 8), T=1, top_k=3", (3, 8), 1.0, 3, seed=123),
        _probs_case("(B, V) = (2, 10), T=2 (flatter), top_k=4", (2, 10), 2.0, 4, seed=124),
        _probs_case("(B, V) = (4, 5), T=0.7, top_k=1 (greedy in disguise)", (4, 5), 0.7, 1, seed=125),
    ]
    soft = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    mistakes = [
        Mistake(
            "divide the logits by the temperature: a small T must make large logits larger (sharper), "
            "you multiplied",
            lambda x, t, k: soft(_keep(x, k) * t),
        ),
        Mistake(
            "the tokens outside the top k must get probability 0: fill their logits with float('-inf') "
            "before the softmax (a logit of 0 still gets exp(0) = 1 share)",
            lambda x, t, k: soft(_keep(x, k, fill=0.0) / t),
        ),
        Mistake(
            "after zeroing the tokens outside the top k the rest must sum to 1 again: mask the logits with "
            "-inf *before* the softmax (or divide by the new sum)",
            lambda x, t, k: soft(x / t) * (_keep(x, k).isfinite()),
        ),
        Mistake(
            "you kept one token fewer than k: keep every logit >= the k-th largest (torch.topk(...).values"
            "[..., -1:]); `>` drops the k-th itself",
            lambda x, t, k: soft(_keep(x, k, strict=True) / t),
        ),
        Mistake(
            "you kept the k *smallest* logits: torch.topk returns the largest by default (largest=True)",
            lambda x, t, k: soft(_keep(x, k, smallest=True) / t),
        ),
        Mistake("top_k was ignored: keep only the k most likely tokens", lambda x, t, k: soft(x / t)),
        Mistake("the temperature was ignored: divide the logits by it", lambda x, t, k: soft(_keep(x, k))),
        Mistake(
            "the softmax runs over the vocabulary, the last axis (dim=-1), one distribution per row",
            lambda x, t, k: torch.softmax(_keep(x, k) / t, dim=0),
        ),
    ]
    return run_check("Exercise 12.1 — temperature and top-k", student_fn, next_token_probs, cases, mistakes)


# ---------------------------------------------------------------------------------------------
# Exercise 12.2: one attention step with the cache
# ---------------------------------------------------------------------------------------------


def _reference_step(query, key, value, k_cache, v_cache):
    keys = torch.cat([k_cache, key], dim=2)  # (B, H, T, Dh) + (B, H, 1, Dh) -> (B, H, T + 1, Dh)
    values = torch.cat([v_cache, value], dim=2)
    context, _ = scaled_dot_product_attention(query, keys, values)  # (B, H, 1, Dh)
    return context, keys, values


def _step_case(name: str, b: int, h: int, t: int, dh: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    new = [torch.randn(b, h, 1, dh, generator=gen) * 1.5 for _ in range(3)]
    cache = [torch.randn(b, h, t, dh, generator=gen) for _ in range(2)]
    return Case(name, (*new, *cache))


def _attend(query, keys, values, *, scale=None, hidden=None, dim=-1):
    scale = keys.shape[-1] ** -0.5 if scale is None else scale
    scores = query @ keys.transpose(-2, -1) * scale  # (B, H, 1, Dh) @ (B, H, Dh, Tk) -> (B, H, 1, Tk)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, dim=dim) @ values  # (B, H, 1, Tk) @ (B, H, Tk, Dh) -> (B, H, 1, Dh)


def cached_attention_step(student_fn: Callable[..., tuple]) -> Verdict:
    """Exercise 12.2: ``student_fn(query, key, value, k_cache, v_cache)`` ->
    ``(context, keys, values)``.

    ``query``, ``key``, ``value`` ``(B, H, 1, Dh)`` belong to the new token; the caches
    ``(B, H, T, Dh)`` to the ``T`` positions before it. Append the new key and value at the end
    (position ``T``), then attend: ``context`` ``(B, H, 1, Dh)``, and the caches ``(B, H, T + 1, Dh)``.
    """
    cases = [
        _step_case("B=1, H=1, three cached positions, Dh=4", 1, 1, 3, 4, seed=131),
        _step_case("B=2, H=2, five cached positions, Dh=8", 2, 2, 5, 8, seed=132),
        _step_case("B=2, H=3, one cached position, Dh=4", 2, 3, 1, 4, seed=133),
        _step_case("B=1, H=2, an empty cache (the first token), Dh=4", 1, 2, 0, 4, seed=134),
    ]

    def grown(k, v, kc, vc):
        return torch.cat([kc, k], dim=2), torch.cat([vc, v], dim=2)

    def first_key_only(q, k, v, kc, vc):
        keys, values = grown(k, v, kc, vc)
        row = torch.ones(keys.shape[2], keys.shape[2], dtype=torch.bool).tril()[:1]  # (1, T + 1)
        return _attend(q, keys, values, hidden=~row), keys, values

    mistakes = [
        Mistake(
            "the new token attends to itself too: append its key and value to the caches *before* "
            "attending (the keys are positions 0..T, the new one included)",
            lambda q, k, v, kc, vc: (_attend(q, kc, vc), *grown(k, v, kc, vc)),
        ),
        Mistake(
            "return the caches with the new key and value appended (torch.cat along the positions, dim=2), "
            "so that the next step finds them",
            lambda q, k, v, kc, vc: (_reference_step(q, k, v, kc, vc)[0], kc, vc),
        ),
        Mistake(
            "append at the *end*: the new token is position T, after 0..T-1 (the context is the same "
            "either way, but a later step would read the positions out of order)",
            lambda q, k, v, kc, vc: (
                _reference_step(q, k, v, kc, vc)[0],
                torch.cat([k, kc], dim=2),
                torch.cat([v, vc], dim=2),
            ),
        ),
        Mistake(
            "the new token is the LAST position, and the last row of the causal mask is all True: it may "
            "see every key. Row 0 of causal_mask(T + 1) lets it see only key 0; with one query, no mask "
            "is needed",
            first_key_only,
        ),
        Mistake(
            "scale the scores by 1 / sqrt(Dh) before the softmax",
            lambda q, k, v, kc, vc: (_attend(q, *grown(k, v, kc, vc), scale=1.0), *grown(k, v, kc, vc)),
        ),
        Mistake(
            "the softmax runs over the keys (the last axis of the (B, H, 1, T + 1) scores), not over the "
            "single query",
            lambda q, k, v, kc, vc: (_attend(q, *grown(k, v, kc, vc), dim=-2), *grown(k, v, kc, vc)),
        ),
    ]
    return run_check(
        "Exercise 12.2 — one attention step with the cache", student_fn, _reference_step, cases, mistakes
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.3: predict the cache's size
# ---------------------------------------------------------------------------------------------

#: Exercise 12.3's model: GPT-2 small's sizes, a batch of 8 full contexts in float32.
CACHE_CONFIG = {"n_layers": 12, "dim": 768, "n_heads": 12, "length": 1024, "batch": 8, "bytes": 4}


def kv_cache_memory(answer: object) -> Verdict:
    """Exercise 12.3: the bytes of the KV cache for :data:`CACHE_CONFIG`, a prediction."""
    title = "Exercise 12.3 — predict: the size of the KV cache"
    c = CACHE_CONFIG
    head_dim = c["dim"] // c["n_heads"]
    n = kv_cache_bytes(
        n_layers=c["n_layers"],
        n_kv_heads=c["n_heads"],
        head_dim=head_dim,
        seq_len=c["length"],
        batch=c["batch"],
        bytes_per_value=c["bytes"],
    )
    if answer is ... or wrong_type(answer, n):
        return check_answer(title, answer, n)  # the "not yet", or "expected a number", of every prediction
    if same(answer, float(n), atol=0.5):
        return Verdict(
            True,
            f"{PASS} {title}: right, {n:,} bytes ({n / 2**20:,.0f} MiB): 2 (keys and values) x 12 layers x "
            "8 sequences x 12 heads x 1024 positions x 64 numbers x 4 bytes.",
            "pass",
        )
    hints = [
        (n / 2, "that is half of it: the cache holds a key AND a value per position (a factor 2), and a "
                "float32 takes 4 bytes"),
        (n / 4, "count bytes, not numbers: each float32 takes 4 bytes"),
        (n / c["n_layers"], "a factor 12 is missing: every layer has its own keys and values (x 12 layers), "
                            "and each position holds a key of H x Dh = 12 x 64 = 768 numbers per layer, "
                            "all heads together"),
        (n / c["batch"], "each of the 8 sequences of the batch has its own cache: x 8"),
        (n * c["n_heads"], "per head the keys are Dh = 768 / 12 = 64 wide: H x Dh = D, not H x D"),
        (n * 8, "count bytes, not bits: a float32 is 4 bytes"),
        (n / 2**20, "the answer in bytes, please (that number is MiB: multiply by 2**20)"),
        (n / 10**6, "the answer in bytes, please (that number is MB: multiply by 10**6)"),
        (n / 2**30, "the answer in bytes, please (that number is GiB)"),
    ]  # fmt: skip
    for wrong, hint in hints:
        if same(answer, float(wrong), atol=max(0.5, abs(wrong) * 1e-3)):
            return Verdict(
                False, f"{FAIL} {title}: you predicted {answer!r}; that is not it.\n   hint: {hint}"
            )
    return Verdict(
        False,
        f"{FAIL} {title}: you predicted {answer!r}; that is not it.\n   hint: multiply what one cached "
        "position costs in one layer (a key and a value for every head) by the layers, the batch and the "
        "positions",
    )
