"""Answers to the checks of notebook 08."""

from __future__ import annotations

import torch
from torch import nn

from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def right_all_steps(queries, keys, W_a, U_a, v_a):  # noqa: N803 (the paper's names)
    projected_keys = keys @ U_a.T  # (B, Ts, n'): once for every step
    projected_queries = queries @ W_a.T  # (B, Tq, n')
    return torch.tanh(projected_queries[:, :, None, :] + projected_keys[:, None, :, :]) @ v_a


def right_all_steps_einsum(queries, keys, W_a, U_a, v_a):  # noqa: N803
    energy = (
        torch.einsum("bqn,an->bqa", queries, W_a)[:, :, None]
        + torch.einsum("bkm,am->bka", keys, U_a)[:, None]
    )
    return torch.einsum("bqka,a->bqk", torch.tanh(energy), v_a)


def right_step(decoder, x, hidden, cell, encoder_outputs, mask):
    embedded = decoder.embedding(x.unsqueeze(1))  # (B, 1, d_hid)
    weights = decoder.attention(hidden, encoder_outputs, mask)  # (B, Ts)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, d_hid)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((embedded, context), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


class MyAdditiveAttention(nn.Module):
    """A right answer to 8.2 written the way a student would, with knobs for the typical slips."""

    tanh, sides, dim, masking, use_v, pool, order = True, "right", -1, "fill", True, "sum", "cw"
    normalise = "softmax"

    def __init__(self, query_size, key_size, attn_size):
        super().__init__()
        self.W_a = nn.Linear(query_size, attn_size, bias=False)
        self.U_a = nn.Linear(key_size, attn_size, bias=False)
        self.v_a = nn.Linear(attn_size, 1, bias=False)

    def forward(self, query, keys, mask=None):
        if self.sides == "swapped":
            energy = self.U_a(query)[:, None, :] + self.W_a(keys)
        else:
            energy = self.W_a(query)[:, None, :] + self.U_a(keys)  # (B, 1, n') + (B, Ts, n')
        energy = torch.tanh(energy) if self.tanh else energy
        scores = self.v_a(energy).squeeze(-1) if self.use_v else energy.sum(-1)  # (B, Ts)
        if self.masking == "fill":
            scores = scores.masked_fill(~mask, float("-inf"))
        elif self.masking == "inverted":
            scores = scores.masked_fill(mask, float("-inf"))
        if self.normalise == "sigmoid":  # a gate per position: rows do not sum to 1
            weights = torch.sigmoid(scores)  # masked scores (-inf) give 0
        else:
            weights = torch.softmax(scores, dim=self.dim)
        if self.dim != -1:  # a column of padding across the whole batch: nan, as the check's slip has it
            weights = weights.nan_to_num(0.0)
        if self.masking == "after":
            weights = weights * mask
        context = torch.bmm(weights.unsqueeze(1), keys)  # (B, 1, Ts) @ (B, Ts, 2n) -> (B, 1, 2n)
        if self.pool == "mean":
            context = (weights[..., None] * keys).mean(dim=1, keepdim=True)
        if self.pool != "unsqueezed":
            context = context.squeeze(1)
        return (context, weights) if self.order == "cw" else (weights, context)


RIGHT = {
    "precomputed_scores": [right_all_steps, right_all_steps_einsum],
    "decoder_step": [right_step],
    "additive_module": [MyAdditiveAttention],
}

# ----------------------------------------------------------------------------- typical mistakes


def all_steps(queries, keys, w_a, u_a, v_a, *, tanh=torch.tanh, w_t=True, u_t=True, pairs=False):
    q = queries @ (w_a.T if w_t else w_a)  # (B, Tq, n')
    k = keys @ (u_a.T if u_t else u_a)  # (B, Ts, n')
    return tanh(q + k if pairs else q[:, :, None] + k[:, None]) @ v_a


def buggy_step(decoder, x, hidden, cell, encoder_outputs, mask):
    """Exercise 8.3's planted bug: the mask is never passed to the attention."""
    embedded = decoder.embedding(x.unsqueeze(1))
    weights = decoder.attention(hidden, encoder_outputs)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((embedded, context), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


def step_context_first(decoder, x, hidden, cell, encoder_outputs, mask):
    embedded = decoder.embedding(x.unsqueeze(1))
    weights = decoder.attention(hidden, encoder_outputs, mask)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((context, embedded), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


def module_slip(**knobs):
    return type("Slip", (MyAdditiveAttention,), knobs)


WRONG = {
    "precomputed_scores": [
        (lambda *a: all_steps(*a, tanh=lambda t: t), "the tanh is missing"),
        (lambda *a: torch.tanh(all_steps(*a, tanh=lambda t: t)), "the tanh goes inside"),
        (lambda *a: all_steps(*a).transpose(1, 2), "on the wrong axes"),
        (lambda *a: torch.softmax(all_steps(*a), dim=2), "before the softmax"),
    ],
    "decoder_step": [
        (buggy_step, "this is still the bug"),
        (lambda d, x, h, c, o, m: right_step(d, x, h, c, o, ~m), "the mask is inverted"),
        (step_context_first, "[embedded; context] in this order"),
        (lambda d, x, h, c, o, m: (right_step(d, x, h, c, o, m)[0], h, c), "*new* hidden"),
        (lambda *a: (right_step(*a)[0], right_step(*a)[1], a[3]), "*new* cell"),
        (lambda *a: (right_step(*a)[0], *right_step(*a)[:0:-1]), "in the order (logits"),
        (lambda *a: right_step(*a)[0], "return three things"),
    ],
    "additive_module": [
        (module_slip(tanh=False), "the tanh is missing"),
        (module_slip(sides="swapped"), "W_a and U_a are on the wrong sides"),
        (module_slip(use_v=False), "score with v_a"),
        (module_slip(dim=0), "dim=0 mixes the sentences"),
        (module_slip(masking="none"), "the mask is ignored"),
        (module_slip(masking="inverted"), "the mask is inverted"),
        (module_slip(masking="after"), "after the softmax"),
        (module_slip(normalise="sigmoid"), "does not sum to 1 along the last axis"),
        (module_slip(pool="mean"), "not the mean"),
        (module_slip(pool="unsqueezed"), "squeeze the step axis"),
        (module_slip(order="wc"), "in this order, (context, weights)"),
    ],
}

# ----------------------------------------------------------------------------- refused in words


class WithBias(MyAdditiveAttention):
    def __init__(self, query_size, key_size, attn_size):
        super().__init__(query_size, key_size, attn_size)
        self.W_a = nn.Linear(query_size, attn_size)


class Transposed(MyAdditiveAttention):
    def __init__(self, query_size, key_size, attn_size):
        super().__init__(query_size, key_size, attn_size)
        self.U_a = nn.Linear(attn_size, key_size, bias=False)


class OwnNames(MyAdditiveAttention):
    def __init__(self, query_size, key_size, attn_size):
        super().__init__(query_size, key_size, attn_size)
        self.v = self.v_a
        del self.v_a


class NotAModule:
    pass


class OtherSignature(MyAdditiveAttention):
    def __init__(self, hidden_size):
        super().__init__(hidden_size, hidden_size, hidden_size)


class NoSuperInit(nn.Module):
    """Creates its layers before `super().__init__()`: nn.Module refuses the first one."""

    def __init__(self, query_size, key_size, attn_size):
        self.W_a = nn.Linear(query_size, attn_size, bias=False)
        super().__init__()

    def forward(self, query, keys, mask=None):
        return query


TOLD = {
    "additive_module": [
        # missing and misshapen parameters are named
        (WithBias, "fail", "expected: W_a.weight", "leaves them out"),
        (Transposed, "fail", "expected: W_a.weight", "weight of shape (out, in)"),
        (OwnNames, "fail", "expected: W_a.weight", "names"),
        # what is not a module class is said in words
        (MyAdditiveAttention(2, 4, 3), "fail", "pass the class itself"),
        (lambda q, k, m: None, "fail", "expected a class"),
        (NotAModule, "fail", "is not an nn.Module"),
        (OtherSignature, "fail", "passing each argument by that name"),
        (NoSuperInit, "error", "call `super().__init__()` first"),
    ],
}

# ----------------------------------------------------------------------------- out of reach
OUT_OF_REACH = {
    "decoder_step": [
        (lambda d, x, h, c, enc, m: d(x, h, c, enc, m), "calls attnlib's own `DecoderWithAttention.forward`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes


class Stub(nn.Module):
    def __init__(self, query_size, key_size, attn_size):
        super().__init__()
        raise NotImplementedError

    def forward(self, query, keys, mask=None):
        raise NotImplementedError


class Crashes(MyAdditiveAttention):
    def forward(self, query, keys, mask=None):
        return self.no_such_attribute


NOT_YET = {"precomputed_scores": [stub], "decoder_step": [stub], "additive_module": [Stub]}
_RAISED = (crashes, "raised AttributeError", "args[0].no_such_attribute")
CRASHES = {
    "precomputed_scores": [
        _RAISED,
        # a forgotten .T (W_a of shape (n', n) meets queries (.., n)) and queries that never meet every
        # key ((B, Tq, n') + (B, Ts, n')) crash on the first case: the error names the slip
        (lambda *a: all_steps(*a, w_t=False), "cannot be multiplied", "`queries @ W_a.T`"),
        (lambda *a: all_steps(*a, u_t=False), "cannot be multiplied", "`keys @ U_a.T`"),
        (lambda *a: all_steps(*a, pairs=True), "must match the size", "each query must meet every key"),
    ],
    "decoder_step": [_RAISED],
    "additive_module": [(Crashes, "no_such_attribute")],
}
