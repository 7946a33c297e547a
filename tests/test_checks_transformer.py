"""The checks of notebooks 09-10 accept right answers and explain each typical wrong one."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from student_answers import assert_todo_then_error
from torch import nn

import attnlib
from attnlib import check
from attnlib.blocks import sinusoidal_encoding
from attnlib.check import transformer as tr_checks
from attnlib.transformer import Transformer

# ----------------------------------------------------------------------------- right answers


def right_pe(max_len, dim):
    position = torch.arange(max_len, dtype=torch.float)[:, None]  # (T, 1)
    omega = 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim)  # (D/2,)
    pe = torch.zeros(max_len, dim)
    pe[:, 0::2] = torch.sin(position * omega)
    pe[:, 1::2] = torch.cos(position * omega)
    return pe


def right_pe_stacked(max_len, dim):
    angles = torch.arange(max_len)[:, None] * torch.exp(-torch.arange(0, dim, 2) / dim * math.log(10000))
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(max_len, dim)  # (T, D/2, 2) -> (T, D)


def right_ln(x, gamma, beta, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def torch_ln(x, gamma, beta, eps):
    return nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)


def right_mask(tgt, pad_id):
    t = tgt.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril()  # (Tt, Tt)
    return (tgt != pad_id)[:, None, None, :] & causal  # (B, 1, 1, Tt) & (Tt, Tt) -> (B, 1, Tt, Tt)


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


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.positional_encoding, right_pe),
        (check.positional_encoding, right_pe_stacked),
        (check.positional_encoding, sinusoidal_encoding),
        (check.layer_norm, right_ln),
        (check.layer_norm, torch_ln),
        (check.decoder_self_mask, right_mask),
        (
            check.decoder_self_mask,
            lambda t, p: attnlib.combine_masks(attnlib.padding_mask(t, p), attnlib.causal_mask(t.shape[1])),
        ),
        (check.beam_step, right_beam),
        (check.beam_step, right_beam_sorted),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_beam_step_reference_keeps_the_k_best_sequences():
    """Iterated from one live beam with K large enough to keep every prefix, the step ends with
    exactly the K most likely sequences (found by enumerating all of them) and their totals."""
    gen = torch.Generator().manual_seed(0)
    k, v, steps = 9, 3, 3  # K = V ** (steps - 1): no prefix is ever dropped, so the search is exact
    table = torch.log_softmax(torch.randn(v, v, generator=gen) * 2, dim=-1)  # next token | last token
    scores = torch.tensor([[0.0] + [float("-inf")] * (k - 1)])  # (1, K)
    prefixes = [[0] for _ in range(k)]  # every sequence starts with token 0
    for _ in range(steps):
        log_probs = table[[p[-1] for p in prefixes]][None]  # (1, K, V)
        scores, beam, token = tr_checks._reference_beam_step(scores, log_probs)
        prefixes = [prefixes[b] + [t] for b, t in zip(beam[0].tolist(), token[0].tolist(), strict=True)]
    every = {
        seq: sum(table[a, b].item() for a, b in itertools.pairwise((0, *seq)))
        for seq in itertools.product(range(v), repeat=steps)
    }
    best = sorted(every.items(), key=lambda item: -item[1])[:k]
    assert [tuple(p[1:]) for p in prefixes] == [seq for seq, _ in best]
    torch.testing.assert_close(scores[0], torch.tensor([s for _, s in best]))


def test_decoder_mask_reference_is_the_transformers():
    tgt = torch.tensor([[1, 5, 6, 2, 0], [1, 4, 2, 0, 0]])
    torch.manual_seed(0)
    model = Transformer(8, 8, dim=8, n_heads=2, n_layers=1, hidden_dim=8, max_seq_len=16)
    assert torch.equal(tr_checks._reference_decoder_mask(tgt, 0), model.generate_mask(tgt, tgt)[1])
    assert torch.equal(tr_checks._reference_decoder_mask(tgt, 0), right_mask(tgt, 0))


def test_layer_norm_reference_agrees_with_torch():
    gen = torch.Generator().manual_seed(0)
    x, gamma, beta = (
        torch.randn(2, 3, 6, generator=gen),
        torch.randn(6, generator=gen),
        torch.randn(6, generator=gen),
    )
    torch.testing.assert_close(
        tr_checks._reference_layer_norm(x, gamma, beta, 1e-5), torch_ln(x, gamma, beta, 1e-5)
    )


def test_the_toy_table_runs_through_attnlibs_decoders():
    assert tr_checks._decode_table(None) == "a"  # greedy
    assert tr_checks._decode_table(1) == "a"  # a beam of 1 is greedy
    assert tr_checks._decode_table(2) == "b"
    assert tr_checks._sequence_probability("a") == pytest.approx(0.5 * 0.4)
    assert tr_checks._sequence_probability("b") == pytest.approx(0.4 * 0.9)
    assert tr_checks._table().sum(dim=-1).allclose(torch.ones(len(tr_checks.TABLE_TOKENS)))


# ----------------------------------------------------------------------------- typical mistakes


def pe(max_len, dim, *, swap=False, first=0, halves=False, exponent=None, column=False, times=False):
    position = torch.arange(first, first + max_len, dtype=torch.float)[:, None]
    two_i = torch.arange(0, dim, 2).float() if exponent is None else exponent(dim)
    if column:
        two_i = torch.arange(dim).float()
    rate = 10000 ** (two_i / dim) if times else 1 / 10000 ** (two_i / dim)
    angles = position * rate
    sin, cos = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if halves:
        return torch.cat([sin(angles), cos(angles)], dim=1)
    out = torch.zeros(max_len, dim)
    if column:
        out[:, 0::2], out[:, 1::2] = sin(angles[:, 0::2]), cos(angles[:, 1::2])
    else:
        out[:, 0::2], out[:, 1::2] = sin(angles), cos(angles)
    return out


def ln(x, gamma, beta, eps, *, dim=-1, unbiased=False, outside=False, affine=True, swap=False):
    mean = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    x_hat = (x - mean) / (var.sqrt() + eps if outside else (var + eps).sqrt())
    if not affine:
        return x_hat
    return beta * x_hat + gamma if swap else gamma * x_hat + beta


def causal(tgt):
    t = tgt.shape[1]
    return torch.ones(t, t, dtype=torch.bool).tril()


def keys(tgt, pad_id):
    return (tgt != pad_id)[:, None, None, :]


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


WRONG = [
    (check.positional_encoding, lambda t, d: pe(t, d, swap=True), "sine and cosine are swapped"),
    (check.positional_encoding, lambda t, d: pe(t, d, first=1), "the first position is 0"),
    (check.positional_encoding, lambda t, d: pe(t, d, halves=True), "interleave sines and cosines"),
    (
        check.positional_encoding,
        lambda t, d: pe(t, d, exponent=lambda d: torch.arange(d // 2).float()),
        "multiply by 2",
    ),
    (
        check.positional_encoding,
        lambda t, d: pe(t, d, exponent=lambda d: 2 * torch.arange(0, d, 2).float()),
        "do not double it",
    ),
    (check.positional_encoding, lambda t, d: pe(t, d, column=True), "share one frequency"),
    (check.positional_encoding, lambda t, d: pe(t, d, times=True), "do not multiply"),
    (
        check.layer_norm,
        lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) + b,
        "unbiased* by default",
    ),
    (
        check.layer_norm,
        lambda x, g, b, eps: (
            g * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, correction=0) + eps) + b
        ),
        "eps goes inside the square root",
    ),
    (check.layer_norm, lambda *a: ln(*a, unbiased=True), "divides by D, not D - 1"),
    (check.layer_norm, lambda *a: ln(*a, outside=True), "eps goes inside the square root"),
    (check.layer_norm, lambda x, g, b, eps: ln(x, g, b, 0.0), "eps is missing"),
    (check.layer_norm, lambda *a: ln(*a, dim=0), "over the last dimension only"),
    (check.layer_norm, lambda *a: ln(*a, dim=-2), "over the last dimension only"),
    (
        check.layer_norm,
        lambda x, g, b, eps: g * (x - x.mean()) / (x.var(unbiased=False) + eps).sqrt() + b,
        "over the last dimension only",
    ),
    (check.layer_norm, lambda *a: ln(*a, affine=False), "gamma * x_hat + beta"),
    (check.layer_norm, lambda *a: ln(*a, swap=True), "not the other way round"),
    (check.decoder_self_mask, lambda t, p: ~right_mask(t, p), "the mask is inverted"),
    (
        check.decoder_self_mask,
        lambda t, p: causal(t)[None, None].expand(t.shape[0], 1, -1, -1).clone(),
        "padded keys must be hidden too",
    ),
    (check.decoder_self_mask, lambda t, p: causal(t)[None, None], "padded keys must be hidden too"),
    (check.decoder_self_mask, lambda t, p: keys(t, p).expand(-1, -1, t.shape[1], -1), "must not look ahead"),
    (check.decoder_self_mask, keys, "must not look ahead"),
    (check.decoder_self_mask, lambda t, p: keys(t, p) | causal(t), "combine the two with &"),
    (check.decoder_self_mask, lambda t, p: keys(t, p) & causal(t).logical_not(), "the mask is inverted"),
    (
        check.decoder_self_mask,
        lambda t, p: keys(t, p) & torch.ones_like(causal(t)).triu(),
        "*lower* triangle",
    ),
    (
        check.decoder_self_mask,
        lambda t, p: (t != p)[:, None, :, None] & causal(t),
        "you hid the padded query rows",
    ),
    (
        check.decoder_self_mask,
        lambda t, p: keys(t, p) & keys(t, p).transpose(-1, -2) & causal(t),
        "you hid the padded query rows",
    ),
    (check.decoder_self_mask, lambda t, p: (t != p)[:, None, :] & causal(t), "keep an axis for the heads"),
    (check.decoder_self_mask, lambda t, p: right_mask(t, p).float(), "must be boolean"),
    (check.decoder_self_mask, lambda t, p: right_mask(t, p).int().long(), "must be boolean"),
    (check.beam_step, beam_forgot_score, "add each beam's running score first"),
    (check.beam_step, beam_per_beam, "not the best token of each beam"),
    (check.beam_step, beam_swapped, "you swapped them"),
    (check.beam_step, beam_by_k, "not by K"),
    (check.beam_step, beam_step_scores, "return the new running scores"),
    (check.beam_step, beam_multiplied, "log-probabilities add up"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    verdict = check_fn(wrong)
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


# ----------------------------------------------------------------------------- predictions


def test_attention_map_count_prediction():
    layers, heads = 2, 8
    expected = 3 * layers * heads  # encoder self, decoder self, cross: one map per layer and head
    torch.manual_seed(0)
    model = Transformer(10, 10, dim=64, n_heads=heads, n_layers=layers, hidden_dim=128, dropout=0.0)
    model(torch.tensor([[5, 6, 7], [5, 0, 0]]), torch.tensor([[1, 4, 4, 2], [1, 4, 2, 0]]))
    assert sum(w.shape[1] * w.shape[2] for w in model.attention_weights().values()) == expected
    assert check.attention_map_count(expected).status == "pass"
    assert check.attention_map_count(float(expected)).status == "pass"
    assert check.attention_map_count(...).status == "todo"
    for wrong, hint in [
        (layers * heads, "of three kinds"),
        (2 * layers * heads, "*two* attentions"),
        (3 * layers, "has its own map"),
        (3 * heads, "count the 2 layers too"),
        (4 * layers * heads, "not four"),
        (6 * layers * heads, "not 2 of each per side"),
        (7, "count layers x heads for each kind"),
        ("48 maps", "count layers x heads for each kind"),
    ]:
        verdict = check.attention_map_count(wrong)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, (
            wrong,
            verdict.message,
        )


def test_greedy_vs_beam_prediction():
    assert check.greedy_vs_beam("a", "b").status == "pass"
    assert check.greedy_vs_beam("a <eos>", ["b"]).status == "pass"
    assert check.greedy_vs_beam(..., "b").status == "todo"
    for greedy, beam, hint in [
        ("b", "b", "after <sos> that is 'a' (0.5)"),
        ("ab", "b", "after 'a' the most likely next token is <eos>"),
        ("a", "a", "b <eos> = 0.4 x 0.9 = 0.36"),
        ("a", "ab", "b <eos> = 0.4 x 0.9 = 0.36"),
    ]:
        verdict = check.greedy_vs_beam(greedy, beam)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message
        assert verdict.message.count("❌") == 1 + (greedy != "a") + (beam != "b")


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.positional_encoding, check.layer_norm, check.decoder_self_mask, check.beam_step]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    def crashes(*args):
        return torch.zeros(2, 3) @ torch.zeros(4, 5)  # a shape error in the student's code

    assert_todo_then_error(check_fn, crashes, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)")


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    for check_fn in FUNCTION_CHECKS:
        check_fn(lambda *args: None)
    check.decoder_self_mask(right_mask)
    check.attention_map_count(48)
    check.greedy_vs_beam("a", "b")
    assert torch.equal(state, torch.random.get_rng_state())
