"""Exercise checks for notebook 10 (the Transformer's building blocks); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` positions, ``Tt`` target length, ``D`` model width, ``H`` heads,
``F`` feed-forward width.

The references are attnlib's own code or PyTorch's: the angle-addition formulas for the shift
matrix of the sinusoidal encoding (tests check it against the table),
``torch.nn.functional.rms_norm``, ``Transformer.generate_mask`` and
:class:`attnlib.blocks.EncoderLayer`, whose weights the student's layer receives (the module
exercise runs on the framework of :mod:`attnlib.check._modules`). Inputs come from local
``torch.Generator`` s and modules are built inside :func:`attnlib.check._core.seeded` (or on the
meta device), so a check never moves the global seed.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import torch

from .. import (
    EncoderLayer,
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    Transformer,
    causal_mask,
    combine_masks,
    length_mask,
    padding_mask,
    sinusoidal_encoding,
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
)
from ._modules import UnfitError, build, class_problem, dropout_still_on

__all__ = ["decoder_self_mask", "encoder_layer", "rms_norm", "shift_matrix", "shuffled_tokens"]


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


def _reference_decoder_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    # The target mask the Transformer builds for its decoder's self-attention (padding & causal).
    vocab = max(int(tgt.max()), pad_id, 2) + 1
    with torch.device("meta"):  # masks need no weights: nothing is allocated, no seed is used
        model = Transformer(
            vocab, vocab, dim=2, n_heads=1, n_layers=1, hidden_dim=1, max_seq_len=64, pad_id=pad_id
        )
    return model.generate_mask(tgt, tgt)[1]  # (B, 1, Tt, Tt)


def _keys(tgt, pad_id):
    return padding_mask(tgt, pad_id)  # (B, 1, 1, Tt): True for real keys


def _future(tgt):
    return causal_mask(tgt.shape[1])[None, None]  # (1, 1, Tt, Tt)


def _full_and_as_is(hint: str, wrong: Callable[..., torch.Tensor]) -> list[Mistake]:
    """The slip ``wrong`` as the student may return it: broadcast to (B, 1, Tt, Tt), or as it is."""

    def full(t: torch.Tensor, p: int) -> torch.Tensor:
        return wrong(t, p).expand(t.shape[0], 1, t.shape[1], t.shape[1])

    return [Mistake(hint, full), Mistake(hint, wrong)]


def decoder_self_mask(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 10.3: ``student_fn(tgt, pad_id) -> (B, 1, Tt, Tt)`` bool, True = may attend.

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
        *_full_and_as_is(
            "padded keys must be hidden too: combine the causal mask with the padding mask "
            "`(tgt != pad_id)[:, None, None, :]` using &",
            lambda t, p: _future(t),
        ),
        *_full_and_as_is(
            "the decoder must not look ahead: the causal mask (lower triangle) must hold too; combine "
            "the two with & (a key is visible only if it is real AND not in the future)",
            _keys,
        ),
        Mistake(
            "the causal part must be the *lower* triangle: query i (row i) sees keys 0..i",
            lambda t, p: _keys(t, p) & _future(t).transpose(-2, -1),
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
        as_numbers(_reference_decoder_mask),
    ]
    return run_check(
        "Exercise 10.3 — the decoder's self-attention mask",
        student_fn,
        _reference_decoder_mask,
        cases,
        mistakes,
    )


#: Exercise 10.4 builds ``MyEncoderLayer(dim, n_heads, hidden_dim, dropout)`` with these values first.
LAYER_ARGS = (8, 2, 16, 0.1)
_LAYER_SIGNATURE = "(dim, n_heads, hidden_dim, dropout=0.1)"


@functools.lru_cache(maxsize=4)
def _reference_layer(dim: int, n_heads: int, hidden_dim: int, dropout: float) -> EncoderLayer:
    """attnlib's post-LN encoder layer in eval mode, each norm with its own non-trivial scale and
    shift (so that a norm in the wrong place, or one norm used twice, shows in the output).
    Cached: every case and every typical mistake reads the same weights, and nothing writes them."""
    with seeded(dim + n_heads + hidden_dim):
        layer = EncoderLayer(dim, n_heads, hidden_dim, dropout)
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
            f"found {len(norms)} LayerNorm modules; a post-LN encoder layer normalises after each of its "
            "two sublayers, each norm with its own scale and shift: two blocks.LayerNorm(dim)"
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
    """What a post-LN encoder layer with one typical slip returns, with the reference's weights."""

    def wrong(args, x, mask):
        ref = _reference_layer(*args)
        n1, n2, ff = ref.attention_norm, ref.ffn_norm, ref.feed_forward

        def att(h):
            return ref.attention(h, mask=mask)

        with torch.no_grad():
            if kind == "pre-LN":
                h = x + att(n1(x))
                return h + ff(n2(h))
            if kind == "norm then add":
                h = n1(att(x)) + x
                return n2(ff(h)) + h
            if kind == "no residual":
                h = n1(att(x))
                return n2(ff(h))
            if kind == "no attention residual":
                h = n1(att(x))
                return n2(h + ff(h))
            if kind == "no feed-forward residual":
                h = n1(x + att(x))
                return n2(ff(h))
            if kind == "residual from the layer input":
                h = n1(x + att(x))
                return n2(x + ff(h))
            if kind == "mask ignored":
                return ref(x, None)
            if kind == "causal":
                return ref(x, combine_masks(mask, causal_mask(x.shape[1])))
            if kind in ("one norm, at the end", "the first norm, at the end"):
                h = x + att(x)
                return (n2 if kind == "one norm, at the end" else n1)(h + ff(h))
            if kind == "one norm, after attention":
                h = n1(x + att(x))
                return h + ff(h)
            if kind == "one norm for both":
                h = n1(x + att(x))
                return n1(h + ff(h))
            if kind == "feed-forward first":
                h = n1(x + ff(x))
                return n2(h + att(h))
        raise AssertionError(kind)

    return wrong


def encoder_layer(student_cls: Any) -> Verdict:
    """Exercise 10.4: ``student_cls`` a post-LN encoder layer class, built as
    ``student_cls(dim, n_heads, hidden_dim, dropout)`` from attnlib's ``MultiHeadAttention``,
    ``FeedForward`` and two ``LayerNorm`` s, called as ``layer(x, mask)``.

    The check gives the student's sublayers the weights of an :class:`attnlib.blocks.EncoderLayer`
    (the norms in the order the student's forward uses them) and compares the two in eval mode.
    """
    title = "Exercise 10.4 — an encoder layer, whole"
    problem = class_problem(
        title,
        student_cls,
        instance=f"pass the class itself, `check.encoder_layer({type(student_cls).__name__})`, "
        "not a layer built from it: the check builds its own.",
        not_a_module=lambda obj: f"expected a class derived from nn.Module, got {_describe(obj)}.",
    )
    if problem is not None:
        return problem
    try:
        inspect.signature(student_cls).bind(*LAYER_ARGS)
    except TypeError:
        return Verdict(
            False,
            f"{FAIL} {title}: the check builds `{student_cls.__name__}{LAYER_ARGS}`, but your constructor "
            f"takes `{inspect.signature(student_cls)}`; it must take the first arguments of attnlib's "
            f"EncoderLayer: `__init__(self, {_LAYER_SIGNATURE[1:]}`.",
        )
    except ValueError:  # no signature to read: let the call below speak
        pass
    layer = build(
        title,
        student_cls,
        f": `{student_cls.__name__}{LAYER_ARGS}`",
        *LAYER_ARGS,
        seed=0,
        super_hint="call `super().__init__()` first in your `__init__`, before creating any sublayer",
    )
    if isinstance(layer, Verdict):
        return layer
    try:
        _parts(layer, LAYER_ARGS)
    except UnfitError as unfit:
        return Verdict(False, f"{FAIL} {title}: {unfit}.")
    cases = _layer_cases()
    if _dropout_in_eval(student_cls, cases[1]):
        return Verdict(
            False,
            f"{FAIL} {title}: in eval mode your layer gives a different output at every call: dropout is "
            "still active.\n   hint: use nn.Dropout modules (they switch off with .eval()); "
            "`F.dropout(h, p)` drops in eval mode too unless you pass `training=self.training`",
        )
    hints = {
        "pre-LN": "that is pre-LN, x + sublayer(norm(x)); the paper's layer (post-LN) normalises after the "
        "residual addition: norm(x + sublayer(x))",
        "norm then add": "add the residual *before* the norm: norm(x + sublayer(x)); you normalised the "
        "sublayer's output and added x after it",
        "no residual": "each sublayer needs its residual connection: norm(x + sublayer(x)), not "
        "norm(sublayer(x))",
        "no attention residual": "the attention sublayer lost its residual: norm(x + attention(x))",
        "no feed-forward residual": "the feed-forward sublayer lost its residual: norm(h + feed_forward(h)), "
        "h the attention sublayer's output",
        "residual from the layer input": "each residual adds the input *of its own sublayer*: the "
        "feed-forward's is h, the attention sublayer's output, not the layer's input x",
        "mask ignored": "the padding mask is ignored: pass it to the attention, attention(x, mask=mask), so "
        "that no token attends to <pad>",
        "causal": "an encoder sees the whole source: build its MultiHeadAttention with causal=False",
        "one norm, at the end": "normalise after *each* sublayer: norm1(x + attention(x)), then "
        "norm2(h + feed_forward(h)); you normalised only once, at the end",
        "the first norm, at the end": "normalise after *each* sublayer: norm1(x + attention(x)), then "
        "norm2(h + feed_forward(h)); you normalised only once, at the end",
        "one norm, after attention": "normalise after *each* sublayer: the feed-forward's output needs "
        "norm2(h + feed_forward(h)) too",
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


def _shuffle_outcome(with_positions: bool) -> str:
    """Run the experiment of exercise 10.5: shuffle five tokens and compare an encoder layer's outputs."""
    dim, t = 16, 5
    with seeded(0):
        layer = EncoderLayer(dim, 2, 32, dropout=0.0).eval()
        embedding = torch.nn.Embedding(10, dim)
    tokens = torch.tensor([[3, 4, 5, 6, 7]])  # (1, T)
    perm = torch.tensor([2, 0, 4, 1, 3])  # a shuffled order
    positions = sinusoidal_encoding(t, dim) if with_positions else torch.zeros(t, dim)  # (T, D)
    with torch.no_grad():
        out = layer(embedding(tokens) * math.sqrt(dim) + positions)  # (1, T, D)
        out_shuffled = layer(embedding(tokens[:, perm]) * math.sqrt(dim) + positions)
    if torch.allclose(out_shuffled, out, atol=1e-5):
        return "unchanged"
    if torch.allclose(out_shuffled, out[:, perm], atol=1e-5):
        return "permuted"
    return "changed"


def shuffled_tokens(without_positions: Any, with_positions: Any) -> Verdict:
    """Exercise 10.5 (prediction): shuffle the tokens of a sentence and run an encoder layer; are
    its outputs ``"unchanged"``, ``"permuted"`` (the same vectors in the shuffled order) or
    ``"changed"`` (other vectors), without and with the positional encoding?
    """
    title = "Exercise 10.5 — shuffle the tokens"
    if without_positions is ... or with_positions is ...:
        return predictions_not_yet(title)
    words = ", ".join(repr(a) for a in SHUFFLE_ANSWERS)
    answers = [a.strip().lower() if isinstance(a, str) else a for a in (without_positions, with_positions)]
    unknown = [a for a in answers if a not in SHUFFLE_ANSWERS]
    if unknown:
        return Verdict(False, f"{FAIL} {title}: answer each with one of {words}; got {unknown[0]!r}.")
    equivariant = (
        "without positions nothing in the layer knows where a token sits: its attention weights come "
        "from contents alone (a sum over keys does not care in which order they come), and the "
        "feed-forward block and LayerNorm treat each token on its own; so each token gets the very output "
        "it had before, now in its new place"
    )
    moved = (
        "the encoding added in slot t belongs to the slot, not to the token: after the shuffle a token sits "
        "in another slot and gets another PE[t], so its input vector, and its output, are new"
    )
    parts = [
        check_answer("without positional encoding", answers[0], _shuffle_outcome(False), equivariant),
        check_answer("with positional encoding", answers[1], _shuffle_outcome(True), moved),
    ]
    return combined(
        title,
        parts,
        "right. Without positions an encoder layer is permutation-equivariant: shuffled tokens give the "
        "same outputs, shuffled. With the encoding added, the same words in another order give other "
        "outputs: the order is in the input.",
    )
