"""Probes of what a vision transformer looks at: attention rollout and occluding patches.

Shapes: ``B`` batch, ``C`` channels, ``Hi``/``Wi`` image height and width, ``P`` patch side,
``Gw`` = ``Wi/P`` patches per grid row, ``N`` patches, ``T = N + 1`` tokens (the class token
first), ``L`` layers, ``H`` heads.

Taught in notebook 14 (attention in vision).

Two ways to ask which patches a :class:`~attnlib.vit.VisionTransformer` relies on:

* :func:`attention_rollout` (Abnar & Zuidema, 2020) reads the attention maps: it traces the
  attention of every layer back to the input tokens.
* :func:`occlude` changes the input: blank one patch and see how the prediction moves. It is
  the test an attention map may pass or fail (notebook 14, section 5).

Two small statistics compare them: :func:`rank_correlation` (Spearman's, with average ranks
for ties, which are common: blank patches all score alike, up to rounding) and :func:`bootstrap_interval`
(a percentile interval for a mean over test images).
"""

from __future__ import annotations

import torch

from ._validate import require_positive_int, require_rank

__all__ = ["attention_rollout", "average_ranks", "bootstrap_interval", "occlude", "rank_correlation"]


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


def average_ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks along the last axis, 1 for the smallest; tied values share their average rank.

    Args:
        x: ``(..., N)``.

    Returns:
        ``(..., N)`` float ranks (what ``scipy.stats.rankdata(x, axis=-1)`` gives).
    """
    below = (x.unsqueeze(-1) > x.unsqueeze(-2)).sum(-1)  # (..., N, N) -> (..., N): how many are smaller
    ties = (x.unsqueeze(-1) == x.unsqueeze(-2)).sum(-1)  # (..., N): how many are equal, itself included
    return below.to(torch.float64) + (ties.to(torch.float64) + 1) / 2


def rank_correlation(a: torch.Tensor, b: torch.Tensor, *, atol: float = 0.0) -> torch.Tensor:
    """Spearman's rank correlation along the last axis, ties given average ranks.

    With the default ``atol=0.0`` this is plain Spearman's correlation, what
    ``scipy.stats.spearmanr`` computes. A tolerance is for probability-scale scores such as
    occlusion drops (notebook 14 passes ``atol=1e-6``): every score with ``|score| <= atol``
    becomes exactly 0 before ranking, so such scores tie. That guards against rounding, where a
    score that is 0 in exact arithmetic (the drop from occluding a blank patch) could come out a
    few units in the last place either side of 0 and, ranked exactly, order those patches
    arbitrarily. It also ties with the zeros every real score smaller than ``atol`` in size,
    so choose ``atol`` for the scale of the scores, far below the differences that matter.

    Args:
        a: ``(..., N)`` scores.
        b: ``(..., N)`` scores, e.g. the occlusion drop of each patch.
        atol: scores with ``|score| <= atol`` count as 0; the default ``0.0`` ranks the values
            as given.

    Returns:
        ``(...,)`` float64 correlations in ``[-1, 1]``; NaN where one side is constant (no ranking).
    """
    if a.shape != b.shape:
        raise ValueError(f"expected a and b of the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if not atol >= 0:
        raise ValueError(f"expected atol >= 0, got {atol}")
    a, b = (torch.where(x.abs() <= atol, torch.zeros_like(x), x) for x in (a, b))  # near 0 -> exactly 0
    ra, rb = average_ranks(a), average_ranks(b)
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))  # Pearson's r of the ranks


def bootstrap_interval(
    values: torch.Tensor, *, num_samples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values`` (Efron & Tibshirani, 1993).

    Resample the values (test images, say) with replacement ``num_samples`` times, take each
    resample's mean, and return the central ``level`` range of those means.

    Args:
        values: ``(M,)`` one number per independent unit.
        num_samples: bootstrap resamples.
        level: coverage of the interval.
        seed: seeds a private generator; the global one is left alone.

    Returns:
        ``(low, high)``.
    """
    require_rank("values", values, (1,), "(M,)")
    g = torch.Generator().manual_seed(seed)
    v = values.detach().to(torch.float64)
    picks = torch.randint(0, len(v), (require_positive_int("num_samples", num_samples), len(v)), generator=g)
    means = v[picks].mean(1)  # (S, M) -> (S,)
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64))
    return float(low), float(high)
