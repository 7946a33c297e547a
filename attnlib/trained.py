"""Train a model once per machine and reuse the result: :func:`train_or_load`.

Shapes: none; this module handles whole models, datasets and files.

Used by notebooks 07 (sequence to sequence without attention), 08, 09 and 11, which train the
same models.

Several notebooks train the very same model: notebook 11's closing comparison re-trains the
date models of notebooks 07, 08 and 09, and notebook 08 re-trains notebook 07's copy model. Each
notebook must still run on its own, so each one calls :func:`train_or_load` with the same
arguments, and whichever runs first trains; the others load its result.

A result is reused only when *everything* that decides it is the same, so loading gives the
very parameters that training would give:

* the model: its class, its printed structure and every initial parameter and persistent buffer (the
  seed that made them included);
* the data: every (source, target) pair and both vocabularies;
* the recipe: every argument of :func:`~attnlib.training.train`;
* the code: the source of the attnlib modules that define the computation (the modules of the
  model's classes, of the data and of the training loop, and every attnlib module they import,
  transitively: :func:`code_modules`), and the torch version. Drawing (``attnlib.viz``),
  exercise checks (``attnlib.check``), the publishing tools and unrelated library modules are
  not part of it, so editing them keeps every trained model;
* the arithmetic: torch's CPU code path (``torch.backends.cpu.get_cpu_capability()``), the
  variables that pick MKL's and oneDNN's code paths, and the number of threads.

Training is deterministic under those conditions (one thread, fixed seeds), and :func:`train`
reseeds torch and Python's ``random`` before it starts, so the random state it leaves behind is
stored too and restored on loading: the cells after it see the same random numbers either way.
"""

from __future__ import annotations

import ast
import hashlib
import os
import platform
import random
from dataclasses import asdict
from pathlib import Path

import torch

from .data import PairDataset
from .training import History, Seq2SeqModel, train

__all__ = [
    "NOT_THE_COMPUTATION",
    "PACKAGE",
    "code_modules",
    "defining_modules",
    "fingerprint",
    "train_or_load",
]

_ENVIRONMENT = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
PACKAGE = Path(__file__).parent
NOT_THE_COMPUTATION = ("attnlib.viz", "attnlib.check")  # subpackages that never decide a result


def _is_core(name: str) -> bool:
    return name.startswith("attnlib.") and not any(
        name == sub or name.startswith(f"{sub}.") for sub in NOT_THE_COMPUTATION
    )


def _module_file(name: str, root: Path) -> Path | None:
    """The source file of ``attnlib.x.y`` under the package folder ``root``, or None."""
    parts = name.split(".")[1:]
    for path in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def _attnlib_imports(name: str, source: bytes, is_package: bool) -> set[str]:
    """The attnlib modules that the source of module ``name`` imports (read statically)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from .x import y, from . import x, from ..x import y
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # from . import kv_cache
    return {m for m in found if m.startswith("attnlib.")}


def code_modules(roots: set[str], root: Path = PACKAGE) -> dict[str, bytes]:
    """The source of every core attnlib module in ``roots`` and of those they import, transitively.

    Args:
        roots: module names, e.g. ``{"attnlib.seq2seq", "attnlib.data", "attnlib.training"}``;
            names outside attnlib's core (``__main__``, torch, ``attnlib.viz``...) are skipped.
        root: the folder of the ``attnlib`` package to read the sources from.

    Returns:
        ``{module name: source bytes}``, sorted by name.
    """
    sources: dict[str, bytes] = {}
    todo = [name for name in roots if _is_core(name)]
    while todo:
        name = todo.pop()
        path = None if name in sources else _module_file(name, root)
        if path is None:  # seen already, or a name imported from a module rather than a module
            continue
        sources[name] = path.read_bytes()
        imports = _attnlib_imports(name, sources[name], path.name == "__init__.py")
        todo.extend(m for m in imports if _is_core(m) and m not in sources)
    return dict(sorted(sources.items()))


def defining_modules(model: Seq2SeqModel, data: PairDataset) -> set[str]:
    """The modules whose code decides what training ``model`` on ``data`` gives: those of the
    model's classes (every submodule's), of the dataset's class, and the training loop's."""
    classes = {type(m) for m in model.modules()} | {type(data)}
    return {cls.__module__ for cls in classes} | {train.__module__}


def fingerprint(model: Seq2SeqModel, data: PairDataset, **recipe: object) -> str:
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
    for name, source in code_modules(defining_modules(model, data)).items():
        add(name, source)
    add(torch.__version__, torch.backends.cpu.get_cpu_capability(), platform.machine())
    add(torch.get_num_threads(), torch.backends.mkldnn.enabled, [os.environ.get(v) for v in _ENVIRONMENT])
    return digest.hexdigest()


def train_or_load(
    model: Seq2SeqModel, data: PairDataset, folder: str | os.PathLike, **recipe: object
) -> History:
    """:func:`~attnlib.training.train`, or load what the same training gave before.

    Args:
        model: a seq2seq model, freshly built (its initial weights are part of the key).
        data: training pairs.
        folder: folder of the results (created if missing), e.g. ``"../build/models"``. One file
            per training, named by :func:`fingerprint`; delete it to train again.
        **recipe: arguments of :func:`~attnlib.training.train` (``progress`` and ``log`` only
            change what is printed, so they are not part of the key; with ``log=False`` loading
            prints nothing either).

    Returns:
        The :class:`~attnlib.training.History` of the training (its ``seconds`` are the time
        that training took); ``model`` holds the trained weights, in eval mode.
    """
    key = fingerprint(model, data, **{k: v for k, v in recipe.items() if k not in ("progress", "log")})
    path = Path(folder) / f"{key[:24]}.pt"
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["state_dict"])
        model.eval()  # on purpose, and for good: as train() leaves it
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
