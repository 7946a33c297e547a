"""The fast path: attention by PyTorch's fused kernels wherever no one needs the weights.

Shapes: ``B`` batch, ``H`` heads, ``Tq``/``Tk`` query/key length.

Taught in notebook 13 (attention made efficient).

Every attention module of attnlib (:class:`~attnlib.multihead.MultiHeadAttention`,
:class:`~attnlib.fused_qkv.Attention`, :class:`~attnlib.gqa.GroupedQueryAttention`, and so the
Transformer, the GPT and the ViT built from them) declares that it has two paths by deriving from
:class:`FastPathAttention`, and has a switch, ``need_weights``. True (the default) is the explicit
path the notebooks teach: scores, softmax and weights, kept in ``last_attn_weights``
``(B, H, Tq, Tk)`` to be plotted. False is the fast path:
``torch.nn.functional.scaled_dot_product_attention``, the same function (same masks, fully masked
rows get zeros) computed without ever holding the weights, so there is nothing to plot. The modules
take either path through one call of :mod:`attnlib.functional`, which holds the choice.
:func:`fast_attention` flips the switch on every :class:`FastPathAttention` of a model.
"""

from __future__ import annotations

from torch import nn

__all__ = ["FastPathAttention", "fast_attention"]


class FastPathAttention:
    """What an attention module declares by deriving from it: "I have a fast path".

    A module that derives from this class (``class MultiHeadAttention(nn.Module, FastPathAttention)``)
    promises an attribute ``need_weights``: True runs the explicit path and keeps
    ``last_attn_weights``, False runs ``F.scaled_dot_product_attention`` and keeps None. It holds
    no parameters and no code, so deriving from it changes nothing else about a module.

    Attributes:
        need_weights: which path ``forward`` takes (set in ``__init__``; :func:`fast_attention`
            flips it).
    """

    need_weights: bool


def fast_attention(model: nn.Module, enabled: bool = True) -> nn.Module:
    """Switch every attention module in ``model`` to the fast path, or back.

    The fast path (``need_weights = False``) computes the same function with PyTorch's fused
    ``F.scaled_dot_product_attention`` and keeps no weights; the explicit path (``enabled=False``)
    keeps ``last_attn_weights`` for plotting. Notebook 13 compares the two.

    Args:
        model: a module holding attnlib attention modules (every :class:`FastPathAttention`:
            ``MultiHeadAttention``, ``Attention``, ``GroupedQueryAttention``), or one of them.
        enabled: True for the fast path, False for the explicit one.

    Returns:
        ``model`` itself, so that ``model = fast_attention(Transformer(...))`` reads as one line.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    switched = [m for m in model.modules() if isinstance(m, FastPathAttention)]
    if not switched:
        raise ValueError(
            f"expected a model with attnlib attention modules (MultiHeadAttention, Attention, "
            f"GroupedQueryAttention), found none in {type(model).__name__}"
        )
    for module in switched:
        module.need_weights = not enabled
    return model
