"""What a check of notebooks 01 to 14 puts out of reach while it runs the student's code: attnlib's
own answer to the exercise, and the torch functions the exercise text forbids.

A check declares them, ``forbidden=`` of :func:`attnlib.check._core.run_check` or of a
:class:`~attnlib.check._modules.ModuleExercise`, each made by :func:`own` (a function or class of
attnlib) or :func:`torch_api` (a torch function under every name the text means). Inside
:func:`out_of_reach`, which surrounds only the student's code, every name of each is bound to a
stand-in that raises :class:`OutOfReachError`:

- a function's names in every attnlib module (so attnlib's other functions that call it reach the
  stand-in too) and in the student's own module (``from attnlib.sampling import top_p_logits`` in a
  notebook); the check's modules are left alone, they keep their private references;
- a class's methods (``__init__`` and ``forward`` unless the declaration names others): a subclass,
  or a module that holds one, reaches them as well;
- a torch function at each place declared (``torch.softmax``, ``torch.Tensor.softmax``, ...), and
  where the student's module binds it under another name.

Everything is put back on the way out, whatever the student's code did; a stand-in whose error the
student's code caught still fails the check. :func:`banned_class` is the same rule for a class
handed in: derived from, or holding, a forbidden class. Building blocks of earlier notebooks are
not declared, so they stay in reach.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from torch import nn

from ..i18n import N_, fmt

__all__ = ["Forbidden", "OutOfReachError", "banned_class", "out_of_reach", "own", "torch_api"]

#: The hint of a function or class of attnlib that is the exercise's answer.
OWN_HINT = N_(
    "the check puts the library's answer out of reach while it runs your code; building blocks "
    "from earlier notebooks stay allowed"
)
#: The hint of a torch function the exercise text forbids, unless the declaration gives its own.
TORCH_HINT = N_("write that step yourself, with the operations the exercise names")


#: What the verdict says the student's code did with something out of reach, by verb.
_OWN_SAID = {
    "calls": N_("calls {what}; write it yourself."),
    "is": N_("is {what}; write it yourself."),
    "derives from": N_("derives from {what}; write it yourself."),
    "holds": N_("holds {what}; write it yourself."),
    "hands back": N_("hands back {what}; write it yourself."),
}
_TORCH_SAID = {
    "calls": N_(
        "calls {what} (directly or through a function that uses it), which this exercise asks you to do "
        "without."
    ),
    "is": N_(
        "is {what} (directly or through a function that uses it), which this exercise asks you to do without."
    ),
    "derives from": N_(
        "derives from {what} (directly or through a function that uses it), which this exercise asks "
        "you to do without."
    ),
    "holds": N_(
        "holds {what} (directly or through a function that uses it), which this exercise asks you to do "
        "without."
    ),
    "hands back": N_(
        "hands back {what} (directly or through a function that uses it), which this exercise asks you to do "
        "without."
    ),
}


@dataclass(frozen=True)
class Forbidden:
    """One thing out of reach while the student's code runs.

    Attributes:
        what: how the verdict names it: ``"attnlib's own `top_p_logits`"``, ``"`torch.softmax`"``.
        places: ``(owner, attribute)`` pairs bound to the stand-in: a module's function, a class's method.
        aliases: objects whose every name in attnlib's modules and in the student's is bound to it too.
        classes: classes a student's class may not derive from or hold as a submodule.
        hint: the hint of the verdict.
        own: True for attnlib's own answer ("write it yourself"), False for a torch function the
            text forbids.
    """

    what: str
    places: tuple[tuple[Any, str], ...] = ()
    aliases: tuple[Any, ...] = ()
    classes: tuple[type, ...] = ()
    hint: str = OWN_HINT
    own: bool = True

    def said(self, verb: str) -> str:
        """The verdict after who did it: ``"calls attnlib's own `x`; write it yourself.\\n   hint: ..."``."""
        from .. import i18n
        from ._core import hint_line

        templates = _OWN_SAID if self.own else _TORCH_SAID
        if verb not in templates:
            raise ValueError(f"expected a verb among {sorted(templates)}, got {verb!r}")
        what = i18n.tr(self.what) if isinstance(self.what, i18n.Text) else self.what
        return i18n.tr(templates[verb]).format(what=what) + "\n" + hint_line(self.hint)


class OutOfReachError(Exception):
    """Raised by a stand-in: the student's code reached something the check put out of reach."""

    def __init__(self, forbidden: Forbidden, verb: str = "calls") -> None:
        super().__init__(forbidden.said(verb))
        self.forbidden = forbidden


def own(obj: Any, *methods: str, what: str = "") -> Forbidden:
    """attnlib's own answer: a function, under all its names; or a class, by its ``methods``
    (``__init__`` and ``forward`` if none are named), which a student's class may not derive
    from or hold. ``what`` names it in the verdict (``"AttentionGeneral.score"``)."""
    said = fmt("attnlib's own `{name}`", name=what or obj.__name__)
    if isinstance(obj, type):
        places = tuple((obj, name) for name in methods or ("__init__", "forward"))
        return Forbidden(said, places, classes=(obj,))
    return Forbidden(said, aliases=(obj,))


def torch_api(what: str, *places: tuple[Any, str], hint: str = TORCH_HINT) -> Forbidden:
    """A torch function or class the exercise text forbids, at each of its ``places``: ``(torch,
    "softmax")``, ``(torch.Tensor, "softmax")``, ``(nn.GRUCell, "forward")``. A module's function is
    also replaced where the student's module binds it under another name."""
    aliases = tuple(getattr(owner, name) for owner, name in places if isinstance(owner, ModuleType))
    modules = [owner for owner, _ in places if isinstance(owner, type) and issubclass(owner, nn.Module)]
    classes = tuple(dict.fromkeys(modules))
    return Forbidden(f"`{what}`", tuple(places), aliases, classes, hint, own=False)


def banned_class(forbidden: Sequence[Forbidden], cls: type, module: nn.Module | None = None) -> str | None:
    """What is out of reach in a class handed in (``"derives from attnlib's own ..."``), or None.

    Looks at ``cls``'s bases, and when a ``module`` built from it is given, at its submodules.
    """
    for item in forbidden:
        for banned in item.classes:
            if cls is banned:
                return item.said("is")
            if issubclass(cls, banned):
                return item.said("derives from")
            if module is not None and any(isinstance(m, banned) for m in module.modules()):
                return item.said("holds")
    return None


_MISSING = object()


def _get(owner: Any, name: str) -> Any:
    return (owner if isinstance(owner, dict) else vars(owner)).get(name, _MISSING)


def _set(owner: Any, name: str, value: Any) -> None:
    if isinstance(owner, dict):
        if value is _MISSING:
            owner.pop(name, None)
        else:
            owner[name] = value
    elif value is _MISSING:
        delattr(owner, name)
    else:
        setattr(owner, name, value)


def _unwrap(student: Any) -> Any:
    """The student's own function inside a ``functools.partial`` or a check's wrapper (whose
    ``__wrapped__`` names it)."""
    while True:
        if isinstance(student, functools.partial):
            student = student.func
        elif callable(student) and not isinstance(student, type) and hasattr(student, "__wrapped__"):
            student = student.__wrapped__
        else:
            return student


def _namespaces(student: Any) -> list[dict]:
    """The global namespaces of the student's code: a function's, or those of a class's methods."""
    student = _unwrap(student)
    functions = [student] if not isinstance(student, type) else list(vars(student).values())
    spaces: dict[int, dict] = {}
    for fn in functions:
        fn = getattr(fn, "__func__", fn)
        space = getattr(fn, "__globals__", None)
        if isinstance(space, dict):
            spaces[id(space)] = space
    return list(spaces.values())


def _attnlib_modules() -> list[ModuleType]:
    """attnlib's modules, not its checks (they keep their references private)."""
    return [
        module
        for name, module in list(sys.modules.items())
        if (name == "attnlib" or name.startswith("attnlib.")) and not name.startswith("attnlib.check")
    ]


def _handed_back(forbidden: Sequence[Forbidden], student: Any) -> Forbidden | None:
    """The forbidden thing that ``student`` itself is (``check.x(attnlib.x)``), or None."""
    student = _unwrap(student)
    for item in forbidden:
        if any(student is a for a in item.aliases):
            return item
    return None


def _stand_in(item: Forbidden, reached: list[Forbidden]) -> Any:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        reached.append(item)
        raise OutOfReachError(item)

    return stand_in


@contextmanager
def out_of_reach(forbidden: Sequence[Forbidden], student: Any = None) -> Iterator[None]:
    """Inside, everything ``forbidden`` raises :class:`OutOfReachError` when called; ``student`` is the
    function or class handed in (its module's names are replaced too).

    Raises :class:`OutOfReachError` on entry when ``student`` is itself forbidden, and on the way out
    when the student's code reached a stand-in, even if it caught the error.
    """
    if not forbidden:
        yield
        return
    item = _handed_back(forbidden, student)
    if item is not None:
        raise OutOfReachError(item, "hands back")
    reached: list[Forbidden] = []
    patches: dict[tuple[int, str], tuple[Any, str, Any]] = {}
    # Where each item's aliases are bound, found in one pass over each namespace (by identity);
    # then each item in turn, its places first and then those names, so that the first item to
    # claim a name keeps it.
    holders: dict[int, list[int]] = {}  # id(alias) -> the items that declare it, in order
    for i, item in enumerate(forbidden):
        for alias in item.aliases:
            holders.setdefault(id(alias), []).append(i)
    bound: list[list[tuple[Any, str]]] = [[] for _ in forbidden]
    if holders:
        for space in [*_attnlib_modules(), *_namespaces(student)]:
            for name, value in list((space if isinstance(space, dict) else vars(space)).items()):
                for i in holders.get(id(value), ()):
                    bound[i].append((space, name))
    for item, names in zip(forbidden, bound, strict=True):
        stand_in = _stand_in(item, reached)
        for owner, name in (*item.places, *names):
            patches.setdefault((id(owner), name), (owner, name, stand_in))
    saved: list[tuple[Any, str, Any]] = []
    try:
        for owner, name, stand_in in patches.values():
            saved.append((owner, name, _get(owner, name)))
            _set(owner, name, stand_in)
        yield
    except Exception:
        if reached:  # whatever the student's code made of the stand-in's error
            raise OutOfReachError(reached[0]) from None
        raise
    finally:
        for owner, name, before in reversed(saved):
            _set(owner, name, before)
    if reached:  # the student's code caught the stand-in's error and went on
        raise OutOfReachError(reached[0])
