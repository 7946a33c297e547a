"""Schematics of the architectures the notebooks build, drawn with matplotlib.

Shapes: ``Ts`` source length, ``Tt`` target length (one box per token). The symbols are the
notebooks': encoder outputs ``h_j``, decoder states ``s_t``, context ``c`` (one vector without
attention) or ``c_t`` (one per step with it). matplotlib is imported here only, so ``import
attnlib`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ENCODER, DECODER, CONTEXT = "#31688e", "#35b779", "#440154"  # viridis: reads in greyscale too


def _box(ax: Any, x: float, y: float, text: str, colour: str, *, width: float = 0.8) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.3), width, 0.6, boxstyle="round,pad=0.04", fc=colour, ec="black", lw=0.8
        )
    )
    ax.text(x, y, text, ha="center", va="center", color="white", fontsize=10)


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], **style: Any) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "lw": 1.0, **style})


def seq2seq_diagram(
    source: Sequence[str] = ("3", "1", "4"),
    target: Sequence[str] = ("3", "1", "4"),
    *,
    attention: bool = False,
    ax: Any = None,
) -> Any:
    """Draw an RNN encoder-decoder, with one context vector or with attention.

    The bidirectional encoder reads ``source`` into outputs ``h_j``. Without attention only
    its final state, the context vector ``c``, reaches the decoder; with attention every
    decoder step ``s_t`` reads all the ``h_j`` through its own weights and context ``c_t``.

    Args:
        source: source tokens, one box each (``Ts``).
        target: target tokens; the decoder reads ``<sos>`` and then each but the last, and
            writes each and then ``<eos>`` (``Tt + 1`` steps).
        attention: draw the attention of every decoder step instead of the one vector.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if not source or not target:
        raise ValueError(f"expected at least one source and one target token, got {source!r} and {target!r}")
    steps = len(target) + 1
    width = len(source) + steps + 2
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.9 * width), 3.8), constrained_layout=True)
    dec_x0 = len(source) + 1.5
    for j, token in enumerate(source):
        ax.text(j, -0.9, token, ha="center", va="center", fontsize=11)
        _arrow(ax, (j, -0.65), (j, -0.3))
        _box(ax, j, 0, f"$h_{j + 1}$", ENCODER)
        if j:
            _arrow(ax, (j - 0.6, 0.1), (j - 0.4, 0.1))
            _arrow(ax, (j - 0.4, -0.1), (j - 0.6, -0.1))
    inputs, outputs = ["<sos>", *target], [*target, "<eos>"]
    out_dx = 0.22 if attention else 0.0  # with attention, c_t comes in where the output would leave
    for t in range(steps):
        x = dec_x0 + t
        ax.text(x, -0.9, inputs[t], ha="center", va="center", fontsize=9)
        _arrow(ax, (x, -0.65), (x, -0.3))
        _box(ax, x, 0, f"$s_{t + 1}$", DECODER)
        _arrow(ax, (x + out_dx, 0.3), (x + out_dx, 0.65))
        ax.text(x + out_dx, 0.9, outputs[t], ha="center", va="center", fontsize=9)
        if t:
            _arrow(ax, (x - 0.6, 0), (x - 0.4, 0))
    if attention:
        for t in range(steps):
            x = dec_x0 + t
            _box(ax, x, 1.9, f"$c_{t + 1}$", CONTEXT, width=0.7)
            _arrow(ax, (x - 0.2, 1.6), (x - 0.2, 0.3), color=CONTEXT)
            for j in range(len(source)):
                ax.plot([j, x], [0.3, 1.6], color=CONTEXT, lw=0.6, alpha=0.45)
        title = "with attention: every step $s_t$ gets its own context $c_t$ from all of $h_1 \\dots h_{T_s}$"
    else:
        c_x = (len(source) - 1 + dec_x0) / 2
        _box(ax, c_x, 1.5, "$c$", CONTEXT, width=0.6)
        _arrow(ax, (len(source) - 1 + 0.2, 0.3), (c_x - 0.2, 1.2), color=CONTEXT)
        _arrow(ax, (0.2, 0.3), (c_x - 0.3, 1.25), color=CONTEXT)
        _arrow(ax, (c_x + 0.2, 1.2), (dec_x0 - 0.2, 0.3), color=CONTEXT)
        title = "without attention: the decoder sees the source only through one context vector $c$"
    ax.text(-0.5, 2.55 if attention else 2.2, "encoder (bidirectional LSTM)", color=ENCODER, fontsize=10)
    ax.text(dec_x0 - 0.5, 2.55 if attention else 2.2, "decoder (LSTM)", color=DECODER, fontsize=10)
    ax.set(xlim=(-0.8, dec_x0 + steps - 0.2), ylim=(-1.3, 2.9 if attention else 2.5), title=title)
    ax.set_axis_off()
    return ax
