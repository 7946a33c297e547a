"""The notebooks follow one import rule (docs/code-style.md).

A name a notebook teaches, i.e. uses before any earlier notebook does, comes from its module:
``from attnlib.masks import causal_mask`` in notebook 03. A name taught earlier is written
``attnlib.causal_mask``, so the reader sees it is a recap. Where a notebook defines its own version
of a library name (02's ``SelfAttentionV1``), the library's stays ``attnlib.<name>`` to keep the
two apart. The set-up names ``reproducible``, ``check``, ``viz`` and ``claim`` are no lesson's,
and pictures come as ``viz.<name>``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import attnlib
from tests import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SET_UP = {"reproducible", "check", "viz", "claim"}


def _code(path: Path) -> list[ast.Module]:
    cells = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).split("\n")
            cells.append(ast.parse("\n".join("" if s.lstrip()[:1] in "%!" else s for s in lines)))
    return cells


def _uses(path: Path) -> tuple[dict[str, set[str]], set[str], set[str]]:
    """Each attnlib name's forms ("attnlib.<name>" or the module it is imported from), the names
    the notebook binds itself, and the names it imports from inside attnlib.viz."""
    forms: dict[str, set[str]] = {}
    bound: set[str] = set()
    from_viz: set[str] = set()
    for tree in _code(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "attnlib":
                for alias in node.names:
                    if alias.name not in SET_UP:  # `from attnlib import causal_mask` hides where it lives
                        forms.setdefault(alias.name, set()).add("attnlib")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attnlib."):
                if node.module.startswith("attnlib.viz"):
                    from_viz |= {a.name for a in node.names}
                else:
                    for alias in node.names:
                        forms.setdefault(alias.name, set()).add(node.module)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "attnlib"
            ):
                forms.setdefault(node.attr, set()).add("attnlib.<name>")
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
    return forms, bound, from_viz


def _first_use() -> dict[str, str]:
    first: dict[str, str] = {}
    for path in NOTEBOOKS:
        for name in _uses(path)[0]:
            first.setdefault(name, path.stem)
    return first


def test_the_notebooks_were_found():
    assert len(NOTEBOOKS) >= 14, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_taught_names_come_from_their_module_and_earlier_ones_as_attnlib_name(path):
    first = _first_use()
    forms, bound, from_viz = _uses(path)
    problems = [
        f"{name} is a picture: write viz.{name}, not an import from attnlib.viz" for name in sorted(from_viz)
    ]
    for name, used in sorted(forms.items()):
        if name in SET_UP:
            continue
        taught_here = first[name] == path.stem and name not in bound
        if "attnlib" in used:
            module = getattr(attnlib.__dict__.get(name), "__module__", "attnlib.<module>")
            problems.append(
                f"{name}: `from attnlib import {name}` hides where it lives: "
                f"`from {module} import {name}` if taught here, else attnlib.{name}"
            )
        if "attnlib.<name>" in used and name not in attnlib.__all__:
            problems.append(f"attnlib.{name} is not in attnlib.__all__")
        modules = sorted(used - {"attnlib.<name>", "attnlib"})
        if taught_here and "attnlib.<name>" in used:
            home = attnlib.__dict__.get(name)
            module = getattr(home, "__module__", "attnlib.<module>")
            problems.append(
                f"{name} is taught here: import it, `from {module} import {name}`, not attnlib.{name}"
            )
        if not taught_here and modules:
            why = (
                f"taught in notebook {first[name][:2]}"
                if first[name] != path.stem
                else "this notebook defines its own"
            )
            problems.append(f"{name} ({why}): write attnlib.{name}, not `from {modules[0]} import {name}`")
            if name not in attnlib.__all__:
                problems.append(
                    f"{name} must be in attnlib.__all__ so that later notebooks can write attnlib.{name}"
                )
    assert not problems, f"{path.name} breaks the import rule of docs/code-style.md:\n  " + "\n  ".join(
        problems
    )
