"""An LSTM traced gate by gate: the quantities notebook 06 plots.

Shapes: ``B`` batch, ``T`` steps, ``D`` input (embedding) width, ``d_hid`` hidden size.

Taught in notebook 06 (sequence models); :func:`attnlib.viz.gate_explorer` draws what
:func:`lstm_trace` returns.
"""

from __future__ import annotations

import torch
from torch import nn

from .i18n import N_

__all__ = ["TRACE_NAMES", "lstm_trace"]

#: The quantities :func:`lstm_trace` returns, in PyTorch's gate order, then the two states.
TRACE_NAMES = (
    N_("input gate i"),
    N_("forget gate f"),
    N_("candidate g"),
    N_("output gate o"),
    N_("cell state c"),
    N_("hidden state h"),
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
        ``{name: (B, T, d_hid)}`` for every name of :data:`TRACE_NAMES`.
    """
    if lstm.num_layers != 1 or lstm.bidirectional or not lstm.batch_first or lstm.proj_size:
        raise ValueError("expected a one-layer, one-direction nn.LSTM with batch_first=True")
    if x.ndim != 3 or x.shape[-1] != lstm.input_size:
        raise ValueError(f"expected x of shape (B, T, D) with D={lstm.input_size}, got {tuple(x.shape)}")
    b, t, _ = x.shape
    h = x.new_zeros(b, lstm.hidden_size)  # (B, d_hid)
    c = x.new_zeros(b, lstm.hidden_size)
    bias = 0.0
    if lstm.bias:
        bias = lstm.bias_ih_l0 + lstm.bias_hh_l0  # (4 d_hid,)
    steps: dict[str, list[torch.Tensor]] = {name: [] for name in TRACE_NAMES}
    for step in range(t):
        z = (
            x[:, step] @ lstm.weight_ih_l0.T + h @ lstm.weight_hh_l0.T + bias
        )  # (B, D) @ (D, 4 d_hid) -> (B, 4 d_hid)
        i, f, g, o = z.chunk(4, dim=1)  # 4 x (B, d_hid), PyTorch's order
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        for name, value in zip(TRACE_NAMES, (i, f, g, o, c, h), strict=True):
            steps[name].append(value)
    return {name: torch.stack(values, dim=1) for name, values in steps.items()}  # (B, T, d_hid)
