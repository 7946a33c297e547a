"""What only notebook 06's checks do (the rest: test_harness.py, answers/sequence_models.py):
their references are what PyTorch and attnlib compute."""

from __future__ import annotations

import torch
from torch import nn

from attnlib import training
from attnlib.check import sequence_models as sequences
from tests.check.answers.sequence_models import right_accumulated_step, right_adam, right_gru_cell, right_loss


def test_the_references_are_what_pytorch_and_attnlib_compute():
    torch.manual_seed(0)
    # 6.1: nn.GRU (the layer) agrees with the cell step by step
    gru = nn.GRU(3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)
    h = torch.zeros(2, 4)
    for t in range(5):
        h = right_gru_cell(x[:, t], h, gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0)
    torch.testing.assert_close(h, gru(x)[1][0])
    # 6.2: attnlib's sequence_loss is the same loss on tgt[:, 1:]
    tgt = torch.tensor([[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]])
    logits = torch.randn(2, 4, 9)
    torch.testing.assert_close(right_loss(logits, tgt[:, 1:], 0), training.sequence_loss(logits, tgt, 0))


def test_an_accumulated_update_is_one_step_on_the_big_batch():
    # What the reference claims: the micro-batches' update equals train()'s step on all of them.
    groups = ((4, 1, 2), (3,), (2, 2))
    micro = sequences._micro_batches(5, groups)
    rows = [[t for t in row if t] for _, tgt in micro for row in tgt.tolist()]
    big_tgt = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long)  # re-padded
    for i, row in enumerate(rows):
        big_tgt[i, : len(row)] = torch.tensor(row)
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        models.append(sequences._TinyLM())
    opts = [torch.optim.SGD(m.parameters(), lr=0.5) for m in models]
    loss_micro = right_accumulated_step(models[0], opts[0], micro, 0, 0.1)
    logits = models[1](big_tgt, big_tgt)
    loss_big = training.sequence_loss(logits, big_tgt, 0)
    opts[1].zero_grad()
    loss_big.backward()
    nn.utils.clip_grad_norm_(models[1].parameters(), 0.1)
    opts[1].step()
    assert abs(loss_micro - loss_big.item()) < 1e-5
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_the_adam_reference_is_torch_optim_adam_on_a_real_loss():
    # The check feeds given gradients; on a real loss the same function follows torch.optim.Adam.
    torch.manual_seed(0)
    target = torch.randn(5)
    w = torch.zeros(5, requires_grad=True)
    optimizer = torch.optim.Adam([w], lr=0.05)
    grads = []
    for _ in range(6):
        optimizer.zero_grad()
        ((w - target) ** 2).sum().backward()
        grads.append(w.grad.clone())
        optimizer.step()
    mine = right_adam(torch.zeros(5), grads, 0.05, 0.9, 0.999, 1e-8)
    torch.testing.assert_close(mine, w.detach())
