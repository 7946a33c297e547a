"""The reference for attnlib's Transformer: the same weights in PyTorch's ``nn.Transformer``.

Shapes: ``D`` model width, ``H`` heads, ``L`` layers (each stack); inputs are batch first,
``(B, Ts, D)`` and ``(B, Tt, D)``, already embedded.

Taught in notebooks 10 (the Transformer's building blocks) and 11 (the Transformer).

:func:`to_torch_transformer` copies a :class:`~attnlib.transformer.Transformer`'s layers into
``torch.nn.Transformer``, so that the tests and notebook 11 can check that both compute the
same function; :func:`copy_encoder_layer` and :func:`copy_decoder_layer` do it for one layer
(notebook 10). A checking tool, not part of the model.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from .transformer import Transformer

__all__ = ["copy_decoder_layer", "copy_encoder_layer", "to_torch_transformer"]


def to_torch_transformer(model: Transformer) -> nn.Transformer:
    """A ``torch.nn.Transformer`` (batch first, ReLU) holding a copy of ``model``'s layers.

    Embeddings, positional encoding and the output head are not part of ``nn.Transformer``;
    feed it ``model``'s embedded inputs. ``nn.Transformer`` always ends each stack with a
    LayerNorm: copied when ``model`` has final norms, replaced by ``nn.Identity`` otherwise.
    ``nn.MultiheadAttention`` fuses the three input projections into one ``in_proj``. Its
    nested-tensor fast path is switched off, so its encoder output keeps the (unused) values
    at padded positions, as ``model``'s does.

    Args:
        model: the :class:`~attnlib.transformer.Transformer` to copy (left unchanged).

    Returns:
        an ``nn.Transformer`` with ``L`` encoder and ``L`` decoder layers of width ``D`` and
        ``H`` heads, in ``model``'s mode (training or eval).
    """
    enc0 = model.encoder_layers[0]
    with warnings.catch_warnings():  # torch warns that pre-LN rules out its nested-tensor path
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        ref = nn.Transformer(
            model.dim, model.n_heads, model.n_layers, model.n_layers,
            enc0.feed_forward.w1.out_features, enc0.dropout.p, batch_first=True,
            norm_first=enc0.norm_first, layer_norm_eps=enc0.ffn_norm.eps,
        )  # fmt: skip
    # Its eval-mode fast path packs padded batches into nested tensors and returns zeros at
    # padded positions; switch that off so every position can be compared.
    ref.encoder.use_nested_tensor = False

    def norm(theirs: nn.Module, ours: nn.Module) -> nn.Module:
        if isinstance(ours, nn.Identity):
            return nn.Identity()
        _copy_norm(theirs, ours)
        return theirs

    with torch.no_grad():
        for theirs, ours in zip(ref.encoder.layers, model.encoder_layers, strict=True):
            copy_encoder_layer(theirs, ours)
        for theirs, ours in zip(ref.decoder.layers, model.decoder_layers, strict=True):
            copy_decoder_layer(theirs, ours)
        ref.encoder.norm = norm(ref.encoder.norm, model.encoder_norm)
        ref.decoder.norm = norm(ref.decoder.norm, model.decoder_norm)
    return ref.train(model.training)


def _copy_attention(theirs: nn.MultiheadAttention, ours: nn.Module) -> None:
    roles = (ours.W_query, ours.W_key, ours.W_value)
    theirs.in_proj_weight.copy_(torch.cat([r.weight for r in roles]))  # 3 x (D, D) -> (3D, D)
    theirs.in_proj_bias.copy_(torch.cat([r.bias for r in roles]))  # 3 x (D,) -> (3D,)
    theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


def _copy_norm(theirs: nn.Module, ours: nn.Module) -> None:
    theirs.weight.copy_(ours.gamma)  # PyTorch's weight and bias are attnlib's gamma and beta
    theirs.bias.copy_(ours.beta)


def _copy_feed_forward(theirs: nn.Module, ours: nn.Module) -> None:
    theirs.linear1.load_state_dict(ours.feed_forward.w1.state_dict())
    theirs.linear2.load_state_dict(ours.feed_forward.w2.state_dict())


@torch.no_grad()
def copy_encoder_layer(theirs: nn.TransformerEncoderLayer, ours: nn.Module) -> nn.TransformerEncoderLayer:
    """Give ``theirs`` (``batch_first``, ReLU) the weights of attnlib's
    :class:`~attnlib.blocks.EncoderLayer` ``ours``; returns ``theirs``."""
    _copy_attention(theirs.self_attn, ours.attention)
    _copy_feed_forward(theirs, ours)
    _copy_norm(theirs.norm1, ours.attention_norm)
    _copy_norm(theirs.norm2, ours.ffn_norm)
    return theirs


@torch.no_grad()
def copy_decoder_layer(theirs: nn.TransformerDecoderLayer, ours: nn.Module) -> nn.TransformerDecoderLayer:
    """Give ``theirs`` (``batch_first``, ReLU) the weights of attnlib's
    :class:`~attnlib.blocks.DecoderLayer` ``ours``; returns ``theirs``."""
    _copy_attention(theirs.self_attn, ours.self_attention)
    _copy_attention(theirs.multihead_attn, ours.cross_attention)
    _copy_feed_forward(theirs, ours)
    _copy_norm(theirs.norm1, ours.self_attn_norm)
    _copy_norm(theirs.norm2, ours.cross_attn_norm)
    _copy_norm(theirs.norm3, ours.ffn_norm)
    return theirs
