"""A decoder-only Transformer (GPT): pre-LN blocks, learned positions, generation.

Shapes: ``B`` batch, ``T`` tokens (``Tq`` new queries, ``Tk`` cached + new keys), ``D`` model
width, ``H`` heads, ``Dh = D / H`` head width, ``L`` layers, ``V`` vocabulary.

Taught in notebook 12 (a GPT with a KV cache).

Built from attnlib's own parts: each :class:`GPTBlock` is pre-LN (Xiong et al., 2020),
``x + attention(LayerNorm(x))`` with the causal :class:`~attnlib.multihead.MultiHeadAttention`
of notebook 05, then ``x + FeedForward(LayerNorm(x))``; the stack ends in a LayerNorm and a
linear head. Positions are **learned** embeddings, as in GPT (Radford et al., 2018), so the
model reads at most ``context_length`` tokens.

:meth:`GPT.generate` samples with :mod:`attnlib.sampling` and, by default, keeps every layer's
keys and values in a :class:`~attnlib.kv_cache.KVCache`; :func:`complete` generates greedy
completions cut at EOS, and :func:`encode_prompt` turns a typed prompt into ids.
:class:`NextTokenModel` gives a GPT the call of the seq2seq protocol, ``model(src, tgt)`` (the
part that :func:`attnlib.training.train` needs), so ``train`` trains it.

``n_heads`` here is what the rest of attnlib calls ``num_heads`` (the number of heads ``H``);
the published signatures of :class:`GPT` and :class:`GPTBlock` keep the short name.
"""

from __future__ import annotations

import torch
from torch import nn

from . import kv_cache, sampling
from ._validate import (
    require_divisible,
    require_length,
    require_positive_int,
    require_probability,
    require_token_ids,
)
from .blocks import FeedForward, LayerNorm
from .data import Vocab
from .modes import evaluating
from .multihead import MultiHeadAttention

__all__ = ["GPT", "GPTBlock", "NextTokenModel", "complete", "encode_prompt"]


class GPTBlock(nn.Module):
    """One pre-LN decoder-only block: ``x + attn(LN(x))``, then ``x + ffn(LN(x))``.

    Args:
        dim: model width ``D``.
        n_heads: heads ``H`` (``dim`` must be a multiple); attnlib's ``num_heads``.
        hidden_dim: feed-forward width ``F``.
        context_length: longest sequence accepted.
        dropout: dropout on attention weights, inside the feed-forward block and on each
            sublayer's output.
    """

    def __init__(
        self, dim: int, n_heads: int, hidden_dim: int, context_length: int, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.attention_norm = LayerNorm(dim)
        self.attention = MultiHeadAttention(dim, dim, context_length, dropout, n_heads, qkv_bias=True)
        self.ffn_norm = LayerNorm(dim)
        self.feed_forward = FeedForward(dim, hidden_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, cache: kv_cache.KVCache | None = None, layer: int = 0) -> torch.Tensor:
        """Args: x ``(B, T, D)``; cache: if given, ``x`` holds the positions after the cached ones.
        Returns: ``(B, T, D)``."""
        h = self.attention_norm(x)
        if cache is None:
            attended = self.attention(h)  # causal: the module applies its own mask
        else:
            attended = kv_cache.cached_attention(self.attention, h, cache, layer)
        x = x + self.dropout(attended)
        return x + self.dropout(self.feed_forward(self.ffn_norm(x)))


class GPT(nn.Module):
    """Token and learned position embeddings, ``L`` pre-LN blocks, a final LayerNorm, a linear head.

    Weights start ``N(0, 0.02)`` as in GPT (Radford et al., 2018, §4.1), biases at 0. GPT-2's
    extra ``1/sqrt(N)`` scaling of the residual layers' weights (Radford et al., 2019, §2.3) is
    not applied: every ``nn.Linear`` starts at std 0.02.

    Args:
        vocab_size: vocabulary size ``V``.
        context_length: longest sequence the model reads (its learned positions).
        dim: model width ``D``.
        n_heads: heads ``H`` (attnlib's ``num_heads``, published here as ``n_heads``).
        n_layers: blocks ``L``.
        hidden_dim: feed-forward width; ``4 * dim`` if None.
        dropout: dropout probability on embeddings, attention weights and sublayers.
        tie_weights: share the token embedding with the output head, as GPT's
            ``softmax(h W_e^T)`` (Radford et al., 2018, eq. 2; Press & Wolf, 2017).
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        dim: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        hidden_dim: int | None = None,
        dropout: float = 0.0,
        *,
        tie_weights: bool = False,
    ) -> None:
        super().__init__()
        require_divisible(dim, n_heads, "dim", "n_heads")
        self.vocab_size = require_positive_int("vocab_size", vocab_size)
        self.context_length = require_positive_int("context_length", context_length)
        self.dim, self.n_heads, self.n_layers = dim, n_heads, require_positive_int("n_layers", n_layers)
        hidden_dim = 4 * dim if hidden_dim is None else hidden_dim
        self.token_embedding = nn.Embedding(vocab_size, dim)
        self.position_embedding = nn.Embedding(context_length, dim)
        self.dropout = nn.Dropout(require_probability("dropout", dropout))
        self.blocks = nn.ModuleList(
            [GPTBlock(dim, n_heads, hidden_dim, context_length, dropout) for _ in range(n_layers)]
        )
        self.final_norm = LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        if tie_weights:
            self.head.weight = self.token_embedding.weight  # (V, D): one matrix, used both ways

    def require_ids(self, idx: torch.Tensor, name: str = "idx", past: int = 0) -> None:
        """Raise unless ``idx`` is a ``(B, T)`` integer tensor of ids in ``[0, V)`` that fits the context
        after ``past`` cached positions."""
        require_token_ids(name, idx, self.vocab_size)
        what = "context_length" if not past else f"context_length (with {past} cached)"
        require_length(name, past + idx.shape[1], self.context_length, what)

    def new_cache(self) -> kv_cache.KVCache:
        """An empty :class:`KVCache` with one entry per block."""
        return kv_cache.KVCache(self.n_layers)

    def forward(self, idx: torch.Tensor, cache: kv_cache.KVCache | None = None) -> torch.Tensor:
        """Next-token logits at every position.

        Args:
            idx: ``(B, T)`` token ids.
            cache: if given, ``idx`` continues the cached positions (their keys and values
                are read, the new ones appended); None runs the whole sequence.

        Returns:
            logits ``(B, T, V)``; row ``t`` predicts token ``t + 1`` from tokens ``0..t``.
        """
        past = 0 if cache is None else len(cache)
        self.require_ids(idx, past=past)
        positions = torch.arange(past, past + idx.shape[1], device=idx.device)  # (T,)
        x = self.dropout(self.token_embedding(idx) + self.position_embedding(positions))  # (B, T, D)
        for layer, block in enumerate(self.blocks):
            x = block(x, cache, layer)
        return self.head(self.final_norm(x))  # (B, T, D) -> (B, T, V)

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        use_cache: bool = True,
        generator: torch.Generator | None = None,
        *,
        top_p: float | None = None,
    ) -> torch.Tensor:
        """Append ``max_new_tokens`` tokens, each sampled from the model's next-token distribution.

        Runs in eval mode (no dropout) and restores the previous mode. Without the cache each
        step runs the model on the whole sequence so far; with it, the prompt is run once and
        each later step feeds only the newest token.

        Args:
            idx: ``(B, T)`` prompt ids; ``T + max_new_tokens`` must fit ``context_length``.
            max_new_tokens: tokens to generate (0 returns the prompt).
            temperature: divides the logits; 0 means greedy (always the most likely token).
            top_k: sample only among the ``top_k`` most likely tokens (None: all ``V``).
            use_cache: keep every layer's keys and values (:class:`~attnlib.kv_cache.KVCache`).
            generator: random numbers for sampling, for reproducible draws.
            top_p: sample only among the fewest most likely tokens whose probability reaches
                ``top_p`` (nucleus sampling; None: all).

        Returns:
            ``(B, T + max_new_tokens)`` ids: the prompt, then the new tokens.
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"expected max_new_tokens, an int >= 0, got {max_new_tokens!r}")
        self.require_ids(idx)
        require_length("prompt + max_new_tokens", idx.shape[1] + max_new_tokens, self.context_length)
        sampling.require_sampling(temperature, top_k, top_p)
        with evaluating(self):
            cache = self.new_cache() if use_cache else None
            step_input = idx
            for _ in range(max_new_tokens):
                logits = self(step_input, cache)[:, -1]  # (B, V): the last position's prediction
                next_token = sampling.sample_next(logits, temperature, top_k, generator, top_p=top_p)  # (B,)
                idx = torch.cat([idx, next_token[:, None]], dim=1)  # (B, T + 1)
                step_input = next_token[:, None] if use_cache else idx
        return idx


class NextTokenModel(nn.Module):
    """A GPT behind the call ``model(src, tgt)`` of the seq2seq protocol, so that ``train`` trains it.

    ``model(src, tgt)`` returns ``gpt(tgt[:, :-1])``: logits ``(B, Tt - 1, V)`` predicting
    ``tgt[:, 1:]``, i.e. next-token prediction on the whole line ``SOS ... EOS`` (the source,
    the prompt, only groups batches). The GPT is a submodule: training this trains it.

    Args:
        gpt: the model to train.
    """

    def __init__(self, gpt: GPT) -> None:
        super().__init__()
        self.gpt = gpt

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Args: src ``(B, Ts)`` (unused); tgt ``(B, Tt)`` ``SOS line EOS``. Returns: ``(B, Tt - 1, V)``."""
        return self.gpt(tgt[:, :-1])


def encode_prompt(vocab: Vocab, prompt: str) -> torch.Tensor:
    """``SOS`` and the prompt's characters as a ``(1, T)`` batch (unknown characters become UNK)."""
    ids = [vocab.sos_id] + (vocab.encode(prompt) if prompt else [])
    return torch.tensor([ids])  # (1, T)


@torch.no_grad()
def complete(
    model: GPT, prompts: torch.Tensor, max_new_tokens: int, eos_id: int, *, use_cache: bool = True
) -> torch.Tensor:
    """Greedy completions of a batch of equally long prompts, cut after the first EOS.

    Args:
        model: the GPT.
        prompts: ``(B, T)`` ids (e.g. ``SOS`` then the prompt's characters).
        max_new_tokens: most tokens to add.
        eos_id: the id that ends a completion; everything after it becomes ``eos_id`` too.
        use_cache: generate with the KV cache (see :meth:`GPT.generate`).

    Returns:
        ``(B, max_new_tokens)`` the new ids only.
    """
    new = model.generate(prompts, max_new_tokens, temperature=0.0, use_cache=use_cache)[:, prompts.shape[1] :]
    ended = (new == eos_id).long().cummax(dim=1).values.bool()  # (B, N): at or after the first EOS
    return new.masked_fill(ended, eos_id)
