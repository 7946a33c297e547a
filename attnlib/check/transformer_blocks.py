"""Exercise checks for notebook 10 (the Transformer's building blocks); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` positions, ``Ts``/``Tt`` source/target length, ``D`` model width,
``H`` heads, ``F`` feed-forward width.

The references are attnlib's own code or PyTorch's: the angle-addition formulas for the shift
matrix of the sinusoidal encoding (tests check it against the table),
``torch.nn.functional.rms_norm``, the padding-and-causal target mask of
``Transformer.generate_mask`` written out (tests check the two agree on left-padded targets), runs
of an untrained :class:`attnlib.blocks.DecoderLayer` for the shuffle prediction, a stack of
:class:`attnlib.blocks.EncoderLayer` s (pre-LN) with a final ``LayerNorm``, and
:class:`attnlib.blocks.DecoderLayer` (post-LN), whose weights the student's modules receive: the
two module exercises (10.4, 10.6) declare their specs here (what a module must hold, its typical
slips as a reference rewired by knobs) and run on the engine of :mod:`attnlib.check._modules`,
which also finds the student's sublayers and gives them the reference's weights by role. Inputs
come from local ``torch.Generator`` s and modules are built inside
:func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .. import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    Transformer,
    add_norm,
    causal_mask,
    combine_masks,
    length_mask,
)
from ..i18n import N_, fmt, tr
from ._core import (
    FAIL,
    Case,
    Mistake,
    Symptom,
    Verdict,
    as_numbers,
    check_answer,
    combined,
    describe,
    generator,
    predictions_not_yet,
    run_check,
    same,
    seeded,
    slips,
    whole_number,
)
from ._modules import (
    ModuleExercise,
    check_module,
    copy_weights,
    first_calls,
    in_call_order,
    received,
    sublayers,
)
from ._reach import own, torch_api

__all__ = [
    "decoder_layer",
    "decoder_shuffle",
    "left_padded_target_mask",
    "pre_ln_encoder",
    "rms_norm",
    "shift_matrix",
]


def _shift(k, dim, *, paired=False, sign=1.0, pair_exponent=2.0, unit_speed=False, one_step=False):
    """The shift matrix of the sines-then-cosines table, with knobs for the typical slips; all knobs
    at their default give the right one (``paired=True``: the block-diagonal R_k of the notebook)."""
    half = dim // 2
    omega = 1.0 / 10000.0 ** (pair_exponent * torch.arange(half, dtype=torch.float64) / dim)  # (D/2,)
    if unit_speed:
        omega = torch.ones(half, dtype=torch.float64)
    angle = (1 if one_step else k) * omega  # (D/2,): how far pair i turns
    c, s = torch.cos(angle), sign * torch.sin(angle)
    i = torch.arange(half)
    sin_col, cos_col = (2 * i, 2 * i + 1) if paired else (i, i + half)  # where pair i's sine and cosine sit
    m = torch.zeros(dim, dim, dtype=torch.float64)
    m[sin_col, sin_col], m[sin_col, cos_col] = c, s  # sin(a + b) = sin a cos b + cos a sin b
    m[cos_col, sin_col], m[cos_col, cos_col] = -s, c  # cos(a + b) = cos a cos b - sin a sin b
    return m.float()


def halves_encoding(max_len: int, dim: int) -> torch.Tensor:
    """The sinusoidal table of exercise 10.1, sines first: ``PE[pos, i] = sin(pos w_i)`` and
    ``PE[pos, D/2 + i] = cos(pos w_i)``, ``w_i = 1 / 10000^(2i/D)``; ``(T, D)``."""
    angles = torch.arange(max_len, dtype=torch.float)[:, None] / 10000.0 ** (
        torch.arange(0, dim, 2, dtype=torch.float) / dim
    )  # (T, 1) / (D/2,) -> (T, D/2)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)  # (T, D)


def shift_matrix(student_fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Exercise 10.1: ``student_fn(k, dim) -> (D, D)`` matrix ``M_k`` with
    ``PE[p + k] = M_k PE[p]`` for every position ``p``, for the sines-then-cosines layout
    :func:`halves_encoding` (column ``i`` and column ``D/2 + i`` are pair ``i``).
    """
    cases = [
        Case("k=1, D=2: one pair", (1, 2)),
        Case("k=1, D=4", (1, 4)),
        Case("k=3, D=8", (3, 8)),
        Case("k=-2, D=8: two positions back", (-2, 8)),
        Case("k=5, D=16", (5, 16)),
        Case("k=0, D=6: no shift", (0, 6)),
    ]
    back = N_(
        "your matrix moves k positions *back*: it is M_(-k), the transpose of M_k. Take column "
        "vectors, PE[p + k] = M_k PE[p], and write row i from sin(a + b) = sin a cos b + cos a sin b"
    )
    paired = N_(
        "that is R_k of the section above, for the table whose pairs sit side by side (2i, 2i+1). "
        "Here the sines come first: pair i is column i and column D/2 + i"
    )
    table = [  # (hint, the knobs of _shift that make the slip), in the order they are tried
        (paired, {"paired": True}),
        (back, {"sign": -1.0}),  # before the next: the same for D=2
        (paired, {"paired": True, "sign": -1.0}),
        (
            N_(
                "each pair turns at its own speed w_i = 1 / 10000^(2i/D): the same angle for every pair "
                "fits only pair 0"
            ),
            {"unit_speed": True},
        ),
        (
            N_("that matrix moves one position: k positions turn pair i by the angle k w_i"),
            {"one_step": True},
        ),
        (
            N_(
                "w_i = 1 / 10000^(2i/D): with torch.arange(D // 2) multiply by 2 (torch.arange(0, D, 2) "
                "already holds 2i)"
            ),
            {"pair_exponent": 1.0},
        ),
        (
            N_("w_i = 1 / 10000^(2i/D): torch.arange(0, D, 2) already holds 2i, do not double it"),
            {"pair_exponent": 4.0},
        ),
    ]
    mistakes = slips(_shift, table)
    return run_check(N_("Exercise 10.1 — k positions later is a matrix"), student_fn, _shift, cases, mistakes)


def _reference_rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, x.shape[-1:], gain, eps)


def _rms(
    x,
    gain,
    eps,
    *,
    centred=False,
    centred_numerator=False,
    dims=(-1,),
    eps_outside=False,
    root=True,
    total=False,
    scaled=True,
):
    """RMSNorm with knobs for the typical slips (all at their default give the right one); ``dims``
    the axes the mean is over (None: all of them)."""
    mean = x.mean(dim=dims, keepdim=True)
    centred_x = x - mean
    square = (centred_x if centred else x) ** 2
    mean_square = square.sum(dim=dims, keepdim=True) if total else square.mean(dim=dims, keepdim=True)
    if eps_outside:
        denominator = mean_square.sqrt() + eps
    else:
        denominator = (mean_square + eps).sqrt() if root else mean_square + eps
    out = (centred_x if centred_numerator else x) / denominator
    return gain * out if scaled else out


def _rms_case(name: str, shape: tuple[int, ...], eps: float, seed: int, *, offset: float = 2.0) -> Case:
    gen = generator(seed)
    x = torch.randn(shape, generator=gen) * 1.5 + offset  # tokens whose features do not average to 0
    return Case(name, (x, 1.0 + 0.5 * torch.randn(shape[-1], generator=gen), eps))


def rms_norm(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 10.2: ``student_fn(x, gain, eps)`` -> RMSNorm of ``x`` ``(..., D)``.

    LayerNorm without its re-centring (Zhang & Sennrich, 2019): ``gain * x / sqrt(mean(x^2) + eps)``,
    the mean over each token's ``D`` features, no shift. As ``torch.nn.functional.rms_norm``.
    """
    cases = [
        _rms_case(N_("(B, T, D) = (2, 3, 8), eps=1e-6"), (2, 3, 8), 1e-6, seed=91),
        _rms_case(N_("features around 5, eps=1e-6"), (2, 4, 6), 1e-6, seed=92, offset=5.0),
        _rms_case(N_("tokens of D=4 features, a large eps=0.5"), (3, 2, 4), 0.5, seed=93, offset=0.5),
        _rms_case(N_("(T, D) = (5, 3), no batch axis, eps=1e-5"), (5, 3), 1e-5, seed=94),
    ]
    wrong_dim = N_(
        "normalise each token on its own: the mean of the squares over the last dimension only "
        "(dim=-1, keepdim=True)"
    )
    first = [  # (hint, the knobs of _rms that make the slip)
        (
            N_(
                "you centred the token (subtracted its mean): that is LayerNorm. RMSNorm drops the "
                "re-centring "
                "everywhere, in the numerator and in the spread"
            ),
            {"centred": True, "centred_numerator": True},
        ),
        (
            N_(
                "the variance measures the spread around the mean; with the mean dropped, measure it "
                "around 0: "
                "the mean of x ** 2 (and divide x itself, not x - mean)"
            ),
            {"centred": True},
        ),
    ]
    then = [
        (N_("the numerator is x itself: RMSNorm subtracts no mean anywhere"), {"centred_numerator": True}),
        (
            N_("eps goes inside the square root: x / sqrt(mean(x ** 2) + eps), as in LayerNorm"),
            {"eps_outside": True},
        ),
        (N_("take the square *root* of the mean square: RMS is a root mean square"), {"root": False}),
        (
            N_(
                "the *mean* of the squares, not their sum: dividing by the root of the sum (the length of "
                "the "
                "vector) gives every token length 1 instead of RMS 1"
            ),
            {"total": True},
        ),
        (wrong_dim, {"dims": (0,)}),
        (wrong_dim, {"dims": (-2,)}),
        (wrong_dim, {"dims": None}),
        (N_("multiply by the learned gain at the end: gain * x / RMS"), {"scaled": False}),
    ]
    mistakes = [
        *slips(_rms, first),
        Mistake(
            "x.var() measures the spread around the mean (and divides by D - 1); with the mean dropped, "
            "measure it around 0: the mean of x ** 2",
            lambda x, gain, eps: gain * x / torch.sqrt(x.var(dim=-1, keepdim=True) + eps),
        ),
        *slips(_rms, then),
    ]
    rms_norm = torch_api(
        "F.rms_norm",
        (nn.functional, "rms_norm"),
        (torch, "rms_norm"),
        hint=N_("take LayerNorm's formula and drop the mean, as the exercise says"),
    )
    return run_check(
        N_("Exercise 10.2 — RMSNorm"), student_fn, _reference_rms_norm, cases, mistakes, forbidden=[rms_norm]
    )


def _reference_target_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    # Written out here (not attnlib's masks), so that it stays in reach while the student's code runs.
    pos = torch.arange(max_len)  # (Tt,)
    real_keys = (pos[None, :] >= max_len - lengths[:, None])[:, None, None, :]  # (B, 1, 1, Tt): the last n
    causal = pos[None, :] <= pos[:, None]  # (Tt, Tt): key j at or before query i
    return real_keys & causal  # (B, 1, Tt, Tt); a left pad's row is all False


def _tril(max_len: int, diagonal: int = 0) -> torch.Tensor:
    """``(Tt, Tt)`` bool: True on and below the ``diagonal`` (0: the causal mask)."""
    return torch.ones(max_len, max_len, dtype=torch.bool).tril(diagonal)


def _real(lengths: torch.Tensor, max_len: int, *, shift: int = 0, first: bool = False) -> torch.Tensor:
    """``(B, Tt)`` bool: the real positions of left-padded sequences (``first``: of right-padded ones;
    ``shift``: the first real position moved by that much)."""
    pos = torch.arange(max_len)[None, :]
    return pos < lengths[:, None] if first else pos >= max_len - lengths[:, None] + shift


def _keys_only(real: torch.Tensor) -> torch.Tensor:
    return real[:, None, None, :]  # (B, 1, 1, Tt): a mask on the keys


def _with_pad_rows(lengths: torch.Tensor, max_len: int, fill: str) -> torch.Tensor:
    """The target mask with each pad query's row opened up, as code that dodges a NaN does:
    to itself (``fill="self"``) or to every key (``"all"``)."""
    pad_rows = ~_real(lengths, max_len)[:, None, :, None]  # (B, 1, Tt, 1)
    opened = torch.eye(max_len, dtype=torch.bool) if fill == "self" else _tril(max_len) | ~_tril(max_len)
    return _reference_target_mask(lengths, max_len) | (pad_rows & opened)  # (B, 1, Tt, Tt)


#: The hint of the exercise's edge case: a pad query with no key to see.
_EMPTY_ROW = N_(
    "a left pad before the first real token sees no key at all, and its row must stay all False: do not "
    "open it (to itself or to every key) to dodge a NaN. attnlib's attention gives a fully masked row "
    "zero weights and a zero context, no NaN (notebook 03), and nothing reads a pad position's output"
)


def _empty_row_opened(got: object, expected: torch.Tensor) -> bool:
    """A row that must be all False (a left pad's query, no key to see) has a True in ``got``."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.dtype != torch.bool:
        return False
    empty = ~expected.any(-1)  # (B, 1, Tt)
    return bool((got.any(-1) & empty).any())


def left_padded_target_mask(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 10.3: ``student_fn(lengths, max_len) -> (B, 1, Tt, Tt)`` bool, True = may attend.

    The mask of the decoder's self-attention for targets padded on the *left* to ``max_len`` (as for
    batched generation): sequence ``b`` holds ``lengths[b]`` real tokens at its last positions, and
    query ``i`` may attend to key ``j`` when ``j <= i`` and ``j`` is one of them. The row of a pad
    query is then all False (attnlib's attention gives it zero weights). ``Transformer.generate_mask``
    builds the same mask from token ids, and is out of reach.
    """
    ids = torch.tensor
    cases = [
        Case("one sequence of 4 real tokens, no padding", (ids([4]), 4)),
        Case("lengths 5 and 3, max_len=5: the second's first two rows see no key", (ids([5, 3]), 5)),
        Case("lengths 5, 4 and 2, max_len=5", (ids([5, 4, 2]), 5)),
        Case("lengths 0 and 2, max_len=3: every row of the empty sequence all False", (ids([0, 2]), 3)),
    ]
    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend* (torch.triu(..., diagonal=1) marks "
            "the keys to hide, the opposite meaning)",
            lambda n, t: ~_reference_target_mask(n, t),
        ),
        Mistake(
            "rows are the queries: position i may look at keys 0..i, the lower triangle (tril); yours lets "
            "every position see the future",
            lambda n, t: _keys_only(_real(n, t)) & _tril(t).T,
        ),
        Mistake(
            "a position may attend to itself: keep the diagonal (torch.tril with diagonal=0)",
            lambda n, t: _keys_only(_real(n, t)) & _tril(t, -1),
        ),
        Mistake(
            "the decoder's self-attention is causal: combine the padding mask with the causal mask using &",
            lambda n, t: _keys_only(_real(n, t)).expand(-1, -1, t, -1),
        ),
        Mistake(
            "one mask per sequence: (B, 1, Tt, Tt); yours is the causal mask alone",
            lambda n, t: _tril(t),
        ),
        Mistake(
            "the left pads are still visible: hide every key that is padding, not only the future",
            lambda n, t: _tril(t).expand(len(n), 1, -1, -1),
        ),
        Mistake(
            "your mask keeps the first n positions of each sequence, as for right padding (attnlib's "
            "length_mask means that); here the pads come first and the n real tokens are the last ones",
            lambda n, t: _keys_only(_real(n, t, first=True)) & _tril(t),
        ),
        Mistake(
            "off by one: n real tokens left-padded to max_len sit at positions max_len - n .. max_len - 1",
            lambda n, t: _keys_only(_real(n, t, shift=1)) & _tril(t),
        ),
        Mistake(
            "off by one: n real tokens left-padded to max_len sit at positions max_len - n .. max_len - 1",
            lambda n, t: _keys_only(_real(n, t, shift=-1)) & _tril(t),
        ),
        Mistake(
            "padding hides *keys* (the columns): a real query must not attend to the pads before it; you "
            "hid the pad rows (queries) instead",
            lambda n, t: _real(n, t)[:, None, :, None] & _tril(t),
        ),
        Mistake(_EMPTY_ROW, lambda n, t: _with_pad_rows(n, t, "self")),
        Mistake(_EMPTY_ROW, lambda n, t: _with_pad_rows(n, t, "all")),
        Symptom(_EMPTY_ROW, _empty_row_opened),  # opened to some other key
        Mistake(
            "keep an axis for the heads: (B, 1, Tt, Tt), so that it broadcasts over (B, H, Tt, Tt) scores",
            lambda n, t: _reference_target_mask(n, t)[:, 0],
        ),
        as_numbers(_reference_target_mask),
    ]
    generate_mask = own(Transformer, "generate_mask", "_tgt_mask", what="Transformer.generate_mask")
    return run_check(
        N_("Exercise 10.3 — the target mask of left-padded sequences"),
        student_fn,
        _reference_target_mask,
        cases,
        mistakes,
        forbidden=[generate_mask],
    )


SHUFFLE_ANSWERS = ("unchanged", "permuted", "changed")

#: Exercise 10.5's experiment: four target tokens, five memory vectors, this shuffle of each.
TARGET_ORDER, MEMORY_ORDER = (2, 0, 3, 1), (3, 0, 4, 2, 1)


@functools.lru_cache(maxsize=1)
def _decoder_experiment() -> tuple[Any, ...]:
    """The runs of exercise 10.5: an untrained decoder layer in eval mode, no positional encoding.

    Returns the outcome of shuffling the target tokens, of shuffling the memory's rows, and the
    number of the 24 orders of the four target tokens that only move the outputs with the tokens.
    """
    dim = 16
    with seeded(0):
        layer = DecoderLayer(dim, 2, 32, dropout=0.0).eval()
        embedding = torch.nn.Embedding(10, dim)
    gen = generator(5)
    memory = torch.randn(1, 5, dim, generator=gen)  # (1, Ts, D): an encoder's output
    tokens = torch.tensor([[3, 4, 5, 6]])  # (1, Tt): distinct target tokens

    def run(order, memory_order=range(5)):
        with torch.no_grad():
            x = embedding(tokens[:, list(order)]) * math.sqrt(dim)  # (1, Tt, D), no PE
            return layer(x, memory[:, list(memory_order)])  # (1, Tt, D)

    out = run(range(4))

    def outcome(new, order):
        if torch.allclose(new, out, atol=1e-5):
            return "unchanged"
        return "permuted" if torch.allclose(new, out[:, list(order)], atol=1e-5) else "changed"

    # an order commutes when the outputs move with the tokens (the identity too: nothing moves)
    commuting = sum(
        torch.allclose(run(p), out[:, list(p)], atol=1e-5) for p in itertools.permutations(range(4))
    )
    return outcome(run(TARGET_ORDER), TARGET_ORDER), outcome(run(range(4), MEMORY_ORDER), range(4)), commuting


def decoder_shuffle(target_shuffled: Any, memory_shuffled: Any, orders_that_commute: Any) -> Verdict:
    """Exercise 10.5 (prediction): shuffle the target tokens, or the memory's rows, of a decoder
    layer without positional encoding; are its outputs ``"unchanged"``, ``"permuted"`` (the same
    vectors, moved with their tokens) or ``"changed"``? And how many of the 24 orders of four
    distinct target tokens give ``"permuted"``?
    """
    title = N_("Exercise 10.5 — shuffle a decoder layer's inputs")
    if ... in (target_shuffled, memory_shuffled, orders_that_commute):
        return predictions_not_yet(title)
    words = ", ".join(repr(a) for a in SHUFFLE_ANSWERS)
    answers = [a.strip().lower() if isinstance(a, str) else a for a in (target_shuffled, memory_shuffled)]
    unknown = [a for a in answers if a not in SHUFFLE_ANSWERS]
    if unknown:
        return Verdict(
            False,
            f"{FAIL} "
            + tr("{title}: answer the first two with one of {words}; got {answer}.").format(
                title=tr(title), words=words, answer=repr(unknown[0])
            ),
        )
    count = whole_number(orders_that_commute)
    if count is None or not 0 <= count <= 24:
        return Verdict(
            False,
            f"{FAIL} "
            + tr("{title}: answer the third with a whole number from 0 to 24; got {got}.").format(
                title=tr(title), got=describe(orders_that_commute)
            ),
        )
    target, memory, commuting = _decoder_experiment()
    slots = N_(
        "the causal mask belongs to the slots, not to the tokens: after the shuffle the token in slot t "
        "sees the tokens that now sit in slots 0..t, another set than it saw before, so its output is new"
    )
    keys_only = N_(
        "the memory's rows are keys and values only: no output belongs to a memory slot, and "
        "cross-attention sums over the keys with no mask on their order, so a reordered memory gives "
        "the very same outputs in the very same slots"
    )
    if count == 24:
        prefix = fmt("with the causal mask, not every order commutes: {slots}", slots=fmt(slots))
    elif count == 0:
        prefix = N_("one order always commutes: leaving the tokens where they are")
    else:
        prefix = N_(
            "a token's output depends on the set of tokens at or before its slot; for every token to "
            "keep its set, the first slot must keep its token, then the first two slots theirs, and so "
            "on: which orders do that?"
        )
    parts = [
        check_answer(N_("shuffled target tokens"), answers[0], target, slots),
        check_answer(N_("shuffled memory"), answers[1], memory, keys_only),
        check_answer(N_("orders that commute"), count, commuting, prefix),
    ]
    return combined(
        title,
        parts,
        "right. The causal mask ties each output to the tokens at or before its slot, so a decoder "
        "layer is not permutation-equivariant even without positions: of the 24 orders only the one "
        "left alone commutes (the tokens being distinct). The memory's order it cannot see at all: "
        "cross-attention reads the source as a set of vectors, and knows where a source token sat only "
        "through what the encoder wrote into its vector (the positional encoding).",
    )


# ----------------------------------------------------------------------------- 10.4 and 10.6: layers

#: Exercise 10.4 builds ``MyPreLNEncoder(dim, n_heads, hidden_dim, n_layers, dropout)`` with these
#: values first, exercise 10.6 ``MyDecoderLayer(dim, n_heads, hidden_dim, dropout)`` with these.
STACK_ARGS, DECODER_ARGS = (8, 2, 16, 2, 0.1), (8, 2, 16, 0.1)
#: The seed the train-mode probe calls a module under (the engine calls the cases under its own).
CALL_SEED = 7
#: A layer's sublayers by kind: attnlib's attentions, its feed-forwards, the norms (attnlib's or PyTorch's).
_KINDS = (MultiHeadAttention, FeedForward, (LayerNorm, nn.LayerNorm))


class _PreLNStack(nn.Module):
    """Exercise 10.4's reference: attnlib's pre-LN encoder layers, then one final LayerNorm (as
    ``Transformer(norm_first=True).encode`` runs them after the embeddings)."""

    def __init__(self, dim: int, n_heads: int, hidden_dim: int, n_layers: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(dim, n_heads, hidden_dim, dropout, norm_first=True) for _ in range(n_layers)
        )
        self.final_norm = LayerNorm(dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)  # (B, T, D)
        return self.final_norm(x)  # (B, T, D)

    def roles(self) -> tuple[list[nn.Module], list[nn.Module], list[nn.Module]]:
        """The attentions, feed-forwards and norms in the order the forward first calls them."""
        norms = [n for layer in self.layers for n in (layer.attention_norm, layer.ffn_norm)]
        return (
            [layer.attention for layer in self.layers],
            [layer.feed_forward for layer in self.layers],
            [*norms, self.final_norm],
        )


@functools.lru_cache(maxsize=8)
def _reference(decoder: bool, *args: Any) -> nn.Module:
    """Exercise 10.4's pre-LN stack (args: dim, n_heads, hidden_dim, n_layers, dropout) or 10.6's
    post-LN decoder layer (dim, n_heads, hidden_dim, dropout), in eval mode, each norm with its own
    non-trivial scale and shift (so that a norm in the wrong place, or one norm used twice, shows in
    the output). Cached: every case and every typical mistake reads the same weights, and nothing
    writes them."""
    dim = args[0]
    with seeded(sum(args[:-1]) + decoder):
        module = DecoderLayer(*args) if decoder else _PreLNStack(*args)
    gen = generator((11 if decoder else 7) * dim + args[1])
    with torch.no_grad():
        for norm in sublayers(module, LayerNorm)[0]:
            norm.gamma.copy_(1.0 + 0.5 * torch.randn(dim, generator=gen))
            norm.beta.copy_(0.5 * torch.randn(dim, generator=gen))
    return module.eval()


def _unfit(module: nn.Module, args: tuple, *, decoder: bool) -> str | None:
    """What keeps the student's module from taking the reference's weights, or None."""
    dim, n_heads, hidden_dim = args[:3]
    layers = 1 if decoder else args[3]
    attentions, ffns, norms = sublayers(module, *_KINDS)
    kind = (
        fmt("a decoder layer")
        if decoder
        else fmt("a stack of n_layers={layers} encoder layers", layers=layers)
    )
    if len(attentions) != (2 if decoder else layers):
        torch_mha = any(isinstance(m, nn.MultiheadAttention) for m in module.modules())
        other = fmt(" (nn.MultiheadAttention is PyTorch's, not attnlib's)") if torch_mha else ""
        built = (
            fmt("two, each with its own weights: a causal self-attention and a cross-attention, ")
            if decoder
            else fmt(
                "{layers}, one self-attention per layer, each with its own weights (build a new layer "
                "for each place: a list comprehension, not [layer] * n_layers): ",
                layers=layers,
            )
        )
        return fmt(
            "found {count} attnlib.MultiHeadAttention modules{other}; {kind} has "
            "{built}attnlib.MultiHeadAttention(dim, dim, max_seq_len, dropout, n_heads, "
            "qkv_bias=True, causal={causal}).",
            count=len(attentions),
            other=other,
            kind=kind,
            built=built,
            causal="..." if decoder else "False",
        )
    if len(ffns) != layers:
        return fmt(
            "found {count} attnlib FeedForward modules; {kind} has {layers}, one per layer: "
            "blocks.FeedForward(dim, hidden_dim, dropout).",
            count=len(ffns),
            kind=kind,
            layers=layers,
        )
    if len(norms) != (3 if decoder else 2 * layers + 1):
        how = (
            fmt(
                "a post-LN decoder layer normalises after each of its three sublayers, each norm with its "
                "own scale and shift: three blocks.LayerNorm(dim)"
            )
            if decoder
            else fmt(
                "a pre-LN encoder layer normalises the input of each of its two sublayers, and the "
                "stack normalises once more after its last layer: 2 * n_layers + 1 = {count} "
                "blocks.LayerNorm(dim), each with its own scale and shift",
                count=2 * layers + 1,
            )
        )
        return fmt("found {count} LayerNorm modules; {how}.", count=len(norms), how=how)
    for attention in attentions:
        if attention.num_heads != n_heads:
            return fmt(
                "the module was built with n_heads={n_heads}, but a MultiHeadAttention has "
                "num_heads={num_heads}: its arguments are (d_in, d_out, context_length, dropout, "
                "num_heads, qkv_bias=..., causal=...).",
                n_heads=n_heads,
                num_heads=attention.num_heads,
            )
        if attention.W_query.bias is None:
            which = fmt("both MultiHeadAttention modules") if decoder else fmt("each MultiHeadAttention")
            return fmt(
                "build {which} with qkv_bias=True, as attnlib's {layer} does.",
                which=which,
                layer="DecoderLayer" if decoder else "EncoderLayer",
            )
        if not attention.d_in == attention.d_out == dim:
            widths = f"{attention.d_in} -> {attention.d_out}"
            return fmt(
                "each attention must map width dim={dim} to dim: one maps {widths}.", dim=dim, widths=widths
            )
    if decoder and all(a.causal for a in attentions):
        return N_(
            "both attentions are causal; the cross-attention must be built with causal=False: its keys are "
            "the source, known in full (and usually of another length than the target)."
        )
    for ffn in ffns:
        if ffn.w1.weight.shape != (hidden_dim, dim):
            widths = f"{ffn.w1.in_features} -> {ffn.w1.out_features} -> {ffn.w2.out_features}"
            return fmt(
                "the feed-forward must map dim={dim} through hidden_dim={hidden_dim}: yours maps {widths}.",
                dim=dim,
                hidden_dim=hidden_dim,
                widths=widths,
            )
    for norm in norms:
        weight = norm.gamma if isinstance(norm, LayerNorm) else norm.weight
        if weight is None or weight.shape != (dim,):
            return fmt("each LayerNorm needs a learned scale and shift of width dim={dim}.", dim=dim)
    return None


def _fit(module: nn.Module, args: tuple, *inputs: Any, decoder: bool) -> None:
    """Give the student's module the reference's weights, by role whatever the names: each kind of
    sublayer in the order its forward first calls them (those never called last); in a decoder, the
    attention that receives the memory gets the cross-attention's (when neither or both do, the one
    called first is the self-attention)."""
    attentions, ffns, norms = sublayers(module, *_KINDS)
    calls = first_calls(module, [*attentions, *ffns, *norms], *inputs)
    attentions, ffns, norms = (in_call_order(calls, kind) for kind in (attentions, ffns, norms))
    reference = _reference(decoder, *args)
    if decoder:  # a stable sort: the attention that receives the memory goes last, as in the reference
        attentions.sort(key=lambda attention: received(calls, attention, inputs[1]))
        theirs = [m for kind in sublayers(reference, *_KINDS) for m in kind]
    else:
        theirs = [m for kind in reference.roles() for m in kind]
    copy_weights([*attentions, *ffns, *norms], theirs, {"gamma": "weight", "beta": "bias"})


def _wired(
    x, steps, norms, *, style, order="012", norm="012", skip="hhh", read="hhh", drop=None, dropped="ooo"
):
    """A layer of residual sublayers with the reference's weights, wired as ``style`` says: "pre"
    ``h + f(norm(h))`` (pre-LN), "post" ``norm(h + f(h))`` (post-LN), "after" ``h + norm(f(h))``,
    "both" ``norm(h) + f(norm(h))``. The typical slips turn the other knobs, one character per
    sublayer: ``order`` which sublayer comes, ``norm`` which norm it uses, ``skip`` what its residual
    adds (``h`` its input, ``x`` the layer's input, ``0`` nothing), ``read`` what it reads (h or x),
    and in train mode (``drop`` a dropout) ``dropped`` where ``drop`` acts: on the sublayer's output
    (``o``, the paper's), on the residual sum (``s``), after the norm of a post-LN sum (``n``), or
    nowhere (``-``)."""
    h = x
    for i in range(len(steps)):
        f, n = steps[int(order[i])], norms[int(norm[i])]
        source, residual = (x if read[i] == "x" else h), {"h": h, "x": x, "0": 0}[skip[i]]
        if drop is not None:  # train mode ("pre" or "post"): dropout where `dropped` says
            y = f(n(source)) if style == "pre" else f(source)
            total = residual + (drop(y) if dropped[i] == "o" else y)
            total = drop(total) if dropped[i] == "s" else total
            h = total if style == "pre" else n(total)
            h = drop(h) if dropped[i] == "n" else h
            continue
        if style == "pre":
            h = residual + f(n(source))
        elif style == "post":
            h = n(residual + f(source))
        elif style == "after":
            h = residual + n(f(source))
        else:
            h = n(source) + f(n(source))
    return h


class _InCallOrder:
    """The reference's modules of one kind, handed out in the order a variant first calls each of
    its own (``key``), as :func:`_fit` hands them to the student's: a slot never called gets none."""

    def __init__(self, modules: list[nn.Module]) -> None:
        self.free, self.taken = list(modules), {}

    def __call__(self, key: Any) -> nn.Module:
        if key not in self.taken:
            self.taken[key] = self.free.pop(0)
        return self.taken[key]


def _stack_variant(
    args,
    x,
    mask,
    *,
    attend="mask",
    style="pre",
    final="after",
    every_mask=True,
    chained=True,
    around=False,
    drop=None,
    dropped="oo",
    **wiring,
):
    """What a pre-LN encoder stack with one typical slip returns, with the reference's weights given
    as :func:`_fit` gives them. The stack's knobs: ``final`` where its final norm acts ("after" the
    last layer, "none", "each" after every layer, "before" the first), ``every_mask`` (False: only the
    first layer gets the mask; ``"last"``: only the last), ``chained`` (False: every layer reads the
    stack's input), ``around`` (a residual added around each whole layer); inside each layer,
    ``attend`` and :func:`_wired`'s knobs (``drop`` and ``dropped`` in train mode)."""
    attentions, ffns, norms = (_InCallOrder(kind) for kind in _reference(False, *args).roles())
    h = norms("final")(x) if final == "before" else x
    for i in range(args[3]):
        only = {False: 0, "last": args[3] - 1}.get(every_mask)
        given = mask if every_mask is True or i == only else None
        masks = {"mask": given, "none": None, "causal": combine_masks(given, causal_mask(x.shape[1]))}
        steps = [
            lambda z, i=i, m=masks[attend]: attentions(i)(z, mask=m),
            lambda z, i=i: ffns(i)(z),
        ]
        layer_norms = [lambda z, i=i: norms((i, 0))(z), lambda z, i=i: norms((i, 1))(z)]
        out = _wired(
            h if chained else x, steps, layer_norms, style=style, drop=drop, dropped=dropped, **wiring
        )
        h = h + out if around else out
        h = norms("final")(h) if final == "each" else h
    return norms("final")(h) if final == "after" else h


def _decoder_variant(
    args,
    x,
    memory,
    src_mask,
    tgt_mask,
    *,
    causal=True,
    tgt=True,
    keys="memory",
    src="src",
    style="post",
    **wiring,
):
    """What a post-LN decoder layer with one typical slip returns, with the reference's weights."""
    ref = _reference(True, *args)

    def self_attention(h):
        attention = ref.self_attention
        before, attention.causal = attention.causal, causal  # the slip of one built with causal=False
        try:
            return attention(h, mask=tgt_mask if tgt else None)
        finally:
            attention.causal = before

    def cross_attention(h):
        memory_keys = {"memory": memory, "normalised": ref.cross_attn_norm(memory), "itself": h}[keys]
        return ref.cross_attention(h, memory_keys, {"src": src_mask, "tgt": tgt_mask, "none": None}[src])

    steps = [self_attention, cross_attention, ref.feed_forward]
    return _wired(x, steps, [ref.self_attn_norm, ref.cross_attn_norm, ref.ffn_norm], style=style, **wiring)


#: (hint, the knobs of _stack_variant that make the slip inside each layer), tried after the stack's.
_ENCODER_SLIPS = [
    (
        N_(
            "that is post-LN, norm(x + sublayer(x)), the paper's layer of section 7; pre-LN normalises the "
            "sublayer's *input* and adds the raw x: x + sublayer(norm(x))"
        ),
        {"style": "post"},
    ),
    (N_("normalise the sublayer's *input*, not its output: x + sublayer(norm(x))"), {"style": "after"}),
    (
        N_(
            "the residual path stays un-normalised: add x itself, x + sublayer(norm(x)), not norm(x) + "
            "sublayer(norm(x))"
        ),
        {"style": "both"},
    ),
    (
        N_("each sublayer needs its residual connection: x + sublayer(norm(x)), not sublayer(norm(x))"),
        {"skip": "00"},
    ),
    (N_("the attention sublayer lost its residual: h = x + attention(norm1(x))"), {"skip": "0h"}),
    (
        N_(
            "the feed-forward sublayer lost its residual: h + feed_forward(norm2(h)), h the attention "
            "sublayer's "
            "output"
        ),
        {"skip": "h0"},
    ),
    (
        N_(
            "each residual adds the input *of its own sublayer*: the feed-forward's is h, the attention "
            "sublayer's output, not the layer's input x"
        ),
        {"skip": "hx"},
    ),
    (
        N_(
            "the padding mask is ignored: pass it to the attention, attention(h, mask=mask), so that no "
            "token "
            "attends to <pad>"
        ),
        {"attend": "none"},
    ),
    (
        N_("an encoder sees the whole source: build its MultiHeadAttention with causal=False"),
        {"attend": "causal"},
    ),
    (
        N_("each sublayer has its own LayerNorm (its own scale and shift): you used the first one twice"),
        {"norm": "00"},
    ),
    (
        N_(
            "self-attention comes first (tokens exchange information), then the feed-forward (each token on "
            "its own)"
        ),
        {"order": "10"},
    ),
]

#: (hint, the knobs of _stack_variant that make the slip of the stack itself), tried first.
_STACK_SLIPS = [
    (
        N_(
            "a pre-LN stack needs one final LayerNorm after its last layer: every layer adds its sublayers' "
            "outputs to the residual stream, and nothing normalises that stream on its way out (GPT-2, "
            "Radford et al., 2019, section 2.3)"
        ),
        {"final": "none"},
    ),
    (
        N_(
            "the final LayerNorm acts once, after the last layer: between layers the residual stream goes on "
            "un-normalised (each layer normalises its sublayers' inputs itself)"
        ),
        {"final": "each"},
    ),
    (
        N_(
            "the final LayerNorm comes after the last layer, not before the first: the stack's output is "
            "what "
            "must be normalised"
        ),
        {"final": "before"},
    ),
    (
        N_("every layer's attention needs the padding mask: pass mask on to each layer, not only the first"),
        {"every_mask": False},
    ),
    (
        N_("every layer's attention needs the padding mask: pass mask on to each layer, not only the last"),
        {"every_mask": "last"},
    ),
    (
        N_(
            "chain the layers: each one reads the previous layer's output, h = layer(h, mask); yours all "
            "read "
            "the stack's input"
        ),
        {"chained": False},
    ),
    (
        N_(
            "each layer already adds its residuals inside it: h = layer(h), not h + layer(h), which counts "
            "the "
            "residual stream twice"
        ),
        {"around": True},
    ),
]

_TO_ITSELF = N_(
    "the cross-attention's keys and values are the encoder's output: cross_attention(h, memory, src_mask); "
    "you attended to the target again"
)
#: (hint, the knobs of _decoder_variant that make the slip), in the order they are tried.
_DECODER_SLIPS = [
    (
        N_(
            "that is pre-LN, x + sublayer(norm(x)); the paper's layer (post-LN) normalises after each "
            "residual "
            "addition: norm(x + sublayer(x))"
        ),
        {"style": "pre"},
    ),
    (
        N_(
            "that is pre-LN (and it normalised the memory as well); the paper's layer is post-LN: "
            "norm(x + sublayer(x)), and the memory goes into cross-attention as it is"
        ),
        {"style": "pre", "keys": "normalised"},
    ),
    (
        N_(
            "without a mask the self-attention must still be causal: build it with causal=True, as attnlib's "
            "DecoderLayer does, so that a position never sees a later one whatever tgt_mask says"
        ),
        {"causal": False},
    ),
    (
        N_(
            "the self-attention ignores tgt_mask: pass it on, self_attention(x, mask=tgt_mask), so that no "
            "position attends to target <pad>"
        ),
        {"tgt": False},
    ),
    (
        N_(
            "masked self-attention comes first (the target reads itself so far), then cross-attention (it "
            "asks "
            "the source), then the feed-forward"
        ),
        {"order": "102"},
    ),
    (
        N_("each sublayer needs its residual connection: norm(h + sublayer(h)), not norm(sublayer(h))"),
        {"skip": "000"},
    ),
    (
        N_(
            "add the residual *before* the norm: norm(h + sublayer(h)); you normalised the sublayer's output "
            "and added h after it"
        ),
        {"style": "after"},
    ),
    (
        N_(
            "each sublayer has its own LayerNorm (its own scale and shift): you used the first one three "
            "times"
        ),
        {"norm": "000"},
    ),
    (
        N_(
            "the cross-attention ignores src_mask: pass it on, cross_attention(h, memory, src_mask), so "
            "that no "
            "target position attends to source <pad>"
        ),
        {"src": "none"},
    ),
    (_TO_ITSELF, {"keys": "itself", "src": "tgt"}),
    (_TO_ITSELF, {"keys": "itself", "src": "none"}),
    (
        N_(
            "the cross-attention's queries come from the self-attention sublayer's output h, not from the "
            "layer's input x"
        ),
        {"read": "hxh"},
    ),
    (
        N_(
            "each residual adds the input *of its own sublayer*: the cross-attention's is h, the "
            "self-attention "
            "sublayer's output, not the layer's input x"
        ),
        {"skip": "hxh"},
    ),
    (
        N_("cross-attention comes second, right after the masked self-attention; the feed-forward is last"),
        {"order": "021"},
    ),
]


def _layer_case(
    name: str,
    seed: int,
    lengths: list[int],
    src_lengths: list[int] | None = None,
    masks: str = "padding",
    args: tuple | None = None,
) -> Case:
    """An encoder stack's inputs ``(x, mask)`` or, given ``src_lengths``, a decoder layer's ``(x, memory,
    src_mask, tgt_mask)``: sentences of these real lengths, random vectors at the padded slots too.
    ``masks``: "padding", "none", or "full" (the decoder's target mask: padding & causal); ``args``
    the constructor's (by default :data:`STACK_ARGS` or :data:`DECODER_ARGS`)."""
    args = args or (STACK_ARGS if src_lengths is None else DECODER_ARGS)
    gen = generator(seed)
    t = max(lengths)
    x = torch.randn(len(lengths), t, args[0], generator=gen) * 2  # (B, T, D)
    mask = None if masks == "none" else length_mask(lengths, t)  # (B, 1, 1, T)
    if masks == "full":
        mask = combine_masks(mask, causal_mask(t))  # (B, 1, T, T)
    if src_lengths is None:
        return Case(name, (args, x, mask))
    ts = max(src_lengths)
    memory = torch.randn(len(src_lengths), ts, args[0], generator=gen) * 2  # (B, Ts, D)
    return Case(name, (args, x, memory, None if masks == "none" else length_mask(src_lengths, ts), mask))


#: The train-mode probes of 10.4 and 10.6: a module built with dropout 0.5, its sublayers in eval mode
#: (so that only its own dropout draws), against attnlib's wiring under the same seed.
_PROBE_ARGS = {False: (8, 2, 16, 2, 0.5), True: (8, 2, 16, 0.5)}
_NOT_ON_OUTPUTS = N_(
    "in train mode your layer drops nothing outside its sublayers.\n   hint: apply dropout to each "
    "sublayer's output before it is added to the residual, x + dropout(sublayer(...)) (Vaswani et al., "
    "2017, section 5.4, 'Residual Dropout'); the dropout inside the attention and the feed-forward is "
    "another one"
)
#: (what is wrong and its hint, where dropout acts in each sublayer as _wired's ``dropped`` says).
_TRAIN_SLIPS = [
    (
        N_(
            "in train mode your layer drops the residual sum, not the sublayer's output.\n   hint: dropout "
            "on "
            "the residual sum also drops the input x that the residual connection must carry through "
            "unchanged: drop only the sublayer's output, x + dropout(sublayer(...))"
        ),
        "sss",
    ),
    (
        N_(
            "in train mode your layer drops the normalised sum, after each norm.\n   hint: the paper drops "
            "each "
            "sublayer's output before the residual add and the norm: norm(x + dropout(sublayer(x)))"
        ),
        "nnn",
    ),
]
_SOME_OUTPUTS = N_(
    "in train mode your layer drops the output of only some of its sublayers.\n   hint: every sublayer "
    "gets its dropout before its residual add: x + dropout(sublayer(...)) for each of them"
)


def _layer_dropout_where(fitted: Callable[..., nn.Module], *, decoder: bool) -> str | None:
    """10.4 and 10.6 in train mode: the sublayers built with the module's dropout, and dropout on each
    sublayer's output before its residual add (Vaswani et al., 2017, §5.4), nowhere else (in the
    stack of 10.4, the same in every layer, and none after the final norm)."""
    count, args = (3 if decoder else 2), _PROBE_ARGS[decoder]
    case = _layer_case("", 115, [5, 3], [4, 5] if decoder else None, "full" if decoder else "padding", args)
    inputs = case.args[1:]
    module = fitted(args, inputs)
    attentions, ffns, _ = sublayers(module, *_KINDS)
    rates = {m.p for sub in (*attentions, *ffns) for m in sub.modules() if isinstance(m, nn.Dropout)}
    if rates != {args[-1]}:
        return fmt(
            "built with dropout={p}, your layer's sublayers drop with p = {rates}.\n   hint: pass "
            "the layer's `dropout` on to each MultiHeadAttention and to the FeedForward (they "
            "drop the attention weights and the hidden layer); do not build them with dropout=0.0",
            p=args[-1],
            rates=", ".join(f"{r:g}" for r in sorted(rates)) or fmt("nothing"),
        )
    module.train()
    for sub in (*attentions, *ffns):
        sub.eval()  # only the module's own dropout draws
    variant = _decoder_variant if decoder else _stack_variant
    style = "post" if decoder else "pre"

    def drop(y: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(y, args[-1], training=True)

    def wired(dropped: str) -> torch.Tensor:
        with seeded(CALL_SEED):
            return variant(args, *inputs, style=style, drop=drop, dropped=dropped)

    with torch.no_grad():
        with seeded(CALL_SEED):
            got = module(*inputs[: 4 if decoder else 2])
        if same(got, wired("o" * count)):
            return None
        if same(got, wired("-" * count)):
            return _NOT_ON_OUTPUTS
        for problem, dropped in _TRAIN_SLIPS:
            if same(got, wired(dropped[:count])):
                return problem
        for some in itertools.product("o-", repeat=count):
            if same(got, wired("".join(some))):
                return _SOME_OUTPUTS
    return N_(
        "in train mode your layer's output differs from attnlib's under the same random draws.\n   hint: "
        "drop each sublayer's output, and nothing else, with the layer's `dropout`, before its residual "
        "add: x + dropout(sublayer(...)) (Vaswani et al., 2017, section 5.4)"
    )


def _layer_exercise(decoder: bool, **declared: Any) -> ModuleExercise:
    """A spec of exercise 10.4 or 10.6: what it ``declared``, and what the two declare alike (the
    reference, how its weights fit, the dropout probe on the padded second case)."""
    return ModuleExercise(
        reference=lambda args, *inputs: _reference(decoder, *args)(*inputs),
        unfit=functools.partial(_unfit, decoder=decoder),
        fit=functools.partial(_fit, decoder=decoder),
        eval_probe=1,
        dropout_where=functools.partial(_layer_dropout_where, decoder=decoder),
        **declared,
    )


@functools.cache
def _stack_exercise() -> ModuleExercise:
    """Exercise 10.4's spec, built at its first check, not at import (which stays light)."""
    return _layer_exercise(
        False,
        title=N_("Exercise 10.4 — a pre-LN encoder stack, with its final norm"),
        check="pre_ln_encoder",
        example="MyPreLNEncoder",
        init="(dim, n_heads, hidden_dim, n_layers, dropout=0.1)",
        forward="x, mask=None",
        cases=[
            _layer_case(
                N_("D=8, H=2, F=16, one layer: one sentence of 4 tokens, no padding"),
                111,
                [4],
                args=(8, 2, 16, 1, 0.1),
            ),
            _layer_case(N_("two layers: two sentences, the second padded (3 real tokens of 5)"), 112, [5, 3]),
            _layer_case(
                N_("D=12, H=3, F=24, three layers: three sentences, two padded"),
                113,
                [6, 2, 4],
                args=(12, 3, 24, 3, 0.2),
            ),
            _layer_case(N_("two layers, mask=None: every token sees every token"), 114, [5, 5], masks="none"),
        ],
        mistakes=[*slips(_stack_variant, _STACK_SLIPS), *slips(_stack_variant, _ENCODER_SLIPS)],
        forbidden=[own(EncoderLayer), own(add_norm)],
    )


@functools.cache
def _decoder_exercise() -> ModuleExercise:
    """Exercise 10.6's spec, built at its first check, not at import (which stays light)."""
    return _layer_exercise(
        True,
        title=N_("Exercise 10.6 — a decoder layer, whole"),
        check="decoder_layer",
        example="MyDecoderLayer",
        init="(dim, n_heads, hidden_dim, dropout=0.1)",
        rebuilds=N_("attnlib's DecoderLayer"),
        forward="x, memory, src_mask=None, tgt_mask=None",
        cases=[
            _layer_case(
                N_("D=8, H=2, F=16: 3 target tokens, a source of 4, no masks"), 121, [3], [4], "none"
            ),
            _layer_case(
                N_("two pairs, both padded: src_mask and tgt_mask (padding & causal)"),
                122,
                [4, 2],
                [5, 3],
                "full",
            ),
            _layer_case(
                N_("D=12, H=3, F=24: tgt_mask with padding only (the layer must be causal by itself)"),
                123,
                [5, 5, 3],
                [3, 6, 2],
                args=(12, 3, 24, 0.2),
            ),
            _layer_case(N_("masks=None, Ts=2, Tt=5"), 124, [5], [2], "none"),
        ],
        mistakes=slips(_decoder_variant, _DECODER_SLIPS),
        forbidden=[own(DecoderLayer), own(add_norm)],
    )


def pre_ln_encoder(student_cls: Any) -> Verdict:
    """Exercise 10.4: ``student_cls`` a pre-LN encoder stack, built as
    ``student_cls(dim, n_heads, hidden_dim, n_layers, dropout)`` from attnlib's ``MultiHeadAttention``,
    ``FeedForward`` and ``LayerNorm`` (two per layer, one final), called as ``encoder(x, mask)``.

    The check gives the student's sublayers the weights of ``n_layers`` attnlib
    :class:`~attnlib.blocks.EncoderLayer` s with ``norm_first=True`` and a final ``LayerNorm`` (each
    kind in the order the student's forward uses them) and compares the two in eval mode.
    """
    return check_module(_stack_exercise(), student_cls)


def decoder_layer(student_cls: Any) -> Verdict:
    """Exercise 10.6: ``student_cls`` a post-LN decoder layer class, built as
    ``student_cls(dim, n_heads, hidden_dim, dropout)`` from two attnlib ``MultiHeadAttention`` s, a
    ``FeedForward`` and three ``LayerNorm`` s, called as ``layer(x, memory, src_mask, tgt_mask)``.

    The check gives the student's sublayers the weights of an :class:`attnlib.blocks.DecoderLayer`
    (the attention that receives the memory gets the cross-attention's, the norms theirs in the order
    the student's forward uses them) and compares the two in eval mode.
    """
    return check_module(_decoder_exercise(), student_cls)
