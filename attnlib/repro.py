"""One call that makes a notebook's printed numbers the same on every machine.

Called by the first code cell of every notebook, from 01 (dot-product attention) on.
"""

from __future__ import annotations

import os
import random

import torch

__all__ = ["reproducible"]


def reproducible(seed: int = 123, *, threads: int = 1) -> None:
    """Seed every generator, pin the thread count and reset print options.

    The first code cell of every notebook calls this. One thread makes float reductions
    run in the same order whatever the machine's core count, so stored outputs match on
    any x86-64 Linux machine with the pinned environment.

    Args:
        seed: seed for Python's ``random``, NumPy (if installed) and torch.
        threads: intra-op threads for torch.
    """
    os.environ.setdefault("PYTHONHASHSEED", "0")  # affects subprocesses only
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # NumPy is optional for attnlib itself
        pass
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_printoptions(profile="default")
