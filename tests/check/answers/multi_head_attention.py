"""Answers to the checks of notebook 05."""

from __future__ import annotations

import inspect

import torch
from torch import nn

import attnlib
from tests.check.answers import given
from tests.check.verdicts import stub
from tools.student import stub_source

# ----------------------------------------------------------------------------- right answers


def right_split(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)


def right_head_rows(qkv_weight, num_heads, head):
    d = qkv_weight.shape[0] // 3  # the model width; shape[1] is the input width
    dh = d // num_heads
    return torch.cat([qkv_weight[r * d + head * dh : r * d + (head + 1) * dh] for r in range(3)])


def right_merge(context):
    b, h, t, dh = context.shape
    return context.transpose(1, 2).reshape(b, t, h * dh)  # (B, H, T, Dh) -> (B, T, D)


def right_fuse(w_query, w_key, w_value):
    return torch.cat([w_query, w_key, w_value], dim=0)  # 3 x (D, Din) -> (3D, Din)


def right_fuse_heads(head_weights):
    blocks = [w.chunk(3) for w in head_weights]  # H x 3 x (Dh, Din): each head's q, k, v rows
    return torch.cat([blocks[h][role] for role in range(3) for h in range(len(blocks))])  # (3D, Din)


def right_score_matrices(qkv_weight, num_heads):
    w = qkv_weight.view(3, num_heads, -1, qkv_weight.shape[1])  # (3, H, Dh, Din)
    return w[0].transpose(1, 2) @ w[1] / w.shape[2] ** 0.5  # (H, Din, Dh) @ (H, Dh, Din) -> (H, Din, Din)


D_IN, D, HEADS, DH = 96, 128, 8, 16  # exercise 5.4: d_in != d_out, 8 heads of 16, qkv_bias=True
MHA_PARAMETERS = 3 * (D_IN * D + D) + D * D + D  # W_query, W_key, W_value with biases; out_proj with its bias
WRAPPER_PARAMETERS = HEADS * 3 * (D_IN * DH + DH)  # 8 CausalAttention heads, 3 biased projections each


class MyMultiHeadAttention(nn.Module):
    """A right answer to 5.5 written the way a student would, with knobs for the typical slips."""

    split, merge, scale, softmax_dim, hide, out = "transpose", "transpose", "head", -1, "future", True
    drop = "weights"  # where dropout acts: also "functional" (right), or a slip of _dropped's

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        # Raschka's buffer: 1 marks a hidden key (the opposite of attnlib's masks)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        h, dh = self.num_heads, self.head_dim

        def heads(y):
            if self.split == "view":
                return y.view(b, h, t, dh)
            return y.view(b, t, h, dh).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        scores = q @ k.transpose(2, 3)  # (B, H, T, Dh) @ (B, H, Dh, T) -> (B, H, T, T)
        if self.drop == "scores":  # 4.3's bug: before the softmax
            scores = self.dropout(scores)
        hidden = {
            "future": self.mask.bool()[:t, :t],
            "uncut": self.mask.bool(),  # the whole (context_length, context_length) buffer
            "diagonal": torch.triu(torch.ones(t, t), diagonal=0).bool(),
            "inverted": attnlib.causal_mask(t),
            "none": torch.zeros(t, t, dtype=torch.bool),
        }[self.hide]
        scores = scores.masked_fill(hidden, -torch.inf)
        scale = {"head": dh**0.5, "d_out": (h * dh) ** 0.5, "none": 1.0, "after": 1.0}[self.scale]
        weights = torch.softmax(scores / scale, dim=self.softmax_dim)
        if self.scale == "after":  # the weights scaled, not the scores
            weights = weights / dh**0.5
        context = self._dropped(weights) @ v  # (B, H, T, T) @ (B, H, T, Dh) -> (B, H, T, Dh)
        if self.merge == "transpose":
            context = context.transpose(1, 2)  # (B, T, H, Dh)
        context = context.reshape(b, t, h * dh)  # (B, T, D)
        if self.drop == "context":
            context = self.dropout(context)
        out = self.out_proj(context) if self.out else context
        return self.dropout(out) if self.drop == "output" else out

    def _dropped(self, weights):
        p = self.dropout.p if isinstance(self.dropout, nn.Dropout) else 0.0
        if self.drop == "weights":
            return self.dropout(weights)
        if self.drop == "functional":
            return nn.functional.dropout(weights, p, training=self.training)
        if not self.training or self.drop not in ("unscaled", "renormalised", "times_keep"):
            return weights
        kept = weights * (torch.rand_like(weights) >= p)  # a mask by hand, without 1/(1-p)
        if self.drop == "times_keep":  # multiplied by the keep probability instead of divided
            return kept * (1 - p)
        return kept if self.drop == "unscaled" else kept / kept.sum(dim=-1, keepdim=True)


class SdpaWithDropout(MyMultiHeadAttention):
    """Also right: PyTorch's fused attention, which drops the weights itself in train mode."""

    def forward(self, x):
        b, t, _ = x.shape
        h, dh = self.num_heads, self.head_dim
        q, k, v = (
            proj(x).view(b, t, h, dh).transpose(1, 2) for proj in (self.W_query, self.W_key, self.W_value)
        )
        p = self.dropout.p if self.training else 0.0
        context = nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.out_proj(context.transpose(1, 2).reshape(b, t, h * dh))  # (B, H, T, Dh) -> (B, T, D)


class HeadByHead(MyMultiHeadAttention):
    """Also right: one head at a time, each head's weights dropped on their own (other draws)."""

    def forward(self, x):
        b, t, _ = x.shape
        h, dh = self.num_heads, self.head_dim
        q, k, v = (proj(x).view(b, t, h, dh) for proj in (self.W_query, self.W_key, self.W_value))
        visible = attnlib.causal_mask(t)
        contexts = []
        for head in range(h):
            scores = q[:, :, head] @ k[:, :, head].transpose(1, 2) / dh**0.5  # (B, T, T)
            weights = self.dropout(torch.softmax(scores.masked_fill(~visible, -torch.inf), dim=-1))
            contexts.append(weights @ v[:, :, head])  # (B, T, T) @ (B, T, Dh) -> (B, T, Dh)
        return self.out_proj(torch.cat(contexts, dim=-1))  # (B, T, D)


RIGHT = {
    "head_qkv_rows": [right_head_rows],
    "fuse_heads": [right_fuse_heads],
    "head_score_matrices": [right_score_matrices],
    "mha_parameters": [
        given(MHA_PARAMETERS, WRAPPER_PARAMETERS),
        given(float(MHA_PARAMETERS), 3 * (D_IN * D + D)),  # the wrapper: the same q, k, v numbers
    ],
    "multihead_module": [
        MyMultiHeadAttention,
        type("FunctionalDropout", (MyMultiHeadAttention,), {"drop": "functional"}),
        SdpaWithDropout,
        HeadByHead,
    ],
}

# ----------------------------------------------------------------------------- typical mistakes


def _scored(w, h, first=0, second=1, scale=None, rows="role"):
    """A slip of exercise 5.3: which rows, in which order, with which scale."""
    r = w.view(3, h, -1, w.shape[1]) if rows == "role" else w.view(h, 3, -1, w.shape[1]).transpose(0, 1)
    scale = r.shape[2] ** -0.5 if scale is None else scale(w, h)
    return r[first].transpose(1, 2) @ r[second] * scale


def slip(**knobs):
    """A subclass of the right answer to 5.5 with some knobs turned."""
    return type("Slip", (MyMultiHeadAttention,), knobs)


WRONG = {
    "head_qkv_rows": [
        (
            lambda w, h, i: w.view(h, 3, -1, w.shape[1])[i].reshape(-1, w.shape[1]),
            "ALL queries, then ALL keys",
        ),
        (lambda w, h, i: w.view(3, -1, h, w.shape[1])[:, :, i].reshape(-1, w.shape[1]), "like cards"),
        (
            lambda w, h, i: torch.cat(
                [w[r * w.shape[1] + i * (w.shape[1] // h) :][: w.shape[1] // h] for r in range(3)]
            ),
            "shape[1] is the input width",
        ),
        (lambda w, h, i: w.view(3, h, -1, w.shape[1])[0, i], "its key and value rows"),
        (lambda w, h, i: w[:, i * (w.shape[1] // h) : (i + 1) * (w.shape[1] // h)], "not columns"),
        (lambda w, h, i: w.view(3, h, -1, w.shape[1])[:, i], "do not stack"),
    ],
    "fuse_heads": [
        (lambda ws: torch.cat(ws), "concatenating the heads' blocks keeps them head by head"),
        (
            lambda ws: (
                torch.stack(ws)
                .view(len(ws), 3, -1, ws[0].shape[1])
                .permute(1, 2, 0, 3)
                .reshape(-1, ws[0].shape[1])
            ),
            "like cards",
        ),
        (lambda ws: right_fuse_heads(ws).view(3, len(ws), -1, ws[0].shape[1]), "return one 2-D matrix"),
        (lambda ws: right_fuse_heads(ws).T, "do not transpose"),
    ],
    "head_score_matrices": [
        (
            lambda w, h: (lambda r: r[0] @ r[1].transpose(1, 2) / r.shape[2] ** 0.5)(
                w.view(3, h, -1, w.shape[1])
            ),
            "W_q,h W_k,h^T is (Dh, Dh)",
        ),
        (lambda w, h: _scored(w, h, scale=lambda w, h: 1.0), "divides every score by sqrt(Dh)"),
        (lambda w, h: _scored(w, h, scale=lambda w, h: (w.shape[0] // 3) ** -0.5), "not the model width D"),
        (lambda w, h: _scored(w, h, first=1, second=0), "Yours is its transpose"),
        (lambda w, h: _scored(w, h, rows="head"), "not head by head"),
        (lambda w, h: _scored(w, h, second=2), "the value rows (role 2)"),
    ],
    "mha_parameters": [  # (MultiHeadAttention's count, the wrapper's count)
        (given(MHA_PARAMETERS - 3 * D, WRAPPER_PARAMETERS), "each have a bias of d_out numbers"),
        (given(3 * (D_IN * D + D), WRAPPER_PARAMETERS), "do not forget out_proj"),
        (given(4 * (D_IN * D_IN + D_IN), WRAPPER_PARAMETERS), "not d_in="),  # d_in taken for every width
        (given(MHA_PARAMETERS - D, WRAPPER_PARAMETERS), "out_proj has its own bias"),
        (given(4 * (D * D + D), WRAPPER_PARAMETERS), "map d_in=96 inputs"),
        (given(3 * (D_IN * DH + DH) + D * D + D, WRAPPER_PARAMETERS), "not to one head's 16"),
        (given(HEADS * MHA_PARAMETERS, WRAPPER_PARAMETERS), "add no parameters"),
        (given(MHA_PARAMETERS + 64 * 64, WRAPPER_PARAMETERS), "a buffer, not a parameter"),
        (given(MHA_PARAMETERS, 3 * (D_IN * DH + DH)), "count one head, then multiply by the heads"),
        (given(MHA_PARAMETERS, 8 * 3 * (D_IN * 2 + 2)), "ONE head's width, not split 8 ways"),  # 8 heads of 2
        (given(MHA_PARAMETERS, MHA_PARAMETERS), "the wrapper has no out_proj"),
        (given(MHA_PARAMETERS, HEADS * 3 * D_IN * DH), "every head's W_query, W_key and W_value has a bias"),
        (given(MHA_PARAMETERS, HEADS * 3 * (D_IN * D + D)), "d_out is the width of ONE head"),
        (given(12345, WRAPPER_PARAMETERS), "count each nn.Linear"),
        (given(MHA_PARAMETERS, 12345), "count each nn.Linear"),
    ],
    "multihead_module": [
        (slip(split="view", merge="reshape"), "viewing the projections straight to (B, H, T, Dh)"),
        (slip(split="view"), "viewing the projections straight to (B, H, T, Dh)"),
        (slip(merge="reshape"), "transpose(1, 2) back to (B, T, H, Dh) first"),
        (slip(scale="none"), "you did not scale them"),
        (slip(scale="d_out"), "not by sqrt(d_out)"),
        (slip(scale="after"), "scale the scores before softmax, not the weights after it"),
        (slip(hide="none"), "the causal mask is missing"),
        (slip(hide="diagonal"), "hides the diagonal too"),
        (slip(hide="inverted"), "the wrong way round"),
        (slip(softmax_dim=-2), "softmax over the keys, the last axis"),
        (slip(softmax_dim=1), "dim=1 of (B, H, T, T) is the heads"),
        (slip(out=False), "the output projection is missing"),
        # where dropout acts, in train mode
        (slip(drop="output"), "not on the context or on the module's output"),
        (slip(drop="context"), "not on the context or on the module's output"),
        (slip(drop="scores"), "the softmax renormalises"),
        (slip(drop="unscaled"), "without the rescale"),
        (slip(drop="renormalised"), "do not renormalise them"),
        (slip(drop="times_keep"), "divide the kept weights by 1 - p"),
    ],
}

# ----------------------------------------------------------------------------- refused in words


class NoOutProj(MyMultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.out_proj


class IgnoresBias(MyMultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads)


class OneHeadWide(MyMultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.W_query = nn.Linear(d_in, d_out // num_heads, bias=qkv_bias)


class OwnNames(MyMultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.proj = self.out_proj
        del self.out_proj
        self.query = self.W_query
        del self.W_query


class DropoutInEval(MyMultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.p = dropout
        self.dropout = nn.Identity()

    def forward(self, x):
        return nn.functional.dropout(super().forward(x), self.p)  # training=True by default


class NoDropout(MyMultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.dropout = nn.Identity()


class NotAModule:
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        pass


class RenamedArgument(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, n_heads, qkv_bias=False):
        super().__init__()


class NoSuperInit(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        self.W_query = nn.Linear(d_in, d_out)

    def forward(self, x):
        return x


class NoForward(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()


_PARAMETERS = ("differ from attnlib.MultiHeadAttention's", "expected: W_query.weight")
TOLD = {
    "multihead_module": [
        # missing and misshapen parameters are named
        (NoOutProj, "fail", *_PARAMETERS, "add the output projection"),
        (IgnoresBias, "fail", *_PARAMETERS, "bias=qkv_bias"),
        (OneHeadWide, "fail", *_PARAMETERS, "to all d_out features"),
        (OwnNames, "fail", *_PARAMETERS, "it needs these names"),
        # mask and dropout slips are diagnosed
        (slip(hide="uncut"), "error", "T shorter than context_length"),
        (DropoutInEval, "fail", "dropout is still active", "use nn.Dropout modules"),
        (NoDropout, "fail", "all 7 cases pass", "dropout is missing"),
        # bad input is explained in words
        (MyMultiHeadAttention(3, 4, 6, 0.0, 2), "fail", "pass the class itself"),
        (right_merge, "fail", "expected a class"),
        (42, "fail", "expected a class"),
        (NotAModule, "fail", "is not an nn.Module"),
        (nn.Module, "fail", "needs its own __init__"),
        (
            RenamedArgument,
            "fail",
            "your constructor is RenamedArgument(d_in, d_out, context_length, dropout, n_heads",
        ),
        (NoForward, "fail", "needs a forward(self, x) method"),
        (NoSuperInit, "error", "call `super().__init__()` first"),
    ],
}


# ----------------------------------------------------------------------------- out of reach
class DerivedAttention(attnlib.MultiHeadAttention):
    """attnlib's module under another name."""


class DelegatingAttention(MyMultiHeadAttention):
    """The right parameters, and attnlib's forward run on them."""

    def forward(self, x):
        return attnlib.MultiHeadAttention.forward(self, x)


class WrappingAttention(MyMultiHeadAttention):
    """The right parameters, and attnlib's module built in forward to do the work."""

    def forward(self, x):
        inner = attnlib.MultiHeadAttention(
            x.shape[-1], self.out_proj.out_features, x.shape[1], 0.0, self.num_heads
        )
        inner.load_state_dict(self.state_dict(), strict=False)
        return inner(x)


OUT_OF_REACH = {
    "multihead_module": [
        (attnlib.MultiHeadAttention, "MultiHeadAttention is attnlib's own `MultiHeadAttention`"),
        (DerivedAttention, "DerivedAttention derives from attnlib's own `MultiHeadAttention`"),
        (DelegatingAttention, "calls attnlib's own `MultiHeadAttention`"),
        (WrappingAttention, "calls attnlib's own `MultiHeadAttention`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes


def broken(x, *args):
    return torch.stack(list(x)).view(-1, 7, 11)  # a shape error in the student's code


def _stubbed(cls):
    """``cls`` as the student edition hands it out: every body replaced by its stub."""
    namespace: dict = {"nn": nn, "torch": torch}
    exec(stub_source(inspect.getsource(cls)), namespace)
    return namespace[cls.__name__]


class ForwardStub(MyMultiHeadAttention):
    def forward(self, x):
        raise NotImplementedError


class Crashes(MyMultiHeadAttention):
    def forward(self, x):
        return self.W_query(x).view(-1, 7, 11)


NOT_YET = {
    "head_qkv_rows": [stub],
    "fuse_heads": [stub],
    "head_score_matrices": [stub],
    "mha_parameters": [given(..., WRAPPER_PARAMETERS), given(MHA_PARAMETERS, ...)],
    "multihead_module": [_stubbed(MyMultiHeadAttention), ForwardStub],
}
_RAISED = (broken, "your code raised RuntimeError", "torch.stack(list(x)).view(-1, 7, 11)")
CRASHES = {
    "head_qkv_rows": [_RAISED],
    "fuse_heads": [_RAISED],
    "head_score_matrices": [_RAISED],
    "multihead_module": [(Crashes, "your code raised RuntimeError", "self.W_query(x).view(-1, 7, 11)")],
}
