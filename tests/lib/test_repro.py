"""attnlib.reproducible: the flags it sets, and that it sets them without importing Inductor."""

from __future__ import annotations

import subprocess
import sys

from tests import ROOT

SETUP = "import sys, torch, attnlib; attnlib.reproducible()\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SETUP + code], cwd=ROOT, capture_output=True, text=True)


def test_reproducible_sets_what_use_deterministic_algorithms_sets_without_importing_dynamo():
    """ATen's deterministic flag (warn only), one thread, and Inductor's deterministic option once
    Inductor is imported; torch._dynamo (about 1-2 s of every notebook kernel's start) stays out."""
    result = _run(
        "assert torch.are_deterministic_algorithms_enabled()\n"
        "assert torch.is_deterministic_algorithms_warn_only_enabled()\n"
        "assert torch.get_num_threads() == 1\n"
        "assert 'torch._dynamo' not in sys.modules and 'torch._inductor.config' not in sys.modules\n"
        "import torch._inductor.config as inductor\n"
        "assert inductor.deterministic\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_with_inductor_already_imported_the_public_function_sets_its_option():
    result = _run(
        "import torch._inductor.config as inductor\n"
        "inductor.deterministic = False\n"
        "torch.use_deterministic_algorithms(False)\n"
        "attnlib.reproducible()\n"
        "assert inductor.deterministic and torch.are_deterministic_algorithms_enabled()\n"
        "assert torch.is_deterministic_algorithms_warn_only_enabled()\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
