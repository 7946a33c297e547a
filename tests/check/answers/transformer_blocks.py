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


def right_target_mask(lengths, max_len):
    pos = torch.arange(max_len)
    real_keys = pos[None, :] >= max_len - lengths[:, None]  # (B, Tt): the last n positions are real
    causal = torch.ones(max_len, max_len, dtype=torch.bool).tril()  # (Tt, Tt): key j at or before query i
    return real_keys[:, None, None, :] & causal  # (B, 1, Tt, Tt); a left pad's row is all False


def right_target_mask_by_blocks(lengths, max_len):
    """Notebook 03's building blocks, which stay in reach: the right-padded mask, flipped."""
    right_padded = attnlib.length_mask(lengths, max_len)  # (B, 1, 1, Tt): True for the first n
    return attnlib.combine_masks(right_padded.flip(-1), attnlib.causal_mask(max_len))


def right_target_mask_by_tokens(lengths, max_len):
    """Token ids padded on the left, then padding & causal as in section 6."""
    tokens = torch.stack(
        [
            torch.cat([torch.zeros(max_len - n, dtype=torch.long), torch.ones(n, dtype=torch.long)])
            for n in lengths.tolist()
        ]
    )
    return attnlib.combine_masks(attnlib.padding_mask(tokens, 0), attnlib.causal_mask(max_len))


def mha(dim, n_heads, dropout, **kwargs):
    kwargs = {"qkv_bias": True, "causal": False, **kwargs}
    return attnlib.MultiHeadAttention(dim, dim, 64, dropout, n_heads, **kwargs)


class RightStack(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__()
        self.attentions = nn.ModuleList(mha(dim, n_heads, dropout) for _ in range(n_layers))
        self.attention_norms = nn.ModuleList(attnlib.LayerNorm(dim) for _ in range(n_layers))
        self.feed_forwards = nn.ModuleList(
            attnlib.FeedForward(dim, hidden_dim, dropout) for _ in range(n_layers)
        )
        self.ffn_norms = nn.ModuleList(attnlib.LayerNorm(dim) for _ in range(n_layers))
        self.final_norm = attnlib.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        for i in range(len(self.attentions)):
            x = pre(self, i, x, mask)
        return self.final_norm(x)


def pre(s, i, h, mask):
    """Layer i of RightStack, pre-LN, as it should be."""
    h = h + s.dropout(s.attentions[i](s.attention_norms[i](h), mask=mask))
    return h + s.dropout(s.feed_forwards[i](s.ffn_norms[i](h)))


class Layer(nn.Module):
    """One pre-LN layer, with PyTorch's LayerNorm, other names and functional dropout."""

    def __init__(self, dim, n_heads, hidden_dim, dropout):
        super().__init__()
        self.norm_b, self.norm_a = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = attnlib.FeedForward(dim, hidden_dim, dropout)
        self.mha = mha(dim, n_heads, dropout)
        self.p = dropout

    def forward(self, x, mask):
        drop = lambda h: nn.functional.dropout(h, self.p, training=self.training)  # noqa: E731
        x = x + drop(self.mha(self.norm_a(x), mask=mask))
        return x + drop(self.mlp(self.norm_b(x)))


class OtherNamesStack(nn.Module):
    """Right: a layer class of its own, the final norm created first, keywords."""

    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1, **unused):
        super().__init__()
        self.out_norm = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList([Layer(dim, n_heads, hidden_dim, dropout) for _ in range(n_layers)])

    def forward(self, x, mask):
        for block in self.blocks:
            x = block(x, mask=mask)
        return self.out_norm(x)


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
    "left_padded_target_mask": [
        right_target_mask,
        right_target_mask_by_blocks,
        right_target_mask_by_tokens,
    ],
    "pre_ln_encoder": [RightStack, OtherNamesStack],
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


# 10.3: the target mask of left-padded sequences
def _tril(t, k=0):
    return torch.ones(t, t, dtype=torch.bool).tril(k)


def _keys(n, t, first_real=None):
    """(B, 1, 1, Tt): the real keys, the first of sequence b at first_real[b] (max_len - n)."""
    first_real = t - n if first_real is None else first_real
    return (torch.arange(t)[None, :] >= first_real[:, None])[:, None, None, :]


def masked_out(n, t):
    """The convention of torch.triu(..., diagonal=1): True = hide (the future, or a pad key)."""
    return torch.ones(t, t, dtype=torch.bool).triu(1) | ~_keys(n, t)


def as_if_right_padded(n, t):
    return attnlib.combine_masks(attnlib.length_mask(n, t), attnlib.causal_mask(t))


def pad_rows_opened(n, t, keys):
    """A pad query's row opened (to itself, or to every key) so that no row is fully masked."""
    pad_rows = torch.arange(t)[None, :] < (t - n)[:, None]  # (B, Tt)
    return right_target_mask(n, t) | (pad_rows[:, None, :, None] & keys)


# 10.4: a pre-LN encoder stack
def stack_slip(forward, **init):
    """RightStack with one typical slip in its forward (and optionally its attentions' arguments)."""

    class MyPreLNEncoder(RightStack):
        def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
            super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
            if init:
                self.attentions = nn.ModuleList(mha(dim, n_heads, dropout, **init) for _ in range(n_layers))

    if forward is not None:
        MyPreLNEncoder.forward = forward
    return MyPreLNEncoder


def every_layer(inner):
    """A stack whose every layer is ``inner(s, i, h, mask)``, then the final norm."""

    def forward(s, x, mask=None):
        for i in range(len(s.attentions)):
            x = inner(s, i, x, mask)
        return s.final_norm(x)

    return forward


def att(s, i, h, mask):
    return s.attentions[i](h, mask=mask)


def ffn(s, i, h):
    return s.feed_forwards[i](h)


def an(s, i, h):
    return s.attention_norms[i](h)


def fn(s, i, h):
    return s.ffn_norms[i](h)


def post_ln(s, i, x, m):
    h = an(s, i, x + att(s, i, x, m))
    return fn(s, i, h + ffn(s, i, h))


def normalised_residual(s, i, x, m):
    n = an(s, i, x)
    h = n + att(s, i, n, m)  # the residual adds norm(x), not x
    n = fn(s, i, h)
    return n + ffn(s, i, n)


def no_final_norm(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = pre(s, i, x, mask)
    return x


def final_norm_after_each(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = s.final_norm(pre(s, i, x, mask))
    return x


def final_norm_first(s, x, mask=None):
    x = s.final_norm(x)
    for i in range(len(s.attentions)):
        x = pre(s, i, x, mask)
    return x


def mask_to_the_first_layer(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = pre(s, i, x, mask if i == 0 else None)
    return s.final_norm(x)


def mask_to_the_last_layer(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = pre(s, i, x, mask if i == len(s.attentions) - 1 else None)
    return s.final_norm(x)


def unchained(s, x, mask=None):
    h = x
    for i in range(len(s.attentions)):
        h = pre(s, i, x, mask)
    return s.final_norm(h)


def residual_around_layers(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = x + pre(s, i, x, mask)
    return s.final_norm(x)


STACK_SLIPS = [
    (no_final_norm, "needs one final LayerNorm after its last layer"),
    (final_norm_after_each, "the final LayerNorm acts once"),
    (final_norm_first, "not before the first"),
    (mask_to_the_first_layer, "not only the first"),
    (mask_to_the_last_layer, "not only the last"),
    (unchained, "chain the layers"),
    (residual_around_layers, "counts the residual stream twice"),
    (every_layer(post_ln), "that is post-LN"),
    (
        every_layer(lambda s, i, x, m: (h := x + an(s, i, att(s, i, x, m))) + fn(s, i, ffn(s, i, h))),
        "not its output",
    ),
    (every_layer(normalised_residual), "the residual path stays un-normalised"),
    (
        every_layer(lambda s, i, x, m: ffn(s, i, fn(s, i, att(s, i, an(s, i, x), m)))),
        "its residual connection",
    ),
    (
        every_layer(lambda s, i, x, m: (h := att(s, i, an(s, i, x), m)) + ffn(s, i, fn(s, i, h))),
        "the attention sublayer lost its residual",
    ),
    (
        every_layer(lambda s, i, x, m: ffn(s, i, fn(s, i, x + att(s, i, an(s, i, x), m)))),
        "the feed-forward sublayer lost its residual",
    ),
    (
        every_layer(lambda s, i, x, m: x + ffn(s, i, fn(s, i, x + att(s, i, an(s, i, x), m)))),
        "the input *of its own sublayer*",
    ),
    (
        every_layer(lambda s, i, x, m: (h := x + att(s, i, an(s, i, x), None)) + ffn(s, i, fn(s, i, h))),
        "the padding mask is ignored",
    ),
    (
        every_layer(lambda s, i, x, m: (h := x + att(s, i, an(s, i, x), m)) + ffn(s, i, an(s, i, h))),
        "you used the first one twice",
    ),
    (
        every_layer(lambda s, i, x, m: (h := x + ffn(s, i, an(s, i, x))) + att(s, i, fn(s, i, h), m)),
        "self-attention comes first",
    ),
]


def stack_dropping_in_eval(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = x + nn.functional.dropout(att(s, i, an(s, i, x), mask), 0.1)
        x = x + ffn(s, i, fn(s, i, x))
    return s.final_norm(x)


# Where dropout acts in train mode (Vaswani et al., 2017, section 5.4: on each sublayer's output).
def stack_without_dropout(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = x + att(s, i, an(s, i, x), mask)
        x = x + ffn(s, i, fn(s, i, x))
    return s.final_norm(x)


def stack_dropping_sums(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = s.dropout(x + att(s, i, an(s, i, x), mask))
        x = s.dropout(x + ffn(s, i, fn(s, i, x)))
    return s.final_norm(x)


def stack_dropping_attention_only(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = x + s.dropout(att(s, i, an(s, i, x), mask))
        x = x + ffn(s, i, fn(s, i, x))
    return s.final_norm(x)


class StackSublayersWithoutDropout(RightStack):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
        self.attentions = nn.ModuleList(mha(dim, n_heads, 0.0) for _ in range(n_layers))


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


DROPPING_STACK, DROPPING_DECODER = stack_slip(stack_dropping_in_eval), decoder_slip(dropping_decoder)


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


def decoder_dropping_twice(self, x, memory, src_mask=None, tgt_mask=None):  # no modelled slip
    h = self.self_attn_norm(x + self.dropout(self.dropout(self.self_attention(x, mask=tgt_mask))))
    h = self.cross_attn_norm(h + self.dropout(self.dropout(self.cross_attention(h, memory, src_mask))))
    return self.ffn_norm(h + self.dropout(self.dropout(self.feed_forward(h))))


class DecoderSublayersWithoutDropout(RightDecoder):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, dropout)
        self.feed_forward = attnlib.FeedForward(dim, hidden_dim, 0.0)


# Each asserted text is a part of the hint itself (tests/check/test_harness.py's catalogue).
WITHOUT_DROPOUT = "apply dropout to each sublayer's output before it is added to the residual"
ON_THE_SUMS = "dropout on the residual sum also drops the input x"
AFTER_THE_NORMS = "the paper drops each sublayer's output before the residual add and the norm"
SOME_OUTPUTS = "every sublayer gets its dropout before its residual add"
SUBLAYERS_AT_ZERO = "do not build them with dropout=0.0"
STILL_ON = "use nn.Dropout modules (they switch off with .eval())"

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
    "left_padded_target_mask": [
        (lambda n, t: ~right_target_mask(n, t), "the mask is inverted"),
        (masked_out, "the mask is inverted"),
        (lambda n, t: _keys(n, t) & _tril(t).T, "the lower triangle (tril)"),
        (lambda n, t: _keys(n, t) & _tril(t, -1), "keep the diagonal"),
        (lambda n, t: _keys(n, t).expand(-1, -1, t, -1), "the decoder's self-attention is causal"),
        (lambda n, t: attnlib.causal_mask(t), "yours is the causal mask alone"),
        (lambda n, t: _tril(t).expand(len(n), 1, -1, -1), "the left pads are still visible"),
        (as_if_right_padded, "as for right padding"),
        (lambda n, t: _keys(n, t, t - n + 1) & _tril(t), "off by one"),
        (lambda n, t: _keys(n, t, t - n - 1) & _tril(t), "off by one"),
        (lambda n, t: _keys(n, t)[:, :, 0, :, None] & _tril(t), "you hid the pad rows (queries) instead"),
        (lambda n, t: pad_rows_opened(n, t, torch.eye(t, dtype=torch.bool)), "must stay all False"),
        (
            lambda n, t: pad_rows_opened(n, t, torch.ones(t, t, dtype=torch.bool)),
            "zero weights and a zero context",
        ),
        (  # opened to the first real key, another way to dodge the NaN
            lambda n, t: pad_rows_opened(n, t, (torch.arange(t)[None, :] == (t - n)[:, None])[:, None, None]),
            "must stay all False",
        ),
        (lambda n, t: right_target_mask(n, t)[:, 0], "keep an axis for the heads"),
        (lambda n, t: right_target_mask(n, t).float(), "must be boolean"),
        (lambda n, t: right_target_mask(n, t).long(), "must be boolean"),
    ],
    "pre_ln_encoder": [
        *((stack_slip(forward), hint) for forward, hint in STACK_SLIPS),
        (stack_slip(None, causal=True), "causal=False"),
        (stack_slip(stack_without_dropout), WITHOUT_DROPOUT),
        (stack_slip(stack_dropping_sums), ON_THE_SUMS),
        (stack_slip(stack_dropping_attention_only), SOME_OUTPUTS),
        (StackSublayersWithoutDropout, SUBLAYERS_AT_ZERO),
    ],
    "decoder_layer": [
        *((decoder_slip(forward), hint) for forward, hint in DECODER_SLIPS),
        (decoder_slip(None, qkv_bias=True, causal=False), "build it with causal=True"),
        (DROPPING_DECODER, STILL_ON),
        (decoder_slip(decoder_without_dropout), WITHOUT_DROPOUT),
        (decoder_slip(decoder_dropping_sums), ON_THE_SUMS),
        (decoder_slip(decoder_dropping_after_norms), AFTER_THE_NORMS),
        (decoder_slip(decoder_dropping_feed_forward_only), SOME_OUTPUTS),
        (DecoderSublayersWithoutDropout, SUBLAYERS_AT_ZERO),
        (decoder_slip(decoder_dropping_twice), "drop each sublayer's output, and nothing else"),
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


class SharedLayer(RightStack):
    """One layer's modules, registered n_layers times: [module] * n_layers."""

    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
        self.attentions = nn.ModuleList([mha(dim, n_heads, dropout)] * n_layers)


class WithoutFinalNorm(RightStack):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
        del self.final_norm

    forward = no_final_norm


class TorchLayers(nn.Module):
    """PyTorch's own pre-LN layers, stacked, and a final norm."""

    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, n_heads, hidden_dim, dropout, batch_first=True, norm_first=True)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class OneHead(RightStack):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, 1, hidden_dim, n_layers, dropout)


class NoBias(RightStack):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
        self.attentions = nn.ModuleList(mha(dim, n_heads, dropout, qkv_bias=False) for _ in range(n_layers))


class NarrowFeedForward(RightStack):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, n_layers, dropout)
        self.feed_forwards = nn.ModuleList(attnlib.FeedForward(dim, 4, dropout) for _ in range(n_layers))


class NoSuper(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        self.attentions = nn.ModuleList(mha(dim, n_heads, dropout) for _ in range(n_layers))


class OneLayerArguments(RightStack):
    """The signature of one encoder layer: no n_layers."""

    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        super().__init__(dim, n_heads, hidden_dim, 2, dropout)


class NotAModule:
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        pass


class TwoArguments(RightDecoder):
    def __init__(self, dim, n_heads):
        super().__init__(dim, n_heads, 4 * dim)


class NoSuperDecoder(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):
        self.self_attention = mha(dim, n_heads, dropout, causal=True)


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
    "pre_ln_encoder": [
        (DROPPING_STACK, "fail", "dropout is still active", "training=self.training"),
        (SharedLayer, "fail", "found 1 attnlib.MultiHeadAttention", "not [layer] * n_layers"),
        (WithoutFinalNorm, "fail", "found 2 LayerNorm", "2 * n_layers + 1 = 3"),
        (TorchLayers, "fail", "nn.MultiheadAttention is PyTorch's"),
        (OneHead, "fail", "num_heads=1"),
        (NoBias, "fail", "qkv_bias=True"),
        (NarrowFeedForward, "fail", "hidden_dim=16"),
        (NoSuper, "error", "call `super().__init__()` first"),
        (OneLayerArguments, "fail", "your constructor takes `(dim, n_heads, hidden_dim, dropout=0.1)`"),
        (RightStack(8, 2, 16, 2), "fail", "pass the class itself"),
        (NotAModule, "fail", "NotAModule is not an nn.Module: define it as class"),
        (right_target_mask, "fail", "expected a class (class MyPreLNEncoder(nn.Module): ...)"),
    ],
    "decoder_layer": [
        (OneAttention, "fail", "found 1 attnlib.MultiHeadAttention"),
        (TorchCross, "fail", "nn.MultiheadAttention is PyTorch's"),
        (BothCausal, "fail", "must be built with causal=False"),
        (TwoNorms, "fail", "found 2 LayerNorm"),
        (NoBiasCross, "fail", "qkv_bias=True"),
        (TwoArguments, "fail", "your constructor takes `(dim, n_heads)`"),
        (NoSuperDecoder, "error", "call `super().__init__()` first"),
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


def by_generate_mask(lengths, max_len):
    tokens = torch.stack(
        [
            torch.cat([torch.zeros(max_len - n, dtype=torch.long), torch.ones(n, dtype=torch.long) + 2])
            for n in lengths.tolist()
        ]
    )
    with torch.random.fork_rng(devices=[]):  # building a model draws its weights: leave the seed alone
        model = attnlib.Transformer(10, 10, dim=8, n_heads=2, n_layers=1, hidden_dim=8)
    return model.generate_mask(tokens, tokens)[1]  # (B, 1, Tt, Tt): the target mask


class HoldsEncoderLayers(nn.Module):
    """attnlib's pre-LN layers stacked: the layers are this exercise's to write."""

    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList(
            attnlib.EncoderLayer(dim, n_heads, hidden_dim, dropout, norm_first=True) for _ in range(n_layers)
        )
        self.final_norm = attnlib.LayerNorm(dim)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x)


class DelegatingStack(RightStack):
    """The right modules, and attnlib's layer forward run on them."""

    norm_first = True

    def forward(self, x, mask=None):
        for i in range(len(self.attentions)):
            self.attention, self.attention_norm = self.attentions[i], self.attention_norms[i]
            self.feed_forward, self.ffn_norm = self.feed_forwards[i], self.ffn_norms[i]
            x = attnlib.EncoderLayer.forward(self, x, mask)
        return self.final_norm(x)


def stack_by_add_norm(s, x, mask=None):
    for i in range(len(s.attentions)):
        x = x + s.dropout(att(s, i, an(s, i, x), mask))
        x = attnlib.add_norm(x, s.feed_forwards[i], s.ffn_norms[i], s.dropout, norm_first=True)
    return s.final_norm(x)


class DerivedDecoder(attnlib.DecoderLayer):
    pass


OUT_OF_REACH = {
    "rms_norm": [
        (torch_rms, "calls `F.rms_norm`"),
        (lambda x, g, eps: nn.functional.rms_norm(x, (x.shape[-1],), g, eps), "calls `F.rms_norm`"),
    ],
    "left_padded_target_mask": [
        (by_generate_mask, "calls attnlib's own `Transformer.generate_mask`"),
    ],
    "pre_ln_encoder": [
        (HoldsEncoderLayers, "calls attnlib's own `EncoderLayer`"),
        (DelegatingStack, "calls attnlib's own `EncoderLayer`"),
        (stack_slip(stack_by_add_norm), "calls attnlib's own `add_norm`"),
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


MY_PRE_LN_ENCODER = (
    "class MyPreLNLayer(nn.Module):\n"
    "    def __init__(self, dim, n_heads, hidden_dim, dropout=0.1):\n"
    "        super().__init__()\n"
    "        self.norm = attnlib.LayerNorm(dim)\n\n"
    "    def forward(self, x, mask=None):\n"
    "        return self.norm(x)\n\n\n"
    "class MyPreLNEncoder(nn.Module):\n"
    "    def __init__(self, dim, n_heads, hidden_dim, n_layers, dropout=0.1):\n"
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


class ForwardStub(RightStack):
    def forward(self, x, mask=None):
        raise NotImplementedError


class Crashes(RightStack):
    def forward(self, x, mask=None):
        return self.attentions[0](x, mask=mask) @ self.feed_forwards[0].w1.weight  # (B, T, D) @ (F, D)


class DecoderForwardStub(RightDecoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        raise NotImplementedError


class DecoderCrashes(RightDecoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        return self.cross_attention(x, memory, src_mask) @ self.feed_forward.w1.weight  # (B, Tt, D) @ (F, D)


NOT_YET = {
    "shift_matrix": [stub],
    "rms_norm": [stub],
    "left_padded_target_mask": [stub],
    "pre_ln_encoder": [_stubbed(MY_PRE_LN_ENCODER, "MyPreLNEncoder"), ForwardStub],
    "decoder_layer": [_stubbed(MY_DECODER_LAYER, "MyDecoderLayer"), DecoderForwardStub],
    "decoder_shuffle": [given(..., "unchanged", 1), given("changed", "unchanged", ...)],
}
_RAISED = (shape_error, "raised RuntimeError", "torch.zeros(2, 3) @ torch.zeros(4, 5)")
CRASHES = {
    "shift_matrix": [_RAISED],
    "rms_norm": [_RAISED],
    "left_padded_target_mask": [_RAISED],
    "pre_ln_encoder": [(Crashes, "raised RuntimeError", "self.feed_forwards[0].w1.weight")],
    "decoder_layer": [(DecoderCrashes, "raised RuntimeError", "self.feed_forward.w1.weight")],
}
