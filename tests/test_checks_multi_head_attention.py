"""The checks of notebook 05's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import attnlib
from attnlib import check
from tools.student import stub_source


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


def test_right_answers_pass():
    for fn, answer in [
        (check.head_qkv_rows, right_head_rows),
        (check.fuse_heads, right_fuse_heads),
        (check.head_score_matrices, right_score_matrices),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message


def test_the_right_answers_are_what_attnlib_computes():
    # The exercises' answers rebuild attnlib's MultiHeadAttention and Attention exactly.
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6)
    mha = attnlib.MultiHeadAttention(6, 6, 5, 0.0, num_heads=3)
    q, k, v = (right_split(proj(x), 3) for proj in (mha.W_query, mha.W_key, mha.W_value))
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(mha.out_proj(right_merge(context)), mha(x))

    fused = attnlib.Attention(6, num_heads=3)
    with torch.no_grad():
        fused.qkv.weight.copy_(right_fuse(mha.W_query.weight, mha.W_key.weight, mha.W_value.weight))
        fused.proj.load_state_dict(mha.out_proj.state_dict())
    torch.testing.assert_close(fused(x, mask=attnlib.causal_mask(5)), mha(x))


def test_head_qkv_rows_is_what_the_fused_module_uses():
    # Head h of attnlib.Attention attends with exactly the rows the exercise extracts.
    torch.manual_seed(0)
    fused = attnlib.Attention(6, num_heads=3)
    x = torch.randn(2, 4, 6)
    fused(x)
    for head in range(3):
        w_q, w_k, _ = right_head_rows(fused.qkv.weight, 3, head).split(2)  # 3 x (Dh, D)
        scores = (x @ w_q.T) @ (x @ w_k.T).transpose(1, 2) / 2**0.5  # (B, T, T)
        torch.testing.assert_close(torch.softmax(scores, dim=-1), fused.last_attn_weights[:, head])


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
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
)
def test_head_qkv_rows_explains_typical_mistakes(wrong, hint):
    verdict = check.head_qkv_rows(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_fuse_heads_inverts_head_qkv_rows_and_builds_attention():
    # Exercise 5.2 undoes 5.1: the heads' blocks merge back into attnlib.Attention's own weight.
    torch.manual_seed(0)
    fused = attnlib.Attention(6, num_heads=3)
    blocks = [right_head_rows(fused.qkv.weight, 3, h) for h in range(3)]
    torch.testing.assert_close(right_fuse_heads(blocks), fused.qkv.weight)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
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
)
def test_fuse_heads_explains_typical_mistakes(wrong, hint):
    verdict = check.fuse_heads(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_score_matrices_give_attentions_weights():
    # x A_h y^T, softmaxed over the keys, is head h's weights in attnlib.Attention.
    torch.manual_seed(0)
    fused = attnlib.Attention(6, num_heads=3)
    x = torch.randn(2, 4, 6)
    fused(x)
    scores = (
        x[:, None] @ right_score_matrices(fused.qkv.weight, 3) @ x[:, None].transpose(-2, -1)
    )  # (B, H, T, T)
    torch.testing.assert_close(torch.softmax(scores, dim=-1), fused.last_attn_weights)


def _scored(w, h, first=0, second=1, scale=None, rows="role"):
    """A slip of exercise 5.3: which rows, in which order, with which scale."""
    r = w.view(3, h, -1, w.shape[1]) if rows == "role" else w.view(h, 3, -1, w.shape[1]).transpose(0, 1)
    scale = r.shape[2] ** -0.5 if scale is None else scale(w, h)
    return r[first].transpose(1, 2) @ r[second] * scale


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
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
)
def test_score_matrices_explain_typical_mistakes(wrong, hint):
    verdict = check.head_score_matrices(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_mha_parameters_prediction():
    d_in, d = 256, 512
    expected = 3 * d_in * d + d * d + d  # W_query, W_key, W_value without bias; out_proj with bias
    assert expected == sum(p.numel() for p in attnlib.MultiHeadAttention(d_in, d, 128, 0.1, 8).parameters())
    assert check.mha_parameters(expected).status == "pass"
    assert check.mha_parameters(float(expected)).status == "pass"
    assert check.mha_parameters(...).status == "todo"
    for wrong, hint in [
        (3 * d_in * d, "do not forget out_proj"),
        (3 * d_in * d + d * d, "out_proj has a bias"),
        (expected + 3 * d, "qkv_bias=False"),
        (expected + 128 * 128, "a buffer, not a parameter"),
        (8 * expected, "add no parameters"),
        (4 * d * d + d, "map d_in=256 inputs"),
        (3 * d_in * 64 + d * d + d, "not to one head's 64"),
        (12345, "count each nn.Linear"),
    ]:
        verdict = check.mha_parameters(wrong)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, (
            wrong,
            verdict.message,
        )


@pytest.mark.parametrize("fn", [check.head_qkv_rows, check.fuse_heads, check.head_score_matrices])
def test_a_stub_is_not_yet(fn):
    def stub(*args):
        raise NotImplementedError

    verdict = fn(stub)
    assert not verdict and verdict.status == "todo" and verdict.message.startswith("Not yet: ")


@pytest.mark.parametrize("fn", [check.head_qkv_rows, check.fuse_heads, check.head_score_matrices])
def test_an_exception_is_reported_in_words(fn):
    def broken(x, *args):
        return torch.stack(list(x)).view(-1, 7, 11)  # a shape error in the student's code

    verdict = fn(broken)
    assert not verdict and verdict.status == "error"
    assert "your code raised RuntimeError" in verdict.message and "Traceback" not in verdict.message
    assert "torch.stack(list(x)).view(-1, 7, 11)" in verdict.message


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.head_qkv_rows(right_head_rows)
    check.fuse_heads(right_fuse_heads)
    check.head_score_matrices(right_score_matrices)
    check.mha_parameters(0)
    check.multihead_module(MyMultiHeadAttention)
    check.multihead_module(slip(softmax_dim=1))
    assert torch.equal(state, torch.random.get_rng_state())


# ---------------------------------------------------------------------------------------------
# Exercise 5.5: a whole module
# ---------------------------------------------------------------------------------------------


class MyMultiHeadAttention(nn.Module):
    """A right answer written the way a student would, with knobs for the typical slips."""

    split, merge, scale, softmax_dim, hide, out = "transpose", "transpose", "head", -1, "future", True

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
        hidden = {
            "future": self.mask.bool()[:t, :t],
            "uncut": self.mask.bool(),  # the whole (context_length, context_length) buffer
            "diagonal": torch.triu(torch.ones(t, t), diagonal=0).bool(),
            "inverted": attnlib.causal_mask(t),
            "none": torch.zeros(t, t, dtype=torch.bool),
        }[self.hide]
        scores = scores.masked_fill(hidden, -torch.inf)
        scale = {"head": dh**0.5, "d_out": (h * dh) ** 0.5, "none": 1.0}[self.scale]
        weights = torch.softmax(scores / scale, dim=self.softmax_dim)
        context = self.dropout(weights) @ v  # (B, H, T, T) @ (B, H, T, Dh) -> (B, H, T, Dh)
        if self.merge == "transpose":
            context = context.transpose(1, 2)  # (B, T, H, Dh)
        context = context.reshape(b, t, h * dh)  # (B, T, D)
        return self.out_proj(context) if self.out else context


def slip(**knobs):
    """A subclass of the right answer with some knobs turned."""
    return type("Slip", (MyMultiHeadAttention,), knobs)


def test_multihead_module_accepts_a_right_answer():
    verdict = check.multihead_module(MyMultiHeadAttention)
    assert verdict and verdict.status == "pass", verdict.message


def test_multihead_module_accepts_attnlib_itself():
    verdict = check.multihead_module(attnlib.MultiHeadAttention)
    assert verdict and verdict.status == "pass", verdict.message


def test_the_right_module_is_attnlibs_function():
    torch.manual_seed(0)
    mine, theirs = (
        MyMultiHeadAttention(3, 6, 5, 0.0, 3, qkv_bias=True),
        attnlib.MultiHeadAttention(3, 6, 5, 0.0, 3, True),
    )
    mine.load_state_dict(theirs.state_dict(), strict=False)  # the buffers differ; the parameters match
    x = torch.randn(2, 4, 3)
    torch.testing.assert_close(mine(x), theirs(x))


@pytest.mark.parametrize(
    ("knobs", "hint"),
    [
        ({"split": "view", "merge": "reshape"}, "viewing the projections straight to (B, H, T, Dh)"),
        ({"split": "view"}, "viewing the projections straight to (B, H, T, Dh)"),
        ({"merge": "reshape"}, "transpose(1, 2) back to (B, T, H, Dh) first"),
        ({"scale": "none"}, "you did not scale them"),
        ({"scale": "d_out"}, "not by sqrt(d_out)"),
        ({"hide": "none"}, "the causal mask is missing"),
        ({"hide": "diagonal"}, "hides the diagonal too"),
        ({"hide": "inverted"}, "the wrong way round"),
        ({"softmax_dim": -2}, "softmax over the keys, the last axis"),
        ({"softmax_dim": 1}, "dim=1 of (B, H, T, T) is the heads"),
        ({"out": False}, "the output projection is missing"),
    ],
)
def test_multihead_module_explains_typical_mistakes(knobs, hint):
    verdict = check.multihead_module(slip(**knobs))
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_multihead_module_names_missing_and_misshapen_parameters():
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

    for cls, hint in [
        (NoOutProj, "add the output projection"),
        (IgnoresBias, "bias=qkv_bias"),
        (OneHeadWide, "to all d_out features"),
        (OwnNames, "it needs these names"),
    ]:
        verdict = check.multihead_module(cls)
        assert not verdict and "differ from attnlib.MultiHeadAttention's" in verdict.message
        assert "expected: W_query.weight" in verdict.message and hint in verdict.message, verdict.message


def test_multihead_module_diagnoses_mask_and_dropout_slips():
    verdict = check.multihead_module(slip(hide="uncut"))
    assert verdict.status == "error" and "T shorter than context_length" in verdict.message, verdict.message
    assert "Traceback" not in verdict.message

    class DropoutInEval(MyMultiHeadAttention):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
            self.p = dropout
            self.dropout = nn.Identity()

        def forward(self, x):
            return nn.functional.dropout(super().forward(x), self.p)  # training=True by default

    verdict = check.multihead_module(DropoutInEval)
    assert not verdict and "dropout is still active" in verdict.message, verdict.message

    class NoDropout(MyMultiHeadAttention):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.dropout = nn.Identity()

    verdict = check.multihead_module(NoDropout)
    assert not verdict and "all 7 cases pass" in verdict.message and "dropout is missing" in verdict.message


def test_multihead_module_explains_bad_input_in_words():
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

    for given, expected in [
        (MyMultiHeadAttention(3, 4, 6, 0.0, 2), "pass the class itself"),
        (right_merge, "expected a class"),
        (42, "expected a class"),
        (NotAModule, "is not an nn.Module"),
        (nn.Module, "needs its own __init__"),
        (
            RenamedArgument,
            "your constructor is RenamedArgument(d_in, d_out, context_length, dropout, n_heads",
        ),
        (NoForward, "needs a forward(self, x) method"),
        (NoSuperInit, "call `super().__init__()` first"),
    ]:
        verdict = check.multihead_module(given)
        assert not verdict and expected in verdict.message, verdict.message
        assert "Traceback" not in verdict.message


def test_multihead_module_stub_is_not_yet_and_a_crash_is_reported_in_words():
    namespace: dict = {"nn": nn, "torch": torch}
    exec(stub_source(inspect.getsource(MyMultiHeadAttention)), namespace)
    verdict = check.multihead_module(namespace["MyMultiHeadAttention"])
    assert verdict.status == "todo" and verdict.message.startswith("Not yet: ")

    class ForwardStub(MyMultiHeadAttention):
        def forward(self, x):
            raise NotImplementedError

    assert check.multihead_module(ForwardStub).status == "todo"

    class Crashes(MyMultiHeadAttention):
        def forward(self, x):
            return self.W_query(x).view(-1, 7, 11)

    verdict = check.multihead_module(Crashes)
    assert verdict.status == "error" and "your code raised RuntimeError" in verdict.message
    assert "self.W_query(x).view(-1, 7, 11)" in verdict.message and "Traceback" not in verdict.message
