"""Exercise checks for notebook 14 (the vision transformer); see :mod:`attnlib.check._core`.

Shapes: ``B`` batch, ``C`` channels, ``Hi``/``Wi`` image side, ``P`` patch side, ``N`` patches,
``T = N + 1`` tokens, ``L`` layers, ``H`` heads.

Images are ``torch.arange`` numbers, so a patch taken from the wrong place reads as wrong pixel
indices. Models are built inside ``torch.random.fork_rng``, so a check never moves the
caller's global seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import VisionTransformer, attention_rollout, occlude
from .. import patchify as reference_patchify
from ._core import Case, Mistake, Verdict, check_answer, numbered, run_check

__all__ = ["occlusion_drop", "patchify", "rollout", "vit_attention_shape"]


def _grid_split(x: torch.Tensor, p: int) -> torch.Tensor:
    b, c, h, w = x.shape
    return x.reshape(b, c, h // p, p, w // p, p)  # (B, C, Gh, P, Gw, P)


def _patches_in_order(order: tuple[int, ...]) -> Callable[[torch.Tensor, int], torch.Tensor]:
    """A patchify that permutes the split axes into ``order`` before flattening (a slip unless right)."""

    def fn(x: torch.Tensor, p: int) -> torch.Tensor:
        b, c, h, w = x.shape
        return _grid_split(x, p).permute(*order).reshape(b, (h // p) * (w // p), c * p * p)

    return fn


def patchify(student_fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 14.1: ``student_fn(images, patch_size)``: ``(B, C, Hi, Wi)`` -> ``(B, N, C*P*P)``.

    Patches row by row over the grid; each flattened channel first, then row, then column
    (the order of ``F.unfold`` and of a ``Conv2d`` kernel).
    """
    cases = [
        Case("one 4x4 image, P=2", (numbered(1, 1, 4, 4), 2)),
        Case("two 8x8 images, P=4", (numbered(2, 1, 8, 8), 4)),
        Case("a 4x6 image (not square), P=2", (numbered(1, 1, 4, 6), 2)),
        Case("three channels, 4x4, P=2", (numbered(1, 3, 4, 4), 2)),
        Case("two channels, 6x6, P=3", (numbered(2, 2, 6, 6), 3)),
    ]
    mistakes = [
        Mistake(
            "a plain reshape to (B, N, C*P*P) cuts each row of pixels into pieces, not the image into "
            "squares: split the rows into (Gh, P) and the columns into (Gw, P), then permute",
            lambda x, p: x.reshape(x.shape[0], -1, x.shape[1] * p * p),
        ),
        Mistake(
            "the patches are numbered row by row over the grid: the grid row (Gh) must come before the "
            "grid column (Gw)",
            _patches_in_order((0, 4, 2, 1, 3, 5)),
        ),
        Mistake(
            "inside a patch, pixels go row by row: the pixel row (the P after Gh) before the pixel column",
            _patches_in_order((0, 2, 4, 1, 5, 3)),
        ),
        Mistake(
            "flatten each patch channel first, (C, P, P), the order of a Conv2d kernel and of F.unfold; "
            "you put the channels last",
            _patches_in_order((0, 2, 4, 3, 5, 1)),
        ),
        Mistake(
            "F.unfold returns (B, C*P*P, N), one column per patch: transpose(1, 2) to get one row per patch",
            lambda x, p: torch.nn.functional.unfold(x, p, stride=p),
        ),
    ]
    return run_check(
        "Exercise 14.1 — cut an image into patches", student_fn, reference_patchify, cases, mistakes
    )


# ---------------------------------------------------------------------------------------------
# Exercise 14.2: attention rollout
# ---------------------------------------------------------------------------------------------

HAND_WEIGHTS = torch.tensor(
    [
        [
            [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.6]],
            [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.2, 0.8]],
        ],
        [
            [[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]],
            [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]],
        ],
    ]
)  # (L, H, T, T) = (2, 2, 3, 3)


def _softmax_weights(seed: int, *shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g) * 2, dim=-1)


def _product(layers: torch.Tensor, *, latest_left: bool = True) -> torch.Tensor:
    result = layers[0]
    for a in layers[1:]:
        result = a @ result if latest_left else result @ a
    return result


def _mixed(w: torch.Tensor) -> torch.Tensor:
    eye = torch.eye(w.shape[-1])
    return 0.5 * w.mean(1) + 0.5 * eye  # (L, T, T)


def rollout(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Exercise 14.2: ``student_fn(weights)``: ``(L, H, T, T)`` -> ``(T, T)``, attention rollout."""
    cases = [
        Case("the hand example: 2 layers, 2 heads, 3 tokens", (HAND_WEIGHTS,)),
        Case("3 layers, 4 heads, 5 tokens", (_softmax_weights(0, 3, 4, 5, 5),)),
        Case("one head, 4 layers, 4 tokens", (_softmax_weights(1, 4, 1, 4, 4),)),
        Case("one layer, 2 heads, 3 tokens", (_softmax_weights(2, 1, 2, 3, 3),)),
    ]
    eye = torch.eye
    mistakes = [
        Mistake(
            "add the identity for the residual connection: each layer's token keeps its own vector too "
            "(0.5 * mean of heads + 0.5 * I)",
            lambda w: _product(w.mean(1)),
        ),
        Mistake(
            "after adding the identity, renormalise each row to sum to 1 (here: divide by 2); without it "
            "the rows sum to 2 per layer",
            lambda w: _product(w.mean(1) + eye(w.shape[-1])),
        ),
        Mistake(
            "the order of the product: the latest layer goes on the LEFT, R = A_L ... A_2 A_1 (each layer "
            "reads the tokens the layer before produced)",
            lambda w: _product(_mixed(w), latest_left=False),
        ),
        Mistake(
            "average the heads of each layer first, then multiply the layers: a rollout per head, averaged "
            "at the end, is another (not the standard) quantity",
            lambda w: torch.stack(
                [_product(0.5 * w[:, h] + 0.5 * eye(w.shape[-1])) for h in range(w.shape[1])]
            ).mean(0),
        ),
        Mistake(
            "combine the heads with their mean, not their maximum",
            lambda w: _product(
                (w.amax(1) + eye(w.shape[-1])) / (w.amax(1) + eye(w.shape[-1])).sum(-1, keepdim=True)
            ),
        ),
        Mistake("multiply every layer, not only the last one", lambda w: _mixed(w)[-1]),
        Mistake(
            "the layers combine by matrix product (@), not element by element (*)",
            lambda w: _mixed(w).prod(0),
        ),
    ]
    return run_check("Exercise 14.2 — attention rollout", student_fn, attention_rollout, cases, mistakes)


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
    pixels = "N counts patches, not pixels per patch: a 32x32 image in 4x4 patches"
    side = "the grid has 8 patches per side, so 8 x 8 patches, plus the class token"
    square = "attention weights compare tokens with tokens: the last two axes are (T, T)"
    hints = {
        (b, layers, heads, t - 1, t - 1): "the class token is a token too: it attends and is attended to",
        (b, layers, heads, 16, 16): pixels,
        (b, layers, heads, 17, 17): pixels,
        (b, layers, heads, 48, 48): pixels + " (the 3 channels go into each token's numbers, not into T)",
        (b, layers, heads, 49, 49): pixels + " (the 3 channels go into each token's numbers, not into T)",
        (b, layers, heads, 8, 8): side,
        (b, layers, heads, 9, 9): side,
        (b, layers, t, t): "every head keeps its own map: (B, L, H, T, T)",
        (
            b,
            heads,
            layers,
            t,
            t,
        ): "attention_weights() stacks the layers, then each layer's heads: (B, L, H, T, T)",
        (b, layers, heads, t, 64): square,
        (b, layers, heads, t, 8): square,
    }
    generic = (
        "count the patches of a 32x32 image cut into 4x4 squares, add the class token; "
        "one map per layer and head"
    )
    key = tuple(answer) if isinstance(answer, (tuple, list, torch.Size)) else None
    return check_answer(
        "Exercise 14.3 — the shape of the attention weights", answer, expected, hints.get(key, generic)
    )


# ---------------------------------------------------------------------------------------------
# Exercise 14.4: occlusion, the ablation that attention maps are compared with
# ---------------------------------------------------------------------------------------------


def _case(patch_size: int, seed: int, image: torch.Tensor) -> Case:
    """A small random model with sharpened weights (so occlusion moves its probabilities visibly)
    and, as the label, its SECOND most likely class for ``image`` (so the predicted class differs)."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        model = VisionTransformer(8, patch_size, 1, 10, embed_dim=16, depth=2, num_heads=2).eval()
        model.patch_embed.proj.weight.mul_(4.0)
        model.head.weight.mul_(4.0)
        model.pos_embed.normal_()
        label = int(model(image.unsqueeze(0))[0].argsort(descending=True)[1])
    n = model.num_patches
    return Case(f"{patch_size}x{patch_size} patches (N={n}), label {label}", (model, image, label))


def reference_occlusion_drop(model: VisionTransformer, image: torch.Tensor, label: int) -> torch.Tensor:
    """``(N,)``: the true class's probability minus that probability with patch ``k`` set to 0."""
    p, n = model.patch_embed.patch_size, model.num_patches
    images = image.unsqueeze(0).expand(n, -1, -1, -1)  # (N, C, Hi, Wi): one copy per patch
    with torch.no_grad():
        original = torch.softmax(model(image.unsqueeze(0)), dim=-1)[0, label]
        occluded = torch.softmax(model(occlude(images, torch.arange(n), p)), dim=-1)[:, label]  # (N,)
    return original - occluded


def _drops_with(score: Callable[[torch.Tensor], torch.Tensor], *, order: str = "rows", sign: int = 1):
    """A slip: another score than the true class's probability, another patch order, or a flipped sign."""

    def fn(model, image, label):
        p, n = model.patch_embed.patch_size, model.num_patches
        side = model.patch_embed.grid_size
        index = torch.arange(n)
        if order == "columns":
            index = (index % side) * side + index // side
        with torch.no_grad():
            original = score(model(image.unsqueeze(0)))[0, label]
            occluded = score(model(occlude(image.unsqueeze(0).expand(n, -1, -1, -1), index, p)))[:, label]
        return sign * (original - occluded)

    return fn


def _occluded_probabilities(model, image, label):
    return reference_occlusion_drop(model, image, label) * -1 + _probability(model, image, label)


def _probability(model, image, label):
    with torch.no_grad():
        return torch.softmax(model(image.unsqueeze(0)), dim=-1)[0, label]


def _predicted_class_drop(model, image, label):
    with torch.no_grad():
        predicted = int(model(image.unsqueeze(0)).argmax())
    return reference_occlusion_drop(model, image, predicted)


def occlusion_drop(student_fn: Callable[[VisionTransformer, torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Exercise 14.4: ``student_fn(model, image, label)`` -> ``(N,)`` drop of the true class's
    probability when each patch in turn is set to 0 (patches row by row)."""
    g = torch.Generator().manual_seed(0)
    images = torch.rand(3, 1, 8, 8, generator=g)
    cases = [_case(4, 0, images[0]), _case(2, 1, images[1]), _case(2, 2, images[2])]
    softmax = lambda z: torch.softmax(z, dim=-1)  # noqa: E731
    mistakes = [
        Mistake(
            "a drop is the original probability minus the occluded one (positive when the patch helped)",
            _drops_with(softmax, sign=-1),
        ),
        Mistake("compare probabilities (softmax of the logits), not the logits", _drops_with(lambda z: z)),
        Mistake(
            "compare probabilities, not log-probabilities",
            _drops_with(lambda z: torch.log_softmax(z, dim=-1)),
        ),
        Mistake(
            "patch k sits in grid row k // Gw and column k % Gw (row by row); you went column by column",
            _drops_with(softmax, order="columns"),
        ),
        Mistake(
            "measure the TRUE class's probability (the label argument), not the predicted class's",
            _predicted_class_drop,
        ),
        Mistake(
            "return the drop, original minus occluded, not the occluded probabilities themselves",
            _occluded_probabilities,
        ),
    ]
    return run_check(
        "Exercise 14.4 — what occluding each patch costs",
        student_fn,
        reference_occlusion_drop,
        cases,
        mistakes,
        atol=1e-6,  # drops are small numbers: compare them closely
    )
