"""What only notebook 12's checks do (the rest: test_harness.py, answers/gpt.py): the exercises'
answers are what attnlib's GPT cache, sampler and memory formula compute, and exercise 12.2's cases
leave no rounding to decide which token reaches p."""

from __future__ import annotations

import pytest
import torch

from attnlib import GPT, cached_attention, kv_cache_bytes, next_token_probs, top_k_logits
from attnlib.check import _core
from attnlib.check import gpt as checks
from tests.check.answers.gpt import ROLLING_BYTES, ROLLING_SLOT, right_step


def test_the_step_is_what_the_gpt_cache_computes():
    # The exercise's step, with a GPT layer's projections, is attnlib's cached_attention.
    torch.manual_seed(0)
    attention = GPT(10, 8, dim=8, n_heads=2, n_layers=1).blocks[0].attention
    x = torch.randn(1, 4, 8)
    cache = GPT(10, 8, dim=8, n_heads=2, n_layers=1).new_cache()
    cached_attention(attention, x[:, :3], cache, 0)
    split = lambda t: t.view(1, -1, 2, 4).transpose(1, 2)  # noqa: E731
    k_cache, v_cache = cache.keys[0], cache.values[0]
    new = x[:, 3:]
    context, keys, values = right_step(  # the new caches
        split(attention.W_query(new)),
        split(attention.W_key(new)),
        split(attention.W_value(new)),
        k_cache,
        v_cache,
    )
    expected = cached_attention(attention, new, cache, 0)
    torch.testing.assert_close(attention.out_proj(context.transpose(1, 2).reshape(1, 1, 8)), expected)
    torch.testing.assert_close((keys, values), (cache.keys[0], cache.values[0]))


def _rows(logits: torch.Tensor) -> torch.Tensor:
    return logits.reshape(-1, logits.shape[-1])  # (..., V) -> (rows, V)


def _tied(row: torch.Tensor) -> bool:
    return len(set(row.tolist())) < len(row)


@pytest.mark.parametrize("shift", [0, 7, 1000])
def test_no_top_p_case_leaves_the_nucleus_to_rounding(shift):
    # Every running total of every case (visible or hidden) is 0.005 or more from p, and only the
    # rows written with ties have ties.
    with _core.other_draws(shift):
        cases = checks._top_p_cases()
    for case in cases:
        logits, p, temperature = case.args
        if p < 1:
            probs = torch.softmax(_rows(logits).double() / temperature, -1).sort(-1, descending=True).values
            assert (probs.cumsum(-1) - p).abs().min() >= 0.005, case.name
        tied = [row.tolist() for row in _rows(logits) if _tied(row)]
        assert tied == (checks.TIED_ROWS if "tied" in case.name else []), case.name


def test_the_top_p_reference_is_attnlibs_sampler_without_ties_and_12_1s_rule_with_them():
    for case in checks._top_p_cases():
        logits, p, temperature = case.args
        expected = checks._reference_top_p(logits, p, temperature)
        library = next_token_probs(logits, temperature, top_p=p)  # the nucleus without the ties
        for row, want, lib in zip(_rows(logits), _rows(expected), _rows(library), strict=True):
            if not _tied(row):
                torch.testing.assert_close(want, lib)
                continue
            # With ties: top-k (ties with the k-th kept) of the nucleus' size m, at the temperature.
            m = int((lib > 0).sum())
            assert (want > 0).sum() > m, f"{case.name}: the tie must add a token to {row.tolist()}"
            torch.testing.assert_close(want, torch.softmax(top_k_logits(row / temperature, m), -1))


def test_the_rolling_cache_answers_are_attnlibs_formula_and_a_rolling_buffer():
    c = checks.ROLLING_CONFIG
    length = c["prompt"] + c["generated"]
    n = kv_cache_bytes(
        n_layers=24, n_kv_heads=4, head_dim=1536 // 24, seq_len=1024, batch=3, bytes_per_value=2
    )
    assert n == ROLLING_BYTES == checks._rolling_answers()[0] == 72 * 2**20
    # A rolling buffer of W slots (int16: 2 bytes like float16, and every position exactly), written
    # position by position: its size, the last slot, and the positions it holds at the end.
    w = c["window"]
    buffer = torch.full((c["n_layers"], 2, c["batch"], c["n_kv_heads"], w, 64), -1, dtype=torch.int16)
    slots = [i % w for i in range(length)]
    for i, slot in enumerate(slots):
        buffer[..., slot, :] = i % 2**15
    assert buffer.nbytes == ROLLING_BYTES and slots[-1] == ROLLING_SLOT == checks._rolling_answers()[1]
    assert sorted(buffer[0, 0, 0, 0, :, 0].tolist()) == list(range(length - w, length))  # the last W
