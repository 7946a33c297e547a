"""pytest plugin for nbval runs of the notebooks.

* Notebooks that share trained models through ``attnlib.trained.train_or_load`` (07/08,
  07/11, 08/11, 09/11) run first, in their numeric
  order: xdist hands each of two workers two files to start with (07 and 09 to one, 08 and 11
  to the other), so the later notebook of each pair finds the earlier one's model and loads
  it. The other notebooks and unit-test modules follow, longest first, so that two workers
  finish together (with ``--no-loadscope-reorder``; xdist would otherwise order them by their
  number of tests). The length of a notebook is the one its stored outputs record: the cell
  times of the last ``make execute``; a few long unit-test modules are listed below, the rest
  keep their order.
* nbval's kernels talk to the workers over Unix sockets in a folder of their own, not over
  TCP ports: two kernels that start at the same moment (the two workers begin together) can
  otherwise pick the same free port, and the loser never answers ("Kernel didn't respond in
  60 seconds"), a known race of jupyter_client's port choice.
* At the end, a table of the seconds each notebook took under nbval, against its budget: a
  notebook that trains a model may take 75 s on the 2-core development machine, one that
  trains nothing 20 s (docs/performance.md, "Time budgets"). It reports; it never fails a run
  (timings are not asserted in tests).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from collections import defaultdict
from datetime import datetime
from functools import cache
from pathlib import Path

TRAINS_BUDGET_S, OTHER_BUDGET_S = 75.0, 20.0
# attnlib's train() or train_or_load(), bare or as attnlib.train(...) / training.train(...), or a
# loop fit(); never a module's .train(). benchmarks/claims.py uses the same pattern, and
# tests/series/test_series.py checks that both find the notebooks the claims harness retrains.
TRAINS = re.compile(r"(?<![.\w])(train|fit|train_or_load)\(|\b(attnlib|training)\.(train|train_or_load)\(")
# Unit-test modules that take long (seconds on the development machine, in the session that runs
# them), started early, so that no long one is left for last. The first four are mostly tests
# marked `publish` (make test-publish); the others run in make test with the notebooks.
LONG_UNIT_MODULES = {
    "tests/tools/test_browser.py": 260.0,
    "tests/tools/test_course.py": 42.0,
    "tests/series/test_jupyterlab.py": 34.0,
    "tests/tools/test_student_edition.py": 24.0,
    "tests/viz/test_explorers.py": 22.0,
    "tests/check/test_harness.py": 17.0,
    "tests/tools/test_lib_catalogue.py": 20.0,
}
SHARES = re.compile(r"\btrain_or_load\(")
_seconds: dict[str, float] = defaultdict(float)


@cache
def _cells(path: str) -> tuple[dict, ...]:
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return tuple(c for c in cells if c["cell_type"] == "code")


def _shares_models(path: str) -> bool:
    return any(SHARES.search("".join(c["source"])) for c in _cells(path))


def recorded_seconds(path: str) -> float:
    """Seconds the notebook's cells took in the run that stored its outputs."""
    total = 0.0
    for cell in _cells(path):
        times = cell.get("metadata", {}).get("execution", {})
        start, end = times.get("iopub.execute_input"), times.get("shell.execute_reply")
        if start and end:
            total += (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    return total


def pytest_configure(config) -> None:
    if os.name != "posix":  # Unix sockets only; elsewhere nbval keeps TCP
        return
    try:
        from jupyter_client.manager import KernelManager
        from nbval import kernel as nbval_kernel
    except ImportError:
        return
    sockets = tempfile.mkdtemp(prefix="nbval-")  # short: a socket path may not exceed 107 bytes
    config.add_cleanup(lambda: shutil.rmtree(sockets, ignore_errors=True))

    class UnixSocketKernelManager(KernelManager):
        def __init__(self, **kwargs) -> None:
            super().__init__(transport="ipc", **kwargs)
            self.ip = os.path.join(sockets, uuid.uuid4().hex[:12])  # one prefix per kernel

    nbval_kernel.KernelManager = UnixSocketKernelManager


def pytest_collection_modifyitems(items: list) -> None:
    def key(item) -> tuple:
        path = item.nodeid.split("::")[0]
        if path.endswith(".ipynb"):
            return (0, path, 0.0) if _shares_models(path) else (1, "", -recorded_seconds(path))
        return (1, "", -LONG_UNIT_MODULES.get(path, 0.0))

    items.sort(key=key)  # stable: tests and cells keep their order within a file


def pytest_runtest_logreport(report) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration  # setup (the kernel's start), call and teardown


def pytest_terminal_summary(terminalreporter) -> None:
    if not _seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.section("nbval seconds per notebook")
    for path, seconds in sorted(_seconds.items()):
        trains = Path(path).exists() and any(TRAINS.search("".join(c["source"])) for c in _cells(path))
        budget = TRAINS_BUDGET_S if trains else OTHER_BUDGET_S
        verdict = "within" if seconds <= budget else "OVER"
        write(f"{seconds:6.1f} s  {path:45s} {verdict} its {budget:.0f} s budget")
    write(f"{sum(_seconds.values()):6.1f} s  in all (wall time is less with several workers)")
