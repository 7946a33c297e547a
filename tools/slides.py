"""Build one reveal.js deck per notebook, fit to open offline in any lecture room.

Usage: ``python -m tools.slides [--solutions] [--lang zh_CN] [NOTEBOOK_DIR] [OUT_DIR]`` (``make slides``
runs ``notebooks`` -> ``build/slides``; ``make slides-solutions`` runs ``--solutions`` ->
``build/slides-solutions``).

**Translations.** With ``--lang zh_CN`` the decks are built from the notebooks as
``tools.i18n build`` writes them from the catalogues (into a temporary folder, never a stale
``build/zh``), or from ``--from DIR`` (e.g. ``build/zh``), into ``OUT_DIR/zh/`` by default
(``build/slides/zh/``, where the Chinese site links; ``build/slides-solutions/zh/`` with
``--solutions``), with ``<html lang="zh-CN">``. The interface text the decks add (the banner of
the instructor decks, the title, a figure's fallback alt text, the lines about explorers) comes
from ``locale/<lang>/site.po`` (:mod:`tools.ui`); a string without a translation stops the build.

Two kinds of deck. The class decks (the default, and the ones the site links to) show each
exercise as the student edition does (:func:`tools.student.student_notebook`): its text and the
stub the student gets, the check with no output, nothing after the check, and no speaker notes
in the Exercises section (they discuss the answers); the lesson's speaker notes stay. The
instructor decks (``--solutions``, for after the deadline) show the solved notebook, and their
title slide says so (:data:`SOLUTIONS_BANNER`).

Every deck loads reveal.js from ``OUT_DIR/reveal.js/``, copied from the pinned
``sphinx-revealjs`` package (which vendors reveal.js 5); maths is MathML made at build time;
explorers are stills of their default view; progress bars and training logs are left out; a
slide too tall for its 1280x720 frame continues on the next (vertical) slide, split between
cells or between a cell's code and its output (a slide that still does not fit is zoomed out),
and long code lines wrap. The arrow keys, Space and a clicker walk every slide in order
(reveal.js's linear navigation). Speaker notes (cells of slide type ``notes``) stay in the deck,
without the paragraph on presenting with RISE: press S.

What a deck shows differs from the notebook only where a projector needs it (:func:`deck_cells`):
the set-up lines that install attnlib where it is missing are left out of the first code cell,
a traceback is cut to the student's line that raised and the error, and a code cell tagged
:data:`OUTPUT_APART` shows its outputs on the next slide. A cell's figures stand side by side.
"""

from __future__ import annotations

import copy
import re
import shutil
import sys
import tempfile
from pathlib import Path

from .links import without_bootstrap
from .notes import unwrap, without_presenting
from .publish import exporter, static_outputs, template_text, title_of
from .student import is_notes, student_notebook
from .ui import N_
from .ui import text as ui_text

REVEAL_DIR = "reveal.js"
OUTPUT_APART = "slides-output-apart"  # a code cell tag: the deck shows its outputs on the next slide
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
SOLUTIONS_BANNER = N_("Instructor deck: contains solutions")
DECK_TITLE = N_("{title} (slides)")
SOLUTIONS_TITLE = N_("{title} · instructor deck with solutions (slides)")
ENGLISH = "en"
# Where the decks of each translation go, under the English decks' folder (as the site's pages).
EDITION_FOLDERS = {"zh_CN": "zh"}


def short_traceback(lines: list[str]) -> list[str]:
    """A traceback as a slide shows it: the frame in the notebook's own cell (the line that
    raised) and the error, without the frames inside libraries."""
    own = [line for line in lines if _ANSI.sub("", line).lstrip().startswith("Cell In")]
    return own[-1:] + lines[-1:]


def deck_cells(cells: list[dict]) -> list[dict]:
    """The cells of a notebook as its deck shows them (see the module's docstring)."""
    out: list[dict] = []
    first_code = True
    for cell in copy.deepcopy(cells):
        if is_notes(cell):  # the speaker view shows the notes whole, not a closed <details>
            cell["source"] = without_presenting(unwrap(cell["source"]))  # RISE's keys do not apply
        if cell.get("cell_type") != "code":
            out.append(cell)
            continue
        if first_code:
            cell["source"] = without_bootstrap(cell["source"])
            first_code = False
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = short_traceback(output.get("traceback", []))
        out.append(cell)
        if OUTPUT_APART in cell.get("metadata", {}).get("tags", []) and cell.get("outputs"):
            apart = copy.deepcopy(cell)
            apart["id"] = f"{cell.get('id', 'cell')}-outputs"
            apart["metadata"].setdefault("slideshow", {})["slide_type"] = "subslide"
            apart["metadata"].setdefault("transient", {})["remove_source"] = True
            cell["outputs"] = []
            out.append(apart)
    return out


def reveal_source() -> Path:
    """The reveal.js distribution that the pinned sphinx-revealjs package ships."""
    import sphinx_revealjs

    return Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"


def copy_reveal(out_dir: Path) -> Path:
    """Copy reveal.js (core, white theme and its fonts, the speaker-notes plugin) into ``out_dir``."""
    src, dst = reveal_source(), out_dir / REVEAL_DIR
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src / "dist", dst / "dist", ignore=shutil.ignore_patterns("*.esm.js*"))
    shutil.copytree(
        src / "plugin" / "notes", dst / "plugin" / "notes", ignore=shutil.ignore_patterns("*.esm.js")
    )
    shutil.copy(src / "LICENSE", dst / "LICENSE")
    return dst


def deck_name(notebook: Path) -> str:
    return f"{notebook.stem}.slides.html"


def _with_banner(cells: list[dict], lang: str = ENGLISH) -> list[dict]:
    """``cells`` with :data:`SOLUTIONS_BANNER` (in ``lang``) at the top of the first (title) slide."""
    cells = copy.deepcopy(cells)
    banner = f'<p class="solutions-banner">{ui_text(SOLUTIONS_BANNER, lang)}</p>\n\n'
    first = next(c for c in cells if c.get("cell_type") == "markdown" and not is_notes(c))
    text = first["source"]
    first["source"] = banner + ("".join(text) if isinstance(text, list) else text)
    return cells


def build_decks(
    notebook_dir: Path, out_dir: Path, solutions: bool = False, lang: str = ENGLISH
) -> list[Path]:
    """Write ``NN_name.slides.html`` for every notebook in ``notebook_dir`` (or for the one
    notebook it names); return their paths. The class decks unless ``solutions`` (see the
    module's docstring). ``lang`` is the language of the notebooks (:func:`build_translated`
    translates them first); the decks' own words are in it too."""
    import nbformat

    ui = template_text(lang)  # fails on a missing translation before anything is written
    banner_title = ui_text(SOLUTIONS_TITLE if solutions else DECK_TITLE, lang)
    if solutions:
        ui_text(SOLUTIONS_BANNER, lang)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_reveal(out_dir)
    exp = exporter("slides", "attn-deck", lang)
    exp.reveal_url_prefix = REVEAL_DIR
    written = []
    paths = [notebook_dir] if notebook_dir.suffix == ".ipynb" else sorted(notebook_dir.glob("*.ipynb"))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        shown = nb if solutions else student_notebook(nb, lesson_notes=True, lang=lang)
        nb = static_outputs(shown, training_logs=False, lang=lang)
        nb["cells"] = deck_cells(_with_banner(nb["cells"], lang) if solutions else nb["cells"])
        title = banner_title.format(title=title_of(nb))
        resources = {"metadata": {"name": path.stem, "path": str(path.parent)}, "deck_title": title, "ui": ui}
        html, _ = exp.from_notebook_node(nbformat.from_dict(nb), resources=resources)
        target = out_dir / deck_name(path)
        target.write_text(html, encoding="utf-8")
        written.append(target)
    return written


def build_translated(
    notebooks: Path, out_dir: Path, lang: str, solutions: bool = False, translated: Path | None = None
) -> list[Path]:
    """The decks in ``lang`` of the English notebooks ``notebooks`` (a folder, or one notebook):
    built from ``translated`` (a folder of translated notebooks, e.g. ``build/zh``) where given,
    else from what ``tools.i18n.build`` writes from the catalogues into a temporary folder."""
    if lang not in EDITION_FOLDERS:
        raise ValueError(f"expected a language among {sorted(EDITION_FOLDERS)}, got {lang!r}")
    one = notebooks.suffix == ".ipynb"
    if translated is not None:
        return build_decks(translated / notebooks.name if one else translated, out_dir, solutions, lang)
    from .i18n import build

    with tempfile.TemporaryDirectory(prefix=f"slides-{lang}-") as tmp:
        build([notebooks] if one else sorted(notebooks.glob("*.ipynb")), Path(tmp), lang)
        source = Path(tmp) / notebooks.name if one else Path(tmp)
        return build_decks(source, out_dir, solutions, lang)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.slides", description=__doc__.split("\n")[0])
    parser.add_argument("--solutions", action="store_true", help="the instructor decks, with solutions")
    parser.add_argument("--lang", choices=sorted(EDITION_FOLDERS), help="the decks in this language")
    parser.add_argument("--from", dest="translated", type=Path, help="translated notebooks (default: built)")
    parser.add_argument("source", nargs="?", type=Path, default=Path("notebooks"))
    parser.add_argument("target", nargs="?", type=Path)
    args = parser.parse_args(argv)
    solutions = args.solutions
    target = args.target or Path("build/slides-solutions" if solutions else "build/slides")
    if args.lang and args.target is None:
        target = target / EDITION_FOLDERS[args.lang]
    if args.lang:
        from .i18n import CatalogueError

        try:
            paths = build_translated(args.source, target, args.lang, solutions, args.translated)
        except CatalogueError as err:
            print(f"tools.slides: {err}", file=sys.stderr)
            return 1
    else:
        paths = build_decks(args.source, target, solutions=solutions)
    for path in paths:
        print(f"wrote {path}")
    kind = (
        "instructor decks, WITH SOLUTIONS: not for students before the deadline"
        if solutions
        else "class decks"
    )
    print(f"{kind}: open {target}/NN_name.slides.html in a browser; press S for the speaker notes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
