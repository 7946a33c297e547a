"""Exercise checks for notebook 12 (a GPT with a KV cache); see attnlib.check._core.

Shapes: ``B`` batch, ``H`` heads, ``T`` cached positions, ``Dh`` head width, ``V`` vocabulary.

The references: :func:`attnlib.sampling.next_token_probs` (12.1); top-p with a temperature and
ties, written here (12.2: attnlib's own top-p keeps no ties); the cached step of
:func:`attnlib.kv_cache.cached_attention` (append, then attend with
:func:`attnlib.functional.scaled_dot_product_attention`) (12.3); :func:`attnlib.memory.kv_cache_bytes`
of a rolling buffer of W positions, and the slot ``i mod W`` (12.4). Inputs come from local
``torch.Generator`` s, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import kv_cache_bytes, next_token_probs, scaled_dot_product_attention
from ..i18n import N_, fmt
from ..kv_cache import KVCache, cached_attention
from ..sampling import top_k_logits, top_p_logits
from ._core import (
    Case,
    Mistake,
    Symptom,
    Verdict,
    check_answer,
    combined,
    declare_hints,
    generator,
    not_a_distribution,
    predictions_not_yet,
    run_check,
    slips,
    whole_number,
    wrong_type,
)
from ._reach import own

__all__ = ["cached_attention_step", "rolling_kv_cache", "sampling_probs", "top_p_probs"]


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
        _probs_case(N_("one row of V=6 logits, T=1, top_k=None"), (6,), 1.0, None, seed=121),
        _probs_case(N_("(B, V) = (3, 8), T=0.5 (sharper), top_k=None"), (3, 8), 0.5, None, seed=122),
        _probs_case(
            N_("(B, V) = (4, 8), T=1, top_k=3; the last row ties with its 3rd largest logit"),
            (3, 8),
            1.0,
            3,
            seed=123,
            tied=[2.0, 1.0, 1.0, 0.0, -1.0, 0.5, -0.5, 1.5],
        ),
        _probs_case(N_("(B, V) = (2, 10), T=2 (flatter), top_k=4"), (2, 10), 2.0, 4, seed=124),
        _probs_case(
            N_("(B, V) = (5, 5), T=0.7, top_k=1 (greedy in disguise); the last row has two largest logits"),
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
        N_("Exercise 12.1 — temperature and top-k"),
        student_fn,
        next_token_probs,
        cases,
        mistakes,
        forbidden=[own(next_token_probs), own(top_k_logits)],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.2: top-p sampling with a temperature and ties
# ---------------------------------------------------------------------------------------------


def _top_p(
    logits,
    p,
    temperature,
    *,
    heat="first",
    descending=True,
    rule="right",
    ties=True,
    renormalise=True,
    fill=float("-inf"),
    dim=-1,
    returns="probs",
):
    """The distribution top-p sampling draws from, with one typical slip (all knobs at their default:
    the right answer).

    ``heat``: "first" (right), "after" (nucleus at temperature 1, heated afterwards), "times"
    (multiplied), "ignored". ``rule``: "right", "early" (stops before the token reaching p), "late"
    (one more), "no_top" (the shift-right recipe without keeping the first). ``ties``: keep every
    token tied with the last one kept.
    """
    if dim != -1 and logits.dim() > 1:  # the slip: each column treated as a distribution
        return _top_p(
            logits.transpose(0, -1), p, temperature, heat=heat, descending=descending, rule=rule, ties=ties,
            renormalise=renormalise, fill=fill, returns=returns,
        ).transpose(0, -1)  # fmt: skip
    tempered = {"times": logits * temperature, "ignored": logits}.get(heat, logits / temperature)
    ranked = logits if heat == "after" else tempered  # the logits the nucleus is chosen from
    probs, order = torch.softmax(ranked, dim=-1).sort(dim=-1, descending=descending)  # (..., V) each
    total = probs.cumsum(dim=-1)  # (..., V): mass up to and including each token
    if rule == "early":
        keep = total < p
        keep[..., 0] = True
    elif rule == "no_top":
        keep = ~torch.cat([(total > p)[..., :1], (total > p)[..., :-1]], dim=-1)
    else:
        keep = total - probs < p  # the mass ranked above each token is still below p
        if rule == "late":
            keep = torch.cat([torch.ones_like(keep[..., :1]), keep[..., :-1]], dim=-1)
    if ties:  # every token whose logit equals the last kept one's: compare with it, not with positions
        values = ranked.gather(-1, order)  # (..., V): the ranked logits in sorted order
        if descending:
            last = values.masked_fill(~keep, float("inf")).amin(dim=-1, keepdim=True)  # (..., 1)
            kept = ranked >= last
        else:
            last = values.masked_fill(~keep, float("-inf")).amax(dim=-1, keepdim=True)
            kept = ranked <= last
    else:
        kept = keep.scatter(-1, order, keep)  # back to vocabulary order
    if returns == "logits":
        return tempered.masked_fill(~kept, fill)
    if not renormalise:
        return torch.softmax(tempered, dim=-1) * kept
    return torch.softmax(tempered.masked_fill(~kept, fill), dim=-1)


def _reference_top_p(logits: torch.Tensor, p: float, temperature: float) -> torch.Tensor:
    return _top_p(logits, p, temperature)


def _margin(logits: torch.Tensor, p: float, temperature: float) -> float:
    """How far the running totals of the tempered, sorted probabilities stay from ``p`` (float64)."""
    probs = torch.softmax(logits.double() / temperature, dim=-1).sort(dim=-1, descending=True).values
    return float((probs.cumsum(dim=-1) - p).abs().min())


def _top_p_case(
    name: str,
    shape: tuple[int, ...],
    p: float,
    temperature: float,
    seed: int,
    scale: float = 2.0,
    rows: list[list[float]] | None = None,
) -> Case:
    """Random logits of ``shape`` whose running totals stay 0.005 or more from ``p`` (drawn again
    until they do, so that no rounding decides which token reaches ``p``), then ``rows`` if given."""
    gen = generator(seed)
    logits = torch.randn(shape, generator=gen) * scale
    while p < 1 and _margin(logits, p, temperature) < 0.005:
        logits = torch.randn(shape, generator=gen) * scale
    if rows is not None:
        logits = torch.cat([logits, torch.tensor(rows)])  # (B, V) -> (B + len(rows), V)
    return Case(name, (logits, p, temperature))


#: Exercise 12.2's rows with ties, at T = 0.8 and p = 0.45: the nucleus ends at a token tied with
#: the next one; the largest logit is tied and reaches p alone; three tokens tie at the edge.
TIED_ROWS = [
    [1.0, 0.5, 0.5, 0.0, -0.5, -1.0],
    [2.0, -1.0, 2.0, -0.5, -2.0, -3.0],
    [0.0, 1.0, 0.5, -1.0, 0.5, 0.5],
]


def _top_p_cases() -> list[Case]:
    """Exercise 12.2's cases, simplest first; the ties last."""
    return [
        _top_p_case(N_("one row of V=6 logits, T=1, p=0.5"), (6,), 0.5, 1.0, seed=151),
        _top_p_case(N_("(B, V) = (3, 8), T=0.5 (sharper), p=0.9"), (3, 8), 0.9, 0.5, seed=152),
        _top_p_case(N_("(B, V) = (2, 10), T=2 (flatter), p=0.7"), (2, 10), 0.7, 2.0, seed=153),
        _top_p_case(
            N_("(B, V) = (3, 6), T=0.7, p=0.3: the top token often holds more than p alone"),
            (3, 6),
            0.3,
            0.7,
            seed=154,
            scale=4.0,
        ),
        _top_p_case(N_("(2, 3, 7): a batch of batches, T=1.5, p=0.8"), (2, 3, 7), 0.8, 1.5, seed=155),
        _top_p_case(
            N_("(B, V) = (2, 5), T=1.5, p=1: every token is kept"), (2, 5), 1.0, 1.5, seed=156, scale=1.0
        ),
        _top_p_case(
            N_("(B, V) = (4, 6), T=0.8, p=0.45; the last three rows have tokens tied with the last one kept"),
            (1, 6),
            0.45,
            0.8,
            seed=157,
            rows=TIED_ROWS,
        ),
    ]


#: Exercise 12.2's typical slips: (hint, the knobs of :func:`_top_p` that make it).
_TOP_P_SLIPS = [
    (
        N_(
            "apply the temperature FIRST: the nucleus is taken from softmax(logits / temperature), the "
            "distribution the sampler draws from; you chose it at temperature 1 and heated afterwards"
        ),
        {"heat": "after"},
    ),
    (
        "divide the logits by the temperature: a small T must make large logits larger (sharper), "
        "you multiplied",
        {"heat": "times"},
    ),
    (N_("the temperature was ignored: divide the logits by it before the softmax"), {"heat": "ignored"}),
    (
        N_(
            "sort the probabilities from the largest down (sort(..., descending=True)): the nucleus is the "
            "*most* likely tokens, you kept the least likely ones"
        ),
        {"descending": False},
    ),
    (
        N_(
            "you stopped one token too early: keep the token whose probability makes the total reach p. A "
            "token stays while the mass ranked *above* it (cumsum - probs) is still below p"
        ),
        {"rule": "early"},
    ),
    (
        N_(
            "you kept one token too many: once the kept tokens reach p, stop. A token stays only while the "
            "mass ranked above it (cumsum - probs) is below p"
        ),
        {"rule": "late"},
    ),
    (
        N_(
            "when the most likely token alone holds p or more, it must still be kept (the nucleus is never "
            "empty): after shifting the mask right by one, set its first column to keep"
        ),
        {"rule": "no_top"},
    ),
    (
        N_(
            "renormalise: the kept probabilities must sum to 1 again (divide them by their sum, or set the "
            "other logits to -inf before the softmax); you only zeroed the others"
        ),
        {"renormalise": False},
    ),
    (
        N_(
            "the dropped tokens must get logit float('-inf') before the softmax (probability 0); a logit of "
            "0 still gets exp(0) = 1 share"
        ),
        {"fill": 0.0},
    ),
    (
        N_(
            "each row of a batch is its own distribution: softmax, sort and cumsum along the vocabulary, "
            "the last axis (dim=-1), not dim=0"
        ),
        {"dim": 0},
    ),
    (
        N_(
            "return probabilities, the distribution the sampler draws from (softmax of the kept tempered "
            "logits), not the filtered logits"
        ),
        {"returns": "logits"},
    ),
]


def _ties_dropped(got: object, expected: torch.Tensor) -> bool:
    """True when ``got`` keeps none it should not, and in some row leaves out a token whose
    probability equals that of a token it kept: a nucleus without the tokens tied with its last one,
    whichever of them the sort put first (not any nucleus that is merely too small)."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or not got.is_floating_point():
        return False
    kept, wanted = got > 0, expected > 0
    if bool((kept & ~wanted).any()):
        return False
    rows = expected.detach().reshape(-1, expected.shape[-1])
    for values, mine, theirs in zip(rows, kept.reshape(rows.shape), wanted.reshape(rows.shape), strict=True):
        missing, held = values[theirs & ~mine], values[mine]
        if len(missing) and len(held) and bool(torch.isclose(missing[:, None], held[None, :]).any()):
            return True
    return False


def top_p_probs(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 12.2: ``student_fn(logits, p, temperature)`` -> ``(..., V)`` probabilities.

    The temperature first, ``softmax(logits / temperature)``; then the nucleus of that distribution:
    the most likely tokens until their probability reaches ``p`` (the top one always, every token
    for ``p = 1``), with every token tied with the last one kept; renormalised over the last axis.
    attnlib's :func:`~attnlib.sampling.next_token_probs` with ``top_p`` is the same without the ties.
    """
    cases = _top_p_cases()
    twice = Mistake(
        "you applied the temperature twice (the logits divided by T, then softmax(logits / T) again): "
        "divide by T once",
        lambda logits, p, temperature: _top_p(logits / temperature, p, temperature),
    )
    mistakes = [twice, *slips(_top_p, _TOP_P_SLIPS)]
    mistakes += [
        Symptom(
            "your nucleus drops tokens tied with the last one kept; the text says keep them all (as 12.1 "
            "keeps ties with the k-th): keep every token whose probability is >= that of the last token of "
            "the nucleus, not the positions the sort happened to put first",
            _ties_dropped,
        ),
        not_a_distribution(
            "softmax over the vocabulary (dim=-1) of the kept tempered logits, the others -inf"
        ),
    ]
    return run_check(
        N_("Exercise 12.2 — top-p sampling with a temperature and ties"),
        student_fn,
        _reference_top_p,
        cases,
        mistakes,
        forbidden=[own(top_p_logits), own(top_k_logits), own(next_token_probs)],
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
        _step_case(N_("B=1, H=1, three cached positions, Dh=4"), 1, 1, 3, 4, seed=131),
        _step_case(N_("B=2, H=2, five cached positions, Dh=8"), 2, 2, 5, 8, seed=132),
        _step_case(N_("B=2, H=3, one cached position, Dh=4"), 2, 3, 1, 4, seed=133),
        _step_case(N_("B=1, H=2, an empty cache (the first token), Dh=4"), 1, 2, 0, 4, seed=134),
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
        N_("Exercise 12.3 — one attention step with the cache"),
        student_fn,
        _reference_step,
        cases,
        mistakes,
        forbidden=[own(cached_attention), own(KVCache, "append", what="KVCache.append")],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 12.4: predict a rolling buffer cache with grouped-query attention
# ---------------------------------------------------------------------------------------------

#: Exercise 12.4's model: grouped-query attention (4 key/value heads for 24 query heads of 64), a
#: window of 1,024 keys with a rolling buffer cache (Jiang et al., 2023, §2), float16, a batch of 3
#: sequences of 500 prompt tokens and 2,000 generated ones.
ROLLING_CONFIG = {
    "n_layers": 24,
    "dim": 1536,
    "n_heads": 24,  # H / G = 6, not G: a student who caches "H/G heads" is told so
    "n_kv_heads": 4,
    "window": 1024,
    "batch": 3,
    "prompt": 500,
    "generated": 2000,
    "bytes": 2,
}


def _rolling_answers() -> tuple[int, int]:
    """The bytes the rolling buffers hold, and the slot of the last position."""
    c = ROLLING_CONFIG
    length = c["prompt"] + c["generated"]  # positions 0 .. length - 1
    n = kv_cache_bytes(
        n_layers=c["n_layers"],
        n_kv_heads=c["n_kv_heads"],
        head_dim=c["dim"] // c["n_heads"],
        seq_len=min(length, c["window"]),  # the buffer stops growing at W positions
        batch=c["batch"],
        bytes_per_value=c["bytes"],
    )
    return n, (length - 1) % c["window"]


def _predicted(
    title: str, answer: object, expected: int, hints: list[tuple[float, str]], fallback: str, rel: float = 0.0
) -> Verdict:
    """:func:`check_answer` with the hint of the first wrong value that ``answer`` equals (to within
    ``rel`` of it: a size written in MiB may be rounded), else ``fallback``."""
    declare_hints([fallback, *(hint for _, hint in hints)])
    hint = fallback
    if whole_number(answer) != expected and not wrong_type(answer, expected):
        for wrong, text in hints:
            if abs(float(answer) - wrong) <= rel * abs(wrong):
                hint = text
                break
    return check_answer(title, answer, expected, hint)


def rolling_kv_cache(cache_bytes: object, slot: object) -> Verdict:
    """Exercise 12.4: the bytes the rolling buffer caches of :data:`ROLLING_CONFIG` hold after
    the last token, and the slot that token's key went to; a prediction."""
    title = N_("Exercise 12.4 — predict: a rolling buffer cache with grouped-query attention")
    if cache_bytes is ... or slot is ...:
        return predictions_not_yet(title)
    c = ROLLING_CONFIG
    n, last_slot = _rolling_answers()
    length, w, group = c["prompt"] + c["generated"], c["window"], c["n_heads"] // c["n_kv_heads"]
    head_dim = c["dim"] // c["n_heads"]
    # Numbers as shown (thousands separated); the hints are templates, so that no catalogue key holds one.
    num = {
        "W": f"{w:,}",
        "W1": f"{w - 1:,}",
        "L": f"{length:,}",
        "L1": f"{length - 1:,}",
        "G1": f"{c['generated'] - 1:,}",
        "over": f"{length - 1 - w:,}",
        "H": c["n_heads"],
        "G": c["n_kv_heads"],
        "D": c["dim"],
        "Dh": head_dim,
        "group": group,
        "layers": c["n_layers"],
        "batch": c["batch"],
    }
    window = fmt(
        "the window: the rolling buffer keeps only the last W = {W} positions of each sequence "
        "(position i overwrites slot i mod W), however many tokens the sequence has ({L} here)",
        **num,
    )
    byte_hints = [
        (n * group * length / w, fmt("that is section 5's cache: all H = {H} heads at all {L} "
         "positions. Grouped-query attention caches only the G = {G} key/value heads, and the "
         "window keeps at most W = {W} positions", **num)),
        (n * group, fmt("the cache holds the G = {G} key/value heads, not the H = {H} "
         "query heads: with grouped-query attention {group} query heads share each key and value", **num)),
        (n * c["dim"] / head_dim, fmt("each key/value head is Dh = {D} / {H} = {Dh} "
         "numbers wide: a position's key is G x Dh numbers, not G x D", **num)),
        (n * length / w, window),
        (n * c["generated"] / w, window),
        (n * (w + 1) / w, fmt("the rolling buffer has W = {W} slots (slots 0 to W - 1), not W + 1", **num)),
        (n / 2, N_("that is half of it: a factor 2 is missing. The cache holds a key AND a value for every "
         "position and head, and a float16 number takes 2 bytes")),
        (n * 2, N_("a float16 number takes 2 bytes, not 4 (that is float32)")),
        (n / c["n_layers"], fmt("every layer has its own keys and values: x {layers} layers", **num)),
        (n / c["batch"], fmt("each of the {batch} sequences has its own cache: x {batch}", **num)),
        (n * 8, N_("count bytes, not bits: a float16 number is 2 bytes")),
        (n / 2**20, N_("the answer in bytes, please (that number is MiB: multiply by 2**20)")),
        (n / 10**6, N_("the answer in bytes, please (that number is MB: multiply by 10**6)")),
        (n / 2**30, N_("the answer in bytes, please (that number is GiB: multiply by 2**30)")),
    ]  # fmt: skip
    slot_hints = [
        (length % w, fmt("positions count from 0: the last of {L} tokens is "
         "position {L1}, not {L}", **num)),
        (length - 1, fmt("the buffer has only W = {W} slots, 0 to {W1}: position i "
         "goes to slot i mod W", **num)),
        ((length - 1) % (w + 1), fmt("the buffer has W = {W} slots, not W + 1: take the "
         "position mod {W}", **num)),
        ((c["generated"] - 1) % w, fmt("the prompt is cached too: positions count from the first "
         "prompt token, so the last token is position {L1}, not {G1}", **num)),
        (length - 1 - w, fmt("{over} is a position (the one whose key the last token overwrote), "
         "not a slot: slots run from 0 to W - 1 = {W1}", **num)),
    ]  # fmt: skip
    parts = [
        _predicted(
            N_("cache_bytes"),
            cache_bytes,
            n,
            byte_hints,
            N_(
                "multiply what one cached position costs in one layer (a key and a value for each of the G "
                "key/value heads) by the layers, the batch and the positions the buffer holds"
            ),
            rel=5e-4,
        ),
        _predicted(N_("slot"), slot, last_slot, slot_hints, N_("position i is written into slot i mod W")),
    ]
    full = kv_cache_bytes(c["n_layers"], c["n_heads"], head_dim, length, c["batch"], c["bytes"])
    return combined(
        title,
        parts,
        fmt(
            "right, {n} bytes ({mib} MiB): 2 (K and V) x {layers} layers x "
            "{batch} sequences x {G} key/value heads x {W} positions x {Dh} numbers "
            "x {bytes} bytes, {times} times less than all {H} heads at all {L} "
            "positions; and "
            "position {L1} went to slot {L1} mod {W} = {slot}, overwriting position "
            "{over}.",
            n=f"{n:,}",
            mib=f"{n / 2**20:,.0f}",
            bytes=c["bytes"],
            times=f"{full / n:.2f}",
            slot=last_slot,
            **num,
        ),
    )
