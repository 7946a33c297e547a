"""Exercise checks for notebook 05 (multi-head attention; see attnlib.check._core).

Shapes: ``B`` batch, ``T`` tokens, ``Din`` input width, ``D`` model width, ``H`` heads,
``Dh = D / H`` head width.

Inputs are ``torch.arange`` numbers where the layout is the lesson (a wrong value then
reads as a wrong index) and come from a local ``torch.Generator`` otherwise.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from ..multihead import MultiHeadAttention
from ..multihead import merge_heads as reference_merge_heads
from ..multihead import split_heads as reference_split_heads
from ._core import Case, Mistake, Verdict, check_answer, run_check

__all__ = ["fuse_qkv", "merge_heads", "mha_parameters", "split_heads"]


def _numbered(*shape: int) -> torch.Tensor:
    """A float tensor whose entries are their own flat index: 0., 1., 2., ..."""
    return torch.arange(torch.Size(shape).numel(), dtype=torch.float32).view(shape)


def split_heads(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 5.1: ``student_fn(x, num_heads)``: ``(B, T, D)`` -> ``(B, H, T, Dh)``.

    Head ``h`` takes features ``h*Dh .. (h+1)*Dh - 1`` of every token.
    """
    cases = [
        Case("B=1, T=3, D=4, H=2", (_numbered(1, 3, 4), 2)),
        Case("B=2, T=5, D=6, H=3", (_numbered(2, 5, 6), 3)),
        Case("B=2, T=3, D=8, H=4", (_numbered(2, 3, 8), 4)),
        Case("one head: H=1", (_numbered(2, 3, 4), 1)),
        Case("one token: T=1", (_numbered(3, 1, 6), 2)),
    ]

    def view_only(x, h):
        b, t, d = x.shape
        return x.view(b, t, h, d // h)  # (B, T, H, Dh)

    mistakes = [
        Mistake(
            "viewing straight to (B, H, T, Dh) keeps the numbers in memory order, so one 'head' gets "
            "pieces of several tokens; view as (B, T, H, Dh) first, then transpose(1, 2)",
            lambda x, h: x.view(x.shape[0], h, x.shape[1], x.shape[2] // h),
        ),
        Mistake(
            "you stopped after the view: transpose(1, 2) moves the head axis in front of the token axis",
            view_only,
        ),
        Mistake(
            "each head takes a contiguous block of Dh features (head 0: features 0..Dh-1); splitting the "
            "last axis as (Dh, H) instead of (H, Dh) deals the features out to the heads like cards",
            lambda x, h: x.view(x.shape[0], x.shape[1], x.shape[2] // h, h).permute(0, 3, 1, 2),
        ),
        Mistake(
            "wrong transpose: swap axis 1 (tokens) and axis 2 (heads) of the (B, T, H, Dh) view",
            lambda x, h: view_only(x, h).transpose(1, 3),
        ),
        Mistake(
            "wrong transpose: swap axis 1 (tokens) and axis 2 (heads) of the (B, T, H, Dh) view",
            lambda x, h: view_only(x, h).transpose(2, 3),
        ),
    ]
    return run_check("Exercise 5.1 — split into heads", student_fn, reference_split_heads, cases, mistakes)


def merge_heads(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 5.2: ``student_fn(context)``: ``(B, H, T, Dh)`` -> ``(B, T, D)`` with ``D = H * Dh``.

    The inverse of exercise 5.1: token ``t`` gets head 0's ``Dh`` features, then head 1's, ...
    """
    cases = [
        Case("B=1, H=2, T=3, Dh=2", (_numbered(1, 2, 3, 2),)),
        Case("B=2, H=3, T=4, Dh=2", (_numbered(2, 3, 4, 2),)),
        Case("one head: H=1", (_numbered(2, 1, 5, 3),)),
        Case("one token: T=1", (_numbered(1, 4, 1, 2),)),
    ]
    mistakes = [
        Mistake(
            "reshaping (B, H, T, Dh) straight to (B, T, D) mixes tokens: transpose(1, 2) first, so each "
            "token's heads sit next to each other, then reshape",
            lambda c: c.reshape(c.shape[0], c.shape[2], c.shape[1] * c.shape[3]),
        ),
        Mistake(
            "the features of head 0 come first, then those of head 1, ...: transpose(1, 2) to (B, T, H, Dh), "
            "not to (B, T, Dh, H)",
            lambda c: c.permute(0, 2, 3, 1).reshape(c.shape[0], c.shape[2], c.shape[1] * c.shape[3]),
        ),
    ]
    return run_check("Exercise 5.2 — merge the heads", student_fn, reference_merge_heads, cases, mistakes)


def _reference_fuse(w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor) -> torch.Tensor:
    # nn.Linear weights are (out, in): stacking the outputs means stacking rows.
    return torch.cat([w_query, w_key, w_value], dim=0)  # 3 x (D, Din) -> (3D, Din)


def fuse_qkv(student_fn: Callable[..., torch.Tensor]) -> Verdict:
    """Exercise 5.3: ``student_fn(w_query, w_key, w_value) -> qkv_weight``.

    Each input is an ``nn.Linear`` weight of shape ``(D, Din)``; the result ``(3D, Din)`` is
    the weight of one ``nn.Linear(Din, 3D)`` whose output is all queries, then all keys,
    then all values (timm's ``Attention.qkv``).
    """
    gen = torch.Generator().manual_seed(6)
    cases = [
        Case(f"D={d}, Din={d_in}", tuple(torch.randn(d, d_in, generator=gen) for _ in range(3)))
        for d, d_in in [(2, 2), (4, 4), (6, 3)]
    ]
    mistakes = [
        Mistake(
            "nn.Linear stores its weight as (out_features, in_features): the three projections' outputs "
            "are stacked as rows, so concatenate along dim 0",
            lambda q, k, v: torch.cat([q, k, v], dim=1),
        ),
        Mistake(
            "torch.stack adds a new axis; qkv.weight is one 2-D matrix (3D, Din): use torch.cat",
            lambda q, k, v: torch.stack([q, k, v]),
        ),
        Mistake(
            "do not transpose: nn.Linear computes x @ weight.T itself, and qkv.weight has the same "
            "(out, in) layout as W_query.weight",
            lambda q, k, v: torch.cat([q.T, k.T, v.T], dim=0),
        ),
        Mistake(
            "this is the transpose of qkv.weight (the (in, out) layout of x @ W); nn.Linear stores "
            "(out_features, in_features): concatenate the weights themselves along dim 0",
            lambda q, k, v: torch.cat([q.T, k.T, v.T], dim=1),
        ),
        *(
            Mistake(
                "the order matters: Attention reads the fused output as queries, then keys, then values",
                lambda q, k, v, order=order: torch.cat([(q, k, v)[i] for i in order], dim=0),
            )
            for order in itertools.permutations(range(3))
            if order != (0, 1, 2)
        ),
    ]
    return run_check("Exercise 5.3 — fuse q, k, v", student_fn, _reference_fuse, cases, mistakes)


#: The module of exercise 5.4: d_in differs from d_out, so each projection's shape matters.
MHA_CONFIG = {"d_in": 256, "d_out": 512, "context_length": 128, "dropout": 0.1, "num_heads": 8}


def mha_parameters(answer: object) -> Verdict:
    """Exercise 5.4 (prediction): the number of parameters of
    ``MultiHeadAttention(d_in=256, d_out=512, context_length=128, dropout=0.1, num_heads=8)``.
    """
    with torch.device("meta"):  # shapes only: no memory, and the global seed is not touched
        module = MultiHeadAttention(**MHA_CONFIG)
    expected = sum(p.numel() for p in module.parameters())
    d_in, d, t, h = (MHA_CONFIG[k] for k in ("d_in", "d_out", "context_length", "num_heads"))
    hints = {
        3 * d_in * d: "do not forget out_proj, an nn.Linear(d_out, d_out) after the heads",
        3 * d_in * d + d * d: "out_proj has a bias (d_out numbers); only W_query, W_key, W_value "
        "follow qkv_bias=False",
        expected + 3 * d: "qkv_bias=False: W_query, W_key and W_value have no bias",
        expected + t * t: "the causal mask is a buffer, not a parameter: it is not trained",
        h * expected: f"the heads split d_out into {h} slices of {d // h}; they share the projections "
        "and add no parameters",
        4 * d * d + d: f"W_query, W_key and W_value map d_in={d_in} inputs to d_out={d} outputs: "
        f"{d_in} x {d} weights each",
        3 * d_in * (d // h) + d * d + d: f"each of W_query, W_key, W_value maps to all {d} features "
        f"({h} heads x {d // h}), not to one head's {d // h}",
    }
    generic = "count each nn.Linear(n_in, n_out): n_in * n_out weights, plus n_out biases if it has a bias"
    is_whole = isinstance(answer, (int, float)) and float(answer).is_integer()
    key = int(answer) if is_whole else None
    return check_answer(
        "Exercise 5.4 — parameters of MultiHeadAttention", answer, expected, hints.get(key, generic)
    )
