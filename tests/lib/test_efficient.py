"""Online softmax, tiled attention, grouped-query and sliding-window attention and RoPE, each
against a reference: torch.softmax, attnlib's attention, torch's fused attention, explicit formulas."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib
from attnlib.functional import scaled_dot_product_attention
from attnlib.gqa import GroupedQueryAttention
from attnlib.masks import receptive_field, sliding_window_mask
from attnlib.memory import kv_cache_bytes, peak_memory
from attnlib.rotary import apply_rotary, rotary_angles
from attnlib.tiled import online_softmax, tiled_attention

# --- online softmax -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 4),
    length=st.integers(1, 40),
    block=st.integers(1, 50),
    magnitude=st.sampled_from([1e-3, 1.0, 30.0, 1e4, 1e30]),
    masked=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_online_softmax_equals_torch_softmax(rows, length, block, magnitude, masked, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, length, generator=g) * magnitude
    scores[torch.rand(rows, length, generator=g) < masked] = float("-inf")  # extreme: -inf, whole rows too
    got, expected = online_softmax(scores, block), torch.softmax(scores, dim=-1)
    torch.testing.assert_close(got, expected, equal_nan=True)  # NaN exactly where torch has NaN


def test_online_softmax_keeps_leading_dims_and_rejects_bad_input():
    x = torch.randn(2, 3, 5)
    torch.testing.assert_close(online_softmax(x, 2), torch.softmax(x, dim=-1))
    with pytest.raises(TypeError, match="floating-point"):
        online_softmax(torch.arange(5), 2)
    with pytest.raises(ValueError, match="block_size >= 1"):
        online_softmax(x, 0)


# --- tiled attention ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    lead=st.sampled_from([(), (2,), (2, 3)]),
    tq=st.integers(1, 20),
    tk=st.integers(1, 20),
    block_q=st.integers(1, 8),
    block_k=st.integers(1, 8),
    mask_kind=st.sampled_from(["none", "full", "keys", "queries", "2d"]),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_equals_attnlib(lead, tq, tk, block_q, block_k, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(*lead, tq, 4, generator=g), torch.randn(*lead, tk, 4, generator=g)
    v = torch.randn(*lead, tk, 3, generator=g)
    shapes = {
        "none": None,
        "full": (*lead, tq, tk),
        "keys": (*lead[:1], *([1] * len(lead[1:])), 1, tk),  # padding-like: (B, 1, 1, Tk)
        "queries": (tq, 1),
        "2d": (tq, tk),
    }
    shape = shapes[mask_kind]
    mask = None if shape is None else torch.rand(shape, generator=g) < 0.6  # fully masked rows happen
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    got = tiled_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("t", "block"), [(1, 4), (13, 4), (16, 4), (33, 64)])
def test_tiled_causal_equals_attnlib_and_torch(t, block):
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 2, t, 8).unbind(0)
    pad = torch.rand(2, 1, 1, t) < 0.8  # padding-like keys mask, with the causal mask on top
    expected, _ = scaled_dot_product_attention(q, k, v, pad, is_causal=True)
    got = tiled_attention(q, k, v, pad, is_causal=True, block_q=block, block_k=block + 1)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(
        tiled_attention(q, k, v, is_causal=True, block_q=block), fused, atol=1e-5, rtol=1e-5
    )


def test_tiled_fully_masked_rows_are_zero_and_gradients_match():
    torch.manual_seed(0)
    q = torch.randn(1, 5, 4, requires_grad=True)
    k, v = torch.randn(1, 6, 4), torch.randn(1, 6, 4)
    mask = torch.ones(1, 5, 6, dtype=torch.bool)
    mask[0, 2] = False
    out = tiled_attention(q, k, v, mask, block_q=2, block_k=4)
    assert torch.equal(out[0, 2], torch.zeros(4)) and not out.isnan().any()
    (grad,) = torch.autograd.grad(out.sum(), q)
    (expected,) = torch.autograd.grad(scaled_dot_product_attention(q, k, v, mask)[0].sum(), q)
    torch.testing.assert_close(grad, expected, atol=1e-5, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    t=st.integers(1, 40),
    window=st.integers(1, 45),
    block_q=st.integers(1, 9),
    block_k=st.integers(1, 9),
    padded=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tiled_window_equals_the_dense_masked_attention(t, window, block_q, block_k, padded, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, 2, 2, t, 8, generator=g).unbind(0)
    band = sliding_window_mask(t, window)  # (T, T)
    pad = (torch.rand(2, 1, 1, t, generator=g) < 0.8) if padded else None  # fully masked rows happen
    got = tiled_attention(q, k, v, pad, is_causal=True, window=window, block_q=block_q, block_k=block_k)
    expected, _ = scaled_dot_product_attention(q, k, v, attnlib.combine_masks(band, pad))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    if not padded:  # torch's fused kernel, given the same boolean mask
        fused = F.scaled_dot_product_attention(q, k, v, attn_mask=band)
        torch.testing.assert_close(got, fused, atol=1e-5, rtol=1e-5)


class _CountMatmuls(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += getattr(func, "__name__", "") in ("matmul", "__matmul__")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("t", "window", "block"), [(64, 8, 16), (64, 16, 16), (100, 30, 8), (32, 40, 8)])
def test_tiled_window_computes_only_the_tiles_that_meet_the_band(t, window, block):
    q, k, v = torch.randn(3, 1, t, 4).unbind(0)
    band = sliding_window_mask(t, window)  # (T, T)
    n = -(-t // block)  # tiles per side
    blocks = [slice(i * block, (i + 1) * block) for i in range(n)]
    meets = [[bool(band[rows, cols].any()) for cols in blocks] for rows in blocks]  # (n, n)
    with _CountMatmuls() as counter:
        tiled_attention(q, k, v, is_causal=True, window=window, block_q=block, block_k=block)
    assert counter.calls == 2 * sum(map(sum, meets))  # Q Kᵀ and P V for each tile that meets the band
    with _CountMatmuls() as causal_only:
        tiled_attention(q, k, v, is_causal=True, block_q=block, block_k=block)
    assert causal_only.calls == 2 * n * (n + 1) // 2 >= counter.calls


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_tiled_attention_accumulates_reduced_precision_in_float32(dtype):
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 2, 2, 512, 32, generator=g).to(dtype).unbind(0)
    reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    got = tiled_attention(q, k, v, is_causal=True)
    assert got.dtype == dtype
    # within one rounding of the result to the reduced type (eps / 2 relative: 2^-8 for bfloat16,
    # 2^-11 for float16): all the error is the final cast; statistics kept in bfloat16 would be off
    # by far more
    tolerance = reference.abs() * torch.finfo(dtype).eps / 2 + 1e-6
    assert ((got.float() - reference).abs() <= tolerance).all()


def test_tiled_attention_names_bad_input():
    q = torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"\(Tq, Dk\), \(B, Tq, Dk\)"):
        tiled_attention(torch.randn(4), q, q)
    with pytest.raises(ValueError, match="Dk"):
        tiled_attention(q, torch.randn(2, 5, 3), q)
    with pytest.raises(ValueError, match="does not broadcast"):
        tiled_attention(q, q, q, torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean mask"):
        tiled_attention(q, q, q, torch.ones(5, 5))
    with pytest.raises(ValueError, match="Tq == Tk"):
        tiled_attention(q, torch.randn(2, 6, 4), torch.randn(2, 6, 4), is_causal=True)
    with pytest.raises(ValueError, match="needs is_causal=True"):
        tiled_attention(q, q, q, window=3)
    with pytest.raises(ValueError, match="window >= 1"):
        tiled_attention(q, q, q, is_causal=True, window=0)


def test_peak_memory_counts_known_allocations_and_grows_with_t_squared_only_for_the_naive_version():
    assert peak_memory(lambda: torch.empty(1000, 1000)) == 4_000_000  # float32
    assert peak_memory(lambda: [torch.empty(250) for _ in range(3)]) == 3_000  # all alive at once

    def both(t):
        q, k, v = torch.randn(3, 1, 2, t, 16).unbind(0)
        naive = peak_memory(lambda: scaled_dot_product_attention(q, k, v, is_causal=True))
        tiled = peak_memory(lambda: tiled_attention(q, k, v, is_causal=True, block_q=32, block_k=32))
        return naive, tiled

    (n1, t1), (n2, t2) = both(128), both(256)
    one_matrix = 2 * 256 * 256 * 4  # one (B, H, T, T) float32 matrix at T = 256
    assert n2 >= 2 * one_matrix  # scores and weights at least
    assert n2 / n1 > 3.5  # doubling T: about 4x
    assert t2 / t1 < 2.5  # doubling T: about 2x (the output and the inputs' blocks)
    assert t2 < one_matrix / 4


# --- sliding windows and receptive fields ---------------------------------------------------


@pytest.mark.parametrize(("t", "w"), [(6, 3), (5, 1), (4, 10), (9, 4)])
def test_sliding_window_mask_matches_the_definition(t, w):
    mask = sliding_window_mask(t, w)
    expected = torch.tensor([[i - w < j <= i for j in range(t)] for i in range(t)])
    assert torch.equal(mask, expected) and mask.dtype == torch.bool
    assert int(mask.sum()) == sum(min(i + 1, w) for i in range(t))  # the attended pairs


def test_sliding_window_mask_rejects_bad_sizes():
    with pytest.raises(ValueError, match="window >= 1"):
        sliding_window_mask(5, 0)
    with pytest.raises(TypeError, match="size to be an int"):
        sliding_window_mask(5.0, 2)


@pytest.mark.parametrize(("w", "layers"), [(2, 1), (3, 2), (3, 4), (5, 3)])
def test_receptive_field_is_layers_times_window_minus_one_plus_one(w, layers):
    t = 24
    reach = receptive_field(sliding_window_mask(t, w), layers)
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    assert torch.equal(reach, (j <= i) & (j >= i - layers * (w - 1)))


def test_receptive_field_agrees_with_gradients_through_real_layers():
    torch.manual_seed(0)
    t, w, n_layers = 16, 3, 3
    layers = [GroupedQueryAttention(8, 8, t, 0.0, 2, 2, window=w) for _ in range(n_layers)]
    x = torch.randn(1, t, 8, requires_grad=True)
    h = x
    for layer in layers:
        h = h + layer(h)  # residual: a token keeps its own information
    (grad,) = torch.autograd.grad(h[0, -1].sum(), x)
    influences = grad[0].abs().sum(-1) > 0  # (T,)
    assert torch.equal(influences, receptive_field(sliding_window_mask(t, w), n_layers)[-1])
    assert int(influences.sum()) == n_layers * (w - 1) + 1


# --- grouped-query attention ----------------------------------------------------------------


def test_gqa_with_as_many_kv_heads_as_heads_is_multi_head_attention():
    torch.manual_seed(0)
    mha = attnlib.MultiHeadAttention(6, 8, 10, 0.0, num_heads=4, qkv_bias=True)
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(6, 8, 10, 0.0, num_heads=4, num_kv_heads=4, qkv_bias=True)
    assert [n for n, _ in gqa.named_parameters()] == [n for n, _ in mha.named_parameters()]
    assert all(torch.equal(a, b) for a, b in zip(gqa.parameters(), mha.parameters(), strict=True))
    x = torch.randn(2, 7, 6)
    pad = attnlib.length_mask([7, 4])
    torch.testing.assert_close(gqa(x, pad), mha(x, mask=pad))
    torch.testing.assert_close(gqa.last_attn_weights, mha.last_attn_weights)


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_gqa_shares_each_kv_head_with_a_group_of_query_heads(kv_heads):
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(8, 8, 10, 0.0, num_heads=4, num_kv_heads=kv_heads)
    assert gqa.W_key.weight.shape == (kv_heads * 2, 8)
    x = torch.randn(2, 5, 8)
    out = gqa(x)
    # Reference: torch's fused attention with each K/V head copied to its group, written out.
    q = gqa.W_query(x).view(2, 5, 4, 2).transpose(1, 2)  # (B, H, T, Dh)
    k = gqa.W_key(x).view(2, 5, kv_heads, 2).transpose(1, 2)  # (B, G, T, Dh)
    v = gqa.W_value(x).view(2, 5, kv_heads, 2).transpose(1, 2)
    group_of_head = torch.arange(4) // (4 // kv_heads)
    context = F.scaled_dot_product_attention(q, k[:, group_of_head], v[:, group_of_head], is_causal=True)
    torch.testing.assert_close(out, gqa.out_proj(context.transpose(1, 2).reshape(2, 5, 8)))


def test_gqa_window_and_rotary_and_bad_arguments():
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(8, 8, 10, 0.0, 4, 2, window=3, rotary=True)
    gqa(torch.randn(1, 6, 8))
    assert torch.equal(gqa.last_attn_weights[0, 0] > 0, sliding_window_mask(6, 3))
    with pytest.raises(ValueError, match="num_heads=4 is not divisible by num_kv_heads=3"):
        GroupedQueryAttention(8, 8, 10, 0.0, 4, 3)
    with pytest.raises(ValueError, match="causal=True"):
        GroupedQueryAttention(8, 8, 10, 0.0, 4, 2, causal=False, window=3)
    with pytest.raises(ValueError, match=r"expected x of shape \(B, T, Din\) with Din=8"):
        gqa(torch.randn(1, 6, 5))


def test_kv_cache_bytes_formula():
    # Mistral 7B's shape (Jiang et al., 2023, Table 1): 32 layers, 8 KV heads of 128, fp16.
    assert kv_cache_bytes(32, 8, 128, 8192) == 2 * 32 * 8 * 128 * 8192 * 2 == 2**30
    assert kv_cache_bytes(32, 32, 128, 8192) == 4 * kv_cache_bytes(32, 8, 128, 8192)
    with pytest.raises(ValueError, match="n_kv_heads >= 1"):
        kv_cache_bytes(32, 0, 128, 8192)


# --- rotary position embeddings -------------------------------------------------------------


def complex_rotary(x, positions, base=10000.0):
    """RoPE as complex multiplication: pair (x_2i, x_2i+1) is x_2i + i x_2i+1, times e^(i m theta_i)."""
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())  # (..., T, Dh/2)
    theta = base ** (-torch.arange(0, x.shape[-1], 2).double() / x.shape[-1])
    turn = torch.polar(
        torch.ones(len(positions), len(theta), dtype=torch.float64), positions.double()[:, None] * theta
    )
    return torch.view_as_real(z * turn.to(z.dtype)).flatten(-2)


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 12), half=st.integers(1, 8), offset=st.integers(0, 500), seed=st.integers(0, 2**16))
def test_rotary_equals_complex_multiplication_and_keeps_norms(t, half, offset, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, t, 2 * half, generator=g)
    positions = torch.arange(t) + offset
    rotated = apply_rotary(x, positions)
    # the angles are float64 on both sides; only the float32 cos, sin and products differ
    torch.testing.assert_close(rotated, complex_rotary(x, positions), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))


@pytest.mark.parametrize(("m", "n", "shift"), [(3, 1, 5), (0, 7, 100), (12, 12, 37)])
def test_rotary_scores_depend_only_on_the_offset(m, n, shift):
    torch.manual_seed(0)
    q, k = torch.randn(2, 1, 16).unbind(0)  # (1, Dh) each

    def score(pm, pn):
        return (apply_rotary(q, torch.tensor([pm])) * apply_rotary(k, torch.tensor([pn]))).sum()

    torch.testing.assert_close(score(m, n), score(m + shift, n + shift), atol=1e-4, rtol=1e-5)
    assert not torch.allclose(score(m, n), score(m, n + 1), atol=1e-3)  # another offset, another score


def test_rotary_keeps_float64_accuracy_far_from_the_start():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 64, generator=g, dtype=torch.float64)
    positions = torch.tensor([0, 100_000, 123_457])
    # float32 angles near m = 100,000 can be off by up to ~4e-3 rad; float64 ones agree to float64 precision
    torch.testing.assert_close(apply_rotary(x, positions), complex_rotary(x, positions), atol=1e-9, rtol=1e-9)
    rotated32 = apply_rotary(x.float(), positions)
    assert rotated32.dtype == torch.float32
    torch.testing.assert_close(rotated32, complex_rotary(x, positions).float(), atol=1e-5, rtol=1e-5)


def test_rotary_angles_and_errors():
    angles = rotary_angles(torch.tensor([0, 1, 2]), 4)
    torch.testing.assert_close(angles, torch.tensor([[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]]))
    assert math.isclose(
        float(rotary_angles(torch.tensor([1]), 8, base=100.0)[0, 1]), 100 ** (-2 / 8), rel_tol=1e-6
    )
    assert angles.dtype == torch.float32
    assert rotary_angles(torch.tensor([100_000]), 4, dtype=torch.float64)[0, 0].item() == 100_000.0
    with pytest.raises(ValueError, match="even head_dim"):
        apply_rotary(torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"positions of shape \(T,\) with T=3"):
        apply_rotary(torch.randn(3, 4), torch.arange(4))
