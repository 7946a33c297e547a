"""Rotary position embeddings (RoPE, Su et al., 2021): rotate queries and keys by their positions.

Shapes: ``T`` positions, ``Dh`` head width (even), ``...`` any leading sizes (``B``, ``H``).

Taught in notebook 13 (attention made efficient).

Features ``2i`` and ``2i+1`` form pair ``i``, a point in a plane; at position ``m`` it is turned
by the angle ``m * theta_i`` with ``theta_i = base^(-2i / Dh)`` (RoFormer §3.2). A rotation keeps
lengths, and the score of a query at ``m`` with a key at ``n`` then depends on ``m - n`` only:
``R_m q · R_n k = q · R_(n-m) k``. Other code (GPT-NeoX, Hugging Face's Llama) pairs feature
``i`` with ``i + Dh/2`` instead; that is the same rotation with the features listed in another
order.
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_tensor

__all__ = ["apply_rotary", "rotary_angles"]


def rotary_angles(
    positions: torch.Tensor, head_dim: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The angle by which each pair turns at each position.

    The angles are computed in float64 and then cast: near position 100,000 a float32 angle that
    is not an integer can be off by up to about 0.004 rad (half float32's spacing there), so
    :func:`apply_rotary` takes the cosines and sines of the float64 angles and casts those instead.

    Args:
        positions: ``(T,)`` positions ``m`` (integers or floats).
        head_dim: ``Dh``, even.
        base: the wavelength scale (10,000 as in RoFormer and the sinusoidal encoding).
        dtype: dtype of the result.

    Returns:
        ``(T, Dh/2)`` angles ``m * theta_i``.
    """
    require_positive_int("head_dim", head_dim)
    if head_dim % 2:
        raise ValueError(f"expected an even head_dim (features rotate in pairs), got {head_dim}")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (Dh/2,)
    angles = positions.to(torch.float64)[:, None] * theta[None, :]  # (T, 1) * (1, Dh/2) -> (T, Dh/2)
    return angles.to(dtype)


def apply_rotary(
    x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0
) -> torch.Tensor:
    """Rotate each pair ``(x_2i, x_2i+1)`` of every vector by its position's angle.

    Args:
        x: ``(..., T, Dh)`` queries or keys, after their projection.
        positions: ``(T,)``; ``0 .. T-1`` if None.
        base: see :func:`rotary_angles`.

    Returns:
        ``(..., T, Dh)``, with ``|result| == |x|`` for every vector.
    """
    require_tensor("x", x)
    if x.ndim < 2:
        raise ValueError(f"expected x of shape (..., T, Dh), got {tuple(x.shape)}")
    t, dh = x.shape[-2], x.shape[-1]
    positions = torch.arange(t, device=x.device) if positions is None else positions
    if positions.shape != (t,):
        raise ValueError(f"expected positions of shape (T,) with T={t}, got {tuple(positions.shape)}")
    angles = rotary_angles(positions.cpu(), dh, base, dtype=torch.float64)  # (T, Dh/2), exact to float64
    # cos and sin of the float64 angles, then cast: float64 input keeps float64 accuracy
    cos, sin = torch.cos(angles).to(x.device, x.dtype), torch.sin(angles).to(x.device, x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, Dh/2) each: the pairs' two coordinates
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, Dh/2, 2)
    return rotated.flatten(-2)  # (..., T, Dh/2, 2) -> (..., T, Dh): pair i back in features 2i, 2i+1
