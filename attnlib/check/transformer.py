"""Exercise checks for notebooks 09 (the Transformer's building blocks) and 10 (the full
Transformer); see attnlib.check._core.

Shapes: ``B`` batch, ``T`` positions, ``Tt`` target length, ``D`` model width, ``H`` heads,
``L`` layers, ``K`` beams, ``V`` vocabulary.

The references are attnlib's own code: :func:`attnlib.blocks.sinusoidal_encoding`,
:class:`attnlib.blocks.LayerNorm`, ``Transformer.generate_mask``, ``Transformer.attention_weights``,
``Transformer.greedy_decode`` and ``Transformer.beam_search``. One step of beam search is inlined
in ``Transformer.beam_search`` rather than a function, so :func:`_reference_beam_step` repeats
those three lines; tests/test_checks_transformer.py checks it against an exhaustive search.
Inputs come from local ``torch.Generator`` s and modules are built inside ``torch.random.fork_rng``
(or on the meta device), so a check never moves the global seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ..blocks import LayerNorm, sinusoidal_encoding
from ..masks import causal_mask
from ..transformer import Transformer
from ._core import FAIL, PASS, TODO, Case, Mistake, Verdict, check_answer, run_check

__all__ = [
    "attention_map_count",
    "beam_step",
    "decoder_self_mask",
    "greedy_vs_beam",
    "layer_norm",
    "positional_encoding",
]


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Build modules with a fixed seed, leaving the caller's global random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# ---------------------------------------------------------------------------------------------
# Notebook 09
# ---------------------------------------------------------------------------------------------


def _pe(max_len, dim, *, swap=False, pair_exponent=2.0, per_column=False, first=0, halves=False, times=False):
    """The sinusoidal table with knobs for the typical slips; all knobs at their default give the paper's."""
    position = torch.arange(first, first + max_len, dtype=torch.float)[:, None]  # (T, 1)
    i = torch.arange(dim // 2, dtype=torch.float)  # (D/2,): pair index
    exponent = pair_exponent * i / dim  # (D/2,)
    if per_column:  # column j with its own exponent j/D, instead of one per pair
        exponent = torch.arange(dim, dtype=torch.float) / dim  # (D,)
    frequency = 10000.0**exponent if times else 1.0 / 10000.0**exponent
    angles = position * frequency  # (T, D/2), or (T, D) per column
    sin, cos = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    pe = torch.zeros(max_len, dim)
    if per_column:
        pe[:, 0::2], pe[:, 1::2] = sin(angles[:, 0::2]), cos(angles[:, 1::2])
    elif halves:
        pe = torch.cat([sin(angles), cos(angles)], dim=1)  # (T, D): all sines, then all cosines
    else:
        pe[:, 0::2], pe[:, 1::2] = sin(angles), cos(angles)
    return pe


def positional_encoding(student_fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Exercise 9.1: ``student_fn(max_len, dim) -> (T, D)`` sinusoidal positional encoding.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/D))`` and ``PE[pos, 2i+1] = cos(pos / 10000^(2i/D))``
    for ``pos = 0 .. T-1``; as :func:`attnlib.blocks.sinusoidal_encoding` computes it.
    """
    cases = [
        Case("T=4, D=4", (4, 4)),
        Case("T=10, D=8", (10, 8)),
        Case("T=50, D=16", (50, 16)),
        Case("one pair of columns: T=5, D=2", (5, 2)),
        Case("one position: T=1, D=6", (1, 6)),
    ]
    mistakes = [
        Mistake(
            "sine and cosine are swapped: the even columns (0, 2, ...) hold the sines, the odd ones the "
            "cosines",
            lambda t, d: _pe(t, d, swap=True),
        ),
        Mistake(
            "the first position is 0 (row 0 is sin 0 = 0, cos 0 = 1): `torch.arange(max_len)`, not from 1",
            lambda t, d: _pe(t, d, first=1),
        ),
        Mistake(
            "interleave sines and cosines: pe[:, 0::2] = sin, pe[:, 1::2] = cos; torch.cat puts all the "
            "sines first",
            lambda t, d: _pe(t, d, halves=True),
        ),
        Mistake(
            "the exponent of pair i is 2i/D: with torch.arange(D // 2) multiply by 2 (torch.arange(0, D, 2) "
            "already holds 2i)",
            lambda t, d: _pe(t, d, pair_exponent=1.0),
        ),
        Mistake(
            "the exponent of pair i is 2i/D: torch.arange(0, D, 2) already holds 2i, do not double it",
            lambda t, d: _pe(t, d, pair_exponent=4.0),
        ),
        Mistake(
            "both columns of a pair share one frequency: columns 2i and 2i+1 both use 10000^(2i/D)",
            lambda t, d: _pe(t, d, per_column=True),
        ),
        Mistake(
            "divide the position by 10000^(2i/D) (the frequency gets *lower* along the row), do not multiply",
            lambda t, d: _pe(t, d, times=True),
        ),
    ]
    return run_check(
        "Exercise 9.1 — sinusoidal positional encoding", student_fn, sinusoidal_encoding, cases, mistakes
    )


def _reference_layer_norm(
    x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float
) -> torch.Tensor:
    norm = LayerNorm(x.shape[-1], eps)
    with torch.no_grad():
        norm.gamma.copy_(gamma)
        norm.beta.copy_(beta)
        return norm(x)


def _ln(x, gamma, beta, eps, *, dims=(-1,), correction=0, eps_outside=False, affine=True, swap=False):
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, correction=correction)
    x_hat = (x - mean) / ((var.sqrt() + eps) if eps_outside else torch.sqrt(var + eps))
    if not affine:
        return x_hat
    return beta * x_hat + gamma if swap else gamma * x_hat + beta


def _ln_case(name: str, shape: tuple[int, ...], eps: float, seed: int, *, spread: float = 3.0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    d = shape[-1]
    x = torch.randn(shape, generator=gen) * spread + 2.0
    gamma, beta = 1.0 + 0.5 * torch.randn(d, generator=gen), torch.randn(d, generator=gen)
    return Case(name, (x, gamma, beta, eps))


def layer_norm(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.2: ``student_fn(x, gamma, beta, eps)`` -> LayerNorm of ``x`` ``(..., D)``.

    ``gamma * (x - mean) / sqrt(var + eps) + beta``, mean and (biased) variance over each
    token's ``D`` features; ``gamma`` and ``beta`` ``(D,)``. As :class:`attnlib.blocks.LayerNorm`
    (and ``nn.LayerNorm``) computes it.
    """
    cases = [
        _ln_case("(B, T, D) = (2, 3, 8), eps=1e-5", (2, 3, 8), 1e-5, seed=91),
        _ln_case("tokens of D=4 features, eps=1e-6", (3, 5, 4), 1e-6, seed=92),
        _ln_case(
            "nearly constant features (variance ~ eps), eps=1e-5", (2, 4, 6), 1e-5, seed=93, spread=0.003
        ),
        _ln_case("a large eps=0.5", (2, 3, 5), 0.5, seed=94, spread=1.0),
        _ln_case("(T, D) = (5, 3), no batch axis", (5, 3), 1e-5, seed=95),
    ]
    wrong_dim = (
        "normalise each token's own D features: mean and variance over the last dimension only "
        "(dim=-1, keepdim=True)"
    )
    mistakes = [
        Mistake(
            "the variance divides by D, not D - 1: x.var() and x.std() are *unbiased* by default; use "
            "`((x - mean) ** 2).mean(dim=-1, keepdim=True)` (or `correction=0`), as nn.LayerNorm does",
            lambda *a: _ln(*a, correction=1),
        ),
        Mistake(
            "eps goes inside the square root: (x - mean) / sqrt(var + eps), not / (sqrt(var) + eps)",
            lambda *a: _ln(*a, eps_outside=True),
        ),
        Mistake(
            "eps is missing: divide by sqrt(var + eps) (it keeps nearly constant tokens from blowing up)",
            lambda x, g, b, eps: _ln(x, g, b, 0.0),
        ),
        Mistake(wrong_dim, lambda *a: _ln(*a, dims=(0,))),
        Mistake(wrong_dim, lambda *a: _ln(*a, dims=(-2,))),
        Mistake(wrong_dim, lambda x, g, b, eps: _ln(x, g, b, eps, dims=tuple(range(x.ndim)))),
        Mistake(
            "apply the learned scale and shift at the end: gamma * x_hat + beta",
            lambda *a: _ln(*a, affine=False),
        ),
        Mistake(
            "gamma scales and beta shifts: gamma * x_hat + beta, not the other way round",
            lambda *a: _ln(*a, swap=True),
        ),
    ]
    return run_check(
        "Exercise 9.2 — LayerNorm from scratch", student_fn, _reference_layer_norm, cases, mistakes
    )


def _reference_decoder_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    # The target mask the Transformer builds for its decoder's self-attention (padding & causal).
    vocab = max(int(tgt.max()), pad_id, 2) + 1
    with torch.device("meta"):  # masks need no weights: nothing is allocated, no seed is used
        model = Transformer(
            vocab, vocab, dim=2, n_heads=1, n_layers=1, hidden_dim=1, max_seq_len=64, pad_id=pad_id
        )
    return model.generate_mask(tgt, tgt)[1]  # (B, 1, Tt, Tt)


def _keys(tgt, pad_id):
    return (tgt != pad_id)[:, None, None, :]  # (B, 1, 1, Tt): True for real keys


def _future(tgt):
    return causal_mask(tgt.shape[1])  # (Tt, Tt)


def decoder_self_mask(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 9.3: ``student_fn(tgt, pad_id) -> (B, 1, Tt, Tt)`` bool, True = may attend.

    The mask of the decoder's self-attention: target position ``i`` may attend to position
    ``j`` when ``j <= i`` (causal) and ``tgt[b, j]`` is not padding. As
    ``Transformer.generate_mask`` builds it.
    """
    cases = [
        Case("one target, no padding, Tt=4", (torch.tensor([[1, 5, 6, 7]]), 0)),
        Case("two targets, the second padded", (torch.tensor([[1, 5, 6, 7, 8], [1, 9, 4, 0, 0]]), 0)),
        Case("pad_id=7", (torch.tensor([[1, 3, 4, 5, 7], [1, 3, 7, 7, 7], [1, 4, 4, 6, 2]]), 7)),
        Case("Tt=1: only <sos>", (torch.tensor([[1], [1]]), 0)),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend*: True on and below the diagonal "
            "(tril), False for padded keys",
            lambda t, p: ~_reference_decoder_mask(t, p),
        ),
        Mistake(
            "padded keys must be hidden too: combine the causal mask with the padding mask "
            "`(tgt != pad_id)[:, None, None, :]` using &",
            lambda t, p: _future(t)[None, None].expand(t.shape[0], 1, -1, -1),
        ),
        Mistake(
            "padded keys must be hidden too: combine the causal mask with the padding mask "
            "`(tgt != pad_id)[:, None, None, :]` using &",
            lambda t, p: _future(t)[None, None],
        ),
        Mistake(
            "the decoder must not look ahead: the causal mask (lower triangle) must hold too; combine "
            "the two with & (a key is visible only if it is real AND not in the future)",
            lambda t, p: _keys(t, p).expand(-1, -1, t.shape[1], -1),
        ),
        Mistake(
            "the decoder must not look ahead: the causal mask (lower triangle) must hold too; combine "
            "the two with & (a key is visible only if it is real AND not in the future)",
            _keys,
        ),
        Mistake(
            "the causal part must be the *lower* triangle: query i (row i) sees keys 0..i",
            lambda t, p: _keys(t, p) & _future(t).T,
        ),
        Mistake(
            "padding hides *keys* (the columns, last axis): `(tgt != pad_id)[:, None, None, :]`; you "
            "hid the padded query rows. (With right padding the real tokens' outputs come out the same, "
            "but the mask is not the Transformer's.)",
            lambda t, p: (t != p)[:, None, :, None] & _future(t),
        ),
        Mistake(
            "keep an axis for the heads: (B, 1, Tt, Tt), so that it broadcasts over (B, H, Tt, Tt) scores",
            lambda t, p: _reference_decoder_mask(t, p)[:, 0],
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers",
            lambda t, p: _reference_decoder_mask(t, p).float(),
        ),
        Mistake(
            "the mask must be boolean (dtype torch.bool), not 0/1 numbers",
            lambda t, p: _reference_decoder_mask(t, p).long(),
        ),
    ]
    return run_check(
        "Exercise 9.3 — the decoder's self-attention mask",
        student_fn,
        _reference_decoder_mask,
        cases,
        mistakes,
    )


# ---------------------------------------------------------------------------------------------
# Notebook 10
# ---------------------------------------------------------------------------------------------


def _reference_beam_step(
    scores: torch.Tensor, log_probs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # The bookkeeping of one step of Transformer.beam_search (which inlines these lines).
    b, k, v = log_probs.shape
    candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K, 1) + (B, K, V) -> (B, K*V)
    new_scores, index = candidates.topk(k, dim=-1)  # (B, K)
    return new_scores, index // v, index % v  # beam (B, K), token (B, K)


def _beam_case(name: str, scores: torch.Tensor, v: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(*scores.shape, v, generator=gen) * 2
    return Case(name, (scores, torch.log_softmax(logits, dim=-1)))


def _flat_topk(candidates: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return candidates.reshape(candidates.shape[0], -1).topk(k, dim=-1)


def beam_step(student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> Verdict:
    """Exercise 10.1: ``student_fn(scores, log_probs) -> (new_scores, beam, token)``, each ``(B, K)``.

    ``scores`` ``(B, K)`` the running log-probabilities of ``K`` beams, ``log_probs`` ``(B, K, V)``
    each beam's next-token log-probabilities. Keep the ``K`` best of all ``K x V`` extensions,
    best first: their total scores, the beam each extends and the token it appends.
    """
    # Beam 1's best token (0.9) beats every token of beam 0, but beam 0's running score wins.
    two_from_one = torch.log(torch.tensor([[[0.50, 0.40, 0.06, 0.04], [0.90, 0.05, 0.03, 0.02]]]))
    cases = [
        Case(
            "B=1, K=2, V=4: the two best extend the same beam", (torch.tensor([[-0.2, -2.5]]), two_from_one)
        ),
        _beam_case(
            "the first step: one live beam, scores [0, -inf, -inf], V=6",
            torch.tensor([[0.0, float("-inf"), float("-inf")]]),
            6,
            seed=102,
        ),
        _beam_case("B=2, K=3, V=7", torch.tensor([[-1.2, -1.9, -2.3], [-0.4, -0.6, -3.0]]), 7, seed=103),
        _beam_case("one beam, K=1: greedy decoding", torch.tensor([[-0.7]]), 5, seed=101),
    ]

    def flat(s, lp):
        return _flat_topk(s[..., None] + lp, s.shape[1])

    def forgot_score(s, lp):
        top, index = _flat_topk(lp, s.shape[1])
        return top, index // lp.shape[-1], index % lp.shape[-1]

    def per_beam(s, lp):
        best, token = lp.max(dim=-1)  # (B, K)
        return s + best, torch.arange(s.shape[1]).expand_as(s), token

    def swapped(s, lp):
        top, index = flat(s, lp)
        return top, index % lp.shape[-1], index // lp.shape[-1]

    def by_k(s, lp):
        top, index = flat(s, lp)
        return top, index // s.shape[1], index % s.shape[1]

    def step_scores(s, lp):
        _, index = flat(s, lp)
        return lp.reshape(lp.shape[0], -1).gather(1, index), index // lp.shape[-1], index % lp.shape[-1]

    def multiplied(s, lp):
        top, index = _flat_topk(s[..., None] * lp, s.shape[1])
        return top, index // lp.shape[-1], index % lp.shape[-1]

    mistakes = [
        Mistake(
            "add each beam's running score first, `scores[..., None] + log_probs`: a candidate is ranked by "
            "the log-probability of the whole prefix, not of its last token",
            forgot_score,
        ),
        Mistake(
            "choose the K best among all K x V candidates, not the best token of each beam: the two best "
            "candidates may well extend the same beam",
            per_beam,
        ),
        Mistake(
            "flattening (B, K, V) to (B, K*V) puts (beam, token) at index beam * V + token: "
            "beam = index // V, token = index % V (you swapped them)",
            swapped,
        ),
        Mistake(
            "flattening (B, K, V) to (B, K*V) puts (beam, token) at index beam * V + token: divide by V, the "
            "vocabulary size, not by K",
            by_k,
        ),
        Mistake(
            "return the new running scores (the totals of the chosen candidates), not only the last "
            "step's log-probabilities",
            step_scores,
        ),
        Mistake("log-probabilities add up (the probabilities multiply): scores + log_probs", multiplied),
    ]
    return run_check(
        "Exercise 10.1 — one step of beam search", student_fn, _reference_beam_step, cases, mistakes
    )


#: The Transformer of exercise 10.2.
MAPS_MODEL = {"dim": 64, "n_heads": 8, "n_layers": 2, "hidden_dim": 128}


def _attention_maps_per_example() -> int:
    with _seeded(0):
        model = Transformer(10, 10, dropout=0.0, **MAPS_MODEL).eval()
    with torch.no_grad():
        model(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 4, 2]]))
    weights = model.attention_weights()  # each (B, L, H, Tq, Tk)
    return sum(w.shape[1] * w.shape[2] for w in weights.values())


def attention_map_count(answer: Any) -> Verdict:
    """Exercise 10.2 (prediction): how many attention weight maps (one ``Tq x Tk`` matrix each)
    ``model.attention_weights()`` holds for one example of
    ``Transformer(V, V, dim=64, n_heads=8, n_layers=2, hidden_dim=128)``.
    """
    title = "Exercise 10.2 — count the attention maps"
    expected = _attention_maps_per_example()
    h, layers = MAPS_MODEL["n_heads"], MAPS_MODEL["n_layers"]
    kinds = "encoder self-attention, decoder (masked) self-attention and cross-attention"
    hints = {
        layers * h: f"a map per layer and head, yes, but of three kinds: {kinds}",
        2 * layers * h: f"a decoder layer has *two* attentions (masked self and cross): three kinds, {kinds}",
        3 * layers: f"each of the {h} heads has its own map",
        3 * h: f"every layer has its own {h} heads: count the {layers} layers too",
        4 * layers * h: "the encoder layer has one attention, the decoder layer two: three kinds, not four",
        6 * layers * h: f"n_layers={layers} means {layers} encoder and {layers} decoder layers, not {layers} "
        "of each per side",
    }
    generic = f"count layers x heads for each kind: {kinds}"
    is_whole = (
        isinstance(answer, (int, float)) and not isinstance(answer, bool) and float(answer).is_integer()
    )
    return check_answer(title, answer, expected, hints.get(int(answer), generic) if is_whole else generic)


# The toy next-token table of exercise 10.3: probability of the next token given the last one.
PAD_ID, SOS_ID, EOS_ID = 0, 1, 2
TABLE_TOKENS = ("<pad>", "<sos>", "<eos>", "a", "b")
NEXT_TOKEN = {  # last token -> {next token: probability}
    "<sos>": {"a": 0.5, "b": 0.4, "<eos>": 0.1},
    "a": {"<eos>": 0.4, "a": 0.3, "b": 0.3},
    "b": {"<eos>": 0.9, "a": 0.05, "b": 0.05},
}


def _table() -> torch.Tensor:
    """``(V, V)`` next-token probabilities; rows never reached are uniform."""
    v = len(TABLE_TOKENS)
    table = torch.full((v, v), 1.0 / v)
    for last, row in NEXT_TOKEN.items():
        table[TABLE_TOKENS.index(last)] = 0.0
        for token, prob in row.items():
            table[TABLE_TOKENS.index(last), TABLE_TOKENS.index(token)] = prob
    return table


class _TableModel(Transformer):
    """attnlib's Transformer whose next-token log-probabilities come from the toy table, so that
    its own ``greedy_decode`` and ``beam_search`` run on it."""

    def __init__(self) -> None:
        v = len(TABLE_TOKENS)
        super().__init__(v, v, dim=2, n_heads=1, n_layers=1, hidden_dim=1, max_seq_len=8, dropout=0.0)
        self.log_table = _table().log()

    def _next_log_probs(self, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return self.log_table[ys[:, -1]]  # (B, V): depends on the last token only


def _decode_table(beam_size: int | None) -> str:
    with _seeded(0):
        model = _TableModel()
    src = torch.tensor([[3]])  # any source: the table ignores it
    if beam_size is None:
        tokens, _ = model.greedy_decode(src, max_len=5)
    else:
        tokens, _ = model.beam_search(src, max_len=5, beam_size=beam_size)
    out = []
    for t in tokens[0].tolist():
        if t == EOS_ID:
            break
        out.append(TABLE_TOKENS[t])
    return "".join(out)


def _as_letters(answer: Any) -> Any:
    if isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer):
        answer = "".join(answer)
    if isinstance(answer, str):
        return answer.replace("<eos>", "").replace(" ", "").strip().lower()
    return answer


def greedy_vs_beam(greedy_output: Any, beam_output: Any) -> Verdict:
    """Exercise 10.3 (prediction): what greedy decoding and beam search with ``K = 2`` write for
    the toy table :data:`NEXT_TOKEN` (the letters before ``<eos>``, e.g. ``"ab"``).
    """
    title = "Exercise 10.3 — greedy versus beam search"
    if greedy_output is ... or beam_output is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    greedy, beam = _decode_table(None), _decode_table(2)
    greedy_answer, beam_answer = _as_letters(greedy_output), _as_letters(beam_output)
    greedy_hint = (
        "after 'a' the most likely next token is <eos> (0.4, more than 0.3 for a or b)"
        if isinstance(greedy_answer, str) and greedy_answer.startswith("a")
        else "greedy takes the most likely token at every step and never looks back: after <sos> that is "
        "'a' (0.5)"
    )
    beam_hint = (
        "after step 1 the two beams are 'a' (0.5) and 'b' (0.4); then whole sequences compete: "
        "a <eos> = 0.5 x 0.4 = 0.2, but b <eos> = 0.4 x 0.9 = 0.36"
    )
    parts = [
        check_answer("greedy", greedy_answer, greedy, greedy_hint),
        check_answer("beam search, K=2", beam_answer, beam, beam_hint),
    ]
    if all(parts):
        p_greedy, p_beam = _sequence_probability(greedy), _sequence_probability(beam)
        return Verdict(
            True,
            f"{PASS} {title}: right, greedy writes {greedy!r} (probability {p_greedy:.2f}) and beam "
            f"search finds {beam!r} ({p_beam:.2f}): the best first token is not always the start of "
            "the best sequence.",
            "pass",
        )
    lines = [f"{FAIL} {title}:"] + ["   " + p.message.replace("\n", "\n   ") for p in parts if not p]
    return Verdict(False, "\n".join(lines))


def _sequence_probability(letters: str) -> float:
    tokens = ["<sos>", *letters, "<eos>"]
    return math.prod(NEXT_TOKEN[a][b] for a, b in itertools.pairwise(tokens))
