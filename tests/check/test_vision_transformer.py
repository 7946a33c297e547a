"""What only notebook 14's checks do (the rest: test_harness.py, answers/vision_transformer.py):
the answers agree with attnlib's ViT."""

from __future__ import annotations

import torch

from attnlib.vit import VisionTransformer, resize_pos_embed


def test_resize_to_the_same_grid_changes_nothing():
    pe = torch.randn(1, 17, 6)
    torch.testing.assert_close(resize_pos_embed(pe, 4), pe)


def test_the_attention_shape_answer_is_the_models():
    model = VisionTransformer(img_size=32, patch_size=4, in_chans=3, embed_dim=64, depth=6, num_heads=8)
    model(torch.rand(5, 3, 32, 32))
    assert tuple(model.attention_weights().shape) == (5, 6, 8, 65, 65)
