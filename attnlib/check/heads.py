"""Deprecated alias: moved to attnlib.check.multi_head_attention in 0.2.0; removed in 0.3.0."""

from .._deprecated import moved

__getattr__, __dir__ = moved(__name__, "attnlib.check.multi_head_attention")
