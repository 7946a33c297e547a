"""Exercise checks for notebook 08 (Bahdanau attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``Ts`` source length, ``H`` hidden size, ``L`` LSTM layers, ``V`` vocabulary.

The references are attnlib's own code: ``AttentionParams.score`` and ``DecoderWithAttention``.
The context from scores, which ``DecoderWithAttention.forward`` computes inline rather than as a
function, is written here from attnlib's pieces (:func:`attnlib.masked_softmax`, then the weighted
sum); tests/test_checks_bahdanau_attention.py proves it agrees with the code that inlines it.
Inputs come from local ``torch.Generator`` s and modules are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .. import AttentionParams, DecoderWithAttention, length_mask, masked_softmax
from ._core import Case, Mistake, Verdict, run_check, run_check_parts, seeded

__all__ = ["additive_scores", "attention_context", "decoder_step"]


def source_mask(lengths: list[int], ts: int) -> torch.Tensor:
    """``(B, Ts)`` bool, True for the real tokens of sources of these ``lengths``."""
    return length_mask(lengths, ts)[:, 0, 0]  # (B, 1, 1, Ts) -> (B, Ts)


#: Vocabulary and hidden size of the decoders whose step exercises 8.3 and 9.5 check.
STEP_VOCAB, STEP_HIDDEN = 9, 4


def decoder_case(
    name: str,
    make_decoder: Callable[[int, int, int], nn.Module],
    lengths: list[int],
    ts: int,
    layers: int,
    seed: int,
    *extra: int,
) -> Case:
    """One decoder step's inputs: ``(decoder, x, hidden, cell, encoder_outputs, mask, *more)``.

    ``make_decoder(V, H, L)`` builds the decoder (under ``seed``); ``mask`` ``(B, Ts)`` marks the real
    tokens of sources of these ``lengths``; ``extra`` are the widths of further random ``(B, width)``
    inputs (Luong's ``feed``).
    """
    v, h, b = STEP_VOCAB, STEP_HIDDEN, len(lengths)
    with seeded(seed):
        decoder = make_decoder(v, h, layers)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(3, v, (b,), generator=gen)  # (B,) previous tokens
    hidden, cell = torch.randn(layers, b, h, generator=gen), torch.randn(layers, b, h, generator=gen)
    outputs = torch.randn(b, ts, h, generator=gen)  # (B, Ts, H)
    more = tuple(torch.randn(b, width, generator=gen) for width in extra)
    return Case(name, (decoder, x, hidden, cell, outputs, source_mask(lengths, ts), *more))


def _reference_additive(
    query: torch.Tensor, keys: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    with seeded(0):
        attention = AttentionParams(keys.shape[-1])
    with torch.no_grad():
        attention.attn.weight.copy_(weight)
        attention.attn.bias.copy_(bias)
        attention.v.copy_(v)
        return attention.score(query[:, None, :], keys)[:, 0]  # (B, 1, Ts) -> (B, Ts)


def _additive(
    query, keys, weight, bias, v, *, keys_first=False, tanh=True, use_bias=True, tanh_outside=False
):
    ts = keys.shape[1]
    repeated = query[:, None, :].expand(-1, ts, -1)  # (B, H) -> (B, Ts, H)
    pair = (keys, repeated) if keys_first else (repeated, keys)
    energy = torch.cat(pair, dim=2) @ weight.T + (bias if use_bias else 0.0)  # (B, Ts, 2H) @ (2H, H)
    if tanh_outside:
        return torch.tanh(energy @ v)
    return (torch.tanh(energy) if tanh else energy) @ v  # (B, Ts, H) @ (H,) -> (B, Ts)


def _additive_case(name: str, b: int, ts: int, h: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    query, keys = torch.randn(b, h, generator=gen), torch.randn(b, ts, h, generator=gen)
    weight, bias, v = (
        torch.randn(h, 2 * h, generator=gen),
        torch.randn(h, generator=gen),
        torch.randn(h, generator=gen),
    )
    return Case(name, (query, keys, weight, bias, v))


def additive_scores(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 8.1: ``student_fn(query, keys, weight, bias, v) -> scores (B, Ts)``.

    Bahdanau's score ``v · tanh(W [s; h_j] + b)`` for every source position ``j``: ``query``
    ``(B, H)`` the decoder state ``s``, ``keys`` ``(B, Ts, H)`` the encoder outputs, ``weight``
    ``(H, 2H)`` and ``bias`` ``(H,)`` those of ``nn.Linear(2H, H)``, ``v`` ``(H,)``. As
    ``AttentionParams.score`` computes it.
    """
    cases = [
        _additive_case("B=1, Ts=3, H=2", 1, 3, 2, seed=71),
        _additive_case("B=2, Ts=5, H=4", 2, 5, 4, seed=72),
        _additive_case("B=3, Ts=4, H=3", 3, 4, 3, seed=73),
        _additive_case("one source position, Ts=1", 2, 1, 4, seed=74),
    ]
    mistakes = [
        Mistake(
            "the concatenation order matters: the decoder state comes first, [s; h_j], so the first H "
            "columns of W meet s (notebook 08 concatenates (query, encoder_outputs))",
            lambda *a: _additive(*a, keys_first=True),
        ),
        Mistake(
            "the tanh is missing: v · tanh(W [s; h_j] + b); without it the score is linear in s and h_j",
            lambda *a: _additive(*a, tanh=False),
        ),
        Mistake(
            "add the bias b of the linear layer: W [s; h_j] + b", lambda *a: _additive(*a, use_bias=False)
        ),
        Mistake(
            "the tanh goes inside, before the dot product with v: v · tanh(...), not tanh(v · ...)",
            lambda *a: _additive(*a, tanh_outside=True),
        ),
        Mistake(
            "return the scores, before the softmax: turning them into weights is the next step (8.2)",
            lambda *a: torch.softmax(_additive(*a), dim=-1),
        ),
    ]
    return run_check(
        "Exercise 8.1 — Bahdanau's additive score", student_fn, _reference_additive, cases, mistakes
    )


def _reference_context(
    scores: torch.Tensor, encoder_outputs: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    # Steps 2 and 3 of DecoderWithAttention.forward (its scorer's forward is masked_softmax of the scores).
    weights = masked_softmax(scores, mask)  # (B, Ts)
    return torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, H) -> (B, H)


def _weighted_sum(weights: torch.Tensor, encoder_outputs: torch.Tensor) -> torch.Tensor:
    return torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1)  # (B, H)


def _context_case(name: str, lengths: list[int], ts: int, h: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(len(lengths), ts, generator=gen) * 2
    outputs = torch.randn(len(lengths), ts, h, generator=gen)
    return Case(name, (scores, outputs, source_mask(lengths, ts)))


def attention_context(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 8.2: ``student_fn(scores, encoder_outputs, mask) -> context (B, H)``.

    ``scores`` ``(B, Ts)``, ``encoder_outputs`` ``(B, Ts, H)``, ``mask`` ``(B, Ts)`` bool, True
    for real source tokens. Softmax over the source positions with padding at zero weight, then
    the weighted sum of the encoder outputs (what ``DecoderWithAttention`` does at each step).
    """
    cases = [
        _context_case("B=1, Ts=4, no padding", [4], 4, 3, seed=75),
        _context_case("B=2, the second source padded (3 of 5 real)", [5, 3], 5, 4, seed=76),
        _context_case("B=3 sources of lengths 6, 2, 4", [6, 2, 4], 6, 2, seed=77),
        _context_case("one source position, Ts=1", [1, 1], 1, 4, seed=78),
    ]

    def masked(scores, mask):
        return scores.masked_fill(~mask, float("-inf"))

    mistakes = [
        Mistake(
            "padded positions got weight: fill their scores with -inf before the softmax "
            "(`scores.masked_fill(~mask, float('-inf'))`, or attnlib.masked_softmax(scores, mask))",
            lambda s, enc, m: _weighted_sum(torch.softmax(s, dim=-1), enc),
        ),
        Mistake(
            "the mask is inverted: True marks the *real* tokens, so fill the scores where the mask is False",
            lambda s, enc, m: _weighted_sum(torch.softmax(s.masked_fill(m, float("-inf")), dim=-1), enc),
        ),
        Mistake(
            "softmax over the source positions (dim=1, or dim=-1): dim=0 mixes the sentences of the batch",
            lambda s, enc, m: _weighted_sum(torch.softmax(masked(s, m), dim=0).nan_to_num(0.0), enc),
        ),
        Mistake(
            "zeroing the padded weights after the softmax leaves weights that sum to less than 1: mask the "
            "scores before the softmax",
            lambda s, enc, m: _weighted_sum(torch.softmax(s, dim=-1) * m, enc),
        ),
        Mistake(
            "the scores must become weights first: a softmax (over the real positions) before the "
            "weighted sum",
            lambda s, enc, m: _weighted_sum(s.masked_fill(~m, 0.0), enc),
        ),
        Mistake(
            "the context is the weighted *sum* over the positions (the weights already sum to 1), "
            "not the mean",
            lambda s, enc, m: (masked_softmax(s, m)[..., None] * enc).mean(dim=1),
        ),
        Mistake(
            "return one vector per sentence, (B, H): squeeze the step axis that bmm leaves, "
            "(B, 1, H) -> (B, H)",
            lambda s, enc, m: torch.bmm(masked_softmax(s, m).unsqueeze(1), enc),
        ),
    ]
    return run_check(
        "Exercise 8.2 — the context, padding masked", student_fn, _reference_context, cases, mistakes
    )


def _step(decoder, x, hidden, cell, encoder_outputs, mask, *, context_first=False):
    """A decoder step built from ``decoder``'s parts, with the order of the LSTM input as a knob."""
    embedded = decoder.embedding(x.unsqueeze(1))  # (B,) -> (B, 1, H)
    weights = decoder.attention(hidden, encoder_outputs, mask)  # (B, Ts)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, Ts) @ (B, Ts, H) -> (B, 1, H)
    pair = (context, embedded) if context_first else (embedded, context)
    outputs, (hidden, cell) = decoder.rnn(torch.cat(pair, dim=2), (hidden, cell))  # (B, 1, H)
    return decoder.fc(outputs.squeeze(1)), hidden, cell  # (B, V)


def _decoder_case(name: str, lengths: list[int], ts: int, layers: int, seed: int) -> Case:
    return decoder_case(
        name, lambda v, h, n: DecoderWithAttention(v, h, n, AttentionParams(h)), lengths, ts, layers, seed
    )


def _reference_step(decoder, x, hidden, cell, encoder_outputs, mask):
    return decoder(x, hidden, cell, encoder_outputs, mask)


def decoder_step(student_fn: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> Verdict:
    """Exercise 8.3 (find the bug): ``student_fn(decoder, x, hidden, cell, encoder_outputs, mask)
    -> (logits, hidden, cell)``, one step of ``decoder``, a :class:`DecoderWithAttention`.

    ``x`` ``(B,)`` previous tokens, ``hidden`` and ``cell`` ``(L, B, H)``, ``encoder_outputs``
    ``(B, Ts, H)``, ``mask`` ``(B, Ts)`` True for real source tokens; ``logits`` ``(B, V)``.
    """
    title = "Exercise 8.3 — find the bug in the decoder step"
    cases = [
        _decoder_case("B=2, no padding", [5, 5], 5, layers=1, seed=79),
        _decoder_case("B=2, the second source padded (2 of 5 real)", [5, 2], 5, layers=1, seed=80),
        _decoder_case("B=3, two LSTM layers, padded sources", [6, 3, 4], 6, layers=2, seed=81),
    ]
    mistakes = [
        Mistake(
            "this is still the bug: without the mask the attention gives weight to <pad> positions; "
            "pass it on, `decoder.attention(hidden, encoder_outputs, mask)`",
            lambda d, x, h, c, enc, m: _step(d, x, h, c, enc, None)[0],
        ),
        Mistake(
            "the mask is inverted: True marks the real source tokens, pass `mask` as it is",
            lambda d, x, h, c, enc, m: _step(d, x, h, c, enc, ~m)[0],
        ),
        Mistake(
            "the LSTM was built for [embedded; context] in this order: torch.cat((embedded, context), dim=2)",
            lambda *a: _step(*a, context_first=True)[0],
        ),
    ]

    def state_mistakes(index: int, name: str) -> list[Mistake]:
        return [
            Mistake(
                f"the logits are right; now return the LSTM's *new* {name} state (for the next step), "
                f"not the {name} that came in",
                lambda d, x, h, c, enc, m: (h, c)[index - 1],
            ),
            Mistake(
                "return the three results in the order (logits, hidden, cell)",
                lambda *a: _step(*a)[3 - index],
            ),
            Mistake(
                "return three things, (logits, hidden, cell), as DecoderWithAttention does",
                lambda *a: _step(*a)[0],
            ),
        ]

    by_result = {0: mistakes, 1: state_mistakes(1, "hidden"), 2: state_mistakes(2, "cell")}
    return run_check_parts(title, student_fn, _reference_step, cases, by_result, 3)
