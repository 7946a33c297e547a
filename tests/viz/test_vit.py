"""Notebook 14's figures draw what they say, and its explorer redraws on every control."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from attnlib import VisionTransformer
from attnlib.viz import (
    draw_patch_map,
    explorers,
    plot_class_attention,
    token_labels,
    vit_diagram,
    vit_explorer,
)
from attnlib.viz.vit import draw_image, plot_position_similarity


@pytest.fixture
def model() -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(embed_dim=16, depth=2, num_heads=2).eval()


def test_patch_map_is_the_upsampled_grid():
    _, ax = plt.subplots()
    values = torch.arange(16.0)
    shown = draw_patch_map(ax, torch.rand(8, 8), values)
    drawn = torch.as_tensor(shown.get_array())
    assert drawn.shape == (8, 8)
    assert drawn[0, 0] == 0 and drawn[1, 1] == 0 and drawn[0, 2] == 1 and drawn[7, 7] == 15
    assert [t.get_text() for t in ax.texts][:2] == ["p0", "p1"]  # counted from 0, like occlude
    with pytest.raises(ValueError, match="square grid of patches"):
        draw_patch_map(ax, torch.rand(8, 8), torch.rand(5))
    plt.close("all")


def test_figures(model):
    model(torch.rand(1, 1, 8, 8))
    fig = plot_class_attention(torch.rand(8, 8), model.attention_weights()[0])
    titles = [ax.get_title() for ax in fig.axes]
    assert "layer 1, head 1" in titles and "rollout (all layers)" in titles
    ax = vit_diagram()
    assert {"cls", "p0", "p3", "head"} <= {t.get_text() for t in ax.texts}
    assert token_labels(4) == ["cls", "p0", "p1", "p2", "p3"]
    plt.close("all")


def test_explorer_redraws_when_any_control_changes(model, monkeypatch):
    shown = []

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        shown.append(" | ".join([fig._suptitle.get_text(), *(ax.get_title() for ax in fig.axes)]))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    images = torch.rand(3, 1, 8, 8)
    box = vit_explorer(model, images, torch.tensor([1, 2, 3]))
    example, shown_map, occluded = box.children[0].children
    assert len(shown) == 1 and "rollout" in shown[0]
    for control, value, expected in [
        (example, 2, "test image 2"),
        (shown_map, (1, 0), "layer 1, head 0"),
        (shown_map, (0, -1), "layer 0, mean of heads"),
        (occluded, 5, "p5 occluded"),
    ]:
        before = len(shown)
        control.value = value
        assert len(shown) == before + 1, "changing a control must redraw once"
        assert expected in shown[-1]
        assert shown[-1] != shown[-2]


def test_explorer_needs_one_channel_images_and_labels(model):
    with pytest.raises(ValueError, match=r"expected images \(B, 1, Hi, Wi\) and labels \(B,\)"):
        vit_explorer(model, torch.rand(3, 8, 8), torch.tensor([1, 2, 3]))


def test_explorer_draws_in_eval_mode_and_gives_the_model_its_mode_back(model, monkeypatch):
    modes = []
    monkeypatch.setattr(plt, "show", lambda: plt.close("all"))
    monkeypatch.setattr(explorers, "_show", lambda fig: None)
    model.train()
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    box = vit_explorer(model, torch.rand(2, 1, 8, 8), torch.tensor([1, 2]))
    box.children[0].children[0].value = 1  # another image: one more redraw
    # one forward pass per image shown (the explorer keeps its results), each in eval mode
    assert len(modes) == 2 and not any(modes), "every forward pass of a redraw runs in eval mode"
    assert all(m.training for m in model.modules()), "the student's model keeps its own mode"


def test_images_and_maps_share_one_tick_style():
    _, (a1, a2) = plt.subplots(1, 2)
    draw_image(a1, torch.rand(8, 8), patch_size=2)
    draw_patch_map(a2, torch.rand(8, 8), torch.rand(16))
    for axis in ("get_xticks", "get_yticks"):
        assert list(getattr(a1, axis)()) == list(getattr(a2, axis)()) == [0, 2, 4, 6]
    assert a1.get_xlabel() == a2.get_xlabel() == "pixel column"
    plt.close("all")


def test_position_similarity_tiles_are_cosine_similarities():
    pe = torch.randn(1, 17, 8)
    fig = plot_position_similarity(pe)
    tiles = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"][:16]
    unit = torch.nn.functional.normalize(pe[0, 1:], dim=-1)
    for k in (0, 5, 15):
        drawn = torch.as_tensor(tiles[k].images[0].get_array())  # (4, 4)
        torch.testing.assert_close(drawn.flatten(), unit @ unit[k], rtol=1e-5, atol=1e-5)
        assert drawn.flatten()[k] == pytest.approx(1.0, abs=1e-5)  # each patch is itself
    with pytest.raises(ValueError, match="1 \\+ G\\*G"):
        plot_position_similarity(torch.randn(1, 16, 8))
    plt.close("all")
