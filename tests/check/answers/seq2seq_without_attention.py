"""Answers to the checks of notebook 07."""

from __future__ import annotations

import torch

from attnlib.data import pad_sequences
from tests.check.answers import given
from tests.check.verdicts import crashes, stub

# ----------------------------------------------------------------------------- right answers


def right_pad(seqs, pad_id):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)  # (N, T)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out


def right_pad_torch(seqs, pad_id):
    return torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(s) for s in seqs], batch_first=True, padding_value=pad_id
    )


def right_reverse(src, pad_id):
    rows = [[tok for tok in row if tok != pad_id][::-1] for row in src.tolist()]
    return pad_sequences(rows, pad_id=pad_id)


H, LAYERS = 32, 3
CONTEXT_SIZE = 2 * LAYERS * H  # hidden and cell, (L, B, H) each, directions summed

RIGHT = {
    "pad_batch": [right_pad],
    "reverse_source": [right_reverse],
    "context_size": [given(CONTEXT_SIZE, CONTEXT_SIZE), given(float(CONTEXT_SIZE), CONTEXT_SIZE)],
}

# ----------------------------------------------------------------------------- typical mistakes


def left_pad(seqs, pad_id):
    t = max(len(s) for s in seqs)
    return torch.tensor([[pad_id] * (t - len(s)) + s for s in seqs])


WRONG = {
    "pad_batch": [
        (left_pad, "pad on the right"),
        (lambda seqs, pad_id: right_pad(seqs, 0), "fill with `pad_id`"),
        (lambda seqs, pad_id: right_pad(seqs, pad_id).tolist(), "not a Python list"),
        (lambda seqs, pad_id: right_pad(seqs, pad_id).float(), "must be integers"),
    ],
    "reverse_source": [
        (lambda s, p: s.flip(1), "the padding moved to the front"),
        (lambda s, p: s.flip(0), "order of the sequences in the batch"),
        (lambda s, p: right_reverse(s, 0), "compare with pad_id"),
    ],
    "context_size": [  # (after five, after fifty) tokens
        (given(LAYERS * H, LAYERS * H), "hidden *and* cell"),
        (given(2 * H, 2 * H), "each of the 3 layers"),
        (given(H, H), "count every layer's hidden and cell"),
        (given(4 * LAYERS * H, 4 * LAYERS * H), "adds the two directions"),
        (given(5 * H, 50 * H), "never sees the encoder outputs"),
        (given(CONTEXT_SIZE, 10 * CONTEXT_SIZE), "the same size for every length"),
        (given(7, 7), "Seq2Seq.encode hands the decoder"),
    ],
}

# ----------------------------------------------------------------------------- out of reach
OUT_OF_REACH = {
    "pad_batch": [
        (pad_sequences, "hands back attnlib's own `pad_sequences`"),
        (lambda seqs, pad_id: pad_sequences(seqs, pad_id), "calls attnlib's own `pad_sequences`"),
        (right_pad_torch, "calls `nn.utils.rnn.pad_sequence`"),
    ],
}

# ----------------------------------------------------------------------------- not yet / crashes

NOT_YET = {"pad_batch": [stub], "reverse_source": [stub], "context_size": [given(..., CONTEXT_SIZE)]}
_RAISED = (crashes, "raised AttributeError", "args[0].no_such_attribute")
CRASHES = {"pad_batch": [_RAISED], "reverse_source": [_RAISED]}
