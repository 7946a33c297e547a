"""The machinery shared by every exercise check: one exception-to-verdict path, one dtype rule,
one dropout probe, one engine for the "build an nn.Module" exercises, and the package's layout."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import attnlib
from attnlib import check
from attnlib.check import _core, _modules
from tests import ROOT

# ----------------------------------------------------------------------------- exception -> verdict


def _raise(exc: BaseException):
    raise exc


def test_not_implemented_is_todo_and_names_each_raise_when_there_are_several():
    one = _core.raised("Ex", NotImplementedError(), ": code")
    several = _core.raised("Ex", NotImplementedError(), ": code", each=True)
    assert one.status == several.status == "todo" and not one and not several
    assert "replace `raise NotImplementedError`" in one.message
    assert "replace each `raise NotImplementedError`" in several.message


def test_an_exception_names_its_type_message_and_the_students_line():
    try:
        torch.zeros(2) @ torch.zeros(3)  # the student's line
    except RuntimeError as exc:
        verdict = _core.raised("Ex", exc, ", case 1/2 (x): your code")
    assert verdict.status == "error" and not verdict
    assert verdict.message.startswith("Error: Ex, case 1/2 (x): your code raised RuntimeError: ")
    assert "torch.zeros(2) @ torch.zeros(3)" in verdict.message and "Traceback" not in verdict.message


def test_the_super_init_hint_comes_only_with_its_error():
    class Early(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)  # before super().__init__()

    try:
        Early()
    except AttributeError as exc:
        with_hint = _core.raised("Ex", exc, ": `Early()`", super_hint="call super().__init__() first")
    other = _core.raised("Ex", ValueError("bad"), ": `Early()`", super_hint="call super().__init__() first")
    assert with_hint.message.endswith("\n   hint: call super().__init__() first")
    assert "hint" not in other.message


def test_run_check_reports_a_crash_through_the_shared_path():
    verdict = check.run_check("Ex", lambda x: _raise(KeyError("k")), lambda x: x, [check.Case("c", (1,))])
    assert verdict.status == "error" and "Ex, case 1/1 (c): your code raised KeyError" in verdict.message
    todo = check.run_check(
        "Ex", lambda x: _raise(NotImplementedError()), lambda x: x, [check.Case("c", (1,))]
    )
    assert todo.status == "todo" and todo.message.startswith("Not yet: Ex: replace")


# ----------------------------------------------------------------------------- the dtype rule


def test_a_mask_must_come_back_bool_and_numbers_get_the_one_hint():
    reference = attnlib.causal_mask
    mistakes = [_core.as_numbers(reference, "add `.bool()`")]
    for wrong in (lambda t: reference(t).float(), lambda t: reference(t).long()):
        verdict = check.run_check("Ex", wrong, reference, [check.Case("T=3", (3,))], mistakes)
        assert not verdict and "not 0/1 numbers: add `.bool()`" in verdict.message, verdict.message
    assert _core.dtype_kind(torch.zeros(1, dtype=torch.bool)) == "bool"
    assert _core.dtype_kind(torch.zeros(1, dtype=torch.long)) == "integer"
    assert _core.dtype_kind(torch.zeros(1)) == "floating"


def test_token_ids_must_be_integers_even_when_the_values_are_right():
    case = check.Case("ids", (2,))
    passed = check.run_check("Ex", lambda n: torch.ones(n), lambda n: torch.ones(n, dtype=torch.long), [case])
    assert passed  # same() compares values ...
    verdict = _core.require_integer_ids(passed, "Ex", lambda n: torch.ones(n), case)
    assert not verdict and "the dtype is torch.float32" in verdict.message  # ... the dtype rule does not
    assert _core.require_integer_ids(passed, "Ex", lambda n: torch.ones(n, dtype=torch.long), case)


# ----------------------------------------------------------------------------- predictions in parts


def test_combined_passes_only_when_every_part_passes_and_lists_the_failing_ones():
    right = check.check_answer("a", 1, 1)
    wrong = check.check_answer("b", 2, 3, "think again")
    assert _core.combined("Ex", [right, right], "right.").message == "Passed: Ex: right."
    verdict = _core.combined("Ex", [right, wrong], "right.", "   (a note)")
    assert not verdict and verdict.message.splitlines()[0] == "Wrong: Ex:"
    assert "   Wrong: b: you predicted 2" in verdict.message and verdict.message.endswith("(a note)")
    assert "a:" not in verdict.message
    assert (
        _core.whole_number(12.0) == 12
        and _core.whole_number(True) is None
        and _core.whole_number(1.5) is None
    )


def test_run_check_parts_reports_the_first_failing_result_with_its_own_hints():
    reference = lambda x: (x, 2 * x)  # noqa: E731
    cases = [check.Case("x=1", (torch.tensor(1.0),))]
    second = {0: [], 1: [check.Mistake("double it", lambda x: x)]}
    assert _core.run_check_parts("Ex", reference, reference, cases, second, 2)
    verdict = _core.run_check_parts("Ex", lambda x: (x, x), reference, cases, second, 2)
    assert not verdict and "hint: double it" in verdict.message


# ----------------------------------------------------------------------------- the module framework


class WithDropout(nn.Module):
    def __init__(self, p: float = 0.5, functional: bool = False):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.dropout = nn.Dropout(p)
        self.functional, self.p = functional, p

    def forward(self, x):
        h = self.linear(x)
        return nn.functional.dropout(h, self.p) if self.functional else self.dropout(h)


def test_the_dropout_probe_tells_dropout_left_on_in_eval_mode():
    x = torch.ones(3, 4)
    assert _modules.dropout_still_on(WithDropout(functional=True), x)  # F.dropout without training=
    assert not _modules.dropout_still_on(WithDropout(), x)  # nn.Dropout switches off with eval()
    assert _modules.outputs_differ(WithDropout(), x, training=True)
    assert not _modules.outputs_differ(WithDropout(p=0.0), x, training=True)


def test_the_dropout_probe_restores_the_modes_and_the_global_seed():
    module = WithDropout()
    module.train()
    module.linear.eval()  # a mixed state must come back as it was
    torch.manual_seed(3)
    expected = torch.rand(1)
    torch.manual_seed(3)
    _modules.dropout_still_on(module, torch.ones(2, 4))
    assert torch.equal(torch.rand(1), expected)
    assert module.training and not module.linear.training and module.dropout.training


def test_the_dropout_probe_says_no_when_the_module_crashes():
    class Crashes(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    assert not _modules.dropout_still_on(Crashes(), torch.ones(1))
    with pytest.raises(RuntimeError):
        _modules.outputs_differ(Crashes(), torch.ones(1), training=True)


def test_the_dropout_probe_takes_a_nan_in_the_same_place_for_no_difference():
    class Nan(nn.Module):
        def forward(self, x):
            return x.masked_fill(x > 0, float("nan"))  # e.g. a query row with every key masked

    assert not _modules.dropout_still_on(Nan(), torch.tensor([1.0, -1.0]))


class MyScale(nn.Module):
    """The toy exercise of the engine's tests: ``weight * x``, one parameter of width ``dim``."""

    def __init__(self, dim, p=0.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.weight * x)


def _toy_spec(**changes):
    gen = torch.Generator().manual_seed(0)
    weights = {"weight": torch.randn(3, generator=gen)}
    fields = {
        "title": "Ex",
        "check": "toy",
        "example": "MyScale",
        "init": "(dim, p=0.0)",
        "forward": "x",
        "cases": [
            _core.Case("dim=3", ((3,), torch.randn(2, 3, generator=gen))),
            _core.Case("dropout in eval mode", ((3, 0.5), torch.randn(2, 3, generator=gen))),
        ],
        "reference": lambda config, x: weights["weight"] * x,
        "unfit": lambda module, config: _modules.parameters_problem(
            {"dim": config[0]},
            module,
            {"weight": (3,)},
            "differ",
            "one parameter, weight",
        ),
        "fit": lambda module, config, x: _modules.load_by_name(module, weights),
        "mistakes": [_core.Mistake("the weight twice", lambda config, x: 2 * weights["weight"] * x)],
        "eval_probe": 1,
        "train_probe": _core.Case("p=0.5", ((3, 0.5), torch.ones(4, 3))),
        "no_dropout": "drop",
    }
    return _modules.ModuleExercise(**{**fields, **changes})


def test_the_engine_passes_a_right_module_and_probes_dropout_in_both_modes():
    state = torch.random.get_rng_state()
    verdict = _modules.check_module(_toy_spec(), MyScale)
    assert verdict and verdict.message == "Passed: Ex: all 2 cases pass, and dropout acts in train mode."
    assert torch.equal(state, torch.random.get_rng_state())  # built and called under seeds of its own

    class NoDropout(MyScale):
        def forward(self, x):
            return self.weight * x

    verdict = _modules.check_module(_toy_spec(), NoDropout)
    assert not verdict and "in train mode with p=0.5 two calls" in verdict.message
    assert verdict.message.endswith("hint: drop")

    class AlwaysDrops(MyScale):
        def forward(self, x):
            return nn.functional.dropout(self.weight * x, self.dropout.p)

    verdict = _modules.check_module(_toy_spec(), AlwaysDrops)
    assert not verdict and "dropout is still active" in verdict.message


def test_the_engine_gives_a_slip_its_hint_and_names_unfit_parameters():
    class Twice(MyScale):
        def forward(self, x):
            return 2 * self.weight * x

    verdict = _modules.check_module(_toy_spec(), Twice)
    assert (
        not verdict and "case 1/2 (dim=3)" in verdict.message and "hint: the weight twice" in verdict.message
    )

    class Renamed(nn.Module):
        def __init__(self, dim, p=0.0):
            super().__init__()
            self.w = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return self.w * x

    verdict = _modules.check_module(_toy_spec(), Renamed)
    assert verdict.message == (
        "Wrong: Ex: with (dim=3) your module's parameters differ.\n   expected: weight (3,)\n"
        "   yours:    w (3,)\n   hint: one parameter, weight"
    )


def test_the_engine_explains_what_is_not_a_module_class_in_words():
    class NotAModule:
        def __init__(self, dim, p=0.0):
            pass

    class OtherArguments(MyScale):
        def __init__(self, width, height):
            super().__init__(width)

    class NoSuper(MyScale):
        def __init__(self, dim, p=0.0):
            self.weight = nn.Parameter(torch.ones(dim))

    class NoForward(nn.Module):
        def __init__(self, dim, p=0.0):
            super().__init__()

    class ForwardTakesNothing(MyScale):
        def forward(self):
            return self.weight

    for given, expected in [
        (MyScale(3), "pass the class itself, not a module built from it: check.toy(MyScale), without"),
        (42, "expected a class (class MyScale(nn.Module): ...), got int 42."),
        (len, "expected a class (class MyScale(nn.Module): ...), got the builtin_function_or_method len."),
        (NotAModule, "NotAModule is not an nn.Module: define it as class NotAModule(nn.Module): ..."),
        (nn.Module, "Module needs its own __init__(dim, p=0.0)."),
        (OtherArguments, "takes `(width, height)`; it must take `__init__(self, dim, p=0.0)`."),
        (NoForward, "NoForward needs a forward(self, x) method."),
        (ForwardTakesNothing, "the check calls module(x); your forward is forward(self)."),
    ]:
        verdict = _modules.check_module(_toy_spec(), given)
        assert not verdict and verdict.status == "fail" and expected in verdict.message, verdict.message
    verdict = _modules.check_module(_toy_spec(), NoSuper)
    assert verdict.status == "error" and "`NoSuper(3)` raised AttributeError" in verdict.message
    assert "hint: call `super().__init__()` first" in verdict.message


def test_the_engine_adds_an_error_hint_and_passes_dict_configs_by_keyword():
    class Crashes(MyScale):
        def forward(self, x):
            return self.weight @ x.T[:2]

    verdict = _modules.check_module(_toy_spec(error_hints={"dim=3": "look at the shapes"}), Crashes)
    assert verdict.status == "error" and verdict.message.endswith("\n   hint: look at the shapes")
    keywords = [_core.Case("dim=3", ({"dim": 3}, torch.ones(1, 3)))]
    spec = _toy_spec(cases=keywords, eval_probe=None, train_probe=None, unfit=lambda m, c: None)
    assert _modules.check_module(spec, MyScale)

    class Positional(MyScale):
        def __init__(self, size, p=0.0):
            super().__init__(size, p)

    verdict = _modules.check_module(spec, Positional)
    assert "the check builds Positional(dim, p=0.0), passing each argument by that name" in verdict.message


def test_the_module_exercises_run_on_the_engine():
    verdict = check.multihead_module(attnlib.MultiHeadAttention)  # the library's own answer: out of reach
    assert not verdict and "MultiHeadAttention is attnlib's own `MultiHeadAttention`" in verdict.message
    for exercise in ("additive_module", "pre_ln_encoder", "decoder_layer", "multihead_module"):
        verdict = getattr(check, exercise)(nn.Linear(2, 2))
        assert not verdict and f"check.{exercise}(Linear), without parentheses" in verdict.message


# ----------------------------------------------------------------------------- the package's layout

FOLDER = Path(check.__file__).parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _called_checks(notebook: Path) -> set[str]:
    """The names of ``check.<name>(...)`` in the notebook's code cells."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return set(re.findall(r"\bcheck\.(\w+)\(", code))


def test_check_holds_one_module_per_notebook_and_the_shared_core():
    assert [m.__name__.rsplit(".", 1)[1] for m in check._NOTEBOOKS] == [p.stem[3:] for p in NOTEBOOKS]
    assert {p.stem for p in FOLDER.glob("*.py")} == {
        "__init__",
        "_core",
        "_modules",
        "_reach",
        *(p.stem[3:] for p in NOTEBOOKS),
    }
    for old in ("attention", "heads", "sequences", "seq2seq", "efficient", "vit"):  # 0.1's topic modules
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"attnlib.check.{old}")


def test_each_notebooks_checks_are_its_modules_all_and_the_package_exports_them():
    """What a notebook calls is what its module exports, no more, no less: no count to keep up to date."""
    exported = set()
    for module, notebook in zip(check._NOTEBOOKS, NOTEBOOKS, strict=True):
        assert set(module.__all__) == _called_checks(notebook), notebook.name
        assert all(callable(getattr(module, name)) for name in module.__all__)
        exported |= set(module.__all__)
    core = {"Case", "Mistake", "Verdict", "check_answer", "run_check"}
    assert len(check.__all__) == len(set(check.__all__)) and set(check.__all__) == exported | core
    assert all(getattr(check, name) is getattr(_core, name) for name in core)


def test_importing_check_warns_nothing():
    code = "import warnings\nwarnings.simplefilter('error')\nfrom attnlib import check\ncheck.softmax\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_check_module_has_all_a_notebook_in_its_docstring_and_no_private_core_import():
    for path in FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if hasattr(t, "id")
        }
        assert "__all__" in names, path.name
        docstring = ast.get_docstring(tree) or ""
        assert re.search(r"notebooks? \d\d", docstring), path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in ("_core", "_modules"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, (path.name, private)
        text = path.read_text(encoding="utf-8")
        assert "matplotlib" not in text and "ipywidgets" not in text, path
        for old in ("..efficient import", "..cache import", ".._checks import", "_deprecated"):
            assert old not in text, (path, old)


def test_a_tuple_of_tensors_is_explained_by_shapes_and_first_difference():
    """A wrong result among several is named, with its first differing element, never a cut repr."""
    x = torch.arange(12.0).view(3, 4)
    verdict = _core.run_check(
        "T", lambda a: (a * 2, a + 1.5), lambda a: (a * 2, a + 1), [_core.Case("x", (x,))]
    )
    assert "result 2 of 2: first difference at index (0, 0): expected 1.0000, got 1.5000" in verdict.message
    verdict = _core.run_check("T", lambda a: a * 2, lambda a: (a * 2, a + 1), [_core.Case("x", (x,))])
    assert "expected a tuple of 2 results, got tensor of shape (3, 4)" in verdict.message
    verdict = _core.run_check("T", lambda a: (a, a, a), lambda a: (a * 2, a + 1), [_core.Case("x", (x,))])
    assert "expected a tuple of 2 results, got 3" in verdict.message
    assert "tensor(" not in verdict.message


def test_a_prediction_of_the_wrong_type_is_told_what_type_is_wanted():
    assert "expected a number" in _core.check_answer("P", "three", 3).message
    assert "expected a shape: a tuple of 2 whole numbers" in _core.check_answer("P", "2x3", (2, 3)).message
    assert "expected True or False" in _core.check_answer("P", "yes", True).message
    assert _core.check_answer("P", torch.Size([2, 3]), (2, 3)) and _core.check_answer("P", 3, 3.0)
    long_text = _core.check_answer("P", "word " * 60, 3).message
    assert len(long_text) < 250 and long_text.endswith(" ....")


# ----------------------------------------------------------------------------- how a verdict reads


def test_every_kind_of_verdict_starts_with_its_word_and_its_html_says_it_without_colour():
    kinds = {
        "pass": check.check_answer("Ex <1>", 1, 1),
        "todo": check.check_answer("Ex <1>", ..., 1),
        "fail": check.check_answer("Ex <1>", 2, 1),
        "error": _core.raised("Ex <1>", KeyError("k"), ": your code"),
    }
    words = {"pass": "Passed", "todo": "Not yet", "fail": "Wrong", "error": "Error"}
    names = {
        "pass": "Check passed",
        "todo": "Check not done yet",
        "fail": "Check failed, wrong answer",
        "error": "Check failed, your code raised an error",
    }
    borders = set()
    for status, verdict in kinds.items():
        assert verdict.status == status
        assert repr(verdict) == verdict.message  # text/plain, what nbval compares: plain text
        assert verdict.message.startswith(f"{words[status]}: Ex <1>"), verdict.message
        html = verdict._repr_html_()
        assert html.startswith('<div role="status" ')
        assert f'aria-label="{names[status]}: Ex &lt;1&gt;' in html  # escaped, like everything
        assert f"<strong>{words[status]}:</strong> Ex &lt;1&gt;" in html  # the word, then the message
        assert "<1>" not in html and "Ex &lt;1&gt;" in html
        border = re.search(r"border-left: ([^;]+);", html)
        assert border, html
        borders.add(border.group(1))
    assert len(borders) == 4, "each status has its own border (colour, and style or width)"
    assert not hasattr(check.Verdict, "_repr_markdown_"), "one rich form: the HTML"


def test_declared_hints_gathers_every_hint_a_check_can_give_only_inside():
    mistakes = [_core.Mistake("add one", lambda x: x + 1), _core.Symptom("negative", lambda got, exp: False)]
    right = _core.Case("0, 1, 2", (torch.arange(3.0),))
    _core.declare_hints(["outside"])  # nothing gathers it, and nothing breaks
    with _core.declared_hints() as hints:
        verdict = _core.run_check("t", lambda x: x * 2, lambda x: x * 2, [right], mistakes)
        _core.check_answer("p", 3, 3, hint="count the rows")
    assert verdict and hints == {"add one", "negative", "count the rows"}  # declared, though none was shown
    with _core.declared_hints() as hints:
        verdict = _core.run_check("t", lambda x: x + 1, lambda x: x * 2, [right], mistakes)
    assert not verdict and "hint: add one" in verdict.message and hints == {"add one", "negative"}
