"""The machinery behind every exercise check of notebooks 01 to 14: run a student's function on
several cases, compare with the reference, and say in plain words what is right and what is wrong.

A check never ends in a bare traceback. It returns a :class:`Verdict`, whose text is shown
when it is the last expression of a cell and which is truthy only when every case passed.

Shared here, once for every notebook's checks: :func:`run_check` (a function on cases),
:func:`check_answer` and :func:`combined` (predictions), :func:`raised` (the one way a
student's exception becomes a verdict), :func:`seeded` (random draws that leave the student's
seed alone), :func:`describe` (what a value is, in words) and the dtype rule
(:func:`dtype_kind`, :func:`as_numbers`, :func:`require_integer_ids`). The "build an nn.Module"
exercises run on the engine in :mod:`._modules`. The notebook modules import only the names of
``__all__``.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from html import escape
from typing import Any

import torch

from ..i18n import N_, fmt, tr
from ._reach import Forbidden, OutOfReachError, _attnlib_modules, out_of_reach

__all__ = [
    "BEFORE_SUPER_INIT",
    "ERROR",
    "FAIL",
    "NOT_BOOL",
    "PASS",
    "TODO",
    "WORDS",
    "Case",
    "Mistake",
    "Symptom",
    "Verdict",
    "as_numbers",
    "check_answer",
    "combined",
    "declare_hints",
    "declared_hints",
    "describe",
    "dtype_kind",
    "explain",
    "generator",
    "library_changes",
    "not_a_distribution",
    "not_yet",
    "numbered",
    "other_draws",
    "predictions_not_yet",
    "raised",
    "randn",
    "require_integer_ids",
    "result_part",
    "run_check",
    "run_check_parts",
    "same",
    "seeded",
    "slips",
    "wanted",
    "whole_number",
    "wrong_type",
]

#: The word every verdict starts with, by status: the meaning is in words, never only in a colour
#: or an emoji (without an emoji font, or read aloud, those all look or sound alike).
WORDS = {"pass": N_("Passed"), "todo": N_("Not yet"), "fail": N_("Wrong"), "error": N_("Error")}
#: How each message begins, before the exercise's title: ``f"{FAIL} {title}: ..."``.
#: A message is written with the English prefix; a :class:`Verdict` shows it in the current language.
PASS, TODO, FAIL, ERROR = (f"{WORDS[status]}:" for status in ("pass", "todo", "fail", "error"))
#: How the word and the rest of the message join (translated: "{word}：").
WORD_THEN = N_("{word}:")


def _prefix(status: str) -> str:
    """The word a message of ``status`` starts with, and its colon, in the current language."""
    return tr(WORD_THEN).format(word=tr(WORDS[status]))


def _localised(message: str) -> str:
    """``message`` with its English status prefix (:data:`PASS`, ...) in the current language."""
    for status, word in WORDS.items():
        if message.startswith(f"{word}:"):
            prefix, rest = _prefix(status), message[len(word) + 1 :]
            # "Passed: title", but "通过：title": a full-width colon carries its own space.
            return prefix + (rest if prefix.endswith(":") else rest.removeprefix(" "))
    return message


def hint_line(hint: str) -> str:
    """The line ``"   hint: ..."`` of a verdict, the hint translated."""
    return "   " + tr("hint: {hint}").format(hint=tr(hint))


@dataclass(frozen=True)
class Case:
    """One input to try: ``fn(*args, **kwargs)``; ``name`` says what it exercises."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def call(self, fn: Callable[..., Any]) -> Any:
        return fn(*_clone(self.args), **_clone(self.kwargs))


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: ``wrong`` computes what that mistake returns; ``hint`` explains it."""

    hint: str
    wrong: Callable[..., Any]


@dataclass(frozen=True)
class Symptom:
    """A mistake known by what the answer looks like, not by what it computes: ``seen(got, expected)``
    is True when ``got`` shows it; ``hint`` explains it. Listed after the :class:`Mistake` s, it is
    the hint for a wrong answer that none of them models."""

    hint: str
    seen: Callable[[Any, Any], bool]


#: The hints the checks declared while :func:`declared_hints` runs (None outside it).
_DECLARED: ContextVar[set[str] | None] = ContextVar("declared_hints", default=None)


@contextmanager
def declared_hints() -> Iterator[set[str]]:
    """Every hint a check can give, gathered while the block runs: each :class:`Mistake` and
    :class:`Symptom` handed to :func:`run_check`, :func:`check_answer`'s hint and a module
    exercise's own (:func:`declare_hints`), whether or not the answer tried triggers it. The wrong-
    answer catalogue (tests/check/test_harness.py) finds the hints no wrong answer triggers with it."""
    hints: set[str] = set()
    token = _DECLARED.set(hints)
    try:
        yield hints
    finally:
        _DECLARED.reset(token)


def declare_hints(hints: Iterable[str]) -> None:
    """Add ``hints`` (those this check can give) to the :func:`declared_hints` being gathered, if any."""
    gathered = _DECLARED.get()
    if gathered is not None:
        gathered.update(h for h in hints if h)


#: How a softmax makes each row a distribution, the end of :func:`not_a_distribution`'s hint by default.
ROW_BY_ROW = N_("divide exp(x - max) by its own row's sum, `.sum(dim=-1, keepdim=True)`")


def not_a_distribution(fix: str = ROW_BY_ROW) -> Symptom:
    """The hint of every softmax-like check: the answer does not sum along its last axis to what
    the expected one sums to there (1, or 0 for a row with nothing to attend to); ``fix`` ends it."""

    def seen(got: Any, expected: Any) -> bool:
        if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
            return False
        if got.shape != expected.shape or not got.is_floating_point():
            return False
        sums, wanted_sums = got.detach().double().sum(-1), expected.detach().double().sum(-1)
        return not bool(torch.isclose(sums, wanted_sums, atol=1e-3).all())

    return Symptom(
        fmt(
            "the output does not sum to 1 along the last axis, one distribution per row: {fix}", fix=fmt(fix)
        ),
        seen,
    )


#: The box round a verdict in JupyterLab, by status: (what it says to a screen reader, border,
#: background, emoji). The borders differ in grey too (luminance 0.16, 0.28, 0.05) and in style
#: (dashed for "not yet", double for an error); the word before the message says it in any case.
_LOOK = {
    "pass": (N_("Check passed"), "4px solid #1a7f37", "#eefbf1", "✅"),
    "todo": (N_("Check not done yet"), "4px dashed #bf8700", "#fff8e5", "✏️"),
    "fail": (N_("Check failed, wrong answer"), "4px solid #82071e", "#fff0f0", "❌"),
    "error": (N_("Check failed, your code raised an error"), "6px double #82071e", "#fff0f0", "❌"),
}


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: truthy when passed; its text is the message for the student.

    The message starts with the word of its status (:data:`WORDS`): "Passed", "Not yet" (the
    stub is not written yet), "Wrong" (a wrong answer) or "Error" (the student's code raised).
    """

    passed: bool
    message: str
    status: str = "fail"  # "pass", "fail", "todo" (not attempted) or "error" (raised)

    def __post_init__(self) -> None:
        # Messages are written with the English status word; shown in the current language.
        object.__setattr__(self, "message", _localised(self.message))

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:  # text/plain: what nbval compares, and what a terminal shows
        return self.message

    def _repr_html_(self) -> str:
        """JupyterLab's view: the message in a box whose border and accessible name say the status."""
        name, border, background, emoji = _LOOK[self.status]
        name, word = tr(name), tr(WORDS[self.status])
        prefix = _prefix(self.status)
        rest = (
            self.message.removeprefix(prefix)
            if self.message.startswith(prefix)
            else self.message.removeprefix(word).removeprefix(":")
        ).lstrip(" ")
        heading = rest.split("\n", 1)[0]
        style = (
            f"border: 1px solid #d0d7de; border-left: {border}; background: {background}; color: #1f2328; "
            "padding: 0.4em 0.8em; white-space: pre-wrap; font-family: inherit"
        )
        label = tr("{name}: {heading}").format(name=name, heading=heading)
        gap = "" if prefix.endswith("\uff1a") else " "  # a full-width colon has its own space
        return (
            f'<div role="status" aria-label="{escape(label)}" style="{style}">'
            f'<span aria-hidden="true">{emoji}</span> '
            f"<strong>{escape(prefix)}</strong>{gap}{escape(rest)}</div>"
        )


# Hidden cases: every seed a check draws its cases from is shifted by this (0 in a notebook).
# nbgrader's test cells run each check a second time under other_draws(n) (tools/course.py).
_draws = 0


@contextmanager
def other_draws(shift: int) -> Iterator[None]:
    """Inside, every check draws its random cases from other seeds (each seed + ``shift``): the
    same cases with other numbers, which a student cannot have seen or hard-coded."""
    global _draws
    before, _draws = _draws, shift
    try:
        yield
    finally:
        _draws = before


def generator(seed: int) -> torch.Generator:
    """A private random generator for a check's case (``seed`` shifted by :func:`other_draws`)."""
    return torch.Generator().manual_seed(seed + _draws)


def _where(obj: Any) -> Any:
    """Where a function or an attnlib class is written (file, line, name; a class: its methods),
    the same for a fresh import of the same source; None for anything else. A decorated function
    (``functools.cache``) is where the function it wraps is written."""
    obj = getattr(obj, "__wrapped__", obj)
    code = getattr(obj, "__code__", None)
    if code is not None:
        return (code.co_filename, code.co_firstlineno, getattr(obj, "__qualname__", ""))
    if isinstance(obj, type) and obj.__module__.startswith("attnlib"):
        methods = {n: _where(getattr(v, "__func__", v)) for n, v in vars(obj).items()}
        return (obj.__module__, obj.__qualname__, sorted((n, w) for n, w in methods.items() if w is not None))
    return None


def library_changes() -> list[str]:
    """The names in attnlib's loaded library modules (not its checks) that differ from a fresh
    import of the installed files: functions or classes replaced or patched by a notebook cell.

    nbgrader's test cells (tools/course.py) grade only where this is empty: the checks are imported
    afresh, but the library stays the one the student's objects were built from (a fresh copy of
    its classes would make every isinstance test fail), so a patched library must be refused.
    """
    ours = {k: v for k, v in sys.modules.items() if k == "attnlib" or k.startswith("attnlib.")}
    library = [module.__name__ for module in _attnlib_modules()]
    for name in ours:
        del sys.modules[name]
    try:
        fresh = {name: importlib.import_module(name) for name in library}
    finally:
        for name in [k for k in sys.modules if k == "attnlib" or k.startswith("attnlib.")]:
            del sys.modules[name]
        sys.modules.update(ours)
    changed = []
    for name in library:
        old = vars(ours[name])
        for attr, new in vars(fresh[name]).items():
            got = old.get(attr)
            where = _where(new)
            if where is not None:
                same_place = _where(got) == where
            elif isinstance(new, type(sys)):  # a module: attnlib's own are fresh copies too
                same_place = getattr(got, "__name__", None) == new.__name__
            elif callable(new):
                same_place = got is new
            else:
                continue
            if not same_place:
                changed.append(f"{name}.{attr}")
    return changed


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Random draws inside come from ``seed`` (shifted by :func:`other_draws`); the caller's
    global random state is left alone, so a check never moves the student's seed."""
    with torch.random.fork_rng(devices=[]):
        # The CPU generator only, the one fork_rng restores: torch.manual_seed would also set up a
        # deferred seeding of CUDA, XPU and MTIA, formatting the stack for each (about a
        # millisecond a call under pytest's or IPython's stacks), and re-seed a student's GPU.
        torch.default_generator.manual_seed(seed + _draws)
        yield


def _clone(obj: Any) -> Any:
    """Give the student fresh copies so an in-place edit cannot spoil the next case."""
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, tuple):
        return tuple(_clone(o) for o in obj)
    if isinstance(obj, list):
        return [_clone(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def _is_student_frame(filename: str) -> bool:
    """True for code typed in a notebook or script, not for attnlib's or a library's."""
    return (
        "site-packages" not in filename and "attnlib" not in filename and not filename.startswith("<frozen")
    )


def describe(x: Any) -> str:
    """What ``x`` is, in a few words that never cut a number in half: shapes, not reprs."""
    if isinstance(x, torch.Tensor):
        return tr("tensor of shape {shape}, dtype {dtype}").format(shape=tuple(x.shape), dtype=x.dtype)
    if isinstance(x, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in x):
        parts = "; ".join(describe(v) for v in x[:4]) + ("; ..." if len(x) > 4 else "")
        return tr("{kind} of {n}: ({parts})").format(kind=type(x).__name__, n=len(x), parts=parts)
    text = f"{type(x).__name__} {x!r}"
    return text if len(text) <= 120 else text[:117].rsplit(" ", 1)[0] + " ..."


def wanted(expected: Any) -> str:
    """The kind of answer ``expected`` is, as a request: "a number", "a tuple of 2 results", ..."""
    if isinstance(expected, bool):
        return tr("True or False")
    if isinstance(expected, (int, float)):
        return tr("a number (an int or a float, not a string)")
    if isinstance(expected, torch.Tensor):
        return tr("a tensor")
    if isinstance(expected, str):
        return tr("a string")
    if isinstance(expected, (tuple, list)) and all(isinstance(v, int) for v in expected):
        return tr("a shape: a tuple of {n} whole numbers").format(n=len(expected))
    if isinstance(expected, (tuple, list)):
        return tr("a {kind} of {n} results").format(kind=type(expected).__name__, n=len(expected))
    return tr("a {kind}").format(kind=type(expected).__name__)


def wrong_type(got: Any, expected: Any) -> bool:
    """True when ``got`` is not even the kind of thing ``expected`` is (a string for a number, ...)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(expected, bool) != isinstance(got, bool)
    if isinstance(expected, (int, float)):
        return not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1)
    if isinstance(expected, torch.Tensor):
        return not isinstance(got, torch.Tensor)
    if isinstance(expected, (tuple, list)):
        return not isinstance(got, (tuple, list, torch.Size))
    if isinstance(expected, str):
        return not isinstance(got, str)
    return False


def explain(got: Any, expected: Any) -> str:
    """Why ``got`` is not ``expected``, in one line: the wrong kind of answer, the shapes, or the first
    differing element (for a tuple of results, of the first result that differs)."""
    if got is None:
        return tr("your function returned None: did you forget `return`?")
    if wrong_type(got, expected):
        return tr("expected {wanted}, got {got}").format(wanted=wanted(expected), got=describe(got))
    if isinstance(expected, torch.Tensor):
        if got.shape != expected.shape:
            return tr("expected shape {expected}, got {got}").format(
                expected=tuple(expected.shape), got=tuple(got.shape)
            )
        return _first_difference(got, expected)
    if isinstance(expected, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in expected):
        if len(got) != len(expected):
            return tr("expected {wanted}, got {got}").format(wanted=wanted(expected), got=len(got))
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if not same(g, e):
                return tr("result {i} of {n}: {why}").format(i=i + 1, n=len(expected), why=explain(g, e))
    return tr("expected {wanted}, got {got}").format(wanted=describe(expected), got=describe(got))


def randn(*shape: int, seed: int) -> torch.Tensor:
    """Deterministic inputs that do not touch the global random state."""
    return torch.randn(*shape, generator=generator(seed))


def numbered(*shape: int) -> torch.Tensor:
    """A float tensor whose entries are their own flat index: 0., 1., 2., ... (a value taken from
    the wrong place then reads as a wrong index)."""
    return torch.arange(torch.Size(shape).numel(), dtype=torch.float32).view(shape)


# ---------------------------------------------------------------------------------------------
# The dtype rule, the same for every check: a mask is bool (True = may attend) and must come back
# bool; token ids must be integers; every other number is compared by value, whatever its dtype.
# ---------------------------------------------------------------------------------------------

NOT_BOOL = N_("the mask must be boolean (dtype torch.bool), not 0/1 numbers")


def dtype_kind(x: torch.Tensor) -> str:
    """``"bool"``, ``"integer"`` or ``"floating"``: the dtype distinctions the checks care about."""
    if x.dtype == torch.bool:
        return "bool"
    return "floating" if x.is_floating_point() or x.is_complex() else "integer"


def as_numbers(reference: Callable[..., torch.Tensor], fix: str = "") -> Mistake:
    """The typical slip of a mask returned as 0/1 numbers: ``reference``'s mask as floats.

    One mistake covers floats and integers alike, since :func:`same` compares numbers by value.
    ``fix`` ends the hint (``"add `.bool()`"``).
    """
    hint = fmt("{not_bool}: {fix}", not_bool=fmt(NOT_BOOL), fix=fmt(fix)) if fix else fmt(NOT_BOOL)
    return Mistake(hint, lambda *args: reference(*args).float())


def require_integer_ids(verdict: Verdict, title: str, student: Callable[..., Any], case: Case) -> Verdict:
    """A passed ``verdict`` fails after all when ``student`` returns token ids that are not integers.

    :func:`same` compares values only; token ids must also *be* integers (``nn.Embedding`` needs them).
    """
    if not verdict:
        return verdict
    got = case.call(student)
    if dtype_kind(got) != "integer":
        return Verdict(
            False,
            f"{FAIL} "
            + tr("{title}: the values are right, but the dtype is {dtype}.").format(
                title=tr(title), dtype=got.dtype
            )
            + "\n"
            + hint_line(
                "token ids must be integers for nn.Embedding: build the tensor with "
                "`dtype=torch.long` (torch.zeros and torch.ones make floats)"
            ),
        )
    return verdict


def same(got: Any, expected: Any, atol: float = 1e-4) -> bool:
    """Equal values (tensors: same shape and, for masks, both bool; close values; others: ``==``)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return False
        if "bool" in (dtype_kind(expected), dtype_kind(got)):
            return got.dtype == expected.dtype and bool((got == expected).all())
        got_f, exp_f = got.detach().double(), expected.detach().double()
        both_nan = got_f.isnan() & exp_f.isnan()
        return bool((both_nan | torch.isclose(got_f, exp_f, atol=atol, rtol=1e-4)).all())
    if isinstance(expected, (tuple, list)):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(expected)
            and all(same(g, e, atol) for g, e in zip(got, expected, strict=True))
        )
    if isinstance(expected, float):
        return isinstance(got, (int, float, torch.Tensor)) and abs(float(got) - expected) <= atol
    return got == expected


def _first_difference(got: torch.Tensor, expected: torch.Tensor) -> str:
    if "bool" in (dtype_kind(expected), dtype_kind(got)):
        if got.dtype != expected.dtype:
            return tr("expected dtype {expected}, got {got}").format(expected=expected.dtype, got=got.dtype)
        where = (got != expected).nonzero()
    else:
        where = (~torch.isclose(got.detach().double(), expected.detach().double(), atol=1e-4)).nonzero()
    if not len(where):
        return ""
    idx = tuple(where[0].tolist())
    e, g = expected[idx].item(), got[idx].item()
    show = (lambda v: f"{v:.4f}") if isinstance(e, float) else repr
    return tr("first difference at index {index}: expected {expected}, got {got}").format(
        index=idx, expected=show(e), got=show(g)
    )


def not_yet(title: str, *, each: bool = False) -> Verdict:
    """The verdict for code not written yet (it raises ``NotImplementedError``)."""
    template = (
        N_("{title}: replace each `raise NotImplementedError` with your code, then run this check again.")
        if each
        else N_("{title}: replace `raise NotImplementedError` with your code, then run this check again.")
    )
    return Verdict(False, f"{TODO} " + tr(template).format(title=tr(title)), "todo")


def _student_line(exc: BaseException) -> str:
    """``(in line N: `code`)`` for the last line of the student's own code in the traceback, or ``""``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_student_frame(f.filename)]
    if not frames or not frames[-1].line:
        return ""
    return "\n   " + tr("(in line {line}: `{code}`)").format(
        line=frames[-1].lineno, code=frames[-1].line.strip()
    )


#: What torch says when a submodule is assigned before ``super().__init__()`` ran.
BEFORE_SUPER_INIT = "before Module.__init__() call"


def raised(title: str, exc: BaseException, who: str, *, each: bool = False, super_hint: str = "") -> Verdict:
    """THE way a student's exception becomes a verdict, for every check.

    ``NotImplementedError`` means "not written yet" (status ``"todo"``); anything else is reported
    in words (status ``"error"``): the exception's type and message and the student's own line
    that raised it, never a traceback.

    Args:
        title: the exercise's name.
        exc: what the student's code raised.
        who: what raised, as the message names it right after the title, e.g.
            ``", case 2/4 (B=2): your code"`` or ``": `MyLayer(8, 2, 16, 0.1)`"``.
        each: the stub has several ``raise NotImplementedError`` (a class with several methods).
        super_hint: the hint when torch complains that a submodule came before ``super().__init__()``.
    """
    if isinstance(exc, OutOfReachError):  # the library's answer, or a function the exercise forbids
        return Verdict(
            False, f"{FAIL} " + tr("{title}{who} {said}").format(title=tr(title), who=who, said=exc)
        )
    if isinstance(exc, NotImplementedError):
        return not_yet(title, each=each)
    text = f"{ERROR} " + tr("{title}{who} raised {error}: {message}").format(
        title=tr(title), who=who, error=type(exc).__name__, message=exc
    )
    text += _student_line(exc)
    if super_hint and BEFORE_SUPER_INIT in str(exc):
        text += "\n" + hint_line(super_hint)
    return Verdict(False, text, "error")


def run_check(
    title: str,
    student: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[Case],
    mistakes: Sequence[Mistake | Symptom] = (),
    *,
    atol: float = 1e-4,
    forbidden: Sequence[Forbidden] = (),
) -> Verdict:
    """Run ``student`` and ``reference`` on every case and explain the first failure.

    Args:
        title: the exercise's name, shown in the verdict.
        student: the function the student wrote.
        reference: the correct implementation.
        cases: inputs to try, simplest first.
        mistakes: typical wrong answers with a hint each; when the student's output equals
            what a mistake would return (or shows a :class:`Symptom`), the first such hint is shown.
        atol: tolerance for floating-point comparisons.
        forbidden: what is out of reach while ``student`` runs (:mod:`._reach`): the library's
            answer and the functions the exercise forbids; the reference runs outside.

    Returns:
        A :class:`Verdict`.
    """
    declare_hints(mistake.hint for mistake in mistakes)
    if not callable(student):
        return Verdict(
            False,
            f"{FAIL} "
            + tr("{title}: expected a function, got {got}.").format(title=tr(title), got=describe(student)),
        )
    for i, case in enumerate(cases, start=1):
        where = tr("case {i}/{n} ({name})").format(i=i, n=len(cases), name=tr(case.name))
        try:
            with out_of_reach(forbidden, student):
                got = case.call(student)
        except Exception as exc:  # the student's bug, reported in words
            return raised(title, exc, tr(", {where}: your code").format(where=where))
        expected = case.call(reference)
        if same(got, expected, atol):
            continue
        lines = [
            f"{FAIL} " + tr("{title}, {where}:").format(title=tr(title), where=where),
            f"   {explain(got, expected)}",
        ]
        for mistake in mistakes:
            try:
                if isinstance(mistake, Symptom):
                    matched = mistake.seen(got, expected)
                else:
                    matched = same(got, case.call(mistake.wrong), atol)
            except Exception:  # a mistake's model may not apply to this case
                matched = False
            if matched:
                lines.append(hint_line(mistake.hint))
                break
        return Verdict(False, "\n".join(lines))
    return Verdict(
        True, f"{PASS} " + tr("{title}: all {n} cases pass.").format(title=tr(title), n=len(cases)), "pass"
    )


def check_answer(title: str, answer: Any, expected: Any, hint: str = "", *, atol: float = 1e-4) -> Verdict:
    """Check a predicted value (a number, a shape, a token) rather than a function."""
    declare_hints([hint])
    if answer is ...:
        return Verdict(
            False,
            f"{TODO} " + tr("{title}: replace `...` with your prediction.").format(title=tr(title)),
            "todo",
        )
    if same(answer, expected, atol) or (
        isinstance(expected, tuple) and isinstance(answer, (torch.Size, list)) and tuple(answer) == expected
    ):
        return Verdict(
            True,
            f"{PASS} "
            + tr("{title}: right, it is {expected}.").format(title=tr(title), expected=repr(expected)),
            "pass",
        )
    if wrong_type(answer, expected):
        message = tr("{title}: expected {wanted}, got {got}.").format(
            title=tr(title), wanted=wanted(expected), got=describe(answer)
        )
        return Verdict(False, f"{FAIL} " + message)
    said = describe(answer) if isinstance(answer, torch.Tensor) else repr(answer)
    text = f"{FAIL} " + tr("{title}: you predicted {said}; that is not it.").format(
        title=tr(title), said=said
    )
    return Verdict(False, text + ("\n" + hint_line(hint) if hint else ""))


def whole_number(answer: Any) -> int | None:
    """``answer`` as an ``int`` when it is a whole number (``12`` or ``12.0``, not ``True``), else None."""
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and float(answer).is_integer():
        return int(answer)
    return None


def slips(variant: Callable[..., Any], table: Sequence[tuple[str, dict[str, Any]]]) -> list[Mistake]:
    """One :class:`Mistake` per ``(hint, knobs)`` of ``table``: the slip is ``variant(*args, **knobs)``.

    For checks whose reference is written with a knob per typical slip (all knobs at their
    default give the right answer).
    """
    return [Mistake(hint, lambda *args, k=knobs: variant(*args, **k)) for hint, knobs in table]


def run_check_parts(
    title: str,
    student: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[Case],
    mistakes: dict[int, Sequence[Mistake]],
    count: int,
    *,
    forbidden: Sequence[Forbidden] = (),
) -> Verdict:
    """:func:`run_check` for a function with ``count`` results, one result at a time.

    ``mistakes`` maps a result's index to its typical mistakes; the results are checked in the
    order of its keys and the first that fails is reported, so that each gets its own hints.
    ``forbidden`` is :func:`run_check`'s.
    """
    verdict = Verdict(False, "")
    declare_hints(m.hint for part in mistakes.values() for m in part)  # the parts after a failing one too
    for index, part_mistakes in mistakes.items():
        verdict = run_check(
            title,
            result_part(student, index, count),
            result_part(reference, index, count),
            cases,
            part_mistakes,
            forbidden=forbidden,
        )
        if not verdict:
            return verdict
    return verdict


def result_part(fn: Callable[..., Any], index: int, count: int) -> Callable[..., Any]:
    """``fn``'s result number ``index`` when it returns ``count`` things, else its whole result.

    Checks a function with several results one result at a time, so that each gets its own hints.
    """

    def part(*args: Any) -> Any:
        out = fn(*args)
        return out[index] if isinstance(out, (tuple, list)) and len(out) == count else out

    part.__wrapped__ = fn  # type: ignore[attr-defined]  # what out_of_reach looks into
    return part


def predictions_not_yet(title: str) -> Verdict:
    """The verdict for a prediction in several parts with a ``...`` still in it."""
    return Verdict(
        False,
        f"{TODO} " + tr("{title}: replace each `...` with your prediction.").format(title=tr(title)),
        "todo",
    )


def combined(title: str, parts: Sequence[Verdict], right: str, *notes: str) -> Verdict:
    """One verdict for a prediction in several parts, each already checked with :func:`check_answer`.

    Args:
        title: the exercise's name.
        parts: one verdict per part.
        right: the message when every part passes (after the title).
        *notes: lines added at the end when a part fails.
    """
    if all(parts):
        return Verdict(
            True, f"{PASS} " + tr("{title}: {right}").format(title=tr(title), right=tr(right)), "pass"
        )
    lines = [f"{FAIL} " + tr("{title}:").format(title=tr(title))] + [
        "   " + p.message.replace("\n", "\n   ") for p in parts if not p
    ]
    return Verdict(False, "\n".join([*lines, *(tr(note) for note in notes)]))
