"""Exercise checks for notebook 14 (the vision transformer); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``C`` channels, ``Hi``/``Wi`` image side, ``P`` patch side, ``G`` patches
per side, ``N = G * G`` patches, ``T = N + 1`` tokens, ``D`` width, ``L`` layers, ``H`` heads.

Models are built inside ``torch.random.fork_rng``, so a check never moves the caller's global
seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .. import VisionTransformer
from ..blocks import sinusoidal_encoding
from ..i18n import N_, fmt
from ..vit import resize_pos_embed as reference_resize_pos_embed
from ..vit import sincos_2d_position_embedding
from ._core import Case, Mistake, Verdict, check_answer, generator, run_check, seeded
from ._reach import own

__all__ = ["mean_occlusion_drop", "resize_pos_embed", "sincos_2d", "vit_attention_shape"]


# ---------------------------------------------------------------------------------------------
# Exercise 14.1: 2-D sine-cosine position embeddings
# ---------------------------------------------------------------------------------------------


def _halves(g: int, d: int, *, row_first: bool = True, width: int | None = None) -> torch.Tensor:
    """Row and column encodings side by side; slips: columns first, or each half at width D."""
    half = sinusoidal_encoding(g, width or d // 2)[:, : d // 2]  # (G, D/2)
    rows, cols = half.repeat_interleave(g, dim=0), half.repeat(g, 1)  # (N, D/2) each
    return torch.cat([rows, cols] if row_first else [cols, rows], dim=1)  # (N, D)


def _sum_of_axes(g: int, d: int) -> torch.Tensor:
    full = sinusoidal_encoding(g, d)  # (G, D)
    return full.repeat_interleave(g, dim=0) + full.repeat(g, 1)  # (N, D): row + column, added


def sincos_2d(student_fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Exercise 14.1: ``student_fn(grid_size, dim)`` -> ``(G*G, D)`` fixed 2-D position embeddings.

    Patch ``k`` (row by row) sits in grid row ``k // G`` and column ``k % G``; its embedding is
    the 1-D sinusoidal encoding (width ``D/2``) of its row followed by that of its column.
    """
    cases = [
        Case("a 2x2 grid, D=4", (2, 4)),
        Case("a 4x4 grid, D=8", (4, 8)),
        Case("a 3x3 grid, D=12", (3, 12)),
    ]
    mistakes = [
        Mistake(
            "the row's encoding comes first and the column's second; you have them the other way round "
            "(or numbered the patches column by column)",
            lambda g, d: _halves(g, d, row_first=False),
        ),
        Mistake(
            "this is the 1-D encoding of the patch's number k: a 2-D embedding encodes the grid row "
            "k // G and the grid column k % G separately, D/2 numbers each",
            lambda g, d: sinusoidal_encoding(g * g, d),
        ),
        Mistake(
            "each half is a full sinusoidal encoding of width D/2 (its own frequencies); you cut the first "
            "D/2 columns of a width-D encoding",
            lambda g, d: _halves(g, d, width=d),
        ),
        Mistake(
            "concatenate the row half and the column half (D/2 each), do not add two width-D encodings",
            _sum_of_axes,
        ),
        Mistake(
            "no class token here: one row per patch, (G*G, D); a fixed embedding for the class token "
            "would be a separate choice",
            lambda g, d: torch.cat([torch.zeros(1, d), sincos_2d_position_embedding(g, d)]),
        ),
    ]
    return run_check(
        N_("Exercise 14.1 — 2-D sine-cosine position embeddings"),
        student_fn,
        sincos_2d_position_embedding,
        cases,
        mistakes,
        forbidden=[own(sincos_2d_position_embedding)],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 14.2: position embeddings for a larger image (ViT §3.2)
# ---------------------------------------------------------------------------------------------


def _resized(pos_embed: torch.Tensor, new: int, *, mode: str = "bilinear", slip: str = "") -> torch.Tensor:
    """The reference with one slip: another mode, corners aligned, a view for a permute, swapped axes."""
    g = round((pos_embed.shape[1] - 1) ** 0.5)
    cls, patches = pos_embed[:, :1], pos_embed[:, 1:]
    d = patches.shape[-1]
    # The "view" slip reads the numbers of (G, G, D) as (D, G, G); the right way permutes.
    viewed = slip == "view"
    grid = patches.reshape(1, d, g, g) if viewed else patches.reshape(1, g, g, d).permute(0, 3, 1, 2)
    if slip == "swap":
        grid = grid.transpose(2, 3)
    extra = {} if mode == "nearest" else {"align_corners": slip == "corners"}
    grid = F.interpolate(grid, size=(new, new), mode=mode, **extra)
    out = grid.reshape(1, d, new * new).transpose(1, 2) if slip != "view" else grid.reshape(1, new * new, d)
    return torch.cat([cls, out], dim=1)


def _resized_with_cls(pos_embed: torch.Tensor, new: int) -> torch.Tensor:
    """A slip: the class token interpolated with the patches (as a 1-D sequence)."""
    x = pos_embed.transpose(1, 2)  # (1, D, T)
    return F.interpolate(x, size=new * new + 1, mode="linear", align_corners=False).transpose(1, 2)


def _pos_embed(seed: int, g: int, d: int) -> torch.Tensor:
    gen = generator(seed)
    return torch.randn(1, 1 + g * g, d, generator=gen)


def resize_pos_embed(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 14.2: ``student_fn(pos_embed, new_grid)``: ``(1, 1 + G*G, D)`` -> ``(1, 1 + G'*G', D)``.

    The class token's embedding is kept; the patches' are laid out on their ``G x G`` grid and
    interpolated bilinearly (``align_corners=False``) to ``G' x G'``.
    """
    cases = [
        Case("a 2x2 grid to 4x4, D=3", (_pos_embed(0, 2, 3), 4)),
        Case("a 4x4 grid to 8x8, D=5", (_pos_embed(1, 4, 5), 8)),
        Case("a 3x3 grid to 5x5, D=2", (_pos_embed(2, 3, 2), 5)),
        Case("a 4x4 grid down to 2x2, D=4", (_pos_embed(3, 4, 4), 2)),
    ]
    mistakes = [
        Mistake(
            "the patches' embeddings are (G*G, D), one row per patch: reshape to (1, G, G, D) and then "
            "permute to (1, D, G, G) for F.interpolate; reshaping straight to (1, D, G, G) mixes "
            "the numbers of different patches",
            lambda pe, n: _resized(pe, n, slip="view"),
        ),
        Mistake(
            "keep the class token's embedding as it is and interpolate only the patches' on their 2-D "
            "grid: interpolating the whole sequence in 1-D ignores where the patches sit",
            _resized_with_cls,
        ),
        Mistake(
            "use mode='bilinear', a smooth 2-D interpolation; mode='nearest' only copies embeddings",
            lambda pe, n: _resized(pe, n, mode="nearest"),
        ),
        Mistake(
            "use mode='bilinear' as the exercise asks: timm's mode='bicubic' is a fine choice too, but "
            "it weighs 4x4 neighbours instead of 2x2, so its numbers differ from the check's",
            lambda pe, n: _resized(pe, n, mode="bicubic"),
        ),
        Mistake(
            "use align_corners=False (patch centres, as in F.interpolate's default and timm); "
            "align_corners=True stretches the corner patches' centres to the new corners",
            lambda pe, n: _resized(pe, n, slip="corners"),
        ),
        Mistake(
            "the grid's first axis is the row: patch k sits in row k // G; you swapped rows and columns",
            lambda pe, n: _resized(pe, n, slip="swap"),
        ),
    ]
    return run_check(
        N_("Exercise 14.2 — position embeddings for a larger image"),
        student_fn,
        reference_resize_pos_embed,
        cases,
        mistakes,
        atol=1e-5,
        forbidden=[own(reference_resize_pos_embed)],
    )


# ---------------------------------------------------------------------------------------------
# Exercise 14.3 (prediction): the shape of the attention weights
# ---------------------------------------------------------------------------------------------

SHAPE_CONFIG = {"img_size": 32, "patch_size": 4, "in_chans": 3, "embed_dim": 64, "depth": 6, "num_heads": 8}
SHAPE_BATCH = 5


def vit_attention_shape(answer: object) -> Verdict:
    """Exercise 14.3 (prediction): ``model.attention_weights().shape`` after a batch of 5 RGB images for
    ``VisionTransformer(img_size=32, patch_size=4, in_chans=3, embed_dim=64, depth=6, num_heads=8)``.
    """
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        model = VisionTransformer(**SHAPE_CONFIG, num_classes=10).eval()
        model(torch.zeros(SHAPE_BATCH, 3, 32, 32))
    expected = tuple(model.attention_weights().shape)  # (5, 6, 8, 65, 65)
    b, layers, heads, t = SHAPE_BATCH, 6, 8, 65
    pixels = N_("N counts patches, not pixels per patch: a 32x32 image in 4x4 patches")
    channels = fmt("{pixels} (the 3 channels go into each token's numbers, not into T)", pixels=fmt(pixels))
    side = N_("the grid has 8 patches per side, so 8 x 8 patches, plus the class token")
    square = N_("attention weights compare tokens with tokens: the last two axes are (T, T)")
    hints = {
        (b, layers, heads, t - 1, t - 1): N_("the class token is a token too: it attends and is attended to"),
        (b, layers, heads, 16, 16): pixels,
        (b, layers, heads, 17, 17): pixels,
        (b, layers, heads, 48, 48): channels,
        (b, layers, heads, 49, 49): channels,
        (b, layers, heads, 8, 8): side,
        (b, layers, heads, 9, 9): side,
        (b, layers, t, t): N_("every head keeps its own map: (B, L, H, T, T)"),
        (
            b,
            heads,
            layers,
            t,
            t,
        ): N_("attention_weights() stacks the layers, then each layer's heads: (B, L, H, T, T)"),
        (b, layers, heads, t, 64): square,
        (b, layers, heads, t, 8): square,
    }
    generic = N_(
        "count the patches of a 32x32 image cut into 4x4 squares, add the class token; "
        "one map per layer and head"
    )
    key = tuple(answer) if isinstance(answer, (tuple, list, torch.Size)) else None
    return check_answer(
        N_("Exercise 14.3 — the shape of the attention weights"), answer, expected, hints.get(key, generic)
    )


# ---------------------------------------------------------------------------------------------
# Exercise 14.4: occluding with the mean image instead of 0
# ---------------------------------------------------------------------------------------------


def _case(patch_size: int, seed: int, image: torch.Tensor, fill: torch.Tensor) -> Case:
    """A small random model with sharpened weights (so occlusion moves its probabilities visibly)
    and, as the label, its SECOND most likely class for ``image`` (so the predicted class differs)."""
    with seeded(seed), torch.no_grad():
        model = VisionTransformer(8, patch_size, 1, 10, embed_dim=16, depth=2, num_heads=2).eval()
        model.patch_embed.proj.weight.mul_(4.0)
        model.head.weight.mul_(4.0)
        model.pos_embed.normal_()
        label = int(model(image.unsqueeze(0))[0].argsort(descending=True)[1])
    n = model.num_patches
    return Case(
        fmt(
            "{patch_size}x{patch_size} patches (N={n}), label {label}",
            patch_size=patch_size,
            n=n,
            label=label,
        ),
        (model, image, label, fill),
    )


def _filled(image: torch.Tensor, fill: torch.Tensor, p: int, *, order: str = "rows") -> torch.Tensor:
    """``(N, C, Hi, Wi)``: copy ``k`` has patch ``k`` taken from ``fill`` (a tensor, or one number)."""
    c, h, w = image.shape
    g = w // p
    n = (h // p) * g
    copies = image.unsqueeze(0).repeat(n, 1, 1, 1)  # (N, C, Hi, Wi)
    fill = torch.as_tensor(fill, dtype=image.dtype).expand(c, h, w)
    for k in range(n):
        r, col = divmod(k, g) if order == "rows" else (k % g, k // g)
        rows, cols = slice(r * p, (r + 1) * p), slice(col * p, (col + 1) * p)
        copies[k, :, rows, cols] = fill[:, rows, cols]
    return copies


def _drops(model, image, label, fill, *, order="rows", score=None, sign=1, who=None):
    score = score or (lambda z: torch.softmax(z, dim=-1))
    with torch.no_grad():
        cls = label if who is None else int(model(image.unsqueeze(0)).argmax())
        before = score(model(image.unsqueeze(0)))[0, cls]
        after = score(model(_filled(image, fill, model.patch_embed.patch_size, order=order)))[:, cls]
    return sign * (before - after)


def reference_mean_occlusion_drop(
    model: VisionTransformer, image: torch.Tensor, label: int, fill: torch.Tensor
) -> torch.Tensor:
    """``(N,)``: p(label) minus p(label) when patch ``k`` is replaced by the same patch of ``fill``."""
    return _drops(model, image, label, fill)


def mean_occlusion_drop(
    student_fn: Callable[[VisionTransformer, torch.Tensor, int, torch.Tensor], torch.Tensor],
) -> Verdict:
    """Exercise 14.4: ``student_fn(model, image, label, fill)`` -> ``(N,)``: how much the probability
    of ``label`` falls when patch ``k`` (row by row) is replaced by the same patch of ``fill``,
    an image ``(C, Hi, Wi)`` such as the training mean."""
    g = generator(0)
    images = torch.rand(3, 1, 8, 8, generator=g)
    fill = torch.rand(1, 8, 8, generator=g) * 0.5 + 0.25  # varies across the image, never 0
    cases = [
        _case(4, 0, images[0], fill),
        _case(2, 1, images[1], fill),
        _case(2, 2, images[2], fill),
    ]
    mistakes = [
        Mistake(
            "replace the patch with the SAME patch of the mean image, pixel by pixel; you filled it with "
            "one number, the mean of the whole mean image",
            lambda m, x, y, f: _drops(m, x, y, f.mean()),
        ),
        Mistake(
            "this is the zero occlusion of section 5: take the patch's pixels from `fill` instead of 0",
            lambda m, x, y, f: _drops(m, x, y, 0.0),
        ),
        Mistake(
            "patch k sits in grid row k // Gw and column k % Gw (row by row); you went column by column",
            lambda m, x, y, f: _drops(m, x, y, f, order="columns"),
        ),
        Mistake(
            "a drop is the original probability minus the occluded one (positive when the patch helped)",
            lambda m, x, y, f: _drops(m, x, y, f, sign=-1),
        ),
        Mistake(
            "compare probabilities (softmax of the logits), not the logits",
            lambda m, x, y, f: _drops(m, x, y, f, score=lambda z: z),
        ),
        Mistake(
            "measure the TRUE class's probability (the label argument), not the predicted class's",
            lambda m, x, y, f: _drops(m, x, y, f, who="predicted"),
        ),
    ]
    return run_check(
        N_("Exercise 14.4 — occluding with the mean image"),
        student_fn,
        reference_mean_occlusion_drop,
        cases,
        mistakes,
        atol=1e-6,  # drops are small numbers: compare them closely
    )
