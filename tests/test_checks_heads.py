"""The checks of notebook 05's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch

import attnlib
from attnlib import check


def right_split(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)


def right_merge(context):
    b, h, t, dh = context.shape
    return context.transpose(1, 2).reshape(b, t, h * dh)  # (B, H, T, Dh) -> (B, T, D)


def right_fuse(w_query, w_key, w_value):
    return torch.cat([w_query, w_key, w_value], dim=0)  # 3 x (D, Din) -> (3D, Din)


def test_right_answers_pass():
    for fn, answer in [
        (check.split_heads, right_split),
        (check.merge_heads, right_merge),
        (check.fuse_qkv, right_fuse),
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


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, h: x.view(x.shape[0], h, x.shape[1], -1), "viewing straight to (B, H, T, Dh)"),
        (lambda x, h: x.view(*x.shape[:2], h, -1), "you stopped after the view"),
        (lambda x, h: x.view(*x.shape[:2], -1, h).permute(0, 3, 1, 2), "contiguous block of Dh features"),
        (lambda x, h: x.view(*x.shape[:2], h, -1).transpose(2, 3), "wrong transpose"),
        (lambda x, h: x.view(*x.shape[:2], h, -1).transpose(1, 3), "wrong transpose"),
    ],
)
def test_split_heads_explains_typical_mistakes(wrong, hint):
    verdict = check.split_heads(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda c: c.reshape(c.shape[0], c.shape[2], -1), "reshaping (B, H, T, Dh) straight to (B, T, D)"),
        (lambda c: c.permute(0, 2, 3, 1).reshape(c.shape[0], c.shape[2], -1), "not to (B, T, Dh, H)"),
    ],
)
def test_merge_heads_explains_typical_mistakes(wrong, hint):
    verdict = check.merge_heads(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_merge_heads_with_view_after_transpose_is_an_error_in_words():
    # A classic: .view on the non-contiguous transpose raises; the check reports it, no traceback.
    verdict = check.merge_heads(lambda c: c.transpose(1, 2).view(c.shape[0], c.shape[2], -1))
    assert verdict.status == "error" and "RuntimeError" in verdict.message
    assert "Traceback" not in verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda q, k, v: torch.cat([q, k, v], dim=1), "concatenate along dim 0"),
        (lambda q, k, v: torch.stack([q, k, v]), "torch.stack adds a new axis"),
        (lambda q, k, v: torch.cat([q.T, k.T, v.T]), "do not transpose"),
        (lambda q, k, v: torch.cat([q.T, k.T, v.T], dim=1), "the transpose of qkv.weight"),
        (lambda q, k, v: torch.cat([k, q, v]), "the order matters"),
        (lambda q, k, v: torch.cat([v, k, q]), "the order matters"),
    ],
)
def test_fuse_qkv_explains_typical_mistakes(wrong, hint):
    verdict = check.fuse_qkv(wrong)
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


@pytest.mark.parametrize("fn", [check.split_heads, check.merge_heads, check.fuse_qkv])
def test_a_stub_is_not_yet(fn):
    def stub(*args):
        raise NotImplementedError

    verdict = fn(stub)
    assert not verdict and verdict.status == "todo" and "not yet" in verdict.message


@pytest.mark.parametrize("fn", [check.split_heads, check.merge_heads, check.fuse_qkv])
def test_an_exception_is_reported_in_words(fn):
    def broken(x, *args):
        return x.view(-1, 7, 11)  # a shape error in the student's code

    verdict = fn(broken)
    assert not verdict and verdict.status == "error"
    assert "your code raised RuntimeError" in verdict.message and "Traceback" not in verdict.message
    assert "x.view(-1, 7, 11)" in verdict.message


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.split_heads(right_split)
    check.fuse_qkv(right_fuse)
    check.mha_parameters(0)
    assert torch.equal(state, torch.random.get_rng_state())
