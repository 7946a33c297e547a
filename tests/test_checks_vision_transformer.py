"""The checks of notebook 14's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib import attention_rollout, check, occlude
from tests.student_answers import assert_todo_then_error


def right_patchify(images, patch_size):
    b, c, h, w = images.shape
    p = patch_size
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, Gh, P, Gw, P)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(b, (h // p) * (w // p), c * p * p)


def right_unfold(images, patch_size):
    return F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)


def right_rollout(weights):
    t = weights.shape[-1]
    result = torch.eye(t)
    for layer in weights:  # (H, T, T)
        a = layer.mean(0) + torch.eye(t)
        result = (a / a.sum(-1, keepdim=True)) @ result
    return result


def right_occlusion_drop(model, image, label):
    p = model.patch_embed.patch_size
    with torch.no_grad():
        base = torch.softmax(model(image[None]), -1)[0, label]
        return torch.stack(
            [
                base - torch.softmax(model(occlude(image[None], k, p)), -1)[0, label]
                for k in range(model.num_patches)
            ]
        )


def test_right_answers_pass():
    for fn, answer in [
        (check.patchify, right_patchify),
        (check.patchify, right_unfold),
        (check.rollout, right_rollout),
        (check.rollout, attention_rollout),
        (check.occlusion_drop, right_occlusion_drop),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message


def order(*perm):
    def fn(x, p):
        b, c, h, w = x.shape
        return x.reshape(b, c, h // p, p, w // p, p).permute(*perm).reshape(b, -1, c * p * p)

    return fn


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, p: x.reshape(x.shape[0], -1, x.shape[1] * p * p), "a plain reshape"),
        (order(0, 4, 2, 1, 3, 5), "numbered row by row over the grid"),
        (order(0, 2, 4, 1, 5, 3), "inside a patch, pixels go row by row"),
        (order(0, 2, 4, 3, 5, 1), "you put the channels last"),
        (lambda x, p: F.unfold(x, p, stride=p), "transpose(1, 2)"),
    ],
)
def test_patchify_explains_typical_mistakes(wrong, hint):
    verdict = check.patchify(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def product(mats, latest_left=True):
    result = mats[0]
    for a in mats[1:]:
        result = a @ result if latest_left else result @ a
    return result


def half(w):  # (L, H, T, T) -> (L, T, T): 0.5 mean + 0.5 I
    return 0.5 * w.mean(1) + 0.5 * torch.eye(w.shape[-1])


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda w: product(w.mean(1)), "add the identity"),
        (lambda w: product(w.mean(1) + torch.eye(w.shape[-1])), "renormalise each row"),
        (lambda w: product(half(w), latest_left=False), "the latest layer goes on the LEFT"),
        (
            lambda w: torch.stack(
                [product(0.5 * w[:, h] + 0.5 * torch.eye(w.shape[-1])) for h in range(w.shape[1])]
            ).mean(0),
            "average the heads of each layer first",
        ),
        (
            lambda w: product(
                (w.amax(1) + torch.eye(w.shape[-1]))
                / (w.amax(1) + torch.eye(w.shape[-1])).sum(-1, keepdim=True)
            ),
            "not their maximum",
        ),
        (lambda w: half(w)[-1], "not only the last one"),
        (lambda w: half(w).prod(0), "not element by element"),
    ],
)
def test_rollout_explains_typical_mistakes(wrong, hint):
    verdict = check.rollout(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_rollout_hand_case_is_the_one_the_unit_tests_compute():
    expected = torch.tensor([[0.45, 0.3375, 0.2125], [0.375, 0.625, 0.0], [0.225, 0.1375, 0.6375]])
    torch.testing.assert_close(attention_rollout(check.vision_transformer.HAND_WEIGHTS), expected)


def drops(score, sign=1, columns=False):
    def fn(model, image, label):
        p, n, side = model.patch_embed.patch_size, model.num_patches, model.patch_embed.grid_size
        with torch.no_grad():
            base = score(model(image[None]))[0, label]
            out = []
            for k in range(n):
                j = (k % side) * side + k // side if columns else k
                out.append(base - score(model(occlude(image[None], j, p)))[0, label])
        return sign * torch.stack(out)

    return fn


def softmax(z):
    return torch.softmax(z, -1)


def predicted_class(model, image, label):
    with torch.no_grad():
        return right_occlusion_drop(model, image, int(model(image[None]).argmax()))


def occluded_probabilities(model, image, label):
    p = model.patch_embed.patch_size
    with torch.no_grad():
        return torch.stack(
            [softmax(model(occlude(image[None], k, p)))[0, label] for k in range(model.num_patches)]
        )


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (drops(softmax, sign=-1), "original probability minus the occluded one"),
        (drops(lambda z: z), "not the logits"),
        (drops(lambda z: torch.log_softmax(z, -1)), "not log-probabilities"),
        (drops(softmax, columns=True), "you went column by column"),
        (predicted_class, "the TRUE class's probability"),
        (occluded_probabilities, "not the occluded probabilities themselves"),
    ],
)
def test_occlusion_drop_explains_typical_mistakes(wrong, hint):
    verdict = check.occlusion_drop(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_occlusion_drop_rejects_an_answer_of_zeros():
    verdict = check.occlusion_drop(lambda model, image, label: torch.zeros(model.num_patches))
    assert not verdict and verdict.status == "fail"


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


@pytest.mark.parametrize("fn", [check.patchify, check.rollout, check.occlusion_drop])
def test_a_stub_is_not_yet_and_a_crash_is_reported_in_words(fn):
    assert_todo_then_error(fn)  # a stub, and tests.student_answers.crashes

    def crashes(*args):
        tensor = args[1] if fn is check.occlusion_drop else args[0]  # the image, or the input tensor
        return tensor.view(-1, 7, 11)  # a shape error in the student's code

    verdict = fn(crashes)
    assert verdict.status == "error" and not verdict
    assert "your code raised RuntimeError" in verdict.message and "Traceback" not in verdict.message
    assert "tensor.view(-1, 7, 11)" in verdict.message


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.patchify(right_patchify)
    check.rollout(right_rollout)
    check.occlusion_drop(right_occlusion_drop)
    check.vit_attention_shape((5, 6, 8, 65, 65))
    assert torch.equal(state, torch.random.get_rng_state())
