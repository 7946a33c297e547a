"""The engine of the "build an nn.Module" exercises, for notebooks 05 (5.5, a multi-head attention
module), 08 (8.2, Bahdanau's alignment model) and 10 (10.4, a pre-LN encoder stack with its final
norm; 10.6, a decoder layer); the rest of the machinery is in :mod:`attnlib.check._core`.

Such an exercise hands in a class, not a function. It declares only its :class:`ModuleExercise`:
the constructor and ``forward`` it asks for, its cases, its reference, how attnlib's weights fit
into the student's module, and its typical slips. :func:`check_module` takes every step, each one
written here once:

1. Pre-flight: a class derived from ``nn.Module`` (not a module built from it) whose own
   ``__init__`` takes the check's arguments; built for every configuration of the cases under a
   fixed seed inside :func:`seeded` (the student's global seed never moves), an exception turned
   into a verdict by :func:`raised`; a ``forward`` that takes the check's call.
2. Fit: the exercise says what keeps a built module from taking the reference's weights
   (``unfit``, helped by :func:`sublayers`, :func:`parameter_shapes`, :func:`parameters_problem`),
   and how they go in (``fit``): by parameter name (:func:`load_by_name`), or by role whatever the
   student named the sublayers (:func:`sublayers`, :func:`first_calls`, :func:`in_call_order`,
   :func:`received`, :func:`copy_weights`).
3. The dropout probe in eval mode: two calls on the same input must agree.
4. :func:`run_check` (or :func:`run_check_parts` for a forward with several results) on the cases,
   the student's module holding the reference's weights, the typical slips as mistakes.
5. Optionally, the dropout probe in train mode: two calls on the same input must differ.
6. Optionally, where dropout acts in train mode (``dropout_where``): on the attention weights, on
   each sublayer's output, with the 1/(1-p) rescale; each misplaced dropout gets its hint.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import torch
from torch import nn

from ..i18n import N_, shown, tr
from ..modes import evaluating
from ._core import (
    FAIL,
    PASS,
    Case,
    Mistake,
    Symptom,
    Verdict,
    declare_hints,
    describe,
    hint_line,
    raised,
    run_check,
    run_check_parts,
    seeded,
)
from ._reach import Forbidden, banned_class, out_of_reach

__all__ = [
    "ModuleExercise",
    "check_module",
    "copy_weights",
    "dropout_still_on",
    "first_calls",
    "in_call_order",
    "load_by_name",
    "outputs_differ",
    "parameter_shapes",
    "parameters_problem",
    "received",
    "sublayers",
]

#: Every student module is built under BUILD_SEED (its weights are then replaced by the reference's)
#: and called under CALL_SEED, so that a module that draws gives the same draws at every run.
BUILD_SEED, CALL_SEED = 0, 7
SUPER_HINT = N_("call `super().__init__()` first in your `__init__`, before creating any sublayer")
DROPOUT_STILL_ON_HINT = N_(
    "use nn.Dropout modules (they switch off with .eval()); `F.dropout(h, p)` drops in eval "
    "mode too unless you pass `training=self.training`"
)
DROPOUT_STILL_ON = (
    "in eval mode your module gives a different output at every call: dropout is still active.\n"
    f"   hint: {DROPOUT_STILL_ON_HINT}"
)


@dataclass(frozen=True)
class ModuleExercise:
    """What one "build an nn.Module" exercise declares; :func:`check_module` does the rest.

    Each case's ``args`` are ``(config, *inputs)``: the constructor's arguments (a dict: passed by
    keyword; a tuple: by position), then the inputs. The first inputs, as many as ``forward`` names,
    go to the module; any further ones are for ``fit`` and ``reference`` only. A case with
    ``kwargs={"train": True}`` runs the module in train mode (every other case in eval mode).

    Attributes:
        title: the exercise's name, shown in every verdict.
        check: the check's name, ``check.<check>(MyClass)``.
        example: the class name the notebook asks for.
        init: the constructor's parameters, as the exercise asks for them: ``"(dim, n_heads)"``.
        forward: ``forward``'s parameters after ``self``: ``"x, mask=None"``.
        cases: the cases, simplest first.
        reference: ``(config, *inputs) -> expected`` (and ``train=True`` for a case in train mode).
        unfit: ``(module, config) -> str | None``: what keeps a module built from ``config`` from
            taking the reference's weights (the message after the title), or None.
        fit: ``(module, config, *inputs) -> None``: give the module the reference's weights.
        mistakes: the typical slips, each called as the reference; for a forward with several
            results, a mapping from each result's index to its slips (checked in that order).
        rebuilds: the attnlib class whose first constructor arguments ``init`` are, for a check
            that passes them by position: ``"attnlib's EncoderLayer"``.
        eval_probe: the index of a case with dropout on: its module must not drop in eval mode.
        train_probe: a case with dropout on whose module must drop in train mode, if any.
        no_dropout: the hint when it does not.
        error_hints: a hint added to an error in a case whose name holds the key.
        forbidden: what is out of reach while the student's class is built and called (:mod:`._reach`):
            a class it may not derive from or hold, a function it may not call.
        dropout_where: ``(fitted) -> str | None``, run last: where dropout acts in train mode, given
            ``fitted(config, inputs)`` (a module built from ``config`` holding the reference's weights,
            in eval mode); what is wrong (the message after "all N cases pass, but ", with its hint),
            or None.
    """

    title: str
    check: str
    example: str
    init: str
    forward: str
    cases: Sequence[Case]
    reference: Callable[..., Any]
    unfit: Callable[[nn.Module, Any], str | None]
    fit: Callable[..., None]
    mistakes: Sequence[Mistake | Symptom] | Mapping[int, Sequence[Mistake | Symptom]] = ()
    rebuilds: str = ""
    eval_probe: int | None = None
    train_probe: Case | None = None
    no_dropout: str = ""
    error_hints: Mapping[str, str] = field(default_factory=dict)
    forbidden: Sequence[Forbidden] = ()
    dropout_where: Callable[[Callable[[Any, Sequence[Any]], nn.Module]], str | None] | None = None

    @property
    def inputs(self) -> list[str]:
        """The names of ``forward``'s parameters: as many of a case's inputs go to the module."""
        return [p.split("=")[0].strip() for p in self.forward.split(",")]


def check_module(spec: ModuleExercise, student_cls: object) -> Verdict:
    """THE check of a "build an nn.Module" exercise: ``student_cls`` against ``spec``."""
    # (the slips are declared by run_check, which every answer that builds reaches)
    declare_hints([SUPER_HINT, spec.no_dropout if spec.train_probe else "", *spec.error_hints.values()])
    if spec.eval_probe is not None:
        declare_hints([DROPOUT_STILL_ON_HINT])
    problem = _preflight(spec, student_cls)
    if problem is not None:  # (not `problem or ...`: a failing Verdict is falsy)
        return problem
    cls: type = student_cls  # type: ignore[assignment]
    arity = len(spec.inputs)

    def fitted(config: Any, inputs: Sequence[Any]) -> nn.Module:
        with seeded(BUILD_SEED), out_of_reach(spec.forbidden, cls):
            module = _construct(cls, config)
        module.eval()
        with torch.no_grad(), seeded(CALL_SEED):  # fit may run the module (dropout left on draws)
            spec.fit(module, config, *inputs)
        return module

    def student(config: Any, *inputs: Any, train: bool = False) -> Any:
        module = fitted(config, inputs)
        module.train(train)
        with torch.no_grad(), seeded(CALL_SEED), out_of_reach(spec.forbidden, cls):
            return module(*inputs[:arity])

    if spec.eval_probe is not None:
        config, *inputs = spec.cases[spec.eval_probe].call(lambda *args: args)
        try:
            module = fitted(config, inputs)
        except Exception:  # run_check reports the student's error in words
            module = None
        if module is not None and dropout_still_on(module, *inputs[:arity]):
            still_on = tr(
                "{title}: in eval mode your module gives a different output at every call: "
                "dropout is still active."
            )
            message = still_on.format(title=tr(spec.title)) + "\n" + hint_line(DROPOUT_STILL_ON_HINT)
            return Verdict(False, f"{FAIL} " + message)
    with torch.no_grad():
        if isinstance(spec.mistakes, Mapping):
            count = len(spec.mistakes)
            verdict = run_check_parts(spec.title, student, spec.reference, spec.cases, spec.mistakes, count)
        else:
            verdict = run_check(spec.title, student, spec.reference, spec.cases, spec.mistakes)
    if not verdict:
        first_line = verdict.message.split("\n")[0]
        for marker, hint in spec.error_hints.items():
            if verdict.status == "error" and marker in first_line:
                return Verdict(False, f"{verdict.message}\n" + hint_line(hint), "error")
        return verdict
    n = len(spec.cases)
    if spec.train_probe is not None:
        config, *inputs = spec.train_probe.call(lambda *args: args)
        try:  # dropout must act in train mode; which entries it drops is the module's own choice
            differ = outputs_differ(fitted(config, inputs), *inputs[:arity], training=True)
        except Exception as exc:  # the student's bug, reported in words
            who = tr(": in train mode with {case}, your module").format(case=tr(spec.train_probe.name))
            return raised(spec.title, exc, who, each=True, super_hint=SUPER_HINT)
        if not differ:
            same_output = tr(
                "{title}: all {n} cases pass, but in train mode with {case} "
                "two calls on the same input gave the same output."
            ).format(title=tr(spec.title), n=n, case=tr(spec.train_probe.name))
            return Verdict(False, f"{FAIL} " + same_output + "\n" + hint_line(spec.no_dropout))
        acts = tr("{title}: all {n} cases pass, and dropout acts in train mode.")
        verdict = Verdict(True, f"{PASS} " + acts.format(title=tr(spec.title), n=n), "pass")
    if spec.dropout_where is not None:
        try:
            problem = spec.dropout_where(fitted)
        except Exception as exc:  # the student's bug, reported in words
            who = tr(": in train mode, your module")
            return raised(spec.title, exc, who, each=True, super_hint=SUPER_HINT)
        if problem is not None:
            but = tr("{title}: all {n} cases pass, but {problem}")
            return Verdict(False, f"{FAIL} " + but.format(title=tr(spec.title), n=n, problem=tr(problem)))
    return verdict


def _arguments(config: Any) -> tuple[tuple, dict]:
    """A configuration as the constructor's ``(args, kwargs)``: a dict by keyword, a tuple by position."""
    return ((), config) if isinstance(config, dict) else (tuple(config), {})


def _construct(cls: type, config: Any) -> nn.Module:
    args, kwargs = _arguments(config)
    return cls(*args, **kwargs)


def _call(name: str, config: Any) -> str:
    """The constructor call the check makes, as the student would write it."""
    if isinstance(config, dict):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in config.items())})"
    return f"{name}({', '.join(repr(v) for v in config)})"


def _preflight(spec: ModuleExercise, cls: object) -> Verdict | None:
    """What is wrong with ``cls`` before any number is compared, or None when all is well."""
    name = getattr(cls, "__name__", type(cls).__name__)

    def wrong(template: str, **parts: Any) -> Verdict:
        return Verdict(
            False,
            f"{FAIL} "
            + tr("{title}: {text}").format(title=tr(spec.title), text=tr(template).format(**parts)),
        )

    if isinstance(cls, nn.Module):
        return wrong(
            N_(
                "pass the class itself, not a module built from it: check.{check}({name}), "
                "without parentheses after the name."
            ),
            check=spec.check,
            name=name,
        )
    if isinstance(cls, type) and not issubclass(cls, nn.Module):
        return wrong(N_("{name} is not an nn.Module: define it as class {name}(nn.Module): ..."), name=name)
    if not isinstance(cls, type):
        got = (
            tr("the {kind} {name}").format(kind=type(cls).__name__, name=name)
            if callable(cls)
            else describe(cls)
        )
        return wrong(
            N_("expected a class (class {example}(nn.Module): ...), got {got}."),
            example=spec.example,
            got=got,
        )
    problem = banned_class(spec.forbidden, cls)
    if problem is not None:
        return wrong(N_("{name} {problem}"), name=name, problem=problem)
    if cls.__init__ is nn.Module.__init__:
        return wrong(N_("{name} needs its own __init__{init}."), name=name, init=spec.init)
    configs = []
    for case in spec.cases:
        if case.args[0] not in configs:
            configs.append(case.args[0])
    args, kwargs = _arguments(configs[0])
    try:
        inspect.signature(cls).bind(*args, **kwargs)
    except TypeError:
        signature = inspect.signature(cls)
        if isinstance(configs[0], dict):
            return wrong(
                N_(
                    "the check builds {name}{init}, passing each argument by that name; your constructor "
                    "is {name}{signature}."
                ),
                name=name,
                init=spec.init,
                signature=signature,
            )
        if spec.rebuilds:
            template = N_(
                "the check builds `{call}`, but your constructor takes `{signature}`; it "
                "must take the first arguments of {rebuilds}: `__init__(self, {params}`."
            )
        else:
            template = N_(
                "the check builds `{call}`, but your constructor takes `{signature}`; it "
                "must take `__init__(self, {params}`."
            )
        return wrong(
            template,
            call=_call(name, configs[0]),
            signature=signature,
            rebuilds=tr(spec.rebuilds) if spec.rebuilds else "",
            params=spec.init[1:],
        )
    except ValueError:  # no signature to read: the construction itself speaks
        pass
    modules = []
    for config in configs:
        try:
            with seeded(BUILD_SEED), out_of_reach(spec.forbidden, cls):
                modules.append(_construct(cls, config))
        except Exception as exc:  # the student's bug, reported in words
            who = tr(": `{call}`").format(call=_call(name, config))
            return raised(spec.title, exc, who, each=True, super_hint=SUPER_HINT)
    if cls.forward is nn.Module.forward:
        return wrong(N_("{name} needs a forward(self, {forward}) method."), name=name, forward=spec.forward)
    try:
        inspect.signature(cls.forward).bind(None, *spec.inputs)
    except TypeError:
        call = ", ".join(spec.inputs)
        return wrong(
            N_("the check calls module({call}); your forward is forward{signature}."),
            call=call,
            signature=inspect.signature(cls.forward),
        )
    for module, config in zip(modules, configs, strict=True):
        problem = banned_class(spec.forbidden, cls, module)
        if problem is not None:
            return wrong(N_("`{call}` {problem}"), call=_call(name, config), problem=problem)
        problem = spec.unfit(module, config)
        if problem is not None:
            return wrong(N_("{problem}"), problem=tr(problem))
    return None


# ----------------------------------------------------------------------------- fitting the weights


def parameter_shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of ``module``'s parameters, in the order they were registered."""
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


def parameters_problem(
    config: dict,
    module: nn.Module,
    expected: Mapping[str, tuple[int, ...]],
    whose: str,
    hint: str | Callable[[set[str], set[str]], str],
) -> str | None:
    """For ``unfit``: what differs between the names and shapes of ``module``'s parameters and
    ``expected``, or None. ``whose`` ends the first line ("differ from attnlib.X's"); ``hint``
    ends the message: a text, or ``hint(missing, extra)`` of the names expected but not found,
    and found but not expected (both empty when only shapes differ)."""
    theirs = parameter_shapes(module)
    if theirs == dict(expected):
        return None
    if callable(hint):
        hint = hint(expected.keys() - theirs.keys(), theirs.keys() - expected.keys())

    def listed(shapes: Mapping[str, tuple[int, ...]]) -> str:
        return ", ".join(f"{name} {shape}" for name, shape in shapes.items()) or tr("none")

    call = ", ".join(f"{k}={v}" for k, v in config.items())
    differ = tr("with ({call}) your module's parameters {whose}.").format(call=call, whose=tr(whose))
    expected_line = tr("   expected: {shapes}").format(shapes=listed(expected))
    yours_line = tr("   yours:    {shapes}").format(shapes=listed(theirs))
    return shown(f"{differ}\n{expected_line}\n{yours_line}\n" + hint_line(hint))


def sublayers(module: nn.Module, *kinds: type | tuple[type, ...]) -> list[list[nn.Module]]:
    """For ``unfit`` and ``fit``: ``module``'s submodules of each kind (a class or a tuple of classes),
    each list in the order they were registered; one registered twice is there once."""
    found = list(module.modules())
    return [[m for m in found if isinstance(m, kind)] for kind in kinds]


def load_by_name(module: nn.Module, tensors: Mapping[str, torch.Tensor]) -> None:
    """For ``fit``: copy each tensor into the parameter of that name (``unfit`` checked the names)."""
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, tensor in tensors.items():
            params[name].copy_(tensor)


def first_calls(module: nn.Module, watched: Sequence[nn.Module], *inputs: Any) -> list[tuple]:
    """For ``fit``: ``(submodule, args, kwargs)`` for each call of a watched submodule during
    ``module(*inputs)``, in order (so that weights go by role, whatever the student's names)."""
    calls: list[tuple] = []
    handles = [
        m.register_forward_hook(lambda mod, a, kw, _out: calls.append((mod, a, kw)), with_kwargs=True)
        for m in watched
    ]
    try:
        with torch.no_grad():
            module(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def in_call_order(calls: Sequence[tuple], modules: Sequence[nn.Module]) -> list[nn.Module]:
    """``modules`` in the order :func:`first_calls` first saw them, those never called last."""
    order: list[nn.Module] = []
    for m in [c[0] for c in calls] + list(modules):
        if any(m is o for o in modules) and not any(m is o for o in order):
            order.append(m)
    return order


def received(calls: Sequence[tuple], module: nn.Module, value: Any) -> bool:
    """True when one of ``module``'s :func:`first_calls` got ``value`` itself as an argument (a decoder
    layer's cross-attention is the attention that receives the memory)."""
    return any(
        m is module and any(v is value for v in (*args, *kwargs.values())) for m, args, kwargs in calls
    )


def copy_weights(
    targets: Sequence[nn.Module], sources: Sequence[nn.Module], renamed: Mapping[str, str] | None = None
) -> None:
    """For ``fit``: give each module of ``targets`` the weights of the module of ``sources`` in the
    same place (``unfit`` checked that they fit).

    A target of the source's class takes its whole state; one of another class (nn.LayerNorm where
    the reference has attnlib's) takes each parameter by name, ``renamed`` mapping a source's name to
    the target's (``{"gamma": "weight"}``).
    """
    with torch.no_grad():
        for target, source in zip(targets, sources, strict=True):
            if isinstance(target, type(source)):
                target.load_state_dict(source.state_dict())
                continue
            for name, value in source.named_parameters():
                attrgetter((renamed or {}).get(name, name))(target).copy_(value)


# ----------------------------------------------------------------------------- the dropout probes


def outputs_differ(module: nn.Module, *inputs: Any, training: bool) -> bool:
    """True when two calls of ``module`` on the same inputs, in train or eval mode, give different outputs.

    The two calls draw from two different seeds (and leave the global seed alone), so a module
    that drops anything gives two different outputs; a nan in the same place of both (a wrong mask,
    say) is no difference. The module's own modes are restored after. Whatever ``module`` raises is
    raised.
    """
    outputs = []
    with evaluating(module), torch.no_grad():  # evaluating restores every submodule's mode afterwards
        module.train(training)
        for seed in (1, 2):
            with seeded(seed):
                outputs.append(module(*inputs))
    if not all(isinstance(o, torch.Tensor) for o in outputs):
        return False
    if outputs[0].shape != outputs[1].shape:
        return True
    return not torch.allclose(*outputs, rtol=0.0, atol=0.0, equal_nan=True)  # a nan is no draw


def dropout_still_on(module: nn.Module, *inputs: Any) -> bool:
    """THE probe for dropout left on in eval mode: two calls in eval mode give different outputs.

    False when the module raises: the comparison of outputs then reports the error in words.
    """
    try:
        return outputs_differ(module, *inputs, training=False)
    except Exception:
        return False
