"""The explorers' controls stay usable in a narrow JupyterLab window (1024 px, file browser open),
and a redraw updates the figure it keeps: the same picture as a new one, at once."""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable
from typing import Any

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


# --- Every explorer, every control: the figure updated in place is the figure a fresh draw makes.

_GEN = torch.Generator().manual_seed(0)
_INPUTS = torch.randn(6, 4, generator=_GEN)  # (T, D)
_KEYS = torch.randn(6, 4, generator=_GEN)
_SCORES = torch.randn(6, 6, generator=_GEN)  # (T, T)
_HEADS = torch.softmax(torch.randn(3, 6, 6, generator=_GEN), -1)  # (H, T, T)
_CROSS = torch.softmax(torch.randn(3, 3, 2, 4, 5, generator=_GEN), -1)  # (B, L, H, Tt, Ts)


@functools.cache
def _tiny_lstm_lm():
    from torch import nn

    from attnlib.tasks import digit_vocab

    class TinyLM(nn.Module):
        def __init__(self, vocab_size: int) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, 3)
            self.rnn = nn.LSTM(3, 4, batch_first=True)
            self.fc = nn.Linear(4, vocab_size)

    vocab = digit_vocab()
    torch.manual_seed(0)
    return TinyLM(len(vocab)), vocab


@functools.cache
def _tiny_copy_model():
    from attnlib import Decoder, Encoder, Seq2Seq
    from attnlib.tasks import digit_vocab

    vocab = digit_vocab()
    torch.manual_seed(0)
    return Seq2Seq(Encoder(len(vocab), 8, 1), Decoder(len(vocab), 8, 1), "cpu").eval(), vocab


@functools.cache
def _tiny_date_models():
    from attnlib import DecoderWithAttention, Encoder, Seq2Seq, date_datasets, make_attention

    _, test = date_datasets(10, n_test=5)
    torch.manual_seed(0)
    models = {}
    for name in ("general", "dot", "concat"):
        decoder = DecoderWithAttention(len(test.tgt_vocab), 8, 1, make_attention(name, 8))
        models[name] = Seq2Seq(Encoder(len(test.src_vocab), 8, 1), decoder, "cpu").eval()
    return models, test


#: One small, deterministic explorer of each kind: every public ``*_explorer`` of attnlib.viz.
EXPLORERS = {
    "query_explorer": lambda: viz.query_explorer(_INPUTS, TOKENS),
    "temperature_explorer": lambda: viz.temperature_explorer(_INPUTS, _KEYS, TOKENS),
    "mask_explorer": lambda: viz.mask_explorer(_SCORES, TOKENS),
    "dropout_explorer": lambda: viz.dropout_explorer(torch.softmax(_SCORES, -1), TOKENS),
    "head_explorer": lambda: viz.head_explorer(_HEADS, TOKENS),
    "gate_explorer": lambda: viz.gate_explorer(*_tiny_lstm_lm(), ["1357", "24680", "12"]),
    "copy_explorer": lambda: viz.copy_explorer(*_tiny_copy_model(), max_len=8),
    "alignment_explorer": lambda: viz.alignment_explorer(*_tiny_date_models(), examples=3),
    "positional_encoding_explorer": lambda: viz.positional_encoding_explorer(max_len=20, dim=8),
    "cross_attention_explorer": lambda: viz.cross_attention_explorer(
        _CROSS, [list("abcde"), list("vwxyz"), list("klm")], [list("ABCD"), list("WXYZ"), list("KL")]
    ),
    "sampling_explorer": _tiny_sampling_explorer,
    "receptive_field_explorer": lambda: viz.receptive_field_explorer(max_len=20),
    "vit_explorer": _tiny_vit_explorer,
}
#: What is typed into an explorer's text box (its prompt or source).
TYPED = {"sampling_explorer": ["7+8=", ""], "alignment_explorer": ["12 may 2021", "june 3 1999"]}


def _plain(value: Any) -> Any:
    """Numbers, strings and nested lists only: what two figures are compared by."""
    if isinstance(value, np.ma.MaskedArray):
        value = value.filled(np.nan)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _text(text: Any) -> dict[str, Any]:
    record = {
        "text": text.get_text(),
        "at": _plain(text.get_position()),
        "colour": _plain(matplotlib.colors.to_rgba(text.get_color())),
        "size": text.get_fontsize(),
        "align": (text.get_ha(), text.get_va()),
        "visible": text.get_visible(),
    }
    if isinstance(text, matplotlib.text.Annotation):  # a bar's number: the bar top it stands on
        record["xy"] = _plain(text.xy)
    return record


def _patch(patch: Any) -> dict[str, Any]:
    outline = patch.get_patch_transform().transform(patch.get_path().vertices)  # data coordinates
    return {
        "kind": type(patch).__name__,
        "outline": _plain(outline),
        "face": _plain(patch.get_facecolor()),
        "edge": _plain(patch.get_edgecolor()),
        "label": patch.get_label(),
    }


def _collection(collection: Any) -> dict[str, Any]:
    array = collection.get_array()
    return {
        "kind": type(collection).__name__,
        "offsets": _plain(np.asarray(collection.get_offsets())),
        "paths": [_plain(path.vertices) for path in collection.get_paths()],
        "array": None if array is None else _plain(array),
        "colours": _plain(collection.get_clim()) if array is not None else _plain(collection.get_facecolor()),
    }


def _fingerprint(fig: Any) -> list[dict[str, Any]]:
    """What a figure shows, axes by axes, in data coordinates (so a layout solved again does not
    count): titles, axis labels, limits, ticks, texts (bar numbers included), images, lines,
    patches (bars), collections (points, contours) and legends. The figure's own record first."""
    records: list[dict[str, Any]] = [
        {
            "suptitle": fig._suptitle.get_text() if fig._suptitle else None,
            "texts": [_text(t) for t in fig.texts],
        }
    ]
    for ax in fig.axes:
        legend = ax.get_legend()
        records.append(
            {
                "titles": [ax.get_title(loc) for loc in ("left", "center", "right")],
                "labels": (ax.get_xlabel(), ax.get_ylabel()),
                "limits": _plain([ax.get_xlim(), ax.get_ylim()]),
                "ticks": [
                    (_plain(axis.get_ticklocs()), [t.get_text() for t in axis.get_ticklabels()])
                    for axis in (ax.xaxis, ax.yaxis)
                ],
                "texts": [_text(t) for t in ax.texts],
                "images": [
                    (
                        _plain(im.get_array()),
                        _plain(im.get_clim()),
                        im.get_cmap().name,
                        _plain(im.get_extent()),
                    )
                    for im in ax.images
                ],
                "lines": [
                    (_plain(line.get_xydata()), line.get_color(), line.get_label()) for line in ax.lines
                ],
                "patches": [_patch(p) for p in ax.patches],
                "collections": [_collection(c) for c in ax.collections],
                "legend": None if legend is None else [t.get_text() for t in legend.get_texts()],
            }
        )
    return records


def _first_difference(kept: Any, fresh: Any, where: str = "figure") -> str | None:
    """Where two fingerprints differ (floats to 1e-9), or None."""
    if isinstance(kept, dict) and isinstance(fresh, dict):
        if kept.keys() != fresh.keys():
            return f"{where}: keys {sorted(kept)} != {sorted(fresh)}"
        pairs = [(kept[k], fresh[k], f"{where}.{k}") for k in kept]
    elif isinstance(kept, (list, tuple)) and isinstance(fresh, (list, tuple)):
        if len(kept) != len(fresh):
            return (
                f"{where}: {len(kept)} items, a fresh draw has {len(fresh)}: {kept!r:.200} != {fresh!r:.200}"
            )
        pairs = [(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(kept, fresh, strict=True))]
    elif isinstance(kept, float) and isinstance(fresh, (int, float)):
        same = (np.isnan(kept) and np.isnan(fresh)) or bool(np.isclose(kept, fresh, rtol=1e-9, atol=1e-12))
        return None if same else f"{where}: {kept!r} != {fresh!r}"
    else:
        return None if kept == fresh else f"{where}: {kept!r} != {fresh!r}"
    return next((d for a, b, w in pairs if (d := _first_difference(a, b, w)) is not None), None)


def _samples(control: Any, name: str) -> list[Any]:
    """At least two other values of a control (a checkbox has one), then its first value again."""
    start = control.value
    if isinstance(control, ipywidgets.Text):
        others = TYPED[name]
    elif hasattr(control, "options"):  # dropdown, toggle buttons: the next and the last option
        others = [v for v in control._options_values if v != start]
        others = list(dict.fromkeys([others[0], others[-1]]))
    elif isinstance(control, ipywidgets.Checkbox):
        others = [not start]
    elif isinstance(control, ipywidgets.FloatLogSlider):
        others = [control.base**control.min, control.base**control.max]
    else:  # a slider: both ends and the middle, the first two that are not where it starts
        middle = control.min + round((control.max - control.min) / 2 / control.step) * control.step
        others = [v for v in dict.fromkeys([control.min, control.max, middle]) if v != start][:2]
    return [*others, start]


def record_shown(monkeypatch, fingerprint: Callable[[Any], Any]) -> list:
    """Replace plt.show() and the explorers' own show with one that records ``fingerprint(fig)``
    of every figure shown (newest last) and closes it; returns that list."""
    shown = []

    def show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        shown.append(fingerprint(fig))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", show)
    monkeypatch.setattr(explorers, "_show", show)
    return shown


@pytest.fixture
def fingerprints(monkeypatch):
    """The fingerprint of every view an explorer shows, taken when shown, newest last."""
    return record_shown(monkeypatch, _fingerprint)


def _fresh_view(make, values: list[Any], shown: list, monkeypatch) -> list[dict[str, Any]]:
    """The first view of a new explorer whose controls are set to ``values`` before it draws."""
    real = explorers.explorer

    def preset(draw, **controls):
        for control, value in zip(controls.values(), values, strict=True):
            control.value = value  # in the row's order, as a reader sets them
        return real(draw, **controls)

    with monkeypatch.context() as patch:
        for module in list(sys.modules.values()):
            if module.__name__.startswith("attnlib.viz.") and getattr(module, "explorer", None) is real:
                patch.setattr(module, "explorer", preset)
        make()
    return shown[-1]


@pytest.mark.parametrize("name", sorted(n for n in viz.__all__ if n.endswith("_explorer")))
def test_every_explorer_redrawn_in_place_shows_what_a_fresh_draw_shows(name, fingerprints, monkeypatch):
    """Every control of every explorer, moved to other values and back: the kept figure, artist
    by artist, equals a new explorer's first figure at the same control values."""
    if name not in EXPLORERS:
        pytest.fail(f"viz.{name} has no small explorer in EXPLORERS: every explorer is tested here")
    box = EXPLORERS[name]()
    controls = list(box.children[0].children)
    compared = 0
    for control in controls:
        values = _samples(control, name)
        assert len(values) >= (2 if isinstance(control, ipywidgets.Checkbox) else 3), (
            "two other values, and back"
        )
        for value in values:
            control.value = value
            state = [c.value for c in controls]
            kept = fingerprints[-1]
            fresh = _fresh_view(EXPLORERS[name], state, fingerprints, monkeypatch)
            difference = _first_difference(kept, fresh)
            assert difference is None, (
                f"{name} at {state}, after {control.description}={value!r}: {difference}"
            )
            compared += 1
    assert compared >= 2 * len(controls)
    plt.close("all")
