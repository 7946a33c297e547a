"""Deprecated alias: moved to attnlib.check.efficient_attention in 0.2.0; removed in 0.3.0."""

from .._deprecated import moved

__getattr__, __dir__ = moved(__name__, "attnlib.check.efficient_attention")
