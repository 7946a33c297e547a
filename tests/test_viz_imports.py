"""The drawing wing's borders: only attnlib.viz imports matplotlib or ipywidgets, every drawing
name is importable from attnlib.viz, and every old module path still works, with a warning."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import attnlib
from attnlib import viz

PACKAGE = Path(attnlib.__file__).parent
DRAWING_LIBRARIES = ("matplotlib", "ipywidgets")

# Each module path that moved into attnlib.viz, with the public names it had.
OLD_PATHS = {
    "attnlib.plotting": ["CMAP", "plot_attention", "plot_bars"],
    "attnlib.diagrams": [
        *("ENCODER", "DECODER", "CONTEXT", "QUERY", "WEIGHT", "seq2seq_diagram", "attention_diagram"),
        *("multihead_diagram", "transformer_layer_diagram", "decoder_step_diagram", "lstm_diagram"),
    ],
    "attnlib.widgets": [
        *("explorer", "query_explorer", "temperature_explorer", "mask_explorer", "dropout_explorer"),
        "head_explorer",
    ],
    "attnlib.efficient_widgets": ["tiling_diagram", "receptive_field_explorer", "rope_score_figure"],
    "attnlib.gpt_widgets": ["encode_prompt", "sampling_explorer", "gpt_diagram"],
    "attnlib.seq2seq_widgets": [
        *("translate", "plot_alignment", "plot_alignments", "plot_length_curves", "alignment_explorer"),
        "copy_explorer",
    ],
    "attnlib.sequence_widgets": ["TRACE_NAMES", "lstm_trace", "gate_explorer"],
    "attnlib.transformer_widgets": ["positional_encoding_explorer", "cross_attention_explorer"],
    "attnlib.vit_widgets": [
        "token_labels",
        "draw_patch_map",
        "plot_class_attention",
        "vit_diagram",
        "vit_explorer",
    ],
}


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


# That `import attnlib`, `from attnlib import check` and `import attnlib.viz` load neither
# matplotlib nor ipywidgets is checked in one fresh interpreter, for every module at once, by
# tests/test_environment.py::test_import_attnlib_is_light.


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
        for name in names:
            assert getattr(viz, name) is getattr(source, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        viz.nothing  # noqa: B018


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_every_old_path_warns_and_still_gives_every_name(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to attnlib\.viz\b") as caught:
        module = importlib.import_module(old)
    assert len(caught) == 1
    for name in OLD_PATHS[old]:
        assert getattr(module, name) is getattr(viz, name)
    assert set(OLD_PATHS[old]) <= set(dir(module))
    with pytest.raises(AttributeError, match=r"moved to attnlib\.viz"):
        module.nothing  # noqa: B018


def test_the_notebooks_old_imports_work_from_a_fresh_interpreter():
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "import attnlib.widgets\n"
        "from attnlib import plotting, widgets, diagrams, sequence_widgets\n"
        "from attnlib.diagrams import attention_diagram\n"
        "from attnlib.gpt_widgets import encode_prompt, gpt_diagram, sampling_explorer\n"
        "from attnlib.vit_widgets import draw_patch_map, plot_class_attention, token_labels, vit_diagram\n"
        "from attnlib.efficient_widgets import receptive_field_explorer, rope_score_figure, tiling_diagram\n"
        "from attnlib.transformer_widgets import positional_encoding_explorer, cross_attention_explorer\n"
        "from attnlib.seq2seq_widgets import plot_alignment, translate\n"
        "print(attnlib.widgets.query_explorer.__module__, plotting.CMAP)\n"
        "print(diagrams.decoder_step_diagram.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["attnlib.viz.functional", "viridis", "attnlib.viz.attention_decoders"]
