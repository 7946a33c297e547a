"""The tests, in the package's wings: ``lib/`` (attnlib's library modules), ``viz/`` (the
drawing wing), ``check/`` (the exercise checks: one harness over an answer table per notebook),
``tools/`` (the publishing tools and benchmarks) and ``series/`` (the notebooks as a whole, the
environment they run in). Fixtures shared by all are in ``conftest.py``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
