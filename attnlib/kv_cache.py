"""The key-value cache of a decoder: :class:`KVCache` and one cached attention step.

Shapes: ``B`` batch, ``L`` attention layers, ``H`` heads, ``T`` cached positions, ``Tq`` new
positions, ``Tk = T + Tq`` keys after the step, ``D`` model width, ``Dh = D / H`` head width.

Taught in notebook 12 (a GPT with a KV cache).

During generation each attention layer keeps the keys and values of every position it has
seen, so a new token costs one query against the cache instead of a forward pass over the
whole prefix. :func:`cached_attention` is that step, run with the layer's own
:class:`~attnlib.multihead.MultiHeadAttention` methods (project, attend, combine heads), so it
computes what the module's ``forward`` computes for those positions, to float rounding (the
cached step multiplies shorter matrices, so the last bits may differ; the tests compare with
``torch.testing.assert_close``).
"""

from __future__ import annotations

import torch

from ._validate import require_length, require_positive_int, require_rank
from .multihead import MultiHeadAttention

__all__ = ["KVCache", "cached_attention"]


class KVCache:
    """The keys and values of past positions, one pair of tensors per attention layer.

    Grows by concatenation, so its ``nbytes`` is exactly what ``T`` cached positions need:
    ``2 * L * B * H * T * Dh * element_size``.

    Args:
        n_layers: attention layers ``L``.
    """

    def __init__(self, n_layers: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * require_positive_int("n_layers", n_layers)
        self.values: list[torch.Tensor | None] = [None] * n_layers

    def __len__(self) -> int:
        """Cached positions ``T`` (0 when empty)."""
        # The last layer is extended last, so during a forward pass this stays the length
        # before the pass until every layer has appended its new keys.
        return 0 if self.keys[-1] is None else self.keys[-1].shape[2]

    def __repr__(self) -> str:
        shape = None if self.keys[0] is None else tuple(self.keys[0].shape)
        return f"KVCache({len(self.keys)} layers, keys and values of shape {shape} each)"

    def append(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' keys and values of ``layer``; return all of them.

        Args:
            layer: which attention layer, ``0 <= layer < L``.
            keys, values: ``(B, H, Tq, Dh)`` of the new positions.

        Returns:
            ``(keys, values)``, each ``(B, H, Tk, Dh)`` with ``Tk`` = cached + new.
        """
        if self.keys[layer] is not None:
            keys = torch.cat(
                [self.keys[layer], keys], dim=2
            )  # (B, H, T, Dh) + (B, H, Tq, Dh) -> (B, H, Tk, Dh)
            values = torch.cat([self.values[layer], values], dim=2)
        self.keys[layer], self.values[layer] = keys, values
        return keys, values

    @property
    def nbytes(self) -> int:
        """Bytes held by every cached key and value tensor."""
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)


def cached_attention(
    attention: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """Causal self-attention of the new positions ``x`` against the cache, with ``attention``'s weights.

    The new positions come after the ``T`` cached ones: query ``i`` (position ``T + i``) may
    attend to keys ``0 .. T + i``, rows ``T .. T + Tq`` of the causal mask. One new token
    (``Tq = 1``) sees every key. Appends the new keys and values to the cache.

    Args:
        attention: a causal :class:`MultiHeadAttention` (its weights and mask are used).
        x: ``(B, Tq, D)`` inputs of the new positions.
        cache: the cache of the model; ``layer``'s entry is read and extended.
        layer: which attention layer this is.

    Returns:
        ``(B, Tq, D)``, what ``attention(whole_sequence)[:, T:]`` would return.
    """
    require_rank("x", x, (3,), "(B, Tq, D)")
    past, tq = len(cache), x.shape[1]
    require_length("cache + x", past + tq, attention.context_length)
    queries = attention.project_queries(x)  # (B, H, Tq, Dh)
    keys, values = cache.append(layer, *attention.project_keys_values(x))  # (B, H, Tk, Dh) each
    mask = None if tq == 1 else attention.causal_rows(past, past + tq, past + tq)  # (Tq, Tk)
    return attention.combine_heads(attention.attend(queries, keys, values, mask))  # (B, Tq, D)
