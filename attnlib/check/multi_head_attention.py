"""Exercise checks for notebook 05 (multi-head attention); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``T`` tokens, ``Din`` input width, ``D`` model width, ``H`` heads,
``Dh = D / H`` head width.

Inputs are ``torch.arange`` numbers where the layout is the lesson (a wrong value then
reads as a wrong index) and come from a local ``torch.Generator`` otherwise.

The module exercise (5.5) hands in a class: its spec, run by the engine of
:mod:`attnlib.check._modules`, copies the weights of an ``attnlib.MultiHeadAttention`` of the same
configuration into it and compares outputs; each typical slip is modelled by ``_variant``, the
reference forward pass with one knob turned. Modules are built under
:func:`attnlib.check._core.seeded`, so the caller's global seed is untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import nn

from .. import MultiHeadAttention, MultiHeadAttentionWrapper
from ..evaluation import count_parameters
from ..i18n import N_, fmt
from ._core import (
    Case,
    Mistake,
    Verdict,
    check_answer,
    combined,
    generator,
    numbered,
    predictions_not_yet,
    randn,
    run_check,
    seeded,
    slips,
    whole_number,
)
from ._modules import ModuleExercise, check_module, load_by_name, parameter_shapes, parameters_problem
from ._reach import own

__all__ = ["fuse_heads", "head_qkv_rows", "head_score_matrices", "mha_parameters", "multihead_module"]


def _reference_head_rows(qkv_weight: torch.Tensor, num_heads: int, head: int) -> torch.Tensor:
    three_d, d_in = qkv_weight.shape
    head_dim = three_d // 3 // num_heads
    rows = qkv_weight.view(3, num_heads, head_dim, d_in)  # (3D, Din) -> (3, H, Dh, Din): role, head, row
    return rows[:, head].reshape(3 * head_dim, d_in)  # (3, Dh, Din) -> (3Dh, Din)


def _rows_by_input_width(w: torch.Tensor, h: int, head: int) -> torch.Tensor:
    d = w.shape[1]  # the slip: D_in taken for D
    dh = d // h
    return torch.cat([w[r * d + head * dh : r * d + (head + 1) * dh] for r in range(3)])


def head_qkv_rows(student_fn: Callable[[torch.Tensor, int, int], torch.Tensor]) -> Verdict:
    """Exercise 5.1: ``student_fn(qkv_weight, num_heads, head)``: ``(3D, Din)`` -> ``(3Dh, Din)``.

    ``qkv_weight`` is a fused projection's weight (``Attention.qkv.weight``,
    ``nn.MultiheadAttention.in_proj_weight``): all query rows, then all key rows, then all
    value rows. The result holds the rows head ``head`` uses, in the same order: its ``Dh``
    query rows, then its key rows, then its value rows.
    """
    cases = [
        Case("D=4, Din=4, H=2, head 0", (numbered(12, 4), 2, 0)),
        Case("D=4, Din=4, H=2, head 1", (numbered(12, 4), 2, 1)),
        Case("D=8, Din=8, H=4, head 2", (numbered(24, 8), 4, 2)),
        Case("D=6, Din=3 (D_in differs from D), H=3, head 1", (numbered(18, 3), 3, 1)),
        Case("one head: H=1", (numbered(12, 2), 1, 0)),
    ]

    def per_head_blocks(w, h, head):  # rows grouped head by head: q, k, v of head 0, then of head 1, ...
        dh = w.shape[0] // 3 // h
        return w.view(h, 3, dh, w.shape[1])[head].reshape(3 * dh, w.shape[1])

    def dealt(w, h, head):
        dh = w.shape[0] // 3 // h
        return w.view(3, dh, h, w.shape[1])[:, :, head].reshape(3 * dh, w.shape[1])

    mistakes = [
        Mistake(
            "the fused rows are ALL queries, then ALL keys, then ALL values (section 5), not head 0's "
            "q, k, v, then head 1's: a head's query, key and value rows lie in three separate blocks",
            per_head_blocks,
        ),
        Mistake(
            "each head owns a contiguous block of Dh rows in each of the three blocks (head 0 the first "
            "Dh); taking every H-th row deals the rows out to the heads like cards",
            dealt,
        ),
        Mistake(
            "D, the model width, is qkv_weight.shape[0] // 3; shape[1] is the input width D_in, "
            "which need not equal D",
            _rows_by_input_width,
        ),
        Mistake(
            "the head also needs its key and value rows: return its query rows, then its key rows, "
            "then its value rows",
            lambda w, h, head: w.view(3, h, -1, w.shape[1])[0, head],
        ),
        Mistake(
            "nn.Linear's weight is (out_features, in_features): a head owns ROWS (output features), "
            "not columns",
            lambda w, h, head: w[:, head * (w.shape[1] // h) : (head + 1) * (w.shape[1] // h)],
        ),
        Mistake(
            "return one (3*Dh, D_in) matrix, like qkv.weight itself: concatenate the three pieces, "
            "do not stack them",
            lambda w, h, head: w.view(3, h, -1, w.shape[1])[:, head],
        ),
    ]
    return run_check(
        N_("Exercise 5.1 — one head out of the fused projection"),
        student_fn,
        _reference_head_rows,
        cases,
        mistakes,
    )


def _reference_fuse_heads(head_weights: list[torch.Tensor]) -> torch.Tensor:
    blocks = torch.stack(list(head_weights))  # H x (3Dh, Din) -> (H, 3Dh, Din): head by head
    h, three_dh, d_in = blocks.shape
    roles = blocks.view(h, 3, three_dh // 3, d_in).transpose(0, 1)  # (H, 3, Dh, Din) -> (3, H, Dh, Din)
    return roles.reshape(-1, d_in)  # (3, H, Dh, Din) -> (3D, Din), D = H * Dh


def _head_blocks(*shape: int) -> list[torch.Tensor]:
    """``H`` numbered ``(3Dh, Din)`` blocks, each the rows of one head (as exercise 5.1 returns them)."""
    h, three_dh, d_in = shape
    return list(numbered(h, three_dh, d_in).unbind(0))


def fuse_heads(student_fn: Callable[[list[torch.Tensor]], torch.Tensor]) -> Verdict:
    """Exercise 5.2: ``student_fn(head_weights) -> qkv_weight``, the inverse of exercise 5.1.

    ``head_weights`` is a list of ``H`` tensors ``(3Dh, Din)``, each one head's query rows, then
    its key rows, then its value rows. The result ``(3D, Din)`` is the fused weight of
    ``Attention.qkv``: all query rows (head 0's first), then all key rows, then all value rows.
    """
    cases = [
        Case("H=2 heads of Dh=2, Din=4", (_head_blocks(2, 6, 4),)),
        Case("H=3 heads of Dh=2, Din=3 (D_in differs from D)", (_head_blocks(3, 6, 3),)),
        Case("H=4 heads of Dh=1, Din=4", (_head_blocks(4, 3, 4),)),
        Case("one head: H=1", (_head_blocks(1, 6, 2),)),
    ]

    def dealt(ws):  # each role block holds the heads' rows interleaved, row 0 of every head first
        blocks = torch.stack(ws)
        h, three_dh, d_in = blocks.shape
        return blocks.view(h, 3, three_dh // 3, d_in).permute(1, 2, 0, 3).reshape(-1, d_in)

    mistakes = [
        Mistake(
            "concatenating the heads' blocks keeps them head by head (head 0's q, k, v, then head 1's); "
            "Attention.qkv wants ALL query rows first, then all key rows, then all value rows: view "
            "each block as (3, Dh, Din) and bring the role axis in front of the head axis",
            lambda ws: torch.cat(ws, dim=0),
        ),
        Mistake(
            "inside each role's block a head owns Dh CONTIGUOUS rows, head 0's first; you interleaved "
            "the heads row by row (dealt them out like cards): transpose the head and role axes only",
            dealt,
        ),
        Mistake(
            "return one 2-D matrix (3D, Din), the shape of qkv.weight: reshape after stacking",
            lambda ws: _reference_fuse_heads(ws).view(3, len(ws), -1, ws[0].shape[-1]),
        ),
        Mistake(
            "keep nn.Linear's (out_features, in_features) layout: rows are outputs, do not transpose",
            lambda ws: _reference_fuse_heads(ws).T,
        ),
    ]
    return run_check(
        N_("Exercise 5.2 — merge the heads' weights"), student_fn, _reference_fuse_heads, cases, mistakes
    )


def _score_matrices(
    qkv_weight: torch.Tensor,
    num_heads: int,
    *,
    layout: str = "role",
    pair: tuple[int, int] = (0, 1),
    width: str = "Dh",
) -> torch.Tensor:
    """Each head's ``(Din, Din)`` score matrix ``W_q,h^T W_k,h / sqrt(Dh)``; the knobs model the slips."""
    three_d, d_in = qkv_weight.shape
    head_dim = three_d // 3 // num_heads
    if layout == "role":
        w = qkv_weight.view(3, num_heads, head_dim, d_in)  # (3D, Din) -> (3, H, Dh, Din)
    else:  # the slip: the rows read head by head
        w = qkv_weight.view(num_heads, 3, head_dim, d_in).transpose(0, 1)
    first, second = w[pair[0]], w[pair[1]]  # two (H, Dh, Din)
    scale = {"Dh": head_dim**-0.5, "D": (three_d // 3) ** -0.5, "none": 1.0}[width]
    return first.transpose(-2, -1) @ second * scale  # (H, Din, Dh) @ (H, Dh, Din) -> (H, Din, Din)


def head_score_matrices(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 5.3: ``student_fn(qkv_weight, num_heads) -> (H, Din, Din)``.

    Head ``h`` of ``Attention`` scores query token ``x`` against key token ``y`` as
    ``(x W_q,h^T) . (y W_k,h^T) / sqrt(Dh) = x A_h y^T``; the result stacks the ``A_h``, one fused
    matrix per head in place of its query and key projections.
    """
    gen = generator(7)
    cases = [
        Case(
            fmt("D={d}, Din={d_in}, H={h}", d=d, d_in=d_in, h=h), (torch.randn(3 * d, d_in, generator=gen), h)
        )
        for d, d_in, h in [(4, 4, 2), (6, 3, 3), (8, 8, 4), (4, 2, 1)]
    ]

    def projected_product(w, h):  # the slip: W_q,h W_k,h^T, the (Dh, Dh) product of the projections
        rows = w.view(3, h, -1, w.shape[1])  # (3, H, Dh, Din)
        return rows[0] @ rows[1].transpose(-2, -1) * rows.shape[2] ** -0.5  # (H, Dh, Dh)

    knobs = [
        (
            N_(
                "A_h is W_q,h^T W_k,h, shape (Din, Din): (Din, Dh) @ (Dh, Din). W_q,h W_k,h^T is (Dh, Dh) "
                "and "
                "acts on the projected vectors, not on the tokens"
            ),
            projected_product,
        ),
        (
            N_("Attention divides every score by sqrt(Dh) (its `scale`): put that factor into A_h"),
            lambda w, h: _score_matrices(w, h, width="none"),
        ),
        (
            N_("the scale uses the head width Dh = D / H, not the model width D"),
            lambda w, h: _score_matrices(w, h, width="D"),
        ),
        (
            N_(
                "the query sits on the left, x A_h y^T: A_h = W_q,h^T W_k,h. Yours is its transpose, "
                "W_k,h^T W_q,h, which scores the keys against the queries"
            ),
            lambda w, h: _score_matrices(w, h, pair=(1, 0)),
        ),
        (
            N_(
                "the fused rows are ALL queries, then ALL keys, then ALL values (exercise 5.1): view them "
                "as (3, H, Dh, Din), not head by head as (H, 3, Dh, Din)"
            ),
            lambda w, h: _score_matrices(w, h, layout="head"),
        ),
        (
            N_(
                "the scores use the query rows (role 0) and the key rows (role 1); the value rows (role 2) "
                "only enter after the softmax"
            ),
            lambda w, h: _score_matrices(w, h, pair=(0, 2)),
        ),
    ]
    mistakes = [Mistake(hint, wrong) for hint, wrong in knobs]
    return run_check(
        N_("Exercise 5.3 — one score matrix per head"),
        student_fn,
        lambda w, h: _score_matrices(w, h),
        cases,
        mistakes,
    )


#: Exercise 5.4's two modules: eight heads either way, with biases on q, k and v, and d_in != d_out.
MHA_CONFIG = {
    "d_in": 96,
    "d_out": 128,
    "context_length": 64,
    "dropout": 0.1,
    "num_heads": 8,
    "qkv_bias": True,
}
#: The wrapper's d_out is the width of ONE head: 8 heads of 16 make the same 128 output features.
WRAPPER_CONFIG = {**MHA_CONFIG, "d_out": 16}


def _mha_hints() -> dict[int, str]:
    """Exercise 5.4's hints for the MultiHeadAttention count, by the wrong count each slip gives."""
    d_in, d, t, h = (MHA_CONFIG[k] for k in ("d_in", "d_out", "context_length", "num_heads"))
    qkv, out = 3 * (d_in * d + d), d * d + d  # W_query, W_key, W_value with biases; out_proj
    return {
        qkv - 3 * d + out: N_("qkv_bias=True: W_query, W_key and W_value each have a bias of d_out numbers"),
        qkv: fmt(
            "do not forget out_proj, an nn.Linear(d_out, d_out) after the heads; and every width "
            "after the input is d_out={d}, not d_in={d_in}",
            d=d,
            d_in=d_in,
        ),
        qkv + d * d: N_("out_proj has its own bias (d_out numbers), whatever qkv_bias says"),
        4 * (d * d + d): fmt(
            "W_query, W_key and W_value map d_in={d_in} inputs to d_out={d} outputs: {d_in} x {d} "
            "weights each, plus the bias",
            d_in=d_in,
            d=d,
        ),
        3 * (d_in * (d // h) + d // h) + out: fmt(
            "each of W_query, W_key, W_value maps to all {d} features ({h} heads x {dh}), not to "
            "one head's {dh}",
            d=d,
            h=h,
            dh=d // h,
        ),
        h * (qkv + out): fmt(
            "the heads split d_out into {h} slices of {dh}; they share the projections and add no parameters",
            h=h,
            dh=d // h,
        ),
        qkv + out + t * t: N_("the causal mask is a buffer, not a parameter: it is not trained"),
    }


def _wrapper_hints() -> dict[int, str]:
    """Exercise 5.4's hints for the MultiHeadAttentionWrapper count."""
    d_in, dh, h = (WRAPPER_CONFIG[k] for k in ("d_in", "d_out", "num_heads"))
    head = 3 * (d_in * dh + dh)  # one CausalAttention: W_query, W_key, W_value with biases
    d = h * dh
    return {
        head: fmt(
            "the wrapper holds num_heads={h} separate CausalAttention heads, each with its own "
            "three projections, each mapping to d_out={dh} (ONE head's width, not split {h} "
            "ways): count one head, then multiply by the heads",
            h=h,
            dh=dh,
        ),
        h * head + d * d + d: N_("the wrapper has no out_proj: it only concatenates its heads' outputs"),
        h * 3 * d_in * dh: fmt(
            "qkv_bias=True: every head's W_query, W_key and W_value has a bias of {dh} numbers", dh=dh
        ),
        h * 3 * (d_in * d + d): fmt(
            "in the wrapper d_out is the width of ONE head ({dh} here, {h} x {dh} = {d} features "
            "in all), not the total width",
            dh=dh,
            h=h,
            d=d,
        ),
    }


#: The hint for a count that matches no typical slip.
_GENERIC_COUNT = N_(
    "count each nn.Linear(n_in, n_out): n_in * n_out weights, plus n_out biases if it has a bias"
)


def _count(cls: type, cfg: dict) -> int:
    # A few kilobytes on the CPU, inside fork_rng so that the global seed is not touched. (On the meta
    # device the causal mask's tril runs torch's Python reference, whose first use in a process
    # imports about 800 modules: about a second.)
    with torch.random.fork_rng(devices=[]):
        return count_parameters(cls(**cfg))


def mha_parameters(mha_parameters: object, wrapper_parameters: object) -> Verdict:
    """Exercise 5.4 (prediction): the number of parameters of
    ``MultiHeadAttention(d_in=96, d_out=128, context_length=64, dropout=0.1, num_heads=8, qkv_bias=True)``
    and of ``MultiHeadAttentionWrapper`` with the same arguments but ``d_out=16`` (the width of one head).
    """
    title = N_("Exercise 5.4 — parameters, with biases and with separate heads")
    if mha_parameters is ... or wrapper_parameters is ...:
        return predictions_not_yet(title)
    expected_mha = _count(MultiHeadAttention, MHA_CONFIG)
    expected_wrapper = _count(MultiHeadAttentionWrapper, WRAPPER_CONFIG)
    parts = [
        check_answer(
            N_("parameters of MultiHeadAttention"),
            mha_parameters,
            expected_mha,
            _mha_hints().get(whole_number(mha_parameters), _GENERIC_COUNT),
        ),
        check_answer(
            N_("parameters of MultiHeadAttentionWrapper"),
            wrapper_parameters,
            expected_wrapper,
            _wrapper_hints().get(whole_number(wrapper_parameters), _GENERIC_COUNT),
        ),
    ]
    return combined(
        title,
        parts,
        fmt(
            "right, MultiHeadAttention has {expected_mha} parameters and the wrapper "
            "{expected_wrapper}: the same q, k, v weights and biases, cut into heads, plus "
            "out_proj in MultiHeadAttention only.",
            expected_mha=expected_mha,
            expected_wrapper=expected_wrapper,
        ),
    )


# ---------------------------------------------------------------------------------------------
# Exercise 5.5: a whole module, checked by copying attnlib's weights into it
# ---------------------------------------------------------------------------------------------


def _config(
    d_in: int, d_out: int, context_length: int, num_heads: int, dropout: float = 0.0, qkv_bias: bool = False
) -> dict:
    """The constructor's arguments, by name, in the order of attnlib.MultiHeadAttention's signature."""
    return {
        "d_in": d_in,
        "d_out": d_out,
        "context_length": context_length,
        "dropout": dropout,
        "num_heads": num_heads,
        "qkv_bias": qkv_bias,
    }


def _module_cases() -> list[Case]:
    gen = generator(55)
    cases = []
    for name, cfg, b, t, train in [
        (N_("B=2, T=6, D_in=3, D=4, H=2"), _config(3, 4, 6, 2), 2, 6, False),
        (N_("B=1, T=5 < context_length=8, D_in=4, D=6, H=3"), _config(4, 6, 8, 3), 1, 5, False),
        (N_("B=3, T=4, D_in=5, D=8, H=4, qkv_bias=True"), _config(5, 8, 4, 4, qkv_bias=True), 3, 4, False),
        (N_("one head: H=1, T=3 < context_length=6"), _config(4, 4, 6, 1), 2, 3, False),
        (N_("one token: T=1"), _config(3, 4, 6, 2), 2, 1, False),
        (N_("dropout=0.3, eval mode"), _config(3, 6, 8, 2, dropout=0.3), 2, 7, False),
        (N_("train mode with dropout=0"), _config(3, 4, 6, 2), 2, 5, True),
    ]:
        x = torch.randn(b, t, cfg["d_in"], generator=gen)  # (B, T, Din)
        cases.append(Case(name, (cfg, x), {"train": True} if train else {}))
    return cases


def _reference_module(cfg: dict) -> nn.Module:
    with seeded(5):
        return MultiHeadAttention(**cfg)


def _reference(cfg: dict, x: torch.Tensor, train: bool = False) -> torch.Tensor:
    module = _reference_module(cfg).train(train)
    with torch.no_grad(), seeded(7):
        return module(x)


def _variant(
    cfg: dict,
    x: torch.Tensor,
    train: bool = False,
    *,
    split: str = "transpose",
    merge: str = "transpose",
    scale: str = "head",
    mask: str = "causal",
    softmax_dim: int = -1,
    out_proj: bool = True,
) -> torch.Tensor:
    """The reference forward pass with one knob turned: what a typical slip computes."""
    ref = _reference_module(cfg)
    b, t, _ = x.shape
    h, d = cfg["num_heads"], cfg["d_out"]
    dh = d // h

    def heads(y: torch.Tensor) -> torch.Tensor:
        if split == "view":
            return y.view(b, h, t, dh)  # memory order: mixes tokens into heads
        return y.view(b, t, h, dh).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)

    with torch.no_grad():
        q, k, v = (heads(proj(x)) for proj in (ref.W_query, ref.W_key, ref.W_value))
        scores = q @ k.transpose(-2, -1)  # (B, H, T, Dh) @ (B, H, Dh, T) -> (B, H, T, T)
        scores = scores / {"head": dh**0.5, "d_out": d**0.5}.get(scale, 1.0)
        ones = torch.ones(t, t, dtype=torch.bool)
        hidden = {
            "causal": ~ones.tril(),
            "diagonal_hidden": ones.triu(),  # triu(diagonal=0) hides the diagonal too
            "inverted": ones.tril(),  # True = may attend, used as True = hidden
            "none": ~ones,
        }[mask]
        weights = torch.softmax(scores.masked_fill(hidden, -torch.inf), dim=softmax_dim)
        if scale == "after":
            weights = weights / dh**0.5
        context = weights @ v  # (B, H, T, T) @ (B, H, T, Dh) -> (B, H, T, Dh)
        if merge != "reshape":  # the slip reshapes without the transpose, mixing tokens again
            context = context.transpose(1, 2)  # (B, H, T, Dh) -> (B, T, H, Dh)
        context = context.reshape(b, t, d)  # -> (B, T, D)
        return ref.out_proj(context) if out_proj else context


_VIEW_HINT = N_(
    "viewing the projections straight to (B, H, T, Dh) keeps the numbers in memory order, so a "
    "'head' gets pieces of several tokens; view as (B, T, H, Dh), then transpose(1, 2)"
)
#: (hint, the knobs of _variant that make the slip), in the order they are tried.
_MODULE_SLIPS = [
    (_VIEW_HINT, {"split": "view", "merge": "reshape"}),
    (_VIEW_HINT, {"split": "view"}),
    (
        N_(
            "merging: reshaping (B, H, T, Dh) straight to (B, T, D) mixes tokens; transpose(1, 2) "
            "back to (B, T, H, Dh) first, then reshape"
        ),
        {"merge": "reshape"},
    ),
    (
        N_(
            "the scores must be divided by sqrt(head_dim), the width of the dot products, before "
            "softmax; you did not scale them"
        ),
        {"scale": "none"},
    ),
    (
        N_(
            "each head's dot products have head_dim = d_out / num_heads terms: divide by "
            "sqrt(head_dim), not by sqrt(d_out)"
        ),
        {"scale": "d_out"},
    ),
    (N_("scale the scores before softmax, not the weights after it"), {"scale": "after"}),
    ("the causal mask is missing: token i may only attend to tokens 0..i", {"mask": "none"}),
    (
        N_(
            "your mask hides the diagonal too, so token 0 sees nothing (nan): a token may attend to "
            "itself. torch.triu(..., diagonal=1) marks exactly the future keys"
        ),
        {"mask": "diagonal_hidden"},
    ),
    (
        N_(
            "your mask is the wrong way round: attnlib.causal_mask is True where a token MAY attend, "
            "so fill where it is False (~mask)"
        ),
        {"mask": "inverted"},
    ),
    (
        N_("softmax over the keys, the last axis (dim=-1): each query's weights must sum to 1"),
        {"softmax_dim": -2},
    ),
    (
        N_("softmax over the keys, the last axis (dim=-1): dim=1 of (B, H, T, T) is the heads"),
        {"softmax_dim": 1},
    ),
    (
        N_("the output projection is missing: after merging the heads, return self.out_proj(context)"),
        {"out_proj": False},
    ),
]


def _unfit(module: nn.Module, cfg: dict) -> str | None:
    """What differs from attnlib.MultiHeadAttention's parameters, or None when names and shapes match."""

    def hint(missing: set[str], extra: set[str]) -> str:
        if "out_proj.weight" in missing and not extra:
            return N_(
                "add the output projection, self.out_proj = nn.Linear(d_out, d_out): it mixes the heads"
            )
        if missing == {"out_proj.bias"}:
            return N_(
                "out_proj keeps nn.Linear's default bias=True; only W_query, W_key, W_value follow qkv_bias"
            )
        if {m.split(".")[1] for m in missing | extra} == {"bias"}:
            return fmt(
                "qkv_bias={qkv_bias}: give W_query, W_key and W_value bias=qkv_bias", qkv_bias=cfg["qkv_bias"]
            )
        if missing or extra:
            return N_(
                "the check copies attnlib's weights into yours, so it needs these names: self.W_query, "
                "self.W_key, self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias) and "
                "self.out_proj = nn.Linear(d_out, d_out)"
            )
        return N_(
            "W_query, W_key and W_value each map d_in to all d_out features (every head at once); "
            "the heads are cut out of their outputs in forward"
        )

    expected = parameter_shapes(_reference_module(cfg))
    return parameters_problem(cfg, module, expected, N_("differ from attnlib.MultiHeadAttention's"), hint)


# Where dropout acts (train mode). The probe gives the module T one-hot tokens, values that write
# token j's one-hot vector twice into every head (at slots j and T + j of its Dh = 2T) and an identity
# out_proj: its output then spells out each head's weights (B, H, T, T) twice over. Dropout on the
# weights zeroes both copies of a weight and scales both by 1/(1-p); anything else shows.
_PROBE_T, _PROBE_H, _PROBE_P = 4, 2, 0.5
_PROBE = _config(_PROBE_T, 2 * _PROBE_T * _PROBE_H, _PROBE_T + 2, _PROBE_H, dropout=_PROBE_P)
_ON_OUTPUT = N_(
    "in train mode your dropout zeroes single numbers of the output (B, T, d_out), not whole attention "
    "weights.\n   hint: dropout belongs on the attention weights (B, H, T, T), right after the softmax "
    "(`self.dropout(attn_weights)`), not on the context or on the module's output"
)
_ON_SCORES = N_(
    "in train mode no attention weight is ever zeroed: each row still sums to 1.\n   hint: dropout on the "
    "scores before the softmax drops nothing, because the softmax renormalises (a score set to 0 still "
    "gets weight exp(0)); apply dropout to the weights, after the softmax"
)
_NO_RESCALE = N_(
    "in train mode the weights dropout keeps are not scaled up.\n   hint: you drop weights without the "
    "rescale: scale the kept ones by 1/(1-p), as nn.Dropout does, so that each weight keeps its expected "
    "value"
)
_RENORMALISED = N_(
    "in train mode the weights dropout keeps sum to 1 again.\n   hint: dropout rescales the kept weights by "
    "1/(1-p) only; do not renormalise them"
)


def _probe_weights() -> dict[str, torch.Tensor]:
    """The probe's weights, by parameter name: random queries and keys, the one-hot values, out_proj = I."""
    t, d = _PROBE_T, _PROBE["d_out"]
    gen = generator(57)
    one_hot_twice = torch.cat([torch.eye(t), torch.eye(t)]).repeat(_PROBE_H, 1)  # (H * 2T, T) = (D, Din)
    return {
        "W_query.weight": torch.randn(d, t, generator=gen),
        "W_key.weight": torch.randn(d, t, generator=gen),
        "W_value.weight": one_hot_twice,
        "out_proj.weight": torch.eye(d),
        "out_proj.bias": torch.zeros(d),
    }


def _spelled(out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two copies of the weights that a probe's output spells out, each (B, H, T, T)."""
    b, t = out.shape[:2]
    copies = out.reshape(b, t, _PROBE_H, 2, t).permute(
        3, 0, 2, 1, 4
    )  # (B, Tq, H, 2, Tk) -> (2, B, H, Tq, Tk)
    return copies[0], copies[1]


def _dropout_where(fitted: Callable[..., nn.Module]) -> str | None:
    """Exercise 5.5's dropout in train mode: on the weights (B, H, T, T), after the softmax, rescaled."""
    x = torch.eye(_PROBE_T).expand(3, _PROBE_T, _PROBE_T).clone()  # (B, T, Din): token t is e_t
    module, reference = fitted(_PROBE, (x,)), _reference_module(_PROBE)
    load_by_name(module, _probe_weights())
    load_by_name(reference, _probe_weights())
    with torch.no_grad(), seeded(7):
        weights, _ = _spelled(reference.eval()(x))
        out = module.train()(x)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (*x.shape[:2], _PROBE["d_out"]):
        return None  # the cases have spoken about shapes
    first, second = _spelled(out)
    if not torch.allclose(first, second, atol=1e-5, equal_nan=True):
        return _ON_OUTPUT
    clean = ~first.isnan().any(dim=-1, keepdim=True)  # (B, H, T, 1): rows without a nan (0/0, -inf * 0)
    visible = (weights > 0) & clean  # (B, H, T, T)
    zeroed = visible & (first.abs() <= 1e-7)
    if not zeroed.any():
        return _ON_SCORES
    kept = visible & ~zeroed
    ratio = first[kept] / weights[kept]
    if torch.allclose(ratio, torch.full_like(ratio, 1 / (1 - _PROBE_P)), rtol=1e-4):
        return None
    if torch.allclose(ratio, torch.ones_like(ratio), rtol=1e-4):
        return _NO_RESCALE
    rows = kept.any(dim=-1)  # (B, H, T): clean rows with a weight kept
    if torch.allclose(first.sum(dim=-1)[rows], torch.tensor(1.0), atol=1e-4):
        return _RENORMALISED
    return fmt(
        "in train mode with dropout={p} the weights dropout keeps are scaled by {scale}, "
        "not by 1/(1-p) = {rescale}.\n   hint: divide the kept weights by 1 - p, with p the "
        "constructor's `dropout` argument (nn.Dropout(dropout) does it), and drop only once, "
        "on the weights",
        p=_PROBE_P,
        scale=f"{float(ratio.median()):.3g}",
        rescale=f"{1 / (1 - _PROBE_P):g}",
    )


@functools.cache
def _module_exercise() -> ModuleExercise:
    """Exercise 5.5's spec, built at its first check, not at import (which stays light)."""
    return ModuleExercise(
        title=N_("Exercise 5.5 — a multi-head attention module"),
        check="multihead_module",
        example="MyMultiHeadAttention",
        init="(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)",
        forward="x",
        cases=_module_cases(),
        reference=_reference,
        unfit=_unfit,
        fit=lambda module, cfg, x: load_by_name(module, dict(_reference_module(cfg).named_parameters())),
        mistakes=slips(_variant, _MODULE_SLIPS),
        eval_probe=5,  # dropout=0.3, eval mode
        train_probe=Case("dropout=0.5", (_config(3, 4, 6, 2, dropout=0.5), randn(2, 6, 3, seed=56))),
        no_dropout=N_(
            "dropout is missing: apply self.dropout = nn.Dropout(dropout) to the attention weights, "
            "after softmax"
        ),
        error_hints={
            "< context_length": N_(
                "this is a case with T shorter than context_length: if your mask is the "
                "(context_length, context_length) buffer, cut it to the tokens there are, [:T, :T]"
            )
        },
        dropout_where=_dropout_where,
        forbidden=[own(MultiHeadAttention)],
    )


def multihead_module(student_cls: object) -> Verdict:
    """Exercise 5.5: a class ``MyMultiHeadAttention(nn.Module)`` for causal multi-head self-attention.

    The check builds it as ``cls(d_in, d_out, context_length, dropout, num_heads, qkv_bias)``
    (each argument by name), copies the weights of an ``attnlib.MultiHeadAttention`` of the same
    configuration into its ``W_query``, ``W_key``, ``W_value`` (``nn.Linear(d_in, d_out,
    bias=qkv_bias)``) and ``out_proj`` (``nn.Linear(d_out, d_out)``), and compares
    ``module(x)``, ``x`` ``(B, T, d_in)`` -> ``(B, T, d_out)``, in eval mode and in train mode
    with dropout 0; in eval mode with dropout on, two calls must agree. Last, in train mode with
    dropout 0.5, two calls must differ, and dropout must act on the attention weights ``(B, H, T, T)``
    after the softmax, scaling the kept ones by ``1/(1-p)``: a probe whose values and ``out_proj``
    make the output spell out the weights shows where it acts.
    """
    return check_module(_module_exercise(), student_cls)
