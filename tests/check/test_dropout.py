"""What only notebook 04's checks do (the rest: test_harness.py, answers/dropout.py): the ideas
the exercises rest on, measured on PyTorch's dropout and attnlib's modules."""

from __future__ import annotations

import torch

import attnlib
from attnlib import check
from tests.check.answers.dropout import right_classic, right_dropout, right_row_sum_stats


def test_classic_eval_mode_is_the_average_of_train_mode():
    # The idea the exercise rests on: averaged over many draws, train mode gives what eval mode gives.
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(6, 6), dim=-1)
    p = 0.3
    keep = torch.rand(20_000, 6, 6) >= p  # 20,000 independent keep-masks
    mean_train = right_classic(weights, keep, p, training=True).mean(dim=0)
    torch.testing.assert_close(
        mean_train, right_classic(weights, keep[0], p, training=False), atol=0.01, rtol=0
    )


def test_reference_dropout_is_what_torch_dropout_computes():
    # With torch's own keep-mask, the exercise's formula reproduces nn.Dropout exactly.
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(4, 6, 6), dim=-1)
    dropout = torch.nn.Dropout(0.3)
    torch.manual_seed(1)
    keep = dropout(torch.ones_like(weights)) != 0
    torch.manual_seed(1)
    torch.testing.assert_close(right_dropout(weights, keep, 0.3), dropout(weights))


def test_classic_dropout_reports_wrong_shape_without_hint():
    verdict = check.classic_dropout(lambda w, keep, p, training: (w * keep).sum(-1))
    assert not verdict and "expected shape" in verdict.message and "hint" not in verdict.message


def test_row_sum_stats_are_what_torch_dropout_draws():
    # The formula the exercise asks for, against 20,000 draws of nn.Dropout on attnlib's weights,
    # with a fully masked row (all zeros) among them.
    torch.manual_seed(0)
    visible = attnlib.causal_mask(5) & (torch.arange(5) >= 1)  # key 0 is padding: row 0 sees nothing
    weights = attnlib.masked_softmax(torch.randn(5, 5), visible)
    p = 0.3
    sums = torch.nn.functional.dropout(weights.expand(20_000, 5, 5), p).sum(dim=-1)  # (N, Tq)
    mean, variance = right_row_sum_stats(weights, p)
    torch.testing.assert_close(sums.mean(0), mean, atol=0.02, rtol=0)
    torch.testing.assert_close(sums.var(0), variance, atol=0.01, rtol=0.05)
    assert mean[0] == 0 and variance[0] == 0


def test_row_sums_match_a_real_module():
    # The facts the prediction relies on, measured on attnlib.CausalAttention.
    torch.manual_seed(0)
    x = torch.rand(1, 6, 3)
    module = attnlib.CausalAttention(3, 2, 6, dropout=0.5)
    module.eval()
    module(x)
    torch.testing.assert_close(module.last_attn_weights.sum(-1), torch.ones(1, 6))
    module.train()
    module(x.expand(4000, 6, 3))  # 4000 independent dropout draws at once
    mean = module.last_attn_weights.sum(-1).mean(0, keepdim=True)  # (1, 6)
    assert torch.allclose(mean, torch.ones(1, 6), atol=0.05), mean
