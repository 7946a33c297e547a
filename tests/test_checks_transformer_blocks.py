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


def right_mask(tgt, pad_id):
    t = tgt.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril()  # (Tt, Tt)
    return (tgt != pad_id)[:, None, None, :] & causal  # (B, 1, 1, Tt) & (Tt, Tt) -> (B, 1, Tt, Tt)


@pytest.mark.parametrize(
    ("check_fn", "answer"),
    [
        (check.shift_matrix, right_shift),
        (check.shift_matrix, right_shift_by_permutation),
        (check.rms_norm, right_rms),
        (check.rms_norm, torch_rms),
        (check.decoder_self_mask, right_mask),
        (
            check.decoder_self_mask,
            lambda t, p: attnlib.combine_masks(attnlib.padding_mask(t, p), attnlib.causal_mask(t.shape[1])),
        ),
    ],
)
def test_right_answers_pass(check_fn, answer):
    verdict = check_fn(answer)
    assert verdict and verdict.status == "pass", verdict.message


# ----------------------------------------------------------------------------- the references


def test_decoder_mask_reference_is_the_transformers():
    tgt = torch.tensor([[1, 5, 6, 2, 0], [1, 4, 2, 0, 0]])
    torch.manual_seed(0)
    model = Transformer(8, 8, dim=8, n_heads=2, n_layers=1, hidden_dim=8, max_seq_len=16)
    assert torch.equal(blocks_checks._reference_decoder_mask(tgt, 0), model.generate_mask(tgt, tgt)[1])
    assert torch.equal(blocks_checks._reference_decoder_mask(tgt, 0), right_mask(tgt, 0))


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


def test_encoder_layer_reference_is_post_ln_with_distinct_norms():
    for args in (blocks_checks.LAYER_ARGS, (12, 3, 24, 0.2)):
        layer = blocks_checks._reference_layer(*args)
        assert not layer.training and not layer.norm_first
        assert not torch.equal(layer.attention_norm.gamma, layer.ffn_norm.gamma)
        x = torch.randn(2, 5, args[0])
        mask = attnlib.padding_mask(torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]), 0)
        h = layer.attention_norm(x + layer.attention(x, mask=mask))
        torch.testing.assert_close(layer(x, mask), layer.ffn_norm(h + layer.feed_forward(h)))


def test_shuffle_experiment_finds_equivariance_without_positions_only():
    assert blocks_checks._shuffle_outcome(False) == "permuted"
    assert blocks_checks._shuffle_outcome(True) == "changed"


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


def causal(tgt):
    t = tgt.shape[1]
    return torch.ones(t, t, dtype=torch.bool).tril()


def keys(tgt, pad_id):
    return (tgt != pad_id)[:, None, None, :]


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
]


@pytest.mark.parametrize(("check_fn", "wrong", "hint"), WRONG)
def test_typical_mistakes_get_their_hint(check_fn, wrong, hint):
    assert_hint(check_fn, wrong, hint)


# ----------------------------------------------------------------------------- not yet / crashes

FUNCTION_CHECKS = [check.shift_matrix, check.rms_norm, check.decoder_self_mask]


@pytest.mark.parametrize("check_fn", FUNCTION_CHECKS)
def test_stub_is_todo_and_crash_is_reported_without_traceback(check_fn):
    assert_todo_then_error(
        check_fn, shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)"
    )


def test_checks_leave_the_global_seed_alone():
    state = torch.random.get_rng_state()
    for check_fn in (*FUNCTION_CHECKS, check.beam_step):
        check_fn(lambda *args: None)
    check.decoder_self_mask(right_mask)
    check.attention_map_count(48)
    check.encoder_layer(RightLayer)
    check.shuffled_tokens("permuted", "changed")
    check.greedy_vs_beam("a", "b")
    assert torch.equal(state, torch.random.get_rng_state())


# ----------------------------------------------------------------------------- a whole encoder layer


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
        h = self.attention_norm(x + self.dropout(self.attention(x, mask=mask)))
        return self.ffn_norm(h + self.dropout(self.feed_forward(h)))


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
        x = self.norm_a(x + drop(self.mha(x, mask=mask)))
        return self.norm_b(x + drop(self.mlp(x)))


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


LAYER_SLIPS = [
    (
        lambda s, x, m=None: (h := x + att(s, s.attention_norm(x), m)) + s.feed_forward(s.ffn_norm(h)),
        "pre-LN",
    ),
    (
        lambda s, x, m=None: s.ffn_norm(s.feed_forward(h := s.attention_norm(att(s, x, m)) + x)) + h,
        "add the residual *before* the norm",
    ),
    (
        lambda s, x, m=None: s.ffn_norm(s.feed_forward(s.attention_norm(att(s, x, m)))),
        "its residual connection",
    ),
    (
        lambda s, x, m=None: s.ffn_norm((h := s.attention_norm(att(s, x, m))) + s.feed_forward(h)),
        "the attention sublayer lost its residual",
    ),
    (
        lambda s, x, m=None: s.ffn_norm(s.feed_forward(s.attention_norm(x + att(s, x, m)))),
        "the feed-forward sublayer lost its residual",
    ),
    (
        lambda s, x, m=None: s.ffn_norm(x + s.feed_forward(s.attention_norm(x + att(s, x, m)))),
        "the input *of its own sublayer*",
    ),
    (
        lambda s, x, m=None: s.ffn_norm((h := s.attention_norm(x + s.attention(x))) + s.feed_forward(h)),
        "ignored",
    ),
    (
        lambda s, x, m=None: s.ffn_norm((h := x + att(s, x, m)) + s.feed_forward(h)),
        "you normalised only once",
    ),
    (
        lambda s, x, m=None: (h := s.attention_norm(x + att(s, x, m))) + s.feed_forward(h),
        "norm2(h + feed_forward",
    ),
    (
        lambda s, x, m=None: s.attention_norm((h := s.attention_norm(x + att(s, x, m))) + s.feed_forward(h)),
        "you used the first one twice",
    ),
    (
        lambda s, x, m=None: s.ffn_norm((h := s.attention_norm(x + s.feed_forward(x))) + att(s, h, m)),
        "self-attention comes first",
    ),
]


def test_right_encoder_layers_pass():
    for layer_cls in (RightLayer, OtherNamesLayer, attnlib.EncoderLayer):
        verdict = check.encoder_layer(layer_cls)
        assert verdict and verdict.status == "pass", (layer_cls, verdict.message)


@pytest.mark.parametrize(("forward", "hint"), LAYER_SLIPS)
def test_encoder_layer_slips_get_their_hint(forward, hint):
    verdict = check.encoder_layer(slip(forward))
    assert not verdict and verdict.status == "fail"
    assert "hint:" in verdict.message and hint in verdict.message, verdict.message


def test_encoder_layer_causal_attention_and_dropout_in_eval_get_their_hint():
    causal = check.encoder_layer(slip(None, qkv_bias=True, causal=True))
    assert not causal and "causal=False" in causal.message, causal.message

    def dropping(self, x, mask=None):
        h = self.attention_norm(x + nn.functional.dropout(self.attention(x, mask=mask), 0.1))
        return self.ffn_norm(h + self.feed_forward(h))

    dropout = check.encoder_layer(slip(dropping))
    assert not dropout and "dropout is still active" in dropout.message, dropout.message
    assert "training=self.training" in dropout.message


class OneNorm(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        del self.ffn_norm

    def forward(self, x, mask=None):
        h = x + self.attention(x, mask=mask)
        return self.attention_norm(h + self.feed_forward(h))


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
        (TorchAttention, "nn.MultiheadAttention is PyTorch's"),
        (OneHead, "num_heads=1"),
        (NoBias, "qkv_bias=True"),
        (NarrowFeedForward, "hidden_dim=16"),
        (NoSuper, "call `super().__init__()` first"),
        (TwoArguments, "your constructor takes `(dim, n_heads)`"),
        (RightLayer(8, 2, 16), "pass the class itself"),
        (NotAModule, "expected a class derived from nn.Module"),
        (right_mask, "expected a class derived from nn.Module"),
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
    assert todo.status == "todo" and "not yet" in todo.message

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


# ----------------------------------------------------------------------------- the shuffle ablation


def test_shuffled_tokens_prediction():
    assert check.shuffled_tokens("permuted", "changed").status == "pass"
    assert check.shuffled_tokens(" Permuted", "CHANGED ").status == "pass"
    assert check.shuffled_tokens(..., "changed").status == "todo"
    for without, with_, hint in [
        ("unchanged", "changed", "nothing in the layer knows where a token sits"),
        ("changed", "changed", "nothing in the layer knows where a token sits"),
        ("permuted", "permuted", "belongs to the slot, not to the token"),
        ("permuted", "unchanged", "belongs to the slot, not to the token"),
    ]:
        verdict = check.shuffled_tokens(without, with_)
        assert not verdict and "hint:" in verdict.message and hint in verdict.message, verdict.message
    for odd in ("same", 3, None):
        verdict = check.shuffled_tokens(odd, "changed")
        assert not verdict and "answer each with one of" in verdict.message
