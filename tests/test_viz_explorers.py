"""The explorers' controls stay usable in a narrow JupyterLab window (1024 px, file browser open)."""

from __future__ import annotations

import matplotlib
import torch

matplotlib.use("Agg")

from attnlib import viz

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
