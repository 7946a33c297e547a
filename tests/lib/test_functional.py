"""scaled_dot_product_attention against torch's own, on random shapes and masks."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import fused_attention, masked_softmax, scaled_dot_product_attention


@st.composite
def attention_inputs(draw):
    """Random 3-D or 4-D q, k, v with Tq != Tk and Dv != Dk allowed, plus a random mask."""
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    lead = draw(st.sampled_from([(2,), (3,), (2, 3), (1, 4)]))
    tq, tk = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    dk, dv = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    q = torch.randn(*lead, tq, dk, generator=g)
    k = torch.randn(*lead, tk, dk, generator=g)
    v = torch.randn(*lead, tk, dv, generator=g)
    mask_shape = draw(
        st.sampled_from(["none", "full", "keys", "square"] if tq == tk else ["none", "full", "keys"])
    )
    if mask_shape == "none":
        mask = None
    elif mask_shape == "full":
        mask = torch.rand(*lead, tq, tk, generator=g) > 0.4
    elif mask_shape == "keys":  # a padding-style mask that broadcasts over queries
        mask = torch.rand(*lead[:1], *([1] * len(lead)), tk, generator=g) > 0.3
    else:
        mask = torch.ones(tq, tk, dtype=torch.bool).tril()
    return q, k, v, mask


@settings(max_examples=60, deadline=None)
@given(attention_inputs())
def test_matches_torch_sdpa(args):
    q, k, v, mask = args
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(context, expected, atol=1e-5, rtol=1e-5)
    assert weights.shape == (*q.shape[:-1], k.shape[-2])


@settings(max_examples=60, deadline=None)
@given(attention_inputs())
def test_rows_sum_to_one_or_zero_when_fully_masked(args):
    q, k, v, mask = args
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    sums = weights.sum(-1)
    if mask is None:
        torch.testing.assert_close(sums, torch.ones_like(sums))
        return
    visible = mask.expand(weights.shape).any(-1)
    torch.testing.assert_close(sums, visible.float())
    assert not weights.isnan().any() and not context.isnan().any()
    assert (weights[~mask.expand(weights.shape)] == 0).all(), "a masked key got weight"
    assert (context[~visible] == 0).all(), "a fully masked query must give a zero context"


def test_custom_scale_and_causal_flag_match_torch():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    context, _ = scaled_dot_product_attention(q, k, v, scale=0.3, is_causal=True)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, scale=0.3, is_causal=True))


def test_default_scale_is_inverse_sqrt_dk():
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(4, 16, generator=g), torch.randn(6, 16, generator=g), torch.randn(6, 2, generator=g)
    _, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(weights, torch.softmax(q @ k.T / math.sqrt(16), dim=-1))


def test_fully_masked_rows_have_finite_zero_gradients():
    g = torch.Generator().manual_seed(2)
    q = torch.randn(1, 3, 4, generator=g, requires_grad=True)
    k = torch.randn(1, 5, 4, generator=g, requires_grad=True)
    v = torch.randn(1, 5, 2, generator=g, requires_grad=True)
    mask = torch.ones(1, 3, 5, dtype=torch.bool)
    mask[0, 1] = False  # query 1 sees nothing
    context, _ = scaled_dot_product_attention(q, k, v, mask)
    context.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[0, 1] == 0).all()


def test_dropout_zeroes_and_rescales_weights():
    g = torch.Generator().manual_seed(3)
    q, k, v = (
        torch.randn(2, 8, 4, generator=g),
        torch.randn(2, 8, 4, generator=g),
        torch.eye(8).expand(2, 8, 8),
    )
    torch.manual_seed(5)
    _, dropped = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    _, plain = scaled_dot_product_attention(q, k, v)
    kept = dropped != 0
    assert 0 < kept.float().mean() < 1
    torch.testing.assert_close(dropped[kept], plain[kept] * 2)


def test_masked_softmax_matches_softmax_without_mask():
    scores = torch.randn(3, 4, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(masked_softmax(scores), torch.softmax(scores, -1))


@pytest.mark.parametrize(
    ("q", "k", "v", "kwargs", "error", "message"),
    [
        (torch.ones(4), torch.ones(4), torch.ones(4), {}, ValueError, "got (4,) (1-D)"),
        (
            torch.ones(1, 1, 1, 2, 3),
            torch.ones(1, 1, 1, 2, 3),
            torch.ones(1, 1, 1, 2, 3),
            {},
            ValueError,
            "5-D",
        ),
        (torch.ones(2, 5, 8), torch.ones(2, 7, 4), torch.ones(2, 7, 3), {}, ValueError, "feature size Dk"),
        (torch.ones(2, 5, 8), torch.ones(2, 7, 8), torch.ones(2, 6, 3), {}, ValueError, "same length Tk"),
        (torch.ones(2, 5, 8), torch.ones(2, 1, 7, 8), torch.ones(2, 7, 3), {}, ValueError, "same rank"),
        (torch.ones(2, 5, 8), torch.ones(3, 7, 8), torch.ones(3, 7, 3), {}, ValueError, "leading"),
        (
            torch.ones(2, 5, 8),
            torch.ones(2, 7, 8),
            torch.ones(2, 7, 3),
            {"dropout_p": 1.0},
            ValueError,
            "[0, 1)",
        ),
        (
            torch.ones(2, 5, 8),
            torch.ones(2, 7, 8),
            torch.ones(2, 7, 3),
            {"is_causal": True},
            ValueError,
            "Tq == Tk",
        ),
        ([[1.0]], torch.ones(2, 7, 8), torch.ones(2, 7, 3), {}, TypeError, "torch.Tensor"),
    ],
)
def test_bad_input_is_named(q, k, v, kwargs, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        scaled_dot_product_attention(q, k, v, **kwargs)


def test_mask_must_be_boolean_and_broadcast():
    q, k, v = torch.ones(2, 5, 8), torch.ones(2, 7, 8), torch.ones(2, 7, 3)
    with pytest.raises(TypeError, match="boolean mask"):
        scaled_dot_product_attention(q, k, v, torch.ones(2, 1, 7))
    with pytest.raises(ValueError, match=r"does not broadcast.*\(2, 5, 7\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(2, 1, 1, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, k, v, torch.ones(5, 5, dtype=torch.bool))


@pytest.mark.parametrize("attend", [scaled_dot_product_attention, fused_attention])
def test_integer_or_mixed_dtypes_fail_before_any_matmul_with_a_clear_error(attend):
    ids = torch.randint(0, 5, (2, 3, 4))
    with pytest.raises(
        TypeError, match=r"expected query to hold floating-point numbers, got dtype torch\.int64"
    ):
        attend(ids, ids, ids)
    half, full = torch.randn(2, 3, 4).half(), torch.randn(2, 3, 4)
    with pytest.raises(
        TypeError, match=r"of one dtype, got torch\.float16, torch\.float32 and torch\.float32"
    ):
        attend(half, full, full)
