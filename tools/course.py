"""Write the series as an nbgrader course: every exercise an autograded answer, every check a test cell.

Usage: ``python -m tools.course [--draws N] [SOURCE_DIR] [COURSE_DIR]`` (``make course`` runs
``notebooks`` -> ``build/course``); ``python -m tools.course --table [FILE]`` prints the points per
notebook, or rewrites the table between the markers in FILE (``docs/grading.md``).

Each notebook becomes ``source/<NN_name>/<NN_name>.ipynb``, built by the student edition's rules
(:func:`tools.student.student_notebook`: speaker notes and answer-giving cells left out, the
Exercises intro naming the tag ``exercise``) plus nbgrader's cell metadata, so that
``nbgrader generate_assignment`` releases the student edition, cell for cell:

- a solution cell becomes an autograded answer: its code, with each part that the student edition
  replaces between nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers (function
  bodies; a marker line ``### BEGIN SOLUTION -> x = ...  # your prediction`` names a stub of its
  own, which the ``nbgrader_config.py`` written here honours);
- a check cell (``check.<name>(...)``) becomes an autograder test cell worth the exercise's points.
  Students see the call as in the student edition; a hidden part (nbgrader's ``### BEGIN HIDDEN
  TESTS``), run before it at grading time, imports the check afresh from the installed attnlib and
  makes the call run it on its own cases and on hidden ones (the same cases from seeds shifted by
  ``--draws``), raising ``AssertionError`` with the verdict's message unless both passed;
- an exercise with no check cell is graded by hand: its answer cell is a manually graded answer;
- a prediction's ``reasoning`` cell (markdown: why the value is what it is) is a manually graded
  answer too, worth :data:`REASONING_POINTS`; nbgrader releases it as the student edition's prompt.

Points come from one table, :data:`POINTS`, by the kind of each exercise (:func:`exercise_kind`).
docs/grading.md says what the test cells protect against, and what they do not.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .student import (
    CHECK_CALL,
    EXERCISE_HEADING,
    REASONING_PROMPT,
    REASONING_START,
    SECTION_HEADING,
    SOLUTION_TAG,
    STUB,
    _dumps,
    _source,
    answer_cells,
    is_reasoning,
    print_report,
    stub_source,
    student_notebook,
    write_unless_edited,
)

#: Points per exercise, by kind: predicting a value < writing a function < building a class
#: (an ``nn.Module`` with its parameters and forward pass).
POINTS = {"predict": 1, "function": 2, "module": 4}
KIND_WORDS = {"predict": "predict a value", "function": "write a function", "module": "build an nn.Module"}
#: A prediction's written reasoning (its ``reasoning`` cell), graded by hand: running the code gives
#: the value away, so the reasoning is the part that shows the idea was understood.
REASONING_POINTS = 1

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: A solution region whose stub is not ClearSolutions.code_stub: ``### BEGIN SOLUTION -> STUB``
#: releases as STUB (one line, at the marker's indent); with nothing after the arrow, as nothing.
OWN_STUB = " ->"
MANIFEST = ".course.json"
TABLE_START = "<!-- points table: written by `python -m tools.course --table docs/grading.md` -->"
TABLE_END = "<!-- end of the points table -->"
_NUMBER = re.compile(r"#{3,}\s+Exercise\s+(\d+(?:\.\d+)*)")
_TITLE = re.compile(r"#{3,}\s+Exercise\s+[\d.]*\s*[—-]?\s*(.*)")


@dataclass(frozen=True)
class Exercise:
    """One graded item of a notebook: its number ("1.2"), title, kind and points."""

    number: str
    title: str
    kind: str
    points: int
    checked: bool  # graded by a check cell (autograded), else by hand
    reasoned: bool = False  # has a ``reasoning`` cell, graded by hand

    @property
    def all_points(self) -> int:
        """The answer's points and, where there is one, the reasoning's."""
        return self.points + (REASONING_POINTS if self.reasoned else 0)

    @property
    def grade_id(self) -> str:
        return self.number.replace(".", "_")


def exercise_kind(source: str) -> str:
    """``"module"`` for a solution that defines a class, ``"function"`` for one that defines a function,
    ``"predict"`` for one that only assigns values."""
    nodes = ast.parse(source).body
    if any(isinstance(n, ast.ClassDef) for n in nodes):
        return "module"
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in nodes):
        return "function"
    return "predict"


def _is_solution(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def _is_check(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and bool(CHECK_CALL.search(_source(cell)))


def _heading(cell: dict) -> str | None:
    """The text of a markdown cell that starts a section or an exercise, else None."""
    text = _source(cell).lstrip()
    if cell.get("cell_type") == "markdown" and (EXERCISE_HEADING.match(text) or SECTION_HEADING.match(text)):
        return text
    return None


def exercise_regions(cells: list[dict]) -> list[tuple[str, list[int]]]:
    """Each exercise's heading text and the indices of the cells under it (to the next heading)."""
    regions: list[tuple[str, list[int]]] = []
    current: list[int] | None = None
    for i, cell in enumerate(cells):
        text = _heading(cell)
        if text is not None:
            current = None
            if EXERCISE_HEADING.match(text):
                current = []
                regions.append((text, current))
        elif current is not None:
            current.append(i)
    return regions


def exercises(nb: dict) -> list[Exercise]:
    """The graded exercises of a notebook (its solution cells grouped by exercise heading).

    Raises:
        ValueError: a solution cell outside any exercise, or an exercise with two check cells.
    """
    cells = nb["cells"]
    found, seen = [], set()
    for count, (heading, indices) in enumerate(exercise_regions(cells), start=1):
        solutions = [i for i in indices if _is_solution(cells[i])]
        checks = [i for i in indices if _is_check(cells[i])]
        reasons = [i for i in indices if is_reasoning(cells[i])]
        seen.update(solutions)
        seen.update(reasons)
        if not solutions:
            continue
        number = m[1] if (m := _NUMBER.match(heading)) else str(count)
        for i in reasons:
            if len(reasons) > 1 or not _source(cells[i]).startswith(REASONING_START):
                raise ValueError(
                    f"exercise {number}: one `reasoning` cell, starting {REASONING_START.strip()!r}, was "
                    f"expected; got {len(reasons)}, the first starting {_source(cells[i])[:20]!r}"
                )
            if checks and i > checks[-1]:
                raise ValueError(
                    f"exercise {number}: its `reasoning` cell comes after the check, where the student "
                    "edition drops it (put it between the solution cell and the check)"
                )
        if len(checks) > 1 or len(solutions) > 1:
            raise ValueError(
                f"exercise {number} has {len(solutions)} solution cells and {len(checks)} check cells; "
                "the course grades one answer cell with at most one check: split the exercise"
            )
        kind = exercise_kind(_source(cells[solutions[0]]))
        title = _TITLE.match(heading.splitlines()[0])[1].strip()
        found.append(Exercise(number, title, kind, POINTS[kind], bool(checks), bool(reasons)))
    answers = [i for i, cell in enumerate(cells) if _is_solution(cell) or is_reasoning(cell)]
    stray = [i for i in answers if i not in seen]
    if stray:
        raise ValueError(f"solution or reasoning cells outside any '### Exercise' section: cells {stray}")
    return found


# --- answer cells -------------------------------------------------------------------------------


def _region(body: list[str], stub: list[str]) -> list[str]:
    """Source lines that run ``body`` and that nbgrader releases as ``stub`` (one line or none)."""
    if len(stub) > 1:
        raise ValueError(f"a stub of one line was expected, got {stub}")
    shown = stub[0] if stub else next((line for line in body if line.strip()), "")
    indent = shown[: len(shown) - len(shown.lstrip())]
    if stub and stub[0].strip() == STUB:
        begin = indent + BEGIN  # nbgrader's own: the region becomes ClearSolutions.code_stub
    else:
        begin = indent + BEGIN + OWN_STUB + (" " + stub[0][len(indent) :] if stub else "")
    return [begin, *body, indent + END]


def _regions(own: list[str], stub: list[str]) -> list[str]:
    """One definition's lines with solution regions where its student version (``stub``) differs."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, own, stub, autojunk=False)
    for op, a, b, c, d in matcher.get_opcodes():
        body, shown = own[a:b], stub[c:d]
        if op == "equal":
            out += body
            continue
        # Blank lines the student version adds or drops are layout: the source takes its layout.
        while shown and not shown[0].strip():
            out.append(shown.pop(0))
        tail = []
        while shown and not shown[-1].strip():
            tail.append(shown.pop())
        if not body and not shown:
            pass
        elif not body:
            raise ValueError(f"the student version adds lines the solution does not have: {shown}")
        elif not shown and not any(line.strip() for line in body):
            pass  # blank lines only
        else:
            for line in shown[:-1]:  # a stub of several lines: one empty region per extra line
                out += _region([], [line]) if line.strip() else [line]
            out += _region(body, shown[-1:])
        out += tail
    return out


def answer_source(source: str) -> str:
    """A solution cell's source for the course: the same code, with the parts that the student
    edition replaces inside solution regions, so that nbgrader releases :func:`stub_source`."""
    lines = source.splitlines()
    tree = ast.parse(source)
    out: list[str] = []
    end = 0  # lines before `end` are written
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        gap = lines[end : first - 1]  # comments between definitions: the student edition drops them
        if out:
            out.append("")
        if any(line.strip() for line in gap):
            out += _region([line for line in gap if line.strip()], [])
        own = lines[first - 1 : node.end_lineno]
        out += _regions(own, stub_source("\n".join(own)).splitlines())
        end = node.end_lineno
    rest = [line for line in lines[end:] if line.strip()]
    if rest:
        out += _region(rest, [])
    return "\n".join(out)


def release_source(source: str) -> str:
    """What ``nbgrader generate_assignment`` with this course's config makes of a cell's source
    (solution regions replaced, hidden tests removed): the check that a course matches the
    student edition without running nbgrader. tests/tools/test_course.py runs nbgrader itself."""
    out: list[str] = []
    inside = None  # the END marker we are waiting for
    for line in source.split("\n"):
        if inside:
            inside = None if inside in line else inside
        elif BEGIN in line:
            indent = line[: len(line) - len(line.lstrip())]
            own = line.split(BEGIN + OWN_STUB, 1)
            if len(own) == 2:
                out += [indent + own[1][1:]] if own[1] else []
            else:
                out.append(indent + STUB)
            inside = END
        elif BEGIN_HIDDEN in line:
            inside = END_HIDDEN
        else:
            out.append(line)
    return "\n".join(out)


# --- test cells ---------------------------------------------------------------------------------

# Runs before the student's visible call `check.<name>(...)`, which it makes the graded one.
_GRADING = """{begin}
# Grading (hidden from students). `check` below is attnlib's check imported afresh from the
# installed package: nothing a cell above defined or patched in the checks takes part, and a
# library that a cell changed (a function or class of attnlib replaced or patched) is refused.
# The call after this block runs the check twice, on its own cases and on hidden ones (the same
# cases drawn from other random seeds), and raises AssertionError with the verdict's message
# (its hint) unless both pass.
import contextlib as _contextlib
import sys as _sys
import types as _types
import warnings as _warnings

for _module in [_m for _m in list(_sys.modules) if _m == "attnlib.check" or _m.startswith("attnlib.check.")]:
    del _sys.modules[_module]
from attnlib.check import {name} as _fresh_check
from attnlib.check._core import library_changes as _library_changes
from attnlib.check._core import other_draws as _other_draws


def _graded(*args, **kwargs):
    changed = _library_changes()
    if changed:
        raise AssertionError(f"a cell of this notebook changed attnlib, so it cannot be graded: {{changed}}")
    # A warning or a print to stderr would cost the points (nbgrader grades stderr as an error).
    with _warnings.catch_warnings(record=True), _contextlib.redirect_stderr(_sys.stdout):
        verdict = _fresh_check(*args, **kwargs)
        if verdict.status == "pass":
            with _other_draws({draws}):
                hidden = _fresh_check(*args, **kwargs)
            if hidden.status != "pass":
                said = "On the hidden cases (other random inputs): " + hidden.message
                verdict = _types.SimpleNamespace(status=hidden.status, message=said)
    print(verdict.message)
    if verdict.status != "pass":
        raise AssertionError(verdict.message)


check = _types.SimpleNamespace({name}=_graded)
{end}"""

#: The hidden cases' shift of every seed a check draws from (``make course COURSE_DRAWS=n``).
#: The default is public, as this file is: set your own to keep the hidden cases unseen.
DRAWS = 1000


def check_cell_source(source: str, draws: int = DRAWS) -> str:
    """A check cell's source for the course: its visible call, made the graded one by a hidden part."""
    tree = ast.parse(source)
    call = tree.body[0].value if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "check"
    ):
        raise ValueError(f"a check cell must hold one call `check.<name>(...)`, got {source!r}")
    grading = _GRADING.format(begin=BEGIN_HIDDEN, end=END_HIDDEN, name=call.func.attr, draws=draws)
    return grading + "\n" + source


# --- the course ---------------------------------------------------------------------------------


def _nbgrader(grade_id: str, *, solution: bool, grade: bool, points: int = 0) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": not solution,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return meta


def course_notebook(nb: dict, draws: int = DRAWS) -> dict:
    """The course's source version of ``nb``: the student edition, with the solutions inside
    solution regions and nbgrader's metadata on the answer and test cells."""
    graded = exercises(nb)
    student = student_notebook(nb)
    dropped = answer_cells(nb["cells"])
    originals = [cell for i, cell in enumerate(nb["cells"]) if i not in dropped]
    if len(originals) != len(student["cells"]):  # student_notebook drops exactly answer_cells
        raise RuntimeError("the student edition left out other cells than tools.student.answer_cells")
    by_region = {}
    for (_, indices), exercise in zip(
        [r for r in exercise_regions(nb["cells"]) if any(_is_solution(nb["cells"][i]) for i in r[1])],
        graded,
        strict=True,
    ):
        by_region.update(dict.fromkeys(indices, exercise))
    kept = [i for i in range(len(nb["cells"])) if i not in dropped]
    for index, original, cell in zip(kept, originals, student["cells"], strict=True):
        exercise = by_region.get(index)
        if exercise is None:
            continue
        if _is_solution(original):
            cell["source"] = answer_source(_source(original))
            cell["metadata"]["nbgrader"] = _nbgrader(
                f"answer_{exercise.grade_id}",
                solution=True,
                grade=not exercise.checked,
                points=exercise.points,
            )
        elif is_reasoning(original):
            cell["source"] = _source(original)  # nbgrader releases it as REASONING_PROMPT (text_stub)
            cell["metadata"]["nbgrader"] = _nbgrader(
                f"reasoning_{exercise.grade_id}", solution=True, grade=True, points=REASONING_POINTS
            )
        elif _is_check(original):
            cell["source"] = check_cell_source(_source(original), draws)
            cell["metadata"]["nbgrader"] = _nbgrader(
                f"check_{exercise.grade_id}", solution=False, grade=True, points=exercise.points
            )
    for mine, theirs in zip(student["cells"], student_notebook(nb)["cells"], strict=True):
        released = REASONING_PROMPT if is_reasoning(mine) else release_source(_source(mine))
        if released != _source(theirs):
            raise RuntimeError(f"the release of this cell would differ from the student edition:\n{mine}")
    return student


def assignment_name(path: Path) -> str:
    return path.stem


CONFIG = '''"""nbgrader settings for the attnlib course. Written by `make course` (tools/course.py);
docs/grading.md explains every setting. Run nbgrader from this folder."""

import os
import re
import sys

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearOutput, ClearSolutions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # steady_kernel.py, beside this file

c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# The exchange, for `nbgrader release_assignment` / `collect` on a shared machine or JupyterHub:
# c.CourseDirectory.course_id = "attention-2027"
# c.Exchange.root = "/srv/nbgrader/exchange"

# Autograding runs each submission top to bottom in a fresh kernel. Per cell: the notebooks' longest
# training cell takes about a minute on a laptop; 600 s is `make execute`'s limit. nbgrader has no
# limit for the whole run: give one to the container or the job that runs it.
c.Execute.timeout = 600
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
# Each reply is waited for in one-second slices (steady_kernel.py, a copy of the series'
# tools/kernels.py): a reply whose socket wake-up was missed is read within a second, not after
# the 600 s. nbgrader's Execute fixes its kernel manager's class, so the client class is set there.
c.AsyncKernelManager.client_class = "steady_kernel.SteadyKernelClient"

# A test cell that a submission lacks is put back (after the answer cell) and run, instead of
# scoring 0 as nbgrader does by default: deleting a check neither earns nor costs points.
c.OverwriteCells.add_missing_cells = True

# The stub is the student edition's (tools/student.py), so that the release is the student edition.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
# A prediction's reasoning cell (markdown, graded by hand) releases as the student edition's prompt.
c.ClearSolutions.text_stub = {prompt!r}


class ClearSolutionsOwnStubs(ClearSolutions):
    """ClearSolutions, where a region may name its own stub: `### BEGIN SOLUTION -> x = ...` releases
    as the line `x = ...` (at the marker's indent), `### BEGIN SOLUTION ->` alone as nothing. A plain
    `### BEGIN SOLUTION` releases as ClearSolutions.code_stub, as in stock nbgrader."""

    def _replace_solution_region(self, cell, language):
        own = re.compile(r"^(\\s*)#*\\s*" + re.escape(self.begin_solution_delimeter) + r" ->(?: (.*))?$")
        lines, inside, replaced = [], False, False
        for line in cell.source.split("\\n"):
            match = None if inside else own.match(line)
            if match:
                lines += [match[1] + match[2]] if match[2] else []
                inside = replaced = True
            elif inside and self.end_solution_delimeter in line:
                inside = False
            elif inside and self.begin_solution_delimeter in line:
                raise RuntimeError("encountered nested begin solution statements")
            elif not inside:
                lines.append(line)
        if inside:
            raise RuntimeError("no end solution statement found")
        cell.source = "\\n".join(lines)
        return super()._replace_solution_region(cell, language) or replaced


# The release keeps the lesson's stored outputs (figures, printed tensors), as the student edition
# does; the answer and test cells of the source have none. ClearOutput still runs in autograding.
c.GenerateAssignment.preprocessors = [
    ClearSolutionsOwnStubs if p is ClearSolutions else p
    for p in GenerateAssignment.class_traits()["preprocessors"].default()
    if p is not ClearOutput
]
'''


def config_text() -> str:
    return CONFIG.format(stub=STUB, prompt=REASONING_PROMPT)


def build(source_dir: Path, course_dir: Path, draws: int = DRAWS) -> dict[str, list[str]]:
    """Write the course for every notebook of ``source_dir`` into ``course_dir``.

    A file this tool wrote and someone changed since (``MANIFEST`` keeps digests) is left alone, as
    is everything nbgrader writes (gradebook, release, submitted, ...).

    Returns:
        ``{"written": [...], "unchanged": [...], "kept": [...]}``, paths relative to ``course_dir``.
    """
    texts = {
        "nbgrader_config.py": config_text(),
        "steady_kernel.py": (Path(__file__).with_name("kernels.py")).read_text(encoding="utf-8"),
    }
    for path in sorted(source_dir.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        texts[f"source/{assignment_name(path)}/{path.name}"] = _dumps(course_notebook(nb, draws))
    return write_unless_edited(course_dir, texts, MANIFEST)


# --- the table of points ------------------------------------------------------------------------


def points_table(source_dir: Path) -> str:
    """The points of every exercise, one row per notebook, as a Markdown table."""
    rows = [
        "| Notebook | Exercises: points each | Points |",
        "|---|---|--:|",
    ]
    total = 0
    for path in sorted(source_dir.glob("*.ipynb")):
        found = exercises(json.loads(path.read_text(encoding="utf-8")))
        items = ", ".join(
            f"{e.number} {e.kind} {e.points}"
            + ("" if e.checked else " (by hand)")
            + (f" + why {REASONING_POINTS} (by hand)" if e.reasoned else "")
            for e in found
        )
        points = sum(e.all_points for e in found)
        total += points
        rows.append(f"| {path.stem} | {items} | {points} |")
    rows.append(f"| **All {len(rows) - 2}** | | **{total}** |")
    legend = ", ".join(f"{kind} ({KIND_WORDS[kind]}) {points}" for kind, points in POINTS.items())
    why = f"the written reasoning of a prediction (its `reasoning` cell, graded by hand) {REASONING_POINTS}"
    return "\n".join(rows) + f"\n\nPoints by kind: {legend}; {why}.\n"


def with_table(text: str, table: str) -> str:
    """``text`` with the block between :data:`TABLE_START` and :data:`TABLE_END` replaced by ``table``."""
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return text[:start] + "\n" + table + text[end:]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.course", description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="notebooks", help="notebooks (default: notebooks)")
    parser.add_argument("course", nargs="?", default="build/course", help="default: build/course")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"the hidden cases' seed shift ({DRAWS})")
    parser.add_argument(
        "--table", nargs="?", const="-", metavar="FILE", help="print the points table, or write it into FILE"
    )
    args = parser.parse_args(argv)
    if args.draws == 0:
        parser.error("--draws 0 would make the hidden cases the visible ones")
    if args.table:
        table = points_table(Path(args.source))
        if args.table == "-":
            print(table, end="")
        else:
            path = Path(args.table)
            path.write_text(with_table(path.read_text(encoding="utf-8"), table), encoding="utf-8")
            print(f"wrote the points table into {path}")
        return 0
    target = Path(args.course)
    print_report(target, build(Path(args.source), target, args.draws))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
