"""Switch a module into eval mode for a while, and back: :func:`evaluating`.

Shapes: none (modes, not tensors).

Used from notebook 04 (dropout on attention weights) on, and by every decoding and generation
loop of the library.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

__all__ = ["evaluating"]


@contextmanager
def evaluating(module: nn.Module) -> Iterator[nn.Module]:
    """Put ``module`` (and every submodule) in eval mode, then restore each one's own mode.

    The modes are restored in ``finally``, so an exception inside the block never leaves a
    student's model in eval mode with dropout silently off.

    Args:
        module: any ``nn.Module``.

    Yields:
        ``module`` itself, in eval mode.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(module).__name__}")
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training
