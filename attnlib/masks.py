"""Attention masks: boolean, True = may attend.

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length, ``T`` both (self-attention).

Taught in notebook 03 (masking); sliding windows and receptive fields in notebook 13 (attention
made efficient).

Every mask in attnlib means exactly what a boolean ``attn_mask`` means to
``torch.nn.functional.scaled_dot_product_attention``: **True marks a key the query may
attend to**, and a mask only has to broadcast to the scores' shape ``(B, H, Tq, Tk)``
(or ``(B, Tq, Tk)`` for single-head attention). Masks combine with ``&``.

The opposite convention, True (or 1) = *masked out*, is used by ``nn.MultiheadAttention``
(``attn_mask``, ``key_padding_mask``), by ``torch.triu(..., diagonal=1)`` causal masks and by
the ``torch.triu`` masks of Raschka (2024, ch. 3). Convert at the boundary with :func:`from_masked_out` and
:func:`to_masked_out`; both are a single ``~``.

Sliding windows (notebook 13): :func:`sliding_window_mask` keeps the last ``w`` keys of each
query, and :func:`receptive_field` shows how far information travels through ``L`` such layers.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_rank, require_tensor
from .i18n import tr

__all__ = [
    "causal_mask",
    "combine_masks",
    "from_masked_out",
    "length_mask",
    "padding_mask",
    "receptive_field",
    "require_bool_mask",
    "sliding_window_mask",
    "to_masked_out",
]


def causal_mask(size: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular mask: query ``i`` may attend to keys ``0..i``.

    Args:
        size: sequence length ``T``.
        device: where to allocate the mask.

    Returns:
        ``(T, T)`` bool tensor, True on and below the diagonal.
    """
    require_positive_int("size", size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()  # (T, T)


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mask out the padding positions of a batch of token ids.

    Args:
        tokens: ``(B, Tk)`` integer token ids.
        pad_id: the id used for padding.

    Returns:
        ``(B, 1, 1, Tk)`` bool tensor, False where ``tokens == pad_id``; it broadcasts over
        heads and queries. For single-head ``(B, Tq, Tk)`` scores use ``mask[:, 0]``.
    """
    require_rank("tokens", tokens, (2,), "(B, Tk)")
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise TypeError(f"expected integer token ids, got dtype {tokens.dtype}")
    return (tokens != pad_id)[:, None, None, :]  # (B, Tk) -> (B, 1, 1, Tk)


def length_mask(lengths: torch.Tensor | list[int], max_len: int | None = None) -> torch.Tensor:
    """Mask out positions at or beyond each sequence's length.

    Args:
        lengths: ``(B,)`` number of real tokens in each sequence.
        max_len: padded length ``Tk``; defaults to ``max(lengths)``.

    Returns:
        ``(B, 1, 1, Tk)`` bool tensor, True for the first ``lengths[b]`` positions.
    """
    lengths = torch.as_tensor(lengths)
    require_rank("lengths", lengths, (1,), "(B,)")
    if lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise TypeError(f"expected integer lengths, got dtype {lengths.dtype}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_len = longest if max_len is None else max_len
    if max_len < longest:
        raise ValueError(f"max_len={max_len} is shorter than the longest sequence ({longest})")
    positions = torch.arange(max_len, device=lengths.device)  # (Tk,)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, Tk)


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Combine masks with ``&``: a key is visible only if every mask allows it.

    ``None`` entries are skipped; if all are ``None`` the result is ``None`` (no mask).
    The masks must broadcast against each other.
    """
    present = [require_bool_mask(m) for m in masks if m is not None]
    if not present:
        return None
    try:
        shape = torch.broadcast_shapes(*(m.shape for m in present))
    except RuntimeError:
        shapes = ", ".join(str(tuple(m.shape)) for m in present)
        raise ValueError(f"masks of shapes {shapes} do not broadcast against each other") from None
    combined = present[0].expand(shape)
    for m in present[1:]:
        combined = combined & m
    return combined


def from_masked_out(masked_out: torch.Tensor) -> torch.Tensor:
    """Convert a True/1 = *masked out* mask (Raschka (2024, ch. 3), ``nn.MultiheadAttention``) to attnlib's.

    Accepts bool, integer or 0/1 float tensors and returns ``~masked_out.bool()``.
    """
    require_tensor("masked_out", masked_out)
    if masked_out.dtype != torch.bool:
        values = masked_out.unique()
        if not bool(((values == 0) | (values == 1)).all()):
            raise ValueError(f"expected a 0/1 mask, got values {values.tolist()[:6]}")
    return ~masked_out.bool()


def to_masked_out(mask: torch.Tensor) -> torch.Tensor:
    """Convert an attnlib mask (True = may attend) to True = masked out, e.g. for
    ``nn.MultiheadAttention(attn_mask=..., key_padding_mask=...)``."""
    return ~require_bool_mask(mask)


def require_bool_mask(mask: object) -> torch.Tensor:
    """Raise ``TypeError`` unless ``mask`` is a bool tensor, with a hint for 0/1 masks."""
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            tr(
                "expected a boolean mask (True = may attend), got dtype {dtype}; "
                "for a 0/1 mask that marks positions to keep use mask.bool(); for one that marks "
                "masked-out positions (True/1 = hide) use attnlib.from_masked_out(mask)"
            ).format(dtype=mask.dtype)
        )
    return mask


def sliding_window_mask(size: int, window: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Causal sliding window: query ``i`` may attend to keys ``i - window + 1 .. i``.

    ``window`` counts the visible keys, the query's own position included; near the start a
    query sees fewer. With ``window >= size`` it is :func:`attnlib.causal_mask`.

    Args:
        size: sequence length ``T``.
        window: keys each query sees, ``w >= 1``.
        device: where to allocate the mask.

    Returns:
        ``(T, T)`` bool tensor, True = may attend.
    """
    require_positive_int("window", window)
    pos = torch.arange(require_positive_int("size", size), device=device)
    return causal_mask(size, device=device) & (pos[None, :] > pos[:, None] - window)  # (T, T)


def receptive_field(mask: torch.Tensor, n_layers: int) -> torch.Tensor:
    """Which inputs can influence which outputs through ``n_layers`` layers that all use ``mask``.

    Output ``i`` of one layer mixes the inputs ``j`` with ``mask[i, j]``; through ``L`` layers it
    reaches ``j`` when a chain ``i -> k1 -> ... -> j`` of allowed steps exists: the boolean
    matrix power ``mask^L``.

    Args:
        mask: ``(T, T)`` bool, True = may attend (its diagonal should be True, as a residual
            connection or attending to oneself makes it).
        n_layers: ``L >= 1``.

    Returns:
        ``(T, T)`` bool, True where input ``j`` reaches output ``i``.
    """
    require_rank("mask", require_bool_mask(mask), (2,), "(T, T)")
    require_positive_int("n_layers", n_layers)
    step = mask.float()
    reach = step
    for _ in range(n_layers - 1):
        reach = ((reach @ step) > 0).float()  # (T, T) @ (T, T) -> (T, T): one more allowed step
    return reach.bool()
