"""The nbgrader course (tools/course.py, docs/grading.md): its release is the student edition, and
nbgrader's own commands grade four submissions as the docs say.

The nbgrader test runs nbgrader from .venv-course (`make test-publish` builds it) on one notebook;
`make course-test` (COURSE_NOTEBOOKS=all) runs it on all 14, a few minutes each.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import torch

from tools.course import (
    BEGIN,
    END,
    POINTS,
    REASONING_POINTS,
    TABLE_END,
    TABLE_START,
    answer_source,
    build,
    check_cell_source,
    course_notebook,
    exercise_kind,
    exercises,
    points_table,
    release_source,
)
from tools.student import REASONING_PROMPT, STUB, stub_source, student_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
COURSE_BIN = ROOT / ".venv-course" / "bin"
TEST_ONLY = "llms-from-scratch "  # requirements-test-nodeps.txt
# The notebook make test grades: the one that autogrades fastest (docs/grading.md, "Measured").
CI_NOTEBOOK = "01_dot_product_attention"
# Its plausible wrong answer, and the hint the check gives for it.
WRONG = {
    CI_NOTEBOOK: (
        "1_1",
        "def my_softmax(scores):\n    e = torch.exp(scores)\n    return e / e.sum(dim=-1, keepdim=True)",
        "exp(1000) overflows to inf and inf/inf is NaN",
    )
}


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the course, without nbgrader -------------------------------------------------------------


def test_points_follow_the_kind_of_exercise():
    assert POINTS["predict"] < POINTS["function"] < POINTS["module"]
    assert exercise_kind("answer = 3") == "predict"
    assert exercise_kind("import torch\n\ndef f(x):\n    return x") == "function"
    assert exercise_kind("class M(nn.Module):\n    def forward(self, x):\n        return x") == "module"


def test_the_docs_table_is_the_generated_one():
    text = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    between = text[text.index(TABLE_START) + len(TABLE_START) : text.index(TABLE_END)]
    assert between.strip() == points_table(ROOT / "notebooks").strip(), (
        "docs/grading.md's points table is out of date: python -m tools.course --table docs/grading.md"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_is_graded_and_the_release_is_the_student_edition(path):
    nb = _read(path)
    found = exercises(nb)
    course = course_notebook(nb)  # raises where a cell's release would differ from the student edition
    graded = [c["metadata"]["nbgrader"] for c in course["cells"] if "nbgrader" in c["metadata"]]
    assert found and len(graded) == sum(1 + e.checked + e.reasoned for e in found)
    assert sum(g.get("points", 0) for g in graded) == sum(e.all_points for e in found)
    assert len({g["grade_id"] for g in graded}) == len(graded)
    for cell in course["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution") and cell["cell_type"] == "code":  # nbgrader's markers are comments
            compile(_source(cell), path.name, "exec")
        if meta.get("grade") and not meta.get("solution"):
            assert cell["metadata"]["nbgrader"]["locked"] and "del _sys.modules[" in _source(cell)
    assert not [c for c in course["cells"] if "notes" in json.dumps(c["metadata"].get("slideshow", {}))]


def test_a_solution_region_releases_the_student_stub():
    solution = (
        "import torch\n# a helper\n\n\n@torch.no_grad()\ndef f(x):\n    # comment\n    return x\n"
        "class M:\n    '''doc'''\n    def g(self):\n        '''g'''\n        return 1\nx = y = 3"
    )
    source = answer_source(solution)
    assert release_source(source) == stub_source(solution)
    assert f"    {BEGIN}\n    # comment\n    return x\n    {END}" in source
    assert f"{BEGIN} -> x = y = ...  # your prediction" in source
    assert STUB not in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_prediction_asks_for_its_reasoning(path):
    """A check cannot stop a student from running the code to find the value: each prediction has
    a `reasoning` cell, graded by hand, and its statement asks for the prediction first."""
    nb = _read(path)
    unreasoned = [e.number for e in exercises(nb) if e.kind == "predict" and not e.reasoned]
    assert not unreasoned, f"{path.stem}: predictions without a `reasoning` cell: {unreasoned}"
    statements = {
        m[1]: _source(c)
        for c in nb["cells"]
        if c["cell_type"] == "markdown" and (m := re.match(r"#{3,}\s+Exercise\s+([\d.]+)", _source(c)))
    }
    for e in exercises(nb):
        if e.kind == "predict":
            text = statements[e.number].lower()
            assert "before" in text and "run" in text, (
                f"{path.stem}: exercise {e.number} should ask for the prediction before running any code"
            )


def _markdown(source: str, *tags: str) -> dict:
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)} if tags else {}, "source": source}


def _code(source: str, *tags: str) -> dict:
    meta = {"tags": list(tags)} if tags else {}
    return {"cell_type": "code", "metadata": meta, "source": source, "outputs": [], "execution_count": None}


def _exercise_notebook(title: str, *cells: dict) -> dict:
    """A notebook of one exercise, ``### Exercise 9.9 — title``, made of ``cells``."""
    cells = [_markdown("## Exercises"), _markdown(f"### Exercise 9.9 — {title}"), *cells]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_reasoning_cell_is_graded_by_hand_and_releases_as_the_prompt():
    nb = _exercise_notebook(
        "predict",
        _code("answer_9_9 = 12", "solution"),
        _markdown("**Why.** 3 times 4.", "reasoning"),
        _code("check.something(answer_9_9)"),
    )
    (exercise,) = exercises(nb)
    assert exercise.reasoned and exercise.all_points == POINTS["predict"] + REASONING_POINTS
    reasoning = course_notebook(nb)["cells"][3]
    assert reasoning["source"] == "**Why.** 3 times 4."  # the course's source keeps the model answer
    assert reasoning["metadata"]["nbgrader"] == {
        "grade": True,
        "grade_id": "reasoning_9_9",
        "locked": False,
        "points": REASONING_POINTS,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    assert student_notebook(nb)["cells"][3]["source"] == REASONING_PROMPT
    nb["cells"][3], nb["cells"][4] = nb["cells"][4], nb["cells"][3]  # after the check: dropped there
    with pytest.raises(ValueError, match="comes after the check"):
        exercises(nb)
    nb["cells"][4]["source"] = "Because."
    nb["cells"][3], nb["cells"][4] = nb["cells"][4], nb["cells"][3]
    with pytest.raises(ValueError, match="starting"):
        exercises(nb)


def test_an_exercise_without_a_check_is_graded_by_hand():
    nb = _exercise_notebook("open-ended", _code("def f(x):\n    return x", "solution"))
    (exercise,) = exercises(nb)
    assert not exercise.checked
    cell = course_notebook(nb)["cells"][2]
    assert cell["metadata"]["nbgrader"] | {"points": 2} == cell["metadata"]["nbgrader"]
    assert cell["metadata"]["nbgrader"]["solution"] and cell["metadata"]["nbgrader"]["grade"]


def _fitted_to_the_visible_cases(check_name: str, right):
    """A function fitted to a check's visible cases: right answers for the inputs the check gives
    (recorded from one run with ``right``), zeros for any other input."""
    from attnlib import check

    seen = {}

    def key(x):
        return (tuple(x.shape), tuple(x.flatten().tolist()))

    def recording(x):
        seen[key(x)] = right(x).clone()
        return seen[key(x)].clone()

    assert getattr(check, check_name)(recording).status == "pass"
    return lambda x: seen[key(x)].clone() if key(x) in seen else torch.zeros_like(x)


def test_the_hidden_cases_fail_an_answer_fitted_to_the_visible_ones():
    from attnlib import check

    def right(scores):
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    fitted = _fitted_to_the_visible_cases("softmax", right)
    assert check.softmax(fitted).status == "pass"  # it fools the visible check
    cell = check_cell_source("check.softmax(my_softmax)")
    space = {"my_softmax": fitted}
    with pytest.raises(AssertionError, match="On the hidden cases"):
        exec(compile(cell, "test cell", "exec"), space)
    space = {"my_softmax": right}
    exec(compile(cell, "test cell", "exec"), space)  # a right answer passes both


def test_a_patched_library_is_refused(monkeypatch):
    import attnlib

    def right(scores):
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    cell = check_cell_source("check.softmax(my_softmax)")
    exec(compile(cell, "test cell", "exec"), {"my_softmax": right})  # nothing changed: graded
    monkeypatch.setattr(attnlib.MultiHeadAttention, "forward", lambda self, x: x)
    with pytest.raises(AssertionError, match=r"changed attnlib.*attnlib\.MultiHeadAttention"):
        exec(compile(cell, "test cell", "exec"), {"my_softmax": right})


def test_the_docs_show_the_test_cell_that_the_course_writes():
    text = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    shown = text[text.index("```python\nfor _module in") + len("```python\n") :]
    shown = shown[: shown.index("```")]
    assert shown.strip() in check_cell_source("check.softmax(my_softmax)"), (
        "docs/grading.md shows another test cell than tools/course.py writes"
    )


def test_make_course_leaves_a_file_the_instructor_changed(tmp_path):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / NOTEBOOKS[0].name).write_bytes(NOTEBOOKS[0].read_bytes())
    first = build(tmp_path / "nb", tmp_path / "course")
    assert {"nbgrader_config.py", "steady_kernel.py"} <= set(first["written"]) and len(first["written"]) == 3
    copied = (tmp_path / "course" / "steady_kernel.py").read_text()
    assert copied == (ROOT / "tools" / "kernels.py").read_text()
    config = tmp_path / "course" / "nbgrader_config.py"
    config.write_text(config.read_text() + "\nc.Exchange.root = '/srv/exchange'\n")
    again = build(tmp_path / "nb", tmp_path / "course")
    assert again["kept"] == ["nbgrader_config.py"] and sorted(again["unchanged"]) == [
        f"source/{NOTEBOOKS[0].stem}/{NOTEBOOKS[0].name}",
        "steady_kernel.py",
    ]
    assert "/srv/exchange" in config.read_text()


def _pins(name: str) -> dict[str, str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    reqs = [line for line in lines if line.strip() and not line.startswith("#")]
    assert all("==" in r for r in reqs), f"{name}: every requirement must be an exact pin"
    return {re.sub(r"[-_.]+", "-", r.split("==")[0]).lower(): r.split("==")[1] for r in reqs}


def test_the_course_pins_add_nbgrader_to_the_series_pins():
    course, series = _pins("requirements-course.txt"), _pins("requirements.txt")
    wanted = re.search(r"^nbgrader==(\S+)", (ROOT / "requirements-course.in").read_text(), re.M)[1]
    assert course["nbgrader"] == wanted
    assert not set(course) & set(series), "requirements-course.txt repeats pins of requirements.txt"
    assert "nbgrader" not in (ROOT / "requirements.in").read_text(), "make lab must not install nbgrader"


@pytest.mark.publish
@pytest.mark.skipif(not (COURSE_BIN / "python").exists(), reason="needs .venv-course: make course-test")
def test_the_course_venv_has_both_sets_of_pins_and_pip_check_is_clean():
    code = (
        "import json, sys; from importlib.metadata import version; "
        "print(json.dumps({n: version(n).split('+')[0] for n in sys.argv[1:]}))"
    )
    pins = {**_pins("requirements.txt"), **_pins("requirements-course.txt")}
    out = subprocess.run(
        [str(COURSE_BIN / "python"), "-c", code, *pins], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == pins
    # .venv's own `pip check` lists only the test-only llms-from-scratch, installed without its
    # requirements (docs/conventions.md); nbgrader and what it adds must add nothing to that.
    check = subprocess.run([str(COURSE_BIN / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    complaints = [line for line in check.stdout.splitlines() if not line.startswith(TEST_ONLY)]
    assert check.stdout and not complaints, check.stdout


# --- nbgrader's own commands --------------------------------------------------------------------

GRADES = """
import json, sys
from nbgrader.api import Gradebook
with Gradebook("sqlite:///gradebook.db") as gb:
    print(json.dumps({s.student_id: {g.name: None if g.needs_manual_grade else g.score
                                      for nb in s.notebooks for g in nb.grades}
                      for s in gb.assignment_submissions(sys.argv[1])}))
"""


CLIENT_CLASS = """
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.preprocessors import Execute
execute = Execute(config=PyFileConfigLoader("nbgrader_config.py", path=".").load_config())
client = execute.kernel_manager_class(kernel_name="python3", config=execute.config).client()
print(f"{type(client).__module__}.{type(client).__qualname__}")
"""


def nbgrader(course: Path, *args: str) -> str:
    env = {**os.environ, "PATH": f"{COURSE_BIN}{os.pathsep}{os.environ['PATH']}"}  # nbgrader runs `alembic`
    start = time.perf_counter()
    result = subprocess.run(
        [str(COURSE_BIN / args[0]), *args[1:]],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    print(f"{' '.join(args[:2])}: {time.perf_counter() - start:.1f} s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Exception while loading config file" not in result.stderr, result.stderr
    return result.stdout + result.stderr


def _grade_ids(nb: dict) -> list[str]:
    return [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"] if "nbgrader" in c["metadata"]]


def _without_markers(source: str) -> str:
    """The solution as a student would hand it in: the course's answer cell without nbgrader's markers."""
    return "\n".join(line for line in source.split("\n") if BEGIN not in line and END not in line)


def _submit(course: Path, name: str, student: str, nb: dict) -> None:
    folder = course / "submitted" / student / name
    folder.mkdir(parents=True)
    (folder / f"{name}.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _with(release: dict, answers: dict[str, str], tests: dict[str, str | None] | None = None) -> dict:
    """The release with these answer cells (and test cells) edited, by grade_id; None deletes a cell."""
    nb = json.loads(json.dumps(release))
    edits = {**answers, **(tests or {})}
    nb["cells"] = [
        c for c in nb["cells"] if edits.get(c["metadata"].get("nbgrader", {}).get("grade_id"), "") is not None
    ]
    for cell in nb["cells"]:
        cell["source"] = edits.get(cell["metadata"].get("nbgrader", {}).get("grade_id"), cell["source"])
    return nb


# The cheats: each keeps the stub, so that only fooling the check could earn the points.
PATCH = """{stub}

import attnlib.check
from attnlib.check import Verdict

fake = lambda *args, **kwargs: Verdict(True, "Passed: (patched)", "pass")
attnlib.check.{name} = fake  # the check itself
attnlib.check._core.run_check = attnlib.check._core.check_answer = fake  # and the engine under it
print("my check says:", {call})"""
REDEFINE = """{stub}

from attnlib.check import Verdict


class check:  # a check of my own
    {name} = staticmethod(lambda *args, **kwargs: Verdict(True, "Passed: (mine)", "pass"))


print("my check says:", {call})"""


def _cheats(release: dict, checks: dict[str, str]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Answer and test cells that fool the check in the student's own kernel, each on one exercise:
    patching attnlib.check (and its engine), editing the test cell, redefining `check`, and (where
    there is a fourth exercise) deleting the test cell. Each answer cell prints what its own check
    then says. A test cell mapped to None is deleted."""
    stubs = {
        c["metadata"]["nbgrader"]["grade_id"]: _source(c)
        for c in release["cells"]
        if "nbgrader" in c["metadata"]
    }
    numbers = [grade_id.removeprefix("check_") for grade_id in checks]
    answers, tests = {}, {}
    for way, number in zip(("patch", "edit", "redefine", "delete"), numbers, strict=False):
        call = checks[f"check_{number}"]
        name = re.match(r"check\.(\w+)\(", call)[1]
        stub = stubs[f"answer_{number}"]
        if way == "patch":
            answers[f"answer_{number}"] = PATCH.format(stub=stub, name=name, call=call)
        elif way == "edit":
            answers[f"answer_{number}"] = stub
            tests[f"check_{number}"] = "print('Passed: all cases pass.')"
        elif way == "redefine":
            answers[f"answer_{number}"] = REDEFINE.format(stub=stub, name=name, call=call)
        else:
            answers[f"answer_{number}"] = stub
            tests[f"check_{number}"] = None
    return answers, tests, numbers[:4]


def _wrong(name: str, release: dict) -> tuple[str, str, str]:
    """One plausible wrong answer: (exercise number, answer cell, text its feedback must show)."""
    if name in WRONG:
        return WRONG[name]
    cell = next(c for c in release["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    number = cell["metadata"]["nbgrader"]["grade_id"].removeprefix("answer_")
    # Forgetting `return` (or predicting None): the check says so.
    wrong = _source(cell).replace(STUB, "return None").replace("= ...  # your prediction", "= None")
    return number, wrong, "Wrong"


CHOSEN = [p for p in NOTEBOOKS if os.environ.get("COURSE_NOTEBOOKS") == "all" or p.stem == CI_NOTEBOOK]


@pytest.mark.publish
@pytest.mark.skipif(not (COURSE_BIN / "nbgrader").exists(), reason="needs .venv-course: make course-test")
@pytest.mark.parametrize("path", CHOSEN, ids=lambda p: p.stem)
def test_nbgrader_releases_the_student_edition_and_grades_four_submissions(tmp_path, path):
    name = path.stem
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / path.name).write_bytes(path.read_bytes())
    course = tmp_path / "course"
    build(tmp_path / "notebooks", course)
    # Autograding's kernel client waits in slices (tools/kernels.py): built as nbclient builds it.
    made = subprocess.run(
        [str(COURSE_BIN / "python"), "-c", CLIENT_CLASS], cwd=course, capture_output=True, text=True
    )
    assert made.stdout.strip() == "steady_kernel.SteadyKernelClient", made.stdout + made.stderr
    nbgrader(course, "nbgrader", "generate_assignment", name)

    # The release is the student edition: the same cells, text, outputs and ids (nbgrader's own
    # metadata aside: its cell ids and checksums, and `editable`/`deletable` on the cells it locks).
    release = _read(course / "release" / name / path.name)
    student = student_notebook(_read(path))
    assert release["metadata"] == student["metadata"]
    assert len(release["cells"]) == len(student["cells"])
    for got, want in zip(release["cells"], student["cells"], strict=True):
        meta = {k: v for k, v in got["metadata"].items() if k not in ("nbgrader", "editable", "deletable")}
        assert (got["cell_type"], _source(got), meta) == (want["cell_type"], _source(want), want["metadata"])
        assert (got.get("outputs"), got.get("id")) == (want.get("outputs"), want.get("id"))

    source = _read(course / "source" / name / path.name)
    solutions = {
        c["metadata"]["nbgrader"]["grade_id"]: _without_markers(_source(c))
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    checks = {
        c["metadata"]["nbgrader"]["grade_id"]: _source(c).split("\n")[-1]
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade") and not c["metadata"]["nbgrader"]["solution"]
    }
    wrong_number, wrong_answer, wrong_says = _wrong(name, release)
    cheat_answers, cheat_tests, cheated = _cheats(release, checks)
    _submit(course, name, "solution", _with(release, solutions))
    _submit(course, name, "unchanged", release)
    _submit(course, name, "wrong", _with(release, {**solutions, f"answer_{wrong_number}": wrong_answer}))
    _submit(course, name, "cheat", _with(release, {**solutions, **cheat_answers}, cheat_tests))

    # All four submissions in one call. Its kernels talk over Unix sockets, as nbval's do
    # (conftest.py): a kernel on TCP could pick the port that a kernel of the other worker picks.
    sockets = Path(tempfile.mkdtemp(prefix="nbgrader-"))  # short: a socket path has at most 107 bytes
    try:
        nbgrader(
            course,
            *(
                "nbgrader",
                "autograde",
                name,
                "--KernelManager.transport=ipc",
                f"--KernelManager.ip={sockets}/k",
            ),
        )
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    nbgrader(course, "nbgrader", "generate_feedback", name)
    graded = json.loads(nbgrader(course, "python", "-c", GRADES, name).strip().splitlines()[-1])
    reasons = {
        g: c["metadata"]["nbgrader"]["points"]
        for c in source["cells"]
        if (g := c["metadata"].get("nbgrader", {}).get("grade_id", "")).startswith("reasoning_")
    }
    # A prediction's reasoning waits for the instructor (None: needs a manual grade), unless it was
    # left as released (0).
    assert {g: graded["solution"][g] for g in reasons} == dict.fromkeys(reasons)
    assert {g: graded["unchanged"][g] for g in reasons} == dict.fromkeys(reasons, 0)
    scores = {who: {g: v for g, v in grades.items() if g not in reasons} for who, grades in graded.items()}
    points = {
        g: c["metadata"]["nbgrader"]["points"]
        for c in source["cells"]
        if (g := c["metadata"].get("nbgrader", {}).get("grade_id")) in checks
    }
    print(f"{name}: {json.dumps(scores, sort_keys=True)}")

    assert scores["solution"] == points
    assert scores["unchanged"] == dict.fromkeys(points, 0)
    assert scores["wrong"] == {**points, f"check_{wrong_number}": 0}
    assert scores["cheat"] == {**points, **{f"check_{n}": 0 for n in cheated}}

    feedback = html.unescape(
        (course / "feedback" / "wrong" / name / f"{name}.html").read_text(encoding="utf-8")
    )
    assert wrong_says in feedback
    # The cheats did fool the check in the student's own kernel, and were graded without it:
    graded = _read(course / "autograded" / "cheat" / name / path.name)
    said = "".join(
        "".join(o.get("text", "")) for c in graded["cells"] if c["cell_type"] == "code" for o in c["outputs"]
    )
    assert "my check says: Passed: (patched)" in said
    if len(cheated) > 2:
        assert "my check says: Passed: (mine)" in said
    if len(cheated) > 3:  # the deleted test cell is back, and ran
        back = f"check_{cheated[3]}"
        cell = next(c for c in graded["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == back)
        assert "was missing from the submission" in _source(cell) and cell["outputs"]
    if len(cheated) > 1:  # the edited test cell is nbgrader's again
        edited = f"check_{cheated[1]}"
        restored = next(
            c for c in graded["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == edited
        )
        want = next(c for c in source["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == edited)
        assert _source(restored) == _source(want)

    nbgrader(course, "nbgrader", "export")  # grades.csv
    csv = (course / "grades.csv").read_text(encoding="utf-8")
    total, most = sum(points.values()), float(sum(points.values()) + sum(reasons.values()))
    assert f"{name},,,solution,,,,{float(total)},0.0,{float(total)},{most}" in csv
    assert f"{name},,,unchanged,,,,0.0,0.0,0.0,{most}" in csv


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_publish_builds_the_course_layer_it_grades_with():
    """`make test-publish` depends on .venv-course (else the nbgrader test above is skipped on a fresh
    clone), and runs that test: make expands a rule's prerequisites when it reads it, so COURSE_STAMP
    must be set before `test-publish:`. `make test` leaves the publish tests out and needs no nbgrader."""
    database = subprocess.run(
        ["make", "-pnq", "--no-print-directory", "-f", "Makefile", "no-such-target"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    rules = {
        line.split(":")[0]: line
        for line in database.splitlines()
        if line.startswith(("test:", "test-publish:"))
    }
    assert ".venv-course/.installed" in rules["test-publish"].split(), rules["test-publish"]
    assert ".venv-course/.installed" not in rules["test"].split(), rules["test"]
    marks = test_nbgrader_releases_the_student_edition_and_grades_four_submissions.pytestmark
    assert "publish" in [mark.name for mark in marks]
