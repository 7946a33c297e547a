"""Statements about a trained model, printed and checked in one call: :func:`claim`.

Shapes: none; a claim is one number (or one truth value) and a bound.

Used from notebook 07 (sequence to sequence without attention) on, wherever a trained model is
described.

A model trained on another CPU code path, another torch or with another seed ends up with
other weights, so a notebook never prints the exact numbers a training run gives in a cell
that ``make test`` checks. It prints a statement about them instead, and that statement must
hold on every run, not only on the stored one. :func:`claim` prints the statement with its
bound and whether it holds::

    claim("exact match on the held-out dates", exact, ">=", 0.99)
    # exact match on the held-out dates >= 0.99: True

It never raises: a statement that fails on a student's machine prints ``False`` and the
measured value, and the rest of the notebook still runs. nbval compares the printed line, so a
failing claim fails ``make test``.

Where the environment variable ``ATTNLIB_CLAIMS_LOG`` names a file, every claim also appends
one JSON line to it: the statement, the measured value, the operator, the bound, whether it
holds and its *margin* (how far the value is from the bound, on the side where the claim
holds: positive when it holds). ``make claims`` (``benchmarks/claims.py``) retrains every
notebook over several seeds and CPU code paths and reads these lines.
"""

from __future__ import annotations

import json
import math
import operator
import os
from numbers import Real

import torch

__all__ = ["LOG_VARIABLE", "claim"]

_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
LOG_VARIABLE = "ATTNLIB_CLAIMS_LOG"


def _number(value: object, name: str) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"expected {name} to be one number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"expected {name} to be a real number, got {type(value).__name__}")
    return float(value)


def claim(statement: str, value: object, op: str | None = None, bound: float | None = None) -> None:
    """Print ``statement op bound: True`` (or ``False``, with the measured value).

    It returns nothing, so that a cell that ends with a claim shows no ``Out[]``.

    Args:
        statement: what is measured, in words ("exact match on the held-out dates").
        value: the measured number (a Python number or a one-element tensor); or, with no
            ``op``, a truth value for a statement that has no threshold (an example chosen by a
            stated rule, say).
        op: one of ``">="``, ``">"``, ``"<="``, ``"<"``; None for a truth value.
        bound: the threshold the value is compared with; None with no ``op``.
    """
    if not isinstance(statement, str) or not statement:
        raise TypeError(f"expected statement to be a non-empty str, got {statement!r}")
    if op is None:
        if bound is not None:
            raise ValueError(f"a bound needs an operator: got bound={bound!r} and op=None")
        if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype == torch.bool:
            value = bool(value.item())
        if not isinstance(value, bool):
            raise TypeError(f"with no operator, expected value to be a bool, got {type(value).__name__}")
        holds, measured, limit, margin, shown = value, None, None, None, statement
    else:
        if op not in _OPERATORS:
            raise ValueError(f"expected op to be one of {sorted(_OPERATORS)}, got {op!r}")
        measured, limit = _number(value, "value"), _number(bound, "bound")
        holds = bool(_OPERATORS[op](measured, limit)) and not math.isnan(measured)
        margin = measured - limit if op in (">=", ">") else limit - measured
        shown = f"{statement} {op} {limit:g}"
    line = f"{shown}: {holds}"
    if not holds and measured is not None:
        line += f" (measured {measured:.4g})"
    print(line)
    path = os.environ.get(LOG_VARIABLE)
    if path:
        record = {
            "statement": shown,
            "value": measured,
            "op": op,
            "bound": limit,
            "holds": holds,
            "margin": margin,
        }
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
