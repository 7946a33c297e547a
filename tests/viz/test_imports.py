"""The drawing wing's borders: only attnlib.viz imports matplotlib or ipywidgets (at the top of its
files), and every drawing name is importable from attnlib.viz."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import attnlib
from attnlib import viz

PACKAGE = Path(attnlib.__file__).parent
DRAWING_LIBRARIES = ("matplotlib", "ipywidgets")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import statement in the file, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_only_the_viz_wing_imports_matplotlib_or_ipywidgets():
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "viz" not in p.relative_to(PACKAGE).parts]
    assert len(outside) > 10, "expected to read the whole library"
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in outside
        for line, module in _imported_modules(path)
        if module.split(".")[0] in DRAWING_LIBRARIES
    ]
    assert offenders == [], "matplotlib and ipywidgets belong in attnlib/viz only:\n" + "\n".join(offenders)


def test_the_viz_wing_imports_the_drawing_libraries_at_the_top_of_its_files():
    """``import attnlib.viz`` stays light because its index imports a module only when one of its
    names is asked for; each module itself imports what it draws with once, at the top."""
    offenders = []
    for path in sorted((PACKAGE / "viz").glob("*.py")):
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == [], "function-level imports in attnlib/viz: " + ", ".join(offenders)


# That `import attnlib`, `from attnlib import check` and `import attnlib.viz` load neither
# matplotlib nor ipywidgets is checked in one fresh interpreter, for every module at once, by
# tests/series/test_environment.py::test_import_attnlib_is_light.


def _defined_names(path: Path) -> set[str]:
    """The public names a module defines at its top level (functions, classes, constants)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(e.id for e in (target.elts if isinstance(target, ast.Tuple) else [target]))
    return {name for name in names if not name.startswith("_")}


def test_the_viz_index_names_every_public_name_of_every_viz_module():
    paths = {p.stem: p for p in (PACKAGE / "viz").glob("*.py") if p.stem != "__init__"}
    assert set(viz._HOMES) == set(paths)
    for module, names in viz._HOMES.items():
        assert set(names) == _defined_names(paths[module]), module
        source = importlib.import_module(f"attnlib.viz.{module}")
        assert sorted(source.__all__) == sorted(names), module
        for name in names:
            assert getattr(viz, name) is getattr(source, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        viz.nothing  # noqa: B018
