"""attnlib.viz: every plot, diagram and explorer of the series, and the only matplotlib and ipywidgets.

Every notebook, from 01 (dot-product attention) on, draws through it.

The topic modules are named by the library module whose ideas they draw, where there is one
(``viz.gpt`` for ``attnlib.gpt``, ``viz.masks`` for ``attnlib.masks`` and notebook 04's dropout
explorer), else by the notebook's topic (``viz.sequences`` for notebook 06, ``viz.efficient`` for
notebook 13's tiling, windows and rotary positions); README.md maps each notebook to its files.
``heatmaps``, ``drawing`` and ``explorers`` are the primitives they share. Every public name is
importable from here
(``from attnlib.viz import plot_attention, query_explorer``); a name's module is imported the
first time the name is asked for, so ``import attnlib.viz`` itself loads neither matplotlib nor
ipywidgets.
"""

from __future__ import annotations

import importlib

#: module -> the public names it defines
_HOMES: dict[str, tuple[str, ...]] = {
    "heatmaps": (
        "CMAP",
        "MASK_COLOURS",
        "MASK_LABELS",
        "plot_attention",
        "plot_bars",
        "replot_attention",
        "replot_bars",
    ),
    "drawing": (
        "BLOCK",
        "CONTEXT",
        "DECODER",
        "ENCODER",
        "QUERY",
        "WEIGHT",
        "arrow",
        "axes_or_new",
        "block_outline",
        "box",
        "residual_add",
    ),
    "explorers": ("explorer", "kept_figure", "retitle"),
    "functional": ("attention_diagram", "query_explorer", "temperature_explorer"),
    "masks": ("dropout_explorer", "mask_explorer"),
    "multihead": ("head_explorer", "multihead_diagram"),
    "sequences": ("gate_explorer", "lstm_diagram", "plot_lr_schedule"),
    "seq2seq": ("copy_explorer", "plot_length_curves", "seq2seq_diagram"),
    "attention_decoders": ("alignment_explorer", "decoder_step_diagram", "plot_alignment", "plot_alignments"),
    "blocks": ("positional_encoding_explorer", "transformer_layer_diagram"),
    "transformer": (
        "cross_attention_explorer",
        "decoding_loop_diagram",
        "outline_cells",
        "transformer_diagram",
    ),
    "gpt": ("gpt_diagram", "sampling_explorer"),
    "efficient": ("gpu_memory_diagram", "receptive_field_explorer", "rope_score_figure", "tiling_diagram"),
    "vit": (
        "draw_image",
        "draw_patch_map",
        "plot_class_attention",
        "plot_position_similarity",
        "token_labels",
        "vit_diagram",
        "vit_explorer",
    ),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
