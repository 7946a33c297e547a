"""One answer table per notebook's check module, named after it: ``answers/<module>.py`` for
``attnlib/check/<module>.py``. tests/check/test_harness.py runs every entry of every table.

A table declares, by the name of a check in its module's ``__all__``:

- ``RIGHT``: answers that pass;
- ``WRONG``: typical mistakes, ``(answer, hint)``: the check says "Wrong" and gives that hint;
- ``OUT_OF_REACH``: the library's own answer, or a torch function the exercise forbids, handed back,
  ``(answer, text)``: "Wrong", naming what it reached (``"calls attnlib's own `top_p_logits`"``);
- ``TOLD``: other answers refused in words, ``(answer, status, *texts)``: the verdict has that
  status ("fail" or "error") and its message names each text (bad input, a mistake no hint
  models, a wrong shape);
- ``NOT_YET``: stubs, and predictions left as ``...``, which get "Not yet";
- ``CRASHES``: code that raises, ``(answer, *texts)``: "Error", in words, naming each text.

After every call the harness also asserts that the global random state did not move.

An answer is what the student passes: a function, or a class for the "build an nn.Module"
exercises; for a prediction, :func:`given` holds the arguments of the call. Every check needs a
right or a wrong answer at least (the harness fails by name otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Given:
    """A prediction's answer: the arguments the check is called with."""

    args: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"given({', '.join('...' if a is ... else repr(a) for a in self.args)})"


def given(*args: Any) -> Given:
    """``check.drop_the_scale("c", "b")`` is the answer ``given("c", "b")``."""
    return Given(args)
