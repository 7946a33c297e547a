"""What only notebook 02's checks do (the rest: test_harness.py, answers/trainable_weights.py)."""

from __future__ import annotations

from attnlib import check


def test_drop_the_scale_reports_each_part():
    verdict = check.drop_the_scale("a", "c")
    assert "without the scale" in verdict.message and "with the scale" in verdict.message
