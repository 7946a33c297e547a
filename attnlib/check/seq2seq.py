"""Exercise checks for notebooks 07 (seq2seq without attention), 08 (Bahdanau attention) and
09 (Luong attention); see attnlib.check._core.

Shapes: ``N`` sequences, ``B`` batch, ``Ts`` source length, ``Tt`` target length (SOS ... EOS),
``Tq`` decoder steps scored at once, ``H`` hidden size, ``L`` LSTM layers, ``V`` vocabulary,
``D`` half-window of local attention.

The references are attnlib's own code: :func:`attnlib.data.pad_sequences`, ``Seq2Seq.encode``,
the scorers' ``score`` (``AttentionParams``, ``AttentionGeneral``), ``LocalAttention``'s predicted
positions, ``DecoderWithAttention`` and :func:`attnlib.scorers.make_attention`. Three small steps
that attnlib computes inline rather than as functions are written here from attnlib's pieces:
the teacher-forcing shift (``Seq2Seq``/``Transformer.forward`` and ``sequence_loss``), the context
from scores (``DecoderWithAttention.forward``) and the local-p window weighting
(``LocalAttention.attend``); tests/test_checks_seq2seq.py proves each agrees with the code that
inlines it. Inputs come from local ``torch.Generator`` s and modules are built inside
``torch.random.fork_rng``, so a check never moves the global seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..data import pad_sequences
from ..functional import masked_softmax
from ..scorers import SCORERS, AttentionGeneral, AttentionParams, LocalAttention, make_attention
from ..seq2seq import Decoder, DecoderWithAttention, Encoder, LuongDecoder, Seq2Seq
from ._core import FAIL, PASS, TODO, Case, Mistake, Verdict, check_answer, run_check, seeded

__all__ = [
    "additive_scores",
    "attention_context",
    "context_size",
    "decoder_step",
    "general_scores",
    "local_p_position",
    "local_p_weights",
    "luong_step",
    "pad_batch",
    "reverse_source",
    "scorer_parameters",
]


def _lengths_mask(lengths: list[int], ts: int) -> torch.Tensor:
    return torch.arange(ts)[None, :] < torch.tensor(lengths)[:, None]  # (B, Ts), True = real token


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _require_integer_ids(verdict: Verdict, title: str, student_fn: Callable[..., Any], case: Case) -> Verdict:
    """``same`` compares values only; token ids must also *be* integers (``nn.Embedding`` needs them)."""
    if not verdict:
        return verdict
    got = case.call(student_fn)
    if got.is_floating_point() or got.dtype == torch.bool:
        return Verdict(
            False,
            f"{FAIL} {title}: the values are right, but the dtype is {got.dtype}.\n"
            "   hint: token ids must be integers for nn.Embedding: build the tensor with "
            "`dtype=torch.long` (torch.zeros and torch.ones make floats)",
        )
    return verdict


# ---------------------------------------------------------------------------------------------
# Notebook 07
# ---------------------------------------------------------------------------------------------


def _left_padded(seqs: list[list[int]], pad_id: int) -> torch.Tensor:
    t = max(len(s) for s in seqs)
    return torch.tensor([[pad_id] * (t - len(s)) + list(s) for s in seqs])


def pad_batch(student_fn: Callable[[list[list[int]], int], torch.Tensor]) -> Verdict:
    """Exercise 7.1: ``student_fn(seqs, pad_id) -> (N, T)`` integer ids, padded on the right.

    ``seqs`` is a list of ``N`` lists of ids of different lengths; ``T`` is the longest length
    and every shorter row is filled up with ``pad_id`` after its real ids, as
    :func:`attnlib.data.pad_sequences` does.
    """
    title = "Exercise 7.1 — pad a batch"
    cases = [
        Case("three sequences, pad_id=0", ([[5, 6, 7], [8, 9], [4]], 0)),
        Case("the longest sequence is not the first", ([[3, 4], [5, 6, 7, 8, 9], [10, 11, 12]], 0)),
        Case("pad_id=13", ([[4, 5, 6], [7], [8, 9]], 13)),
        Case("all of the same length: nothing to pad", ([[1, 2], [3, 4]], 0)),
        Case("one sequence of one id", ([[7]], 0)),
    ]
    mistakes = [
        Mistake(
            "pad on the right: the real ids start at position 0 and the padding comes after them "
            "(the encoder and the masks of attnlib assume right padding)",
            _left_padded,
        ),
        Mistake(
            "fill with `pad_id`, not with 0: the padding id is an argument",
            lambda seqs, pad_id: pad_sequences(seqs, 0),
        ),
        Mistake(
            "return one tensor (e.g. `torch.full((N, T), pad_id, dtype=torch.long)` filled row by row), "
            "not a Python list",
            lambda seqs, pad_id: pad_sequences(seqs, pad_id).tolist(),
        ),
    ]
    verdict = run_check(title, student_fn, pad_sequences, cases, mistakes)
    return _require_integer_ids(verdict, title, student_fn, cases[0])


def _reversed_source(src: torch.Tensor, pad_id: int, *, pad: int | None = None) -> torch.Tensor:
    """Each row's real tokens in reverse order, the padding left where it was (on the right).

    ``pad`` is the id treated as padding (``pad_id`` unless a mistake says otherwise)."""
    pad = pad_id if pad is None else pad
    lengths = (src != pad).sum(dim=1, keepdim=True)  # (B, 1)
    index = lengths - 1 - torch.arange(src.shape[1])  # (B, Ts): position to read, < 0 in the padding
    reversed_ = src.gather(1, index.clamp(min=0))  # (B, Ts)
    return torch.where(index >= 0, reversed_, torch.full_like(src, pad_id))


def _ids(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])  # (B, Ts), padded on the right


def reverse_source(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 7.2: ``student_fn(src, pad_id) -> (B, Ts)``: every source reversed, padding kept
    on the right (Sutskever et al., 2014, §3.3).

    ``src`` ``(B, Ts)`` holds token ids padded on the right with ``pad_id``.
    """
    cases = [
        Case("one source, no padding", (_ids([[5, 6, 7, 8]], 0), 0)),
        Case("a padded batch", (_ids([[5, 6, 7, 8], [9, 10], [11, 12, 13]], 0), 0)),
        Case("a source of one token", (_ids([[4], [5, 6, 7]], 0), 0)),
        Case("padding id 3 (not 0)", (_ids([[5, 6, 7], [8, 9]], 3), 3)),
    ]
    mistakes = [
        Mistake(
            "compare with pad_id, not with 0: the padding id is an argument",
            lambda s, p: _reversed_source(s, p, pad=0),
        ),
        Mistake(
            "the padding moved to the front: flipping a whole row reverses the <pad> tokens too. "
            "Reverse only each row's real tokens (its length is the number of tokens != pad_id) and "
            "keep the padding on the right, where the encoder expects it",
            lambda s, p: s.flip(1),
        ),
        Mistake(
            "you reversed the order of the sequences in the batch (dim 0); reverse along time (dim 1)",
            lambda s, p: s.flip(0),
        ),
    ]
    return run_check(
        "Exercise 7.2 — reverse the source, keep the padding", student_fn, _reversed_source, cases, mistakes
    )


#: The model of exercise 7.3 (vocabulary size, hidden size H, layers L).
CONTEXT_MODEL = {"vocab_size": 14, "hidden_size": 32, "num_layers": 3}


def _numbers_from_encoder(length: int) -> int:
    """Numbers the decoder of a no-attention Seq2Seq receives for one source of ``length`` ids."""
    v, h, layers = CONTEXT_MODEL.values()
    with seeded(0):
        model = Seq2Seq(Encoder(v, h, layers), Decoder(v, h, layers), "cpu")
    src = torch.full((1, length), 7)  # (1, Ts): any digit
    with torch.no_grad():
        _, hidden, cell, _ = model.encode(src)
    return hidden.numel() + cell.numel()


def _context_hint(answer: Any, length: int) -> str:
    h, layers = CONTEXT_MODEL["hidden_size"], CONTEXT_MODEL["num_layers"]
    hints = {
        layers * h: "an LSTM hands over two states, hidden *and* cell: count both",
        2 * h: f"each of the {layers} layers has its own hidden and cell state",
        h: f"count every layer's hidden and cell state: two tensors of shape (L, B, H) = ({layers}, 1, {h})",
        4 * layers * h: "Seq2Seq.encode adds the two directions' final states: (2L, B, H) -> (L, B, H)",
    }
    generic = (
        "Seq2Seq.encode hands the decoder `hidden` and `cell`, each (L, B, H) after adding the two directions"
    )
    if not isinstance(answer, (int, float)) or isinstance(answer, bool):
        return generic
    if answer in hints:
        return hints[answer]
    if answer and answer % length == 0:
        return (
            "the decoder without attention never sees the encoder outputs (one per position): only the "
            "final states reach it, and their size does not depend on the length"
        )
    return generic


def context_size(numbers_for_5_digits: Any, numbers_for_50_digits: Any) -> Verdict:
    """Exercise 7.3 (prediction): how many numbers the decoder of
    ``Seq2Seq(Encoder(14, 32, 3), Decoder(14, 32, 3), "cpu")`` receives from the encoder for one
    source of 5 digits, and for one of 50 digits (``hidden`` and ``cell`` together).
    """
    title = "Exercise 7.3 — the size of the bottleneck"
    if numbers_for_5_digits is ... or numbers_for_50_digits is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    parts = [
        check_answer(f"{n} digits", answer, _numbers_from_encoder(n), _context_hint(answer, n))
        for n, answer in ((5, numbers_for_5_digits), (50, numbers_for_50_digits))
    ]
    if all(parts):
        return Verdict(
            True,
            f"{PASS} {title}: right, {_numbers_from_encoder(5)} numbers for 5 digits and for 50 alike: "
            "one fixed-size state, whatever the length.",
            "pass",
        )
    lines = [f"{FAIL} {title}:"] + ["   " + p.message.replace("\n", "\n   ") for p in parts if not p]
    if numbers_for_5_digits != numbers_for_50_digits:
        lines.append("   (one more thing: the final state has the same size for every length)")
    return Verdict(False, "\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Notebook 08
# ---------------------------------------------------------------------------------------------


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
    return Case(name, (scores, outputs, _lengths_mask(lengths, ts)))


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
    v, h, b = 9, 4, len(lengths)
    with seeded(seed):
        decoder = DecoderWithAttention(v, h, layers, AttentionParams(h))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(3, v, (b,), generator=gen)  # (B,) previous tokens
    hidden, cell = torch.randn(layers, b, h, generator=gen), torch.randn(layers, b, h, generator=gen)
    outputs = torch.randn(b, ts, h, generator=gen)  # (B, Ts, H)
    return Case(name, (decoder, x, hidden, cell, outputs, _lengths_mask(lengths, ts)))


def _part(fn: Callable[..., Any], index: int) -> Callable[..., Any]:
    """``fn``'s result number ``index`` when it returns ``(logits, hidden, cell)``, else the result itself."""

    def part(*args: Any) -> Any:
        out = fn(*args)
        return out[index] if isinstance(out, (tuple, list)) and len(out) == 3 else out

    return part


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
    verdict = run_check(title, _part(student_fn, 0), _part(_reference_step, 0), cases, mistakes)
    for index, name in ((1, "hidden"), (2, "cell")):
        if not verdict:
            break
        state_mistakes = [
            Mistake(
                f"the logits are right; now return the LSTM's *new* {name} state (for the next step), "
                f"not the {name} that came in",
                lambda d, x, h, c, enc, m, i=index: (h, c)[i - 1],
            ),
            Mistake(
                "return the three results in the order (logits, hidden, cell)",
                lambda *a, i=index: _step(*a)[3 - i],
            ),
            Mistake(
                "return three things, (logits, hidden, cell), as DecoderWithAttention does",
                lambda *a: _step(*a)[0],
            ),
        ]
        verdict = run_check(
            title, _part(student_fn, index), _part(_reference_step, index), cases, state_mistakes
        )
    return verdict


# ---------------------------------------------------------------------------------------------
# Notebook 09
# ---------------------------------------------------------------------------------------------


def _reference_general(query: torch.Tensor, keys: torch.Tensor, w_a: torch.Tensor) -> torch.Tensor:
    with seeded(0):
        attention = AttentionGeneral(keys.shape[-1])
    with torch.no_grad():
        attention.W_a.weight.copy_(w_a)
        return attention.score(query, keys)  # (B, Tq, Ts)


def _general_case(name: str, b: int, tq: int, ts: int, h: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(b, tq, h), (b, ts, h), (h, h)]
    return Case(name, tuple(torch.randn(s, generator=gen) for s in shapes))


def general_scores(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.1: ``student_fn(query, keys, w_a) -> scores (B, Tq, Ts)``.

    Luong's *general* score ``h_tᵀ W_a h_s`` of every decoder state (``query`` ``(B, Tq, H)``)
    with every encoder output (``keys`` ``(B, Ts, H)``); ``w_a`` ``(H, H)`` is the weight of
    ``nn.Linear(H, H, bias=False)``, so ``W_a h_s`` is ``keys @ w_a.T``. As
    ``AttentionGeneral.score`` computes it.
    """
    cases = [
        _general_case("one decoder step: B=2, Tq=1, Ts=5, H=4", 2, 1, 5, 4, seed=81),
        _general_case("B=1, Tq=Ts=3, H=2", 1, 3, 3, 2, seed=82),
        _general_case("B=2, Tq=4, Ts=6, H=3", 2, 4, 6, 3, seed=83),
    ]

    def bilinear(q, k, w):
        return q @ w @ k.transpose(1, 2)  # (B, Tq, H) @ (H, H) @ (B, H, Ts) -> (B, Tq, Ts)

    mistakes = [
        Mistake(
            "W_a is transposed: h_tᵀ W_a h_s is `query @ w_a @ keys.transpose(1, 2)` (with nn.Linear, "
            "W_a h_s is `keys @ w_a.T`)",
            lambda q, k, w: bilinear(q, k, w.T),
        ),
        Mistake(
            "that is Luong's *dot* score: *general* puts the learned matrix W_a between h_t and h_s",
            lambda q, k, w: q @ k.transpose(1, 2),
        ),
        Mistake(
            "the general score has no 1/sqrt(H) scaling (that is scaled_dot's)",
            lambda q, k, w: bilinear(q, k, w) / q.shape[-1] ** 0.5,
        ),
        Mistake(
            "return the scores, before the softmax",
            lambda q, k, w: torch.softmax(bilinear(q, k, w), dim=-1),
        ),
        Mistake(
            "rows are decoder steps (queries), columns source positions: (B, Tq, Ts), not its transpose",
            lambda q, k, w: bilinear(q, k, w).transpose(1, 2),
        ),
    ]
    return run_check("Exercise 9.1 — Luong's general score", student_fn, _reference_general, cases, mistakes)


def _reference_position(query: torch.Tensor, w_p: torch.Tensor, v_p: torch.Tensor, mask: torch.Tensor):
    h = query.shape[-1]
    with seeded(0):  # p_t does not depend on the window: any D that fits the source will do
        local = LocalAttention(h, min(1, (mask.shape[1] - 1) // 2), mode="p")
    with torch.no_grad():
        local.W_p.weight.copy_(w_p)
        local.v_p.weight.copy_(v_p[None, :])  # (1, H): nn.Linear(H, 1)
        local.attend(query, torch.zeros(*mask.shape, h), mask)  # the keys do not matter for p_t
    return local.last_positions  # (B, Tq)


def _position(query, w_p, v_p, mask, *, length=None, transpose=False, tanh=True, sigmoid=True):
    s = mask.sum(dim=1) if length is None else length(mask)  # (B,)
    gate = (torch.tanh if tanh else (lambda t: t))(query @ (w_p if transpose else w_p.T)) @ v_p  # (B, Tq)
    return s[:, None] * (torch.sigmoid(gate) if sigmoid else gate)  # (B, Tq)


def _position_case(name: str, b: int, tq: int, h: int, lengths: list[int], ts: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    query = torch.randn(b, tq, h, generator=gen)
    w_p, v_p = torch.randn(h, h, generator=gen), torch.randn(h, generator=gen) * 2
    return Case(name, (query, w_p, v_p, _lengths_mask(lengths, ts)))


def local_p_position(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.2: ``student_fn(query, w_p, v_p, mask) -> p (B, Tq)``.

    Local-p's predicted source position ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` for each
    decoder state of ``query`` ``(B, Tq, H)``; ``w_p`` ``(H, H)`` is an ``nn.Linear`` weight
    (``W_p h_t`` is ``query @ w_p.T``), ``v_p`` ``(H,)``, ``mask`` ``(B, Ts)`` True for real source
    tokens, and ``S`` each source's real length. As ``LocalAttention(mode="p")`` computes it.
    """
    cases = [
        _position_case("B=1, one step, a source of 7 (no padding)", 1, 1, 4, [7], 7, seed=84),
        _position_case("B=2, the second source padded (4 of 8 real)", 2, 1, 4, [8, 4], 8, seed=85),
        _position_case("B=2, three steps at once, H=5", 2, 3, 5, [6, 9], 9, seed=86),
    ]
    mistakes = [
        Mistake(
            "S is each source's *real* length, `mask.sum(dim=1)`, not the padded length Ts: p_t must "
            "land inside the real sentence",
            lambda q, w, v, m: _position(
                q, w, v, m, length=lambda mm: torch.full((mm.shape[0],), mm.shape[1])
            ),
        ),
        Mistake(
            "W_p is an nn.Linear weight (out, in): W_p h_t is `query @ w_p.T`",
            lambda q, w, v, m: _position(q, w, v, m, transpose=True),
        ),
        Mistake(
            "Luong (and attnlib) scale by S itself, not S - 1",
            lambda q, w, v, m: _position(q, w, v, m, length=lambda mm: mm.sum(dim=1) - 1),
        ),
        Mistake(
            "the tanh is missing: v_pᵀ tanh(W_p h_t)",
            lambda q, w, v, m: _position(q, w, v, m, tanh=False),
        ),
        Mistake(
            "the sigmoid is missing: it squeezes the gate into (0, 1), so that p_t lies in (0, S)",
            lambda q, w, v, m: _position(q, w, v, m, sigmoid=False),
        ),
        Mistake(
            "keep p_t real-valued: the window is centred on round(p_t), but the Gaussian of exercise 9.3 "
            "uses p_t itself (and a rounded p_t would pass no gradient to W_p and v_p)",
            lambda q, w, v, m: _position(q, w, v, m).round(),
        ),
        Mistake(
            "S has shape (B,): to scale each source's row of p, give it a trailing axis, "
            "`mask.sum(dim=1, keepdim=True)` (B, 1); (B, Tq) * (B,) multiplies the wrong way",
            lambda q, w, v, m: torch.sigmoid(torch.tanh(q @ w.T) @ v) * m.sum(dim=1),
        ),
        Mistake(
            "return (B, Tq): squeeze the last axis of the gate, e.g. `.squeeze(-1)`",
            lambda q, w, v, m: _position(q, w, v, m)[..., None],
        ),
    ]
    return run_check(
        "Exercise 9.2 — local-p: the predicted position", student_fn, _reference_position, cases, mistakes
    )


def _local_p(
    scores,
    p,
    mask,
    half_window,
    *,
    sigma=None,
    window=True,
    renormalise_window=True,
    centre=None,
    factor=2.0,
    gaussian=True,
    renormalise=False,
    pad=True,
    strict=False,
):
    """Local-p weights with knobs for the typical slips; all knobs at their default give attnlib's."""
    ts = scores.shape[-1]
    positions = torch.arange(ts, dtype=scores.dtype)  # (Ts,)
    centre = p.round() if centre is None else centre(p)  # (B, Tq)
    offset = (positions[None, None, :] - centre[:, :, None]).abs()  # (B, Tq, Ts)
    in_window = offset < half_window if strict else offset <= half_window
    visible = mask[:, None, :] if pad else torch.ones_like(in_window)  # (B, 1, Ts)
    if window and renormalise_window:
        visible = visible & in_window
    weights = masked_softmax(scores, visible)  # (B, Tq, Ts)
    if window and not renormalise_window:
        weights = weights * in_window
    if gaussian:
        sigma = half_window / 2 if sigma is None else sigma
        distance = positions[None, None, :] - p[:, :, None]  # (B, Tq, Ts)
        weights = weights * torch.exp(-(distance**2) / (factor * sigma**2))
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights


def _reference_local_p(scores: torch.Tensor, p: torch.Tensor, mask: torch.Tensor, half_window: int):
    # LocalAttention.attend for mode "p", with the scores and p_t given: softmax inside the window
    # [round(p_t) - D, round(p_t) + D] and the real tokens, times exp(-(s - p_t)² / (2σ²)), σ = D/2.
    return _local_p(scores, p, mask, half_window)


def _local_case(name: str, p: list[list[float]], lengths: list[int], ts: int, d: int, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(len(p), len(p[0]), ts, generator=gen)
    return Case(name, (scores, torch.tensor(p), _lengths_mask(lengths, ts), d))


def local_p_weights(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 9.3: ``student_fn(scores, p, mask, half_window) -> weights (B, Tq, Ts)``.

    ``scores`` ``(B, Tq, Ts)``, ``p`` ``(B, Tq)`` real-valued predicted positions, ``mask``
    ``(B, Ts)`` True for real source tokens, ``half_window`` ``D``. Softmax over the positions
    ``s`` with ``|s - round(p_t)| <= D`` that are real tokens (zero elsewhere), then times
    ``exp(-(s - p_t)² / (2σ²))`` with ``σ = D / 2``. As ``LocalAttention(mode="p")`` computes it.
    """
    cases = [
        _local_case("one step, p=4.3, D=2, Ts=9", [[4.3]], [9], 9, 2, seed=87),
        _local_case("p=0.8 near the start: the window is cut at 0", [[0.8]], [7], 7, 2, seed=88),
        _local_case(
            "B=2, three steps, the second source padded",
            [[1.2, 3.7, 5.6], [0.4, 2.6, 4.9]],
            [8, 5],
            8,
            2,
            seed=89,
        ),
        _local_case("D=1: windows of 3 positions", [[2.7, 6.2]], [10], 10, 1, seed=90),
        _local_case("D=3, p=6.6 near the end of a padded source", [[6.6], [3.2]], [8, 6], 9, 3, seed=91),
    ]
    mistakes = [
        Mistake(
            "positions outside the window [round(p_t) - D, round(p_t) + D] must get weight 0: leave them "
            "out of the softmax, together with the padding",
            lambda *a: _local_p(*a, window=False),
        ),
        Mistake(
            "zeroing the positions outside the window after the softmax leaves weights that sum to less "
            "than 1 before the Gaussian: mask them *before* the softmax",
            lambda *a: _local_p(*a, renormalise_window=False),
        ),
        Mistake(
            "sigma = D / 2 (Luong et al.): with sigma = D the Gaussian is twice as wide",
            lambda *a: _local_p(*a, sigma=a[3]),
        ),
        Mistake(
            "the exponent is -(s - p_t)² / (2 sigma²): the factor 2 is missing",
            lambda *a: _local_p(*a, factor=1.0),
        ),
        Mistake(
            "the Gaussian is centred on the real-valued p_t; only the window is centred on round(p_t)",
            _gaussian_at_round,
        ),
        Mistake(
            "multiply the window's softmax weights by the Gaussian exp(-(s - p_t)² / (2 sigma²))",
            lambda *a: _local_p(*a, gaussian=False),
        ),
        Mistake(
            "do not renormalise after the Gaussian: local-p's weights sum to less than 1, which is what "
            "favours positions near p_t",
            lambda *a: _local_p(*a, renormalise=True),
        ),
        Mistake(
            "padded positions got weight: the window must also leave out the padding (`mask`)",
            lambda *a: _local_p(*a, pad=False),
        ),
        Mistake(
            "centre the window on round(p_t), not on its integer part (floor)",
            lambda *a: _local_p(*a, centre=torch.floor),
        ),
        Mistake(
            "the window holds 2D + 1 positions: |s - round(p_t)| <= D, the ends included",
            lambda *a: _local_p(*a, strict=True),
        ),
    ]
    return run_check(
        "Exercise 9.3 — local-p: window and Gaussian", student_fn, _reference_local_p, cases, mistakes
    )


def _gaussian_at_round(scores, p, mask, half_window):
    weights = _local_p(scores, p, mask, half_window, gaussian=False)
    positions = torch.arange(scores.shape[-1], dtype=scores.dtype)
    distance = positions[None, None, :] - p.round()[:, :, None]
    return weights * torch.exp(-(distance**2) / (2 * (half_window / 2) ** 2))


#: Hidden size of exercise 9.4.
SCORER_HIDDEN = 64


def _scorer_parameter_counts() -> dict[str, int]:
    with seeded(0):
        return {name: _count(make_attention(name, SCORER_HIDDEN)) for name in SCORERS}


def _names_hint(names: set[str], expected: set[str]) -> str:
    h = SCORER_HIDDEN
    why = {
        "general": f"general has its matrix W_a ({h} x {h})",
        "concat": "concat (Bahdanau's additive score) has W, b and v",
        "local-m": "local-m restricts a *general* scorer to a window (attnlib's default), so it has W_a",
        "local-p": "local-p has W_p and v_p to predict p_t, plus the W_a of its general scorer",
        "dot": "dot is h_tᵀ h_s: nothing in it is learned",
        "scaled_dot": "scaled_dot divides by sqrt(H), a fixed number (a buffer in attnlib), not a parameter",
    }
    unknown = sorted(names - set(SCORERS))
    if unknown:
        return f"unknown name(s) {unknown}: use the names of attnlib.scorers.SCORERS, {list(SCORERS)}"
    wrong = sorted(names - expected) + sorted(expected - names)
    return "; ".join(why[n] for n in wrong)


def _concat_hint(answer: Any) -> str:
    h = SCORER_HIDDEN
    hints = {
        2 * h * h + h: "2H x H + H counts W and only one of the two H-sized pieces: attnlib's concat "
        "(AttentionParams) has both the bias b of nn.Linear(2H, H) and the vector v",
        2 * h * h: "nn.Linear(2H, H) has a bias b (H numbers), and there is v (H numbers)",
        2 * h * h + 2 * h * h: "W maps the 2H-wide [h_t; h_s] to H outputs: 2H x H weights, not 2H x 2H",
        h * h + 2 * h: "W acts on the concatenation [h_t; h_s], 2H inputs: 2H x H weights",
        h * h + h: "W acts on the concatenation [h_t; h_s], 2H inputs; and count the bias b and v",
    }
    generic = "concat = nn.Linear(2H, H) (weights and bias) plus the vector v of H numbers"
    is_whole = (
        isinstance(answer, (int, float)) and not isinstance(answer, bool) and float(answer).is_integer()
    )
    return hints.get(int(answer), generic) if is_whole else generic


def scorer_parameters(parameter_free: Any, concat_parameters: Any) -> Verdict:
    """Exercise 9.4 (prediction): which of ``attnlib.scorers.SCORERS`` have no parameters (a list
    of names), and how many parameters ``make_attention("concat", 64)`` has.
    """
    title = "Exercise 9.4 — which scorers learn?"
    if parameter_free is ... or concat_parameters is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace each `...` with your prediction.", "todo")
    counts = _scorer_parameter_counts()
    expected_names = sorted(n for n in SCORERS if counts[n] == 0)
    parts = []
    if isinstance(parameter_free, str) or not isinstance(parameter_free, (list, tuple, set)):
        parts.append(
            Verdict(
                False,
                f"{FAIL} parameter-free scorers: you answered {parameter_free!r}.\n"
                "   hint: answer with a list of names, e.g. ['dot', 'general']",
            )
        )
    else:
        names = {str(n).strip().lower() for n in parameter_free}
        if names == set(expected_names):
            parts.append(Verdict(True, ""))
        else:
            parts.append(
                Verdict(
                    False,
                    f"{FAIL} parameter-free scorers: you named {sorted(names)}; that is not it.\n"
                    f"   hint: {_names_hint(names, set(expected_names))}",
                )
            )
    parts.append(
        check_answer(
            "parameters of concat", concat_parameters, counts["concat"], _concat_hint(concat_parameters)
        )
    )
    if all(parts):
        return Verdict(
            True,
            f"{PASS} {title}: right, {expected_names} have no parameters and concat has "
            f"{counts['concat']} for H={SCORER_HIDDEN}.",
            "pass",
        )
    lines = [f"{FAIL} {title}:"] + ["   " + p.message.replace("\n", "\n   ") for p in parts if not p]
    return Verdict(False, "\n".join(lines))


def _luong_step(
    decoder,
    x,
    hidden,
    cell,
    encoder_outputs,
    mask,
    feed,
    *,
    new_query=True,
    feeding=True,
    context_first=True,
    squash=True,
    from_attentional=True,
    layer=-1,
):
    """One step of a :class:`LuongDecoder` from its parts, each typical slip a knob."""
    rnn_input = decoder.embedding(x)  # (B,) -> (B, H)
    rnn_input = torch.cat((rnn_input, feed if feeding else torch.zeros_like(feed)), dim=1)  # (B, 2H)
    outputs, (new_hidden, new_cell) = decoder.rnn(rnn_input.unsqueeze(1), (hidden, cell))  # (B, 1, H)
    query = (new_hidden if new_query else hidden)[layer].unsqueeze(1)  # (B, 1, H)
    scores = decoder.attention.score(query, encoder_outputs)  # (B, 1, Ts)
    weights = masked_softmax(scores, None if mask is None else mask[:, None, :])  # (B, 1, Ts)
    context = torch.bmm(weights, encoder_outputs).squeeze(1)  # (B, 1, Ts) @ (B, Ts, H) -> (B, H)
    h_t = outputs.squeeze(1)  # (B, H): the top layer's new state
    pair = (context, h_t) if context_first else (h_t, context)
    attentional = decoder.W_c(torch.cat(pair, dim=1))  # (B, 2H) -> (B, H)
    attentional = torch.tanh(attentional) if squash else attentional
    logits = decoder.fc(attentional if from_attentional else h_t)  # (B, V)
    return logits, new_hidden, new_cell, attentional


def _reference_luong_step(decoder, x, hidden, cell, encoder_outputs, mask, feed):
    decoder._feed = feed  # h~_{t-1}; a step other than 0 keeps it
    logits, hidden, cell = decoder(x, hidden, cell, encoder_outputs, mask, step=1)
    attentional, decoder._feed = decoder._feed, None
    return logits, hidden, cell, attentional


def _luong_case(name: str, lengths: list[int], ts: int, layers: int, seed: int) -> Case:
    v, h, b = 9, 4, len(lengths)
    with seeded(seed):
        decoder = LuongDecoder(v, h, layers, AttentionGeneral(h))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(3, v, (b,), generator=gen)  # (B,) previous tokens
    hidden, cell = torch.randn(layers, b, h, generator=gen), torch.randn(layers, b, h, generator=gen)
    outputs = torch.randn(b, ts, h, generator=gen)  # (B, Ts, H)
    feed = torch.randn(b, h, generator=gen)  # (B, H): h~_{t-1}
    return Case(name, (decoder, x, hidden, cell, outputs, _lengths_mask(lengths, ts), feed))


def _result(fn: Callable[..., Any], index: int) -> Callable[..., Any]:
    """Result number ``index`` of ``fn`` when it returns four things, else the result itself."""

    def part(*args: Any) -> Any:
        out = fn(*args)
        return out[index] if isinstance(out, (tuple, list)) and len(out) == 4 else out

    return part


def luong_step(student_fn: Callable[..., tuple]) -> Verdict:
    """Exercise 9.5 (build it): ``student_fn(decoder, x, hidden, cell, encoder_outputs, mask, feed)
    -> (logits, hidden, cell, attentional)``, one step of ``decoder``, a :class:`LuongDecoder`
    with input feeding, built from its parts (Luong et al., 2015, §3).

    ``x`` ``(B,)`` previous tokens, ``hidden`` and ``cell`` ``(L, B, H)``, ``encoder_outputs``
    ``(B, Ts, H)``, ``mask`` ``(B, Ts)`` True for real source tokens, ``feed`` ``(B, H)`` the
    previous attentional state; ``logits`` ``(B, V)``, ``attentional`` ``(B, H)``.
    """
    title = "Exercise 9.5 — one step of Luong's decoder"
    cases = [
        _luong_case("B=2, no padding", [5, 5], 5, layers=1, seed=91),
        _luong_case("B=2, the second source padded (2 of 5 real)", [5, 2], 5, layers=1, seed=92),
        _luong_case("B=3, two LSTM layers, padded sources", [6, 3, 4], 6, layers=2, seed=93),
    ]
    mistakes = [
        Mistake(
            "that is Bahdanau's order: the query must be the NEW top-layer state h_t, from the LSTM "
            "step you just ran, not the hidden that came in",
            lambda *a: _luong_step(*a, new_query=False)[0],
        ),
        Mistake(
            "`feed` (the previous attentional state) must join the embedded token as the LSTM's input: "
            "torch.cat((embedded, feed), dim=1)",
            lambda *a: _luong_step(*a, feeding=False)[0],
        ),
        Mistake(
            "W_c was built for [c_t; h_t], context first: torch.cat((context, h_t), dim=1)",
            lambda *a: _luong_step(*a, context_first=False)[0],
        ),
        Mistake(
            "the attentional state is tanh(W_c [c_t; h_t]): the tanh is missing",
            lambda *a: _luong_step(*a, squash=False)[0],
        ),
        Mistake(
            "predict from the attentional state h~_t = tanh(W_c[c_t; h_t]), not from h_t: "
            "otherwise the context never reaches the logits",
            lambda *a: _luong_step(*a, from_attentional=False)[0],
        ),
        Mistake(
            "the padding gets weight: mask the scores before the softmax (attnlib.masked_softmax, "
            "or masked_fill with -inf where mask is False)",
            lambda d, x, h, c, enc, m, f: _luong_step(d, x, h, c, enc, None, f)[0],
        ),
        Mistake(
            "with two LSTM layers the query is the TOP layer's state, hidden[-1], not hidden[0]",
            lambda *a: _luong_step(*a, layer=0)[0],
        ),
    ]
    verdict = run_check(title, _result(student_fn, 0), _result(_reference_luong_step, 0), cases, mistakes)
    for index, name in ((3, "attentional"), (1, "hidden"), (2, "cell")):
        if not verdict:
            break
        part_mistakes = [
            Mistake(
                "return the four results in the order (logits, hidden, cell, attentional)",
                lambda *a, i=index: _luong_step(*a)[{1: 2, 2: 1, 3: 1}[i]],
            ),
            Mistake(
                "the logits are right; now return the new attentional state tanh(W_c[c_t; h_t]) that "
                "the next step gets as `feed`, not the `feed` that came in"
                if name == "attentional"
                else f"the logits are right; now return the LSTM's NEW {name} state, not the one you got",
                lambda d, x, h, c, enc, m, f, i=index: {1: h, 2: c, 3: f}[i],
            ),
        ]
        verdict = run_check(
            title, _result(student_fn, index), _result(_reference_luong_step, index), cases, part_mistakes
        )
    return verdict
