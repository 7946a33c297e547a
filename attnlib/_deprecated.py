"""Thin aliases for module paths that moved: one release of grace for old imports.

Shapes: none (module paths and names, not tensors).

A module that moved leaves behind a thin alias at its old path::

    from ._deprecated import moved
    __getattr__, __dir__ = moved(__name__, "attnlib.viz.heatmaps")

Importing the old path warns once with a :class:`DeprecationWarning` that names the new one,
pointed at the line that imported it (so Jupyter shows it under the student's cell), and every
name is then looked up in the new modules, in the order given.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable

REMOVED_IN = "0.3.0"


def _caller_frame():
    """The first frame outside the import machinery, this module and attnlib's aliases."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        machinery = name.startswith("importlib") or frame.f_code.co_filename.startswith("<frozen")
        alias = name == __name__ or frame.f_globals.get("__deprecated_alias__", False)
        if not (machinery or alias):
            return frame
        frame = frame.f_back
    return None


def moved(old: str, *new: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Warn that module ``old`` moved to ``new`` and return its ``__getattr__`` and ``__dir__``.

    Args:
        old: the old module's ``__name__``.
        *new: the modules that now hold its names, searched in this order.

    Returns:
        ``(__getattr__, __dir__)`` for the alias module.
    """
    if not new:
        raise ValueError(f"expected at least one new module path for {old}, got none")
    sys.modules[old].__dict__["__deprecated_alias__"] = True
    if len(new) > 1 and all(path.startswith("attnlib.viz.") for path in new):
        where = "attnlib.viz"  # split across the drawing wing, whose index re-exports every name
    else:
        where = new[0] if len(new) == 1 else f"{', '.join(new[:-1])} and {new[-1]}"
    message = f"{old} moved to {where}; import from there ({old} goes in attnlib {REMOVED_IN})"
    frame = _caller_frame()
    if frame is None:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
    else:
        warnings.warn_explicit(
            message,
            DeprecationWarning,
            frame.f_code.co_filename,
            frame.f_lineno,
            module=frame.f_globals.get("__name__", "<unknown>"),
            registry=frame.f_globals.setdefault("__warningregistry__", {}),
        )

    def __getattr__(name: str) -> object:  # noqa: N807
        for path in new:
            module = importlib.import_module(path)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {where})")

    def __dir__() -> list[str]:  # noqa: N807
        names: set[str] = set()
        for path in new:
            names.update(n for n in dir(importlib.import_module(path)) if not n.startswith("_"))
        return sorted(names)

    return __getattr__, __dir__


def moved_names(old: str, names: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for the names that left module ``old`` (which itself stays).

    ``names`` maps each old name to its new home: ``"attnlib.kv_cache"`` (same name there) or
    ``"attnlib.sampling:require_sampling"`` (renamed). Reading one of them warns once per use
    with a :class:`DeprecationWarning` naming the new place, pointed at the caller's line.

    Args:
        old: the module's ``__name__``.
        names: ``{old_name: "new.module"}`` or ``{old_name: "new.module:new_name"}``.

    Returns:
        ``__getattr__`` for module ``old``.
    """

    def __getattr__(name: str) -> object:  # noqa: N807
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        path, _, new_name = names[name].partition(":")
        new_name = new_name or name
        message = (
            f"{old}.{name} moved to {path}.{new_name}; import it from there "
            f"(the old name goes in attnlib {REMOVED_IN})"
        )
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(path), new_name)

    return __getattr__
