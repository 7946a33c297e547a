"""Which CPU code path wrote the stored outputs, and which one `make test` checks them on.

x86-64 CPUs take different code paths through torch (ATen's kernels), MKL and oneDNN: AVX-512,
AVX2, or ATen's non-vectorised kernels with MKL and oneDNN at AVX. They round differently in the
last bits, and a model trained on one has other weights than one trained on another. The stored
outputs must hold on every path, so `make test` re-runs the notebooks on a path *other* than the
one that wrote them (docs/outputs.md):

* ``record NOTEBOOK...``: after `make execute`, store in each notebook's metadata
  (``metadata.attnlib.outputs_cpu_path``) the path the kernel ran on, as torch reports it
  (run with the same environment variables as the kernel);
* ``env auto|own|avx512|avx2|default [NOTEBOOK or folder...]``: print the variables that select a
  path, for ``env $(...) pytest``. ``auto`` picks this CPU's own path where it differs from every
  notebook's recorded one (an AVX2 laptop testing outputs stored on another path), else the next
  path down (AVX-512 -> AVX2 -> default). The choice and its reason go to stderr.

Run by the Makefile with the project's venv (it asks torch which path this CPU takes). It lives
beside the claims harness, not in tools/: the publishing tools never import torch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The variables that select each path; "own" sets none (the CPU's best).
VARIABLES = {
    "avx512": "ATEN_CPU_CAPABILITY=avx512 MKL_CBWR=AVX512 ONEDNN_MAX_CPU_ISA=AVX512_CORE",
    "avx2": "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2",
    "default": "ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX ONEDNN_MAX_CPU_ISA=AVX",
}
DOWN = ["avx512", "avx2", "default"]  # from the fastest path to the one every x86-64 CPU runs


def current_path() -> str:
    """The path torch takes in this process: 'avx512', 'avx2', 'default' (or another name)."""
    import torch

    return torch.backends.cpu.get_cpu_capability().lower()


def own_path() -> str:
    """This CPU's own path: what torch picks with no variable set (asked in a clean child)."""
    import os
    import subprocess

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")
    }
    code = "import torch; print(torch.backends.cpu.get_cpu_capability().lower())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    ).stdout.strip()


def notebooks(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths or ["notebooks"]:
        path = Path(name)
        found += sorted(path.glob("*.ipynb")) if path.is_dir() else [path] if path.suffix == ".ipynb" else []
    return found


def recorded(path: Path) -> str | None:
    return (
        json.loads(path.read_text(encoding="utf-8"))
        .get("metadata", {})
        .get("attnlib", {})
        .get("outputs_cpu_path")
    )


def record(names: list[str]) -> None:
    """Store the path this process runs on in each notebook's metadata (file otherwise unchanged)."""
    import nbformat

    path = current_path()
    for name in names:
        nb = nbformat.read(name, as_version=4)
        nb.metadata.setdefault("attnlib", {})["outputs_cpu_path"] = path
        nbformat.write(nb, name)
    print(f"cpu_path: stored outputs of {len(names)} notebook(s) recorded as written on the {path} path")


def choose(wanted: str, names: list[str]) -> tuple[str, str]:
    """The path to test on, and why."""
    own = own_path()
    if wanted == "own":
        return "own", f"this CPU's own path ({own}), as asked"
    if wanted in VARIABLES:
        return wanted, "as asked"
    stored = {recorded(p) for p in notebooks(names)}
    missing = None in stored
    stored.discard(None)
    shown = ", ".join(sorted(stored)) or "none recorded"
    if missing:
        shown += " (some notebooks record none)"
    if own not in stored and not missing:
        return "own", f"this CPU's own path ({own}); the stored outputs were written on {shown}"
    below = DOWN[DOWN.index(own) + 1 :] if own in DOWN else []
    for path in below:
        if path not in stored:
            return path, f"below this CPU's own {own}; the stored outputs were written on {shown}"
    return (
        "own",
        f"this CPU's own path ({own}), the only one it has; the stored outputs were written on {shown}",
    )


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "record":
        record(argv[1:])
        return 0
    if len(argv) >= 2 and argv[0] == "env" and argv[1] in ("auto", "own", *VARIABLES):
        path, why = choose(argv[1], argv[2:])
        print(f"CPU code path for this run: {path} ({why})", file=sys.stderr)
        print(VARIABLES.get(path, ""))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
