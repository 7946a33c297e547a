"""Answers to the checks of notebook 11."""

from __future__ import annotations

import torch

from tests.check.answers import given
from tests.check.verdicts import shape_error, stub

# ----------------------------------------------------------------------------- right answers


def right_beam(scores, log_probs):
    b, k, v = log_probs.shape
    candidates = (scores[..., None] + log_probs).view(b, k * v)  # (B, K*V)
    top, index = candidates.topk(k, dim=-1)
    return top, index // v, index % v


def right_beam_sorted(scores, log_probs):
    b, k, v = log_probs.shape
    ordered, index = (scores[..., None] + log_probs).reshape(b, -1).sort(dim=-1, descending=True)
    index = index[:, :k]
    return ordered[:, :k], torch.div(index, v, rounding_mode="floor"), torch.remainder(index, v)


def right_smoothed(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)  # (B, T)
    keep = target != pad_id
    return loss[keep].mean()


def right_smoothed_distribution(logits, target, eps, pad_id):
    v = logits.shape[-1]
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / v  # (B, T, V)
    log_probs = logits - logits.logsumexp(dim=-1, keepdim=True)
    per_token = -(smoothed * log_probs).sum(dim=-1)  # (B, T)
    keep = (target != pad_id).float()
    return (per_token * keep).sum() / keep.sum()


def right_smoothed_as_float(logits, target, eps, pad_id):
    return right_smoothed(logits, target, eps, pad_id).item()  # "one number": a Python float is fine


LAYERS, HEADS = 2, 8
MAP_COUNT = 3 * LAYERS * HEADS  # encoder self, decoder self, cross: one map per layer and head

RIGHT = {
    "beam_step": [right_beam, right_beam_sorted],
    "label_smoothed_loss": [right_smoothed, right_smoothed_distribution, right_smoothed_as_float],
    "attention_map_count": [given(MAP_COUNT), given(float(MAP_COUNT))],
    "greedy_vs_beam": [given("a", "b"), given("a <eos>", ["b"])],
}

# ----------------------------------------------------------------------------- typical mistakes


def beam_forgot_score(scores, log_probs):
    b, k, v = log_probs.shape
    top, index = log_probs.reshape(b, -1).topk(k, dim=-1)
    return top, index // v, index % v


def beam_per_beam(scores, log_probs):
    best, token = log_probs.max(dim=-1)
    return scores + best, torch.arange(scores.shape[1]).repeat(scores.shape[0], 1), token


def beam_swapped(scores, log_probs):
    top, beam, token = right_beam(scores, log_probs)
    return top, token, beam


def beam_by_k(scores, log_probs):
    b, k, _ = log_probs.shape
    top, index = (scores[..., None] + log_probs).reshape(b, -1).topk(k, dim=-1)
    return top, index // k, index % k


def beam_step_scores(scores, log_probs):
    _, beam, token = right_beam(scores, log_probs)
    return log_probs[torch.arange(scores.shape[0])[:, None], beam, token], beam, token


def beam_multiplied(scores, log_probs):
    b, k, v = log_probs.shape
    top, index = (scores[..., None] * log_probs).reshape(b, -1).topk(k, dim=-1)
    return top, index // v, index % v


def smoothed_over_others(logits, target, eps, pad_id):
    v = logits.shape[-1]
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / (v - 1) * (
        1 - torch.nn.functional.one_hot(target, v)
    )
    per_token = -(smoothed * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
    return per_token[target != pad_id].mean()


def smoothed_unweighted_target(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)
    loss = -log_probs.gather(-1, target[..., None])[..., 0] - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_with_padding(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    return ((1 - eps) * nll - eps * log_probs.mean(dim=-1)).mean()  # every position, pads included


def smoothed_over_all_positions(logits, target, eps, pad_id):
    per_token = right_smoothed_per_token(logits, target, eps)
    return (per_token * (target != pad_id)).sum() / target.numel()


def smoothed_per_sequence(logits, target, eps, pad_id):
    per_token = right_smoothed_per_token(logits, target, eps)
    keep = target != pad_id
    return ((per_token * keep).sum(dim=1) / keep.sum(dim=1)).mean()


def right_smoothed_per_token(logits, target, eps):
    log_probs = torch.log_softmax(logits, dim=-1)
    return (1 - eps) * -log_probs.gather(-1, target[..., None])[..., 0] - eps * log_probs.mean(dim=-1)


def smoothed_log_of_softmax(logits, target, eps, pad_id):
    log_probs = torch.log(torch.softmax(logits, dim=-1))  # log(0) = -inf where a probability underflows
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_naive_exp(logits, target, eps, pad_id):
    probs = logits.exp() / logits.exp().sum(dim=-1, keepdim=True)  # inf / inf for large logits
    log_probs = probs.log()
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)
    return loss[target != pad_id].mean()


def smoothed_summed_over_classes(logits, target, eps, pad_id):
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, target[..., None])[..., 0]
    loss = (1 - eps) * nll - eps * log_probs.sum(dim=-1)  # eps on every class, not eps/V
    return loss[target != pad_id].mean()


def smoothed_not_at_all(logits, target, eps, pad_id):
    nll = -torch.log_softmax(logits, dim=-1).gather(-1, target[..., None])[..., 0]
    return nll[target != pad_id].mean()


WRONG = {
    "beam_step": [
        (beam_forgot_score, "add each beam's running score first"),
        (beam_per_beam, "not the best token of each beam"),
        (beam_swapped, "you swapped them"),
        (beam_by_k, "not by K"),
        (beam_step_scores, "return the new running scores"),
        (beam_multiplied, "log-probabilities add up"),
    ],
    "label_smoothed_loss": [
        (smoothed_over_others, "the V - 1 other classes"),
        (smoothed_unweighted_target, "weight the target's -log p by 1 - eps"),
        (smoothed_with_padding, "positions whose target is pad_id must not count"),
        (smoothed_over_all_positions, "not by B * T"),
        (smoothed_per_sequence, "not per sequence"),
        (smoothed_log_of_softmax, "log(0) = -inf"),
        (smoothed_naive_exp, "inf / inf is nan"),
        (smoothed_summed_over_classes, "do not sum it"),
        (smoothed_not_at_all, "plain cross-entropy"),
    ],
    "attention_map_count": [
        (given(LAYERS * HEADS), "of three kinds"),
        (given(2 * LAYERS * HEADS), "*two* attentions"),
        (given(3 * LAYERS), "has its own map"),
        (given(3 * HEADS), "count the 2 layers too"),
        (given(4 * LAYERS * HEADS), "not four"),
        (given(6 * LAYERS * HEADS), "not 2 of each per side"),
        (given(7), "count layers x heads for each kind"),
    ],
    "greedy_vs_beam": [  # (greedy's answer, the beam's answer); test_transformer.py counts the parts
        (given("b", "b"), "after <sos> that is 'a' (0.5)"),
        (given("ab", "b"), "after 'a' the most likely next token is <eos>"),
        (given("a", "a"), "b <eos> = 0.4 x 0.9 = 0.36"),
        (given("a", "ab"), "b <eos> = 0.4 x 0.9 = 0.36"),
    ],
}

TOLD = {
    "label_smoothed_loss": [
        (lambda logits, target, eps, pad_id: 0.5, "fail", "first difference"),  # a wrong float
        (
            lambda logits, target, eps, pad_id: right_smoothed_per_token(logits, target, eps),
            "fail",
            "expected shape ()",
        ),
    ],
    "attention_map_count": [(given("48 maps"), "fail", "expected a number")],
}


# ----------------------------------------------------------------------------- out of reach
def _by_cross_entropy(logits, target, eps, pad_id):
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, v), target.reshape(-1), label_smoothing=eps, ignore_index=pad_id
    )


def _by_loss_module(logits, target, eps, pad_id):
    loss = torch.nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=eps)
    return loss(logits.transpose(1, 2), target)


OUT_OF_REACH = {
    "label_smoothed_loss": [
        (_by_cross_entropy, "calls `F.cross_entropy`"),
        (_by_loss_module, "calls `F.cross_entropy`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "beam_step": [stub],
    "label_smoothed_loss": [stub],
    "attention_map_count": [given(...)],
    "greedy_vs_beam": [given(..., "b")],
}
_RAISED = (shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)")
CRASHES = {"beam_step": [_RAISED], "label_smoothed_loss": [_RAISED]}
