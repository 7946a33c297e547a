"""The checks of notebook 14's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnlib import check, occlude
from attnlib.vit import resize_pos_embed, sincos_2d_position_embedding
from tests.student_answers import assert_todo_then_error


def encoding_1d(positions, dim):  # written out, not attnlib's: (T,) -> (T, dim)
    i = torch.arange(dim // 2, dtype=torch.float)
    angles = positions.float()[:, None] / 10000 ** (2 * i / dim)  # (T, dim/2)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)  # sin, cos interleaved


def right_sincos_2d(grid_size, dim):
    k = torch.arange(grid_size * grid_size)
    return torch.cat([encoding_1d(k // grid_size, dim // 2), encoding_1d(k % grid_size, dim // 2)], dim=1)


def right_resize(pos_embed, new_grid):
    g = math.isqrt(pos_embed.shape[1] - 1)
    d = pos_embed.shape[-1]
    grid = pos_embed[0, 1:].T.reshape(1, d, g, g)  # (N, D) -> (D, N) -> (1, D, G, G)
    grid = F.interpolate(grid, size=(new_grid, new_grid), mode="bilinear")
    return torch.cat([pos_embed[:, :1], grid.flatten(2).transpose(1, 2)], dim=1)


def right_mean_occlusion(model, image, label, fill):
    p = model.patch_embed.patch_size
    with torch.no_grad():
        base = torch.softmax(model(image[None]), -1)[0, label]
        out = []
        for k in range(model.num_patches):
            mask = occlude(torch.ones_like(image)[None], k, p)[0] == 0  # True inside patch k
            seen = torch.where(mask, fill, image)
            out.append(base - torch.softmax(model(seen[None]), -1)[0, label])
    return torch.stack(out)


def test_right_answers_pass():
    for fn, answer in [
        (check.sincos_2d, right_sincos_2d),
        (check.sincos_2d, sincos_2d_position_embedding),
        (check.resize_pos_embed, right_resize),
        (check.resize_pos_embed, resize_pos_embed),
        (check.mean_occlusion_drop, right_mean_occlusion),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message


def test_resize_to_the_same_grid_changes_nothing():
    pe = torch.randn(1, 17, 6)
    torch.testing.assert_close(resize_pos_embed(pe, 4), pe)


# --- 14.1 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda g, d: right_sincos_2d(g, d).roll(d // 2, dims=1), "the other way round"),
        (lambda g, d: encoding_1d(torch.arange(g * g), d), "the 1-D encoding of the patch's number"),
        (
            lambda g, d: torch.cat(
                [
                    encoding_1d(torch.arange(g * g) // g, d)[:, : d // 2],
                    encoding_1d(torch.arange(g * g) % g, d)[:, : d // 2],
                ],
                dim=1,
            ),
            "its own frequencies",
        ),
        (
            lambda g, d: encoding_1d(torch.arange(g * g) // g, d) + encoding_1d(torch.arange(g * g) % g, d),
            "do not add two width-D encodings",
        ),
        (lambda g, d: torch.cat([torch.zeros(1, d), right_sincos_2d(g, d)]), "no class token here"),
    ],
)
def test_sincos_2d_explains_typical_mistakes(wrong, hint):
    verdict = check.sincos_2d(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


# --- 14.2 -----------------------------------------------------------------------------------------


def resize_slip(*, mode="bilinear", corners=False, view=False, swap=False):
    def fn(pos_embed, new_grid):
        g, d = math.isqrt(pos_embed.shape[1] - 1), pos_embed.shape[-1]
        patches = pos_embed[0, 1:]  # (N, D)
        grid = patches.reshape(1, d, g, g) if view else patches.T.reshape(1, d, g, g)
        if swap:
            grid = grid.transpose(2, 3)
        extra = {} if mode == "nearest" else {"align_corners": corners}
        grid = F.interpolate(grid, size=(new_grid, new_grid), mode=mode, **extra)
        out = grid.reshape(1, -1, d) if view else grid.flatten(2).transpose(1, 2)
        return torch.cat([pos_embed[:, :1], out], dim=1)

    return fn


def whole_sequence_1d(pos_embed, new_grid):
    x = pos_embed.transpose(1, 2)  # (1, D, T)
    return F.interpolate(x, size=new_grid * new_grid + 1, mode="linear").transpose(1, 2)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (resize_slip(view=True), "then permute to (1, D, G, G)"),
        (whole_sequence_1d, "keep the class token's embedding"),
        (resize_slip(mode="nearest"), "mode='nearest' only copies"),
        (resize_slip(mode="bicubic"), "timm's mode='bicubic'"),
        (resize_slip(corners=True), "align_corners=False"),
        (resize_slip(swap=True), "you swapped rows and columns"),
    ],
)
def test_resize_pos_embed_explains_typical_mistakes(wrong, hint):
    verdict = check.resize_pos_embed(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_resize_pos_embed_rejects_a_dropped_class_token():
    verdict = check.resize_pos_embed(lambda pe, n: resize_pos_embed(pe, n)[:, 1:])
    assert not verdict and verdict.status == "fail"


# --- 14.4 -----------------------------------------------------------------------------------------


def fill_slip(*, fill_of=lambda f: f, columns=False, sign=1, score=None, predicted=False):
    score = score or (lambda z: torch.softmax(z, -1))

    def fn(model, image, label, fill):
        p, g = model.patch_embed.patch_size, model.patch_embed.grid_size
        used = torch.as_tensor(fill_of(fill), dtype=image.dtype).expand_as(image)
        with torch.no_grad():
            who = int(model(image[None]).argmax()) if predicted else label
            base = score(model(image[None]))[0, who]
            out = []
            for k in range(model.num_patches):
                j = (k % g) * g + k // g if columns else k
                mask = occlude(torch.ones_like(image)[None], j, p)[0] == 0
                out.append(base - score(model(torch.where(mask, used, image)[None]))[0, who])
        return sign * torch.stack(out)

    return fn


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (fill_slip(fill_of=lambda f: f.mean()), "one number, the mean of the whole mean image"),
        (fill_slip(fill_of=lambda f: 0.0), "this is the zero occlusion of section 5"),
        (fill_slip(columns=True), "you went column by column"),
        (fill_slip(sign=-1), "original probability minus the occluded one"),
        (fill_slip(score=lambda z: z), "not the logits"),
        (fill_slip(predicted=True), "the TRUE class's probability"),
    ],
)
def test_mean_occlusion_drop_explains_typical_mistakes(wrong, hint):
    verdict = check.mean_occlusion_drop(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_mean_occlusion_drop_rejects_an_answer_of_zeros():
    verdict = check.mean_occlusion_drop(lambda model, image, label, fill: torch.zeros(model.num_patches))
    assert not verdict and verdict.status == "fail"


# --- 14.3 -----------------------------------------------------------------------------------------


def test_attention_shape_prediction():
    from attnlib.vit import VisionTransformer

    model = VisionTransformer(img_size=32, patch_size=4, in_chans=3, embed_dim=64, depth=6, num_heads=8)
    model(torch.rand(5, 3, 32, 32))
    assert tuple(model.attention_weights().shape) == (5, 6, 8, 65, 65)
    assert check.vit_attention_shape((5, 6, 8, 65, 65)).status == "pass"
    assert check.vit_attention_shape([5, 6, 8, 65, 65]).status == "pass"
    assert check.vit_attention_shape(...).status == "todo"
    for wrong, hint in [
        ((5, 6, 8, 64, 64), "the class token is a token too"),
        ((5, 6, 8, 17, 17), "not pixels per patch"),
        ((5, 6, 8, 49, 49), "the 3 channels go into each token's numbers"),
        ((5, 6, 8, 9, 9), "8 patches per side"),
        ((5, 6, 65, 65), "every head keeps its own map"),
        ((5, 8, 6, 65, 65), "stacks the layers, then each layer's heads"),
        ((5, 6, 8, 65, 64), "compare tokens with tokens"),
        ((1, 2, 3), "count the patches of a 32x32 image"),
    ]:
        verdict = check.vit_attention_shape(wrong)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, (
            wrong,
            verdict.message,
        )


@pytest.mark.parametrize("fn", [check.sincos_2d, check.resize_pos_embed, check.mean_occlusion_drop])
def test_a_stub_is_not_yet_and_a_crash_is_reported_in_words(fn):
    assert_todo_then_error(fn)  # a stub, and tests.student_answers.crashes

    def crashes(*args):
        tensor = args[1] if fn is check.mean_occlusion_drop else torch.as_tensor(args[0])
        return tensor.view(-1, 7, 11)  # a shape error in the student's code

    verdict = fn(crashes)
    assert verdict.status == "error" and not verdict
    assert "your code raised RuntimeError" in verdict.message and "Traceback" not in verdict.message
    assert "tensor.view(-1, 7, 11)" in verdict.message


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.sincos_2d(right_sincos_2d)
    check.resize_pos_embed(right_resize)
    check.mean_occlusion_drop(right_mean_occlusion)
    check.vit_attention_shape((5, 6, 8, 65, 65))
    assert torch.equal(state, torch.random.get_rng_state())
