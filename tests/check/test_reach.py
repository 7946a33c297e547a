"""What a check puts out of reach while it runs the student's code (attnlib/check/_reach.py).

Every check's declarations are tried by the harness on the ``OUT_OF_REACH`` entries of the answer
tables; here, the mechanism itself: each kind of name is replaced, then put back, also when the
student's code raises or catches the stand-in's error.
"""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import adam

import attnlib
from attnlib import check
from attnlib.check import _core
from attnlib.check._reach import OutOfReachError, banned_class, out_of_reach, own, torch_api
from attnlib.sampling import top_p_logits as imported_top_p  # a student's import, under another name

#: Classes whose methods a check replaces, beside attnlib's own.
TORCH_OWNERS = (torch.Tensor, nn.GRUCell, nn.GRU, torch.optim.Adam, nn.functional, torch, torch.special, adam)


def bindings() -> dict[tuple[str, str], int]:
    """Which object every name a check may replace is bound to: in attnlib's modules and their
    classes, in torch's modules and classes that checks declare, and in this module."""
    owners = {
        m.__name__: m for n, m in list(sys.modules.items()) if n == "attnlib" or n.startswith("attnlib.")
    }
    for module in list(owners.values()):
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__.startswith("attnlib"):
                owners[f"{value.__module__}.{value.__qualname__}"] = value
    owners |= {getattr(o, "__qualname__", getattr(o, "__name__", "")): o for o in TORCH_OWNERS}
    owners[__name__] = sys.modules[__name__]
    return {
        (label, name): id(value) for label, owner in owners.items() for name, value in vars(owner).items()
    }


SOFTMAX = torch_api("torch.softmax", (torch, "softmax"), (torch.Tensor, "softmax"), (F, "softmax"))
TOP_P = own(attnlib.top_p_logits)


def _reached(forbidden, student, *args):
    with pytest.raises(OutOfReachError) as caught, out_of_reach(forbidden, student):
        student(*args)
    return str(caught.value)


def test_every_name_of_a_function_is_out_of_reach_and_put_back():
    before = bindings()
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    for student in (
        lambda x: attnlib.top_p_logits(x, 0.5),  # the package's name
        lambda x: attnlib.sampling.top_p_logits(x, 0.5),  # the module's
        lambda x: imported_top_p(x, 0.5),  # the student's own name for it
        lambda x: attnlib.next_token_probs(x, top_p=0.5),  # another attnlib function that calls it
    ):
        assert _reached([TOP_P], student, logits).startswith("calls attnlib's own `top_p_logits`")
        assert bindings() == before
    assert attnlib.top_p_logits is attnlib.sampling.top_p_logits is imported_top_p


def test_a_torch_function_is_out_of_reach_by_every_path_the_text_means():
    before = bindings()
    x = torch.randn(2, 3)
    for student in (
        lambda s: torch.softmax(s, -1),
        lambda s: s.softmax(-1),
        lambda s: F.softmax(s, -1),
        lambda s: nn.Softmax(dim=-1)(s),
    ):
        assert _reached([SOFTMAX], student, x).startswith("calls `torch.softmax` (directly or through")
    assert bindings() == before
    assert "softmax" not in vars(torch.Tensor)  # inherited again, not shadowed by a leftover
    torch.testing.assert_close(x.softmax(-1), torch.softmax(x, -1))


def test_allowed_torch_ops_still_work_inside():
    x = torch.randn(2, 3)
    with out_of_reach([SOFTMAX], None):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        weights = e / e.sum(dim=-1, keepdim=True)
        logp = torch.log_softmax(x, dim=-1)  # not declared, so in reach
    torch.testing.assert_close(weights, torch.softmax(x, -1))
    torch.testing.assert_close(logp, weights.log())


def test_names_are_put_back_when_the_students_code_raises():
    before = bindings()

    def raises_after(scores):
        torch.softmax(scores, -1) if False else None
        raise ValueError("a bug of the student's")

    with pytest.raises(ValueError, match="a bug"), out_of_reach([SOFTMAX, TOP_P], raises_after):
        raises_after(torch.zeros(2))
    assert bindings() == before

    def catches_and_raises(scores):
        try:
            return torch.softmax(scores, -1)
        except Exception:
            raise KeyError("something else") from None

    message = _reached([SOFTMAX], catches_and_raises, torch.zeros(2))  # the stand-in's error wins
    assert "calls `torch.softmax`" in message and bindings() == before


def test_a_caught_stand_in_error_still_fails_the_check():
    def falls_back(scores):
        try:
            return attnlib.masked_softmax(scores)
        except Exception:
            e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            return e / e.sum(dim=-1, keepdim=True)

    verdict = check.softmax(falls_back)
    assert not verdict and verdict.status == "fail"
    assert "calls attnlib's own `masked_softmax`; write it yourself." in verdict.message


def test_handing_back_the_function_itself_is_named():
    verdict = check.top_p_probs(attnlib.top_p_logits)
    assert not verdict and "your code hands back attnlib's own `top_p_logits`" in verdict.message
    verdict = check.masked_softmax_safe(attnlib.functional.masked_softmax)
    assert not verdict and "hands back attnlib's own `masked_softmax`" in verdict.message


def test_the_reference_runs_outside_and_a_check_passes_after_one_that_was_refused():
    assert not check.top_p_probs(lambda x, p, t: torch.softmax(attnlib.top_p_logits(x / t, p), dim=-1))

    def mine(logits, p, temperature):
        probs = torch.softmax(logits / temperature, dim=-1)
        ranked = probs.sort(dim=-1, descending=True).values
        last = ranked.masked_fill(ranked.cumsum(dim=-1) - ranked >= p, float("inf")).amin(-1, keepdim=True)
        kept = probs * (probs >= last)
        return kept / kept.sum(dim=-1, keepdim=True)

    assert check.top_p_probs(mine)


def test_run_check_without_declarations_touches_nothing():
    before = bindings()
    verdict = _core.run_check(
        "T", lambda x: torch.softmax(x, -1), lambda x: x.softmax(-1), [_core.Case("x", (torch.ones(3),))]
    )
    assert verdict and bindings() == before


def test_a_class_out_of_reach_cannot_be_derived_from_held_or_called():
    mha = own(attnlib.MultiHeadAttention)

    class Derived(attnlib.MultiHeadAttention):
        pass

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = attnlib.MultiHeadAttention(4, 4, 8, 0.0, 2)

    assert banned_class([mha], attnlib.MultiHeadAttention).startswith("is attnlib's own `MultiHeadAttention`")
    assert banned_class([mha], Derived).startswith("derives from attnlib's own `MultiHeadAttention`")
    assert banned_class([mha], Holder, Holder()).startswith("holds attnlib's own `MultiHeadAttention`")
    assert banned_class([mha], nn.Linear, nn.Linear(2, 2)) is None
    before = bindings()
    assert _reached([mha], Holder).startswith("calls attnlib's own `MultiHeadAttention`")  # built inside
    built = attnlib.MultiHeadAttention(4, 4, 8, 0.0, 2)  # built before, called inside
    assert _reached([mha], lambda x: built(x), torch.zeros(1, 3, 4)).startswith("calls attnlib's own")
    assert bindings() == before
    assert built(torch.zeros(1, 3, 4)).shape == (1, 3, 4)


def test_a_torch_class_out_of_reach():
    gru = torch_api("nn.GRUCell", (nn.GRUCell, "__init__"), (nn.GRUCell, "forward"))
    cell = nn.GRUCell(3, 2)
    before = bindings()
    assert _reached([gru], lambda: nn.GRUCell(3, 2)).startswith("calls `nn.GRUCell`")
    assert _reached([gru], lambda: cell(torch.zeros(1, 3))).startswith("calls `nn.GRUCell`")
    assert bindings() == before and cell(torch.zeros(1, 3)).shape == (1, 2)


def test_the_first_item_to_claim_a_name_keeps_it(monkeypatch):
    """A name that an earlier item reaches through its alias and a later item declares as a place
    gets the earlier item's stand-in, so the verdict names what the check declared first."""
    import types

    def f():
        return 1

    module = types.ModuleType("attnlib._claimed_twice")
    module.a = f  # f under another name in an attnlib module
    monkeypatch.setitem(sys.modules, module.__name__, module)
    first, second = own(f, what="f"), torch_api("a", (module, "a"))
    said = _reached([first, second], lambda: module.a())
    assert said.startswith("calls attnlib's own `f`"), said
    said = _reached([second, first], lambda: module.a())
    assert said.startswith("calls `a`"), said
    assert module.a is f
