"""Keep speaker notes out of the students' way, and tell instructors how to present live.

Usage: ``python -m tools.notes notebooks`` (or one or more ``.ipynb`` paths). Idempotent:
a second run changes nothing. Only markdown is edited, so no re-execution is needed.

Every speaker-notes cell (slide type ``notes``, which RISE and ``make slides`` show as
speaker notes, key ``S``) gets

- :data:`LABEL` as its first line, so a reader who meets it knows it is for the instructor;
- ``metadata.jupyter.source_hidden = true``: JupyterLab shows it collapsed to a thin bar
  (click the bar to read it); slides and decks ignore this setting and still show the notes;
- its body inside an HTML ``<details>`` element (:data:`OPEN` ... :data:`CLOSE`), closed. Running
  a Markdown cell in JupyterLab (Run All Cells does) renders it and un-hides its source, and a save
  keeps it so: the notes then show as the label and one closed "Show the notes" line, not as
  a screenful. The decks drop the wrapper (:func:`unwrap`).

The first notes cell also holds :data:`PRESENTING`, how to present the notebook live with RISE,
and the Exercises intro says where answers go (the cell tagged ``solution``; the student
edition of :mod:`tools.student` says ``exercise``).

A translated notebook (``python -m tools.i18n build``; its language in ``metadata.attnlib.language``)
has the label, the ``<details>`` line and the paragraph on presenting as its catalogue translates
them (:data:`LABELS`, :data:`OPENS`, :data:`PRESENTINGS`; a test holds these to the catalogues):
:func:`problems`, :func:`unwrap` and :func:`without_presenting` read them in either language.
:func:`apply` edits the English notebooks only: a translation takes its form from the English.
"""

# ruff: noqa: RUF001  (the Chinese forms are written with full-width punctuation: ，：；)
from __future__ import annotations

import re
import sys
from pathlib import Path

from .student import ENGLISH, EXERCISES_HEADING, SOLUTION_TAG, exercise_intro, is_notes, language

# Plain text: JupyterLab shows the first line of a collapsed cell as typed, asterisks included.
LABEL = "Instructor notes (hidden in the student edition; press S in the slides)"
_OLD_LABELS = ("**Instructor notes** (hidden in the student edition; press S in the slides)",)
PRESENTING = (
    "*Presenting live with RISE:* in JupyterLab run all cells first (Run → Run All Cells; the "
    "notes stay closed) and save, then press `Alt+R` for the slides and `S` for these notes. An "
    "explorer's slide shows raw `VBox(...)` text until its cell has run in a live kernel: if one "
    "does, select that cell and press `Shift+Enter`."
)
# Any version of that paragraph, old wordings included: each run replaces them all with PRESENTING.
_PRESENTING_ANY = re.compile(
    r"^\*{1,2}Presenting live with RISE:?\*{1,2}:?[^\n]*(?:\n(?!\n)[^\n]*)*\n*", re.M
)
OPEN = "<details><summary>Show the notes</summary>"
CLOSE = "</details>"
# The same in the translations, as the notebook catalogues translate LABEL, OPEN and PRESENTING.
LABELS = {ENGLISH: LABEL, "zh_CN": "教师备注（学生版中隐藏；在幻灯片中按 S 查看）"}
OPENS = {ENGLISH: OPEN, "zh_CN": "<details><summary>显示备注</summary>"}
PRESENTINGS = {
    ENGLISH: PRESENTING,
    "zh_CN": (
        "*用 RISE 现场演示*：先在 JupyterLab 中运行全部单元格（cell），"
        "即 Run → Run All Cells（备注保持折叠），并保存；然后按 `Alt+R` 打开幻灯片（slide），"
        "按 `S` 打开这些备注。交互探索器（explorer）所在的幻灯片，"
        "在其单元格于运行中的内核（kernel）里运行之前，只显示原始的 `VBox(...)` 文本：遇到这种情况，"
        "选中该单元格并按 `Shift+Enter`。"
    ),
}
_PRESENTING_ZH = re.compile(r"^\*用 RISE 现场演示\*：[^\n]*(?:\n(?!\n)[^\n]*)*\n*", re.M)
# The opening words the notes had before the label, now said by the label.
_OLD_OPENING = re.compile(r"\ASpeaker notes(?: \(([^)]*)\))?\.\s*")


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def unwrap(text: str) -> str:
    """A notes cell's text without the ``<details>`` wrapper (what the speaker view shows), in
    any language of :data:`OPENS`."""
    opening = next((o for o in OPENS.values() if o + "\n" in text), OPEN)
    text = text.replace(opening + "\n", "", 1)
    return text.removesuffix(CLOSE).rstrip("\n") if text.rstrip("\n").endswith(CLOSE) else text


def without_presenting(text: str) -> str:
    """``text`` without the paragraph on presenting live with RISE, in any of its wordings and
    languages."""
    return _PRESENTING_ZH.sub("", _PRESENTING_ANY.sub("", text))


def _label(text: str, first: bool) -> str:
    for label in (LABEL, *_OLD_LABELS):
        text = text.removeprefix(label)
    text = unwrap(text.lstrip("\n")).removeprefix(OPEN)
    body = without_presenting(text).lstrip("\n")
    opening = _OLD_OPENING.match(body)
    if opening:  # "Speaker notes (about 30 minutes). Open ..." -> "About 30 minutes. Open ..."
        duration = f"{opening[1][0].upper()}{opening[1][1:]}. " if opening[1] else ""
        body = duration + body[opening.end() :]
    return "\n\n".join([LABEL, OPEN, *([PRESENTING] if first else []), body.rstrip("\n"), CLOSE])


def apply(nb: dict) -> bool:
    """Apply the conventions to a notebook (a dict in nbformat 4), in place.

    Returns:
        Whether anything changed.

    Raises:
        ValueError: ``nb`` is a translation (its English notebook is the one to edit).
    """
    if language(nb) != ENGLISH:
        raise ValueError(
            f"expected an English notebook (tools.notes edits notebooks/), got one in {language(nb)}: "
            "a translation takes its notes' form from the English and its catalogue"
        )
    changed = False
    first = True
    for cell in nb["cells"]:
        old = _text(cell)
        new = old
        if is_notes(cell):
            if cell.get("cell_type") != "markdown":
                raise ValueError(f"speaker notes must be markdown cells, got a {cell.get('cell_type')} cell")
            new = _label(old, first)
            first = False
            jupyter = cell["metadata"].setdefault("jupyter", {})
            if jupyter.get("source_hidden") is not True:
                jupyter["source_hidden"] = True
                changed = True
        elif cell.get("cell_type") == "markdown" and EXERCISES_HEADING.match(old.lstrip()):
            new = exercise_intro(old, SOLUTION_TAG)
        if new != old:
            cell["source"] = new
            changed = True
    return changed


def problems(nb: dict) -> list[str]:
    """What in ``nb`` breaks the conventions (an empty list when it follows them), in the
    notebook's language (:func:`tools.student.language`)."""
    lang = language(nb)
    if lang not in LABELS:
        raise ValueError(f"expected a notebook in one of {sorted(LABELS)}, got one in {lang!r}")
    label, opening, presenting = LABELS[lang], OPENS[lang], PRESENTINGS[lang]
    found = []
    notes = [(i, c) for i, c in enumerate(nb["cells"]) if is_notes(c)]
    for n, (i, cell) in enumerate(notes):
        where = f"cell {i} ({cell.get('id', '')})"
        text = _text(cell)
        if cell.get("cell_type") != "markdown":
            found.append(f"{where}: speaker notes must be markdown")
        if not text.startswith(label + "\n"):
            found.append(f"{where}: notes must start with the line {label!r}")
        if not (text.startswith(f"{label}\n\n{opening}\n") and text.rstrip("\n").endswith(CLOSE)):
            found.append(f"{where}: the notes' body must sit in {opening} ... {CLOSE}")
        if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is not True:
            found.append(f"{where}: notes must be collapsed (metadata.jupyter.source_hidden = true)")
        if (presenting in text) != (n == 0):
            found.append(f"{where}: the note on presenting live belongs in the first notes cell only")
        if len(_PRESENTING_ANY.findall(text)) + len(_PRESENTING_ZH.findall(text)) > (n == 0):
            found.append(
                f"{where}: the note on presenting live is there more than once (or in an old wording)"
            )
    if not notes:
        found.append("no speaker notes: the first notes cell says how to present live")
    for i, cell in enumerate(nb["cells"]):
        text = _text(cell)
        if (
            cell.get("cell_type") == "markdown"
            and EXERCISES_HEADING.match(text.lstrip())
            and exercise_intro(text, SOLUTION_TAG, lang) != text
        ):
            found.append(f"cell {i}: the Exercises intro should say 'the cell tagged `solution`'")
    return found


def main(argv: list[str]) -> int:
    import nbformat

    paths: list[Path] = []
    for arg in argv or ["notebooks"]:
        p = Path(arg)
        paths += sorted(p.glob("*.ipynb")) if p.is_dir() else [p]
    for path in paths:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        if apply(nb):
            nbformat.write(nb, path)
            print(f"updated    {path}")
        else:
            print(f"up to date {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
