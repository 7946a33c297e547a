"""Exercise checks for notebook 11 (the full Transformer); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` target length, ``L`` layers, ``H`` heads, ``K`` beams, ``V`` vocabulary.

The references are attnlib's own code: ``Transformer.attention_weights``,
``Transformer.greedy_decode`` and ``Transformer.beam_search``; for label smoothing, PyTorch's
``F.cross_entropy(..., label_smoothing=eps, ignore_index=pad_id)``. One step of beam search is inlined
in :func:`attnlib.decoding.beam_search` rather than a function, so :func:`_reference_beam_step`
repeats those three lines; tests/check/test_transformer.py checks it against an exhaustive search.
Inputs come from local ``torch.Generator`` s and models are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .. import Transformer
from ..i18n import N_, fmt
from ._core import (
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    generator,
    predictions_not_yet,
    run_check,
    seeded,
    slips,
    whole_number,
)
from ._reach import torch_api

__all__ = ["attention_map_count", "beam_step", "greedy_vs_beam", "label_smoothed_loss"]


def _reference_beam_step(
    scores: torch.Tensor, log_probs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # The bookkeeping of one step of attnlib.decoding.beam_search (which inlines these lines).
    b, k, v = log_probs.shape
    candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K, 1) + (B, K, V) -> (B, K*V)
    new_scores, index = candidates.topk(k, dim=-1)  # (B, K)
    return new_scores, index // v, index % v  # beam (B, K), token (B, K)


def _beam_case(name: str, scores: torch.Tensor, v: int, seed: int) -> Case:
    gen = generator(seed)
    logits = torch.randn(*scores.shape, v, generator=gen) * 2
    return Case(name, (scores, torch.log_softmax(logits, dim=-1)))


def _flat_topk(candidates: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return candidates.reshape(candidates.shape[0], -1).topk(k, dim=-1)


def beam_step(student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> Verdict:
    """Exercise 11.1: ``student_fn(scores, log_probs) -> (new_scores, beam, token)``, each ``(B, K)``.

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
            N_("the first step: one live beam, scores [0, -inf, -inf], V=6"),
            torch.tensor([[0.0, float("-inf"), float("-inf")]]),
            6,
            seed=102,
        ),
        _beam_case(N_("B=2, K=3, V=7"), torch.tensor([[-1.2, -1.9, -2.3], [-0.4, -0.6, -3.0]]), 7, seed=103),
        _beam_case(N_("one beam, K=1: greedy decoding"), torch.tensor([[-0.7]]), 5, seed=101),
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
        N_("Exercise 11.1 — one step of beam search"), student_fn, _reference_beam_step, cases, mistakes
    )


#: The Transformer of exercise 11.2.
MAPS_MODEL = {"dim": 64, "n_heads": 8, "n_layers": 2, "hidden_dim": 128}


def _attention_maps_per_example() -> int:
    with seeded(0):
        model = Transformer(10, 10, dropout=0.0, **MAPS_MODEL).eval()
    with torch.no_grad():
        model(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 4, 2]]))
    weights = model.attention_weights()  # each (B, L, H, Tq, Tk)
    return sum(w.shape[1] * w.shape[2] for w in weights.values())


def attention_map_count(answer: Any) -> Verdict:
    """Exercise 11.2 (prediction): how many attention weight maps (one ``Tq x Tk`` matrix each)
    ``model.attention_weights()`` holds for one example of
    ``Transformer(V, V, dim=64, n_heads=8, n_layers=2, hidden_dim=128)``.
    """
    title = N_("Exercise 11.2 — count the attention maps")
    expected = _attention_maps_per_example()
    h, layers = MAPS_MODEL["n_heads"], MAPS_MODEL["n_layers"]
    kinds = fmt("encoder self-attention, decoder (masked) self-attention and cross-attention")
    hints = {
        layers * h: fmt("a map per layer and head, yes, but of three kinds: {kinds}", kinds=kinds),
        2 * layers * h: fmt(
            "a decoder layer has *two* attentions (masked self and cross): three kinds, {kinds}", kinds=kinds
        ),
        3 * layers: fmt("each of the {h} heads has its own map", h=h),
        3 * h: fmt("every layer has its own {h} heads: count the {layers} layers too", h=h, layers=layers),
        4 * layers * h: N_(
            "the encoder layer has one attention, the decoder layer two: three kinds, not four"
        ),
        6 * layers * h: fmt(
            "n_layers={layers} means {layers} encoder and {layers} decoder layers, not {layers} "
            "of each per side",
            layers=layers,
        ),
    }
    generic = fmt("count layers x heads for each kind: {kinds}", kinds=kinds)
    return check_answer(title, answer, expected, hints.get(whole_number(answer), generic))


# The toy next-token table of exercise 11.3: probability of the next token given the last one.
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

    def next_log_probs(self, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return self.log_table[ys[:, -1]]  # (B, V): depends on the last token only


def _decode_table(beam_size: int | None) -> str:
    with seeded(0):
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
    """Exercise 11.3 (prediction): what greedy decoding and beam search with ``K = 2`` write for
    the toy table :data:`NEXT_TOKEN` (the letters before ``<eos>``, e.g. ``"ab"``).
    """
    title = N_("Exercise 11.3 — greedy versus beam search")
    if greedy_output is ... or beam_output is ...:
        return predictions_not_yet(title)
    greedy, beam = _decode_table(None), _decode_table(2)
    greedy_answer, beam_answer = _as_letters(greedy_output), _as_letters(beam_output)
    greedy_hint = (
        N_("after 'a' the most likely next token is <eos> (0.4, more than 0.3 for a or b)")
        if isinstance(greedy_answer, str) and greedy_answer.startswith("a")
        else N_(
            "greedy takes the most likely token at every step and never looks back: after <sos> that is "
            "'a' (0.5)"
        )
    )
    beam_hint = N_(
        "after step 1 the two beams are 'a' (0.5) and 'b' (0.4); then whole sequences compete: "
        "a <eos> = 0.5 x 0.4 = 0.2, but b <eos> = 0.4 x 0.9 = 0.36"
    )
    parts = [
        check_answer(N_("greedy"), greedy_answer, greedy, greedy_hint),
        check_answer(N_("beam search, K=2"), beam_answer, beam, beam_hint),
    ]
    p_greedy, p_beam = _sequence_probability(greedy), _sequence_probability(beam)
    return combined(
        title,
        parts,
        fmt(
            "right, greedy writes {greedy} (probability {p_greedy}) and beam search finds {beam} "
            "({p_beam}): the best first token is not always the start of the best sequence.",
            greedy=repr(greedy),
            p_greedy=f"{p_greedy:.2f}",
            beam=repr(beam),
            p_beam=f"{p_beam:.2f}",
        ),
    )


def _sequence_probability(letters: str) -> float:
    tokens = ["<sos>", *letters, "<eos>"]
    return math.prod(NEXT_TOKEN[a][b] for a, b in itertools.pairwise(tokens))


# ----------------------------------------------------------------------------- label smoothing


def _reference_smoothed_loss(
    logits: torch.Tensor, target: torch.Tensor, eps: float, pad_id: int
) -> torch.Tensor:
    v = logits.shape[-1]
    flat_logits, flat_target = logits.reshape(-1, v), target.reshape(-1)  # (B*T, V), (B*T,)
    return F.cross_entropy(flat_logits, flat_target, label_smoothing=eps, ignore_index=pad_id)


def _smoothed_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    eps: float,
    pad_id: int,
    *,
    spread_over_others: bool = False,
    weight_target: bool = True,
    ignore_pad: bool = True,
    divide_by_all: bool = False,
    per_sequence: bool = False,
    log_of_softmax: bool = False,
    naive_exp: bool = False,
    sum_over_classes: bool = False,
) -> torch.Tensor:
    """Label-smoothed cross-entropy with one knob per typical slip (all off: the right answer)."""
    v = logits.shape[-1]
    if naive_exp:  # exp of a large logit overflows to inf, and inf / inf is nan
        log_probs = torch.log(logits.exp() / logits.exp().sum(dim=-1, keepdim=True))
    elif log_of_softmax:  # a probability that underflows to 0 has log -inf
        log_probs = torch.log(torch.softmax(logits, dim=-1))
    else:
        log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T): -log p(target)
    # eps/V on every class, the target included; the slip puts eps/(V-1) on each class but the target
    total = -log_probs.sum(dim=-1)  # (B, T)
    uniform = total / v
    if spread_over_others:
        uniform = (total - nll) / (v - 1)
    if sum_over_classes:  # eps on every class instead of eps/V
        uniform = total
    loss = ((1 - eps) if weight_target else 1.0) * nll + eps * uniform  # (B, T)
    keep = target != pad_id  # (B, T)
    if not ignore_pad:
        return loss.mean()
    if divide_by_all:
        return (loss * keep).sum() / keep.numel()
    if per_sequence:
        return ((loss * keep).sum(dim=1) / keep.sum(dim=1)).mean()
    return loss[keep].mean()


def _smoothing_case(
    name: str,
    b: int,
    t: int,
    v: int,
    lengths: list[int],
    eps: float,
    pad_id: int,
    seed: int,
    scale: float = 2.0,
) -> Case:
    gen = generator(seed)
    logits = torch.randn(b, t, v, generator=gen) * scale  # (B, T, V)
    words = [i for i in range(v) if i != pad_id]
    target = torch.tensor(words)[torch.randint(len(words), (b, t), generator=gen)]  # (B, T), no pad yet
    for row, n in enumerate(lengths):
        target[row, n:] = pad_id  # padding after each sequence's end
    return Case(name, (logits, target, eps, pad_id))


def _number_as_tensor(student_fn: Any) -> Any:
    """``student_fn`` with a Python number result turned into a 0-dim tensor: the statement asks for
    "one number", so ``loss.item()`` is as right as ``loss``."""
    if not callable(student_fn):
        return student_fn  # run_check reports it

    def student(*args: Any) -> Any:
        got = student_fn(*args)
        if isinstance(got, (int, float)) and not isinstance(got, bool):
            return torch.tensor(float(got), dtype=torch.float64)  # () like F.cross_entropy's mean
        return got

    student.__wrapped__ = student_fn  # type: ignore[attr-defined]  # what out_of_reach looks into
    return student


#: Out of reach while exercise 11.4 runs: the text asks for the loss without it.
CROSS_ENTROPY = torch_api(
    "F.cross_entropy",
    (F, "cross_entropy"),
    hint=N_("mix the target's -log p and the mean -log p over the vocabulary, from torch.log_softmax"),
)
#: F.nll_loss picks the target's -log p: the first half of the smoothed loss, which 11.4 asks for.
NLL_LOSS = torch_api(
    "F.nll_loss",
    (F, "nll_loss"),
    hint=N_(
        "pick the target's log-probability yourself (`.gather`), then mix in the mean over the vocabulary"
    ),
)


def label_smoothed_loss(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 11.4: ``student_fn(logits, target, eps, pad_id)``, the label-smoothed cross-entropy of
    ``logits`` ``(B, T, V)`` against ``target`` ``(B, T)``, averaged over the positions whose target
    is not ``pad_id``; it must equal
    ``F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), label_smoothing=eps, ignore_index=pad_id)``.
    """
    cases = [
        _smoothing_case(N_("B=1, T=4, V=5, no padding, eps=0.1"), 1, 4, 5, [4], 0.1, 0, seed=111),
        _smoothing_case(
            N_("B=2, T=5, V=6, the second target padded after 2 tokens"), 2, 5, 6, [5, 2], 0.1, 0, seed=112
        ),
        _smoothing_case(
            N_("B=3, T=6, V=7, pad_id=3, eps=0.25, three lengths"), 3, 6, 7, [6, 1, 4], 0.25, 3, seed=113
        ),
        _smoothing_case(
            N_("logits in the hundreds (exp overflows)"), 2, 4, 6, [4, 3], 0.1, 0, seed=114, scale=100.0
        ),
    ]
    mistakes = slips(
        _smoothed_loss,
        [
            (
                N_(
                    "PyTorch spreads eps uniformly over all V classes, the target included: the target gets "
                    "1 - eps + eps/V and every other class eps/V (you spread eps over the V - 1 other "
                    "classes)"
                ),
                {"spread_over_others": True},
            ),
            (
                N_(
                    "the smoothed target is (1 - eps) * one-hot + eps/V on every class: weight the target's "
                    "-log p by 1 - eps"
                ),
                {"weight_target": False},
            ),
            (
                N_(
                    "positions whose target is pad_id must not count: leave them out of the sum and out of "
                    "the "
                    "count (`keep = target != pad_id`)"
                ),
                {"ignore_pad": False},
            ),
            (
                N_(
                    "you left the padding out of the sum but not out of the count: divide by the number of "
                    "non-padding positions (`keep.sum()`), not by B * T"
                ),
                {"divide_by_all": True},
            ),
            (
                N_(
                    "average over all non-padding tokens of the batch at once, not per sequence and then "
                    "over "
                    "the sequences: F.cross_entropy's mean weights every token the same, whatever its "
                    "sequence's "
                    "length"
                ),
                {"per_sequence": True},
            ),
            (
                N_(
                    "take log-probabilities with `torch.log_softmax(logits, dim=-1)`: log(softmax(x)) gives "
                    "log(0) = -inf once a probability underflows to 0"
                ),
                {"log_of_softmax": True},
            ),
            (
                N_(
                    "take log-probabilities with `torch.log_softmax(logits, dim=-1)`: exp of a large logit "
                    "overflows to inf (and inf / inf is nan); log_softmax subtracts the largest logit first"
                ),
                {"naive_exp": True},
            ),
            (
                N_(
                    "the uniform part puts eps/V on each class: average -log p over the V classes "
                    "(`.mean(dim=-1)`), do not sum it"
                ),
                {"sum_over_classes": True},
            ),
        ],
    )
    plain = Mistake(
        "with eps > 0 the target is not one-hot: weight the target's -log p by 1 - eps and add eps times "
        "the mean of -log p over all V classes (this is plain cross-entropy)",
        lambda logits, target, eps, pad_id: _smoothed_loss(logits, target, 0.0, pad_id),
    )
    return run_check(
        N_("Exercise 11.4 — label-smoothed cross-entropy"),
        _number_as_tensor(student_fn),
        _reference_smoothed_loss,
        cases,
        [*mistakes, plain],
        forbidden=[CROSS_ENTROPY, NLL_LOSS],
    )
