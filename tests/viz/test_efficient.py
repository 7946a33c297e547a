"""Notebook 13's explorer redraws on every control, and its figures draw what they say."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from attnlib.viz import explorers, receptive_field_explorer, rope_score_figure, tiling_diagram


def test_receptive_field_explorer_redraws_when_any_control_changes(monkeypatch):
    shown = []

    def fake_show(fig=None):  # plt.show(), or an explorer showing the figure it keeps
        fig = fig or plt.gcf()
        images = [ax.images[0].get_array().sum() for ax in fig.axes if ax.images]
        shown.append((fig._suptitle.get_text(), [ax.get_title() for ax in fig.axes], images))
        plt.close(fig)

    monkeypatch.setattr(plt, "show", fake_show)
    monkeypatch.setattr(explorers, "_show", fake_show)
    box = receptive_field_explorer(max_len=20)
    window, layers, query = box.children[0].children
    assert len(shown) == 1 and "after L=2 layers: 5 inputs reach query 19" in shown[0][1][1]
    for control, value, expected in [
        (window, 5, "window w=5"),
        (layers, 3, "L·(w-1)+1 = 13"),
        (query, 4, "5 inputs reach query 4"),  # near the start the reach is cut at position 0
    ]:
        before = len(shown)
        control.value = value
        assert len(shown) == before + 1, "changing a control must redraw once"
        suptitle, titles, _ = shown[-1]
        assert expected in suptitle + " ".join(titles)
        assert shown[-1] != shown[-2]


def test_tiling_diagram_skips_the_tiles_above_the_diagonal():
    ax = tiling_diagram(size=8, block=2, causal=True)
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("skipped") == 6 and sum(label.startswith("S[") for label in labels) == 10
    plt.close("all")
    ax = tiling_diagram(size=7, block=3, causal=False)  # 3 x 3 tiles, the last ones partial
    assert "skipped" not in [t.get_text() for t in ax.texts]
    plt.close("all")
    with pytest.raises(ValueError, match="block >= 1"):
        tiling_diagram(block=0)


def test_tiling_diagram_has_a_legend_and_skips_the_tiles_outside_a_window():
    ax = tiling_diagram(
        size=8, block=2, window=3
    )  # 4 x 4 tiles; the band meets the diagonal and the one below
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("skipped") == 16 - 7 and sum(label.startswith("S[") for label in labels) == 7
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:4] == ["current tile", "done tile", "to come tile", "skipped tile"]
    assert "window w=3" in ax.get_title()
    plt.close("all")


def test_rope_score_figure_curves_coincide():
    fig = rope_score_figure(head_dim=16, max_offset=10)
    first, second = fig.axes[0].lines[:2]
    assert list(first.get_ydata()) == pytest.approx(list(second.get_ydata()), abs=1e-4)
    assert fig.axes[0].get_xlabel().startswith("offset")
    plt.close(fig)


def test_gpu_memory_diagram_moves_tiles_between_a_large_and_a_small_memory():
    from attnlib.viz import gpu_memory_diagram

    ax = gpu_memory_diagram()
    boxes = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    hbm, sram = boxes["HBM"], boxes["SRAM"]
    assert hbm.get_width() * hbm.get_height() > sram.get_width() * sram.get_height()
    arrows = {t.get_gid(): t for t in ax.texts if t.get_gid() in ("load", "write")}

    def inside_edge(point, box, tol=1e-9):
        x, y = point
        return (box.get_x() - tol <= x <= box.get_x() + box.get_width() + tol) and (
            box.get_y() - tol <= y <= box.get_y() + box.get_height() + tol
        )

    load, write = arrows["load"], arrows["write"]  # annotate: from xyann (tail) to xy (head)
    assert inside_edge(load.xyann, hbm) and inside_edge(load.xy, sram)
    assert inside_edge(write.xyann, sram) and inside_edge(write.xy, hbm)
    labels = " ".join(t.get_text() for t in ax.texts)
    assert "40-80 GB" in labels and "192 KB per SM" in labels and "§2.1" in ax.get_title()
    # O is written once per block only in FlashAttention-2's loop order, not in Algorithm 1's
    assert "once" not in labels or "FlashAttention-2" in labels
    assert "A100 figures from Dao et al. (2022, §2.1)" in ax.get_title()
    assert ax.figure.get_facecolor()[3] == 1.0  # opaque background
    plt.close("all")
