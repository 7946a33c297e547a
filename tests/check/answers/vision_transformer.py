"""Answers to the checks of notebook 14."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnlib import occlude
from attnlib.vit import resize_pos_embed, sincos_2d_position_embedding
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


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


RIGHT = {
    "sincos_2d": [right_sincos_2d],
    "resize_pos_embed": [right_resize],
    "mean_occlusion_drop": [right_mean_occlusion],
    "vit_attention_shape": [given((5, 6, 8, 65, 65)), given([5, 6, 8, 65, 65])],
}

# ----------------------------------------------------------------------------- typical mistakes


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


WRONG = {
    "sincos_2d": [
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
    "resize_pos_embed": [
        (resize_slip(view=True), "then permute to (1, D, G, G)"),
        (whole_sequence_1d, "keep the class token's embedding"),
        (resize_slip(mode="nearest"), "mode='nearest' only copies"),
        (resize_slip(mode="bicubic"), "timm's mode='bicubic'"),
        (resize_slip(corners=True), "align_corners=False"),
        (resize_slip(swap=True), "you swapped rows and columns"),
    ],
    "mean_occlusion_drop": [
        (fill_slip(fill_of=lambda f: f.mean()), "one number, the mean of the whole mean image"),
        (fill_slip(fill_of=lambda f: 0.0), "this is the zero occlusion of section 5"),
        (fill_slip(columns=True), "you went column by column"),
        (fill_slip(sign=-1), "original probability minus the occluded one"),
        (fill_slip(score=lambda z: z), "not the logits"),
        (fill_slip(predicted=True), "the TRUE class's probability"),
    ],
    "vit_attention_shape": [  # a 32x32 image in patches of 4, 6 layers of 8 heads, a batch of 5
        (given((5, 6, 8, 64, 64)), "the class token is a token too"),
        (given((5, 6, 8, 17, 17)), "not pixels per patch"),
        (given((5, 6, 8, 49, 49)), "the 3 channels go into each token's numbers"),
        (given((5, 6, 8, 9, 9)), "8 patches per side"),
        (given((5, 6, 65, 65)), "every head keeps its own map"),
        (given((5, 8, 6, 65, 65)), "stacks the layers, then each layer's heads"),
        (given((5, 6, 8, 65, 64)), "compare tokens with tokens"),
        (given((1, 2, 3)), "count the patches of a 32x32 image"),
    ],
}

TOLD = {
    "resize_pos_embed": [(lambda pe, n: resize_pos_embed(pe, n)[:, 1:], "fail")],  # the class token dropped
    "mean_occlusion_drop": [(lambda model, image, label, fill: torch.zeros(model.num_patches), "fail")],
}

# ----------------------------------------------------------------------------- out of reach
OUT_OF_REACH = {
    "sincos_2d": [
        (sincos_2d_position_embedding, "hands back attnlib's own `sincos_2d_position_embedding`"),
        (
            lambda g, d: sincos_2d_position_embedding(g, d),
            "calls attnlib's own `sincos_2d_position_embedding`",
        ),
    ],
    "resize_pos_embed": [
        (resize_pos_embed, "hands back attnlib's own `resize_pos_embed`"),
        (lambda pe, n: resize_pos_embed(pe, n), "calls attnlib's own `resize_pos_embed`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes


def _shape_error(tensor):
    return tensor.view(-1, 7, 11)  # a shape error in the student's code


def crashes_on_a_shape(*args):
    return _shape_error(torch.as_tensor(args[0]))


def crashes_on_the_image(model, image, label, fill):
    return _shape_error(image)


NOT_YET = {
    "sincos_2d": [stub],
    "resize_pos_embed": [stub],
    "mean_occlusion_drop": [stub],
    "vit_attention_shape": [given(...)],
}
_RAISED = ("your code raised RuntimeError", "tensor.view(-1, 7, 11)")
CRASHES = {
    "sincos_2d": [(crashes,), (crashes_on_a_shape, *_RAISED)],
    "resize_pos_embed": [(crashes,), (crashes_on_a_shape, *_RAISED)],
    "mean_occlusion_drop": [(crashes,), (crashes_on_the_image, *_RAISED)],
}
