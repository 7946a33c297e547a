"""The Chinese edition (make zh) is the English run plus its language.

A Chinese student runs the same code as an English one but for one line: the set-up cell sets
attnlib's feedback language. So the edition's code cells are tested equal to the English ones
(all 14 notebooks, every run of make test), the English notebooks are run by nbval as always,
every message a check can give is tested in Chinese by tests/lib/test_i18n.py and
tests/tools/test_lib_catalogue.py, and one Chinese notebook, 01, is run top to bottom here (in
make test-publish, with the other editions' runs); the whole edition runs with ``make zh``
(docs/translation.md gives its time).
"""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from tests import ROOT
from tools import i18n

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LANG = "zh_CN"
_spec = importlib.util.spec_from_file_location("cpu_path", ROOT / "benchmarks" / "cpu_path.py")
cpu_path = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_path)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("zh")
    return {p.name: p for p in i18n.build(NOTEBOOKS, out, LANG)}


def _code(nb) -> list[tuple[str, str]]:
    return [(c.id, c.source) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_code_is_the_english_code_and_one_line(edition, notebook):
    english = _code(nbformat.read(notebook, as_version=4))
    chinese = _code(nbformat.read(edition[notebook.name], as_version=4))
    assert [i for i, _ in chinese] == [i for i, _ in english], f"{notebook.name}: the code cells differ"
    differ = [(e, z) for e, z in zip(english, chinese, strict=True) if e != z]
    assert len(differ) == 1, f"{notebook.name}: {len(differ)} code cells differ from the English, expected 1"
    (cell_id, before), (_, after) = differ[0]
    assert after == i18n.with_language(before, LANG), f"{notebook.name}, cell {cell_id}"
    assert after.split("\n").count(i18n.SET_LANGUAGE.format(lang=LANG)) == 1


def test_the_set_up_line_is_required():
    with pytest.raises(i18n.CatalogueError, match=r"attnlib\.reproducible"):
        i18n.with_language("import attnlib\n", LANG)


def test_outputs_that_do_not_depend_on_the_language_compare_equal():
    english = nbformat.read(NOTEBOOKS[0], as_version=4)
    chinese = nbformat.read(NOTEBOOKS[0], as_version=4)
    assert i18n.differing_cells(chinese, english) == []
    cell = next(c for c in chinese.cells if c.cell_type == "code" and c.outputs)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="通过")]
    assert i18n.differing_cells(chinese, english) == [cell.id]


@pytest.mark.publish
def test_the_chinese_01_runs_top_to_bottom_with_chinese_feedback(edition, monkeypatch):
    """Notebook 01 in Chinese, run as a student runs it: no cell raises, the outputs that do not
    depend on the language are the English run's (figures included: the kernel runs on the CPU
    path that wrote the stored outputs, as make zh does), and every check's verdict is in Chinese."""
    path = edition[NOTEBOOKS[0].name]
    stored_path = nbformat.read(NOTEBOOKS[0], as_version=4).metadata["attnlib"]["outputs_cpu_path"]
    for setting in cpu_path.VARIABLES[stored_path].split():
        monkeypatch.setenv(*setting.split("=", 1))  # the kernel inherits them
    differing = i18n.execute([path])[path]
    nb = nbformat.read(path, as_version=4)
    checks = [c for c in nb.cells if c.cell_type == "code" and "check." in c.source]
    assert checks, "01 has no check cell"
    for cell in checks:
        shown = "".join(i18n._shown_outputs(cell))
        assert cell.id in differing, f"cell {cell.id}: its output is still the English one:\n{shown[:300]}"
        assert not any(word in shown for word in ("Passed:", "Wrong:", "Not yet:", "Error:")), shown[:300]
    others = set(differing) - {c.id for c in checks}
    ignored = {c.id for c in nb.cells if "nbval-ignore-output" in c.metadata.get("tags", [])}
    assert others <= ignored, f"outputs that do not depend on the language differ: {sorted(others - ignored)}"
