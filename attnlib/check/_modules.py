"""The framework of the "build an nn.Module" exercises (5.5 a multi-head attention module, 8.2
Bahdanau's alignment model, 10.4 a pre-LN encoder layer, 10.6 a decoder layer); see
:mod:`attnlib.check._core` for the rest of the machinery.

Such an exercise hands in a class, not a function. Its check goes through the same steps, each
one here once:

1. :func:`class_problem`: is it a class derived from ``nn.Module`` (and not a module already
   built from it)?
2. :func:`build`: build it under a fixed seed, turning an exception into a verdict with
   :func:`attnlib.check._core.raised`.
3. Fit attnlib's weights into it, so that its outputs can be compared with attnlib's module: what
   fits is the exercise's own business; it says what does not with :class:`UnfitError`.
4. :func:`attnlib.check._core.run_check` on cases, with the typical slips as mistakes.
5. :func:`dropout_still_on` / :func:`outputs_differ`: the probes that tell dropout left on in eval
   mode, or missing in train mode.

Modules are built inside :func:`attnlib.check._core.seeded`, so a check never moves the
student's global seed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..modes import evaluating
from ._core import FAIL, Verdict, raised, seeded


class UnfitError(Exception):
    """The student's module cannot take the reference's weights; the message says why."""


def class_problem(
    title: str, obj: object, *, instance: str, not_a_module: Callable[[object], str]
) -> Verdict | None:
    """What is wrong with ``obj`` as the class of a module exercise, or None for an ``nn.Module`` subclass.

    Args:
        title: the exercise's name.
        obj: what the student handed in.
        instance: the message (after the title) when ``obj`` is a module built from the class.
        not_a_module: the message (after the title) for anything else that is not an
            ``nn.Module`` subclass, from ``obj``.
    """
    if isinstance(obj, nn.Module):
        return Verdict(False, f"{FAIL} {title}: {instance}")
    if not isinstance(obj, type) or not issubclass(obj, nn.Module):
        return Verdict(False, f"{FAIL} {title}: {not_a_module(obj)}")
    return None


def constructor_problem(
    title: str, cls: type, message: Callable[[inspect.Signature], str], *args: Any, **kwargs: Any
) -> Verdict | None:
    """A verdict when the check's call ``cls(*args, **kwargs)`` cannot bind to the student's
    constructor; ``message`` says it, given that constructor's signature. None when it binds, or
    when the signature cannot be read (the construction itself then speaks).
    """
    try:
        inspect.signature(cls).bind(*args, **kwargs)
    except TypeError:
        return Verdict(False, f"{FAIL} {title}: {message(inspect.signature(cls))}")
    except ValueError:
        pass
    return None


def keyword_constructor_problem(
    title: str, cls: type, name: str, expected: str, **kwargs: Any
) -> Verdict | None:
    """:func:`constructor_problem` for a check that builds ``cls(**kwargs)`` by keyword, as
    ``expected`` (e.g. ``"(d_in, d_out, ...)"``) says."""
    return constructor_problem(
        title,
        cls,
        lambda signature: (
            f"the check builds {name}{expected}, passing each argument by that name; "
            f"your constructor is {name}{signature}."
        ),
        **kwargs,
    )


def build(
    title: str,
    cls: type,
    who: str,
    *args: Any,
    seed: int,
    each: bool = False,
    super_hint: str = "",
    **kwargs: Any,
) -> nn.Module | Verdict:
    """``cls(*args, **kwargs)`` built under ``seed``, or the verdict for what its constructor raised.

    Args:
        title: the exercise's name.
        cls: the student's class.
        who: the call as the message names it after the title, e.g. ``": `MyLayer(8, 2, 16, 0.1)`"``.
        *args: the constructor's positional arguments.
        seed: the random seed its parameters are drawn from.
        each: the stub has several ``raise NotImplementedError``.
        super_hint: the hint when a submodule was assigned before ``super().__init__()``.
        **kwargs: the constructor's keyword arguments.
    """
    try:
        with seeded(seed):
            return cls(*args, **kwargs)
    except Exception as exc:  # the student's bug, reported in words
        return raised(title, exc, who, each=each, super_hint=super_hint)


def outputs_differ(module: nn.Module, *inputs: Any, training: bool) -> bool:
    """True when two calls of ``module`` on the same inputs, in train or eval mode, give different outputs.

    The two calls draw from two different seeds (and leave the global seed alone), so a module
    that drops anything gives two different outputs. The module's own modes are restored after.
    Whatever ``module`` raises is raised.
    """
    outputs = []
    with evaluating(module), torch.no_grad():  # evaluating restores every submodule's mode afterwards
        module.train(training)
        for seed in (1, 2):
            with seeded(seed):
                outputs.append(module(*inputs))
    if not all(isinstance(o, torch.Tensor) for o in outputs):
        return False
    return outputs[0].shape != outputs[1].shape or not torch.equal(*outputs)


def dropout_still_on(module: nn.Module, *inputs: Any) -> bool:
    """THE probe for dropout left on in eval mode: two calls in eval mode give different outputs.

    False when the module raises: the comparison of outputs then reports the error in words.
    """
    try:
        return outputs_differ(module, *inputs, training=False)
    except Exception:
        return False
