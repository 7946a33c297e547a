"""The package's house rules: no import loops, every module declares ``__all__`` and its notebook,
and ``import attnlib`` is silent and gives the names the notebooks use."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import attnlib

PACKAGE = Path(attnlib.__file__).parent
MODULES = sorted([*PACKAGE.glob("*.py"), *(PACKAGE / "viz").glob("*.py")])


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The modules of ``attnlib/*.py`` that ``path`` imports, wherever the statement stands
    (module level, inside a function, under ``if TYPE_CHECKING``)."""
    siblings = {p.stem for p in PACKAGE.glob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            found.update(names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnlib."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("attnlib."))
    return (found & siblings) - {path.stem, "__init__"}


def test_no_two_library_modules_import_each_other_even_indirectly():
    graph = {p.stem: _imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    loops = []

    def visit(module: str, path: list[str]) -> None:
        for nxt in sorted(graph[module]):
            if nxt == path[0]:
                loops.append(" -> ".join([*path, nxt]))
            elif nxt not in path and nxt > path[0]:  # each loop once, from its smallest module
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert loops == [], loops


@pytest.mark.parametrize("path", MODULES, ids=_module_name)
def test_every_module_declares_all_and_the_notebook_that_teaches_it(path):
    module = importlib.import_module(_module_name(path))
    assert isinstance(module.__all__, list) and module.__all__, "declare __all__"
    assert all(hasattr(module, name) for name in module.__all__)
    assert re.search(r"(?i)\bnotebooks?[ ,a-z]*\d\d \(", module.__doc__), 'name it: "notebook 05 (...)"'


def test_import_attnlib_is_silent_and_exports_what_the_notebooks_use():
    code = (
        "import sys, attnlib\n"
        "heavy = [m for m in sys.modules if m.startswith(('matplotlib', 'ipywidgets'))]\n"
        "assert not heavy, heavy\n"
        "missing = [n for n in attnlib.__all__ if not hasattr(attnlib, n)]\n"
        "assert not missing, missing\n"
        "print(' '.join(sorted(attnlib.__all__)))\n"
    )
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    exported = set(result.stdout.split())
    used = {
        "GPT", "Attention", "AttentionGeneral", "AttentionParams", "AttentionSimple", "CausalAttention",
        "Decoder", "DecoderLayer", "DecoderWithAttention", "Encoder", "EncoderLayer", "FeedForward",
        "GroupedQueryAttention", "HardAttention", "KVCache", "LayerNorm", "LocalAttention", "LuongDecoder",
        "MultiHeadAttention", "MultiHeadAttentionWrapper", "PairDataset", "PatchEmbed", "PositionalEncoding",
        "SelfAttention", "SelfAttentionV1", "Seq2Seq", "Seq2SeqModel", "Transformer", "VisionTransformer",
        "Vocab", "accuracy_by_length", "add_norm", "apply_rotary", "attention_rollout", "attention_scores",
        "cached_attention", "causal_mask", "claim", "combine_masks", "date_datasets", "digit_datasets",
        "evaluate", "evaluating", "fast_attention", "from_masked_out", "fused_attention", "kv_cache_bytes",
        "length_mask", "make_attention", "masked_softmax", "merge_heads", "next_token_probs", "occlude",
        "online_softmax", "padding_mask", "patchify", "peak_memory", "receptive_field", "reproducible",
        "rotary_angles", "sample_next", "scaled_dot_product_attention", "sinusoidal_encoding",
        "sliding_window_mask", "split_heads", "tiled_attention", "to_masked_out", "to_torch_transformer",
        "top_k_logits", "top_p_logits", "train", "train_or_load",
    }  # fmt: skip
    assert used <= exported


def test_the_unchecked_attention_kernels_stay_inside_the_package():
    """``functional._attend`` and the kernels it calls skip the input checks: only attnlib's own
    modules import them, never the tests, the exercise checks or the notebooks."""
    private = re.compile(r"functional(\.| import (\w+, )*)_\w")
    root = PACKAGE.parent
    outside = [
        *root.glob("tests/**/*.py"),
        *PACKAGE.joinpath("check").glob("*.py"),
        *root.glob("notebooks/*.ipynb"),
    ]
    offenders = [str(p) for p in outside if p.name != "test_package.py" and private.search(p.read_text())]
    assert offenders == []
    library = {p.stem for p in PACKAGE.glob("*.py") if private.search(p.read_text())}
    assert library == {"multihead", "fused_qkv", "gqa"}
