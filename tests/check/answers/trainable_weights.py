"""Answers to the checks of notebook 02."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import attnlib
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def attention_ok(query, key, value):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    return torch.softmax(scores, dim=-1) @ value


def self_attention_ok(x, w_query, w_key, w_value):
    return attention_ok(x @ w_query, x @ w_key, x @ w_value)


def cross_attention_ok(x_q, x_kv, w_query, w_key, w_value):
    return attention_ok(x_q @ w_query, x_kv @ w_key, x_kv @ w_value)


def cross_attention_with_torch(x_q, x_kv, w_query, w_key, w_value):
    return F.scaled_dot_product_attention(x_q @ w_query, x_kv @ w_key, x_kv @ w_value)


RIGHT = {
    "cross_attention": [cross_attention_ok, cross_attention_with_torch],
    "fixed_self_attention": [self_attention_ok],
    "cross_attention_shapes": [given((3, 4, 40), (3, 4, 9)), given(torch.Size([3, 4, 40]), [3, 4, 9])],
    "drop_the_scale": [given("c", "b"), given(" C", "B")],
}

# ----------------------------------------------------------------------------- typical mistakes


def _cross(scale=None, dim=-1, roles="q kv kv"):
    def fn(x_q, x_kv, w_query, w_key, w_value):
        src = {"q": x_q, "kv": x_kv}
        q_src, k_src, v_src = (src[r] for r in roles.split())
        queries, keys, values = q_src @ w_query, k_src @ w_key, v_src @ w_value
        s = 1 / math.sqrt(keys.shape[-1]) if scale is None else scale(x_q, x_kv, keys, values)
        return torch.softmax(queries @ keys.transpose(-2, -1) * s, dim=dim) @ values

    return fn


def buggy_self_attention(x, w_query, w_key, w_value):
    queries, keys, values = x @ w_query, x @ w_key, x @ w_value
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-2)
    return weights @ values


WRONG = {
    "cross_attention": [
        (_cross(roles="kv q q"), "roles are swapped"),
        (_cross(roles="q q q"), "self-attention on `x_q`"),
        (_cross(roles="q kv q"), "same tokens as the keys"),
        (_cross(roles="q q kv"), "the keys come from `x_kv`"),
        (_cross(scale=lambda xq, xkv, k, v: 1.0), "scale is missing"),
        (_cross(scale=lambda xq, xkv, k, v: 1 / k.shape[-1]), "divided by Dk"),
        (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(v.shape[-1])), "value width Dv"),
        (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(xq.shape[-1])), "width of the input `x_q`"),
        (_cross(scale=lambda xq, xkv, k, v: 1 / math.sqrt(xkv.shape[-1])), "width of the input `x_kv`"),
        (_cross(dim=-2), "not dim=-2"),
        (_cross(dim=1), "not dim=-2"),
    ],
    "fixed_self_attention": [
        (buggy_self_attention, "this is still the bug"),
        (
            lambda x, wq, wk, wv: torch.softmax((x @ wq) @ (x @ wk).transpose(-2, -1), dim=-1) @ (x @ wv),
            "scale is missing",
        ),
    ],
    "cross_attention_shapes": [
        (given((3, 9, 40), (3, 4, 9)), "one row per *query*"),
        (given((3, 4, 16), (3, 4, 9)), "width is Dv=40"),
        (given((3, 4, 40), (3, 9, 4)), "one row per query, one column per key"),
        (given((3, 4, 40), (3, 4, 4)), "need not be equally many"),
        (given((3, 4, 40), (3, 4, 16)), "summed away"),
        (given((3, 4, 40), (4, 9)), "follow the two matmuls"),
    ],
    "drop_the_scale": [
        (given("a", "b"), "do not make the weights flatter"),
        (given("b", "b"), "grows like d_k"),
        (given("d", "b"), "never overflow"),
        (given("c", "a"), "variance 1 for every d_k"),
        (given("c", "c"), "variance 1 for every d_k"),
        (given("c", "d"), "never overflow"),
    ],
}

TOLD = {"drop_the_scale": [(given("e", "b"), "fail", "one letter"), (given(3, "b"), "fail", "one letter")]}


# ----------------------------------------------------------------------------- out of reach
def _by_v1(x, w_query, w_key, w_value):
    layer = attnlib.SelfAttentionV1(*w_query.shape)
    with torch.no_grad():
        for mine, given_w in zip(
            (layer.W_query, layer.W_key, layer.W_value), (w_query, w_key, w_value), strict=True
        ):
            mine.copy_(given_w)
    return layer(x)


def _by_linear_layers(x, w_query, w_key, w_value):
    layer = attnlib.SelfAttention(*w_query.shape)
    with torch.no_grad():
        for mine, given_w in zip(
            (layer.W_query, layer.W_key, layer.W_value), (w_query, w_key, w_value), strict=True
        ):
            mine.weight.copy_(given_w.T)
    return layer(x)


OUT_OF_REACH = {
    "fixed_self_attention": [
        (_by_v1, "calls attnlib's own `SelfAttentionV1`"),
        (_by_linear_layers, "calls attnlib's own `SelfAttention`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {
    "cross_attention": [stub],
    "fixed_self_attention": [stub],
    "cross_attention_shapes": [given(..., ...)],
    "drop_the_scale": [given(..., "b")],
}
CRASHES = {
    "cross_attention": [(crashes, "AttributeError")],
    "fixed_self_attention": [(crashes, "AttributeError")],
}
