"""The checks of notebook 08 accept right answers and explain each typical wrong one.

The test of the global seed tries notebook 07's checks too."""

from __future__ import annotations

import pytest
import torch
from student_answers import assert_todo_then_error, crashes
from torch import nn

from attnlib import AttentionParams, check
from attnlib.check import bahdanau_attention
from tests.checks_shared import assert_hint

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
        (check.precomputed_scores, right_all_steps),
        (check.precomputed_scores, right_all_steps_einsum),
        (check.decoder_step, right_step),
        (check.decoder_step, lambda d, x, h, c, enc, m: d(x, h, c, enc, m)),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_per_step_reference_is_attnlibs_additive_score():
    """With keys as wide as the state (n = 2n is impossible, so U_a here takes H), W = [W_a | U_a] and
    b = 0 make AttentionParams score exactly what exercise 8.1's per-step reference scores."""
    torch.manual_seed(0)
    h, tq, ts = 4, 3, 5
    queries, keys = torch.randn(2, tq, h), torch.randn(2, ts, h)
    w_a, u_a, v_a = torch.randn(h, h), torch.randn(h, h), torch.randn(h)
    attention = AttentionParams(h)
    with torch.no_grad():
        attention.attn.weight.copy_(torch.cat((w_a, u_a), dim=1))
        attention.attn.bias.zero_()
        attention.v.copy_(v_a)
        expected = attention.score(queries, keys)  # (B, Tq, Ts)
    torch.testing.assert_close(bahdanau_attention._per_step_scores(queries, keys, w_a, u_a, v_a), expected)


def test_module_reference_is_attnlibs_attention_and_context():
    """Exercise 8.2's reference gives AttentionParams' weights (W = [W_a | U_a], b = 0) and their
    weighted sum of the keys, as DecoderWithAttention computes its context."""
    torch.manual_seed(1)
    h = 3
    query, keys = torch.randn(2, h), torch.randn(2, 5, h)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    params = {
        "W_a.weight": torch.randn(h, h),
        "U_a.weight": torch.randn(h, h),
        "v_a.weight": torch.randn(1, h),
    }
    attention = AttentionParams(h)
    with torch.no_grad():
        attention.attn.weight.copy_(torch.cat((params["W_a.weight"], params["U_a.weight"]), dim=1))
        attention.attn.bias.zero_()
        attention.v.copy_(params["v_a.weight"][0])
        weights = attention(query[None], keys, mask)  # (L=1, B, H) -> (B, Ts)
    cfg = {"query_size": h, "key_size": h, "attn_size": h}
    context, got = bahdanau_attention._reference_module(cfg, query, keys, mask, params)
    torch.testing.assert_close(got, weights)
    torch.testing.assert_close(context, torch.bmm(weights[:, None], keys)[:, 0])


# ----------------------------------------------------------------------------- typical mistakes


def all_steps(queries, keys, w_a, u_a, v_a, *, tanh=torch.tanh, w_t=True, u_t=True, pairs=False):
    q = queries @ (w_a.T if w_t else w_a)  # (B, Tq, n')
    k = keys @ (u_a.T if u_t else u_a)  # (B, Ts, n')
    return tanh(q + k if pairs else q[:, :, None] + k[:, None]) @ v_a


def step_context_first(decoder, x, hidden, cell, encoder_outputs, mask):
    embedded = decoder.embedding(x.unsqueeze(1))
    weights = decoder.attention(hidden, encoder_outputs, mask)
    context = torch.bmm(weights.unsqueeze(1), encoder_outputs)
    outputs, (hidden, cell) = decoder.rnn(torch.cat((context, embedded), dim=2), (hidden, cell))
    return decoder.fc(outputs.squeeze(1)), hidden, cell


WRONG = [
    (check.precomputed_scores, lambda *a: all_steps(*a, tanh=lambda t: t), "the tanh is missing"),
    (
        check.precomputed_scores,
        lambda *a: torch.tanh(all_steps(*a, tanh=lambda t: t)),
        "the tanh goes inside",
    ),
    (check.precomputed_scores, lambda *a: all_steps(*a).transpose(1, 2), "on the wrong axes"),
    (check.precomputed_scores, lambda *a: torch.softmax(all_steps(*a), dim=2), "before the softmax"),
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

FUNCTION_CHECKS = [check.precomputed_scores, check.decoder_step]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(check_fn, crashes, "raised AttributeError", "args[0].no_such_attribute")


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    notebooks_07_and_08 = [check.pad_batch, check.reverse_source, *FUNCTION_CHECKS, check.additive_module]
    for check_fn in notebooks_07_and_08:
        check_fn(lambda *args: None)
    check.decoder_step(right_step)
    check.precomputed_scores(right_all_steps)
    check.additive_module(MyAdditiveAttention)
    check.context_size(192, 192)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize("knob", ["w_t", "u_t"])
def test_a_forgotten_transpose_gets_its_hint_where_it_crashes_and_where_it_does_not(knob):
    verdict = check.precomputed_scores(lambda *a: all_steps(*a, **{knob: False}))
    assert not verdict and verdict.status == "error" and "Traceback" not in verdict.message
    assert "hint:" in verdict.message and "`queries @ W_a.T`" in verdict.message, verdict.message

    def square_cases_only(queries, keys, w_a, u_a, v_a):
        try:  # where the matrix is square the slip runs and gives wrong numbers
            return all_steps(queries, keys, w_a, u_a, v_a, **{knob: False})
        except RuntimeError:
            return right_all_steps(queries, keys, w_a, u_a, v_a)

    assert_hint(check.precomputed_scores, square_cases_only, "`queries @ W_a.T`")


def test_pairing_queries_with_keys_gets_its_hint_where_it_crashes_and_where_it_does_not():
    verdict = check.precomputed_scores(lambda *a: all_steps(*a, pairs=True))
    assert verdict.status == "error" and "each query must meet every key" in verdict.message

    def where_it_runs(*args):
        try:
            return all_steps(*args, pairs=True)
        except RuntimeError:
            return right_all_steps(*args)

    assert_hint(check.precomputed_scores, where_it_runs, "each query must meet every key")


def test_student_cannot_spoil_later_cases_by_editing_inputs_in_place():
    def edits_in_place(queries, keys, w_a, u_a, v_a):
        result = right_all_steps(queries, keys, w_a, u_a, v_a)
        keys.zero_()
        v_a.zero_()
        return result

    assert check.precomputed_scores(edits_in_place)


# ----------------------------------------------------------------------------- exercise 8.2: a module


class MyAdditiveAttention(nn.Module):
    """A right answer written the way a student would, with knobs for the typical slips."""

    tanh, sides, dim, masking, use_v, pool, order = True, "right", -1, "fill", True, "sum", "cw"

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


def module_slip(**knobs):
    return type("Slip", (MyAdditiveAttention,), knobs)


def test_additive_module_accepts_a_right_answer():
    verdict = check.additive_module(MyAdditiveAttention)
    assert verdict and verdict.status == "pass", verdict.message


@pytest.mark.parametrize(
    ("knobs", "hint"),
    [
        ({"tanh": False}, "the tanh is missing"),
        ({"sides": "swapped"}, "W_a and U_a are on the wrong sides"),
        ({"use_v": False}, "score with v_a"),
        ({"dim": 0}, "dim=0 mixes the sentences"),
        ({"masking": "none"}, "the mask is ignored"),
        ({"masking": "inverted"}, "the mask is inverted"),
        ({"masking": "after"}, "after the softmax"),
        ({"pool": "mean"}, "not the mean"),
        ({"pool": "unsqueezed"}, "squeeze the step axis"),
        ({"order": "wc"}, "in this order, (context, weights)"),
    ],
)
def test_additive_module_explains_typical_mistakes(knobs, hint):
    assert_hint(check.additive_module, module_slip(**knobs), hint)


def test_additive_module_names_missing_and_misshapen_parameters():
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

    for cls, hint in [
        (WithBias, "leaves them out"),
        (Transposed, "weight of shape (out, in)"),
        (OwnNames, "names"),
    ]:
        verdict = check.additive_module(cls)
        assert not verdict and "expected: W_a.weight" in verdict.message and hint in verdict.message


def test_additive_module_reports_what_is_not_a_module_class():
    assert "pass the class itself" in check.additive_module(MyAdditiveAttention(2, 4, 3)).message
    assert "expected a class" in check.additive_module(lambda q, k, m: None).message

    class NotAModule:
        pass

    assert "is not an nn.Module" in check.additive_module(NotAModule).message

    class OtherSignature(MyAdditiveAttention):
        def __init__(self, hidden_size):
            super().__init__(hidden_size, hidden_size, hidden_size)

    assert "passing each argument by that name" in check.additive_module(OtherSignature).message


def test_additive_module_stub_is_todo_and_crash_is_reported_without_traceback():
    class Stub(nn.Module):
        def __init__(self, query_size, key_size, attn_size):
            super().__init__()
            raise NotImplementedError

        def forward(self, query, keys, mask=None):
            raise NotImplementedError

    class Crashes(MyAdditiveAttention):
        def forward(self, query, keys, mask=None):
            return self.no_such_attribute

    todo = check.additive_module(Stub)
    assert todo.status == "todo" and todo.message.startswith("Not yet: ")
    error = check.additive_module(Crashes)
    assert (
        error.status == "error" and "no_such_attribute" in error.message and "Traceback" not in error.message
    )


def test_additive_module_leaves_the_global_seed_alone():
    state = torch.random.get_rng_state()
    check.additive_module(MyAdditiveAttention)
    check.additive_module(module_slip(masking="none"))
    assert torch.equal(state, torch.random.get_rng_state())
