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
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), out])
