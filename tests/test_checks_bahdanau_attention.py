"""The checks of notebook 08 accept right answers and explain each typical wrong one.

The test of the global seed stays whole here: it tries notebooks 07 and 09's checks too."""

from __future__ import annotations

import pytest
import torch
from student_answers import assert_todo_then_error, crashes

from attnlib import AttentionParams, DecoderWithAttention, check
from attnlib.check import bahdanau_attention
from tests.checks_shared import assert_hint

# ----------------------------------------------------------------------------- right answers


def right_additive(query, keys, weight, bias, v):
    repeated = query[:, None, :].expand(-1, keys.shape[1], -1)  # (B, Ts, H)
    return torch.tanh(torch.cat((repeated, keys), dim=2) @ weight.T + bias) @ v  # (B, Ts)


def right_additive_linear(query, keys, weight, bias, v):
    h = keys.shape[-1]
    return torch.tanh(query[:, None, :] @ weight[:, :h].T + keys @ weight[:, h:].T + bias) @ v


def right_context(scores, encoder_outputs, mask):
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, Ts)
    return (weights[..., None] * encoder_outputs).sum(dim=1)  # (B, H)


def right_step(decoder, x, hidden, cell, encoder_outputs, mask):
    embedded = decoder.embedding(x.unsqueeze(1))  # (B, 1, H)
    weights = decoder.attention(hidden, encoder_outputs, mask)  # (B, Ts)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, H)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((embedded, context), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


def buggy_step(decoder, x, hidden, cell, encoder_outputs, mask):
    """Exercise 8.3's planted bug: the mask is never passed to the attention."""
    embedded = decoder.embedding(x.unsqueeze(1))
    weights = decoder.attention(hidden, encoder_outputs)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((embedded, context), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.additive_scores, right_additive),
        (check.additive_scores, right_additive_linear),
        (check.attention_context, right_context),
        (check.decoder_step, right_step),
        (check.decoder_step, lambda d, x, h, c, enc, m: d(x, h, c, enc, m)),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_context_reference_is_what_the_decoder_computes():
    torch.manual_seed(0)
    decoder = DecoderWithAttention(9, 4, 1, AttentionParams(4))
    hidden, cell = torch.randn(1, 2, 4), torch.randn(1, 2, 4)
    outputs, x = torch.randn(2, 5, 4), torch.tensor([3, 4])
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    scores = decoder.attention.score(hidden[-1][:, None, :], outputs)[:, 0]  # (B, Ts)
    context = bahdanau_attention._reference_context(scores, outputs, mask)  # (B, H)
    rnn_input = torch.cat((decoder.embedding(x[:, None]), context[:, None]), dim=2)  # (B, 1, 2H)
    states, (h, c) = decoder.rnn(rnn_input, (hidden, cell))
    logits, h_ref, c_ref = decoder(x, hidden, cell, outputs, mask)
    torch.testing.assert_close(decoder.fc(states[:, 0]), logits)
    torch.testing.assert_close((h, c), (h_ref, c_ref))


# ----------------------------------------------------------------------------- typical mistakes


def additive(query, keys, weight, bias, v, *, order="qk", tanh=torch.tanh, with_bias=True):
    repeated = query[:, None, :].expand(-1, keys.shape[1], -1)
    pair = (repeated, keys) if order == "qk" else (keys, repeated)
    return tanh(torch.cat(pair, dim=2) @ weight.T + (bias if with_bias else 0)) @ v


def context_of(weights, outputs):
    return (weights[..., None] * outputs).sum(dim=1)


def step_context_first(decoder, x, hidden, cell, encoder_outputs, mask):
    embedded = decoder.embedding(x.unsqueeze(1))
    weights = decoder.attention(hidden, encoder_outputs, mask)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((context, embedded), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


WRONG = [
    (check.additive_scores, lambda *a: additive(*a, order="kq"), "the concatenation order matters"),
    (check.additive_scores, lambda *a: additive(*a, tanh=lambda t: t), "the tanh is missing"),
    (check.additive_scores, lambda *a: additive(*a, with_bias=False), "add the bias b"),
    (check.additive_scores, lambda *a: torch.tanh(additive(*a, tanh=lambda t: t)), "the tanh goes inside"),
    (check.additive_scores, lambda *a: torch.softmax(additive(*a), dim=1), "before the softmax"),
    (
        check.attention_context,
        lambda s, o, m: context_of(torch.softmax(s, 1), o),
        "padded positions got weight",
    ),
    (
        check.attention_context,
        lambda s, o, m: context_of(torch.softmax(s.masked_fill(m, float("-inf")), 1), o),
        "the mask is inverted",
    ),
    (
        check.attention_context,
        lambda s, o, m: context_of(torch.softmax(s.masked_fill(~m, float("-inf")), 0), o),
        "dim=0 mixes the sentences",
    ),
    (check.attention_context, lambda s, o, m: context_of(torch.softmax(s, 1) * m, o), "after the softmax"),
    (check.attention_context, lambda s, o, m: context_of(s * m, o), "the scores must become weights"),
    (
        check.attention_context,
        lambda s, o, m: (torch.softmax(s.masked_fill(~m, float("-inf")), 1)[..., None] * o).mean(1),
        "not the mean",
    ),
    (
        check.attention_context,
        lambda s, o, m: torch.softmax(s.masked_fill(~m, float("-inf")), 1)[:, None] @ o,
        "squeeze the step axis",
    ),
    (check.decoder_step, buggy_step, "this is still the bug"),
    (check.decoder_step, lambda d, x, h, c, o, m: right_step(d, x, h, c, o, ~m), "the mask is inverted"),
    (check.decoder_step, step_context_first, "[embedded; context] in this order"),
    (check.decoder_step, lambda d, x, h, c, o, m: (right_step(d, x, h, c, o, m)[0], h, c), "*new* hidden"),
    (check.decoder_step, lambda *a: (right_step(*a)[0], right_step(*a)[1], a[3]), "*new* cell"),
    (check.decoder_step, lambda *a: (right_step(*a)[0], *right_step(*a)[:0:-1]), "in the order (logits"),
    (check.decoder_step, lambda *a: right_step(*a)[0], "return three things"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.additive_scores, check.attention_context, check.decoder_step]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised AttributeError", "args[0].no_such_attribute")


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    notebooks_07_to_09 = [
        check.pad_batch,
        check.reverse_source,
        *FUNCTION_CHECKS,
        check.general_scores,
        check.local_p_position,
        check.local_p_weights,
    ]
    for check_fn in notebooks_07_to_09:
        check_fn(lambda *args: None)
    check.decoder_step(right_step)
    check.additive_scores(right_additive)
    check.context_size(192, 192)
    check.scorer_parameters(["dot"], 0)
    assert torch.equal(state, torch.random.get_rng_state())


def test_student_cannot_spoil_later_cases_by_editing_inputs_in_place():
    def edits_in_place(scores, encoder_outputs, mask):
        result = right_context(scores, encoder_outputs, mask)
        mask.fill_(False)
        encoder_outputs.zero_()
        return result

    assert check.attention_context(edits_in_place)
