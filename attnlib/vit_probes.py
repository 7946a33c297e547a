"""Probes of what a vision transformer looks at: attention rollout and occluding patches.

Shapes: ``B`` batch, ``C`` channels, ``Hi``/``Wi`` image height and width, ``P`` patch side,
``Gw`` = ``Wi/P`` patches per grid row, ``N`` patches, ``T = N + 1`` tokens (the class token
first), ``L`` layers, ``H`` heads.

Two ways to ask which patches a :class:`~attnlib.vit.VisionTransformer` relies on:

* :func:`attention_rollout` (Abnar & Zuidema, 2020) reads the attention maps: it traces the
  attention of every layer back to the input tokens.
* :func:`occlude` changes the input: blank one patch and see how the prediction moves. It is
  the test an attention map may pass or fail (notebook 14, section 5).
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_rank


def attention_rollout(weights: torch.Tensor) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): attention traced back to the input tokens.

    Per layer: average the heads, add the identity for the residual connection and
    renormalise each row to sum to 1 (``0.5 W + 0.5 I`` when the rows of ``W`` sum to 1).
    Then multiply across layers, the latest on the left: ``R = A_L ... A_2 A_1``. Row ``i`` of
    ``R`` says how much token ``i`` after the last layer draws on each input token.

    Args:
        weights: ``(B, L, H, T, T)`` attention weights (``VisionTransformer.attention_weights()``),
            or ``(L, H, T, T)`` for one example.

    Returns:
        ``(B, T, T)`` (or ``(T, T)``), every row summing to 1.
    """
    require_rank("weights", weights, (4, 5), "(B, L, H, T, T) or (L, H, T, T)")
    if weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"expected square self-attention maps (..., T, T), got {tuple(weights.shape)}")
    single = weights.ndim == 4
    w = weights.unsqueeze(0) if single else weights  # (B, L, H, T, T)
    t = w.shape[-1]
    eye = torch.eye(t, dtype=w.dtype, device=w.device)
    mixed = w.mean(dim=2) + eye  # average the heads, add the residual: (B, L, T, T)
    mixed = mixed / mixed.sum(dim=-1, keepdim=True)  # rows sum to 1 again
    rollout = mixed[:, 0]  # (B, T, T)
    for layer in range(1, w.shape[1]):
        rollout = mixed[:, layer] @ rollout  # (B, T, T) @ (B, T, T) -> (B, T, T)
    return rollout[0] if single else rollout


def occlude(
    images: torch.Tensor, patch: torch.Tensor | int, patch_size: int, value: float = 0.0
) -> torch.Tensor:
    """A copy of ``images`` with one patch per image set to ``value`` (e.g. the background).

    Args:
        images: ``(B, C, Hi, Wi)``.
        patch: which patch, numbered row by row from 0 (token ``patch + 1``): an int for every
            image, or ``(B,)`` one per image.
        patch_size: ``P``.
        value: what the patch's pixels become.

    Returns:
        ``(B, C, Hi, Wi)``; ``images`` itself is left unchanged.
    """
    require_rank("images", images, (4,), "(B, C, Hi, Wi)")
    b, _, h, w = images.shape
    p = require_positive_int("patch_size", patch_size)
    if h % p or w % p:
        raise ValueError(f"image size {h}x{w} is not divisible by patch_size={p}")
    grid_w, n = w // p, (h // p) * (w // p)
    index = torch.as_tensor(patch).expand(b) if torch.as_tensor(patch).ndim == 0 else torch.as_tensor(patch)
    if index.shape != (b,) or bool(((index < 0) | (index >= n)).any()):
        raise ValueError(f"expected patch indices in [0, {n}), one per image ({b}), got {index.tolist()}")
    out = images.clone()
    for i, k in enumerate(index.tolist()):
        r, c = divmod(k, grid_w)  # row-major: patch k sits in grid row k // Gw, column k % Gw
        out[i, :, r * p : (r + 1) * p, c * p : (c + 1) * p] = value
    return out
