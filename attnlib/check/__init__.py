"""Exercise checks: one call per exercise, e.g. ``check.sliding_window_mask(my_sliding_window_mask)``.

Each check runs the student's code on several cases against attnlib's reference and returns
a :class:`Verdict` that says which case failed, expected vs got, and a hint aimed at the
typical mistake. Topic modules: ``attention`` (notebooks 01-02), ``masking`` (03),
``dropout`` (04), ``heads`` (05), ``sequences`` (06), ``seq2seq`` (07-09), ``transformer``
(10-11), ``gpt`` (12), ``efficient`` (13), ``vit`` (14).
"""

from . import attention, dropout, efficient, gpt, heads, masking, seq2seq, sequences, transformer, vit
from ._core import Case, Mistake, Verdict, check_answer, run_check
from .attention import *  # noqa: F403
from .dropout import *  # noqa: F403
from .efficient import *  # noqa: F403
from .gpt import *  # noqa: F403
from .heads import *  # noqa: F403
from .masking import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .sequences import *  # noqa: F403
from .transformer import *  # noqa: F403
from .vit import *  # noqa: F403

__all__ = [
    "Case",
    "Mistake",
    "Verdict",
    "check_answer",
    "run_check",
    *attention.__all__,
    *dropout.__all__,
    *heads.__all__,
    *masking.__all__,
    *sequences.__all__,
    *seq2seq.__all__,
    *transformer.__all__,
    *gpt.__all__,
    *efficient.__all__,
    *vit.__all__,
]
