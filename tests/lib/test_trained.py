"""train_or_load: loading gives exactly what training gives, and only when nothing that decides it differs."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import torch

import attnlib
from attnlib import seq2seq
from attnlib.attention_decoders import DecoderWithAttention
from attnlib.gpt import GPT, NextTokenModel
from attnlib.local_attention import make_attention
from attnlib.tasks import digit_datasets, digit_vocab
from attnlib.trained import code_modules, defining_modules, fingerprint, train_or_load

RECIPE = dict(epochs=1, batch_size=16, lr=1e-2, seed=0, progress=False, log=False)


@pytest.fixture
def data():
    return digit_datasets(48, 8, seed=0, min_len=3, max_len=6)[0]


def build(seed: int = 0, hidden: int = 8) -> seq2seq.Seq2Seq:
    torch.manual_seed(seed)
    v = len(digit_vocab())
    return seq2seq.Seq2Seq(
        seq2seq.Encoder(v, hidden, 1), seq2seq.Decoder(v, hidden, 1), "cpu", teacher_forcing_ratio=1.0
    )


def after(model, data, folder, **recipe):
    """Train (or load), then draw from both random generators as a later cell would."""
    history = train_or_load(model, data, folder, **recipe)
    return history, torch.rand(3), random.random()


def test_loading_gives_the_trained_parameters_history_and_random_state(data, tmp_path, capsys):
    trained = build()
    h1, t1, r1 = after(trained, data, tmp_path, **RECIPE)
    assert "loaded" not in capsys.readouterr().out
    assert len(list(tmp_path.glob("*.pt"))) == 1
    loaded = build()
    h2, t2, r2 = after(loaded, data, tmp_path, **{**RECIPE, "log": True})  # log is not in the key
    assert "loaded" in capsys.readouterr().out
    for (name, a), (_, b) in zip(trained.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert h1 == h2 and not loaded.training
    assert torch.equal(t1, t2) and r1 == r2
    # and training again for real gives those very parameters (the premise of the memo)
    again = build()
    h3, t3, r3 = after(again, data, tmp_path / "elsewhere", **RECIPE)
    assert all(torch.equal(a, b) for a, b in zip(trained.parameters(), again.parameters(), strict=True))
    assert h3.loss == h1.loss and torch.equal(t3, t1) and r3 == r1


def test_output_options_do_not_change_the_key(data):
    model = build()
    assert fingerprint(model, data, epochs=1) == fingerprint(model, data, epochs=1)
    quiet = {k: v for k, v in RECIPE.items() if k not in ("progress", "log")}
    assert fingerprint(model, data, **quiet) != fingerprint(model, data, **{**quiet, "lr": 2e-2})


@pytest.mark.parametrize(
    "change",
    [
        lambda m, d, r: (build(seed=1), d, r),  # other initial weights
        lambda m, d, r: (build(hidden=4), d, r),  # other architecture
        lambda m, d, r: (m, d.subset(range(40)), r),  # other data
        lambda m, d, r: (m, d, {**r, "epochs": 2}),  # other recipe
        lambda m, d, r: (m, d, {**r, "seed": 1}),  # other seed
    ],
)
def test_anything_that_decides_the_result_changes_the_key(data, change):
    model = build()
    other_model, other_data, other_recipe = change(model, data, dict(RECIPE))
    assert fingerprint(model, data, **RECIPE) != fingerprint(other_model, other_data, **other_recipe)


def test_the_thread_count_changes_the_key(data):
    model, threads = build(), torch.get_num_threads()
    key = fingerprint(model, data, **RECIPE)
    try:
        torch.set_num_threads(threads + 1)
        assert fingerprint(model, data, **RECIPE) != key
    finally:
        torch.set_num_threads(threads)


# ----- the code part of the key: the modules that define the computation, and nothing else -----
PACKAGE = Path(attnlib.__file__).parent


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the attnlib package (and a tools/ folder beside it) to edit freely."""
    copy = tmp_path / "attnlib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "publish.py").write_text("print('publish')\n")
    for sub in ("viz", "check"):
        (copy / sub).mkdir(exist_ok=True)
        (copy / sub / "__init__.py").touch()
        (copy / sub / "topic.py").write_text("from ..seq2seq import Seq2Seq\n")
    return copy


def attention_model() -> seq2seq.Seq2Seq:
    torch.manual_seed(0)
    v = len(digit_vocab())
    decoder = DecoderWithAttention(v, 8, 1, make_attention("general", 8))
    return seq2seq.Seq2Seq(seq2seq.Encoder(v, 8, 1), decoder, "cpu")


def code_key(model, data, root: Path) -> dict[str, bytes]:
    return code_modules(defining_modules(model, data), root)


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


def test_the_code_modules_are_the_models_the_datas_and_the_loops_with_their_imports(data):
    modules = set(code_key(attention_model(), data, PACKAGE))
    assert {
        "attnlib.seq2seq",
        "attnlib.attention_decoders",
        "attnlib.scorers",
        "attnlib.data",
        "attnlib.training",
        "attnlib.evaluation",
        "attnlib.functional",
    } <= modules
    assert not {"attnlib.vit", "attnlib.gpt", "attnlib.trained", "attnlib.transformer"} & modules
    assert not any(m.startswith(("attnlib.viz", "attnlib.check")) for m in modules)
    # a GPT trained through its seq2seq adapter brings the GPT's modules in
    gpt = NextTokenModel(GPT(len(digit_vocab()), 16, dim=8, n_heads=2, n_layers=1))
    assert {"attnlib.gpt", "attnlib.multihead", "attnlib.kv_cache"} <= set(code_key(gpt, data, PACKAGE))


@pytest.mark.parametrize(
    "path",
    [
        "viz/topic.py",  # a drawing module
        "check/topic.py",  # an exercise check
        "vit.py",  # a core module the model does not use
        "../tools/publish.py",  # a publishing tool
    ],
)
def test_editing_what_does_not_define_the_computation_keeps_the_key(data, package_copy, path):
    model = attention_model()
    key = code_key(model, data, package_copy)
    edit(package_copy / path)
    assert code_key(model, data, package_copy) == key


@pytest.mark.parametrize(
    "path",
    [
        "training.py",  # the loop
        "seq2seq.py",  # the model's own module
        "attention_decoders.py",  # a submodule's module
        "scorers.py",  # the attention module's module
        "functional.py",  # imported by one of them
        "data.py",  # the data's module
    ],
)
def test_editing_what_defines_the_computation_changes_the_key(data, package_copy, path):
    model = attention_model()
    key = code_key(model, data, package_copy)
    edit(package_copy / path)
    assert code_key(model, data, package_copy) != key
