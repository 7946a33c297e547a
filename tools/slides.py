"""Build one reveal.js deck per notebook, fit to open offline in any lecture room.

Usage: ``python -m tools.slides [NOTEBOOK_DIR] [OUT_DIR]`` (``make slides`` runs
``notebooks`` -> ``build/slides``).

Every deck loads reveal.js from ``OUT_DIR/reveal.js/``, copied from the pinned
``sphinx-revealjs`` package (which vendors reveal.js 5); maths is MathML made at build time;
explorers are stills of their default view; progress bars and training logs are left out; a
slide too large for its 1280x720 frame is zoomed out until it fits, and long code lines wrap.
Speaker notes (cells of slide type ``notes``) stay in the deck: press S.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .notes import unwrap
from .publish import exporter, static_outputs, title_of
from .student import is_notes

REVEAL_DIR = "reveal.js"


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
        for cell in nb["cells"]:
            if is_notes(cell):  # the speaker view shows the notes whole, not a closed <details>
                cell["source"] = unwrap(cell["source"])
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
