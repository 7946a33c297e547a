"""The student edition strips exactly the solutions and never overwrites a student's work."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from attnlib.student import build, stub_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = '''import torch

def my_causal_mask(size: int) -> torch.Tensor:
    """(T, T) bool, True = may attend."""
    # the lower triangle, diagonal included
    return torch.ones(size, size, dtype=torch.bool).tril()'''


def make_notebook(folder: Path, name: str = "03_demo.ipynb") -> Path:
    cells = [
        new_markdown_cell("# Demo"),
        new_code_cell("import attnlib\nfrom attnlib import check", execution_count=1),
        new_code_cell(SOLUTION, execution_count=2, metadata={"tags": ["solution"]}),
        new_code_cell(
            "check.causal_mask(my_causal_mask)",
            execution_count=3,
            outputs=[new_output("execute_result", {"text/plain": "pass"}, execution_count=3)],
        ),
        new_code_cell("answer = 6 * 5 // 2", execution_count=4, metadata={"tags": ["solution"]}),
        new_code_cell("print(1 + 1)", execution_count=5, outputs=[new_output("stream", text="2\n")]),
    ]
    path = folder / name
    nbformat.write(
        new_notebook(
            cells=cells,
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        ),
        path,
    )
    return path


def test_stub_keeps_signature_and_docstring_and_drops_the_body():
    stub = stub_source(SOLUTION)
    assert "def my_causal_mask(size: int) -> torch.Tensor:" in stub
    assert '"""(T, T) bool, True = may attend."""' in stub
    assert "tril" not in stub and "lower triangle" not in stub
    assert "raise NotImplementedError" in stub
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError):
        namespace["my_causal_mask"](3)


def test_predictions_become_ellipsis():
    assert stub_source("answer = 6 * 5 // 2") == "answer = ...  # your prediction"


def test_only_solutions_change(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    report = build(tmp_path / "src", tmp_path / "student")
    assert report["written"] == ["03_demo.ipynb"]
    original = json.loads((tmp_path / "src" / "03_demo.ipynb").read_text())["cells"]
    student = json.loads((tmp_path / "student" / "03_demo.ipynb").read_text())["cells"]
    assert len(student) == len(original)
    for before, after in zip(original, student, strict=True):
        if "solution" in before["metadata"].get("tags", []):
            assert after["source"] != before["source"] and after["outputs"] == []
            assert after["metadata"]["tags"] == ["exercise"]
        elif "check." in "".join(before["source"]):
            assert after["source"] == before["source"] and after["outputs"] == []
        else:
            assert after == before


def test_a_stubbed_exercise_says_not_yet(tmp_path):
    from attnlib import check

    namespace: dict = {}
    exec(stub_source(SOLUTION), namespace)
    verdict = check.run_check("demo", namespace["my_causal_mask"], lambda t: t, [check.Case("T=2", (2,))])
    assert verdict.status == "todo" and "not yet" in repr(verdict)


def test_never_overwrites_an_edited_notebook(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "student")
    target = tmp_path / "student" / "03_demo.ipynb"
    assert build(tmp_path / "src", tmp_path / "student")["unchanged"] == ["03_demo.ipynb"]

    edited = target.read_text().replace("Exercise: replace this line", "my own attempt")
    target.write_text(edited)
    out = subprocess.run(
        [sys.executable, "-m", "attnlib.student", str(tmp_path / "src"), str(tmp_path / "student")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "you have changed it" in out and "03_demo.ipynb" in out
    assert target.read_text() == edited

    target.unlink()  # deleting it asks for a fresh copy
    assert build(tmp_path / "src", tmp_path / "student")["written"] == ["03_demo.ipynb"]


def test_a_file_not_written_by_the_tool_is_kept(tmp_path):
    (tmp_path / "src").mkdir()
    make_notebook(tmp_path / "src")
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "03_demo.ipynb").write_text("{}")
    assert build(tmp_path / "src", tmp_path / "student")["kept"] == ["03_demo.ipynb"]
    assert (tmp_path / "student" / "03_demo.ipynb").read_text() == "{}"


def test_every_series_notebook_has_exercises_that_stub_cleanly(tmp_path):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks:
        pytest.skip("no notebooks yet")
    report = build(ROOT / "notebooks", tmp_path)
    assert len(report["written"]) == len(notebooks)
    for path in notebooks:
        original = json.loads(path.read_text())["cells"]
        student = json.loads((tmp_path / path.name).read_text())["cells"]
        solutions = [c for c in original if "solution" in c["metadata"].get("tags", [])]
        assert len(solutions) >= 2, f"{path.name}: expected at least 2 exercises"
        assert len(student) == len(original)
        stubs = [c for c in student if "exercise" in c["metadata"].get("tags", [])]
        assert len(stubs) == len(solutions)


def test_make_slides_builds_one_deck_per_notebook(tmp_path):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks or shutil.which("make") is None:
        pytest.skip("no notebooks yet")
    subprocess.run(
        ["make", "-s", "slides", f"SLIDES_DIR={tmp_path}"], cwd=ROOT, check=True, capture_output=True
    )
    decks = sorted(p.name for p in tmp_path.glob("*.slides.html"))
    assert decks == [p.stem + ".slides.html" for p in notebooks]
    html = (tmp_path / decks[0]).read_text()
    assert "reveal" in html.lower() and 'class="slides"' in html
