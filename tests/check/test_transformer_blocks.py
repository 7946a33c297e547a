"""What only notebook 10's checks do (the rest: test_harness.py, answers/transformer_blocks.py):
their references are PyTorch's and attnlib's layers, and the decoder-shuffle experiment run
afresh leaves the seed alone."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import attnlib
from attnlib import check
from attnlib.blocks import sinusoidal_encoding
from attnlib.check import transformer_blocks as blocks_checks
from attnlib.torch_reference import copy_encoder_layer
from attnlib.transformer import Transformer
from tests.check.answers.transformer_blocks import right_rms, right_target_mask, torch_rms

# ----------------------------------------------------------------------------- the references


def test_target_mask_reference_is_the_transformers_on_left_padded_targets():
    tgt = torch.tensor([[1, 5, 6, 3, 7], [0, 0, 1, 4, 3], [0, 0, 0, 0, 1]])  # padded on the left
    lengths = (tgt != 0).sum(dim=1)  # (B,): 5, 3, 1
    torch.manual_seed(0)
    model = Transformer(8, 8, dim=8, n_heads=2, n_layers=1, hidden_dim=8, max_seq_len=16)
    reference = blocks_checks._reference_target_mask(lengths, 5)  # (B, 1, Tt, Tt)
    assert reference.shape == (3, 1, 5, 5)
    assert torch.equal(reference, model.generate_mask(tgt, tgt)[1])
    assert torch.equal(reference, right_target_mask(lengths, 5))
    assert not reference[1, 0, :2].any() and not reference[2, 0, :4].any()  # the rows with no key


def test_a_fully_masked_row_gets_zero_weights_and_a_zero_context():
    """What the exercise says about the rows of left pads: attnlib's attention, no NaN."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 1, 2, 5, 4, generator=gen).unbind(0)  # (B, H, Tt, Dh) each
    context, weights = attnlib.scaled_dot_product_attention(
        q, k, v, blocks_checks._reference_target_mask(torch.tensor([3]), 5)
    )
    assert not context.isnan().any() and not weights.isnan().any()
    assert torch.equal(weights[0, :, :2], torch.zeros(2, 2, 5)) and torch.equal(
        context[0, :, :2], torch.zeros(2, 2, 4)
    )
    torch.testing.assert_close(weights[0, :, 2:].sum(-1), torch.ones(2, 3))


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


def test_stack_reference_is_pre_ln_layers_then_a_final_norm_all_distinct():
    for args in (blocks_checks.STACK_ARGS, (12, 3, 24, 3, 0.2)):
        stack = blocks_checks._reference(False, *args)
        assert not stack.training and all(layer.norm_first for layer in stack.layers)
        attentions, ffns, norms = stack.roles()
        assert len(attentions) == len(ffns) == args[3] and len(norms) == 2 * args[3] + 1
        gammas = [n.gamma for n in norms]
        assert all(not torch.equal(a, b) for i, a in enumerate(gammas) for b in gammas[i + 1 :])
        x = torch.randn(2, 5, args[0])
        mask = attnlib.padding_mask(torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]), 0)
        h = x
        for layer in stack.layers:
            h = h + layer.attention(layer.attention_norm(h), mask=mask)
            h = h + layer.feed_forward(layer.ffn_norm(h))
        torch.testing.assert_close(stack(x, mask), stack.final_norm(h))


def test_pre_ln_stack_equals_torchs_encoder_with_its_final_norm():
    """The reference of 10.4 is PyTorch's pre-LN nn.TransformerEncoder with its norm, weight by weight."""
    stack = blocks_checks._reference(False, *blocks_checks.STACK_ARGS)
    layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=True, layer_norm_eps=1e-6)
    theirs = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, eps=1e-6), enable_nested_tensor=False)
    for torch_layer, ours in zip(theirs.layers, stack.layers, strict=True):
        copy_encoder_layer(torch_layer, ours)
    with torch.no_grad():
        theirs.norm.weight.copy_(stack.final_norm.gamma)
        theirs.norm.bias.copy_(stack.final_norm.beta)
    x = torch.randn(2, 5, 8)
    mask = attnlib.padding_mask(torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]), 0)
    out = theirs.eval()(x, src_key_padding_mask=attnlib.to_masked_out(mask[:, 0, 0]))
    torch.testing.assert_close(stack(x, mask), out)


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


def test_the_decoder_shuffle_experiment_run_afresh_leaves_the_seed_alone():
    state = torch.random.get_rng_state()
    blocks_checks._decoder_experiment.cache_clear()  # run the experiment itself, not its cached result
    check.decoder_shuffle("changed", "unchanged", 1)
    assert torch.equal(state, torch.random.get_rng_state())
