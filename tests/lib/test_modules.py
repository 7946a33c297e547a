"""attnlib's modules: the tensors of Raschka (2024, ch. 3), agreement with torch, causality, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnlib import (
    Attention,
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention,
    SelfAttentionV1,
    causal_mask,
    length_mask,
    to_masked_out,
)

# Tensors printed in Raschka (2024, ch. 3); same seed, same values.
QUERY_1 = torch.tensor([0.4306, 1.4551])
SELF_ATTENTION_V2 = torch.tensor(
    [
        [-0.5337, -0.1051],
        [-0.5323, -0.1080],
        [-0.5323, -0.1079],
        [-0.5297, -0.1076],
        [-0.5311, -0.1066],
        [-0.5299, -0.1081],
    ]
)
CAUSAL_WEIGHTS = torch.tensor(
    [
        [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.4833, 0.5167, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.3190, 0.3408, 0.3402, 0.0000, 0.0000, 0.0000],
        [0.2445, 0.2545, 0.2542, 0.2468, 0.0000, 0.0000],
        [0.1994, 0.2060, 0.2058, 0.1935, 0.1953, 0.0000],
        [0.1624, 0.1709, 0.1706, 0.1654, 0.1625, 0.1682],
    ]
)
DROPPED = torch.tensor(  # In[16]: seed 123, nn.Dropout(0.5) on CAUSAL_WEIGHTS
    [
        [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.6380, 0.6816, 0.6804, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.5090, 0.5085, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.4120, 0.0000, 0.3869, 0.0000, 0.0000],
        [0.0000, 0.3418, 0.3413, 0.3308, 0.3249, 0.0000],
    ]
)


def close4(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Equal to the 4 decimals the book prints."""
    torch.testing.assert_close(actual.detach(), expected, atol=5e-5, rtol=0)


def test_reference_self_attention_v1_and_v2(inputs):
    torch.manual_seed(123)
    v1 = SelfAttentionV1(3, 2)
    close4(inputs[1] @ v1.W_query, QUERY_1)
    torch.manual_seed(123)
    v2 = SelfAttention(3, 2)
    close4(v2(inputs), SELF_ATTENTION_V2)


def test_reference_causal_weights_and_dropout(inputs):
    torch.manual_seed(123)
    sa = SelfAttention(3, 2)
    sa(inputs, mask=causal_mask(6))
    close4(sa.last_attn_weights, CAUSAL_WEIGHTS)
    torch.manual_seed(123)
    close4(nn.Dropout(0.5)(sa.last_attn_weights), DROPPED)


def test_causal_attention_dropout_matches_reference_rng(inputs, batch):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.5)
    torch.manual_seed(123)
    ca(batch)
    close4(ca.last_attn_weights[0], DROPPED)


def test_causal_attention_is_a_masked_self_attention(batch):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    torch.manual_seed(123)
    sa = SelfAttention(3, 2)
    torch.testing.assert_close(ca(batch), sa(batch, mask=causal_mask(6)))
    assert ca.last_attn_weights.shape == (2, 6, 6) and not ca.last_attn_weights.requires_grad


def copy_heads(wrapper: MultiHeadAttentionWrapper, mha: MultiHeadAttention) -> None:
    """Stack each head's projections into the split-heads module; out_proj becomes identity."""
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(mha, name).weight.copy_(torch.cat([getattr(h, name).weight for h in wrapper.heads]))
        mha.out_proj.weight.copy_(torch.eye(mha.d_out))
        mha.out_proj.bias.zero_()


def test_wrapper_split_heads_and_fused_qkv_compute_the_same_function():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)
    wrapper = MultiHeadAttentionWrapper(8, 4, 5, 0.0, num_heads=3)
    mha = MultiHeadAttention(8, 12, 5, 0.0, num_heads=3)
    copy_heads(wrapper, mha)
    torch.testing.assert_close(mha(x), wrapper(x))
    torch.testing.assert_close(mha.last_attn_weights, wrapper.last_attn_weights)

    square = MultiHeadAttention(12, 12, 5, 0.0, num_heads=3, causal=False)
    fused = Attention(12, num_heads=3)
    with torch.no_grad():
        fused.qkv.weight.copy_(torch.cat([square.W_query.weight, square.W_key.weight, square.W_value.weight]))
        fused.proj.load_state_dict(square.out_proj.state_dict())
    y = torch.randn(3, 5, 12)
    torch.testing.assert_close(fused(y), square(y))
    torch.testing.assert_close(fused(y, causal_mask(5)), square(y, mask=causal_mask(5)))


def to_torch(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(mha.d_out, mha.num_heads, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        biases = [getattr(mha, n).bias for n in ("W_query", "W_key", "W_value")]
        ref.in_proj_bias.copy_(torch.zeros(3 * mha.d_out) if biases[0] is None else torch.cat(biases))
        ref.out_proj.load_state_dict(mha.out_proj.state_dict())
    return ref.eval()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    heads=st.sampled_from([1, 2, 4]),
    head_dim=st.integers(1, 4),
    tq=st.integers(1, 6),
    tk=st.integers(1, 6),
    bias=st.booleans(),
    causal=st.booleans(),
)
def test_multihead_matches_nn_multiheadattention(seed, heads, head_dim, tq, tk, bias, causal):
    torch.manual_seed(seed)
    d = heads * head_dim
    tk = tq if causal else tk
    mha = MultiHeadAttention(d, d, 8, 0.0, heads, qkv_bias=bias, causal=causal).eval()
    x, memory = torch.randn(2, tq, d), torch.randn(2, tk, d)
    lengths = torch.randint(1, tk + 1, (2,))
    pad = length_mask(lengths, max_len=tk)  # (2, 1, 1, Tk)
    ours = mha(x, memory if not causal else None, mask=pad)
    ref_mask = to_masked_out(causal_mask(tq)) if causal else None
    ref, ref_weights = to_torch(mha)(
        x,
        x if causal else memory,
        x if causal else memory,
        attn_mask=ref_mask,
        key_padding_mask=to_masked_out(pad[:, 0, 0]),
        average_attn_weights=False,
    )
    # lengths >= 1 and the diagonal is always visible, so no query row is fully masked here
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mha.last_attn_weights, ref_weights, atol=1e-6, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), position=st.integers(0, 5))
def test_changing_a_later_token_never_changes_an_earlier_output(seed, position):
    torch.manual_seed(seed)
    modules = [
        CausalAttention(4, 4, 6, 0.0),
        MultiHeadAttentionWrapper(4, 2, 6, 0.0, num_heads=2),
        MultiHeadAttention(4, 4, 6, 0.0, num_heads=2),
    ]
    x = torch.randn(1, 6, 4)
    changed = x.clone()
    changed[:, position] += torch.randn(4)
    for module in modules:
        before, after = module(x), module(changed)
        torch.testing.assert_close(before[:, :position], after[:, :position])
        assert not torch.allclose(before[:, position:], after[:, position:])


def test_non_causal_self_attention_is_permutation_equivariant():
    torch.manual_seed(1)
    module = Attention(8, num_heads=2).eval()
    x = torch.randn(2, 5, 8)
    perm = torch.randperm(5)
    torch.testing.assert_close(module(x)[:, perm], module(x[:, perm]))


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 4, 6, 0.5, num_heads=2)
    x = torch.randn(2, 6, 4)
    mha.eval()
    torch.testing.assert_close(mha(x), mha(x))
    torch.testing.assert_close(mha.last_attn_weights.sum(-1), torch.ones(2, 2, 6))
    mha.train()
    mha(x)
    assert (mha.last_attn_weights == 0).sum() > (causal_mask(6) == 0).sum() * 4


def test_sdpa_agreement_of_fused_module():
    torch.manual_seed(2)
    fused = Attention(8, num_heads=2, qkv_bias=True).eval()
    x = torch.randn(2, 5, 8)
    q, k, v = fused.qkv(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    expected = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, 8)
    torch.testing.assert_close(fused(x), fused.proj(expected))


@pytest.mark.parametrize(
    ("make", "x", "error", "message"),
    [
        (
            lambda: MultiHeadAttention(3, 5, 6, 0.0, num_heads=2),
            None,
            ValueError,
            "d_out=5 is not divisible by num_heads=2",
        ),
        (lambda: Attention(10, num_heads=3), None, ValueError, "dim=10 is not divisible"),
        (lambda: CausalAttention(3, 2, 6, 1.5), None, ValueError, r"dropout in \[0, 1\)"),
        (
            lambda: CausalAttention(3, 2, 4, 0.0),
            torch.ones(2, 6, 3),
            ValueError,
            "6 tokens, more than context_length=4",
        ),
        (lambda: CausalAttention(3, 2, 6, 0.0), torch.ones(6, 3), ValueError, r"\(B, T, Din\), got \(6, 3\)"),
        (lambda: SelfAttention(64, 2), torch.ones(2, 6, 3), ValueError, "Din=64, got"),
        (lambda: MultiHeadAttention(4, 4, 6, 0.0, num_heads=2), torch.ones(2, 6, 5), ValueError, "Din=4"),
        (lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=0), None, ValueError, "num_heads >= 1"),
    ],
)
def test_bad_input_is_named(make, x, error, message):
    with pytest.raises(error, match=message):
        module = make()
        module(x)


def test_bad_mask_is_named():
    mha = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    with pytest.raises(TypeError, match="boolean mask"):
        mha(torch.ones(2, 6, 4), mask=torch.ones(2, 1, 1, 6))
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.ones(2, 6, 4), mask=torch.ones(3, 1, 1, 6, dtype=torch.bool))
