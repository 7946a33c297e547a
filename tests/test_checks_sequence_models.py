"""The checks of notebook 06's exercises accept a right answer and explain each typical wrong one."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from student_answers import assert_todo_then_error
from torch import nn

from attnlib import check, training
from attnlib.check import sequence_models as sequences


# --- reference answers, as a student would write them --------------------------------------
def right_gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    x_r, x_z, x_n = (x @ weight_ih.T + bias_ih).chunk(3, dim=1)  # (B, 3H) -> 3 x (B, H)
    h_r, h_z, h_n = (h @ weight_hh.T + bias_hh).chunk(3, dim=1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def right_loss(logits, gold, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, T)
    real = gold != pad_id
    return nll[real].mean()


def right_accumulated_step(model, optimizer, micro_batches, pad_id, clip):
    counts = [(tgt[:, 1:] != pad_id).sum() for _, tgt in micro_batches]  # real tokens per micro-batch
    total = sum(counts)
    optimizer.zero_grad()
    whole = 0.0
    for (src, tgt), n in zip(micro_batches, counts, strict=True):
        logits = model(src, tgt)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1), ignore_index=pad_id
        )
        (loss * n / total).backward()
        whole += loss.item() * n.item() / total.item()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return whole


def right_adam(w, grads, lr, beta1, beta2, eps):
    m, v = torch.zeros_like(w), torch.zeros_like(w)  # once, before the first step
    for t, g in enumerate(grads, start=1):
        m = beta1 * m + (1 - beta1) * g  # running mean of the gradient
        v = beta2 * v + (1 - beta2) * g**2  # running mean of its square
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)  # corrected for starting at zero
        w = w - lr * m_hat / (v_hat.sqrt() + eps)
    return w


def test_right_answers_pass():
    for fn, answer in [
        (check.gru_cell, right_gru_cell),
        (check.sequence_cross_entropy, right_loss),
        (check.accumulated_step, right_accumulated_step),
        (check.adam_steps, right_adam),
    ]:
        verdict = fn(answer)
        assert verdict and verdict.status == "pass", verdict.message


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


@pytest.mark.parametrize(
    ("variant", "hint"),
    [
        ({"order": "zrn"}, "reset r, update z, new n"),
        ({"order": "rnz"}, "the candidate n uses the last H rows"),
        ({"reset": "before_matrix"}, "the form of Cho et al. (2014)"),
        ({"reset": "before_bias"}, "b_hn sits inside the product with r"),
        ({"mix": "swapped"}, "z and 1 - z are swapped"),
        ({"candidate": torch.sigmoid}, "the candidate n uses tanh"),
        ({"reset": "none"}, "the reset gate r is missing"),
        ({"out": "n"}, "you returned the candidate n"),
    ],
)
def test_gru_cell_explains_typical_mistakes(variant, hint):
    verdict = check.gru_cell(sequences._gru_variant(**variant))
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


def _nll(lo, g):
    return -torch.log_softmax(lo, -1).gather(-1, g.unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda lo, g, p: _nll(lo, g).mean(), "the padding counts in your mean"),
        (lambda lo, g, p: (_nll(lo, g) * (g != p)).sum() / g.numel(), "divided by all B * T positions"),
        (
            lambda lo, g, p: ((_nll(lo, g) * (g != p)).sum(1) / (g != p).sum(1)).mean(),
            "a mean per sequence, then over sequences",
        ),
        (lambda lo, g, p: _nll(lo, g)[g != p].sum(), "a mean, not a sum"),
        (
            lambda lo, g, p: -torch.softmax(lo, -1).gather(-1, g.unsqueeze(-1)).squeeze(-1)[g != p].mean(),
            "minus the LOG",
        ),
        (
            lambda lo, g, p: -lo.gather(-1, g.unsqueeze(-1)).squeeze(-1)[g != p].mean(),
            "not log-probabilities",
        ),
        (
            lambda lo, g, p: -torch.log_softmax(lo, 1).gather(-1, g.unsqueeze(-1)).squeeze(-1)[g != p].mean(),
            "the last axis",
        ),
        (
            lambda lo, g, p: (
                -torch.log(torch.softmax(lo, -1)).gather(-1, g.unsqueeze(-1)).squeeze(-1)[g != p].mean()
            ),
            "log(softmax(x)) underflows",
        ),
    ],
)
def test_sequence_cross_entropy_explains_typical_mistakes(wrong, hint):
    verdict = check.sequence_cross_entropy(wrong)
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("variant", "hint"),
    [
        ({"returns": "none"}, "return the loss of the whole update"),
        ({"zero": "each"}, "throws away the micro-batches before the last"),
        ({"zero": "never"}, "backward() accumulates"),
        ({"step": "each"}, "one update means one optimizer.step()"),
        ({"weight": "none"}, "weigh each micro-batch's mean loss by its share"),
        ({"weight": "batches"}, "weigh each micro-batch's mean loss by its share"),
        ({"clip_at": "each"}, "clip once"),
        ({"clip_at": "none"}, "the step used unclipped gradients"),
        ({"returns": "last"}, "the returned loss is the last micro-batch's"),
    ],
)
def test_accumulated_step_explains_typical_mistakes(variant, hint):
    verdict = check.accumulated_step(sequences._update_variant(**variant))
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


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


@pytest.mark.parametrize(
    ("variant", "hint"),
    [
        ({"root": False}, "divide by the SQUARE ROOT of v_hat"),
        ({"corrected": False}, "divide them by 1 - beta1**t and 1 - beta2**t"),
        ({"first_t": 0}, "t counts the steps from 1"),
        ({"eps_at": "inside"}, "eps is added after the square root"),
        ({"sign": +1}, "the step goes AGAINST the gradient"),
        ({"betas": "swapped"}, "beta1 belongs to the running mean of the gradient"),
        ({"keep": False}, "keep them from one step to the next"),
    ],
)
def test_adam_steps_explains_typical_mistakes(variant, hint):
    verdict = check.adam_steps(sequences._adam_variant(**variant))
    assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message


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


@pytest.mark.parametrize(
    "fn", [check.gru_cell, check.sequence_cross_entropy, check.accumulated_step, check.adam_steps]
)
def test_a_stub_is_not_yet_and_a_crash_is_reported_in_words(fn):
    assert_todo_then_error(fn, lambda x, *args: x.no_such_attribute, "AttributeError", "no_such_attribute")


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.gru_cell(right_gru_cell)
    check.sequence_cross_entropy(right_loss)
    check.accumulated_step(right_accumulated_step)
    check.adam_steps(right_adam)
    assert torch.equal(state, torch.random.get_rng_state())
