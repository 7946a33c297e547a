"""Exercise checks for notebooks 01 to 14: one call per exercise, e.g. ``check.softmax(my_softmax)``.

Each check runs the student's code on several cases against attnlib's reference and returns
a :class:`Verdict` that says which case failed, expected vs got, and a hint aimed at the
typical mistake. One module per notebook, named after it: ``dot_product_attention`` (01),
``trainable_weights`` (02), ``masking`` (03), ``dropout`` (04), ``multi_head_attention`` (05),
``sequence_models`` (06), ``seq2seq_without_attention`` (07), ``bahdanau_attention`` (08),
``luong_attention`` (09), ``transformer_blocks`` (10), ``transformer`` (11), ``gpt`` (12),
``efficient_attention`` (13), ``vision_transformer`` (14); the machinery they share is in
``_core``, and the engine of the "build an nn.Module" exercises (5.5, 8.2, 10.4, 10.6) in
``_modules``. The package exports each notebook module's ``__all__``, in the order of
``_NOTEBOOKS``, and the core names a student may want (``Verdict`` and friends).
"""

from . import (
    bahdanau_attention,
    dot_product_attention,
    dropout,
    efficient_attention,
    gpt,
    luong_attention,
    masking,
    multi_head_attention,
    seq2seq_without_attention,
    sequence_models,
    trainable_weights,
    transformer,
    transformer_blocks,
    vision_transformer,
)
from ._core import Case, Mistake, Verdict, check_answer, run_check
from .bahdanau_attention import *  # noqa: F403
from .dot_product_attention import *  # noqa: F403
from .dropout import *  # noqa: F403
from .efficient_attention import *  # noqa: F403
from .gpt import *  # noqa: F403
from .luong_attention import *  # noqa: F403
from .masking import *  # noqa: F403
from .multi_head_attention import *  # noqa: F403
from .seq2seq_without_attention import *  # noqa: F403
from .sequence_models import *  # noqa: F403
from .trainable_weights import *  # noqa: F403
from .transformer import *  # noqa: F403
from .transformer_blocks import *  # noqa: F403
from .vision_transformer import *  # noqa: F403

_NOTEBOOKS = (
    dot_product_attention,
    trainable_weights,
    masking,
    dropout,
    multi_head_attention,
    sequence_models,
    seq2seq_without_attention,
    bahdanau_attention,
    luong_attention,
    transformer_blocks,
    transformer,
    gpt,
    efficient_attention,
    vision_transformer,
)

__all__ = [
    "Case",
    "Mistake",
    "Verdict",
    "check_answer",
    "run_check",
    *(name for module in _NOTEBOOKS for name in module.__all__),
]
