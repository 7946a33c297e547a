"""The explorers' controls stay usable in a narrow JupyterLab window (1024 px, file browser open),
and a redraw updates the figure it keeps: the same picture as a new one, at once."""

from __future__ import annotations

import io

import ipywidgets
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from attnlib import viz
from attnlib.viz import explorers

TOKENS = ["your", "journey", "starts", "with", "one", "step"]


def test_the_controls_wrap_and_no_label_is_cut():
    explorers = [
        viz.temperature_explorer(torch.randn(6, 4), torch.randn(6, 4), TOKENS),
        viz.receptive_field_explorer(),
        viz.dropout_explorer(torch.softmax(torch.randn(6, 6), -1), TOKENS),
    ]
    for box in explorers:
        row = box.children[0]
        assert row.layout.flex_flow == "row wrap"  # a narrow window moves controls to a new line
        for control in row.children:
            if "description_width" in control.style.keys:
                assert control.style.description_width == "initial"  # "temperature", not "temperat…"
            if "Slider" in type(control).__name__:
                assert control.layout.min_width == "16em"  # a track to drag, not a few pixels


def _png(fig) -> np.ndarray:
    """The figure as the inline backend renders it (``IPython.core.pylabtools.print_figure``)."""
    buffer = io.BytesIO()
    fig.canvas.print_figure(
        buffer, format="png", dpi=fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor()
    )
    return plt.imread(io.BytesIO(buffer.getvalue()))


@pytest.fixture
def pngs(monkeypatch):
    """(figure, PNG) for every view an explorer shows, rendered when shown, newest last."""
    shown = []

    def show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        shown.append((fig, _png(fig)))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", show)
    monkeypatch.setattr(explorers, "_show", show)
    return shown


def _tiny_vit_explorer():
    from attnlib import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(embed_dim=16, depth=2, num_heads=2).eval()
    return viz.vit_explorer(model, torch.rand(3, 1, 8, 8), torch.tensor([1, 2, 3]))


def _tiny_sampling_explorer():
    from attnlib import GPT, Vocab

    vocab = Vocab("0123456789+=")
    torch.manual_seed(0)
    return viz.sampling_explorer(GPT(len(vocab), 16, dim=16, n_heads=2, n_layers=1), vocab, "12+3")


@pytest.mark.parametrize(
    "make",
    [
        lambda: viz.query_explorer(torch.randn(6, 4), TOKENS),
        lambda: viz.temperature_explorer(torch.randn(6, 4), torch.randn(6, 4), TOKENS),
        lambda: viz.dropout_explorer(torch.softmax(torch.randn(6, 6), -1), TOKENS),
        lambda: viz.head_explorer(torch.softmax(torch.randn(3, 6, 6), -1), TOKENS),
        lambda: viz.receptive_field_explorer(max_len=20),
        lambda: viz.positional_encoding_explorer(max_len=20, dim=8),  # its position slider
        _tiny_vit_explorer,
        _tiny_sampling_explorer,
    ],
)
def test_a_redraw_updates_the_kept_figure_and_going_back_shows_the_first_view(make, pngs):
    box = make()
    # the first control, but the prompt (a Text) and the pair (a new pair's curves span another
    # range, so its layout is solved again) are passed over for the next
    (first, first_png), control = pngs[0], box.children[0].children[0]
    if isinstance(control, ipywidgets.Text) or control.description == "pair i":
        control = box.children[0].children[1]
    start = control.value
    if hasattr(control, "options"):  # a dropdown or toggle buttons: another option
        control.value = next(v for v in control._options_values if v != start)
    else:  # a slider: one step
        control.value = control.value + control.step
    assert pngs[-1][0] is first, "a redraw updates the kept figure instead of drawing a new one"
    assert not np.array_equal(pngs[-1][1], first_png), "and shows the new setting"
    control.value = start
    assert np.array_equal(pngs[-1][1], first_png), "back at the first setting, the first view exactly"
    assert plt.get_fignums() == [], "kept figures are not left to pyplot (nor shown twice)"


def test_replot_attention_in_place_draws_what_a_new_figure_draws():
    from attnlib.viz.heatmaps import plot_attention, replot_attention

    torch.manual_seed(0)
    first, second = torch.softmax(torch.randn(2, 6, 6), -1)
    options = {"annotate": True, "vmax": 1.0}
    kept = replot_attention(None, first, TOKENS, suptitle="first", **options)
    _png(kept)  # shown once, as an explorer does
    assert replot_attention(kept, second, TOKENS, suptitle="second", **options) is kept
    new = plot_attention(second, TOKENS, suptitle="second", **options)
    # the same picture: constrained layout, solved again from other starting positions, may move
    # an axis by a fraction of a pixel (mean difference 3e-4); other weights differ by 3e-2
    assert np.abs(_png(kept) - _png(new)).mean() < 2e-3
    other_labels = replot_attention(kept, second, [t.upper() for t in TOKENS], **options)
    assert other_labels is not kept, "new labels need a new layout, so a new figure"
    plt.close("all")
