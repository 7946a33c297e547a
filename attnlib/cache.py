"""Train a model once per machine and reuse the result: :func:`train_cached`.

Several notebooks train the very same model: notebook 11's closing comparison re-trains the
date models of notebooks 08 and 09, and notebook 08 re-trains notebook 07's copy model. Each
notebook must still run on its own, so each one calls :func:`train_cached` with the same
arguments, and whichever runs first trains; the others load its result.

A result is reused only when *everything* that decides it is the same, so loading gives the
very parameters that training would give:

* the model: its class, its printed structure and every initial parameter and buffer (the
  seed that made them included);
* the data: every (source, target) pair and both vocabularies;
* the recipe: every argument of :func:`~attnlib.training.train`;
* the code: the source of every attnlib module and the torch version;
* the arithmetic: torch's CPU code path (``torch.backends.cpu.get_cpu_capability()``), the
  variables that pick MKL's and oneDNN's code paths, and the number of threads.

Training is deterministic under those conditions (one thread, fixed seeds), and :func:`train`
reseeds torch and Python's ``random`` before it starts, so the random state it leaves behind is
stored too and restored on loading: the cells after it see the same random numbers either way.
"""

from __future__ import annotations

import hashlib
import os
import platform
import random
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from .data import PairDataset
from .training import History, train

_ENVIRONMENT = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def fingerprint(model: nn.Module, data: PairDataset, **recipe: object) -> str:
    """A hex digest of everything that decides what ``train(model, data, **recipe)`` returns."""
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        for part in parts:
            digest.update(part if isinstance(part, bytes) else repr(part).encode())
            digest.update(b"\0")

    add(type(model).__qualname__, repr(model), sorted(recipe.items()))
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().cpu().contiguous()
        add(name, tuple(tensor.shape), str(tensor.dtype), tensor.view(-1).view(torch.uint8).numpy().tobytes())
    add(data.pairs, data.src_vocab.itos, data.tgt_vocab.itos)
    source = Path(__file__).parent
    for path in sorted(source.glob("*.py")):
        add(path.name, path.read_bytes())
    add(torch.__version__, torch.backends.cpu.get_cpu_capability(), platform.machine())
    add(torch.get_num_threads(), torch.backends.mkldnn.enabled, [os.environ.get(v) for v in _ENVIRONMENT])
    return digest.hexdigest()


def train_cached(model: nn.Module, data: PairDataset, cache: str | os.PathLike, **recipe: object) -> History:
    """:func:`~attnlib.training.train`, or load what the same training gave before.

    Args:
        model: a seq2seq model, freshly built (its initial weights are part of the key).
        data: training pairs.
        cache: folder of the results (created if missing), e.g. ``"../build/models"``. One file
            per training, named by :func:`fingerprint`; delete it to train again.
        **recipe: arguments of :func:`~attnlib.training.train` (``progress`` and ``log`` only
            change what is printed, so they are not part of the key; with ``log=False`` loading
            prints nothing either).

    Returns:
        The :class:`~attnlib.training.History` of the training (its ``seconds`` are the time
        that training took); ``model`` holds the trained weights, in eval mode.
    """
    key = fingerprint(model, data, **{k: v for k, v in recipe.items() if k not in ("progress", "log")})
    path = Path(cache) / f"{key[:24]}.pt"
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["state_dict"])
        model.eval()
        torch.set_rng_state(saved["torch_rng"])
        version, state, gauss = saved["python_rng"]
        random.setstate((version, tuple(state), gauss))
        if recipe.get("log", True):
            print(f"loaded {path}: the same code, data, initial weights and recipe trained it before")
        return History(**saved["history"])
    history = train(model, data, **recipe)
    version, state, gauss = random.getstate()
    saved = {
        "state_dict": model.state_dict(),
        "history": asdict(history),
        "torch_rng": torch.get_rng_state(),
        "python_rng": [version, list(state), gauss],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two kernels may race: write, then rename
    torch.save(saved, partial)
    os.replace(partial, path)
    return history
