"""Answers to the checks of notebook 06."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import attnlib
from attnlib.check import sequence_models as sequences
from tests.check.verdicts import stub

# ----------------------------------------------------------------------------- right answers


def right_gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    x_r, x_z, x_n = (x @ weight_ih.T + bias_ih).chunk(3, dim=1)  # (B, 3 d_hid) -> 3 x (B, d_hid)
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


RIGHT = {
    "gru_cell": [right_gru_cell],
    "sequence_cross_entropy": [right_loss],
    "accumulated_step": [right_accumulated_step],
    "adam_steps": [right_adam],
}

# ----------------------------------------------------------------------------- typical mistakes


def _nll(lo, g):
    return -torch.log_softmax(lo, -1).gather(-1, g.unsqueeze(-1)).squeeze(-1)


WRONG = {
    "gru_cell": [
        (sequences._gru_variant(order="zrn"), "reset r, update z, new n"),
        (sequences._gru_variant(order="rnz"), "the candidate n uses the last d_hid rows"),
        (sequences._gru_variant(reset="before_matrix"), "the form of Cho et al. (2014)"),
        (sequences._gru_variant(reset="before_bias"), "b_hn sits inside the product with r"),
        (sequences._gru_variant(mix="swapped"), "z and 1 - z are swapped"),
        (sequences._gru_variant(candidate=torch.sigmoid), "the candidate n uses tanh"),
        (sequences._gru_variant(reset="none"), "the reset gate r is missing"),
        (sequences._gru_variant(out="n"), "you returned the candidate n"),
    ],
    "sequence_cross_entropy": [
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
    "accumulated_step": [
        (sequences._update_variant(returns="none"), "return the loss of the whole update"),
        (sequences._update_variant(zero="each"), "throws away the micro-batches before the last"),
        (sequences._update_variant(zero="never"), "backward() accumulates"),
        (sequences._update_variant(step="each"), "one update means one optimizer.step()"),
        (sequences._update_variant(weight="none"), "weigh each micro-batch's mean loss by its share"),
        (sequences._update_variant(weight="batches"), "weigh each micro-batch's mean loss by its share"),
        (sequences._update_variant(clip_at="each"), "clip once"),
        (sequences._update_variant(clip_at="none"), "the step used unclipped gradients"),
        (sequences._update_variant(returns="last"), "the returned loss is the last micro-batch's"),
    ],
    "adam_steps": [
        (sequences._adam_variant(root=False), "divide by the SQUARE ROOT of v_hat"),
        (sequences._adam_variant(corrected=False), "divide them by 1 - beta1**t and 1 - beta2**t"),
        (sequences._adam_variant(first_t=0), "t counts the steps from 1"),
        (sequences._adam_variant(eps_at="inside"), "eps is added after the square root"),
        (sequences._adam_variant(sign=+1), "the step goes AGAINST the gradient"),
        (sequences._adam_variant(betas="swapped"), "beta1 belongs to the running mean of the gradient"),
        (sequences._adam_variant(keep=False), "keep them from one step to the next"),
    ],
}


# ----------------------------------------------------------------------------- out of reach
def _by_gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    cell = nn.GRUCell(weight_ih.shape[1], weight_hh.shape[1])
    with torch.no_grad():
        cell.weight_ih.copy_(weight_ih), cell.weight_hh.copy_(weight_hh)
        cell.bias_ih.copy_(bias_ih), cell.bias_hh.copy_(bias_hh)
    return cell(x, h)


def _by_gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    gru = nn.GRU(weight_ih.shape[1], weight_hh.shape[1], batch_first=True)
    with torch.no_grad():
        gru.weight_ih_l0.copy_(weight_ih), gru.weight_hh_l0.copy_(weight_hh)
        gru.bias_ih_l0.copy_(bias_ih), gru.bias_hh_l0.copy_(bias_hh)
    return gru(x[:, None], h[None])[1][0]


def _by_adam(w, grads, lr, beta1, beta2, eps):
    w = w.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([w], lr=lr, betas=(beta1, beta2), eps=eps)
    for g in grads:
        w.grad = g.clone()
        optimizer.step()
    return w.detach()


def _by_adamw(w, grads, lr, beta1, beta2, eps):
    w = w.clone().requires_grad_(True)
    optimizer = torch.optim.AdamW([w], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=0.0)
    for g in grads:
        w.grad = g.clone()
        optimizer.step()
    return w.detach()


CROSS_ENTROPY = "calls `F.cross_entropy`"
OUT_OF_REACH = {
    "gru_cell": [
        (_by_gru_cell, "calls `nn.GRUCell`"),
        (lambda x, h, *w: torch.gru_cell(x, h, *w), "calls `nn.GRUCell`"),
        (_by_gru, "calls `nn.GRU`"),
    ],
    "sequence_cross_entropy": [
        (lambda lo, g, p: F.cross_entropy(lo.flatten(0, 1), g.flatten(), ignore_index=p), CROSS_ENTROPY),
        (lambda lo, g, p: nn.CrossEntropyLoss(ignore_index=p)(lo.transpose(1, 2), g), CROSS_ENTROPY),
        (lambda lo, g, p: attnlib.sequence_loss(lo, g, p), "calls attnlib's own `sequence_loss`"),
        (attnlib.training.sequence_loss, "hands back attnlib's own `sequence_loss`"),
        (
            lambda lo, g, p: F.nll_loss(torch.log_softmax(lo, -1).flatten(0, 1), g.flatten(), ignore_index=p),
            "calls `F.nll_loss`",
        ),
    ],
    "adam_steps": [
        (_by_adam, "calls `torch.optim.Adam`"),
        (_by_adamw, "calls `torch.optim.Adam`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "gru_cell": [stub],
    "sequence_cross_entropy": [stub],
    "accumulated_step": [stub],
    "adam_steps": [stub],
}
_RAISED = (lambda x, *args: x.no_such_attribute, "AttributeError", "no_such_attribute")
CRASHES = {
    "gru_cell": [_RAISED],
    "sequence_cross_entropy": [_RAISED],
    "accumulated_step": [_RAISED],
    "adam_steps": [_RAISED],
}
