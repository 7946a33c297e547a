"""The machinery shared by every exercise check: one exception-to-verdict path, one dtype rule,
one dropout probe, one framework for the "build an nn.Module" exercises, and the old paths."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import pytest
import torch
from torch import nn

import attnlib
from attnlib import check
from attnlib.check import _core, _modules

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


def test_class_problem_accepts_only_a_module_class():
    kw = {"instance": "pass the class", "not_a_module": lambda obj: f"not a module: {obj!r}"}
    assert _modules.class_problem("Ex", WithDropout, **kw) is None
    assert "pass the class" in _modules.class_problem("Ex", WithDropout(), **kw).message
    assert "not a module: 3" in _modules.class_problem("Ex", 3, **kw).message
    assert "not a module: <class 'int'>" in _modules.class_problem("Ex", int, **kw).message


def test_build_is_seeded_and_turns_a_constructor_error_into_a_verdict():
    a = _modules.build("Ex", nn.Linear, ": `Linear(3, 2)`", 3, 2, seed=5)
    b = _modules.build("Ex", nn.Linear, ": `Linear(3, 2)`", 3, 2, seed=5)
    assert torch.equal(a.weight, b.weight)
    verdict = _modules.build("Ex", nn.Linear, ": `Linear(-1, 2)`", -1, 2, seed=5)
    assert isinstance(verdict, check.Verdict) and verdict.status == "error"
    assert verdict.message.startswith("Error: Ex: `Linear(-1, 2)` raised RuntimeError")


def test_both_module_exercises_run_on_the_framework():
    assert check.multihead_module(attnlib.MultiHeadAttention)

    class Instance(attnlib.EncoderLayer):
        pass

    verdict = check.encoder_layer(Instance(8, 2, 16, 0.1))
    assert not verdict and "pass the class itself" in verdict.message


# ----------------------------------------------------------------------------- old paths


OLD_MODULES = {
    "attention": ["softmax", "cross_attention", "TOKENS"],
    "heads": ["multihead_module", "MHA_CONFIG"],
    "sequences": ["gru_cell", "TwoSteps"],
    "seq2seq": ["pad_batch", "additive_scores", "luong_step", "SCORER_HIDDEN"],
    "efficient": ["longformer_mask"],
    "vit": ["sincos_2d", "SHAPE_CONFIG"],
}


@pytest.mark.parametrize("old", sorted(OLD_MODULES))
def test_an_old_topic_module_warns_and_finds_every_name(old):
    sys.modules.pop(f"attnlib.check.{old}", None)
    check.__dict__.pop(old, None)  # a submodule imported earlier is an attribute of the package
    with pytest.warns(DeprecationWarning, match=f"attnlib.check.{old} moved to"):
        module = getattr(check, old)
    for name in OLD_MODULES[old]:
        assert getattr(module, name) is not None


def test_notebook_10_names_still_resolve_from_check_transformer_with_a_warning():
    from attnlib.check import transformer, transformer_blocks

    for name in ("halves_encoding", "encoder_layer", "LAYER_ARGS"):
        with pytest.warns(DeprecationWarning, match="moved to attnlib.check.transformer_blocks"):
            assert getattr(transformer, name) is getattr(transformer_blocks, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert transformer.beam_step is check.beam_step  # notebook 11's own names do not warn


def test_every_check_name_works_and_importing_check_warns_nothing():
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from attnlib import check\n"
        "assert all(callable(getattr(check, n)) for n in check.__all__)\n"
        "check.sliding_window_mask\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert len(check.__all__) == len(set(check.__all__)) == 61


def test_no_check_module_imports_plotting_or_a_deprecated_core_path():
    from pathlib import Path

    folder = Path(check.__file__).parent
    aliases = {"attention.py", "heads.py", "sequences.py", "seq2seq.py", "efficient.py", "vit.py"}
    for path in folder.glob("*.py"):
        text = path.read_text()
        assert "matplotlib" not in text and "ipywidgets" not in text, path
        if path.name not in aliases:
            for old in ("..efficient import", "..cache import", ".._checks import", "..gpt import"):
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
