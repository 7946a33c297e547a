"""Write the student edition of the notebooks: solutions become stubs, nothing a student
edited is ever overwritten.

Usage: ``python -m tools.student [SOURCE_DIR] [TARGET_DIR] [--lang LANG]`` (``make student`` runs
``notebooks`` -> ``student``; the Chinese edition is ``build/zh`` -> ``student-zh`` with
``--lang zh_CN``, from the notebooks that ``make zh`` writes).

A code cell tagged ``solution`` keeps its imports and the signatures and docstrings of its
functions and classes; every function body becomes ``raise NotImplementedError``, every
top-level assignment (a prediction) becomes ``name = ...``, and the tag becomes ``exercise``.
A markdown cell tagged ``reasoning`` (after a prediction: why the value is what it is, the part
of a prediction that no check can grade) becomes the prompt :data:`REASONING_PROMPT`. The outputs
of solution cells and of exercise-check cells are cleared. Nothing that gives an answer away
reaches the student:

- speaker notes (cells of slide type ``notes``) are dropped;
- so is whatever follows an exercise's last check before the next heading (an experiment
  that confirms the answer, e.g. after exercise 2.4);
- the intro of the Exercises section says where to write: "the cell tagged ``exercise``".

Every other cell is copied unchanged.

**Other languages.** A translated notebook (``python -m tools.i18n build``, which records its language
in ``metadata.attnlib.language``) gets the same treatment: the cells are found by their tags and
slide types, and the headings by the English or the translated words (:data:`EXERCISES_HEADING`,
:data:`EXERCISE_HEADING`). Code cells, stubs included, are the English student edition's. What this
tool writes in prose, the reasoning prompt, comes from ``locale/<lang>/site.po`` through
:mod:`tools.ui` (it needs Babel, which the translated edition needs anyway); the Exercises intro
keeps its translated wording and only names the tag ``exercise`` where it named ``solution``. The
English edition needs nothing beyond the standard library.

``TARGET_DIR/.edition.json`` records a hash of each file as written. A file whose content
no longer matches (the student changed it) is left alone and reported; delete or rename it
to get a fresh copy.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import re
import sys
from pathlib import Path

from .ui import N_  # the marker only: tools.ui imports Babel where a catalogue is made

SOLUTION_TAG = "solution"
EXERCISE_TAG = "exercise"
NOTES = "notes"
REASONING_TAG = "reasoning"
#: How a ``reasoning`` cell starts in the notebooks (the model answer), and what the student edition
#: puts in its place (nbgrader's ``ClearSolutions.text_stub`` in the course, so the release matches).
REASONING_START = "**Why.** "


REASONING_PROMPT = N_(
    "**Why?** Write your reasoning here, in a sentence or two, before you run anything: "
    "the check grades the answer, not how you found it."
)
ENGLISH = "en"
MANIFEST = ".edition.json"
STUB = 'raise NotImplementedError("Exercise: replace this line with your code")'
CHECK_CALL = re.compile(r"\bcheck\.\w+\(")
# The headings in English and as the notebook catalogues translate them ("## 练习", "### 练习 1.1——...").
EXERCISES_HEADING = re.compile(r"#{1,2}\s+(?:Exercises\b|练习(?=\s|$))")
EXERCISE_HEADING = re.compile(r"#{3,}\s+(?:Exercise\b|练习\s*\d)")
SECTION_HEADING = re.compile(r"#{1,2}\s")
# How an Exercises intro says where to write; older wordings included, so that a new notebook
# reads right in the student edition before `python -m tools.notes` has normalised it.
_WHERE = re.compile(
    r"in the (?:first (?:code )?cell of each exercise|cell tagged as the solution|cell tagged `\w+`)"
)
_HAS_CELL = re.compile(r"Each exercise has a cell for your (answer|code)(?:, tagged `\w+`,)?")
# A translated intro says where to write in its own words, around the tag's name as a code span.
_TAG_SPAN = re.compile(rf"`(?:{SOLUTION_TAG}|{EXERCISE_TAG})`")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _stub_function(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    body = node.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
    if body[0].lineno == node.lineno:
        raise ValueError(f"solution function {node.name!r} must have its body on its own lines")
    # keep the signature and the docstring; comments inside the body go with it
    last = body[0].end_lineno if has_doc else _signature_end(lines, node)
    header = lines[first - 1 : last]
    indent = " " * body[0].col_offset
    return [*header, f"{indent}{STUB}\n"]


def _signature_end(lines: list[str], node: ast.AST) -> int:
    """Last line (1-based) of a def's signature: the first line at or after ``def`` ending in ':'."""
    for i in range(node.lineno - 1, len(lines)):
        if lines[i].split("#")[0].rstrip().endswith(":"):
            return i + 1
    raise ValueError("could not find the end of a signature")


def _stub_class(lines: list[str], node: ast.ClassDef) -> list[str]:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    out = lines[first - 1 : _signature_end(lines, node)]
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += ["\n", *_stub_function(lines, item)]
        else:  # docstring and class attributes stay
            out += lines[item.lineno - 1 : item.end_lineno]
    return out


def stub_source(source: str) -> str:
    """The student version of one solution cell's source."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    out: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out += lines[node.lineno - 1 : node.end_lineno]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += _stub_function(lines, node)
        elif isinstance(node, ast.ClassDef):
            out += _stub_class(lines, node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = " = ".join(ast.get_source_segment(source, t) for t in targets)
            out.append(f"{names} = ...  # your prediction\n")
        else:
            raise ValueError(
                f"a solution cell may hold imports, functions, classes and assignments, "
                f"got {type(node).__name__} on line {node.lineno}"
            )
        out.append("\n")
    return "".join(out).rstrip("\n")


def exercise_intro(text: str, tag: str, lang: str = ENGLISH) -> str:
    """The Exercises intro ``text`` saying that answers go into the cell tagged ``tag``.

    In English the sentence that says where is rewritten (older wordings included); in a
    translation, which keeps that sentence's tag as a code span, the span names ``tag``.
    """
    if lang != ENGLISH:
        return _TAG_SPAN.sub(f"`{tag}`", text)
    text = _WHERE.sub(f"in the cell tagged `{tag}`", text)
    return _HAS_CELL.sub(lambda m: f"Each exercise has a cell for your {m[1]}, tagged `{tag}`,", text)


def is_reasoning(cell: dict) -> bool:
    """A markdown cell tagged ``reasoning``: a prediction's "why", written by the student."""
    return cell.get("cell_type") == "markdown" and REASONING_TAG in cell.get("metadata", {}).get("tags", [])


def is_notes(cell: dict) -> bool:
    """A speaker-notes cell (slide type ``notes``), in any language."""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type") == NOTES


def answer_cells(cells: list[dict]) -> set[int]:
    """Indices of the cells that give answers away: speaker notes, and in each exercise the
    cells after its last check call (up to the next heading)."""
    found = {i for i, cell in enumerate(cells) if is_notes(cell)}
    region: list[int] | None = None  # the cells of the current exercise, after its heading
    for i, cell in enumerate([*cells, {"cell_type": "markdown", "source": "## end"}]):
        text = _source(cell).lstrip()
        heading = cell.get("cell_type") == "markdown" and (
            EXERCISE_HEADING.match(text) or SECTION_HEADING.match(text)
        )
        if heading and region is not None:
            checks = [
                j
                for j in region
                if cells[j].get("cell_type") == "code" and CHECK_CALL.search(_source(cells[j]))
            ]
            if checks:
                found.update(j for j in region if j > checks[-1])
            region = None
        if heading and EXERCISE_HEADING.match(text):
            region = []
        elif region is not None:
            region.append(i)
    return found


def exercises_start(cells: list[dict]) -> int:
    """Index of the Exercises heading (the number of cells where there is none)."""
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and EXERCISES_HEADING.match(_source(cell).lstrip()):
            return i
    return len(cells)


def language(nb: dict) -> str:
    """The language of a notebook's prose: ``metadata.attnlib.language`` (``tools.i18n build``
    writes it), else English."""
    return nb.get("metadata", {}).get("attnlib", {}).get("language") or ENGLISH


def text(english: str, lang: str) -> str:
    """``english`` (a string marked ``N_``) in ``lang``: from ``locale/<lang>/site.po`` through
    :mod:`tools.ui`, imported only for a language other than English."""
    if lang == ENGLISH:
        return english
    from . import ui  # Babel: only the translated editions need it

    return ui.text(english, lang)


def student_notebook(nb: dict, lesson_notes: bool = False, lang: str | None = None) -> dict:
    """A copy of ``nb`` with solutions stubbed and everything that would give them away removed.

    Args:
        nb: a notebook (dict in nbformat 4).
        lesson_notes: keep the speaker notes before the Exercises heading (the class decks of
            :mod:`tools.slides` show them in the speaker view); the notes of the Exercises
            section discuss the answers and always go.
        lang: the language of its prose; by default the one it records (:func:`language`).
            The text this writes (the reasoning prompt, the intro's tag) is in that language.
    """
    lang = language(nb) if lang is None else lang
    prompt = text(REASONING_PROMPT, lang)
    nb = copy.deepcopy(nb)
    dropped = answer_cells(nb["cells"])
    if lesson_notes:
        start = exercises_start(nb["cells"])
        dropped = {i for i in dropped if i >= start or not is_notes(nb["cells"][i])}
    nb["cells"] = [cell for i, cell in enumerate(nb["cells"]) if i not in dropped]
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown" and EXERCISES_HEADING.match(_source(cell).lstrip()):
            cell["source"] = exercise_intro(_source(cell), EXERCISE_TAG, lang)
        if is_reasoning(cell):
            cell["source"] = prompt
        if cell.get("cell_type") != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        is_solution = SOLUTION_TAG in tags
        if is_solution:
            cell["source"] = stub_source(_source(cell))
            cell["metadata"]["tags"] = [t for t in tags if t != SOLUTION_TAG] + [EXERCISE_TAG]
        if is_solution or CHECK_CALL.search(_source(cell)):
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def _dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def student_text(path: Path, lang: str | None = None) -> str:
    """The student edition of the notebook at ``path``, as the text of its file.

    Raises:
        ValueError: ``lang`` is given and the notebook records another language (an English
            notebook handed to the Chinese edition, say).
    """
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    if lang is not None and language(nb) != lang:
        raise ValueError(
            f"expected a notebook in {lang} (the edition `python -m tools.i18n build --lang {lang}` "
            f"writes, e.g. make zh into build/zh), got {path} in {language(nb)}"
        )
    return _dumps(student_notebook(nb))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_unless_edited(target_dir: Path, texts: dict[str, str], manifest_name: str) -> dict[str, list[str]]:
    """Write ``texts`` (paths relative to ``target_dir`` -> file text), except over a file that
    someone changed since this wrote it: ``manifest_name`` in ``target_dir`` keeps the digests.

    Returns:
        ``{"written": [...], "unchanged": [...], "kept": [...]}``, relative paths; ``kept`` are
        files edited since, left as they were.
    """
    target_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = target_dir / manifest_name
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    report: dict[str, list[str]] = {"written": [], "unchanged": [], "kept": []}
    for relative, text in texts.items():
        target = target_dir / relative
        if target.exists():
            current = _digest(target.read_text(encoding="utf-8"))
            if current != manifest.get(relative):
                report["kept"].append(relative)
                continue
            if current == _digest(text):
                report["unchanged"].append(relative)
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        manifest[relative] = _digest(text)
        report["written"].append(relative)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return report


def print_report(target_dir: Path, report: dict[str, list[str]]) -> None:
    """Say what :func:`write_unless_edited` did, one line per file."""
    for name in report["written"]:
        print(f"wrote      {target_dir / name}")
    for name in report["unchanged"]:
        print(f"up to date {target_dir / name}")
    for name in report["kept"]:
        print(
            f"kept       {target_dir / name}: you have changed it, so it was not overwritten "
            f"(rename or delete it to get a fresh copy)"
        )


def build(source_dir: Path, target_dir: Path, lang: str | None = None) -> dict[str, list[str]]:
    """Write the student edition of every notebook in ``source_dir`` into ``target_dir``.

    ``lang``, where given, is the language every notebook must be in (:func:`student_text`).

    Returns:
        ``{"written": [...], "unchanged": [...], "kept": [...]}`` file names; ``kept`` are
        notebooks the student edited, left as they were.
    """
    paths = sorted(Path(source_dir).glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"expected notebooks (*.ipynb) in {source_dir}, got none")
    texts = {path.name: student_text(path, lang) for path in paths}
    return write_unless_edited(Path(target_dir), texts, MANIFEST)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.student", description=__doc__.split("\n")[0])
    parser.add_argument("source", nargs="?", type=Path, default=Path("notebooks"), help="default: notebooks")
    parser.add_argument(
        "target", nargs="?", type=Path, default=None, help="default: student (student-zh ...)"
    )
    parser.add_argument(
        "--lang",
        default=None,
        help="the edition's language, e.g. zh_CN: the source must be that edition (make zh's build/zh)",
    )
    args = parser.parse_args(argv)
    lang = None if args.lang in (None, ENGLISH) else args.lang
    target = args.target or Path("student" if lang is None else f"student-{lang.split('_')[0]}")
    try:
        report = build(args.source, target, lang)
    except (ValueError, FileNotFoundError) as error:
        print(f"python -m tools.student: {error}", file=sys.stderr)
        return 1
    print_report(target, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
