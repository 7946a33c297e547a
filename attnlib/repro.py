"""One call that makes a notebook's printed numbers the same on every machine.

Called by the first code cell of every notebook, from 01 (dot-product attention) on.
"""

from __future__ import annotations

import os
import random
import sys

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
    _deterministic_algorithms()
    torch.set_printoptions(profile="default")


def _deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)``, without importing Inductor.

    That function sets ATen's flag and Inductor's ``deterministic`` option; importing Inductor's
    config to set the option imports ``torch._dynamo`` too, which took 1.2-2.2 s in every notebook
    kernel on the 2-core machine, for a compiler the series never calls. So ATen's flag is set
    directly, and Inductor, where nothing has imported it yet, reads the same option from
    ``TORCHINDUCTOR_DETERMINISTIC`` when it is first imported (torch/_inductor/config.py). Where
    Inductor is already imported, or torch lacks the private setter, the public function runs."""
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)
        return
    set_flag(True, warn_only=True)
    os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1"
