"""Exercise checks for notebook 12 (a GPT with a KV cache); see attnlib.check._core.

Shapes: ``B`` batch, ``H`` heads, ``T`` cached positions, ``Dh`` head width, ``V`` vocabulary.

The references are attnlib's own: :func:`attnlib.sampling.next_token_probs` and
:func:`attnlib.sampling.top_p_logits`, the cached step of
:func:`attnlib.kv_cache.cached_attention` (append, then attend with
:func:`attnlib.functional.scaled_dot_product_attention`) and :func:`attnlib.memory.kv_cache_bytes`.
Inputs come from local ``torch.Generator`` s, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import kv_cache_bytes, next_token_probs, scaled_dot_product_attention
from ..kv_cache import KVCache, cached_attention
from ..sampling import top_k_logits
from ..sampling import top_p_logits as _top_p_reference
from ._core import (
    FAIL,
    PASS,
    Case,
    Mistake,
    Symptom,
    Verdict,
    check_answer,
    generator,
    not_a_distribution,
    run_check,
    same,
    wrong_type,
)
from ._reach import own

__all__ = ["cached_attention_step", "kv_cache_memory", "sampling_probs", "top_p_logits"]


# ---------------------------------------------------------------------------------------------
# Exercise 12.1: temperature and top-k
# ---------------------------------------------------------------------------------------------


def _probs_case(
    name: str,
    shape: tuple[int, ...],
    temperature: float,
    top_k: int | None,
    seed: int,
    tied: list[float] | None = None,
) -> Case:
    """Random logits of ``shape``, then the row ``tied`` (whose k-th largest logit has a tie) if given."""
    logits = torch.randn(shape, generator=generator(seed)) * 2.0
    if tied is not None:
        logits = torch.cat([logits, torch.tensor([tied])])  # (B, V) -> (B + 1, V)
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


def _ties_dropped(got: object, expected: torch.Tensor) -> bool:
    """True when ``got`` keeps fewer tokens than ``expected`` in some row and none it should not: a
    top-k that keeps exactly k tokens, whichever of the tied ones it picks."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return False
    kept, wanted = got > 0, expected > 0
    return not bool((kept & ~wanted).any()) and bool((kept.sum(-1) < wanted.sum(-1)).any())


def sampling_probs(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 12.1: ``student_fn(logits, temperature, top_k)`` -> ``(..., V)`` probabilities.

    ``softmax(top_k(logits) / temperature)`` over the last axis, with ``temperature > 0`` and
    ``top_k`` None (every token) or the number of most likely tokens kept, as
    :func:`attnlib.sampling.next_token_probs`. Ties with the k-th largest logit are kept.
    """
    cases = [
        _probs_case("one row of V=6 logits, T=1, top_k=None", (6,), 1.0, None, seed=121),
        _probs_case("(B, V) = (3, 8), T=0.5 (sharper), top_k=None", (3, 8), 0.5, None, seed=122),
        _probs_case(
            "(B, V) = (4, 8), T=1, top_k=3; the last row ties with its 3rd largest logit",
            (3, 8),
            1.0,
            3,
            seed=123,
            tied=[2.0, 1.0, 1.0, 0.0, -1.0, 0.5, -0.5, 1.5],
        ),
        _probs_case("(B, V) = (2, 10), T=2 (flatter), top_k=4", (2, 10), 2.0, 4, seed=124),
        _probs_case(
            "(B, V) = (5, 5), T=0.7, top_k=1 (greedy in disguise); the last row has two largest logits",
            (4, 5),
            0.7,
            1,
            seed=125,
            tied=[1.0, 1.0, 0.0, -1.0, -2.0],
        ),
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
        Symptom(
            "your top-k keeps exactly k tokens; the text says keep ties with the k-th: keep every logit "
            ">= the k-th largest value (`torch.topk(...).values[..., -1:]`), not the k positions "
            "torch.topk returns, so that tokens as likely as the k-th are all kept",
            _ties_dropped,
        ),
        not_a_distribution("softmax over the vocabulary (dim=-1) after the top-k mask"),
    ]
    return run_check(
        "Exercise 12.1 — temperature and top-k",
        student_fn,
        next_token_probs,
        cases,
        mistakes,
        forbidden=[own(next_token_probs), own(top_k_logits)],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.2: top-p (nucleus) filtering
# ---------------------------------------------------------------------------------------------


def _nucleus(logits, p, *, descending=True, rule="right", fill=float("-inf"), dim=-1):
    """The top-p filter with one typical slip (``rule``: right, early, late, no_top)."""
    if dim != -1 and logits.dim() > 1:  # the slip: each column treated as a distribution
        return _nucleus(logits.transpose(0, -1), p, descending=descending, rule=rule, fill=fill).transpose(
            0, -1
        )
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=descending)  # (..., V)
    total = probs.cumsum(dim=-1)  # (..., V): mass up to and including each token
    if rule == "early":  # stops before the token that reaches p
        drop = total >= p
        drop[..., 0] = False
    elif rule == "no_top":  # "remove above p, shift right by one" without keeping the first
        drop = torch.cat([(total > p)[..., :1], (total > p)[..., :-1]], dim=-1)
    else:
        drop = total - probs >= p
        if rule == "late":  # one more token than the nucleus
            drop = torch.cat([torch.zeros_like(drop[..., :1]), drop[..., :-1]], dim=-1)
    drop = drop.scatter(-1, order, drop)  # back to vocabulary order
    return logits.masked_fill(drop, fill)


def _top_p_case(name: str, shape: tuple[int, ...], p: float, seed: int, scale: float = 2.0) -> Case:
    logits = torch.randn(shape, generator=generator(seed)) * scale
    return Case(name, (logits, p))


def top_p_logits(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 12.2: ``student_fn(logits, p)`` -> ``(..., V)`` logits, as
    :func:`attnlib.sampling.top_p_logits`.

    Keep the smallest set of most likely tokens whose probability (``softmax`` over the last
    axis) reaches ``p``, always at least the most likely one; the other logits become ``-inf``.
    """
    cases = [
        _top_p_case("one row of V=6 logits, p=0.5", (6,), 0.5, seed=141),
        _top_p_case("(B, V) = (3, 8), p=0.9", (3, 8), 0.9, seed=142),
        _top_p_case("(B, V) = (2, 10), p=0.6", (2, 10), 0.6, seed=143),
        _top_p_case(
            "(B, V) = (3, 6), p=0.3, one token often holds more than p", (3, 6), 0.3, seed=144, scale=4.0
        ),
    ]
    mistakes = [
        Mistake(
            "sort the probabilities from the largest down (sort(..., descending=True)): the nucleus is the "
            "*most* likely tokens, you kept the least likely ones",
            lambda x, p: _nucleus(x, p, descending=False),
        ),
        Mistake(
            "you stopped one token too early: keep the token whose probability makes the total reach p. A "
            "token stays while the mass *before* it (cumsum - probs) is still below p",
            lambda x, p: _nucleus(x, p, rule="early"),
        ),
        Mistake(
            "you kept one token too many: once the kept tokens reach p, stop. A token stays only while the "
            "mass before it (cumsum - probs) is below p",
            lambda x, p: _nucleus(x, p, rule="late"),
        ),
        Mistake(
            "when the most likely token alone holds p or more, it must still be kept (the nucleus is never "
            "empty): after shifting the mask right by one, set its first column to keep",
            lambda x, p: _nucleus(x, p, rule="no_top"),
        ),
        Mistake(
            "the dropped tokens must get logit float('-inf') (probability 0 after the softmax); a logit of 0 "
            "still gets exp(0) = 1 share",
            lambda x, p: _nucleus(x, p, fill=0.0),
        ),
        Mistake(
            "each row of a batch is its own distribution: softmax, sort and cumsum along the vocabulary, "
            "the last axis (dim=-1), not dim=0",
            lambda x, p: _nucleus(x, p, dim=0),
        ),
        Mistake(
            "return logits (the kept ones unchanged, the others -inf), not probabilities: the softmax comes "
            "later, in next_token_probs",
            lambda x, p: torch.softmax(_nucleus(x, p), dim=-1),
        ),
    ]
    return run_check(
        "Exercise 12.2 — top-p (nucleus) filtering",
        student_fn,
        _top_p_reference,
        cases,
        mistakes,
        forbidden=[own(_top_p_reference)],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.3: one attention step with the cache
# ---------------------------------------------------------------------------------------------


def _reference_step(query, key, value, k_cache, v_cache):
    keys = torch.cat([k_cache, key], dim=2)  # (B, H, T, Dh) + (B, H, 1, Dh) -> (B, H, T + 1, Dh)
    values = torch.cat([v_cache, value], dim=2)
    context, _ = scaled_dot_product_attention(query, keys, values)  # (B, H, 1, Dh)
    return context, keys, values


def _step_case(name: str, b: int, h: int, t: int, dh: int, seed: int) -> Case:
    gen = generator(seed)
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
    """Exercise 12.3: ``student_fn(query, key, value, k_cache, v_cache)`` ->
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
        "Exercise 12.3 — one attention step with the cache",
        student_fn,
        _reference_step,
        cases,
        mistakes,
        forbidden=[own(cached_attention), own(KVCache, "append", what="KVCache.append")],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.4: predict the cache's size
# ---------------------------------------------------------------------------------------------

#: Exercise 12.4's model: GPT-2 small's sizes, a batch of 8 full contexts in float32.
CACHE_CONFIG = {"n_layers": 12, "dim": 768, "n_heads": 12, "length": 1024, "batch": 8, "bytes": 4}


def kv_cache_memory(answer: object) -> Verdict:
    """Exercise 12.4: the bytes of the KV cache for :data:`CACHE_CONFIG`, a prediction."""
    title = "Exercise 12.4 — predict: the size of the KV cache"
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
