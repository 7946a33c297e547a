"""What the check tests of neighbouring notebooks share: a few student answers, one assertion."""

from __future__ import annotations

import torch

# Notebook 01's right answers, also run by notebook 02's test of the global random state.


def softmax_ok(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def cosine_context_ok(inputs):
    unit = inputs / inputs.norm(dim=-1, keepdim=True)
    return torch.softmax(unit @ unit.T, dim=-1) @ inputs


def shape_error(*args):
    """Code that crashes on a shape error, for the checks of notebooks 10 and 11."""
    return torch.zeros(2, 3) @ torch.zeros(4, 5)  # a shape error in the student's code


def assert_hint(check_fn, wrong, hint):
    """A typical mistake fails, and the message gives the hint written for it."""
    verdict = check_fn(wrong)
    assert not verdict and verdict.status == "fail"
    assert verdict.message.startswith("Wrong: "), verdict.message  # the word, not only an emoji
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message
