"""Input checks shared by every attnlib module.

Each check raises before any matmul can fail obscurely, and names what was expected and
what came, e.g. ``expected x of shape (B, T, D) with D=64, got (2, 6, 3)``.
"""

from __future__ import annotations

import torch


def check_tensor(name: str, x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} to be a torch.Tensor, got {type(x).__name__}")
    return x


def check_rank(name: str, x: torch.Tensor, ranks: tuple[int, ...], layout: str) -> None:
    """Raise unless ``x.ndim`` is one of ``ranks``; ``layout`` spells the expected shape."""
    check_tensor(name, x)
    if x.ndim not in ranks:
        raise ValueError(f"expected {name} of shape {layout}, got {tuple(x.shape)} ({x.ndim}-D)")


def check_features(name: str, x: torch.Tensor, size: int, layout: str, letter: str = "D") -> None:
    """Raise unless the last dimension of ``x`` is ``size``."""
    if x.shape[-1] != size:
        raise ValueError(f"expected {name} of shape {layout} with {letter}={size}, got {tuple(x.shape)}")


def check_length(name: str, length: int, limit: int, what: str = "context_length") -> None:
    if length > limit:
        raise ValueError(f"{name} has {length} tokens, more than {what}={limit}")


def check_probability(name: str, p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"expected {name} to be a float in [0, 1), got {type(p).__name__}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"expected {name} in [0, 1), got {p}")
    return float(p)


def check_positive_int(name: str, n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected {name} to be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"expected {name} >= 1, got {n}")
    return n


def check_divisible(d_out: int, num_heads: int, d_name: str = "d_out", h_name: str = "num_heads") -> int:
    """Return the head width, or raise if ``d_out`` does not split evenly into heads."""
    check_positive_int(d_name, d_out)
    check_positive_int(h_name, num_heads)
    if d_out % num_heads:
        raise ValueError(
            f"{d_name}={d_out} is not divisible by {h_name}={num_heads}; "
            f"choose {d_name} as a multiple of {h_name}"
        )
    return d_out // num_heads
