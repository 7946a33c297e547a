"""Deprecated alias: moved to attnlib.check.seq2seq_without_attention, .bahdanau_attention and
.luong_attention in 0.2.0; removed in 0.3.0."""

from .._deprecated import moved

__getattr__, __dir__ = moved(
    __name__,
    "attnlib.check.seq2seq_without_attention",
    "attnlib.check.bahdanau_attention",
    "attnlib.check.luong_attention",
)
