"""Exercise checks for notebook 10 (the Transformer's building blocks); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` positions, ``Ts``/``Tt`` source/target length, ``D`` model width,
``H`` heads, ``F`` feed-forward width.

The references are attnlib's own code or PyTorch's: the angle-addition formulas for the shift
matrix of the sinusoidal encoding (tests check it against the table),
``torch.nn.functional.rms_norm``, the source mask of ``Transformer.generate_mask``, runs of an
untrained :class:`attnlib.blocks.DecoderLayer` for the shuffle prediction, and
:class:`attnlib.blocks.EncoderLayer` (pre-LN) and :class:`attnlib.blocks.DecoderLayer` (post-LN),
whose weights the student's layers receive (the two module exercises run on the framework of
:mod:`attnlib.check._modules`). Inputs come from local ``torch.Generator`` s and modules are built
inside :func:`attnlib.check._core.seeded`, so a check never moves the global seed.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import torch

from .. import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    causal_mask,
    combine_masks,
    length_mask,
    padding_mask,
)
from ._core import (
    FAIL,
    Case,
    Mistake,
    Verdict,
    _describe,
    as_numbers,
    check_answer,
    combined,
    predictions_not_yet,
    run_check,
    seeded,
    slips,
    whole_number,
)
from ._modules import UnfitError, build, class_problem, constructor_problem, dropout_still_on

__all__ = [
    "cross_attention_mask",
    "decoder_layer",
    "decoder_shuffle",
    "encoder_layer",
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
    back = (
        "your matrix moves k positions *back*: it is M_(-k), the transpose of M_k. Take column "
        "vectors, PE[p + k] = M_k PE[p], and write row i from sin(a + b) = sin a cos b + cos a sin b"
    )
    paired = (
        "that is R_k of the section above, for the table whose pairs sit side by side (2i, 2i+1). "
        "Here the sines come first: pair i is column i and column D/2 + i"
    )
    mistakes = [
        Mistake(paired, lambda k, d: _shift(k, d, paired=True)),
        Mistake(back, lambda k, d: _shift(k, d, sign=-1.0)),  # before the next: the same for D=2
        Mistake(paired, lambda k, d: _shift(k, d, paired=True, sign=-1.0)),
        Mistake(
            "each pair turns at its own speed w_i = 1 / 10000^(2i/D): the same angle for every pair "
            "fits only pair 0",
            lambda k, d: _shift(k, d, unit_speed=True),
        ),
        Mistake(
            "that matrix moves one position: k positions turn pair i by the angle k w_i",
            lambda k, d: _shift(k, d, one_step=True),
        ),
        Mistake(
            "w_i = 1 / 10000^(2i/D): with torch.arange(D // 2) multiply by 2 (torch.arange(0, D, 2) "
            "already holds 2i)",
            lambda k, d: _shift(k, d, pair_exponent=1.0),
        ),
        Mistake(
            "w_i = 1 / 10000^(2i/D): torch.arange(0, D, 2) already holds 2i, do not double it",
            lambda k, d: _shift(k, d, pair_exponent=4.0),
        ),
    ]
    return run_check("Exercise 10.1 — k positions later is a matrix", student_fn, _shift, cases, mistakes)


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
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * 1.5 + offset  # tokens whose features do not average to 0
    return Case(name, (x, 1.0 + 0.5 * torch.randn(shape[-1], generator=gen), eps))


def rms_norm(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 10.2: ``student_fn(x, gain, eps)`` -> RMSNorm of ``x`` ``(..., D)``.

    LayerNorm without its re-centring (Zhang & Sennrich, 2019): ``gain * x / sqrt(mean(x^2) + eps)``,
    the mean over each token's ``D`` features, no shift. As ``torch.nn.functional.rms_norm``.
    """
    cases = [
        _rms_case("(B, T, D) = (2, 3, 8), eps=1e-6", (2, 3, 8), 1e-6, seed=91),
        _rms_case("features around 5, eps=1e-6", (2, 4, 6), 1e-6, seed=92, offset=5.0),
        _rms_case("tokens of D=4 features, a large eps=0.5", (3, 2, 4), 0.5, seed=93, offset=0.5),
        _rms_case("(T, D) = (5, 3), no batch axis, eps=1e-5", (5, 3), 1e-5, seed=94),
    ]
    wrong_dim = (
        "normalise each token on its own: the mean of the squares over the last dimension only "
        "(dim=-1, keepdim=True)"
    )
    first = [  # (hint, the knobs of _rms that make the slip)
        (
            "you centred the token (subtracted its mean): that is LayerNorm. RMSNorm drops the re-centring "
            "everywhere, in the numerator and in the spread",
            {"centred": True, "centred_numerator": True},
        ),
        (
            "the variance measures the spread around the mean; with the mean dropped, measure it around 0: "
            "the mean of x ** 2 (and divide x itself, not x - mean)",
            {"centred": True},
        ),
    ]
    then = [
        ("the numerator is x itself: RMSNorm subtracts no mean anywhere", {"centred_numerator": True}),
        (
            "eps goes inside the square root: x / sqrt(mean(x ** 2) + eps), as in LayerNorm",
            {"eps_outside": True},
        ),
        ("take the square *root* of the mean square: RMS is a root mean square", {"root": False}),
        (
            "the *mean* of the squares, not their sum: dividing by the root of the sum (the length of the "
            "vector) gives every token length 1 instead of RMS 1",
            {"total": True},
        ),
        (wrong_dim, {"dims": (0,)}),
        (wrong_dim, {"dims": (-2,)}),
    ]
    mistakes = [
        *slips(_rms, first),
        Mistake(
            "x.var() measures the spread around the mean (and divides by D - 1); with the mean dropped, "
            "measure it around 0: the mean of x ** 2",
            lambda x, gain, eps: gain * x / torch.sqrt(x.var(dim=-1, keepdim=True) + eps),
        ),
        *slips(_rms, then),
        Mistake(wrong_dim, lambda x, g, eps: _rms(x, g, eps, dims=tuple(range(x.ndim)))),
        Mistake("multiply by the learned gain at the end: gain * x / RMS", lambda *a: _rms(*a, scaled=False)),
    ]
    return run_check("Exercise 10.2 — RMSNorm", student_fn, _reference_rms_norm, cases, mistakes)


def _reference_cross_mask(src: torch.Tensor, tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    # The source mask that Transformer.generate_mask builds (the tests check that it is the same),
    # one row per target query.
    src_mask = padding_mask(src, pad_id)  # (B, 1, 1, Ts)
    return src_mask.expand(src.shape[0], 1, tgt.shape[1], src.shape[1])  # (B, 1, Tt, Ts)


def _real_source_keys(src, tgt, pad_id):
    return padding_mask(src, pad_id)  # (B, 1, 1, Ts): True for real source tokens


def cross_attention_mask(student_fn: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 10.3: ``student_fn(src, tgt, pad_id) -> (B, 1, Tt, Ts)`` bool, True = may attend.

    The mask of the decoder's cross-attention: queries are the target positions (rows), keys the
    source tokens (columns); target position ``i`` may attend to source token ``j`` when
    ``src[b, j]`` is not padding, whatever ``i`` is. As ``Transformer.generate_mask`` builds the
    source mask, expanded to one row per target position.
    """
    cases = [
        Case(
            "one pair, no padding, Ts=4, Tt=3", (torch.tensor([[3, 4, 5, 2]]), torch.tensor([[1, 6, 7]]), 0)
        ),
        Case(
            "two pairs, the second source and target padded, Ts=5, Tt=4",
            (torch.tensor([[3, 4, 5, 6, 2], [3, 5, 2, 0, 0]]), torch.tensor([[1, 6, 7, 8], [1, 8, 0, 0]]), 0),
        ),
        Case(
            "pad_id=7, three pairs, Ts=3, Tt=5",
            (torch.tensor([[3, 4, 2], [3, 2, 7], [2, 7, 7]]), torch.tensor([[1, 5, 6, 4, 2]] * 3), 7),
        ),
        Case(
            "Ts=Tt=4, padding in both",
            (torch.tensor([[3, 4, 2, 0], [3, 5, 6, 2]]), torch.tensor([[1, 6, 7, 8], [1, 6, 0, 0]]), 0),
        ),
    ]

    mistakes = [
        Mistake(
            "the mask is inverted: in attnlib True means *may attend*: True for real source tokens, "
            "False for source <pad>",
            lambda s, t, p: ~_reference_cross_mask(s, t, p),
        ),
        Mistake(
            "that mask broadcasts, but the exercise asks for the full grid, one row per target "
            "position: (B, 1, Tt, Ts), e.g. with .expand(-1, -1, Tt, -1)",
            _real_source_keys,
        ),
        Mistake(
            "cross-attention is not causal: the source is known in full, so every target position may "
            "look at every real source token; only the decoder's *self*-attention hides the future",
            lambda s, t, p: _reference_cross_mask(s, t, p) & torch.ones(t.shape[1], s.shape[1]).bool().tril(),
        ),
        Mistake(
            "the keys are the *source* tokens: take the padding from src, not from tgt",
            lambda s, t, p: padding_mask(t, p).expand(t.shape[0], 1, t.shape[1], t.shape[1]),
        ),
        Mistake(
            "rows are the queries (target positions) and columns the keys (source tokens): "
            "(B, 1, Tt, Ts); yours is the other way round",
            lambda s, t, p: (s != p)[:, None, :, None].expand(s.shape[0], 1, s.shape[1], t.shape[1]),
        ),
        Mistake(
            "padding hides *keys* (the columns): a padded target row may still attend to the real "
            "source tokens (its output is never used, the loss ignores it); you hid the padded target "
            "rows as well",
            lambda s, t, p: (t != p)[:, None, :, None] & (s != p)[:, None, None, :],
        ),
        Mistake(
            "keep an axis for the heads: (B, 1, Tt, Ts), so that it broadcasts over (B, H, Tt, Ts) scores",
            lambda s, t, p: _reference_cross_mask(s, t, p)[:, 0],
        ),
        as_numbers(_reference_cross_mask),
    ]
    return run_check(
        "Exercise 10.3 — the cross-attention mask", student_fn, _reference_cross_mask, cases, mistakes
    )


#: Exercise 10.4 builds ``MyEncoderLayer(dim, n_heads, hidden_dim, dropout)`` with these values first.
LAYER_ARGS = (8, 2, 16, 0.1)
_LAYER_SIGNATURE = "(dim, n_heads, hidden_dim, dropout=0.1)"


@functools.lru_cache(maxsize=4)
def _reference_layer(dim: int, n_heads: int, hidden_dim: int, dropout: float) -> EncoderLayer:
    """attnlib's pre-LN encoder layer in eval mode, each norm with its own non-trivial scale and
    shift (so that a norm in the wrong place, or one norm used twice, shows in the output).
    Cached: every case and every typical mistake reads the same weights, and nothing writes them."""
    with seeded(dim + n_heads + hidden_dim):
        layer = EncoderLayer(dim, n_heads, hidden_dim, dropout, norm_first=True)
    gen = torch.Generator().manual_seed(7 * dim + n_heads)
    with torch.no_grad():
        for norm in (layer.attention_norm, layer.ffn_norm):
            norm.gamma.copy_(1.0 + 0.5 * torch.randn(dim, generator=gen))
            norm.beta.copy_(0.5 * torch.randn(dim, generator=gen))
    return layer.eval()


def _layer_case(name: str, args: tuple, lengths: list[int] | None, seed: int) -> Case:
    gen = torch.Generator().manual_seed(seed)
    t = max(lengths) if lengths else 5
    x = torch.randn(len(lengths) if lengths else 2, t, args[0], generator=gen) * 2  # (B, T, D)
    if lengths is None:
        return Case(name, (args, x, None))
    return Case(
        name, (args, x, length_mask(lengths, t))
    )  # mask (B, 1, 1, T)  # the padded positions hold random vectors too


def _layer_cases() -> list[Case]:
    return [
        _layer_case("D=8, H=2, F=16: one sentence of 4 tokens, no padding", LAYER_ARGS, [4], seed=111),
        _layer_case("two sentences, the second padded (3 real tokens of 5)", LAYER_ARGS, [5, 3], seed=112),
        _layer_case("D=12, H=3, F=24: three sentences, two padded", (12, 3, 24, 0.2), [6, 2, 4], seed=113),
        _layer_case("mask=None: every token sees every token", LAYER_ARGS, None, seed=114),
    ]


def _parts(
    layer: torch.nn.Module, args: tuple
) -> tuple[MultiHeadAttention, FeedForward, list[torch.nn.Module]]:
    """The student's attention, feed-forward and norms, checked against what the weights need."""
    dim, n_heads, hidden_dim, _ = args
    found = list(layer.modules())
    attentions = [m for m in found if isinstance(m, MultiHeadAttention)]
    ffns = [m for m in found if isinstance(m, FeedForward)]
    norms = [m for m in found if isinstance(m, (LayerNorm, torch.nn.LayerNorm))]
    torch_mha = any(isinstance(m, torch.nn.MultiheadAttention) for m in found)
    if len(attentions) != 1:
        other = " (nn.MultiheadAttention is PyTorch's, not attnlib's)" if torch_mha else ""
        raise UnfitError(
            f"found {len(attentions)} attnlib.MultiHeadAttention modules{other}; an encoder layer has one "
            "self-attention, built as attnlib's EncoderLayer builds it: "
            "attnlib.MultiHeadAttention(dim, dim, max_seq_len, dropout, n_heads, qkv_bias=True, causal=False)"
        )
    if len(ffns) != 1:
        raise UnfitError(
            f"found {len(ffns)} attnlib FeedForward modules; an encoder layer has one: "
            "blocks.FeedForward(dim, hidden_dim, dropout)"
        )
    if len(norms) != 2:
        raise UnfitError(
            f"found {len(norms)} LayerNorm modules; a pre-LN encoder layer normalises the input of each of "
            "its two sublayers, each norm with its own scale and shift: two blocks.LayerNorm(dim) (the final "
            "LayerNorm of a pre-LN model belongs to the stack, after its last layer, not to each layer)"
        )
    (attention,), (ffn,) = attentions, ffns
    if attention.num_heads != n_heads:
        raise UnfitError(
            f"the layer was built with n_heads={n_heads}, but its MultiHeadAttention has "
            f"num_heads={attention.num_heads}: its arguments are (d_in, d_out, context_length, dropout, "
            "num_heads, qkv_bias=..., causal=...)"
        )
    if attention.W_query.bias is None:
        raise UnfitError("build the MultiHeadAttention with qkv_bias=True, as attnlib's EncoderLayer does")
    if (attention.d_in, attention.d_out) != (dim, dim) or ffn.w1.weight.shape != (hidden_dim, dim):
        raise UnfitError(
            f"the sublayers must map width dim={dim} to dim (the feed-forward through "
            f"hidden_dim={hidden_dim}): "
            f"your attention maps {attention.d_in} -> {attention.d_out}, your feed-forward "
            f"{ffn.w1.in_features} -> {ffn.w1.out_features} -> {ffn.w2.out_features}"
        )
    for norm in norms:
        weight = norm.gamma if isinstance(norm, LayerNorm) else norm.weight
        if weight is None or weight.shape != (dim,):
            raise UnfitError(f"each LayerNorm needs a learned scale and shift of width dim={dim}")
    return attention, ffn, norms


def _norms_in_call_order(
    layer: torch.nn.Module, norms: list[torch.nn.Module], x, mask
) -> list[torch.nn.Module]:
    """The student's norms in the order its forward first calls them (never-called ones last), so
    that the first-used norm gets the attention sublayer's weights whatever the names."""
    calls: list[torch.nn.Module] = []
    handles = [n.register_forward_hook(lambda module, _in, _out: calls.append(module)) for n in norms]
    try:
        with torch.no_grad():
            layer(x, mask)
    finally:
        for handle in handles:
            handle.remove()
    order: list[torch.nn.Module] = []
    for norm in calls + norms:
        if not any(norm is seen for seen in order):
            order.append(norm)
    return order


def _fitted(cls: type, args: tuple, x: torch.Tensor, mask: torch.Tensor | None) -> torch.nn.Module:
    """The student's layer built with ``args``, holding the reference's weights, in eval mode."""
    with seeded(0):
        layer = cls(*args)
    attention, ffn, norms = _parts(layer, args)
    layer.eval()
    reference = _reference_layer(*args)
    order = _norms_in_call_order(layer, norms, x, mask)
    with torch.no_grad():
        attention.load_state_dict(reference.attention.state_dict())
        ffn.load_state_dict(reference.feed_forward.state_dict())
        for norm, source in zip(order, (reference.attention_norm, reference.ffn_norm), strict=True):
            if isinstance(norm, LayerNorm):
                norm.load_state_dict(source.state_dict())
            else:
                norm.weight.copy_(source.gamma)
                norm.bias.copy_(source.beta)
    return layer


def _run_student(cls: type) -> Callable[..., torch.Tensor]:
    def run(args, x, mask):
        layer = _fitted(cls, args, x, mask)
        with torch.no_grad():
            return layer(x, mask)

    return run


def _run_reference(args, x, mask):
    with torch.no_grad():
        return _reference_layer(*args)(x, mask)


def _layer_mistake(kind: str) -> Callable[..., torch.Tensor]:
    """What a pre-LN encoder layer with one typical slip returns, with the reference's weights."""

    def wrong(args, x, mask):
        ref = _reference_layer(*args)
        n1, n2, ff = ref.attention_norm, ref.ffn_norm, ref.feed_forward

        def att(h):
            return ref.attention(h, mask=mask)

        with torch.no_grad():
            if kind == "post-LN":
                h = n1(x + att(x))
                return n2(h + ff(h))
            if kind == "norm after the sublayer":
                h = x + n1(att(x))
                return h + n2(ff(h))
            if kind == "normalised residual":
                h = n1(x) + att(n1(x))
                return n2(h) + ff(n2(h))
            if kind == "no residual":
                return ff(n2(att(n1(x))))
            if kind == "no attention residual":
                h = att(n1(x))
                return h + ff(n2(h))
            if kind == "no feed-forward residual":
                return ff(n2(x + att(n1(x))))
            if kind == "residual from the layer input":
                h = x + att(n1(x))
                return x + ff(n2(h))
            if kind == "mask ignored":
                return ref(x, None)
            if kind == "causal":
                return ref(x, combine_masks(mask, causal_mask(x.shape[1])))
            if kind == "one norm for both":
                h = x + att(n1(x))
                return h + ff(n1(h))
            if kind == "feed-forward first":
                h = x + ff(n1(x))
                return h + att(n2(h))
        raise AssertionError(kind)

    return wrong


def _built_layer(title: str, student_cls: object, check_name: str, args: tuple, base: str, parts: Any) -> Any:
    """The student's layer for 10.4 or 10.6, built as ``student_cls(*args)`` and checked to hold
    the sublayers ``parts`` needs; or the :class:`Verdict` that says why it cannot be (not a class,
    not an nn.Module, a constructor the call does not fit, a build that raises, missing parts)."""
    problem = class_problem(
        title,
        student_cls,
        instance=f"pass the class itself, `check.{check_name}({type(student_cls).__name__})`, "
        "not a layer built from it: the check builds its own.",
        not_a_module=lambda obj: f"expected a class derived from nn.Module, got {_describe(obj)}.",
    )
    if problem is not None:  # (not `problem or ...`: a failing Verdict is falsy)
        return problem
    problem = constructor_problem(
        title,
        student_cls,
        lambda signature: (
            f"the check builds `{student_cls.__name__}{args}`, but your constructor "
            f"takes `{signature}`; it must take the first arguments of attnlib's "
            f"{base}: `__init__(self, {_LAYER_SIGNATURE[1:]}`."
        ),
        *args,
    )
    if problem is not None:
        return problem
    layer = build(
        title,
        student_cls,
        f": `{student_cls.__name__}{args}`",
        *args,
        seed=0,
        super_hint="call `super().__init__()` first in your `__init__`, before creating any sublayer",
    )
    if isinstance(layer, Verdict):
        return layer
    try:
        parts(layer, args)
    except UnfitError as unfit:
        return Verdict(False, f"{FAIL} {title}: {unfit}.")
    return layer


#: What a layer whose output changes from call to call in eval mode is told.
DROPOUT_STILL_ON = (
    "in eval mode your layer gives a different output at every call: dropout is "
    "still active.\n   hint: use nn.Dropout modules (they switch off with .eval()); "
    "`F.dropout(h, p)` drops in eval mode too unless you pass `training=self.training`"
)


def encoder_layer(student_cls: Any) -> Verdict:
    """Exercise 10.4: ``student_cls`` a pre-LN encoder layer class, built as
    ``student_cls(dim, n_heads, hidden_dim, dropout)`` from attnlib's ``MultiHeadAttention``,
    ``FeedForward`` and two ``LayerNorm`` s, called as ``layer(x, mask)``.

    The check gives the student's sublayers the weights of an :class:`attnlib.blocks.EncoderLayer`
    with ``norm_first=True`` (the norms in the order the student's forward uses them) and compares
    the two in eval mode.
    """
    title = "Exercise 10.4 — a pre-LN encoder layer, whole"
    layer = _built_layer(title, student_cls, "encoder_layer", LAYER_ARGS, "EncoderLayer", _parts)
    if isinstance(layer, Verdict):
        return layer
    cases = _layer_cases()
    if _dropout_in_eval(student_cls, cases[1]):
        return Verdict(False, f"{FAIL} {title}: {DROPOUT_STILL_ON}")
    hints = {
        "post-LN": "that is post-LN, norm(x + sublayer(x)), the paper's layer of section 7; pre-LN "
        "normalises the sublayer's *input* and adds the raw x: x + sublayer(norm(x))",
        "norm after the sublayer": "normalise the sublayer's *input*, not its output: x + sublayer(norm(x))",
        "normalised residual": "the residual path stays un-normalised: add x itself, "
        "x + sublayer(norm(x)), not norm(x) + sublayer(norm(x))",
        "no residual": "each sublayer needs its residual connection: x + sublayer(norm(x)), not "
        "sublayer(norm(x))",
        "no attention residual": "the attention sublayer lost its residual: h = x + attention(norm1(x))",
        "no feed-forward residual": "the feed-forward sublayer lost its residual: "
        "h + feed_forward(norm2(h)), h the attention sublayer's output",
        "residual from the layer input": "each residual adds the input *of its own sublayer*: the "
        "feed-forward's is h, the attention sublayer's output, not the layer's input x",
        "mask ignored": "the padding mask is ignored: pass it to the attention, attention(h, mask=mask), so "
        "that no token attends to <pad>",
        "causal": "an encoder sees the whole source: build its MultiHeadAttention with causal=False",
        "one norm for both": "each sublayer has its own LayerNorm (its own scale and shift): you used the "
        "first one twice",
        "feed-forward first": "self-attention comes first (tokens exchange information), then the "
        "feed-forward (each token on its own)",
    }
    mistakes = [Mistake(hint, _layer_mistake(kind)) for kind, hint in hints.items()]
    student = _run_student(student_cls)

    def guarded(args, x, mask):
        try:
            return student(args, x, mask)
        except UnfitError as unfit:  # built differently for these arguments
            raise ValueError(f"with arguments {args}: {unfit}") from None

    return run_check(title, guarded, _run_reference, cases, mistakes)


def _dropout_in_eval(cls: type, case: Case) -> bool:
    """True when the student's layer, in eval mode, gives two different outputs for one input."""
    args, x, mask = case.args
    try:
        layer = _fitted(cls, args, x, mask)
    except Exception:  # run_check reports the student's error in words
        return False
    return dropout_still_on(layer, x, mask)


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
    gen = torch.Generator().manual_seed(5)
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
    title = "Exercise 10.5 — shuffle a decoder layer's inputs"
    if ... in (target_shuffled, memory_shuffled, orders_that_commute):
        return predictions_not_yet(title)
    words = ", ".join(repr(a) for a in SHUFFLE_ANSWERS)
    answers = [a.strip().lower() if isinstance(a, str) else a for a in (target_shuffled, memory_shuffled)]
    unknown = [a for a in answers if a not in SHUFFLE_ANSWERS]
    if unknown:
        return Verdict(
            False, f"{FAIL} {title}: answer the first two with one of {words}; got {unknown[0]!r}."
        )
    count = whole_number(orders_that_commute)
    if count is None or not 0 <= count <= 24:
        return Verdict(
            False,
            f"{FAIL} {title}: answer the third with a whole number from 0 to 24; "
            f"got {_describe(orders_that_commute)}.",
        )
    target, memory, commuting = _decoder_experiment()
    slots = (
        "the causal mask belongs to the slots, not to the tokens: after the shuffle the token in slot t "
        "sees the tokens that now sit in slots 0..t, another set than it saw before, so its output is new"
    )
    keys_only = (
        "the memory's rows are keys and values only: no output belongs to a memory slot, and "
        "cross-attention sums over the keys with no mask on their order, so a reordered memory gives "
        "the very same outputs in the very same slots"
    )
    if count == 24:
        prefix = "with the causal mask, not every order commutes: " + slots
    elif count == 0:
        prefix = "one order always commutes: leaving the tokens where they are"
    else:
        prefix = (
            "a token's output depends on the set of tokens at or before its slot; for every token to "
            "keep its set, the first slot must keep its token, then the first two slots theirs, and so "
            "on: which orders do that?"
        )
    parts = [
        check_answer("shuffled target tokens", answers[0], target, slots),
        check_answer("shuffled memory", answers[1], memory, keys_only),
        check_answer("orders that commute", count, commuting, prefix),
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


# ----------------------------------------------------------------------------- 10.6 a decoder layer

#: Exercise 10.6 builds ``MyDecoderLayer(dim, n_heads, hidden_dim, dropout)`` with these values first.
DECODER_ARGS = (8, 2, 16, 0.1)


@functools.lru_cache(maxsize=4)
def _reference_decoder(dim: int, n_heads: int, hidden_dim: int, dropout: float) -> DecoderLayer:
    """attnlib's post-LN decoder layer in eval mode, each of its three norms with its own scale and
    shift. Cached: every case and every typical mistake reads the same weights, and nothing writes them."""
    with seeded(dim + n_heads + hidden_dim + 1):
        layer = DecoderLayer(dim, n_heads, hidden_dim, dropout)
    gen = torch.Generator().manual_seed(11 * dim + n_heads)
    with torch.no_grad():
        for norm in (layer.self_attn_norm, layer.cross_attn_norm, layer.ffn_norm):
            norm.gamma.copy_(1.0 + 0.5 * torch.randn(dim, generator=gen))
            norm.beta.copy_(0.5 * torch.randn(dim, generator=gen))
    return layer.eval()


def _decoder_case(
    name: str, args: tuple, src_len: list[int], tgt_len: list[int], seed: int, masks: str
) -> Case:
    """Targets and memories of the given real lengths (random vectors at padded slots too), with
    ``masks``: "none", "full" (source padding, target padding & causal) or "padding" (no causal part)."""
    gen = torch.Generator().manual_seed(seed)
    ts, tt = max(src_len), max(tgt_len)
    x = torch.randn(len(tgt_len), tt, args[0], generator=gen) * 2  # (B, Tt, D)
    memory = torch.randn(len(src_len), ts, args[0], generator=gen) * 2  # (B, Ts, D)
    if masks == "none":
        return Case(name, (args, x, memory, None, None))
    src_mask, tgt_padding = length_mask(src_len, ts), length_mask(tgt_len, tt)  # (B, 1, 1, T)
    tgt_mask = combine_masks(tgt_padding, causal_mask(tt)) if masks == "full" else tgt_padding
    return Case(name, (args, x, memory, src_mask, tgt_mask))


def _decoder_cases() -> list[Case]:
    return [
        _decoder_case(
            "D=8, H=2, F=16: 3 target tokens, a source of 4, no masks", DECODER_ARGS, [4], [3], 121, "none"
        ),
        _decoder_case(
            "two pairs, both padded: src_mask and tgt_mask (padding & causal)",
            DECODER_ARGS,
            [5, 3],
            [4, 2],
            122,
            "full",
        ),
        _decoder_case(
            "D=12, H=3, F=24: tgt_mask with padding only (the layer must be causal by itself)",
            (12, 3, 24, 0.2),
            [3, 6, 2],
            [5, 5, 3],
            123,
            "padding",
        ),
        _decoder_case("masks=None, Ts=2, Tt=5", DECODER_ARGS, [2], [5], 124, "none"),
    ]


def _decoder_parts(layer: torch.nn.Module, args: tuple) -> tuple[list, FeedForward, list]:
    """The student's two attentions, feed-forward and three norms, checked against what the weights need."""
    dim, n_heads, hidden_dim, _ = args
    found = list(layer.modules())
    attentions = [m for m in found if isinstance(m, MultiHeadAttention)]
    ffns = [m for m in found if isinstance(m, FeedForward)]
    norms = [m for m in found if isinstance(m, (LayerNorm, torch.nn.LayerNorm))]
    if len(attentions) != 2:
        other = (
            " (nn.MultiheadAttention is PyTorch's, not attnlib's)"
            if any(isinstance(m, torch.nn.MultiheadAttention) for m in found)
            else ""
        )
        raise UnfitError(
            f"found {len(attentions)} attnlib.MultiHeadAttention modules{other}; a decoder layer has two, "
            "each with its own weights: a causal self-attention and a cross-attention, "
            "attnlib.MultiHeadAttention(dim, dim, max_seq_len, dropout, n_heads, qkv_bias=True, causal=...)"
        )
    if len(ffns) != 1:
        raise UnfitError(
            f"found {len(ffns)} attnlib FeedForward modules; a decoder layer has one: "
            "blocks.FeedForward(dim, hidden_dim, dropout)"
        )
    if len(norms) != 3:
        raise UnfitError(
            f"found {len(norms)} LayerNorm modules; a post-LN decoder layer normalises after each of its "
            "three sublayers, each norm with its own scale and shift: three blocks.LayerNorm(dim)"
        )
    for attention in attentions:
        if attention.num_heads != n_heads:
            raise UnfitError(
                f"the layer was built with n_heads={n_heads}, but a MultiHeadAttention has "
                f"num_heads={attention.num_heads}: its arguments are (d_in, d_out, context_length, dropout, "
                "num_heads, qkv_bias=..., causal=...)"
            )
        if attention.W_query.bias is None:
            raise UnfitError(
                "build both MultiHeadAttention modules with qkv_bias=True, as attnlib's DecoderLayer does"
            )
        if (attention.d_in, attention.d_out) != (dim, dim):
            raise UnfitError(
                f"each attention must map width dim={dim} to dim: one maps "
                f"{attention.d_in} -> {attention.d_out}"
            )
    if all(a.causal for a in attentions):
        raise UnfitError(
            "both attentions are causal; the cross-attention must be built with causal=False: its keys "
            "are the source, known in full (and usually of another length than the target)"
        )
    (ffn,) = ffns
    if ffn.w1.weight.shape != (hidden_dim, dim):
        raise UnfitError(
            f"the feed-forward must map dim={dim} through hidden_dim={hidden_dim}: yours maps "
            f"{ffn.w1.in_features} -> {ffn.w1.out_features} -> {ffn.w2.out_features}"
        )
    for norm in norms:
        weight = norm.gamma if isinstance(norm, LayerNorm) else norm.weight
        if weight is None or weight.shape != (dim,):
            raise UnfitError(f"each LayerNorm needs a learned scale and shift of width dim={dim}")
    return attentions, ffn, norms


def _first_calls(layer: torch.nn.Module, watched: list[torch.nn.Module], inputs: tuple) -> list[tuple]:
    """``(module, args, kwargs)`` for each call of a watched module during ``layer(*inputs)``, in order."""
    calls: list[tuple] = []
    handles = [
        m.register_forward_hook(lambda mod, a, kw, _out: calls.append((mod, a, kw)), with_kwargs=True)
        for m in watched
    ]
    try:
        with torch.no_grad():
            layer(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _in_order(calls: list[tuple], modules: list[torch.nn.Module]) -> list[torch.nn.Module]:
    order: list[torch.nn.Module] = []
    for m in [c[0] for c in calls] + modules:
        if any(m is o for o in modules) and not any(m is o for o in order):
            order.append(m)
    return order


def _fitted_decoder(cls: type, args: tuple, x, memory, src_mask, tgt_mask) -> torch.nn.Module:
    """The student's decoder layer built with ``args``, holding the reference's weights, in eval mode.

    The attention that receives ``memory`` gets the cross-attention's weights, the other one the
    self-attention's; the norms get theirs in the order ``forward`` first calls them."""
    with seeded(0):
        layer = cls(*args)
    attentions, ffn, norms = _decoder_parts(layer, args)
    layer.eval()
    calls = _first_calls(layer, [*attentions, *norms], (x, memory, src_mask, tgt_mask))
    takes_memory = [
        a
        for a in attentions
        if any(mod is a and any(v is memory for v in (*ar, *kw.values())) for mod, ar, kw in calls)
    ]
    if len(takes_memory) == 1:
        cross = takes_memory[0]
        self_attention = attentions[1] if cross is attentions[0] else attentions[0]
    else:  # neither or both saw the memory: the first one called is the self-attention
        self_attention, cross = _in_order(calls, attentions)
    reference = _reference_decoder(*args)
    with torch.no_grad():
        self_attention.load_state_dict(reference.self_attention.state_dict())
        cross.load_state_dict(reference.cross_attention.state_dict())
        ffn.load_state_dict(reference.feed_forward.state_dict())
        sources = (reference.self_attn_norm, reference.cross_attn_norm, reference.ffn_norm)
        for norm, source in zip(_in_order(calls, norms), sources, strict=True):
            if isinstance(norm, LayerNorm):
                norm.load_state_dict(source.state_dict())
            else:
                norm.weight.copy_(source.gamma)
                norm.bias.copy_(source.beta)
    return layer


@contextlib.contextmanager
def _causal(attention: MultiHeadAttention, causal: bool):
    """The reference's self-attention with its causal switch set to ``causal`` for a moment."""
    before = attention.causal
    attention.causal = causal
    try:
        yield attention
    finally:
        attention.causal = before


def _decoder_mistake(kind: str) -> Callable[..., torch.Tensor]:
    """What a post-LN decoder layer with one typical slip returns, with the reference's weights."""

    def wrong(args, x, memory, src_mask, tgt_mask):
        ref = _reference_decoder(*args)
        n1, n2, n3, ff = ref.self_attn_norm, ref.cross_attn_norm, ref.ffn_norm, ref.feed_forward

        def sa(h, mask=tgt_mask, causal=True):
            with _causal(ref.self_attention, causal) as attention:
                return attention(h, mask=mask)

        def ca(h, keys=memory, mask=src_mask):
            return ref.cross_attention(h, keys, mask)

        with torch.no_grad():
            if kind == "pre-LN":
                h = x + sa(n1(x))
                h = h + ca(n2(h))
                return h + ff(n3(h))
            if kind == "pre-LN, memory normalised too":
                h = x + sa(n1(x))
                h = h + ca(n2(h), n2(memory))
                return h + ff(n3(h))
            if kind == "not causal":
                h = n1(x + sa(x, causal=False))
            elif kind == "tgt_mask ignored":
                h = n1(x + sa(x, mask=None))
            elif kind == "cross before self":
                h = n1(x + ca(x))
                h = n2(h + sa(h))
                return n3(h + ff(h))
            elif kind == "no residual":
                h = n2(ca(n1(sa(x))))
                return n3(ff(h))
            elif kind == "norm then add":
                h = n1(sa(x)) + x
                h = n2(ca(h)) + h
                return n3(ff(h)) + h
            elif kind == "one norm for all":
                h = n1(x + sa(x))
                h = n1(h + ca(h))
                return n1(h + ff(h))
            else:
                h = n1(x + sa(x))
            if kind == "src_mask ignored":
                h2 = n2(h + ca(h, mask=None))
            elif kind == "cross-attention to itself":
                h2 = n2(h + ca(h, keys=h, mask=tgt_mask))
            elif kind == "cross-attention to itself, no mask":
                h2 = n2(h + ca(h, keys=h, mask=None))
            elif kind == "cross-attention from the layer input":
                h2 = n2(h + ca(x))
            elif kind == "residual from the layer input":
                h2 = n2(x + ca(h))
            elif kind == "feed-forward before cross-attention":
                h2 = n2(h + ff(h))
                return n3(h2 + ca(h2))
            else:
                h2 = n2(h + ca(h))
            return n3(h2 + ff(h2))

    return wrong


_DECODER_HINTS = {
    "pre-LN": "that is pre-LN, x + sublayer(norm(x)); the paper's layer (post-LN) normalises after each "
    "residual addition: norm(x + sublayer(x))",
    "pre-LN, memory normalised too": "that is pre-LN (and it normalised the memory as well); the paper's "
    "layer is post-LN: norm(x + sublayer(x)), and the memory goes into cross-attention as it is",
    "not causal": "without a mask the self-attention must still be causal: build it with causal=True, as "
    "attnlib's DecoderLayer does, so that a position never sees a later one whatever tgt_mask says",
    "tgt_mask ignored": "the self-attention ignores tgt_mask: pass it on, self_attention(x, mask=tgt_mask), "
    "so that no position attends to target <pad>",
    "cross before self": "masked self-attention comes first (the target reads itself so far), then "
    "cross-attention (it asks the source), then the feed-forward",
    "no residual": "each sublayer needs its residual connection: norm(h + sublayer(h)), not "
    "norm(sublayer(h))",
    "norm then add": "add the residual *before* the norm: norm(h + sublayer(h)); you normalised the "
    "sublayer's output and added h after it",
    "one norm for all": "each sublayer has its own LayerNorm (its own scale and shift): you used the first "
    "one three times",
    "src_mask ignored": "the cross-attention ignores src_mask: pass it on, cross_attention(h, memory, "
    "src_mask), so that no target position attends to source <pad>",
    "cross-attention to itself": "the cross-attention's keys and values are the encoder's output: "
    "cross_attention(h, memory, src_mask); you attended to the target again",
    "cross-attention to itself, no mask": "the cross-attention's keys and values are the encoder's output: "
    "cross_attention(h, memory, src_mask); you attended to the target again",
    "cross-attention from the layer input": "the cross-attention's queries come from the self-attention "
    "sublayer's output h, not from the layer's input x",
    "residual from the layer input": "each residual adds the input *of its own sublayer*: the "
    "cross-attention's is h, the self-attention sublayer's output, not the layer's input x",
    "feed-forward before cross-attention": "cross-attention comes second, right after the masked "
    "self-attention; the feed-forward is last",
}


def decoder_layer(student_cls: Any) -> Verdict:
    """Exercise 10.6: ``student_cls`` a post-LN decoder layer class, built as
    ``student_cls(dim, n_heads, hidden_dim, dropout)`` from two attnlib ``MultiHeadAttention`` s, a
    ``FeedForward`` and three ``LayerNorm`` s, called as ``layer(x, memory, src_mask, tgt_mask)``.

    The check gives the student's sublayers the weights of an :class:`attnlib.blocks.DecoderLayer`
    (the attention that receives the memory gets the cross-attention's, the norms theirs in the order
    the student's forward uses them) and compares the two in eval mode.
    """
    title = "Exercise 10.6 — a decoder layer, whole"
    layer = _built_layer(title, student_cls, "decoder_layer", DECODER_ARGS, "DecoderLayer", _decoder_parts)
    if isinstance(layer, Verdict):
        return layer
    cases = _decoder_cases()
    args, *inputs = cases[1].args
    try:
        fitted = _fitted_decoder(student_cls, args, *inputs)
    except Exception:  # run_check reports the student's error in words
        fitted = None
    if fitted is not None and dropout_still_on(fitted, *inputs):
        return Verdict(False, f"{FAIL} {title}: {DROPOUT_STILL_ON}")
    mistakes = [Mistake(hint, _decoder_mistake(kind)) for kind, hint in _DECODER_HINTS.items()]

    def student(args, x, memory, src_mask, tgt_mask):
        try:
            fitted = _fitted_decoder(student_cls, args, x, memory, src_mask, tgt_mask)
        except UnfitError as unfit:  # built differently for these arguments
            raise ValueError(f"with arguments {args}: {unfit}") from None
        with torch.no_grad():
            return fitted(x, memory, src_mask, tgt_mask)

    def reference(args, x, memory, src_mask, tgt_mask):
        with torch.no_grad():
            return _reference_decoder(*args)(x, memory, src_mask, tgt_mask)

    return run_check(title, student, reference, cases, mistakes)
