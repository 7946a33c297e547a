"""The fast path (``need_weights=False``, F.scaled_dot_product_attention) equals the explicit one.

In eval mode the two paths compute the same function: outputs and gradients agree to float
rounding, for causal, padded, windowed and fully masked cases. With dropout on, the two cannot
agree bit for bit (they draw different random masks in different places), so the dropout tests
are statistical: averaged over many draws, the fast path's output is the eval-mode output
(dropout is unbiased), and its spread per output element matches the explicit path's.
"""

from __future__ import annotations

import copy

import pytest
import torch

import attnlib
from attnlib.fast_path import fast_attention
from attnlib.functional import fused_attention, scaled_dot_product_attention
from attnlib.fused_qkv import Attention
from attnlib.gpt import GPT
from attnlib.gqa import GroupedQueryAttention
from attnlib.multihead import MultiHeadAttention
from attnlib.transformer import Transformer
from attnlib.vit import VisionTransformer
from tests import ROOT

TOL = {"atol": 1e-5, "rtol": 1e-4}


def both_paths(module: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    explicit = module.eval()
    fast = fast_attention(copy.deepcopy(module))
    return explicit, fast


def assert_same_function(explicit, fast, *inputs, **kwargs) -> None:
    """Outputs, input gradients and parameter gradients agree."""
    grads = []
    for module in (explicit, fast):
        xs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
        module.zero_grad()
        out = module(*xs, **kwargs)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        grads.append(
            (out, [x.grad for x in xs if x.is_floating_point()], [p.grad for p in module.parameters()])
        )
    (out_e, xg_e, pg_e), (out_f, xg_f, pg_f) = grads
    torch.testing.assert_close(out_f, out_e, **TOL)
    for a, b in zip(xg_f + pg_f, xg_e + pg_e, strict=True):
        torch.testing.assert_close(a, b, **TOL)


def padding(b: int, t: int, lengths: list[int]) -> torch.Tensor:
    return attnlib.length_mask(torch.tensor(lengths), t).view(b, 1, 1, t)  # (B, 1, 1, T)


@pytest.mark.parametrize("causal", [True, False])
def test_multihead_self_attention(causal):
    torch.manual_seed(0)
    explicit, fast = both_paths(MultiHeadAttention(16, 16, 12, 0.1, 4, qkv_bias=True, causal=causal))
    assert_same_function(explicit, fast, torch.randn(3, 9, 16))
    assert explicit.last_attn_weights is not None and fast.last_attn_weights is None


def test_multihead_padded_cross_attention_and_fully_masked_rows():
    torch.manual_seed(1)
    explicit, fast = both_paths(MultiHeadAttention(8, 8, 12, 0.0, 2, causal=False))
    x, memory = torch.randn(3, 5, 8), torch.randn(3, 7, 8)
    mask = padding(3, 7, [7, 4, 2]).expand(3, 1, 5, 7).clone()
    mask[1, :, 2] = False  # one query of the second sequence sees nothing: zero output there
    assert_same_function(explicit, fast, x, memory, mask=mask)
    with torch.no_grad():
        out = fast(x, memory, mask=mask)
    assert torch.allclose(out[1, 2], fast.out_proj.bias)  # zero context, then the output projection


def test_causal_with_padding_mask():
    torch.manual_seed(2)
    explicit, fast = both_paths(MultiHeadAttention(8, 8, 10, 0.0, 2))
    assert_same_function(explicit, fast, torch.randn(2, 6, 8), mask=padding(2, 6, [6, 3]))


@pytest.mark.parametrize(
    "kv_heads, window, rotary", [(4, None, False), (2, None, True), (1, 3, False), (2, 2, True)]
)
def test_grouped_query_attention_uses_enable_gqa(kv_heads, window, rotary):
    torch.manual_seed(3)
    module = GroupedQueryAttention(16, 16, 12, 0.0, 4, kv_heads, window=window, rotary=rotary)
    explicit, fast = both_paths(module)
    assert_same_function(explicit, fast, torch.randn(2, 10, 16))


def test_grouped_query_attention_padded():
    torch.manual_seed(4)
    explicit, fast = both_paths(GroupedQueryAttention(8, 8, 12, 0.0, 4, 2, causal=False))
    assert_same_function(explicit, fast, torch.randn(2, 6, 8), mask=padding(2, 6, [6, 2]))


def test_fused_qkv_attention_with_mask():
    torch.manual_seed(5)
    explicit, fast = both_paths(Attention(16, num_heads=4, qkv_bias=True))
    mask = padding(2, 5, [5, 3])
    assert_same_function(explicit, fast, torch.randn(2, 5, 16), mask=mask)


def test_whole_models_on_the_fast_path():
    torch.manual_seed(6)
    src, tgt = torch.randint(4, 20, (3, 7)), torch.randint(4, 16, (3, 6))
    src[1, 5:], tgt[2, 4:] = 0, 0  # padding
    model = Transformer(20, 16, dim=32, n_heads=4, n_layers=2, hidden_dim=64, max_seq_len=32)
    explicit, fast = both_paths(model)
    assert_same_function(explicit, fast, src, tgt)
    gpt = GPT(vocab_size=20, context_length=16, dim=32, n_heads=4, n_layers=2)
    explicit, fast = both_paths(gpt)
    assert_same_function(explicit, fast, torch.randint(0, 20, (2, 9)))
    vit = VisionTransformer(8, 4, 1, 10, embed_dim=16, depth=2, num_heads=2)
    explicit, fast = both_paths(vit)
    assert_same_function(explicit, fast, torch.randn(2, 1, 8, 8))


def test_kv_cache_step_on_the_fast_path():
    torch.manual_seed(7)
    gpt = fast_attention(GPT(vocab_size=20, context_length=16, dim=32, n_heads=4, n_layers=2).eval())
    idx = torch.randint(0, 20, (2, 9))
    cache = gpt.new_cache()
    with torch.no_grad():
        steps = [gpt(idx[:, :5], cache)] + [gpt(idx[:, i : i + 1], cache) for i in range(5, 9)]
        torch.testing.assert_close(torch.cat(steps, dim=1), gpt(idx), **TOL)


def test_fused_attention_function_equals_the_explicit_one():
    torch.manual_seed(8)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 6)
    mask = torch.rand(2, 1, 5, 7) > 0.4
    mask[0, 0, 3] = False  # a fully masked row
    torch.testing.assert_close(fused_attention(q, k, v, mask), scaled_dot_product_attention(q, k, v, mask)[0])
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    for mask in (None, padding(2, 6, [6, 4])):
        torch.testing.assert_close(
            fused_attention(q, k, v, mask, is_causal=True),
            scaled_dot_product_attention(q, k, v, mask, is_causal=True)[0],
        )
    k2, v2 = torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)  # 2 key/value heads for 4 query heads
    torch.testing.assert_close(
        fused_attention(q, k2, v2, enable_gqa=True),
        scaled_dot_product_attention(q, k2.repeat_interleave(2, 1), v2.repeat_interleave(2, 1))[0],
    )


def test_fused_attention_keeps_the_explicit_path_errors():
    q = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match="share their feature size Dk"):
        fused_attention(q, torch.randn(2, 5, 4), torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="does not broadcast to the scores' shape"):
        fused_attention(q, q, q, torch.ones(3, 5, 5, dtype=torch.bool))
    with pytest.raises(TypeError):
        fused_attention(q, q, q, torch.ones(5, 5))
    with pytest.raises(ValueError, match="leading"):  # 4 query heads over 3 key heads: no grouping
        fused_attention(
            torch.randn(1, 4, 5, 8), torch.randn(1, 3, 5, 8), torch.randn(1, 3, 5, 8), enable_gqa=True
        )


def test_modules_check_their_mask_on_both_paths():
    for need_weights in (True, False):
        module = MultiHeadAttention(8, 8, 10, 0.0, 2, causal=False, need_weights=need_weights)
        with pytest.raises(ValueError, match="does not broadcast"):
            module(torch.randn(2, 4, 8), mask=torch.ones(3, 1, 1, 4, dtype=torch.bool))


def test_fast_attention_switches_every_attention_module_and_back():
    model = Transformer(20, 16, dim=32, n_heads=4, n_layers=2, hidden_dim=64, max_seq_len=32)
    switches = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    assert len(switches) == 6
    assert fast_attention(model) is model and not any(m.need_weights for m in switches)
    fast_attention(model, enabled=False)
    assert all(m.need_weights for m in switches)
    with pytest.raises(ValueError, match="found none in Linear"):
        fast_attention(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"expected an nn\.Module"):
        fast_attention("model")


@pytest.mark.parametrize(
    "make",
    [
        lambda: MultiHeadAttention(8, 8, 6, 0.3, 2, causal=True),
        lambda: Attention(8, num_heads=2, attn_drop=0.3),
        lambda: GroupedQueryAttention(8, 8, 6, 0.3, 4, 2),
    ],
    ids=["MultiHeadAttention", "Attention", "GroupedQueryAttention"],
)
def test_dropout_on_the_fast_path_is_statistically_right(make):
    """Unbiased (mean of many draws = eval output) with the explicit path's spread.

    2,000 draws: the mean's standard error is std / 45, so a 6-standard-error band is a test
    that fails for a wrong keep-scale (1 instead of 1 / (1 - p)), a mask drawn per head instead
    of per weight, or dropout left off, and passes for a right implementation with a margin.
    """
    torch.manual_seed(9)
    explicit = make()
    fast = fast_attention(copy.deepcopy(explicit))
    x = torch.randn(1, 6, 8)
    with torch.no_grad():
        reference = explicit.eval()(x)
        explicit.train(), fast.train()
        draws = {name: torch.stack([m(x) for _ in range(2000)]) for name, m in (("e", explicit), ("f", fast))}
    for d in draws.values():
        std = d.std(dim=0)
        assert (std > 1e-3).float().mean() > 0.5  # dropout is on
        error = (d.mean(dim=0) - reference).abs()
        assert (error <= 6 * std / 2000**0.5 + 1e-6).all()  # unbiased
    ratio = draws["f"].std(dim=0) / draws["e"].std(dim=0).clamp_min(1e-6)
    visible = draws["e"].std(dim=0) > 1e-3
    assert 0.85 < ratio[visible].median() < 1.15  # the same spread


def test_the_benchmark_script_runs_its_smallest_row():
    """``make bench`` is not a test, but the script it runs must not rot: one quick row here."""
    import subprocess
    import sys

    script = ROOT / "benchmarks" / "attention.py"
    out = subprocess.run(
        [sys.executable, str(script), "--quick", "--threads", "1", "--only", "transformer"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    assert "nn.Transformer" in out and "attnlib Transformer, fast path" in out
