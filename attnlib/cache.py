"""Deprecated alias: moved to attnlib.trained in 0.2.0; removed in 0.3.0."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

from ._deprecated import moved

if TYPE_CHECKING:
    from .data import PairDataset
    from .seq2seq import Seq2SeqModel
    from .training import History

__getattr__, __dir__ = moved(__name__, "attnlib.trained")


def train_cached(
    model: Seq2SeqModel, data: PairDataset, cache: str | os.PathLike, **recipe: object
) -> History:
    """Deprecated: :func:`attnlib.trained.train_or_load` (whose folder argument was called ``cache``)."""
    from .trained import train_or_load

    warnings.warn(
        "attnlib.cache.train_cached(model, data, cache, ...) is now "
        "attnlib.trained.train_or_load(model, data, folder, ...)",
        DeprecationWarning,
        stacklevel=2,
    )
    return train_or_load(model, data, cache, **recipe)
