"""The machinery every explorer of the series shares: controls above a plot that redraws.

Shapes: none. Each explorer returns an ``ipywidgets.VBox``; display it by leaving it as the
last expression of a cell. This module imports ipywidgets; ``import attnlib.viz`` does not, until
an explorer is asked for.

Used by the explorers of notebooks 01 (dot-product attention) to 14 (attention in vision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from ..i18n import tr

__all__ = ["explorer", "kept_figure", "retitle"]


def explorer(draw: Callable[..., Any], **controls: Any):
    """A row of controls above a plot that redraws whenever a control changes.

    Args:
        draw: called with the controls' values as keyword arguments. It either draws a new
            figure with pyplot and returns None (the figure is shown for it), or returns a
            figure that it keeps and updates in place from one redraw to the next (see
            :func:`kept_figure`), which is shown instead: no new axes, colour bar or texts,
            no pyplot bookkeeping, and the layout of its first view kept, so the plot answers
            at once. A draw whose layout must change returns a new figure (a new shape) or
            turns constrained layout on again for one view (``set_layout_engine("constrained")``).
        **controls: ipywidgets controls, by the keyword ``draw`` expects.

    Returns:
        An ``ipywidgets.VBox``.
    """
    out = widgets.Output()

    def redraw(_change: object = None) -> None:
        with out:
            out.clear_output(wait=True)
            figure = draw(**{name: c.value for name, c in controls.items()})
            if figure is None:
                plt.show()
            else:
                _show(figure)
                # Its first view solved the constrained layout; later redraws keep the axes where
                # it put them rather than solve it again (a third of a redraw's time).
                figure.set_layout_engine("none")

    for control in controls.values():
        control.observe(redraw, names="value")
        _label(control)
        _fit(control, widgets)
    redraw()
    # The controls wrap onto a second line in a narrow window rather than squeeze a slider's
    # track to nothing (JupyterLab at 1024 px with the file browser open).
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap", gap="0 1em"))
    return widgets.VBox([row, out])


def kept_figure(figure: Any) -> Any:
    """Hand ``figure`` over from pyplot to an explorer's ``draw``, which keeps and updates it.

    pyplot forgets it (so it is not shown a second time when the cell ends, and showing it
    does not close it); the explorer shows it with ``display``. Returns the figure.
    """
    plt.close(figure)
    return figure


def retitle(figure: Any, suptitle: str) -> None:
    """A kept figure's new title, where its first view's layout put the old one (``suptitle()``
    would move it back to matplotlib's default place)."""
    figure._suptitle.set_text(suptitle)


def _show(figure: Any) -> None:
    """Show a kept figure in the output being written: the PNG the inline backend's
    ``plt.show()`` makes of it (the same first view), without closing it."""
    display(figure)


def _label(control: Any) -> None:
    """A control's label and placeholder in the current language (attnlib.set_language); every
    explorer's controls pass here, their English marked ``N_("...")`` where they are made."""
    for name in ("description", "placeholder"):
        english = getattr(control, name, "")
        if english:
            setattr(control, name, tr(english))


def _fit(control: Any, widgets: Any) -> None:
    """A label as wide as its text (never cut to "temperat…"), and a slider that keeps a usable
    track: at least 16em wide, so that in a narrow window it moves to the next line instead."""
    style = getattr(control, "style", None)
    if style is not None and "description_width" in style.keys:
        style.description_width = "initial"
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)):
        control.layout.min_width = control.layout.min_width or "16em"
        control.layout.flex = control.layout.flex or "0 1 22em"
