"""A decoder-only Transformer (GPT) with sampling and a key-value cache.

Shapes: ``B`` batch, ``T`` tokens (``Tq`` new queries, ``Tk`` cached + new keys), ``D`` model
width, ``H`` heads, ``Dh = D / H`` head width, ``L`` layers, ``V`` vocabulary.

Built from attnlib's own parts: each :class:`GPTBlock` is pre-LN (Xiong et al., 2020),
``x + attention(LayerNorm(x))`` with the causal :class:`~attnlib.multihead.MultiHeadAttention`
of notebook 05, then ``x + FeedForward(LayerNorm(x))``; the stack ends in a LayerNorm and a
linear head. Positions are **learned** embeddings, as in GPT (Radford et al., 2018), so the
model reads at most ``context_length`` tokens.

The KV cache: during generation each attention layer keeps the keys and values of every
position it has seen (:class:`KVCache`), so a new token costs one query against the cache
instead of a forward pass over the whole prefix. :func:`cached_attention` computes that step
with the very weights of the layer's ``MultiHeadAttention`` (whose own ``forward`` takes no
cache); the tests check it equals the module's ``forward``.
"""

from __future__ import annotations

import random

import torch
from torch import nn

from ._checks import check_divisible, check_length, check_positive_int, check_probability, check_rank
from .blocks import FeedForward, LayerNorm, add_norm
from .functional import scaled_dot_product_attention
from .multihead import MultiHeadAttention, merge_heads, split_heads


class KVCache:
    """The keys and values of past positions, one pair of tensors per attention layer.

    Grows by concatenation, so its ``nbytes`` is exactly what ``T`` cached positions need:
    ``2 * L * B * H * T * Dh * element_size``.

    Args:
        n_layers: attention layers ``L``.
    """

    def __init__(self, n_layers: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * check_positive_int("n_layers", n_layers)
        self.values: list[torch.Tensor | None] = [None] * n_layers

    def __len__(self) -> int:
        """Cached positions ``T`` (0 when empty)."""
        # The last layer is extended last, so during a forward pass this stays the length
        # before the pass until every layer has appended its new keys.
        return 0 if self.keys[-1] is None else self.keys[-1].shape[2]

    def __repr__(self) -> str:
        shape = None if self.keys[0] is None else tuple(self.keys[0].shape)
        return f"KVCache({len(self.keys)} layers, keys and values of shape {shape} each)"

    def append(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' keys and values of ``layer``; return all of them.

        Args:
            layer: which attention layer, ``0 <= layer < L``.
            keys, values: ``(B, H, Tq, Dh)`` of the new positions.

        Returns:
            ``(keys, values)``, each ``(B, H, Tk, Dh)`` with ``Tk`` = cached + new.
        """
        if self.keys[layer] is not None:
            keys = torch.cat(
                [self.keys[layer], keys], dim=2
            )  # (B, H, T, Dh) + (B, H, Tq, Dh) -> (B, H, Tk, Dh)
            values = torch.cat([self.values[layer], values], dim=2)
        self.keys[layer], self.values[layer] = keys, values
        return keys, values

    @property
    def nbytes(self) -> int:
        """Bytes held by every cached key and value tensor."""
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)


def cached_attention(
    attention: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """Causal self-attention of the new positions ``x`` against the cache, with ``attention``'s weights.

    The new positions come after the ``T`` cached ones: query ``i`` (position ``T + i``) may
    attend to keys ``0 .. T + i``, rows ``T .. T + Tq`` of the causal mask. One new token
    (``Tq = 1``) sees every key. Appends the new keys and values to the cache.

    Args:
        attention: a causal :class:`MultiHeadAttention` (its weights and mask are used).
        x: ``(B, Tq, D)`` inputs of the new positions.
        cache: the cache of the model; ``layer``'s entry is read and extended.
        layer: which attention layer this is.

    Returns:
        ``(B, Tq, D)``, what ``attention(whole_sequence)[:, T:]`` would return.
    """
    check_rank("x", x, (3,), "(B, Tq, D)")
    past, tq = len(cache), x.shape[1]
    check_length("cache + x", past + tq, attention.context_length)
    queries = split_heads(attention.W_query(x), attention.num_heads)  # (B, H, Tq, Dh)
    keys, values = cache.append(
        layer,
        split_heads(attention.W_key(x), attention.num_heads),  # (B, H, Tq, Dh)
        split_heads(attention.W_value(x), attention.num_heads),
    )  # (B, H, Tk, Dh) each, Tk = past + Tq
    mask = None if tq == 1 else attention.mask[past : past + tq, : past + tq]  # (Tq, Tk)
    context, weights = scaled_dot_product_attention(
        queries, keys, values, mask, dropout_p=attention.dropout.p if attention.training else 0.0
    )  # (B, H, Tq, Dh), (B, H, Tq, Tk)
    attention.last_attn_weights = weights.detach()
    return attention.out_proj(merge_heads(context))  # (B, H, Tq, Dh) -> (B, Tq, D)


class GPTBlock(nn.Module):
    """One pre-LN decoder-only block: ``x + attn(LN(x))``, then ``x + ffn(LN(x))``.

    Args:
        dim: model width ``D``.
        n_heads: heads ``H`` (``dim`` must be a multiple).
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

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        """Args: x ``(B, T, D)``; cache: if given, ``x`` holds the positions after the cached ones.
        Returns: ``(B, T, D)``."""
        if cache is None:
            attend = self.attention  # causal: the module applies its own mask
        else:
            attend = lambda h: cached_attention(self.attention, h, cache, layer)  # noqa: E731
        x = add_norm(x, attend, self.attention_norm, self.dropout, norm_first=True)
        return add_norm(x, self.feed_forward, self.ffn_norm, self.dropout, norm_first=True)


class GPT(nn.Module):
    """Token and learned position embeddings, ``L`` pre-LN blocks, a final LayerNorm, a linear head.

    Weights start ``N(0, 0.02)`` as in GPT (Radford et al., 2018), biases at 0.

    Args:
        vocab_size: vocabulary size ``V``.
        context_length: longest sequence the model reads (its learned positions).
        dim: model width ``D``.
        n_heads: heads ``H``.
        n_layers: blocks ``L``.
        hidden_dim: feed-forward width; ``4 * dim`` if None.
        dropout: dropout probability on embeddings, attention weights and sublayers.
        tie_weights: share the token embedding with the output head (Press & Wolf, 2017).
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
        check_divisible(dim, n_heads, "dim", "n_heads")
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.context_length = check_positive_int("context_length", context_length)
        self.dim, self.n_heads, self.n_layers = dim, n_heads, check_positive_int("n_layers", n_layers)
        hidden_dim = 4 * dim if hidden_dim is None else hidden_dim
        self.token_embedding = nn.Embedding(vocab_size, dim)
        self.position_embedding = nn.Embedding(context_length, dim)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
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

    def check_ids(self, idx: torch.Tensor, name: str = "idx", past: int = 0) -> None:
        """Raise unless ``idx`` is a ``(B, T)`` integer tensor of ids in ``[0, V)`` that fits the context."""
        check_rank(name, idx, (2,), "(B, T) token ids")
        if idx.is_floating_point() or idx.dtype == torch.bool:
            raise TypeError(f"expected {name} to hold integer token ids, got dtype {idx.dtype}")
        if idx.shape[1] == 0:
            raise ValueError(f"expected {name} with at least one token, got shape {tuple(idx.shape)}")
        what = "context_length" if not past else f"context_length (with {past} cached)"
        check_length(name, past + idx.shape[1], self.context_length, what)
        if int(idx.min()) < 0 or int(idx.max()) >= self.vocab_size:
            raise ValueError(
                f"expected {name} ids in [0, {self.vocab_size}) (the model's vocabulary), "
                f"got ids from {int(idx.min())} to {int(idx.max())}"
            )

    def new_cache(self) -> KVCache:
        """An empty :class:`KVCache` with one entry per block."""
        return KVCache(self.n_layers)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits at every position.

        Args:
            idx: ``(B, T)`` token ids.
            cache: if given, ``idx`` continues the cached positions (their keys and values
                are read, the new ones appended); None runs the whole sequence.

        Returns:
            logits ``(B, T, V)``; row ``t`` predicts token ``t + 1`` from tokens ``0..t``.
        """
        past = 0 if cache is None else len(cache)
        self.check_ids(idx, past=past)
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
            use_cache: keep every layer's keys and values (:class:`KVCache`).
            generator: random numbers for sampling, for reproducible draws.

        Returns:
            ``(B, T + max_new_tokens)`` ids: the prompt, then the new tokens.
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"expected max_new_tokens, an int >= 0, got {max_new_tokens!r}")
        self.check_ids(idx)
        check_length("prompt + max_new_tokens", idx.shape[1] + max_new_tokens, self.context_length)
        check_sampling(temperature, top_k)
        was_training = self.training
        self.eval()
        try:
            cache = self.new_cache() if use_cache else None
            step_input = idx
            for _ in range(max_new_tokens):
                logits = self(step_input, cache)[:, -1]  # (B, V): the last position's prediction
                next_token = sample_next(logits, temperature, top_k, generator)  # (B,)
                idx = torch.cat([idx, next_token[:, None]], dim=1)  # (B, T + 1)
                step_input = next_token[:, None] if use_cache else idx
        finally:
            self.train(was_training)
        return idx


def check_sampling(temperature: float, top_k: int | None) -> None:
    """Raise unless ``temperature >= 0`` and ``top_k`` is None or a positive int."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"expected temperature >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"expected top_k, a number of tokens >= 1 (or None for all), got {top_k!r}")


def top_k_logits(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the others to ``-inf`` (Fan et al., 2018).

    Ties with the ``k``-th largest are kept. ``k`` larger than ``V`` keeps everything.

    Args:
        logits: ``(..., V)``.
        k: tokens to keep, or None for all.

    Returns:
        ``(..., V)`` logits.
    """
    if k is None or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
    return logits.masked_fill(logits < kth, float("-inf"))


def next_token_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """The distribution generation samples from: ``softmax(top_k(logits) / temperature)``.

    Temperature 0 is the limit: all probability on the most likely token (the first one
    if several tie).

    Args:
        logits: ``(..., V)``.
        temperature: ``> 1`` flattens, ``< 1`` sharpens, 0 is greedy.
        top_k: keep only the ``top_k`` most likely tokens (None: all).

    Returns:
        ``(..., V)`` probabilities summing to 1.
    """
    check_sampling(temperature, top_k)
    if temperature == 0:
        greedy = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
        return torch.zeros_like(logits).scatter_(-1, greedy, 1.0)
    return torch.softmax(top_k_logits(logits, top_k) / temperature, dim=-1)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one token per row from :func:`next_token_probs` (argmax when ``temperature == 0``).

    Args:
        logits: ``(B, V)``.
        temperature, top_k: as :func:`next_token_probs`.
        generator: random numbers for the draw.

    Returns:
        ``(B,)`` token ids.
    """
    check_rank("logits", logits, (2,), "(B, V)")
    if temperature == 0:
        check_sampling(temperature, top_k)
        return logits.argmax(dim=-1)
    probs = next_token_probs(logits, temperature, top_k)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


# --- a task that needs no download: addition written out ----------------------------------


def addition_lines(n: int | None = None, seed: int = 0, *, digits: int = 2) -> list[tuple[str, str]]:
    """Additions ``a+b=c`` written at a fixed width: ``"07+12=019"`` for 7 + 12.

    Operands have ``digits`` digits, the sum ``digits + 1``, all zero-padded, so every line
    has the same length and the same column always holds the same kind of digit.

    Args:
        n: how many lines, drawn without repetition; None gives all ``(10**digits)**2`` of
            them in a seeded order.
        seed: the same seed gives the same lines in the same order.
        digits: digits per operand.

    Returns:
        ``(prompt, line)`` pairs, e.g. ``("07+12=", "07+12=019")``.
    """
    check_positive_int("digits", digits)
    size = 10**digits
    order = list(range(size * size))
    random.Random(seed).shuffle(order)
    if n is not None:
        if not 1 <= n <= len(order):
            raise ValueError(f"expected n in [1, {len(order)}] (distinct additions), got {n}")
        order = order[:n]
    lines = []
    for i in order:
        a, b = divmod(i, size)
        prompt = f"{a:0{digits}d}+{b:0{digits}d}="
        lines.append((prompt, f"{prompt}{a + b:0{digits + 1}d}"))
    return lines


class NextTokenModel(nn.Module):
    """A GPT behind the seq2seq protocol of :mod:`attnlib.training`, so that ``train`` trains it.

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

    Returns:
        ``(B, max_new_tokens)`` the new ids only.
    """
    new = model.generate(prompts, max_new_tokens, temperature=0.0, use_cache=use_cache)[:, prompts.shape[1] :]
    ended = (new == eos_id).long().cummax(dim=1).values.bool()  # (B, N): at or after the first EOS
    return new.masked_fill(ended, eos_id)
