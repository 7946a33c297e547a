"""Every notebook's checks, tried by one harness on that notebook's answer table.

For each module of attnlib/check there is a table ``tests/check/answers/<module>.py`` (its format
is in ``answers/__init__.py``). Every right answer passes; every typical mistake says "Wrong" and
gives its hint; every other refused answer says why, in words; a stub, or a prediction left as
``...``, is "Not yet"; a crash is an "Error" in words, without a traceback; a function that
returns nothing is refused; and no check moves the student's global random state. A check module
without a table, and a check without a right or a wrong answer in its table, fail by name. What
only one notebook's checks do is tested in ``test_<module>.py`` beside this file.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import torch

from attnlib import check
from tests import ROOT
from tests.check.answers import Given
from tests.check.test_reach import bindings
from tests.check.verdicts import stub

KINDS = ("RIGHT", "WRONG", "OUT_OF_REACH", "TOLD", "NOT_YET", "CRASHES")
#: What each entry of a table, tried once, said: ``(module, check, kind, index)`` -> :class:`Tried`.
TRIED: dict[tuple[str, str, str, int], Tried] = {}
WORDS = {"pass": "Passed", "todo": "Not yet", "fail": "Wrong", "error": "Error"}  # how each message begins
TABLES_DIR = Path(__file__).parent / "answers"

MODULES = sorted(m.name for m in pkgutil.iter_modules(check.__path__) if not m.name.startswith("_"))
NOTEBOOKS = {p.stem[3:]: p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}


def _table(module: str):
    try:
        return importlib.import_module(f"tests.check.answers.{module}")
    except ModuleNotFoundError as e:
        if e.name != f"tests.check.answers.{module}":
            raise
        return None


TABLES = {module: table for module in MODULES if (table := _table(module)) is not None}


def _notebook(module: str) -> str:
    return NOTEBOOKS.get(module, f"the notebook of attnlib/check/{module}.py")


def _name(answer: Any) -> str:
    """The answer as a reader finds it in its table: its name, and where a function is written."""
    if isinstance(answer, Given):
        return repr(answer)
    if isinstance(answer, torch.nn.Module):
        return f"an instance of {type(answer).__name__}"
    name = getattr(answer, "__qualname__", None)
    if name is None:
        return repr(answer)
    code = getattr(answer, "__code__", None)
    if code is not None and Path(code.co_filename).is_relative_to(ROOT):
        return f"{name} ({Path(code.co_filename).relative_to(ROOT)}:{code.co_firstlineno})"
    return name


def _entries(kind: str) -> list:
    """One pytest parameter per entry of ``kind`` in every table, named by notebook, check and answer."""
    params = []
    for module, table in TABLES.items():
        for name, entries in getattr(table, kind, {}).items():
            for i, entry in enumerate(entries):
                answer = entry[0] if kind in ("WRONG", "OUT_OF_REACH", "TOLD", "CRASHES") else entry
                label = entry[1] if kind in ("WRONG", "OUT_OF_REACH") else _name(answer).split(" (")[0]
                label = label if len(label) <= 48 else label[:45] + "..."
                params.append(
                    pytest.param(module, name, i, entry, id=f"{_notebook(module)}.{name}-{i}-{label}")
                )
    return params


class Tried:
    """``check.<name>(answer)`` for one entry of a table: the verdict, ``where`` (the notebook, the
    check and the answer, in words, for every failure message), and whether the global random
    state moved, which :meth:`seed_left_alone` asserts last."""

    def __init__(self, module: str, name: str, i: int, answer: Any, kind: str):
        check_fn = getattr(importlib.import_module(f"attnlib.check.{module}"), name)
        self.where = f"{_notebook(module)}: check.{name}, {kind} #{i} in answers/{module}.py, {_name(answer)}"
        state = torch.random.get_rng_state()
        with check._core.declared_hints() as self.hints:  # every hint the check could have given
            self.verdict = check_fn(*answer.args) if isinstance(answer, Given) else check_fn(answer)
        self.message = self.verdict.message
        self.moved = not torch.equal(torch.random.get_rng_state(), state)
        if (
            kind in KINDS
        ):  # tried on the visible cases: test_every_hint_is_triggered_by_a_wrong_answer reuses it
            TRIED[(module, name, kind, i)] = self

    def seed_left_alone(self) -> None:
        """A check never moves the student's global random state."""
        assert not self.moved, f"{self.where}: the check moved the global random state"


# ----------------------------------------------------------------------------- every check is tried


@pytest.mark.parametrize("module", MODULES)
def test_every_check_module_has_an_answer_table(module):
    assert module in TABLES, (
        f"attnlib/check/{module}.py ({_notebook(module)}) has no answer table: write "
        f"tests/check/answers/{module}.py (its format is in tests/check/answers/__init__.py)"
    )


def test_every_answer_table_belongs_to_a_check_module():
    tables = {p.stem for p in TABLES_DIR.glob("*.py") if p.stem != "__init__"}
    assert tables <= set(MODULES), f"answer tables without a check module: {sorted(tables - set(MODULES))}"


@pytest.mark.parametrize("module", sorted(TABLES))
def test_every_check_has_a_right_or_a_wrong_answer(module):
    table, exported = TABLES[module], importlib.import_module(f"attnlib.check.{module}").__all__
    right, wrong = getattr(table, "RIGHT", {}), getattr(table, "WRONG", {})
    untried = [name for name in exported if not right.get(name) and not wrong.get(name)]
    assert not untried, (
        f"{_notebook(module)}: no right and no wrong answer for check.{', check.'.join(untried)} "
        f"in tests/check/answers/{module}.py"
    )
    for kind in KINDS:
        unknown = sorted(set(getattr(table, kind, {})) - set(exported))
        assert not unknown, f"tests/check/answers/{module}.py: {kind} names no check of {module}: {unknown}"


# ----------------------------------------------------------------------------- the verdicts


@pytest.mark.parametrize(("module", "name", "i", "answer"), _entries("RIGHT"))
def test_a_right_answer_passes(module, name, i, answer):
    tried = Tried(module, name, i, answer, "RIGHT")
    assert tried.verdict and tried.verdict.status == "pass", f"{tried.where} should pass:\n{tried.message}"
    assert tried.message.startswith("Passed: "), f"{tried.where}:\n{tried.message}"
    tried.seed_left_alone()


# nbgrader's test cells run every check a second time on hidden cases (tools/course.py, DRAWS):
# the same cases drawn from shifted seeds. A right answer must pass those too, with any shift.
@pytest.mark.parametrize("shift", [1000, 7])
@pytest.mark.parametrize(("module", "name", "i", "answer"), _entries("RIGHT"))
def test_a_right_answer_passes_the_hidden_cases(module, name, i, answer, shift):
    with check._core.other_draws(shift):
        tried = Tried(module, name, i, answer, f"RIGHT (hidden cases, seeds + {shift})")
    assert tried.verdict and tried.verdict.status == "pass", f"{tried.where} should pass:\n{tried.message}"
    tried.seed_left_alone()


def test_hidden_cases_draw_other_numbers_and_only_inside():
    before = check._core.randn(3, seed=1)
    with check._core.other_draws(1000):
        hidden = check._core.randn(3, seed=1)
        assert torch.equal(hidden, torch.randn(3, generator=torch.Generator().manual_seed(1001)))
    assert not torch.equal(before, hidden) and torch.equal(before, check._core.randn(3, seed=1))


@pytest.mark.parametrize(("module", "name", "i", "entry"), _entries("WRONG"))
def test_a_typical_mistake_gets_its_hint(module, name, i, entry):
    answer, hint = entry
    tried = Tried(module, name, i, answer, "WRONG")
    assert not tried.verdict and tried.verdict.status == "fail", (
        f"{tried.where} should be wrong:\n{tried.message}"
    )
    assert tried.message.startswith("Wrong: "), (
        f"{tried.where}:\n{tried.message}"
    )  # the word, not only an emoji
    assert "hint:" in tried.message and hint in tried.message, (
        f"{tried.where} should get the hint {hint!r}:\n{tried.message}"
    )
    tried.seed_left_alone()


@pytest.mark.parametrize(("module", "name", "i", "entry"), _entries("OUT_OF_REACH"))
def test_the_librarys_answer_is_out_of_reach(module, name, i, entry):
    """Handing back attnlib's own answer, or calling a torch function the exercise forbids, is
    "Wrong" and names it; afterwards every name is bound as before (tests/check/test_reach.py)."""
    answer, names = entry
    before = bindings()
    tried = Tried(module, name, i, answer, "OUT_OF_REACH")
    assert not tried.verdict and tried.verdict.status == "fail", (
        f"{tried.where} should be wrong:\n{tried.message}"
    )
    assert tried.message.startswith("Wrong: "), f"{tried.where}:\n{tried.message}"
    assert "hint:" in tried.message, f"{tried.where}:\n{tried.message}"
    assert names in tried.message, f"{tried.where} should say {names!r}:\n{tried.message}"
    assert bindings() == before, f"{tried.where}: a name out of reach was not put back"
    tried.seed_left_alone()


@pytest.mark.parametrize(("module", "name", "i", "entry"), _entries("TOLD"))
def test_a_refused_answer_is_told_why(module, name, i, entry):
    answer, status, *texts = entry
    tried = Tried(module, name, i, answer, "TOLD")
    assert not tried.verdict and tried.verdict.status == status, (
        f"{tried.where} should be {status!r}:\n{tried.message}"
    )
    assert tried.message.startswith(f"{WORDS[status]}: "), f"{tried.where}:\n{tried.message}"
    assert "Traceback" not in tried.message, f"{tried.where}:\n{tried.message}"
    for text in texts:
        assert text in tried.message, f"{tried.where} should say {text!r}:\n{tried.message}"
    tried.seed_left_alone()


@pytest.mark.parametrize(("module", "name", "i", "answer"), _entries("NOT_YET"))
def test_a_stub_is_not_yet(module, name, i, answer):
    tried = Tried(module, name, i, answer, "NOT_YET")
    assert not tried.verdict and tried.verdict.status == "todo", (
        f"{tried.where} should be 'not yet':\n{tried.message}"
    )
    assert tried.message.startswith("Not yet: "), f"{tried.where}:\n{tried.message}"
    tried.seed_left_alone()


@pytest.mark.parametrize(("module", "name", "i", "entry"), _entries("CRASHES"))
def test_a_crash_is_reported_in_words(module, name, i, entry):
    answer, *texts = entry
    tried = Tried(module, name, i, answer, "CRASHES")
    assert not tried.verdict and tried.verdict.status == "error", (
        f"{tried.where} should be an error:\n{tried.message}"
    )
    assert tried.message.startswith("Error: "), f"{tried.where}:\n{tried.message}"
    assert "Traceback" not in tried.message, f"{tried.where}:\n{tried.message}"
    for text in texts:
        assert text in tried.message, f"{tried.where} should say {text!r}:\n{tried.message}"
    tried.seed_left_alone()


def _returns_nothing(*args):
    return None


@pytest.mark.parametrize(
    ("module", "name", "i", "answer"), [p for p in _entries("NOT_YET") if p.values[3] is stub]
)
def test_a_function_that_returns_nothing_is_refused(module, name, i, answer):
    """Every check of a function (the ones whose stub is ``stub``) refuses one that returns None."""
    tried = Tried(module, name, i, _returns_nothing, "NOT_YET")
    assert not tried.verdict and tried.verdict.status in ("fail", "error"), f"{tried.where}:\n{tried.message}"
    assert tried.message.startswith(f"{WORDS[tried.verdict.status]}: "), f"{tried.where}:\n{tried.message}"
    tried.seed_left_alone()


# ----------------------------------------------------------------------------- the wrong-answer catalogue


def _said(module: str, name: str, kind: str, i: int, entry: Any) -> Tried:
    """The entry tried (once per session: the tests above already tried most)."""
    if (module, name, kind, i) not in TRIED:
        Tried(module, name, i, entry if kind in ("RIGHT", "NOT_YET") else entry[0], kind)
    return TRIED[(module, name, kind, i)]


def _asserted(kind: str, entry: Any) -> list[str]:
    """The texts a table entry asserts its verdict names: a WRONG entry's hint, a TOLD or CRASHES
    entry's texts."""
    if kind == "WRONG":
        return [entry[1]]
    if kind == "TOLD":
        return list(entry[2:])
    if kind == "CRASHES":
        return list(entry[1:])
    return []


def _hint_sources(module: str) -> set[str]:
    """The hints a check module writes into a message itself, not through a Mistake, a Symptom or
    check_answer: the text after ``hint: `` in each of its string constants (up to a ``{}`` field)."""
    tree = ast.parse((ROOT / "attnlib" / "check" / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "hint: " in node.value:
            text = node.value.split("hint: ", 1)[1].strip()
            if len(text) >= 15:
                found.add(text)
    return found


def catalogue(module: str) -> dict[str, dict[str, list[str]]]:
    """For every check of ``module``: each hint it can give, and the table entries (``"WRONG #2"``)
    that are refused with that hint, asserting it. A hint with no entry is dead."""
    table = TABLES[module]
    out: dict[str, dict[str, list[str]]] = {}
    written = _hint_sources(module)
    for name in importlib.import_module(f"attnlib.check.{module}").__all__:
        tried = [
            (kind, i, _said(module, name, kind, i, entry), _asserted(kind, entry))
            for kind in KINDS
            for i, entry in enumerate(getattr(table, kind, {}).get(name, []))
        ]
        hints = set().union(*(t.hints for _, _, t, _ in tried))
        hints |= {w for w in written if any(w in t.message for _, _, t, _ in tried)}
        out[name] = {
            hint: [
                f"{kind} #{i}"
                for kind, i, t, texts in tried
                if hint in t.message and any(text in hint or hint in text for text in texts)
            ]
            for hint in sorted(hints)
        }
    # A hint the module writes itself that no entry's message shows at all: dead too.
    shown = [t.message for (m, *_), t in TRIED.items() if m == module]
    unseen = sorted(w for w in written if not any(w in message for message in shown))
    if unseen:
        out["(hints written in the module that no entry gets)"] = {hint: [] for hint in unseen}
    return out


@pytest.mark.parametrize("module", sorted(TABLES))
def test_every_hint_is_triggered_by_a_wrong_answer(module):
    """Each hint a check can give is asserted by at least one wrong answer of its table (else it is
    dead: no test shows that it is ever given, or given for the right mistake), and every check
    that can refuse an answer has at least two wrong answers."""
    found = catalogue(module)
    dead = {name: [h for h, who in hints.items() if not who] for name, hints in found.items()}
    dead = {name: hints for name, hints in dead.items() if hints}
    assert not dead, f"{_notebook(module)}: hints no wrong answer in answers/{module}.py triggers: {dead}"
    table = TABLES[module]
    few = [n for n in found if len(table.WRONG.get(n, [])) + len(getattr(table, "TOLD", {}).get(n, [])) < 2]
    assert not few, f"{_notebook(module)}: fewer than two wrong answers for check.{', check.'.join(few)}"
