"""train_cached: loading gives exactly what training gives, and only when nothing differs."""

from __future__ import annotations

import random

import pytest
import torch

from attnlib import seq2seq
from attnlib.cache import fingerprint, train_cached
from attnlib.data import digit_datasets, digit_vocab

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


def after(model, data, cache, **recipe):
    """Train (or load), then draw from both random generators as a later cell would."""
    history = train_cached(model, data, cache, **recipe)
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
    # and training again for real gives those very parameters (the premise of the cache)
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
