"""Answers to the checks of notebook 10."""

from __future__ import annotations

import math

import torch
from torch import nn

import attnlib
from tests.check.answers import given
from tests.check.verdicts import shape_error, stub
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


RIGHT = {
    "shift_matrix": [right_shift, right_shift_by_permutation],
    "rms_norm": [right_rms],
    "cross_attention_mask": [right_cross_mask, right_cross_mask_by_ones],
    "encoder_layer": [RightLayer, OtherNamesLayer],
    "decoder_layer": [RightDecoder, OtherNamesDecoder],
    "decoder_shuffle": [given("changed", "unchanged", 1), given(" Changed", "UNCHANGED ", 1.0)],
}

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


def post_ln(self, x, mask=None):
    h = self.attention_norm(x + self.dropout(att(self, x, mask)))
    return self.ffn_norm(h + self.dropout(self.feed_forward(h)))


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


def dropping_encoder(self, x, mask=None):
    h = x + nn.functional.dropout(self.attention(self.attention_norm(x), mask=mask), 0.1)
    return h + self.feed_forward(self.ffn_norm(h))


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


def dropping_decoder(self, x, memory, src_mask=None, tgt_mask=None):
    h = self.self_attn_norm(x + nn.functional.dropout(self.self_attention(x, mask=tgt_mask), 0.1))
    h = self.cross_attn_norm(h + self.cross_attention(h, memory, src_mask))
    return self.ffn_norm(h + self.feed_forward(h))


DROPPING_ENCODER, DROPPING_DECODER = slip(dropping_encoder), decoder_slip(dropping_decoder)


# Where dropout acts in train mode (Vaswani et al., 2017, section 5.4: on each sublayer's output).
def encoder_without_dropout(self, x, mask=None):
    h = x + self.attention(self.attention_norm(x), mask=mask)
    return h + self.feed_forward(self.ffn_norm(h))


def encoder_dropping_sums(self, x, mask=None):
    h = self.dropout(x + self.attention(self.attention_norm(x), mask=mask))
    return self.dropout(h + self.feed_forward(self.ffn_norm(h)))


def encoder_dropping_attention_only(self, x, mask=None):
    h = x + self.dropout(self.attention(self.attention_norm(x), mask=mask))
    return h + self.feed_forward(self.ffn_norm(h))


class SublayersWithoutDropout(RightLayer):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.attention = attnlib.MultiHeadAttention(dim, dim, 64, 0.0, n_heads, qkv_bias=True, causal=False)
        self.feed_forward = attnlib.FeedForward(dim, hidden_dim, 0.0)


def decoder_without_dropout(self, x, memory, src_mask=None, tgt_mask=None):
    h = self.self_attn_norm(x + self.self_attention(x, mask=tgt_mask))
    h = self.cross_attn_norm(h + self.cross_attention(h, memory, src_mask))
    return self.ffn_norm(h + self.feed_forward(h))


def decoder_dropping_sums(self, x, memory, src_mask=None, tgt_mask=None):
    h = self.self_attn_norm(self.dropout(x + self.self_attention(x, mask=tgt_mask)))
    h = self.cross_attn_norm(self.dropout(h + self.cross_attention(h, memory, src_mask)))
    return self.ffn_norm(self.dropout(h + self.feed_forward(h)))


def decoder_dropping_after_norms(self, x, memory, src_mask=None, tgt_mask=None):
    h = self.dropout(self.self_attn_norm(x + self.self_attention(x, mask=tgt_mask)))
    h = self.dropout(self.cross_attn_norm(h + self.cross_attention(h, memory, src_mask)))
    return self.dropout(self.ffn_norm(h + self.feed_forward(h)))


def decoder_dropping_feed_forward_only(self, x, memory, src_mask=None, tgt_mask=None):
    h = self.self_attn_norm(x + self.self_attention(x, mask=tgt_mask))
    h = self.cross_attn_norm(h + self.cross_attention(h, memory, src_mask))
    return self.ffn_norm(h + self.dropout(self.feed_forward(h)))


class DecoderSublayersWithoutDropout(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.feed_forward = attnlib.FeedForward(dim, hidden_dim, 0.0)


WITHOUT_DROPOUT = "drops nothing outside its sublayers"
ON_THE_SUMS = "drops the residual sum, not the sublayer's output"
SOME_OUTPUTS = "drops the output of only some of its sublayers"
SUBLAYERS_AT_ZERO = "do not build them with dropout=0.0"

WRONG = {
    "shift_matrix": [
        (paired_rotation, "Here the sines come first"),
        (lambda k, d: paired_rotation(k, d, sign=-1.0), "moves k positions *back*"),
        (lambda k, d: shift(k, d, sign=-1.0), "moves k positions *back*"),
        (lambda k, d: right_shift(k, d).T, "moves k positions *back*"),
        (lambda k, d: right_shift(-k, d), "moves k positions *back*"),
        (lambda k, d: shift(k, d, speed=lambda d: torch.ones(d // 2)), "its own speed"),
        (lambda k, d: shift(k, d, steps=1), "that matrix moves one position"),
        (
            lambda k, d: shift(k, d, speed=lambda d: 1 / 10000 ** (torch.arange(d // 2).float() / d)),
            "multiply by 2",
        ),
        (
            lambda k, d: shift(k, d, speed=lambda d: 1 / 10000 ** (2 * torch.arange(0, d, 2).float() / d)),
            "do not double it",
        ),
    ],
    "rms_norm": [
        (
            lambda x, g, eps: nn.functional.layer_norm(x, x.shape[-1:], g, None, eps),
            "that is LayerNorm",
        ),
        (lambda *a: rms(*a, centre=True, spread_around_mean=True), "that is LayerNorm"),
        (
            lambda x, g, eps: g * x / torch.sqrt(x.var(-1, keepdim=True) + eps),
            "measure it around 0",
        ),
        (lambda *a: rms(*a, spread_around_mean=True), "measure it around 0"),
        (lambda *a: rms(*a, centre=True), "the numerator is x itself"),
        (lambda *a: rms(*a, outside=True), "eps goes inside the square root"),
        (lambda *a: rms(*a, root=False), "square *root*"),
        (
            lambda x, g, eps: g * x / torch.sqrt((x**2).sum(-1, keepdim=True) + eps),
            "not their sum",
        ),
        (lambda *a: rms(*a, dim=0), "over the last dimension only"),
        (lambda *a: rms(*a, dim=-2), "over the last dimension only"),
        (
            lambda x, g, eps: g * x / torch.sqrt((x**2).mean() + eps),
            "over the last dimension only",
        ),
        (lambda x, g, eps: x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps), "learned gain"),
    ],
    "cross_attention_mask": [
        (lambda s, t, p: ~right_cross_mask(s, t, p), "the mask is inverted"),
        (
            lambda s, t, p: (s == p)[:, None, None, :].expand(-1, -1, t.shape[1], -1),
            "the mask is inverted",
        ),
        (lambda s, t, p: (s != p)[:, None, None, :], "asks for the full grid"),
        (
            lambda s, t, p: (
                right_cross_mask(s, t, p) & torch.ones(t.shape[1], s.shape[1], dtype=torch.bool).tril()
            ),
            "cross-attention is not causal",
        ),
        (
            lambda s, t, p: (t != p)[:, None, None, :].expand(-1, -1, t.shape[1], -1),
            "take the padding from src",
        ),
        (
            lambda s, t, p: (s != p)[:, None, :, None].expand(-1, -1, -1, t.shape[1]),
            "yours is the other way round",
        ),
        (
            lambda s, t, p: (t != p)[:, None, :, None] & (s != p)[:, None, None, :],
            "you hid the padded target rows",
        ),
        (
            lambda s, t, p: right_cross_mask(s, t, p)[:, 0],
            "keep an axis for the heads",
        ),
        (lambda s, t, p: right_cross_mask(s, t, p).float(), "must be boolean"),
        (lambda s, t, p: right_cross_mask(s, t, p).long(), "must be boolean"),
    ],
    "encoder_layer": [
        *((slip(forward), hint) for forward, hint in LAYER_SLIPS),
        (slip(post_ln), "that is post-LN"),  # the post-LN layer of the notebook
        (slip(None, qkv_bias=True, causal=True), "causal=False"),
        (slip(encoder_without_dropout), WITHOUT_DROPOUT),
        (slip(encoder_dropping_sums), ON_THE_SUMS),
        (slip(encoder_dropping_attention_only), SOME_OUTPUTS),
        (SublayersWithoutDropout, SUBLAYERS_AT_ZERO),
    ],
    "decoder_layer": [
        *((decoder_slip(forward), hint) for forward, hint in DECODER_SLIPS),
        (decoder_slip(None, qkv_bias=True, causal=False), "build it with causal=True"),
        (DROPPING_DECODER, "dropout is still active"),
        (decoder_slip(decoder_without_dropout), WITHOUT_DROPOUT),
        (decoder_slip(decoder_dropping_sums), ON_THE_SUMS),
        (decoder_slip(decoder_dropping_after_norms), "drops the normalised sum, after each norm"),
        (decoder_slip(decoder_dropping_feed_forward_only), SOME_OUTPUTS),
        (DecoderSublayersWithoutDropout, SUBLAYERS_AT_ZERO),
    ],
    "decoder_shuffle": [  # (the target shuffled, the memory shuffled, the orders that commute)
        (given("permuted", "unchanged", 1), "the causal mask belongs to the slots"),
        (given("unchanged", "unchanged", 1), "the causal mask belongs to the slots"),
        (given("changed", "permuted", 1), "the memory's rows are keys and values only"),
        (given("changed", "changed", 1), "the memory's rows are keys and values only"),
        (given("changed", "unchanged", 24), "not every order commutes"),
        (given("changed", "unchanged", 0), "leaving the tokens where they are"),
        (given("changed", "unchanged", 6), "the first slot must keep its token"),
        (given("changed", "unchanged", 2), "the first slot must keep its token"),
    ],
}

# ----------------------------------------------------------------------------- refused in words


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


TOLD = {
    "encoder_layer": [
        (DROPPING_ENCODER, "fail", "dropout is still active", "training=self.training"),
        (OneNorm, "fail", "found 1 LayerNorm"),
        (FinalNorm, "fail", "belongs to the stack"),
        (TorchAttention, "fail", "nn.MultiheadAttention is PyTorch's"),
        (OneHead, "fail", "num_heads=1"),
        (NoBias, "fail", "qkv_bias=True"),
        (NarrowFeedForward, "fail", "hidden_dim=16"),
        (NoSuper, "error", "call `super().__init__()` first"),
        (TwoArguments, "fail", "your constructor takes `(dim, n_heads)`"),
        (RightLayer(8, 2, 16), "fail", "pass the class itself"),
        (NotAModule, "fail", "NotAModule is not an nn.Module: define it as class"),
        (right_cross_mask, "fail", "expected a class (class MyEncoderLayer(nn.Module): ...)"),
    ],
    "decoder_layer": [
        (OneAttention, "fail", "found 1 attnlib.MultiHeadAttention"),
        (TorchCross, "fail", "nn.MultiheadAttention is PyTorch's"),
        (BothCausal, "fail", "must be built with causal=False"),
        (TwoNorms, "fail", "found 2 LayerNorm"),
        (NoBiasCross, "fail", "qkv_bias=True"),
        (TwoArguments, "fail", "your constructor takes `(dim, n_heads)`"),
        (RightDecoder(8, 2, 16), "fail", "pass the class itself"),
        (NotAModule, "fail", "NotAModule is not an nn.Module: define it as class"),
    ],
    "decoder_shuffle": [
        *(
            (given(odd, "unchanged", 1), "fail", "answer the first two with one of")
            for odd in ("same", 3, None)
        ),
        *(
            (given("changed", "unchanged", odd), "fail", "a whole number from 0 to 24")
            for odd in ("one", 1.5, 25, -1, True)
        ),
    ],
}


# ----------------------------------------------------------------------------- out of reach
def encoder_by_add_norm(self, x, mask=None):
    h = x + self.dropout(att(self, self.attention_norm(x), mask))
    return attnlib.add_norm(h, self.feed_forward, self.ffn_norm, self.dropout, norm_first=True)


class DelegatingEncoder(RightLayer):
    """The right sublayers, and attnlib's forward run on them."""

    norm_first = True

    def forward(self, x, mask=None):
        return attnlib.EncoderLayer.forward(self, x, mask)


class DerivedDecoder(attnlib.DecoderLayer):
    pass


OUT_OF_REACH = {
    "rms_norm": [
        (torch_rms, "calls `F.rms_norm`"),
        (lambda x, g, eps: nn.functional.rms_norm(x, (x.shape[-1],), g, eps), "calls `F.rms_norm`"),
    ],
    "encoder_layer": [
        (PreLNEncoderLayer, "PreLNEncoderLayer derives from attnlib's own `EncoderLayer`"),
        (attnlib.EncoderLayer, "EncoderLayer is attnlib's own `EncoderLayer`"),
        (DelegatingEncoder, "calls attnlib's own `EncoderLayer`"),
        (slip(encoder_by_add_norm), "calls attnlib's own `add_norm`"),
    ],
    "decoder_layer": [
        (attnlib.DecoderLayer, "DecoderLayer is attnlib's own `DecoderLayer`"),
        (DerivedDecoder, "DerivedDecoder derives from attnlib's own `DecoderLayer`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes


def _stubbed(source: str, name: str):
    """The class as the student edition hands it out: every body replaced by its stub."""
    namespace = {"nn": nn, "attnlib": attnlib}
    exec(student.stub_source(source), namespace)
    return namespace[name]


MY_ENCODER_LAYER = (
    "class MyEncoderLayer(nn.Module):\n"
    "    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):\n"
    "        super().__init__()\n"
    "        self.norm = attnlib.LayerNorm(dim)\n\n"
    "    def forward(self, x, mask=None):\n"
    "        return self.norm(x)\n"
)
MY_DECODER_LAYER = (
    "class MyDecoderLayer(nn.Module):\n"
    "    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):\n"
    "        super().__init__()\n"
    "        self.norm = attnlib.LayerNorm(dim)\n\n"
    "    def forward(self, x, memory, src_mask=None, tgt_mask=None):\n"
    "        return self.norm(x)\n"
)


class ForwardStub(RightLayer):
    def forward(self, x, mask=None):
        raise NotImplementedError


class Crashes(RightLayer):
    def forward(self, x, mask=None):
        return self.attention(x, mask=mask) @ self.feed_forward.w1.weight  # (B, T, D) @ (F, D)


class DecoderForwardStub(RightDecoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        raise NotImplementedError


class DecoderCrashes(RightDecoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        return self.cross_attention(x, memory, src_mask) @ self.feed_forward.w1.weight  # (B, Tt, D) @ (F, D)


NOT_YET = {
    "shift_matrix": [stub],
    "rms_norm": [stub],
    "cross_attention_mask": [stub],
    "encoder_layer": [_stubbed(MY_ENCODER_LAYER, "MyEncoderLayer"), ForwardStub],
    "decoder_layer": [_stubbed(MY_DECODER_LAYER, "MyDecoderLayer"), DecoderForwardStub],
    "decoder_shuffle": [given(..., "unchanged", 1), given("changed", "unchanged", ...)],
}
_RAISED = (shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)")
CRASHES = {
    "shift_matrix": [_RAISED],
    "rms_norm": [_RAISED],
    "cross_attention_mask": [_RAISED],
    "encoder_layer": [(Crashes, "raised RuntimeError", "self.feed_forward.w1.weight")],
    "decoder_layer": [(DecoderCrashes, "raised RuntimeError", "self.feed_forward.w1.weight")],
}
