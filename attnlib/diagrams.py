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
QUERY, WEIGHT = "#b5de2b", "#21918c"  # viridis, light and mid


def _box(ax: Any, x: float, y: float, text: str, colour: str, *, width: float = 0.8) -> None:
    # Dark text on the light colour, white on the dark ones, so every label reads on a projector.
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.3), width, 0.6, boxstyle="round,pad=0.04", fc=colour, ec="black", lw=0.8
        )
    )
    ax.text(x, y, text, ha="center", va="center", color="black" if colour == QUERY else "white", fontsize=10)


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


def attention_diagram(
    tokens: Sequence[str], query: int = 0, *, projections: bool = True, ax: Any = None
) -> Any:
    """Draw one query's attention over ``T`` tokens: scores, softmax weights, weighted sum.

    Rows from the bottom: the tokens ``x_i``; their keys ``k_i``; the scores ``ω_i = q·k_i``;
    the weights ``α_i`` (one softmax over the row); the weighted values ``α_i v_i``; their sum,
    the context vector ``z``. Without projections (notebook 01) keys and values are the tokens
    themselves and the query is the query token ``x_q``.

    Args:
        tokens: the token labels, one column each (``T``).
        query: index of the token whose query is drawn.
        projections: label keys, values and query as ``k_i = x_i W_k``, ``v_i``, ``q`` (notebook
            02 on) rather than the raw tokens ``x_i``.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if not tokens:
        raise ValueError("expected at least one token, got none")
    if not 0 <= query < len(tokens):
        raise ValueError(f"expected query in [0, {len(tokens)}) (a token index), got {query}")
    t = len(tokens)
    gap = 1.25
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.5, 1.2 * t + 3.5), 5.2), constrained_layout=True)
    key = "k_{%d}" if projections else "x_{%d}"
    value = "v_{%d}" if projections else "x_{%d}"
    q = f"q = x_{{{query + 1}}} W_q" if projections else f"q = x_{{{query + 1}}}"
    rows = {"key": 1.0, "score": 2.2, "weight": 3.4, "value": 4.6}
    for i, token in enumerate(tokens):
        x = i * gap
        weight = "bold" if i == query else "normal"
        ax.text(x, 0.1, token, ha="center", va="center", fontsize=10, fontweight=weight)
        _arrow(ax, (x, 0.35), (x, rows["key"] - 0.3))
        _box(ax, x, rows["key"], f"${key % (i + 1)}$", ENCODER)
        _arrow(ax, (x, rows["key"] + 0.3), (x, rows["score"] - 0.3))
        _box(ax, x, rows["score"], f"$\\omega_{{{i + 1}}}$", QUERY)
        _arrow(ax, (x, rows["score"] + 0.3), (x, rows["weight"] - 0.3))
        _box(ax, x, rows["weight"], f"$\\alpha_{{{i + 1}}}$", WEIGHT)
        _arrow(ax, (x, rows["weight"] + 0.3), (x, rows["value"] - 0.3))
        _box(ax, x, rows["value"], f"$\\alpha_{{{i + 1}}} {value % (i + 1)}$", CONTEXT, width=1.0)
    right = (t - 1) * gap
    z_x, z_y = right / 2, 5.9
    _box(ax, z_x, z_y, "$z$", DECODER, width=0.6)
    for i in range(t):
        ax.plot([i * gap, z_x], [rows["value"] + 0.3, z_y - 0.3], color=CONTEXT, lw=0.7, alpha=0.6)
    _box(ax, -1.9, rows["score"], f"${q}$", QUERY, width=1.5 if projections else 1.3)
    ax.plot([-1.9 + 0.65, right + 0.5], [rows["score"] - 0.42] * 2, color="black", lw=0.6, ls=":")
    side = right + 0.9
    notes = {
        "key": "keys $k_i = x_i W_k$" if projections else "keys: the tokens",
        "score": "scores $\\omega_i = q \\cdot k_i$" if projections else "scores $\\omega_i = q \\cdot x_i$",
        "weight": "weights: softmax over the row",
        "value": "weighted values" + (" ($v_i = x_i W_v$)" if projections else ""),
    }
    for row, text in notes.items():
        ax.text(side, rows[row], text, va="center", fontsize=9)
    ax.text(
        z_x + 0.5,
        z_y,
        "context vector $z = \\sum_i \\alpha_i " + value.replace("_{%d}", "_i") + "$",
        va="center",
        fontsize=9,
    )
    ax.set(xlim=(-2.8, side + 2.6), ylim=(-0.3, 6.4))
    ax.set_title(f"attention of one query ({tokens[query]!r}) over {t} tokens")
    ax.set_axis_off()
    return ax


def multihead_diagram(num_heads: int = 2, *, ax: Any = None) -> Any:
    """Draw multi-head attention: project, split into heads, attend per head, merge, project.

    Each of ``Q``, ``K``, ``V`` is drawn as a bar of width ``D`` cut into ``H`` slices of
    ``Dh = D / H`` features; head ``h`` attends with slice ``h`` of all three, and the heads'
    contexts are put side by side again before ``out_proj``.

    Args:
        num_heads: ``H``, heads drawn (1 to 6).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or not 1 <= num_heads <= 6:
        raise ValueError(f"expected num_heads an int from 1 to 6 (to fit the drawing), got {num_heads!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(9.5, 5.2), constrained_layout=True)
    shades = plt.get_cmap("viridis")([0.15 + 0.7 * h / max(1, num_heads - 1) for h in range(num_heads)])
    bar_w, slice_w = 2.4, 2.4 / num_heads

    def bar(x: float, y: float, label: str) -> None:
        for h in range(num_heads):
            ax.add_patch(Rectangle((x + h * slice_w, y), slice_w, 0.45, fc=shades[h], ec="black", lw=0.8))
        ax.text(x - 0.15, y + 0.22, label, ha="right", va="center", fontsize=10)

    _box(ax, 3.9, 0.0, "$x$  (B, T, D)", ENCODER, width=2.0)
    for k, (name, proj) in enumerate([("Q", "W_q"), ("K", "W_k"), ("V", "W_v")]):
        x = 0.9 + k * 3.0
        _arrow(ax, (3.9, 0.3), (x + bar_w / 2, 1.1))
        ax.text(x + bar_w / 2 + 0.1, 0.75, f"${proj}$", fontsize=9)
        bar(x, 1.15, f"${name}$")
    ax.text(9.6, 1.37, "split: (B, T, D) → (B, H, T, Dh)", va="center", fontsize=9)
    head_w = 8.4 / num_heads
    for h in range(num_heads):
        x = 0.9 + h * head_w + head_w / 2
        for k in range(3):
            _arrow(ax, (0.9 + k * 3.0 + (h + 0.5) * slice_w, 1.6), (x, 2.45), color=shades[h], lw=0.8)
        ax.add_patch(Rectangle((x - 0.55, 2.5), 1.1, 0.6, fc=shades[h], ec="black", lw=0.8))
        ax.text(
            x,
            2.8,
            f"head {h}",
            ha="center",
            va="center",
            fontsize=9,
            color="white" if h < num_heads / 2 else "black",
        )
        _arrow(ax, (x, 3.1), (3.9 - bar_w / 2 + (h + 0.5) * slice_w, 3.65), color=shades[h], lw=0.8)
    ax.text(9.6, 2.8, "softmax$(QK^\\top/\\sqrt{D_h})V$ in every head", va="center", fontsize=9)
    bar(3.9 - bar_w / 2, 3.7, "concat")
    ax.text(9.6, 3.92, "merge: (B, H, T, Dh) → (B, T, D)", va="center", fontsize=9)
    _arrow(ax, (3.9, 4.15), (3.9, 4.55))
    _box(ax, 3.9, 4.85, "out_proj → (B, T, D)", DECODER, width=2.6)
    ax.set(xlim=(-0.6, 13.6), ylim=(-0.5, 5.4))
    ax.set_title(f"multi-head attention, H = {num_heads}: one slice of Q, K and V per head")
    ax.set_axis_off()
    return ax


def transformer_layer_diagram(*, norm_first: bool = False, ax: Any = None) -> Any:
    """Draw one encoder layer and one decoder layer, post-LN or pre-LN.

    Every sublayer is wrapped in a residual connection: post-LN (the paper) computes
    ``LayerNorm(x + sublayer(x))``, pre-LN ``x + sublayer(LayerNorm(x))``. The decoder's
    cross-attention takes its keys and values from the encoder's output (the memory).

    Args:
        norm_first: draw pre-LN instead of post-LN.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9.0, 6.4), constrained_layout=True)
    encoder = ["self-attention", "feed-forward"]
    decoder = ["masked self-attention", "cross-attention", "feed-forward"]
    tops = {}
    for x, name, sublayers, colour in (
        (0.0, "encoder layer", encoder, ENCODER),
        (5.0, "decoder layer", decoder, DECODER),
    ):
        y = 0.0
        ax.text(x, y - 0.55, "input $x$", ha="center", va="center", fontsize=10)
        for sublayer in sublayers:
            start = y
            parts = ["LayerNorm", sublayer] if norm_first else [sublayer]
            for part in parts:
                _arrow(ax, (x, y + 0.05 if part is parts[0] else y - 0.2), (x, y + 0.35))
                y += 0.65
                _box(ax, x, y, part, QUERY if part == "LayerNorm" else colour, width=2.8)
                if part == "cross-attention":
                    tops["cross"] = y  # where the memory comes in
                y += 0.3
            _arrow(ax, (x, y), (x, y + 0.4))
            y += 0.6
            ax.add_patch(plt.Circle((x, y), 0.18, fc="white", ec="black", lw=0.8))
            ax.text(x, y, "+", ha="center", va="center", fontsize=11)
            ax.plot([x, x - 1.6, x - 1.6, x - 0.18], [start + 0.1, start + 0.1, y, y], color="black", lw=0.8)
            y += 0.2
            if not norm_first:
                _arrow(ax, (x, y - 0.02), (x, y + 0.35))
                y += 0.65
                _box(ax, x, y, "LayerNorm", QUERY, width=2.8)
                y += 0.3
        ax.text(x, y + 0.4, name, ha="center", va="center", fontsize=11, color=colour, fontweight="bold")
        tops[name] = y
    ax.annotate(
        "",
        xy=(5.0 - 1.45, tops["cross"]),
        xytext=(0.6, tops["encoder layer"] + 0.15),
        arrowprops={"arrowstyle": "->", "lw": 1.2, "color": CONTEXT, "connectionstyle": "arc3,rad=0.25"},
    )
    ax.text(
        2.3,
        tops["encoder layer"] + 0.1,
        "memory: keys and\nvalues of cross-attention",
        fontsize=9,
        color=CONTEXT,
        ha="center",
    )
    note = (
        "pre-LN: x + sublayer(LayerNorm(x)); a final LayerNorm after the stack"
        if norm_first
        else ("post-LN (the paper): LayerNorm(x + sublayer(x))")
    )
    ax.set_title(note, fontsize=11)
    ax.set(xlim=(-2.4, 7.6), ylim=(-0.9, max(tops["encoder layer"], tops["decoder layer"]) + 0.8))
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def decoder_step_diagram(kind: str = "luong", *, ax: Any = None) -> Any:
    """Draw one decoder step with attention, in Bahdanau's order or in Luong's.

    Both in Luong's symbols: decoder states ``h_t``, encoder outputs ``h̄_s``, weights ``a_t``,
    context ``c_t``. Bahdanau et al. (2015) score the *previous* state ``h_{t-1}`` and feed
    ``c_t`` into the LSTM; Luong et al. (2015, §3) step the LSTM first, score the *new* state
    ``h_t``, and predict from ``h̃_t = tanh(W_c[c_t; h_t])``, which input feeding passes to the
    next step.

    Args:
        kind: ``"bahdanau"`` or ``"luong"``.
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if kind not in ("bahdanau", "luong"):
        raise ValueError(f"expected kind 'bahdanau' or 'luong', got {kind!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 6.2), constrained_layout=True)
    enc_x, dec_x, mid_x = 2.6, 0.0, 1.3
    wide = 1.9
    if kind == "bahdanau":
        query, y = (
            "$h_{t-1}$",
            {"query": 0.0, "score": 1.3, "context": 2.6, "lstm": 3.9, "state": 5.2, "out": 6.5},
        )
        _box(ax, dec_x, y["query"], query, DECODER)
        _box(ax, enc_x, y["query"], r"$\bar h_1 \dots \bar h_{T_s}$", ENCODER, width=1.4)
        ax.text(-1.45, y["lstm"], "$y_{t-1}$", ha="center", va="center", fontsize=11)
        _arrow(ax, (-1.2, y["lstm"]), (dec_x - 0.45, y["lstm"]))
        _box(ax, dec_x, y["lstm"], "LSTM", "#3b528b", width=0.9)
        _arrow(ax, (dec_x - 0.3, y["query"] + 0.3), (dec_x - 0.3, y["lstm"] - 0.3))  # h_{t-1} into the LSTM
        _arrow(ax, (mid_x - 0.3, y["context"] + 0.3), (dec_x + 0.3, y["lstm"] - 0.3), color=CONTEXT)
        _box(ax, dec_x, y["state"], "$h_t$", DECODER)
        _arrow(ax, (dec_x, y["lstm"] + 0.3), (dec_x, y["state"] - 0.3))
        _box(ax, dec_x, y["out"], r"softmax$(W h_t)$", "#3b528b", width=wide)
        _arrow(ax, (dec_x, y["state"] + 0.3), (dec_x, y["out"] - 0.3))
        title = "Bahdanau: attend with $h_{t-1}$, then step"
        note = "$c_t$ enters the LSTM with $y_{t-1}$"
    else:
        y = {"lstm": 0.0, "query": 1.3, "score": 2.6, "context": 3.9, "state": 5.2, "out": 6.5}
        ax.text(-1.55, y["lstm"], "$y_{t-1}$;\n" + r"$\tilde h_{t-1}$", ha="center", va="center", fontsize=10)
        _arrow(ax, (-1.2, y["lstm"]), (dec_x - 0.45, y["lstm"]))
        _box(ax, dec_x, y["lstm"], "LSTM", "#3b528b", width=0.9)
        _box(ax, dec_x, y["query"], "$h_t$", DECODER)
        _arrow(ax, (dec_x, y["lstm"] + 0.3), (dec_x, y["query"] - 0.3))
        _box(ax, enc_x, y["query"], r"$\bar h_1 \dots \bar h_{T_s}$", ENCODER, width=1.4)
        _box(ax, dec_x, y["state"], r"$\tilde h_t = \tanh(W_c[c_t; h_t])$", "#3b528b", width=2.3)
        _arrow(ax, (dec_x - 0.3, y["query"] + 0.3), (dec_x - 0.3, y["state"] - 0.3))  # h_t
        _arrow(ax, (mid_x - 0.2, y["context"] + 0.3), (dec_x + 0.4, y["state"] - 0.3), color=CONTEXT)
        _box(ax, dec_x, y["out"], r"softmax$(W_s \tilde h_t)$", "#3b528b", width=wide)
        _arrow(ax, (dec_x, y["state"] + 0.3), (dec_x, y["out"] - 0.3))
        _arrow(ax, (dec_x - 1.2, y["state"]), (-1.55, y["lstm"] + 0.45), ls="--", color="grey")
        ax.text(
            -1.75,
            (y["state"] + y["lstm"]) / 2,
            "input\nfeeding",
            ha="center",
            va="center",
            fontsize=8,
            color="grey",
        )
        title = "Luong: step, then attend with $h_t$"
        note = r"$c_t$ joins $h_t$ in $\tilde h_t$"
    _box(ax, mid_x, y["score"], "score, softmax: $a_t$", WEIGHT, width=wide)
    _arrow(ax, (dec_x + 0.3, y["query"] + 0.3), (mid_x - 0.3, y["score"] - 0.3), color=QUERY, lw=1.6)
    _arrow(ax, (enc_x - 0.2, y["query"] + 0.3), (mid_x + 0.3, y["score"] - 0.3))
    _box(ax, mid_x, y["context"], r"$c_t = \sum_s a_t(s) \bar h_s$", CONTEXT, width=wide)
    _arrow(ax, (mid_x, y["score"] + 0.3), (mid_x, y["context"] - 0.3))
    _arrow(ax, (enc_x + 0.1, y["query"] + 0.3), (mid_x + 0.8, y["context"] - 0.3))
    ax.text(dec_x, y["out"] + 0.6, "$y_t$", ha="center", va="center", fontsize=11)
    ax.text(enc_x - 0.6, y["out"], note, ha="left", va="center", fontsize=9)
    ax.set(xlim=(-2.3, 4.0), ylim=(-0.7, 7.4), title=title)
    ax.set_axis_off()
    return ax


def lstm_diagram(tokens: Sequence[str] = ("<sos>", "3", "5", "7"), *, ax: Any = None) -> Any:
    """Draw an LSTM language model unrolled over time, trained with teacher forcing.

    Step ``t`` reads token ``x_t`` (its embedding ``e_t``), updates the cell state ``c_t`` and
    the hidden state ``h_t`` from ``c_{t-1}`` and ``h_{t-1}``, and turns ``h_t`` into
    next-token probabilities ``p_t``, scored against token ``x_{t+1}``. Every step is the
    same cell with the same weights; only the states flow from left to right.

    Args:
        tokens: the sequence; the model reads each token but the last and predicts each but
            the first (``T = len(tokens) - 1`` steps).
        ax: axes to draw on; a new figure if None.

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if len(tokens) < 2:
        raise ValueError(f"expected at least two tokens (one to read, one to predict), got {list(tokens)!r}")
    steps = len(tokens) - 1
    gap = 1.6
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 1.5 * steps + 2.5), 4.6), constrained_layout=True)
    rows = {"embed": 0.0, "cell": 1.3, "prob": 2.6}
    for t in range(steps):
        x = t * gap
        ax.text(x, -0.9, tokens[t], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, -0.65), (x, rows["embed"] - 0.3))
        _box(ax, x, rows["embed"], f"$e_{{{t + 1}}}$", QUERY, width=0.7)
        _arrow(ax, (x, rows["embed"] + 0.3), (x, rows["cell"] - 0.3))
        _box(ax, x, rows["cell"], "LSTM", ENCODER, width=0.9)
        _arrow(ax, (x, rows["cell"] + 0.3), (x, rows["prob"] - 0.3))
        ax.text(x + 0.08, (rows["cell"] + rows["prob"]) / 2, f"$h_{{{t + 1}}}$", va="center", fontsize=9)
        _box(ax, x, rows["prob"], f"$p_{{{t + 1}}}$", DECODER, width=0.7)
        _arrow(ax, (x, rows["prob"] + 0.3), (x, rows["prob"] + 0.65))
        ax.text(
            x, rows["prob"] + 0.9, tokens[t + 1], ha="center", va="center", fontsize=10, fontweight="bold"
        )
        # the states handed to the next step: c on the upper line, h on the lower
        start = x - gap + 0.45 if t else x - gap + 0.2
        for dy, name in ((0.12, "c"), (-0.12, "h")):
            _arrow(ax, (start, rows["cell"] + dy), (x - 0.45, rows["cell"] + dy), color=CONTEXT)
            ax.text((start + x - 0.45) / 2, rows["cell"] + dy + (0.13 if dy > 0 else -0.15),
                    f"${name}_{{{t}}}$", ha="center", va="center", fontsize=8, color=CONTEXT)  # fmt: skip
    right = (steps - 1) * gap
    notes = {
        "embed": "embedding: $e_t$ = row $x_t$ of the table",
        "cell": "gates $i, f, g, o$; states $c_t$, $h_t$",
        "prob": "$p_t$ = softmax($W h_t + b$), scored against $x_{t+1}$",
    }
    for row, text in notes.items():
        ax.text(right + 0.75, rows[row], text, va="center", fontsize=9)
    ax.text(right + 0.75, rows["prob"] + 0.9, "targets: the input shifted by one", va="center", fontsize=9)
    ax.text(right + 0.75, -0.9, "inputs (teacher forcing: the true tokens)", va="center", fontsize=9)
    ax.set(xlim=(-gap + 0.1, right + 4.4), ylim=(-1.3, rows["prob"] + 1.25))
    ax.set_title(f"an LSTM unrolled over {steps} steps: one cell, the same weights at every step")
    ax.set_axis_off()
    return ax
