"""Deprecated alias: moved to attnlib.check.dot_product_attention and .trainable_weights in 0.2.0;
removed in 0.3.0."""

from .._deprecated import moved

__getattr__, __dir__ = moved(
    __name__, "attnlib.check.dot_product_attention", "attnlib.check.trainable_weights"
)
