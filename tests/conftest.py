"""Shared fixtures: the six-token example of Raschka (2024, ch. 3)."""

from __future__ import annotations

import pytest
import torch

# The checks' shared assertions (tests/check/verdicts.py) show the values they compared, as a test does.
pytest.register_assert_rewrite("tests.check.verdicts")

TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


@pytest.fixture
def tokens() -> list[str]:
    return list(TOKENS)


@pytest.fixture
def inputs() -> torch.Tensor:
    return torch.tensor(
        [
            [0.43, 0.15, 0.89],  # Your
            [0.55, 0.87, 0.66],  # journey
            [0.57, 0.85, 0.64],  # starts
            [0.22, 0.58, 0.33],  # with
            [0.77, 0.25, 0.10],  # one
            [0.05, 0.80, 0.55],  # step
        ]
    )


@pytest.fixture
def batch(inputs: torch.Tensor) -> torch.Tensor:
    return torch.stack((inputs, inputs), dim=0)  # (2, 6, 3)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
