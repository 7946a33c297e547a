"""benchmarks/cpu_path.py: make test checks the stored outputs on a CPU path other than the writer's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest
import torch

from tests import ROOT

SCRIPT = ROOT / "benchmarks" / "cpu_path.py"
_spec = importlib.util.spec_from_file_location("cpu_path", SCRIPT)
cpu_path = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_path)


def notebook(folder, name, path):
    nb = nbformat.v4.new_notebook()
    if path is not None:
        nb.metadata["attnlib"] = {"outputs_cpu_path": path}
    target = folder / f"{name}.ipynb"
    nbformat.write(nb, target)
    return target


@pytest.mark.parametrize(
    ("own", "stored", "chosen"),
    [
        ("avx2", ["default", "default"], "own"),  # an AVX2 laptop, outputs written on the plain path
        ("avx512", ["default"], "own"),
        ("avx2", ["avx512"], "own"),  # the case the old rule missed: AVX2 already differs from AVX-512
        ("avx2", ["avx2"], "default"),  # otherwise one step down
        ("avx512", ["avx512"], "avx2"),
        ("avx512", ["avx512", "avx2"], "default"),  # below every recorded path
        ("avx2", ["avx2", "default"], "own"),  # nothing left: the own path, and it says so
        ("avx2", ["avx2", None], "default"),  # a notebook that records nothing: step down
    ],
)
def test_choice(tmp_path, monkeypatch, own, stored, chosen):
    monkeypatch.setattr(cpu_path, "own_path", lambda: own)
    for i, path in enumerate(stored):
        notebook(tmp_path, f"{i:02d}", path)
    assert cpu_path.choose("auto", [str(tmp_path)])[0] == chosen


def test_forced_path_and_variables(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cpu_path, "own_path", lambda: "avx2")
    notebook(tmp_path, "01", "default")
    assert cpu_path.main(["env", "default", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX ONEDNN_MAX_CPU_ISA=AVX"
    assert "default (as asked)" in err
    assert cpu_path.main(["env", "auto", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "" and "own path (avx2)" in err and "written on default" in err
    assert cpu_path.main(["env", "avx3"]) == 2


def test_record_writes_the_path_torch_runs_on(tmp_path, capsys):
    target = notebook(tmp_path, "01", None)
    cpu_path.main(["record", str(target)])
    stored = json.loads(target.read_text())["metadata"]["attnlib"]["outputs_cpu_path"]
    assert stored == torch.backends.cpu.get_cpu_capability().lower()
    assert cpu_path.recorded(target) == stored


def test_every_stored_notebook_records_its_path():
    paths = {p.name: cpu_path.recorded(p) for p in sorted(Path("notebooks").glob("*.ipynb"))}
    assert paths and all(paths.values()), f"run make execute: no recorded CPU path in {paths}"
