"""The machinery behind every exercise check: run a student's function on several cases,
compare with the reference, and say in plain words what is right and what is wrong.

A check never ends in a bare traceback. It returns a :class:`Verdict`, whose text is shown
when it is the last expression of a cell and which is truthy only when every case passed.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

PASS, FAIL, TODO = "✅", "❌", "✏️"


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
class Verdict:
    """The outcome of a check: truthy when passed; its text is the message for the student."""

    passed: bool
    message: str
    status: str = "fail"  # "pass", "fail", "todo" (not attempted) or "error" (raised)

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:  # JupyterLab renders this; nbval compares __repr__
        return self.message.replace("\n", "  \n")


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Random draws inside come from ``seed``; the caller's global random state is left alone,
    so a check never moves the student's seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
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


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)}, dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def same(got: Any, expected: Any, atol: float = 1e-4) -> bool:
    """Equal values (tensors: same shape and dtype kind, close values; others: ``==``)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return False
        if expected.dtype == torch.bool or got.dtype == torch.bool:
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
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        if got.dtype != expected.dtype:
            return f"expected dtype {expected.dtype}, got {got.dtype}"
        where = (got != expected).nonzero()
    else:
        where = (~torch.isclose(got.detach().double(), expected.detach().double(), atol=1e-4)).nonzero()
    if not len(where):
        return ""
    idx = tuple(where[0].tolist())
    e, g = expected[idx].item(), got[idx].item()
    fmt = (lambda v: f"{v:.4f}") if isinstance(e, float) else repr
    return f"first difference at index {idx}: expected {fmt(e)}, got {fmt(g)}"


def run_check(
    title: str,
    student: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[Case],
    mistakes: Sequence[Mistake] = (),
    *,
    atol: float = 1e-4,
) -> Verdict:
    """Run ``student`` and ``reference`` on every case and explain the first failure.

    Args:
        title: the exercise's name, shown in the verdict.
        student: the function the student wrote.
        reference: the correct implementation.
        cases: inputs to try, simplest first.
        mistakes: typical wrong answers with a hint each; when the student's output equals
            what a mistake would return, that hint is shown.
        atol: tolerance for floating-point comparisons.

    Returns:
        A :class:`Verdict`.
    """
    if not callable(student):
        return Verdict(False, f"{FAIL} {title}: expected a function, got {_describe(student)}.")
    for i, case in enumerate(cases, start=1):
        where = f"case {i}/{len(cases)} ({case.name})"
        try:
            got = case.call(student)
        except NotImplementedError:
            return Verdict(
                False,
                f"{TODO} {title}: not yet. Replace `raise NotImplementedError` with your code, "
                "then run this check again.",
                "todo",
            )
        except Exception as exc:  # the student's bug, reported in words
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_student_frame(f.filename)]
            where_in_code = (
                f"\n   (in line {frames[-1].lineno}: `{frames[-1].line.strip()}`)"
                if frames and frames[-1].line
                else ""
            )
            return Verdict(
                False,
                f"{FAIL} {title}, {where}: your code raised {type(exc).__name__}: {exc}{where_in_code}",
                "error",
            )
        expected = case.call(reference)
        if same(got, expected, atol):
            continue
        lines = [f"{FAIL} {title}, {where}:"]
        if got is None:
            lines.append("   your function returned None: did you forget `return`?")
        elif (
            isinstance(expected, torch.Tensor)
            and isinstance(got, torch.Tensor)
            and got.shape != expected.shape
        ):
            lines.append(f"   expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
        elif isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor):
            lines.append(f"   {_first_difference(got, expected)}")
        else:
            lines.append(f"   expected {_describe(expected)}, got {_describe(got)}")
        for mistake in mistakes:
            try:
                matched = same(got, case.call(mistake.wrong), atol)
            except Exception:  # a mistake's model may not apply to this case
                matched = False
            if matched:
                lines.append(f"   hint: {mistake.hint}")
                break
        return Verdict(False, "\n".join(lines))
    return Verdict(True, f"{PASS} {title}: all {len(cases)} cases pass.", "pass")


def check_answer(title: str, answer: Any, expected: Any, hint: str = "", *, atol: float = 1e-4) -> Verdict:
    """Check a predicted value (a number, a shape, a token) rather than a function."""
    if answer is ...:
        return Verdict(False, f"{TODO} {title}: not yet. Replace `...` with your prediction.", "todo")
    if same(answer, expected, atol) or (
        isinstance(expected, tuple) and isinstance(answer, (torch.Size, list)) and tuple(answer) == expected
    ):
        return Verdict(True, f"{PASS} {title}: right, it is {expected!r}.", "pass")
    text = f"{FAIL} {title}: you predicted {answer!r}; that is not it."
    return Verdict(False, text + (f"\n   hint: {hint}" if hint else ""))
