"""Old import paths of the core keep working for one release, with a DeprecationWarning."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings

import pytest
import torch

import attnlib

# old module path -> (name, the module that now holds it, its name there)
MOVED_MODULES = {
    "attnlib.efficient": [
        ("online_softmax", "attnlib.tiled", "online_softmax"),
        ("tiled_attention", "attnlib.tiled", "tiled_attention"),
        ("GroupedQueryAttention", "attnlib.gqa", "GroupedQueryAttention"),
        ("peak_memory", "attnlib.memory", "peak_memory"),
        ("kv_cache_bytes", "attnlib.memory", "kv_cache_bytes"),
        ("sliding_window_mask", "attnlib.masks", "sliding_window_mask"),
        ("receptive_field", "attnlib.masks", "receptive_field"),
    ],
    "attnlib.cache": [("fingerprint", "attnlib.trained", "fingerprint")],
}

# names that left a module which still exists
MOVED_NAMES = [
    ("attnlib.gpt", "KVCache", "attnlib.kv_cache", "KVCache"),
    ("attnlib.gpt", "cached_attention", "attnlib.kv_cache", "cached_attention"),
    ("attnlib.gpt", "check_sampling", "attnlib.sampling", "require_sampling"),
    ("attnlib.gpt", "top_k_logits", "attnlib.sampling", "top_k_logits"),
    ("attnlib.gpt", "next_token_probs", "attnlib.sampling", "next_token_probs"),
    ("attnlib.gpt", "sample_next", "attnlib.sampling", "sample_next"),
    ("attnlib.gpt", "complete", "attnlib.sampling", "complete"),
    ("attnlib.gpt", "addition_lines", "attnlib.tasks", "addition_lines"),
    ("attnlib.data", "date_datasets", "attnlib.tasks", "date_datasets"),
    ("attnlib.data", "digit_datasets", "attnlib.tasks", "digit_datasets"),
    ("attnlib.data", "date_pairs", "attnlib.tasks", "date_pairs"),
    ("attnlib.data", "digit_vocab", "attnlib.tasks", "digit_vocab"),
    ("attnlib.data", "DATE_STYLES", "attnlib.tasks", "DATE_STYLES"),
    ("attnlib.seq2seq", "DecoderWithAttention", "attnlib.attention_decoders", "DecoderWithAttention"),
    ("attnlib.seq2seq", "LuongDecoder", "attnlib.attention_decoders", "LuongDecoder"),
    ("attnlib.seq2seq", "check_attention_size", "attnlib.attention_decoders", "require_attention_size"),
    ("attnlib.seq2seq", "check_token_ids", "attnlib._validate", "require_token_ids"),
    ("attnlib.scorers", "check_inputs", "attnlib.scorers", "require_inputs"),
    ("attnlib.scorers", "LocalAttention", "attnlib.local_attention", "LocalAttention"),
    ("attnlib.scorers", "HardAttention", "attnlib.local_attention", "HardAttention"),
    ("attnlib.transformer", "to_torch_transformer", "attnlib.torch_reference", "to_torch_transformer"),
    ("attnlib.vit", "attention_rollout", "attnlib.vit_probes", "attention_rollout"),
    ("attnlib.vit", "occlude", "attnlib.vit_probes", "occlude"),
    ("attnlib.masks", "check_bool_mask", "attnlib.masks", "require_bool_mask"),
    ("attnlib.training", "evaluate", "attnlib.evaluation", "evaluate"),
    ("attnlib.training", "accuracy_by_length", "attnlib.evaluation", "accuracy_by_length"),
    ("attnlib.training", "predict_scores", "attnlib.evaluation", "predict_scores"),
    ("attnlib.training", "score_batch", "attnlib.evaluation", "score_batch"),
    ("attnlib.training", "count_parameters", "attnlib.evaluation", "count_parameters"),
]


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_alias_module_warns_on_import_and_resolves_every_name(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to"):
        module = importlib.import_module(old)
    for name, new, new_name in MOVED_MODULES[old]:
        assert getattr(module, name) is getattr(importlib.import_module(new), new_name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = module.nothing


@pytest.mark.parametrize("old, name, new, new_name", MOVED_NAMES)
def test_a_name_that_left_a_module_warns_and_resolves_to_the_same_object(old, name, new, new_name):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new}\.{new_name}"):
        got = getattr(module, name)
    assert got is getattr(importlib.import_module(new), new_name)


def test_from_import_of_a_moved_name_warns():
    with pytest.warns(DeprecationWarning, match="attnlib.tasks"):
        from attnlib.data import date_datasets  # noqa: F401


def test_train_cached_is_train_or_load_under_its_old_name(tmp_path, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cache = importlib.import_module("attnlib.cache")
    calls = []
    monkeypatch.setattr("attnlib.trained.train_or_load", lambda *args, **kw: calls.append((args, kw)) or "h")
    with pytest.warns(DeprecationWarning, match="train_or_load"):
        assert cache.train_cached("model", "data", tmp_path, epochs=1) == "h"
    assert calls == [(("model", "data", tmp_path), {"epochs": 1})]


def test_gpt_check_ids_is_require_ids_under_its_old_name():
    model = attnlib.GPT(5, 8, dim=8, n_heads=2, n_layers=1)
    with pytest.warns(DeprecationWarning, match="require_ids"), pytest.raises(ValueError, match="ids in"):
        model.check_ids(torch.tensor([[0, 5]]))


def test_unknown_names_still_raise_attribute_error():
    old_modules = sorted({old for old, *_ in MOVED_NAMES})
    for old in old_modules:
        with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
            _ = importlib.import_module(old).nothing


def test_import_attnlib_is_silent_light_and_exports_what_it_did():
    code = (
        "import sys, attnlib\n"
        "heavy = [m for m in sys.modules if m.startswith(('matplotlib', 'ipywidgets'))]\n"
        "assert not heavy, heavy\n"
        "missing = [n for n in attnlib.__all__ if not hasattr(attnlib, n)]\n"
        "assert not missing, missing\n"
        "print(' '.join(sorted(attnlib.__all__)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    exported = set(result.stdout.split())
    before = {
        "GPT", "Attention", "AttentionGeneral", "AttentionParams", "AttentionSimple", "CausalAttention",
        "Decoder", "DecoderLayer", "DecoderWithAttention", "Encoder", "EncoderLayer", "FeedForward",
        "GroupedQueryAttention", "HardAttention", "KVCache", "LayerNorm", "LocalAttention", "LuongDecoder",
        "MultiHeadAttention", "MultiHeadAttentionWrapper", "PairDataset", "PatchEmbed", "PositionalEncoding",
        "SelfAttention", "SelfAttentionV1", "Seq2Seq", "Transformer", "VisionTransformer", "Vocab",
        "accuracy_by_length", "add_norm", "apply_rotary", "attention_rollout", "attention_scores",
        "cached_attention", "causal_mask", "combine_masks", "date_datasets", "digit_datasets", "evaluate",
        "from_masked_out", "kv_cache_bytes", "length_mask", "make_attention", "masked_softmax",
        "merge_heads", "next_token_probs", "occlude", "online_softmax", "padding_mask", "patchify",
        "peak_memory", "receptive_field", "reproducible", "rotary_angles", "sample_next",
        "scaled_dot_product_attention", "sinusoidal_encoding", "sliding_window_mask", "split_heads",
        "tiled_attention", "to_masked_out", "to_torch_transformer", "top_k_logits", "train",
    }  # fmt: skip
    assert before <= exported
    assert {"Seq2SeqModel", "evaluating", "train_or_load"} <= exported


def test_no_module_test_or_tool_imports_a_name_from_the_module_it_left():
    from pathlib import Path

    moved = {(old, name) for old, name, *_ in MOVED_NAMES}
    root = Path(attnlib.__file__).parent.parent
    offenders = []
    paths = [*root.joinpath("attnlib").rglob("*.py"), *root.glob("tests/*.py"), *root.glob("tools/*.py")]
    for path in (p for p in paths if p.name != "test_deprecations.py"):  # this file imports them on purpose
        parts = path.relative_to(root).with_suffix("").parts
        package = ".".join(parts[:-1])  # the package a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            offenders += [f"{path}: {module}.{a.name}" for a in node.names if (module, a.name) in moved]
    assert not offenders, offenders


def test_no_core_module_or_core_test_imports_a_deprecated_path():
    from pathlib import Path

    old = ("attnlib.efficient", "attnlib.cache", "attnlib._checks", ".efficient ", ".cache ", "._checks ")
    package = Path(attnlib.__file__).parent
    core = [p for p in package.glob("*.py") if p.name not in ("efficient.py", "cache.py", "_checks.py")]
    offenders = [str(p) for p in core if any(f"from {o.strip()} import" in p.read_text() for o in old)]
    assert not offenders
