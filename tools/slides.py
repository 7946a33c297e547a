"""Build one reveal.js deck per notebook, fit to open offline in any lecture room.

Usage: ``python -m tools.slides [NOTEBOOK_DIR] [OUT_DIR]`` (``make slides`` runs
``notebooks`` -> ``build/slides``).

Every deck loads reveal.js from ``OUT_DIR/reveal.js/``, copied from the pinned
``sphinx-revealjs`` package (which vendors reveal.js 5); maths is MathML made at build time;
explorers are stills of their default view; progress bars and training logs are left out; a
slide too large for its 1280x720 frame is zoomed out until it fits, and long code lines wrap.
Speaker notes (cells of slide type ``notes``) stay in the deck: press S.

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
from pathlib import Path

from .links import without_bootstrap
from .notes import unwrap
from .publish import exporter, static_outputs, title_of
from .student import is_notes

REVEAL_DIR = "reveal.js"
OUTPUT_APART = "slides-output-apart"  # a code cell tag: the deck shows its outputs on the next slide
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


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
            cell["source"] = unwrap(cell["source"])
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


def build_decks(notebook_dir: Path, out_dir: Path) -> list[Path]:
    """Write ``NN_name.slides.html`` for every notebook in ``notebook_dir`` (or for the one
    notebook it names); return their paths."""
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    copy_reveal(out_dir)
    exp = exporter("slides", "attn-deck")
    exp.reveal_url_prefix = REVEAL_DIR
    written = []
    paths = [notebook_dir] if notebook_dir.suffix == ".ipynb" else sorted(notebook_dir.glob("*.ipynb"))
    for path in paths:
        nb = static_outputs(nbformat.read(path, as_version=4), training_logs=False)
        nb["cells"] = deck_cells(nb["cells"])
        resources = {"metadata": {"name": path.stem, "path": str(path.parent)}, "deck_title": title_of(nb)}
        html, _ = exp.from_notebook_node(nbformat.from_dict(nb), resources=resources)
        target = out_dir / deck_name(path)
        target.write_text(html, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else Path("notebooks")
    target = Path(argv[1]) if len(argv) > 1 else Path("build/slides")
    for path in build_decks(source, target):
        print(f"wrote {path}")
    print(f"open {target}/NN_name.slides.html in a browser; press S for the speaker notes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
