"""An LSTM's gates step by step, and an explorer for a next-token model (notebook 06).

Shapes: ``B`` batch, ``T`` steps, ``D`` input (embedding) width, ``H`` hidden size, ``V``
vocabulary. matplotlib and ipywidgets are imported inside the functions, so importing this
module stays light. Explorers go through :func:`attnlib.widgets.explorer`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .data import Vocab

#: The quantities :func:`lstm_trace` returns, in PyTorch's gate order, then the two states.
TRACE_NAMES = (
    "input gate i",
    "forget gate f",
    "candidate g",
    "output gate o",
    "cell state c",
    "hidden state h",
)


@torch.no_grad()
def lstm_trace(lstm: nn.LSTM, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Run a one-layer, batch-first ``nn.LSTM`` step by step from zero states, keeping every gate.

    The same equations as ``nn.LSTM`` (its documentation; the rows of ``weight_ih_l0`` are
    the gates ``i, f, g, o`` stacked):
    ``i, f, o = sigmoid(...)``, ``g = tanh(...)``, ``c_t = f * c_{t-1} + i * g``,
    ``h_t = o * tanh(c_t)``.

    Args:
        lstm: ``nn.LSTM`` with ``num_layers=1``, ``batch_first=True``, one direction.
        x: ``(B, T, D)`` inputs (e.g. embeddings).

    Returns:
        ``{name: (B, T, H)}`` for every name of :data:`TRACE_NAMES`.
    """
    if lstm.num_layers != 1 or lstm.bidirectional or not lstm.batch_first or lstm.proj_size:
        raise ValueError("expected a one-layer, one-direction nn.LSTM with batch_first=True")
    if x.ndim != 3 or x.shape[-1] != lstm.input_size:
        raise ValueError(f"expected x of shape (B, T, D) with D={lstm.input_size}, got {tuple(x.shape)}")
    b, t, _ = x.shape
    h = x.new_zeros(b, lstm.hidden_size)  # (B, H)
    c = x.new_zeros(b, lstm.hidden_size)
    bias = 0.0
    if lstm.bias:
        bias = lstm.bias_ih_l0 + lstm.bias_hh_l0  # (4H,)
    steps: dict[str, list[torch.Tensor]] = {name: [] for name in TRACE_NAMES}
    for step in range(t):
        z = x[:, step] @ lstm.weight_ih_l0.T + h @ lstm.weight_hh_l0.T + bias  # (B, D) @ (D, 4H) -> (B, 4H)
        i, f, g, o = z.chunk(4, dim=1)  # 4 x (B, H), PyTorch's order
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        for name, value in zip(TRACE_NAMES, (i, f, g, o, c, h), strict=True):
            steps[name].append(value)
    return {name: torch.stack(values, dim=1) for name, values in steps.items()}  # (B, T, H)


def _check_model(model: nn.Module) -> None:
    for part, kind in (("embedding", nn.Embedding), ("rnn", nn.LSTM), ("fc", nn.Linear)):
        if not isinstance(getattr(model, part, None), kind):
            raise TypeError(f"expected a model with .{part} an nn.{kind.__name__}, as in notebook 06")


def gate_explorer(model: nn.Module, vocab: Vocab, sequences: Sequence[str], *, max_temperature: float = 3.0):
    """Step through a sequence: the LSTM's gates and states, and the next-token distribution.

    Left: one quantity of :data:`TRACE_NAMES` for every hidden unit (rows) and step
    (columns), the current step outlined. Right: the probabilities of the next token after the
    current step, ``softmax(logits / temperature)``, the true next token marked.

    Args:
        model: a next-token model with ``embedding`` (``nn.Embedding``), ``rnn`` (one-layer,
            batch-first ``nn.LSTM``) and ``fc`` (``nn.Linear(H, V)``), as in notebook 06.
        vocab: its vocabulary; each sequence is read as ``<sos>`` + its symbols + ``<eos>``.
        sequences: the sequences offered by the first slider; the step slider ends at the
            chosen sequence's last step.
        max_temperature: the largest temperature on the slider.

    Returns:
        An ``ipywidgets.VBox``.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from .plotting import CMAP
    from .widgets import explorer

    _check_model(model)
    if not sequences:
        raise ValueError("expected at least one sequence, got none")
    traces, logits, labels, all_ids = [], [], [], []
    for text in sequences:  # computed once: moving a slider only redraws
        ids = torch.tensor([vocab.encode(text, sos=True, eos=True)])  # (1, T+1)
        with torch.no_grad():
            embedded = model.embedding(ids[:, :-1])  # (1, T, D): teacher forcing reads all but the last
            trace = lstm_trace(model.rnn, embedded)
            logits.append(model.fc(trace["hidden state h"])[0])  # (T, H) -> (T, V)
        traces.append({name: value[0] for name, value in trace.items()})  # (T, H) each
        labels.append(vocab.tokens(ids[0]))
        all_ids.append(ids[0].tolist())
    symbols = vocab.tokens(range(len(vocab)))

    def draw(example: int, step: int, quantity: str, temperature: float) -> None:
        tokens = labels[example]
        t = min(step, len(tokens) - 2)  # a shorter sequence stops at its last step
        values = traces[example][quantity].T  # (H, T)
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1.1, 1]}, constrained_layout=True
        )
        signed = quantity in ("candidate g", "cell state c", "hidden state h")
        lim = max(1.0, float(values.abs().max())) if quantity == "cell state c" else 1.0
        image = left.imshow(
            values.numpy(),
            aspect="auto",
            cmap="PuOr" if signed else CMAP,
            vmin=-lim if signed else 0.0,
            vmax=lim,
        )
        left.add_patch(plt.Rectangle((t - 0.5, -0.5), 1, values.shape[0], fill=False, ec="black", lw=2))
        left.set_xticks(range(values.shape[1]), tokens[:-1])
        left.set(xlabel="input token (step)", ylabel="hidden unit", title=f"{quantity}, every step")
        fig.colorbar(image, ax=left, shrink=0.8)
        probs = torch.softmax(logits[example][t] / temperature, dim=-1)  # (V,)
        gold = all_ids[example][t + 1]
        colours = ["#fde725" if i == gold else "#21918c" for i in range(len(symbols))]
        right.bar(range(len(symbols)), probs.numpy(), color=colours)
        right.set_xticks(range(len(symbols)), symbols, rotation=90)
        right.set_ylim(0, 1)
        right.set(xlabel="next token (yellow: the true one)", ylabel="probability")
        right.set_title(f"after {tokens[t]!r} (step {t + 1}), temperature {temperature:.2f}")
        fig.suptitle("".join(tokens[1:-1]))

    def last_step(example: int) -> int:
        return len(labels[example]) - 2  # steps read <sos> and the symbols, not <eos>

    example = widgets.IntSlider(value=0, min=0, max=len(sequences) - 1, description="sequence")
    step = widgets.IntSlider(value=min(2, last_step(0)), min=0, max=last_step(0), description="step")

    # The step slider ends at the sequence's last step (a step past it would draw nothing new).
    # Registered before the explorer's redraw, so that the redraw sees the clamped step.
    def fit_step(change: dict) -> None:
        step.max = last_step(change["new"])

    example.observe(fit_step, names="value")
    return explorer(
        draw,
        example=example,
        step=step,
        quantity=widgets.Dropdown(options=list(TRACE_NAMES), value="cell state c", description="show"),
        temperature=widgets.FloatSlider(
            value=1.0,
            min=0.1,
            max=max_temperature,
            step=0.1,
            description="temperature",
            continuous_update=True,
        ),
    )
