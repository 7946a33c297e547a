"""The machinery every explorer of the series shares: controls above a plot that redraws.

Shapes: none. Each explorer returns an ``ipywidgets.VBox``; display it by leaving it as the
last expression of a cell. ipywidgets is imported only when an explorer is made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt


def explorer(draw: Callable[..., None], **controls: Any):
    """A row of controls above a plot that redraws whenever a control changes.

    Args:
        draw: called with the controls' values as keyword arguments; it draws with
            matplotlib (the figure is shown for it).
        **controls: ipywidgets controls, by the keyword ``draw`` expects.

    Returns:
        An ``ipywidgets.VBox``.
    """
    import ipywidgets as widgets

    out = widgets.Output()

    def redraw(_change: object = None) -> None:
        with out:
            out.clear_output(wait=True)
            draw(**{name: c.value for name, c in controls.items()})
            plt.show()

    for control in controls.values():
        control.observe(redraw, names="value")
        _fit(control, widgets)
    redraw()
    # The controls wrap onto a second line in a narrow window rather than squeeze a slider's
    # track to nothing (JupyterLab at 1024 px with the file browser open).
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap", gap="0 1em"))
    return widgets.VBox([row, out])


def _fit(control: Any, widgets: Any) -> None:
    """A label as wide as its text (never cut to "temperat…"), and a slider that keeps a usable
    track: at least 16em wide, so that in a narrow window it moves to the next line instead."""
    style = getattr(control, "style", None)
    if style is not None and "description_width" in style.keys:
        style.description_width = "initial"
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)):
        control.layout.min_width = control.layout.min_width or "16em"
        control.layout.flex = control.layout.flex or "0 1 22em"
