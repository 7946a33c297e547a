"""What only notebook 11's checks do (the rest: test_harness.py, answers/transformer.py): their
references are an exhaustive search and PyTorch's cross-entropy, the toy table runs through
attnlib's decoders, and a prediction counts its wrong parts."""

from __future__ import annotations

import itertools

import pytest
import torch

from attnlib import check
from attnlib.check import transformer as tr_checks
from attnlib.transformer import Transformer
from tests.check.answers.transformer import HEADS, LAYERS, MAP_COUNT

# ----------------------------------------------------------------------------- the references


def test_beam_step_reference_keeps_the_k_best_sequences():
    """Iterated from one live beam with K large enough to keep every prefix, the step ends with
    exactly the K most likely sequences (found by enumerating all of them) and their totals."""
    gen = torch.Generator().manual_seed(0)
    k, v, steps = 9, 3, 3  # K = V ** (steps - 1): no prefix is ever dropped, so the search is exact
    table = torch.log_softmax(torch.randn(v, v, generator=gen) * 2, dim=-1)  # next token | last token
    scores = torch.tensor([[0.0] + [float("-inf")] * (k - 1)])  # (1, K)
    prefixes = [[0] for _ in range(k)]  # every sequence starts with token 0
    for _ in range(steps):
        log_probs = table[[p[-1] for p in prefixes]][None]  # (1, K, V)
        scores, beam, token = tr_checks._reference_beam_step(scores, log_probs)
        prefixes = [prefixes[b] + [t] for b, t in zip(beam[0].tolist(), token[0].tolist(), strict=True)]
    every = {
        seq: sum(table[a, b].item() for a, b in itertools.pairwise((0, *seq)))
        for seq in itertools.product(range(v), repeat=steps)
    }
    best = sorted(every.items(), key=lambda item: -item[1])[:k]
    assert [tuple(p[1:]) for p in prefixes] == [seq for seq, _ in best]
    torch.testing.assert_close(scores[0], torch.tensor([s for _, s in best]))


def test_pytorch_smooths_over_all_v_classes_and_averages_over_real_tokens():
    """What exercise 11.4 teaches is what F.cross_entropy computes: the target (1 - eps) * one-hot
    + eps / V (the target class included), the mean over the positions whose target is not pad_id."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 4, generator=gen)  # (B, T, V)
    target = torch.tensor([[1, 2, 3], [3, 0, 0]])  # pad_id 0
    eps, v = 0.2, 4
    smoothed = (1 - eps) * torch.nn.functional.one_hot(target, v) + eps / v
    per_token = -(smoothed * torch.log_softmax(logits, dim=-1)).sum(dim=-1)  # (B, T)
    expected = per_token[target != 0].mean()
    torch.testing.assert_close(tr_checks._reference_smoothed_loss(logits, target, eps, 0), expected)
    torch.testing.assert_close(tr_checks._smoothed_loss(logits, target, eps, 0), expected)


def test_the_toy_table_runs_through_attnlibs_decoders():
    assert tr_checks._decode_table(None) == "a"  # greedy
    assert tr_checks._decode_table(1) == "a"  # a beam of 1 is greedy
    assert tr_checks._decode_table(2) == "b"
    assert tr_checks._sequence_probability("a") == pytest.approx(0.5 * 0.4)
    assert tr_checks._sequence_probability("b") == pytest.approx(0.4 * 0.9)
    assert tr_checks._table().sum(dim=-1).allclose(torch.ones(len(tr_checks.TABLE_TOKENS)))


# ----------------------------------------------------------------------------- predictions


def test_the_attention_map_count_is_the_models():
    torch.manual_seed(0)
    model = Transformer(10, 10, dim=64, n_heads=HEADS, n_layers=LAYERS, hidden_dim=128, dropout=0.0)
    model(torch.tensor([[5, 6, 7], [5, 0, 0]]), torch.tensor([[1, 4, 4, 2], [1, 4, 2, 0]]))
    assert sum(w.shape[1] * w.shape[2] for w in model.attention_weights().values()) == MAP_COUNT


@pytest.mark.parametrize(("greedy", "beam"), [("b", "b"), ("ab", "b"), ("a", "a"), ("a", "ab")])
def test_greedy_vs_beam_says_wrong_once_per_wrong_part(greedy, beam):
    verdict = check.greedy_vs_beam(greedy, beam)
    assert verdict.message.count("Wrong: ") == 1 + (greedy != "a") + (beam != "b")
