"""Input validation shared by every attnlib module: the ``require_*`` functions.

Shapes: ``B`` batch, ``T`` tokens, ``D`` feature width, ``V`` vocabulary.

Taught in no notebook on its own: its errors are what notebook 03 (masking) and the later ones
show when an input does not fit.

Each one raises before any matmul can fail obscurely, and names what was expected and what
came, e.g. ``expected x of shape (B, T, D) with D=64, got (2, 6, 3)``. The ones that
check a value return it, so a constructor can write
``self.d_in = require_positive_int("d_in", d_in)``; the shape checks return None.
"""

from __future__ import annotations

import torch

from .i18n import tr

__all__ = [
    "require_divisible",
    "require_features",
    "require_length",
    "require_positive_int",
    "require_probability",
    "require_rank",
    "require_tensor",
    "require_token_ids",
]


def require_tensor(name: str, x: object) -> torch.Tensor:
    """Raise ``TypeError`` unless ``x`` is a tensor; return it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            tr("expected {name} to be a torch.Tensor, got {kind}").format(name=name, kind=type(x).__name__)
        )
    return x


def require_rank(name: str, x: torch.Tensor, ranks: tuple[int, ...], layout: str) -> None:
    """Raise unless ``x.ndim`` is one of ``ranks``; ``layout`` spells the expected shape."""
    require_tensor(name, x)
    if x.ndim not in ranks:
        raise ValueError(
            tr("expected {name} of shape {layout}, got {shape} ({ndim}-D)").format(
                name=name, layout=layout, shape=tuple(x.shape), ndim=x.ndim
            )
        )


def require_features(name: str, x: torch.Tensor, size: int, layout: str, letter: str = "D") -> None:
    """Raise unless the last dimension of ``x`` is ``size``."""
    if x.shape[-1] != size:
        raise ValueError(
            tr("expected {name} of shape {layout} with {letter}={size}, got {shape}").format(
                name=name, layout=layout, letter=letter, size=size, shape=tuple(x.shape)
            )
        )


def require_length(name: str, length: int, limit: int, what: str = "context_length") -> None:
    """Raise unless ``length <= limit``; ``what`` names the limit in the message."""
    if length > limit:
        raise ValueError(
            tr("{name} has {length} tokens, more than {what}={limit}").format(
                name=name, length=length, what=what, limit=limit
            )
        )


def require_probability(name: str, p: float) -> float:
    """Raise unless ``p`` is a number in ``[0, 1)``; return it as a float."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(
            tr("expected {name} to be a float in [0, 1), got {kind}").format(name=name, kind=type(p).__name__)
        )
    if not 0.0 <= p < 1.0:
        raise ValueError(tr("expected {name} in [0, 1), got {p}").format(name=name, p=p))
    return float(p)


def require_positive_int(name: str, n: object) -> int:
    """Raise unless ``n`` is an int ``>= 1`` (a bool is not); return it."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(
            tr("expected {name} to be an int, got {kind}").format(name=name, kind=type(n).__name__)
        )
    if n < 1:
        raise ValueError(tr("expected {name} >= 1, got {n}").format(name=name, n=n))
    return n


def require_divisible(d_out: int, num_heads: int, d_name: str = "d_out", h_name: str = "num_heads") -> int:
    """Return the head width, or raise if ``d_out`` does not split evenly into heads."""
    require_positive_int(d_name, d_out)
    require_positive_int(h_name, num_heads)
    if d_out % num_heads:
        raise ValueError(
            tr(
                "{d_name}={d_out} is not divisible by {h_name}={num_heads}; "
                "choose {d_name} as a multiple of {h_name}"
            ).format(d_name=d_name, d_out=d_out, h_name=h_name, num_heads=num_heads)
        )
    return d_out // num_heads


def require_token_ids(
    name: str,
    ids: object,
    vocab_size: int,
    layout: str = "(B, T) token ids",
) -> torch.Tensor:
    """Raise unless ``ids`` is a non-empty ``(B, T)`` integer tensor of ids in ``[0, V)``; return it.

    The one token-id check of attnlib: the RNN encoder, the Transformer and GPT all call it
    (each then checks ``T`` against its own length limit with :func:`require_length`).

    Args:
        name: the argument's name in the messages (``"src"``, ``"tgt"``, ``"idx"``).
        ids: ``(B, T)`` token ids.
        vocab_size: ``V``, the vocabulary the model was built for.
        layout: the expected shape, as the messages spell it.

    Returns:
        ``ids``.
    """
    require_rank(name, ids, (2,), layout)
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise TypeError(
            tr("expected {name} to hold integer token ids, got dtype {dtype}").format(
                name=name, dtype=ids.dtype
            )
        )
    if ids.numel() == 0:
        raise ValueError(
            tr("expected a non-empty {name} {layout}, got shape {shape}").format(
                name=name, layout=layout, shape=tuple(ids.shape)
            )
        )
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            tr(
                "expected {name} ids in [0, {vocab_size}) (the vocabulary this model was built for), "
                "got ids from {low} to {high}"
            ).format(name=name, vocab_size=vocab_size, low=low, high=high)
        )
    return ids
