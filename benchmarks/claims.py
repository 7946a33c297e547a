"""Do the notebooks' statements about trained models hold on every run? (``make claims``)

Not a test: it retrains every notebook that trains a model, several times, and prints how much
margin each statement about the trained model has. A checked cell states results of training as
:func:`attnlib.claim` calls (``held-out exact match >= 0.99: True``); ``make test`` checks them on
one run per machine. Every student's laptop is another run (another CPU code path, another torch),
so a statement must hold with margin on every run we can make, not only on the stored one.

Runs, by default:

* seeds 0-4 on this CPU's own code path;
* seed 0 on ATen's non-vectorised path (``ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX
  ONEDNN_MAX_CPU_ISA=AVX``, which any x86-64 CPU runs);
* seed 0 on the AVX2 path, where this CPU has AVX-512 (on an AVX2 CPU that is its own path).

A run executes the notebook itself, top to bottom, in a fresh kernel (nbclient), with every
``torch.manual_seed(0)`` replaced by ``torch.manual_seed(seed)``: every model the notebooks train
is created right after one, so a seed changes the initial weights and hence the whole training
run, as another machine's arithmetic would. The data, the order of the batches and the sampling
keep their own seeds (a student's run has the same data), and comparisons of two code paths on
one run (a loop by hand against ``train``) stay comparisons of the same run. Notebooks that share
trained models through ``train_or_load`` (07, 08, 09, then 11) run in that order within one job,
so 11 loads what the others trained for the same seed and path.

Every :func:`attnlib.claim` records its value, bound and margin (``ATTNLIB_CLAIMS_LOG``); a
checked line that still prints a bare truth value (``...: True``) and an error in any cell are
recorded too. The result: one row per claim and run on stdout, and with ``--markdown`` a table per
notebook (the value in every run and the smallest margin) for ``docs/claims.md``.

Usage (from the repository root, in the project's venv)::

    python benchmarks/claims.py                       # everything, two jobs at a time
    python benchmarks/claims.py --notebooks 08 --seeds 0 --paths own,default
    python benchmarks/claims.py --markdown docs/claims.md
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tools/, when run as a script
NOTEBOOKS = ROOT / "notebooks"
# Notebooks that train, in the jobs they run in: each inner list runs in order in one kernel
# after another, because the later ones load models the earlier ones trained.
CHAINS = [["07", "08", "09", "11"], ["12"], ["14"], ["06"]]
PATHS = {
    "own": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "AVX", "ONEDNN_MAX_CPU_ISA": "AVX"},
}
PATH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
SEED_CALL = re.compile(r"torch\.manual_seed\(0\)")
TRAINS = re.compile(
    r"(?<![.\w])(train|fit|train_or_load)\(|\b(attnlib|training)\.(train|train_or_load)\("
)  # as conftest.py
TRUTH_LINE = re.compile(r"^(?P<statement>.+?): (?P<holds>True|False)\b")


PREAMBLE = """# Claims about trained models, measured on every run we can make

Written by `make claims CLAIMS_ARGS="--markdown docs/claims.md"` (`benchmarks/claims.py`); do not
edit by hand. Each notebook that trains was run top to bottom once per column: `own sN` is seed N
(the seed of every model's initial weights) on this CPU's own code path, `default s0` is seed 0
on ATen's non-vectorised path (the path `make execute` stores, and one every x86-64 CPU can
take), `avx2 s0` is seed 0 on the AVX2 path where the CPU has AVX-512. A cell shows the measured
value (or `holds` for a statement with no threshold); the last column is the smallest margin to
the threshold over the runs, in the claim's own units, and the run that had it. Rows starting
with a cell number are checked lines that still print a bare truth value.

"""


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def with_seed(source: str, seed: int) -> str:
    """The cell's code with the seed of every model's initial weights set to ``seed``."""
    return SEED_CALL.sub(f"torch.manual_seed({seed})", source)


def failure(statement: str) -> dict:
    return {"statement": statement, "value": None, "op": None, "bound": None, "holds": False, "margin": None}


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    """nbval's own rules, read from nbval_sanitize.cfg, so both compare the same text."""
    config = configparser.ConfigParser()
    config.read(ROOT / "nbval_sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[name]["regex"]), config[name]["replace"]) for name in config.sections()]


SANITIZE = _sanitizers()


def shown(cell) -> str:
    """The text a checked cell shows, as nbval compares it (with nbval_sanitize.cfg's rules)."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
        elif output.output_type == "error":
            parts.append(output.ename)
    text = "".join(parts)
    for pattern, replacement in SANITIZE:
        text = pattern.sub(replacement, text)
    return text


def execute(number: str, seed: int, log: Path) -> list[dict]:
    """Run one notebook (in this process's environment) and return what it claimed."""
    import nbformat

    from tools.kernels import notebook_client  # nbclient, without stalling on a missed wake-up

    path = next(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = with_seed(cell.source, seed)
    log.unlink(missing_ok=True)
    os.environ["ATTNLIB_CLAIMS_LOG"] = str(log)
    client = notebook_client(
        nb,
        timeout=1800,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    claimed = {row["statement"] for row in rows}
    stored = nbformat.read(path, as_version=4).cells
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    first = next((i for i in code if TRAINS.search(nb.cells[i].source)), len(nb.cells))
    for index in code:
        cell, checked = nb.cells[index], "nbval-ignore-output" not in nb.cells[index].metadata.get("tags", [])
        for output in cell.get("outputs", []):
            if output.output_type == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                rows.append(failure(f"cell [{index}] raised {output.ename}: {output.evalue[:80]}"))
            elif checked and index >= first and output.output_type == "stream" and output.name == "stdout":
                for line in output.text.splitlines():
                    match = TRUTH_LINE.match(line)
                    statement = match and match["statement"].strip()
                    if match and statement not in claimed and not line.startswith(tuple(claimed)):
                        rows.append({**failure(f"[{index}] {statement}"), "holds": match["holds"] == "True"})
        if checked and index >= first and shown(cell) != shown(stored[index]):
            rows.append(failure(f"[{index}] checked output differs from the stored one"))
    for row in rows:
        row["notebook"] = path.stem
    rows.append({"notebook": path.stem, "statement": None, "seconds": seconds})
    return rows


def job(chain: list[str], path: str, seed: int, out: Path) -> list[dict]:
    """One chain of notebooks for one (path, seed), in a child process with that path's variables."""
    env = {k: v for k, v in os.environ.items() if k not in PATH_VARIABLES}
    env.update(PATHS[path], PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    result = out / f"{path}-{seed}-{'-'.join(chain)}.json"
    command = [
        sys.executable,
        __file__,
        "--child",
        ",".join(chain),
        "--seed",
        str(seed),
        "--result",
        str(result),
    ]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-300:].replace("\n", " ")
        return [
            {
                "notebook": chain[0],
                "statement": f"job failed: {tail}",
                "holds": False,
                "margin": None,
                "value": None,
                "op": None,
                "bound": None,
                "run": f"{path} s{seed}",
            }
        ]
    rows = json.loads(result.read_text())
    for row in rows:
        row["run"] = f"{path} s{seed}"
    return rows


def child(chain: str, seed: int, result: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in chain.split(","):
            rows += execute(number, seed, Path(tmp) / f"{number}.jsonl")
    result.write_text(json.dumps(rows))


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def markdown(rows: list[dict], runs: list[str], header: str) -> str:
    lines = [header, ""]
    seconds = [r for r in rows if r["statement"] is None]
    claims = [r for r in rows if r["statement"] is not None]
    for notebook in sorted({r["notebook"] for r in claims}):
        lines += [
            f"### {notebook}",
            "",
            "| claim | " + " | ".join(runs) + " | smallest margin (run) |",
            "|---" * (len(runs) + 2) + "|",
        ]
        mine = [r for r in claims if r["notebook"] == notebook]
        for statement in dict.fromkeys(r["statement"] for r in mine):
            by_run = {r["run"]: r for r in mine if r["statement"] == statement}
            cells = []
            for run in runs:
                r = by_run.get(run)
                if r is None:
                    cells.append("not run")
                elif r["value"] is None:
                    cells.append("holds" if r["holds"] else "**fails**")
                else:
                    cells.append(fmt(r["value"]) if r["holds"] else f"**{fmt(r['value'])} fails**")
            margins = [(r["margin"], run) for run, r in by_run.items() if r["margin"] is not None]
            worst = min(margins) if margins else None
            lines.append(
                f"| {statement} | "
                + " | ".join(cells)
                + " | "
                + (f"{fmt(worst[0])} ({worst[1]})" if worst else "-")
                + " |"
            )
        times = {r["run"]: r["seconds"] for r in seconds if r["notebook"] == notebook}
        lines += [
            "",
            "Seconds to run the notebook: "
            + ", ".join(f"{run} {times[run]:.0f}" for run in runs if run in times),
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--notebooks", default="", help="comma-separated numbers (default: every one that trains)"
    )
    parser.add_argument("--seeds", default="0-4", help="seeds on this CPU's own path, e.g. 0-4 or 0,3")
    parser.add_argument(
        "--paths", default="own,default,avx2", help="own, default, avx2 (seed 0 on the others)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed, args.result)
        return 0

    a, _, b = args.seeds.partition("-")
    seeds = list(range(int(a), int(b) + 1)) if b else [int(s) for s in args.seeds.split(",")]
    wanted = [n for n in args.notebooks.split(",") if n]
    chains = [[n for n in c if not wanted or n in wanted] for c in CHAINS]
    chains = [c for c in chains if c]
    flags = cpu_flags()
    runs: list[tuple[str, int]] = []
    for path in args.paths.split(","):
        if path not in PATHS:
            parser.error(f"expected paths among {sorted(PATHS)}, got {path!r}")
        if path == "avx2" and "avx512f" not in flags:
            print("claims: this CPU has no AVX-512, so its own path is the AVX2 path: no separate avx2 run")
            continue
        runs += [(path, s) for s in (seeds if path == "own" else [0])]
    names = [f"{path} s{seed}" for path, seed in runs]
    print(
        f"claims: {cpu_model()}, avx512f {'present' if 'avx512f' in flags else 'absent'}; "
        f"runs: {', '.join(names)}; notebooks: {', '.join('+'.join(c) for c in chains)}"
    )

    todo = [(c, path, seed) for path, seed in runs for c in chains]
    todo.sort(key=lambda t: -len(t[0]))  # the long chains first, so that two workers end together
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda t: job(*t, Path(tmp)), todo))
    rows = [r for result in results for r in result]
    claims = [r for r in rows if r["statement"] is not None]

    print(f"\n{'notebook':28s} {'run':11s} {'value':>9s} {'bound':>9s} {'margin':>9s}  holds  claim")
    for r in sorted(claims, key=lambda r: (r["notebook"], r["statement"], r["run"])):
        bound = f"{r['op']} {fmt(r['bound'])}" if r["op"] else "-"
        print(
            f"{r['notebook']:28s} {r['run']:11s} {fmt(r['value']):>9s} {bound:>9s} {fmt(r['margin']):>9s}  "
            f"{r['holds']!s:5s}  {r['statement']}"
        )
    failed = [r for r in claims if not r["holds"]]
    statements = {(r["notebook"], r["statement"]) for r in claims}
    margins = [r for r in claims if r["margin"] is not None]
    print(
        f"\n{len(statements)} claims, {len(runs)} runs, {len(claims)} rows, {len(failed)} failed; "
        f"{time.perf_counter() - start:.0f} s"
    )
    if margins:
        worst = min(margins, key=lambda r: r["margin"])
        print(
            f"smallest margin {fmt(worst['margin'])}: {worst['notebook']}, "
            f"{worst['statement']!r}, {worst['run']}"
        )
    if args.markdown:
        header = PREAMBLE + (
            f"Measured on {date.today().isoformat()} on {cpu_model()} (avx512f "
            f"{'present' if 'avx512f' in flags else 'absent'}), torch {torch_version()}, "
            f"{len(statements)} claims in {len(runs)} runs: {len(failed)} failed."
        )
        args.markdown.write_text(markdown(rows, names, header) + "\n")
        print(f"claims: tables written to {args.markdown}")
    return 1 if failed else 0


def torch_version() -> str:
    import torch

    return torch.__version__


if __name__ == "__main__":
    sys.exit(main())
