"""attnlib.reproducible: the flags it sets, and that it sets them without importing Inductor."""

from __future__ import annotations

import subprocess
import sys

from tests import ROOT

# One process (each start imports torch): first a fresh one, then one where Inductor is imported.
CODE = """\
import sys, torch, attnlib
attnlib.reproducible()
assert torch.are_deterministic_algorithms_enabled(), "ATen's flag"
assert torch.is_deterministic_algorithms_warn_only_enabled(), "warn only"
assert torch.get_num_threads() == 1
assert "torch._dynamo" not in sys.modules and "torch._inductor.config" not in sys.modules, "imported"
import torch._inductor.config as inductor
assert inductor.deterministic, "Inductor, imported after the call, reads its option"
print("fresh: ok")
inductor.deterministic = False
torch.use_deterministic_algorithms(False)
attnlib.reproducible()
assert inductor.deterministic and torch.are_deterministic_algorithms_enabled(), "Inductor imported before"
assert torch.is_deterministic_algorithms_warn_only_enabled()
print("inductor imported: ok")
"""


def test_reproducible_sets_what_use_deterministic_algorithms_sets_without_importing_dynamo():
    """ATen's deterministic flag (warn only), one thread, and Inductor's deterministic option,
    whether Inductor is imported after the call or before it; torch._dynamo (1-2 s of every
    notebook kernel's start) is not imported by the call."""
    result = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "fresh: ok\ninductor imported: ok\n"
