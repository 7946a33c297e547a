"""attnlib.claim: the printed statement, its truth, and the record make claims reads."""

from __future__ import annotations

import json

import pytest
import torch

from attnlib import claim
from attnlib.claims import LOG_VARIABLE


def test_prints_the_statement_with_its_bound(capsys):
    assert claim("exact match", 0.995, ">=", 0.99) is None  # no Out[] under the cell
    assert capsys.readouterr().out == "exact match >= 0.99: True\n"


def test_a_failing_claim_prints_false_and_the_measured_value(capsys):
    claim("exact match", torch.tensor(0.9812), ">=", 0.99)
    assert capsys.readouterr().out == "exact match >= 0.99: False (measured 0.9812)\n"


@pytest.mark.parametrize(
    ("value", "op", "bound", "holds"),
    [
        (1.0, ">", 1.0, False),
        (1.0, ">=", 1.0, True),
        (0.2, "<", 0.3, True),
        (0.3, "<=", 0.3, True),
        (0.4, "<", 0.3, False),
    ],
)
def test_each_operator(value, op, bound, holds, capsys):
    claim("x", value, op, bound)
    assert capsys.readouterr().out.startswith(f"x {op} {bound:g}: {holds}")


def test_nan_never_holds(capsys):
    claim("loss", float("nan"), "<", 1.0)
    claim("loss", float("nan"), ">=", 1.0)
    assert capsys.readouterr().out.count(": False (measured nan)") == 2


def test_a_truth_value_without_a_bound(capsys):
    claim("the drawn string is copied without a mistake", torch.tensor(True))
    assert capsys.readouterr().out == "the drawn string is copied without a mistake: True\n"


def test_records_margin_where_asked(tmp_path, monkeypatch, capsys):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    claim("accuracy", 0.97, ">=", 0.9)
    claim("loss", 1.2, "<", 1.0)
    claim("copied", False)
    first, second, third = (json.loads(line) for line in log.read_text().splitlines())
    assert first["holds"] and first["margin"] == pytest.approx(0.07) and first["bound"] == 0.9
    assert not second["holds"] and second["margin"] == pytest.approx(-0.2)
    assert third == {
        "statement": "copied",
        "value": None,
        "op": None,
        "bound": None,
        "holds": False,
        "margin": None,
    }


def test_no_record_without_the_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(LOG_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    claim("accuracy", 0.97, ">=", 0.9)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("x", 0.5, "=>", 0.3), ValueError, "expected op to be one of"),
        (("x", torch.ones(3), ">", 0.3), ValueError, "one number, got a tensor of shape (3,)"),
        (("x", "0.5", ">", 0.3), TypeError, "expected value to be a real number, got str"),
        (("x", 0.5), TypeError, "with no operator, expected value to be a bool, got float"),
        (("x", True, None, 0.3), ValueError, "a bound needs an operator"),
        (("", True), TypeError, "non-empty str"),
    ],
)
def test_bad_input_is_named(args, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        claim(*args)
