"""What only notebook 05's checks do (the rest: test_harness.py, answers/multi_head_attention.py):
the exercises' answers rebuild attnlib's own modules."""

from __future__ import annotations

import torch

import attnlib
from attnlib.check import multi_head_attention
from tests.check.answers.multi_head_attention import (
    DH,
    HEADS,
    MHA_PARAMETERS,
    WRAPPER_PARAMETERS,
    WRONG,
    D,
    MyMultiHeadAttention,
    right_fuse,
    right_fuse_heads,
    right_head_rows,
    right_merge,
    right_score_matrices,
    right_split,
)


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


def test_fuse_heads_inverts_head_qkv_rows_and_builds_attention():
    # Exercise 5.2 undoes 5.1: the heads' blocks merge back into attnlib.Attention's own weight.
    torch.manual_seed(0)
    fused = attnlib.Attention(6, num_heads=3)
    blocks = [right_head_rows(fused.qkv.weight, 3, h) for h in range(3)]
    torch.testing.assert_close(right_fuse_heads(blocks), fused.qkv.weight)


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


def test_the_mha_parameters_answers_are_the_modules_counts():
    # Exercise 5.4's numbers are what the two modules hold, built as its text writes them.
    mha = attnlib.MultiHeadAttention(
        d_in=96, d_out=D, context_length=64, dropout=0.1, num_heads=HEADS, qkv_bias=True
    )
    wrapper = attnlib.MultiHeadAttentionWrapper(
        d_in=96, d_out=DH, context_length=64, dropout=0.1, num_heads=HEADS, qkv_bias=True
    )
    assert attnlib.count_parameters(mha) == MHA_PARAMETERS
    assert attnlib.count_parameters(wrapper) == WRAPPER_PARAMETERS


def test_every_hint_of_the_mha_parameters_check_has_a_wrong_answer():
    # The hint tables hold each slip's count; each hint is asserted by a wrong answer of the table.
    asserted = [hint for _, hint in WRONG["mha_parameters"]]
    hints = [*multi_head_attention._mha_hints().values(), *multi_head_attention._wrapper_hints().values()]
    for hint in [*hints, multi_head_attention._GENERIC_COUNT]:
        assert any(text in hint for text in asserted), hint
    counts = [*multi_head_attention._mha_hints(), MHA_PARAMETERS]
    assert len(set(counts)) == len(counts)  # no slip's count is the right one, nor another slip's
    counts = [*multi_head_attention._wrapper_hints(), WRAPPER_PARAMETERS]
    assert len(set(counts)) == len(counts)


def test_the_right_module_is_attnlibs_function():
    torch.manual_seed(0)
    mine, theirs = (
        MyMultiHeadAttention(3, 6, 5, 0.0, 3, qkv_bias=True),
        attnlib.MultiHeadAttention(3, 6, 5, 0.0, 3, True),
    )
    mine.load_state_dict(theirs.state_dict(), strict=False)  # the buffers differ; the parameters match
    x = torch.randn(2, 4, 3)
    torch.testing.assert_close(mine(x), theirs(x))
