"""The vision transformer: patches equal conv/unfold, blocks equal torch's, rollout by hand, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnlib.blocks import sinusoidal_encoding
from attnlib.vit import (
    Block,
    PatchEmbed,
    VisionTransformer,
    patchify,
    resize_pos_embed,
    sincos_2d_position_embedding,
)
from attnlib.vit_probes import attention_rollout, average_ranks, bootstrap_interval, rank_correlation


@given(
    b=st.integers(1, 3),
    c=st.integers(1, 3),
    p=st.integers(1, 4),
    gh=st.integers(1, 4),
    gw=st.integers(1, 4),
)
@settings(max_examples=40, deadline=None)
def test_patchify_equals_unfold(b, c, p, gh, gw):
    images = torch.randn(b, c, gh * p, gw * p)
    expected = F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (B, C*P*P, N) -> (B, N, C*P*P)
    assert torch.equal(patchify(images, p), expected)


def test_patchify_numbers_patches_row_by_row():
    image = torch.arange(16.0).view(1, 1, 4, 4)
    patches = patchify(image, 2)  # (1, 4, 4)
    assert patches[0].tolist() == [
        [0, 1, 4, 5],  # top left
        [2, 3, 6, 7],  # top right
        [8, 9, 12, 13],  # bottom left
        [10, 11, 14, 15],  # bottom right
    ]


@pytest.mark.parametrize(("in_chans", "patch_size"), [(1, 2), (1, 4), (3, 2)])
def test_patch_embed_equals_a_strided_conv(in_chans, patch_size):
    torch.manual_seed(0)
    embed = PatchEmbed(8, patch_size, in_chans, 16)
    conv = nn.Conv2d(in_chans, 16, kernel_size=patch_size, stride=patch_size)
    with torch.no_grad():
        conv.weight.copy_(embed.proj.weight.view(16, in_chans, patch_size, patch_size))
        conv.bias.copy_(embed.proj.bias)
    images = torch.randn(5, in_chans, 8, 8)
    expected = conv(images).flatten(2).transpose(1, 2)  # (B, D, Gh, Gw) -> (B, N, D)
    torch.testing.assert_close(embed(images), expected)


def test_shapes():
    torch.manual_seed(0)
    model = VisionTransformer(img_size=8, patch_size=2, num_classes=10, embed_dim=32, depth=3, num_heads=4)
    images = torch.rand(6, 1, 8, 8)
    assert model.num_patches == 16
    assert model.tokens(images).shape == (6, 17, 32)
    assert model.forward_features(images).shape == (6, 17, 32)
    assert model(images).shape == (6, 10)
    weights = model.attention_weights()
    assert weights.shape == (6, 3, 4, 17, 17)
    torch.testing.assert_close(weights.sum(-1), torch.ones(6, 3, 4, 17))
    assert attention_rollout(weights).shape == (6, 17, 17)


def test_block_equals_torch_pre_ln_encoder_layer():
    # A ViT block is nn.TransformerEncoderLayer with norm_first=True and GELU, weight for weight.
    torch.manual_seed(0)
    block = Block(16, num_heads=4, mlp_ratio=2.0, qkv_bias=True).eval()
    ref = nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, dropout=0.0, activation="gelu", layer_norm_eps=1e-6,
        batch_first=True, norm_first=True,
    ).eval()  # fmt: skip
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(block.attn.qkv.weight)  # both: all q rows, all k, all v
        ref.self_attn.in_proj_bias.copy_(block.attn.qkv.bias)
        ref.self_attn.out_proj.load_state_dict(block.attn.proj.state_dict())
        ref.linear1.load_state_dict(block.mlp.fc1.state_dict())
        ref.linear2.load_state_dict(block.mlp.fc2.state_dict())
        for ours, theirs in [(block.norm1, ref.norm1), (block.norm2, ref.norm2)]:
            theirs.weight.copy_(ours.gamma)
            theirs.bias.copy_(ours.beta)
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(block(x), ref(x), atol=1e-5, rtol=1e-5)


def test_forward_by_hand():
    torch.manual_seed(0)
    model = VisionTransformer(img_size=8, patch_size=4, embed_dim=16, depth=2, num_heads=2).eval()
    images = torch.rand(4, 1, 8, 8)
    x = model.patch_embed.proj(patchify(images, 4))  # (B, 4, D)
    x = torch.cat([model.cls_token.expand(4, 1, 16), x], dim=1) + model.pos_embed  # (B, 5, D)
    for block in model.blocks:
        x = x + block.attn(F.layer_norm(x, (16,), block.norm1.gamma, block.norm1.beta, 1e-6))
        x = x + block.mlp(F.layer_norm(x, (16,), block.norm2.gamma, block.norm2.beta, 1e-6))
    x = F.layer_norm(x, (16,), model.norm.gamma, model.norm.beta, 1e-6)
    torch.testing.assert_close(model(images), model.head(x[:, 0]))


def test_the_class_token_attends_to_every_patch_and_carries_the_prediction():
    torch.manual_seed(0)
    model = VisionTransformer(img_size=8, patch_size=2, embed_dim=32, depth=1, num_heads=4).eval()
    images = torch.rand(2, 1, 8, 8)
    logits = model(images)
    cls_row = model.attention_weights()[:, 0, :, 0, 1:]  # (B, H, N): the class token's weight on each patch
    assert bool((cls_row > 0).all())
    # Only the class token reaches the head, so changing any one patch must change the logits:
    # the information can only have come through the class token's attention.
    for patch in range(16):
        r, c = divmod(patch, 4)
        changed = images.clone()
        changed[:, :, 2 * r : 2 * r + 2, 2 * c : 2 * c + 2] += 1.0
        assert not torch.allclose(model(changed), logits)
    # Without attention to the patches (class token attends to itself only), the prediction
    # would not depend on the image at all.
    only_self = torch.zeros(17, 17, dtype=torch.bool)
    only_self[0, 0] = True
    only_self[1:, 1:] = True
    outputs = []
    for imgs in (images, torch.rand(2, 1, 8, 8)):
        x = model.tokens(imgs)
        block = model.blocks[0]
        x = x + block.attn(block.norm1(x), mask=only_self)
        x = x + block.mlp(block.norm2(x))
        outputs.append(model.head(model.norm(x)[:, 0]))
    torch.testing.assert_close(outputs[0], outputs[1])


def test_positions_matter():
    # Attention alone is permutation-equivariant; the position embeddings break the symmetry.
    torch.manual_seed(0)
    model = VisionTransformer(img_size=8, patch_size=4, embed_dim=16, depth=1, num_heads=2).eval()
    with torch.no_grad():
        model.pos_embed.normal_()
    image = torch.rand(1, 1, 8, 8)
    swapped = torch.cat([image[..., 4:], image[..., :4]], dim=-1)  # left and right halves swapped
    assert not torch.allclose(model(image), model(swapped))
    with torch.no_grad():
        model.pos_embed.zero_()
    torch.testing.assert_close(model(image), model(swapped))


def test_rollout_by_hand():
    # Two layers, two heads, three tokens.
    w = torch.tensor(
        [
            [  # layer 0
                [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.6]],
                [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.2, 0.8]],
            ],
            [  # layer 1
                [[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]],
                [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]],
            ],
        ]
    )  # (L, H, T, T)
    # head means: layer 0 [[.5,.5,0],[.5,.5,0],[.1,.2,.7]]; layer 1 [[0,.5,.5],[.5,.5,0],[.5,0,.5]]
    a0 = torch.tensor([[0.75, 0.25, 0.0], [0.25, 0.75, 0.0], [0.05, 0.1, 0.85]])  # (mean + I) / 2
    a1 = torch.tensor([[0.5, 0.25, 0.25], [0.25, 0.75, 0.0], [0.25, 0.0, 0.75]])
    expected = torch.tensor(
        [
            [0.5 * 0.75 + 0.25 * 0.25 + 0.25 * 0.05, 0.5 * 0.25 + 0.25 * 0.75 + 0.25 * 0.1, 0.25 * 0.85],
            [0.25 * 0.75 + 0.75 * 0.25, 0.25 * 0.25 + 0.75 * 0.75, 0.0],
            [0.25 * 0.75 + 0.75 * 0.05, 0.25 * 0.25 + 0.75 * 0.1, 0.75 * 0.85],
        ]
    )
    torch.testing.assert_close(a1 @ a0, expected)
    torch.testing.assert_close(attention_rollout(w), expected)
    torch.testing.assert_close(attention_rollout(w[None])[0], expected)  # (B, L, H, T, T) too
    torch.testing.assert_close(attention_rollout(w[:1]), a0)  # one layer: just (mean + I) / 2


@given(b=st.integers(1, 3), layers=st.integers(1, 4), heads=st.integers(1, 3), t=st.integers(1, 6))
@settings(max_examples=40, deadline=None)
def test_rollout_rows_sum_to_one(b, layers, heads, t):
    weights = torch.softmax(torch.randn(b, layers, heads, t, t) * 3, dim=-1)
    rollout = attention_rollout(weights)
    assert rollout.shape == (b, t, t) and bool((rollout >= 0).all())
    torch.testing.assert_close(rollout.sum(-1), torch.ones(b, t))


def test_rollout_of_a_trained_model_sized_batch_matches_a_loop():
    torch.manual_seed(0)
    model = VisionTransformer(embed_dim=16, depth=3, num_heads=2).eval()
    model(torch.rand(3, 1, 8, 8))
    weights = model.attention_weights()  # (B, L, H, T, T)
    rollout = attention_rollout(weights)
    eye = torch.eye(17)
    for i in range(3):
        r = eye
        for layer in range(3):
            r = (0.5 * weights[i, layer].mean(0) + 0.5 * eye) @ r
        torch.testing.assert_close(rollout[i], r)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="img_size=8 is not divisible by patch_size=3"):
        VisionTransformer(img_size=8, patch_size=3)
    with pytest.raises(ValueError, match="embed_dim=30 is not divisible by num_heads=4"):
        VisionTransformer(embed_dim=30, num_heads=4)
    with pytest.raises(ValueError, match=r"image size 8x6 is not divisible by patch_size=4"):
        patchify(torch.rand(1, 1, 8, 6), 4)
    model = VisionTransformer(img_size=8, patch_size=2, in_chans=1)
    with pytest.raises(ValueError, match=r"with C=1, Hi=Wi=8, got \(2, 3, 8, 8\)"):
        model(torch.rand(2, 3, 8, 8))  # RGB images for a one-channel model
    with pytest.raises(ValueError, match=r"with C=1, Hi=Wi=8, got \(2, 1, 16, 16\)"):
        model(torch.rand(2, 1, 16, 16))
    with pytest.raises(ValueError, match=r"expected images of shape \(B, C, Hi, Wi\), got \(2, 8, 8\)"):
        model(torch.rand(2, 8, 8))  # the channel axis forgotten
    with pytest.raises(TypeError, match=r"expected images to be a torch\.Tensor"):
        model([[0.0] * 8] * 8)
    with pytest.raises(RuntimeError, match="call the model on a batch of images first"):
        VisionTransformer().attention_weights()
    with pytest.raises(ValueError, match=r"expected weights of shape \(B, L, H, T, T\) or \(L, H, T, T\)"):
        attention_rollout(torch.rand(4, 4))
    with pytest.raises(ValueError, match="expected square self-attention maps"):
        attention_rollout(torch.rand(2, 2, 3, 4))


@given(
    rows=st.integers(1, 4),
    n=st.integers(2, 16),
    levels=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
@settings(max_examples=40, deadline=None)
@pytest.mark.filterwarnings("ignore:An input array is constant")  # scipy's NaN for a constant row
def test_rank_correlation_equals_scipy_spearman_with_ties(rows, n, levels, seed):
    scipy_stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, levels + 1, (rows, n), generator=g).float()  # many ties, as blank patches give
    b = torch.randn(rows, n, generator=g)
    assert torch.equal(average_ranks(a), torch.as_tensor(scipy_stats.rankdata(a.numpy(), axis=-1)))
    ours = rank_correlation(a, b, atol=0.0)  # exact ranks, as scipy ranks them
    for i in range(rows):
        theirs = scipy_stats.spearmanr(a[i].numpy(), b[i].numpy()).statistic
        if torch.isnan(torch.tensor(theirs)):
            assert torch.isnan(ours[i])  # a constant row has no ranking
        else:
            assert ours[i].item() == pytest.approx(theirs, abs=1e-12)


def test_rank_correlation_ties_scores_within_atol_of_zero():
    # ink of four patches (two blank) and their occlusion drops; the blank ones' drops are 0
    # up to rounding, one of them a hair above 0: with a tolerance still a tie, so the two
    # orders agree exactly (notebook 14 passes atol=1e-6)
    ink = torch.tensor([[0.0, 0.0, 2.0, 1.0]])
    drop = torch.tensor([[0.0, 1e-7, 0.3, 0.1]])
    assert rank_correlation(ink, drop, atol=1e-6).item() == pytest.approx(1.0, abs=1e-12)
    assert rank_correlation(ink, -drop, atol=1e-6).item() == pytest.approx(-1.0, abs=1e-12)
    assert rank_correlation(ink, drop, atol=0.0).item() < 0.99  # ranked exactly, 1e-7 beats 0
    above = torch.tensor([[0.0, 2e-6, 0.3, 0.1]])  # beyond the tolerance: no longer a tie
    assert rank_correlation(ink, above, atol=1e-6).item() < 0.99
    with pytest.raises(ValueError, match="atol >= 0"):
        rank_correlation(ink, drop, atol=-1.0)


def test_rank_correlation_default_is_plain_spearman():
    scipy_stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 12, generator=g) * 1e-7  # all within 1e-6 of 0: a tolerance would tie them all
    b = torch.randn(3, 12, generator=g)
    ours = rank_correlation(a, b)
    for i in range(3):
        theirs = scipy_stats.spearmanr(a[i].numpy(), b[i].numpy()).statistic
        assert ours[i].item() == pytest.approx(theirs, abs=1e-12)
    ink, drop = torch.tensor([[0.0, 0.0, 2.0, 1.0]]), torch.tensor([[0.0, 1e-7, 0.3, 0.1]])
    assert rank_correlation(ink, drop).item() == rank_correlation(ink, drop, atol=0.0).item() < 0.99


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_more_data():
    g = torch.Generator().manual_seed(0)
    small, large = torch.randn(50, generator=g), torch.randn(5000, generator=g)
    lo, hi = bootstrap_interval(small)
    assert lo < small.mean().item() < hi
    lo2, hi2 = bootstrap_interval(large)
    assert hi2 - lo2 < (hi - lo) / 3
    assert bootstrap_interval(small, seed=1) == bootstrap_interval(small, seed=1)


def test_sincos_2d_halves_are_the_1d_encodings_of_row_and_column():
    pe = sincos_2d_position_embedding(3, 8)  # (9, 8)
    one_d = sinusoidal_encoding(3, 4)
    for k in range(9):
        torch.testing.assert_close(pe[k], torch.cat([one_d[k // 3], one_d[k % 3]]))
    with pytest.raises(ValueError, match="divisible by 4"):
        sincos_2d_position_embedding(3, 6)


def test_resize_pos_embed_keeps_the_class_token_and_a_constant_grid():
    pe = torch.cat([torch.randn(1, 1, 4), torch.ones(1, 16, 4) * 3.0], dim=1)  # (1, 17, 4)
    out = resize_pos_embed(pe, 6)
    assert out.shape == (1, 37, 4)
    torch.testing.assert_close(out[:, 0], pe[:, 0])
    torch.testing.assert_close(out[:, 1:], torch.full((1, 36, 4), 3.0))
    torch.testing.assert_close(resize_pos_embed(pe, 4), pe)  # same grid: unchanged
    model = VisionTransformer(img_size=8, patch_size=2, embed_dim=8, num_heads=2)
    bigger = VisionTransformer(img_size=16, patch_size=2, embed_dim=8, num_heads=2)
    with torch.no_grad():
        bigger.pos_embed.copy_(resize_pos_embed(model.pos_embed, 8))  # a 16x16 image: 8x8 patches
    assert bigger(torch.rand(2, 1, 16, 16)).shape == (2, 10)
