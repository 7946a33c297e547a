"""What the answer tables hand every check: a stub not yet written and code that crashes; and the
assertion on a typical mistake, for the tests beside the harness."""

from __future__ import annotations

import torch


def stub(*args):
    raise NotImplementedError


def crashes(*args):
    return args[0].no_such_attribute


def shape_error(*args):
    """Code that crashes on a shape error."""
    return torch.zeros(2, 3) @ torch.zeros(4, 5)  # a shape error in the student's code


def assert_hint(check_fn, wrong, hint):
    """A typical mistake fails, and the message gives the hint written for it."""
    verdict = check_fn(wrong)
    assert not verdict and verdict.status == "fail"
    assert verdict.message.startswith("Wrong: "), verdict.message  # the word, not only an emoji
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message
