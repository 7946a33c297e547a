"""The checks of notebook 10 accept right answers and explain each typical wrong one.

The test of the global seed stays whole here: it tries notebook 11's checks too."""

from __future__ import annotations

import math

import pytest
import torch
from student_answers import assert_todo_then_error
from torch import nn

import attnlib
from attnlib import check
from attnlib.blocks import sinusoidal_encoding
from attnlib.check import transformer_blocks as blocks_checks
from attnlib.torch_reference import copy_encoder_layer
from attnlib.transformer import Transformer
from tests.checks_shared import assert_hint, shape_error
from tools import student

# ----------------------------------------------------------------------------- right answers


def right_shift(k, dim):
    half = dim // 2
    omega = 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim)  # (D/2,)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    m = torch.zeros(dim, dim)
    i = torch.arange(half)
    m[i, i], m[i, i + half] = c, s  # sin(a + b) = sin a cos b + cos a sin b
    m[i + half, i], m[i + half, i + half] = -s, c  # cos(a + b) = cos a cos b - sin a sin b
    return m


def paired_rotation(k, dim, sign=1.0):
    """R_k of the notebook: 2x2 blocks on the diagonal, for the table with pairs side by side."""
    r = torch.zeros(dim, dim)
    for i in range(dim // 2):
        a = k / 10000 ** (2 * i / dim)
        c, s = math.cos(a), sign * math.sin(a)
        r[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return r


def right_shift_by_permutation(k, dim):
    """The same matrix in another way: re-order the columns of the paired R_k."""
    order = torch.cat([torch.arange(0, dim, 2), torch.arange(1, dim, 2)])  # sines first, then cosines
    return paired_rotation(k, dim)[order][:, order]


def right_rms(x, gain, eps):
    return gain * x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps)


def torch_rms(x, gain, eps):
    norm = nn.RMSNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(gain)
        return norm(x)


def right_cross_mask(src, tgt, pad_id):
    real_keys = (src != pad_id)[:, None, None, :]  # (B, 1, 1, Ts): source token j is not padding
    return real_keys.expand(-1, -1, tgt.shape[1], -1)  # (B, 1, Tt, Ts): the same row for every query


def right_cross_mask_by_ones(src, tgt, pad_id):
    rows = torch.ones(tgt.shape[1], 1, dtype=torch.bool)  # (Tt, 1): every target query
    return rows & (src != pad_id)[:, None, None, :]  # (Tt, 1) & (B, 1, 1, Ts) -> (B, 1, Tt, Ts)


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.shift_matrix, right_shift),
        (check.shift_matrix, right_shift_by_permutation),
        (check.rms_norm, right_rms),
        (check.rms_norm, torch_rms),
        (check.cross_attention_mask, right_cross_mask),
        (check.cross_attention_mask, right_cross_mask_by_ones),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_cross_mask_reference_is_the_transformers_source_mask():
    src = torch.tensor([[3, 4, 5, 2, 0, 0], [3, 6, 7, 5, 4, 2]])
    tgt = torch.tensor([[1, 5, 6, 2], [1, 4, 0, 0]])
    torch.manual_seed(0)
    model = Transformer(8, 8, dim=8, n_heads=2, n_layers=1, hidden_dim=8, max_seq_len=16)
    reference = blocks_checks._reference_cross_mask(src, tgt, 0)  # (B, 1, Tt, Ts)
    assert reference.shape == (2, 1, 4, 6)
    assert torch.equal(reference, model.generate_mask(src, tgt)[0].expand(2, 1, 4, 6))
    assert torch.equal(reference, right_cross_mask(src, tgt, 0))


def test_cross_mask_reference_is_what_the_decoder_layer_needs():
    """The mask gives the same cross-attention as the (B, 1, 1, Ts) padding mask it expands."""
    src = torch.tensor([[3, 4, 2, 0, 0], [3, 6, 7, 5, 2]])
    tgt = torch.tensor([[1, 5, 6], [1, 4, 0]])
    torch.manual_seed(0)
    attention = attnlib.MultiHeadAttention(8, 8, 16, 0.0, 2, qkv_bias=True, causal=False)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    full = attention(x, memory, blocks_checks._reference_cross_mask(src, tgt, 0))
    torch.testing.assert_close(full, attention(x, memory, attnlib.padding_mask(src, 0)))


@pytest.mark.parametrize(("k", "dim"), [(1, 2), (3, 8), (-4, 16), (7, 64)])
def test_shift_matrix_reference_moves_the_sines_first_table(k, dim):
    table = blocks_checks.halves_encoding(60, dim)  # (T, D)
    moved = table[max(0, -k) : 60 - max(0, k)] @ blocks_checks._shift(k, dim).T  # rows: M_k PE[p]
    torch.testing.assert_close(moved, table[max(0, k) : 60 + min(0, k)], atol=1e-4, rtol=0)
    paired = sinusoidal_encoding(60, dim)  # the notebook's table holds the same numbers, paired
    order = torch.cat([torch.arange(0, dim, 2), torch.arange(1, dim, 2)])
    torch.testing.assert_close(table, paired[:, order])


def test_rms_norm_reference_agrees_with_torch_and_the_formula():
    gen = torch.Generator().manual_seed(0)
    x, gain = torch.randn(2, 3, 6, generator=gen) + 3, torch.randn(6, generator=gen)
    torch.testing.assert_close(blocks_checks._reference_rms_norm(x, gain, 1e-5), torch_rms(x, gain, 1e-5))
    torch.testing.assert_close(blocks_checks._reference_rms_norm(x, gain, 1e-5), right_rms(x, gain, 1e-5))


def test_encoder_layer_reference_is_pre_ln_with_distinct_norms():
    for args in (blocks_checks.LAYER_ARGS, (12, 3, 24, 0.2)):
        layer = blocks_checks._reference(False, *args)
        assert not layer.training and layer.norm_first
        assert not torch.equal(layer.attention_norm.gamma, layer.ffn_norm.gamma)
        x = torch.randn(2, 5, args[0])
        mask = attnlib.padding_mask(torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]), 0)
        h = x + layer.attention(layer.attention_norm(x), mask=mask)
        torch.testing.assert_close(layer(x, mask), h + layer.feed_forward(layer.ffn_norm(h)))


def test_pre_ln_encoder_layer_equals_torch():
    """The reference of 10.4 is PyTorch's pre-LN encoder layer, weight for weight."""
    layer = blocks_checks._reference(False, *blocks_checks.LAYER_ARGS)
    theirs = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=True, layer_norm_eps=1e-6)
    copy_encoder_layer(theirs, layer)
    x = torch.randn(2, 5, 8)
    mask = attnlib.padding_mask(torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]), 0)
    out = theirs.eval()(x, src_key_padding_mask=attnlib.to_masked_out(mask[:, 0, 0]))
    torch.testing.assert_close(layer(x, mask), out)


def test_decoder_layer_reference_is_post_ln_with_distinct_norms():
    for args in (blocks_checks.DECODER_ARGS, (12, 3, 24, 0.2)):
        layer = blocks_checks._reference(True, *args)
        assert not layer.training and not layer.norm_first
        gammas = [n.gamma for n in (layer.self_attn_norm, layer.cross_attn_norm, layer.ffn_norm)]
        assert not torch.equal(gammas[0], gammas[1]) and not torch.equal(gammas[1], gammas[2])


def test_decoder_experiment():
    """A shuffled target changes the outputs; a shuffled memory leaves them; only the identity commutes."""
    assert blocks_checks._decoder_experiment() == ("changed", "unchanged", 1)


def test_decoder_layer_ignores_the_memorys_order_but_not_the_targets():
    torch.manual_seed(0)
    layer = attnlib.DecoderLayer(8, 2, 16, dropout=0.0).eval()
    x, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    out = layer(x, memory)
    torch.testing.assert_close(layer(x, memory[:, [5, 2, 0, 1, 4, 3]]), out)
    swapped = layer(x[:, [1, 0, 2, 3]], memory)
    assert not torch.allclose(swapped[:, [1, 0]], out[:, :2], atol=1e-4)  # slots 0 and 1 see other prefixes
    torch.testing.assert_close(swapped[:, 2:], out[:, 2:])  # later slots see the same set of tokens


# ----------------------------------------------------------------------------- typical mistakes


def shift(k, dim, *, sign=1.0, speed=None, steps=None):
    """The sines-first shift matrix, optionally with the wrong sign, speeds or number of steps."""
    half = dim // 2
    omega = 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim) if speed is None else speed(dim)
    angle = (k if steps is None else steps) * omega
    c, s = torch.cos(angle), sign * torch.sin(angle)
    m = torch.zeros(dim, dim)
    i = torch.arange(half)
    m[i, i], m[i, i + half], m[i + half, i], m[i + half, i + half] = c, s, -s, c
    return m


def rms(x, gain, eps, *, centre=False, spread_around_mean=False, outside=False, root=True, dim=-1):
    x_top = x - x.mean(dim=dim, keepdim=True) if centre else x
    around = x - x.mean(dim=dim, keepdim=True) if spread_around_mean else x
    mean_square = (around**2).mean(dim=dim, keepdim=True)
    if outside:
        return gain * x_top / (mean_square.sqrt() + eps)
    return gain * x_top / ((mean_square + eps).sqrt() if root else mean_square + eps)


WRONG = [
    (check.shift_matrix, paired_rotation, "Here the sines come first"),
    (check.shift_matrix, lambda k, d: paired_rotation(k, d, sign=-1.0), "moves k positions *back*"),
    (check.shift_matrix, lambda k, d: shift(k, d, sign=-1.0), "moves k positions *back*"),
    (check.shift_matrix, lambda k, d: right_shift(k, d).T, "moves k positions *back*"),
    (check.shift_matrix, lambda k, d: right_shift(-k, d), "moves k positions *back*"),
    (check.shift_matrix, lambda k, d: shift(k, d, speed=lambda d: torch.ones(d // 2)), "its own speed"),
    (check.shift_matrix, lambda k, d: shift(k, d, steps=1), "that matrix moves one position"),
    (
        check.shift_matrix,
        lambda k, d: shift(k, d, speed=lambda d: 1 / 10000 ** (torch.arange(d // 2).float() / d)),
        "multiply by 2",
    ),
    (
        check.shift_matrix,
        lambda k, d: shift(k, d, speed=lambda d: 1 / 10000 ** (2 * torch.arange(0, d, 2).float() / d)),
        "do not double it",
    ),
    (
        check.rms_norm,
        lambda x, g, eps: nn.functional.layer_norm(x, x.shape[-1:], g, None, eps),
        "that is LayerNorm",
    ),
    (check.rms_norm, lambda *a: rms(*a, centre=True, spread_around_mean=True), "that is LayerNorm"),
    (
        check.rms_norm,
        lambda x, g, eps: g * x / torch.sqrt(x.var(-1, keepdim=True) + eps),
        "measure it around 0",
    ),
    (check.rms_norm, lambda *a: rms(*a, spread_around_mean=True), "measure it around 0"),
    (check.rms_norm, lambda *a: rms(*a, centre=True), "the numerator is x itself"),
    (check.rms_norm, lambda *a: rms(*a, outside=True), "eps goes inside the square root"),
    (check.rms_norm, lambda *a: rms(*a, root=False), "square *root*"),
    (
        check.rms_norm,
        lambda x, g, eps: g * x / torch.sqrt((x**2).sum(-1, keepdim=True) + eps),
        "not their sum",
    ),
    (check.rms_norm, lambda *a: rms(*a, dim=0), "over the last dimension only"),
    (check.rms_norm, lambda *a: rms(*a, dim=-2), "over the last dimension only"),
    (
        check.rms_norm,
        lambda x, g, eps: g * x / torch.sqrt((x**2).mean() + eps),
        "over the last dimension only",
    ),
    (check.rms_norm, lambda x, g, eps: x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps), "learned gain"),
    (check.cross_attention_mask, lambda s, t, p: ~right_cross_mask(s, t, p), "the mask is inverted"),
    (
        check.cross_attention_mask,
        lambda s, t, p: (s == p)[:, None, None, :].expand(-1, -1, t.shape[1], -1),
        "the mask is inverted",
    ),
    (check.cross_attention_mask, lambda s, t, p: (s != p)[:, None, None, :], "asks for the full grid"),
    (
        check.cross_attention_mask,
        lambda s, t, p: (
            right_cross_mask(s, t, p) & torch.ones(t.shape[1], s.shape[1], dtype=torch.bool).tril()
        ),
        "cross-attention is not causal",
    ),
    (
        check.cross_attention_mask,
        lambda s, t, p: (t != p)[:, None, None, :].expand(-1, -1, t.shape[1], -1),
        "take the padding from src",
    ),
    (
        check.cross_attention_mask,
        lambda s, t, p: (s != p)[:, None, :, None].expand(-1, -1, -1, t.shape[1]),
        "yours is the other way round",
    ),
    (
        check.cross_attention_mask,
        lambda s, t, p: (t != p)[:, None, :, None] & (s != p)[:, None, None, :],
        "you hid the padded target rows",
    ),
    (
        check.cross_attention_mask,
        lambda s, t, p: right_cross_mask(s, t, p)[:, 0],
        "keep an axis for the heads",
    ),
    (check.cross_attention_mask, lambda s, t, p: right_cross_mask(s, t, p).float(), "must be boolean"),
    (check.cross_attention_mask, lambda s, t, p: right_cross_mask(s, t, p).long(), "must be boolean"),
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.shift_matrix, check.rms_norm, check.cross_attention_mask]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(
        check_fn, shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)"
    )


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    for check_fn in (*FUNCTION_CHECKS, check.beam_step):
        check_fn(lambda *args: None)
    check.cross_attention_mask(right_cross_mask)
    check.attention_map_count(48)
    check.encoder_layer(RightLayer)
    check.decoder_layer(RightDecoder)
    blocks_checks._decoder_experiment.cache_clear()  # run the experiment itself, not its cached result
    check.decoder_shuffle("changed", "unchanged", 1)
    check.greedy_vs_beam("a", "b")
    assert torch.equal(state, torch.random.get_rng_state())


# ----------------------------------------------------------------------------- a pre-LN encoder layer


class RightLayer(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__()
        self.attention = attnlib.MultiHeadAttention(
            dim, dim, 64, dropout, n_heads, qkv_bias=True, causal=False
        )
        self.attention_norm = attnlib.LayerNorm(dim)
        self.feed_forward = attnlib.FeedForward(dim, hidden_dim, dropout)
        self.ffn_norm = attnlib.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        h = x + self.dropout(self.attention(self.attention_norm(x), mask=mask))
        return h + self.dropout(self.feed_forward(self.ffn_norm(h)))


class OtherNamesLayer(nn.Module):
    """Right, with PyTorch's LayerNorm, other names, another creation order and functional dropout."""

    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1, **unused):
        super().__init__()
        self.norm_b, self.norm_a = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = attnlib.FeedForward(dim, hidden_dim, dropout)
        self.mha = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, qkv_bias=True, causal=False)
        self.p = dropout

    def forward(self, x, mask):
        drop = lambda h: nn.functional.dropout(h, self.p, training=self.training)  # noqa: E731
        x = x + drop(self.mha(self.norm_a(x), mask=mask))
        return x + drop(self.mlp(self.norm_b(x)))


class PreLNEncoderLayer(attnlib.EncoderLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout, norm_first=True)


def slip(forward, **init):
    """RightLayer with one typical slip in its forward (and optionally its attention's arguments)."""

    class MyEncoderLayer(RightLayer):
        def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
            super().__init__(dim, n_heads, hidden_dim, dropout)
            if init:
                self.attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, **init)

    if forward is not None:
        MyEncoderLayer.forward = forward
    return MyEncoderLayer


def att(layer, h, mask):
    return layer.attention(h, mask=mask)


def normalised_residual(self, x, mask=None):
    n = self.attention_norm(x)
    h = n + att(self, n, mask)  # the residual adds norm(x), not x
    n = self.ffn_norm(h)
    return n + self.feed_forward(n)


LAYER_SLIPS = [
    (
        lambda s, x, m=None: s.ffn_norm((h := s.attention_norm(x + att(s, x, m))) + s.feed_forward(h)),
        "that is post-LN",
    ),
    (
        lambda s, x, m=None: (h := x + s.attention_norm(att(s, x, m))) + s.ffn_norm(s.feed_forward(h)),
        "not its output",
    ),
    (normalised_residual, "the residual path stays un-normalised"),
    (
        lambda s, x, m=None: s.feed_forward(s.ffn_norm(att(s, s.attention_norm(x), m))),
        "its residual connection",
    ),
    (
        lambda s, x, m=None: (h := att(s, s.attention_norm(x), m)) + s.feed_forward(s.ffn_norm(h)),
        "the attention sublayer lost its residual",
    ),
    (
        lambda s, x, m=None: s.feed_forward(s.ffn_norm(x + att(s, s.attention_norm(x), m))),
        "the feed-forward sublayer lost its residual",
    ),
    (
        lambda s, x, m=None: x + s.feed_forward(s.ffn_norm(x + att(s, s.attention_norm(x), m))),
        "the input *of its own sublayer*",
    ),
    (
        lambda s, x, m=None: (h := x + s.attention(s.attention_norm(x))) + s.feed_forward(s.ffn_norm(h)),
        "ignored",
    ),
    (
        lambda s, x, m=None: (h := x + att(s, s.attention_norm(x), m)) + s.feed_forward(s.attention_norm(h)),
        "you used the first one twice",
    ),
    (
        lambda s, x, m=None: (h := x + s.feed_forward(s.attention_norm(x))) + att(s, s.ffn_norm(h), m),
        "self-attention comes first",
    ),
]


def test_right_encoder_layers_pass():
    for layer_cls in (RightLayer, OtherNamesLayer, PreLNEncoderLayer):
        verdict = check.encoder_layer(layer_cls)
        assert verdict and verdict.status == "pass", (layer_cls, verdict.message)


@pytest.mark.parametrize(("forward", "hint"), LAYER_SLIPS)
def test_encoder_layer_slips_get_their_hint(forward, hint):
    verdict = check.encoder_layer(slip(forward))
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_the_post_ln_layer_of_the_notebook_gets_the_pre_ln_hint():
    verdict = check.encoder_layer(attnlib.EncoderLayer)
    assert not verdict and "that is post-LN" in verdict.message, verdict.message


def test_encoder_layer_causal_attention_and_dropout_in_eval_get_their_hint():
    causal = check.encoder_layer(slip(None, qkv_bias=True, causal=True))
    assert not causal and "causal=False" in causal.message, causal.message

    def dropping(self, x, mask=None):
        h = x + nn.functional.dropout(self.attention(self.attention_norm(x), mask=mask), 0.1)
        return h + self.feed_forward(self.ffn_norm(h))

    dropout = check.encoder_layer(slip(dropping))
    assert not dropout and "dropout is still active" in dropout.message, dropout.message
    assert "training=self.training" in dropout.message


class OneNorm(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        del self.ffn_norm

    def forward(self, x, mask=None):
        h = x + self.attention(self.attention_norm(x), mask=mask)
        return h + self.feed_forward(self.attention_norm(h))


class FinalNorm(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.final_norm = attnlib.LayerNorm(dim)

    def forward(self, x, mask=None):
        return self.final_norm(super().forward(x, mask))


class TorchAttention(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.attention = nn.MultiheadAttention(dim, n_heads, batch_first=True)


class OneHead(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, 1, hidden_dim, dropout)


class NoBias(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, causal=False)


class NarrowFeedForward(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.feed_forward = attnlib.FeedForward(dim, 4, dropout)


class NoSuper(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        self.attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, causal=False)


class TwoArguments(RightLayer):
    def __init__(self, dim, n_heads):
        super().__init__(dim, n_heads, 4 * dim)


class NotAModule:
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        pass


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (OneNorm, "found 1 LayerNorm"),
        (FinalNorm, "belongs to the stack"),
        (TorchAttention, "nn.MultiheadAttention is PyTorch's"),
        (OneHead, "num_heads=1"),
        (NoBias, "qkv_bias=True"),
        (NarrowFeedForward, "hidden_dim=16"),
        (NoSuper, "call `super().__init__()` first"),
        (TwoArguments, "your constructor takes `(dim, n_heads)`"),
        (RightLayer(8, 2, 16), "pass the class itself"),
        (NotAModule, "NotAModule is not an nn.Module: define it as class"),
        (right_cross_mask, "expected a class (class MyEncoderLayer(nn.Module): ...)"),
    ],
)
def test_encoder_layer_bad_input_gets_a_clear_message(answer, expected):
    verdict = check.encoder_layer(answer)
    assert not verdict and expected in verdict.message, verdict.message
    assert "Traceback" not in verdict.message


def test_encoder_layer_stub_is_todo_and_crash_is_reported_without_traceback():
    stub_source = student.stub_source(
        "class MyEncoderLayer(nn.Module):\n"
        "    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):\n"
        "        super().__init__()\n"
        "        self.norm = attnlib.LayerNorm(dim)\n\n"
        "    def forward(self, x, mask=None):\n"
        "        return self.norm(x)\n"
    )
    namespace = {"nn": nn, "attnlib": attnlib}
    exec(stub_source, namespace)
    todo = check.encoder_layer(namespace["MyEncoderLayer"])
    assert todo.status == "todo" and todo.message.startswith("Not yet: ")

    class ForwardStub(RightLayer):
        def forward(self, x, mask=None):
            raise NotImplementedError

    assert check.encoder_layer(ForwardStub).status == "todo"

    class Crashes(RightLayer):
        def forward(self, x, mask=None):
            return self.attention(x, mask=mask) @ self.feed_forward.w1.weight  # (B, T, D) @ (F, D)

    error = check.encoder_layer(Crashes)
    assert error.status == "error" and "Traceback" not in error.message
    assert "raised RuntimeError" in error.message and "self.feed_forward.w1.weight" in error.message


# ----------------------------------------------------------------------------- the decoder shuffle


def test_decoder_shuffle_prediction():
    assert check.decoder_shuffle("changed", "unchanged", 1).status == "pass"
    assert check.decoder_shuffle(" Changed", "UNCHANGED ", 1.0).status == "pass"
    assert check.decoder_shuffle(..., "unchanged", 1).status == "todo"
    assert check.decoder_shuffle("changed", "unchanged", ...).status == "todo"
    for answers, hint in [
        (("permuted", "unchanged", 1), "the causal mask belongs to the slots"),
        (("unchanged", "unchanged", 1), "the causal mask belongs to the slots"),
        (("changed", "permuted", 1), "the memory's rows are keys and values only"),
        (("changed", "changed", 1), "the memory's rows are keys and values only"),
        (("changed", "unchanged", 24), "not every order commutes"),
        (("changed", "unchanged", 0), "leaving the tokens where they are"),
        (("changed", "unchanged", 6), "the first slot must keep its token"),
        (("changed", "unchanged", 2), "the first slot must keep its token"),
    ]:
        verdict = check.decoder_shuffle(*answers)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message
    for odd in ("same", 3, None):
        verdict = check.decoder_shuffle(odd, "unchanged", 1)
        assert not verdict and "answer the first two with one of" in verdict.message
    for odd in ("one", 1.5, 25, -1, True):
        verdict = check.decoder_shuffle("changed", "unchanged", odd)
        assert not verdict and "a whole number from 0 to 24" in verdict.message, verdict.message


# ----------------------------------------------------------------------------- a post-LN decoder layer


class RightDecoder(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__()
        self.self_attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, qkv_bias=True)
        self.self_attn_norm = attnlib.LayerNorm(dim)
        self.cross_attention = attnlib.MultiHeadAttention(
            dim, dim, 64, dropout, n_heads, qkv_bias=True, causal=False
        )
        self.cross_attn_norm = attnlib.LayerNorm(dim)
        self.feed_forward = attnlib.FeedForward(dim, hidden_dim, dropout)
        self.ffn_norm = attnlib.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        h = self.self_attn_norm(x + self.dropout(self.self_attention(x, mask=tgt_mask)))
        h = self.cross_attn_norm(h + self.dropout(self.cross_attention(h, memory, src_mask)))
        return self.ffn_norm(h + self.dropout(self.feed_forward(h)))


class OtherNamesDecoder(nn.Module):
    """Right: PyTorch's norms, the cross-attention created first, keywords, a causal mask of its own."""

    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__()
        self.mix = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, qkv_bias=True, causal=False)
        self.read = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, qkv_bias=True, causal=False)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(3))
        self.mlp = attnlib.FeedForward(dim, hidden_dim, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        causal = attnlib.causal_mask(x.shape[1])
        own = causal if tgt_mask is None else attnlib.combine_masks(tgt_mask, causal)
        h = self.norms[2](x + self.drop(self.read(x, mask=own)))
        h = self.norms[0](h + self.drop(self.mix(h, memory=memory, mask=src_mask)))
        return self.norms[1](h + self.drop(self.mlp(h)))


def decoder_slip(forward, **self_init):
    """RightDecoder with one typical slip in its forward (or its self-attention's arguments)."""

    class MyDecoderLayer(RightDecoder):
        def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
            super().__init__(dim, n_heads, hidden_dim, dropout)
            if self_init:
                self.self_attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, **self_init)

    if forward is not None:
        MyDecoderLayer.forward = forward
    return MyDecoderLayer


def sa(s, h, m):
    return s.self_attention(h, mask=m)


def ca(s, h, memory, m):
    return s.cross_attention(h, memory, m)


DECODER_SLIPS = [
    (
        lambda s, x, mem, sm=None, tm=None: (
            (h := (h1 := x + sa(s, s.self_attn_norm(x), tm)) + ca(s, s.cross_attn_norm(h1), mem, sm))
            + s.feed_forward(s.ffn_norm(h))
        ),
        "that is pre-LN, x + sublayer(norm(x))",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: (
            (
                h := (h1 := x + sa(s, s.self_attn_norm(x), tm))
                + ca(s, (n := s.cross_attn_norm)(h1), n(mem), sm)
            )
            + s.feed_forward(s.ffn_norm(h))
        ),
        "normalised the memory as well",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm((h1 := s.self_attn_norm(x + sa(s, x, None))) + ca(s, h1, mem, sm)))
            + s.feed_forward(h)
        ),
        "ignores tgt_mask",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm((h1 := s.self_attn_norm(x + sa(s, x, tm))) + ca(s, h1, mem, None)))
            + s.feed_forward(h)
        ),
        "ignores src_mask",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm((h1 := s.self_attn_norm(x + sa(s, x, tm))) + ca(s, h1, h1, tm)))
            + s.feed_forward(h)
        ),
        "you attended to the target again",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm(s.self_attn_norm(x + sa(s, x, tm)) + ca(s, x, mem, sm)))
            + s.feed_forward(h)
        ),
        "queries come from the self-attention sublayer's output h",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm(x + ca(s, s.self_attn_norm(x + sa(s, x, tm)), mem, sm)))
            + s.feed_forward(h)
        ),
        "the input *of its own sublayer*",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            s.feed_forward(s.cross_attn_norm(ca(s, s.self_attn_norm(sa(s, x, tm)), mem, sm)))
        ),
        "needs its residual connection",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: (
            (h := (h1 := s.self_attn_norm(sa(s, x, tm)) + x) + s.cross_attn_norm(ca(s, h1, mem, sm)))
            + s.ffn_norm(s.feed_forward(h))
        ),
        "add the residual *before* the norm",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.self_attn_norm(
            (h := s.self_attn_norm((h1 := s.self_attn_norm(x + sa(s, x, tm))) + ca(s, h1, mem, sm)))
            + s.feed_forward(h)
        ),
        "you used the first one three times",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm((h1 := s.self_attn_norm(x + ca(s, x, mem, sm))) + sa(s, h1, tm)))
            + s.feed_forward(h)
        ),
        "masked self-attention comes first",
    ),
    (
        lambda s, x, mem, sm=None, tm=None: s.ffn_norm(
            (h := s.cross_attn_norm((h1 := s.self_attn_norm(x + sa(s, x, tm))) + s.feed_forward(h1)))
            + ca(s, h, mem, sm)
        ),
        "the feed-forward is last",
    ),
]


def test_right_decoder_layers_pass():
    for layer_cls in (RightDecoder, OtherNamesDecoder, attnlib.DecoderLayer):
        verdict = check.decoder_layer(layer_cls)
        assert verdict and verdict.status == "pass", (layer_cls, verdict.message)


@pytest.mark.parametrize(("forward", "hint"), DECODER_SLIPS)
def test_decoder_layer_slips_get_their_hint(forward, hint):
    verdict = check.decoder_layer(decoder_slip(forward))
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_decoder_layer_without_a_causal_self_attention_gets_its_hint():
    verdict = check.decoder_layer(decoder_slip(None, qkv_bias=True, causal=False))
    assert not verdict and "build it with causal=True" in verdict.message, verdict.message


def test_decoder_layer_dropout_in_eval_gets_its_hint():
    def dropping(self, x, memory, src_mask=None, tgt_mask=None):
        h = self.self_attn_norm(x + nn.functional.dropout(self.self_attention(x, mask=tgt_mask), 0.1))
        h = self.cross_attn_norm(h + self.cross_attention(h, memory, src_mask))
        return self.ffn_norm(h + self.feed_forward(h))

    verdict = check.decoder_layer(decoder_slip(dropping))
    assert not verdict and "dropout is still active" in verdict.message, verdict.message


class OneAttention(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.cross_attention = self.self_attention  # one module, registered twice


class BothCausal(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.cross_attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, qkv_bias=True)


class TwoNorms(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.cross_attn_norm = self.self_attn_norm


class TorchCross(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.cross_attention = nn.MultiheadAttention(dim, n_heads, batch_first=True)


class NoBiasCross(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.cross_attention = attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, causal=False)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (OneAttention, "found 1 attnlib.MultiHeadAttention"),
        (TorchCross, "nn.MultiheadAttention is PyTorch's"),
        (BothCausal, "must be built with causal=False"),
        (TwoNorms, "found 2 LayerNorm"),
        (NoBiasCross, "qkv_bias=True"),
        (TwoArguments, "your constructor takes `(dim, n_heads)`"),
        (RightDecoder(8, 2, 16), "pass the class itself"),
        (NotAModule, "NotAModule is not an nn.Module: define it as class"),
    ],
)
def test_decoder_layer_bad_input_gets_a_clear_message(answer, expected):
    verdict = check.decoder_layer(answer)
    assert not verdict and expected in verdict.message, verdict.message
    assert "Traceback" not in verdict.message


def test_decoder_layer_stub_is_todo_and_crash_is_reported_without_traceback():
    stub_source = student.stub_source(
        "class MyDecoderLayer(nn.Module):\n"
        "    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):\n"
        "        super().__init__()\n"
        "        self.norm = attnlib.LayerNorm(dim)\n\n"
        "    def forward(self, x, memory, src_mask=None, tgt_mask=None):\n"
        "        return self.norm(x)\n"
    )
    namespace = {"nn": nn, "attnlib": attnlib}
    exec(stub_source, namespace)
    todo = check.decoder_layer(namespace["MyDecoderLayer"])
    assert todo.status == "todo" and todo.message.startswith("Not yet: ")

    class ForwardStub(RightDecoder):
        def forward(self, x, memory, src_mask=None, tgt_mask=None):
            raise NotImplementedError

    assert check.decoder_layer(ForwardStub).status == "todo"

    class Crashes(RightDecoder):
        def forward(self, x, memory, src_mask=None, tgt_mask=None):
            return (
                self.cross_attention(x, memory, src_mask) @ self.feed_forward.w1.weight
            )  # (B, Tt, D) @ (F, D)

    error = check.decoder_layer(Crashes)
    assert error.status == "error" and "Traceback" not in error.message
    assert "raised RuntimeError" in error.message and "self.feed_forward.w1.weight" in error.message
