"""A small vision transformer (Dosovitskiy et al., 2021) on attnlib's fused-qkv ``Attention``.

Shapes: ``B`` batch, ``C`` channels, ``Hi``/``Wi`` image height and width, ``P`` patch side,
``Gh``/``Gw`` = ``Hi/P``/``Wi/P`` the patch grid, ``N = Gh * Gw`` patches, ``T = N + 1``
tokens (the class token first), ``D`` model width, ``H`` heads, ``L`` layers, ``K`` classes.

Taught in notebook 14 (attention in vision).

An image becomes a sequence: cut it into ``P x P`` patches, flatten each (channel-major,
``C * P * P`` numbers, the order of a ``Conv2d`` kernel), map it linearly to ``D``, put a
learned class token in front and add learned position embeddings. Pre-LN blocks (LayerNorm,
attention, residual; LayerNorm, MLP, residual) follow, then a final LayerNorm; the head reads
the class token only. Names follow timm's ``VisionTransformer`` (R. Wightman): ``patch_embed``,
``cls_token``, ``pos_embed``, ``blocks``, ``norm``, ``head``; each block ``norm1``, ``attn``,
``norm2``, ``mlp``.

What a trained model attends to, and whether that explains its predictions, is probed in
:mod:`attnlib.vit_probes` (attention rollout, occluding patches).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_divisible, require_positive_int, require_probability, require_rank
from .blocks import LayerNorm, sinusoidal_encoding
from .fused_qkv import Attention

__all__ = [
    "Block",
    "Mlp",
    "PatchEmbed",
    "VisionTransformer",
    "patchify",
    "resize_pos_embed",
    "sincos_2d_position_embedding",
]


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into non-overlapping square patches and flatten each one.

    Patches are numbered row by row over the grid; each is flattened channel first, then row,
    then column: the order of ``F.unfold(images, patch_size, stride=patch_size)`` and of a
    ``Conv2d`` kernel ``(D, C, P, P)``.

    Args:
        images: ``(B, C, Hi, Wi)``.
        patch_size: ``P``; must divide ``Hi`` and ``Wi``.

    Returns:
        ``(B, N, C * P * P)``.
    """
    require_rank("images", images, (4,), "(B, C, Hi, Wi)")
    p = require_positive_int("patch_size", patch_size)
    b, c, h, w = images.shape
    if h % p or w % p:
        raise ValueError(
            f"image size {h}x{w} is not divisible by patch_size={p}; choose a patch size that divides both"
        )
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, Hi, Wi) -> (B, C, Gh, P, Gw, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # -> (B, Gh, Gw, C, P, P)
    return x.reshape(b, (h // p) * (w // p), c * p * p)  # -> (B, N, C*P*P)


def sincos_2d_position_embedding(grid_size: int, dim: int) -> torch.Tensor:
    """Fixed 2-D sine-cosine position embeddings for a square grid of patches.

    Half of the width encodes the patch's grid row, half its grid column, each with the 1-D
    encoding of "Attention Is All You Need" (:func:`attnlib.blocks.sinusoidal_encoding`):
    ``E[k] = [PE_{D/2}(k // G), PE_{D/2}(k % G)]`` for patch ``k`` (row by row). Row first, then
    column, is this package's convention; published code also uses the other order.

    Args:
        grid_size: ``G`` patches per side.
        dim: width ``D``, divisible by 4 (two halves of sine-cosine pairs).

    Returns:
        ``(G * G, D)``, one row per patch, no class token.
    """
    g = require_positive_int("grid_size", grid_size)
    if require_positive_int("dim", dim) % 4:
        raise ValueError(f"expected dim divisible by 4 (row and column halves of sin-cos pairs), got {dim}")
    half = sinusoidal_encoding(g, dim // 2)  # (G, D/2): one row per grid coordinate
    rows = half.repeat_interleave(g, dim=0)  # (G*G, D/2): patch k gets row k // G
    cols = half.repeat(g, 1)  # (G*G, D/2): patch k gets column k % G
    return torch.cat([rows, cols], dim=1)  # (G*G, D)


def resize_pos_embed(pos_embed: torch.Tensor, new_grid: int) -> torch.Tensor:
    """Position embeddings for a larger (or smaller) patch grid, by 2-D interpolation.

    Dosovitskiy et al. (2021, §3.2) fine-tune at a higher resolution with the same patch size,
    so the grid grows; they interpolate the learned embeddings in 2-D "according to their
    location in the original image". The class token's embedding has no location and is kept.
    Bilinear, ``align_corners=False`` (timm's ``resample_abs_pos_embed`` uses bicubic).

    Args:
        pos_embed: ``(1, 1 + G*G, D)``, the class token's embedding first.
        new_grid: ``G'`` patches per side.

    Returns:
        ``(1, 1 + G'*G', D)``.
    """
    require_rank("pos_embed", pos_embed, (3,), "(1, 1 + G*G, D)")
    g = round((pos_embed.shape[1] - 1) ** 0.5)
    if pos_embed.shape[0] != 1 or g * g != pos_embed.shape[1] - 1:
        raise ValueError(f"expected pos_embed of shape (1, 1 + G*G, D), got {tuple(pos_embed.shape)}")
    new = require_positive_int("new_grid", new_grid)
    cls, patches = pos_embed[:, :1], pos_embed[:, 1:]  # (1, 1, D), (1, G*G, D)
    d = patches.shape[-1]
    grid = patches.reshape(1, g, g, d).permute(0, 3, 1, 2)  # (1, G*G, D) -> (1, D, G, G)
    grid = torch.nn.functional.interpolate(grid, size=(new, new), mode="bilinear", align_corners=False)
    patches = grid.permute(0, 2, 3, 1).reshape(1, new * new, d)  # (1, D, G', G') -> (1, G'*G', D)
    return torch.cat([cls, patches], dim=1)  # (1, 1 + G'*G', D)


class PatchEmbed(nn.Module):
    """Image to patch tokens: :func:`patchify`, then one ``nn.Linear`` from ``C*P*P`` to ``D``.

    timm's ``PatchEmbed`` uses a ``Conv2d`` with kernel = stride = ``P``; it computes the same
    function (its weight is ``proj.weight.view(D, C, P, P)``), as the tests and notebook 14 show.

    Args:
        img_size: image side ``Hi = Wi``.
        patch_size: patch side ``P``.
        in_chans: channels ``C``.
        embed_dim: model width ``D``.
    """

    def __init__(self, img_size: int, patch_size: int, in_chans: int, embed_dim: int) -> None:
        super().__init__()
        require_positive_int("img_size", img_size)
        require_divisible(img_size, patch_size, "img_size", "patch_size")
        self.img_size = img_size
        self.patch_size = patch_size
        self.in_chans = require_positive_int("in_chans", in_chans)
        self.grid_size = img_size // patch_size
        self.num_patches = self.grid_size**2
        self.proj = nn.Linear(in_chans * patch_size**2, require_positive_int("embed_dim", embed_dim))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images ``(B, C, Hi, Wi)``. Returns: ``(B, N, D)``."""
        require_rank("images", images, (4,), "(B, C, Hi, Wi)")
        expected = (self.in_chans, self.img_size, self.img_size)
        if tuple(images.shape[1:]) != expected:
            raise ValueError(
                f"expected images of shape (B, C, Hi, Wi) with C={self.in_chans}, "
                f"Hi=Wi={self.img_size}, got {tuple(images.shape)}"
            )
        return self.proj(patchify(images, self.patch_size))  # (B, N, C*P*P) -> (B, N, D)


class Mlp(nn.Module):
    """The ViT block's MLP: ``fc2(drop(gelu(fc1(x))))`` (timm's names; the paper's GELU).

    Args:
        dim: model width ``D``.
        hidden_dim: inner width (``mlp_ratio * D``).
        drop: dropout after the GELU and after ``fc2``.
    """

    def __init__(self, dim: int, hidden_dim: int, drop: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(require_positive_int("dim", dim), require_positive_int("hidden_dim", hidden_dim))
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop = nn.Dropout(require_probability("drop", drop))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(B, T, D)``. Returns: ``(B, T, D)``."""
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))  # (B, T, D) -> (B, T, F) -> (B, T, D)


class Block(nn.Module):
    """One pre-LN encoder block (Dosovitskiy et al., 2021, eqs. 2-3).

    ``x = x + attn(norm1(x))``, then ``x = x + mlp(norm2(x))``: the pre-LN order of notebook 10
    (``add_norm(..., norm_first=True)``), with attnlib's fused-qkv :class:`Attention` and
    :class:`~attnlib.blocks.LayerNorm` (``eps=1e-6``, as in timm's ViT).

    Args:
        dim: model width ``D``.
        num_heads: heads ``H``.
        mlp_ratio: MLP width as a multiple of ``D``.
        qkv_bias: bias in the fused qkv projection.
        proj_drop: dropout after the attention's output projection and in the MLP.
        attn_drop: dropout on the attention weights.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = False,
        proj_drop: float = 0.0,
        attn_drop: float = 0.0,
    ) -> None:
        super().__init__()
        self.norm1 = LayerNorm(dim)
        self.attn = Attention(dim, num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.norm2 = LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=proj_drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(B, T, D)``. Returns: ``(B, T, D)``."""
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """A vision transformer for small square images; the head reads the class token.

    Args:
        img_size: image side ``Hi = Wi``.
        patch_size: patch side ``P`` (must divide ``img_size``).
        in_chans: channels ``C``.
        num_classes: classes ``K``.
        embed_dim: model width ``D``.
        depth: blocks ``L``.
        num_heads: heads ``H`` (must divide ``embed_dim``).
        mlp_ratio: MLP width as a multiple of ``D``.
        qkv_bias: bias in the fused qkv projections (timm's default for ViT).
        drop_rate: dropout on the embedded tokens, after each attention and in each MLP.
        attn_drop_rate: dropout on the attention weights.
    """

    def __init__(
        self,
        img_size: int = 8,
        patch_size: int = 2,
        in_chans: int = 1,
        num_classes: int = 10,
        embed_dim: int = 64,
        depth: int = 2,
        num_heads: int = 4,
        mlp_ratio: float = 2.0,
        qkv_bias: bool = True,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
    ) -> None:
        super().__init__()
        require_divisible(embed_dim, num_heads, "embed_dim", "num_heads")
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        n_tokens = self.patch_embed.num_patches + 1
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))  # (1, 1, D)
        self.pos_embed = nn.Parameter(torch.zeros(1, n_tokens, embed_dim))  # (1, T, D)
        self.pos_drop = nn.Dropout(require_probability("drop_rate", drop_rate))
        self.blocks = nn.ModuleList(
            [
                Block(embed_dim, num_heads, mlp_ratio, qkv_bias, drop_rate, attn_drop_rate)
                for _ in range(require_positive_int("depth", depth))
            ]
        )
        self.norm = LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, require_positive_int("num_classes", num_classes))
        # timm: truncated normal (std 0.02) for the position embeddings, a tiny normal for the
        # class token; the linear layers keep PyTorch's default initialisation here.
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)

    @property
    def num_patches(self) -> int:
        """``N``, the patches per image."""
        return self.patch_embed.num_patches

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """The sequence the first block reads: class token and patches, positions added.

        Args: images ``(B, C, Hi, Wi)``. Returns: ``(B, T, D)``, token 0 the class token.
        """
        x = self.patch_embed(images)  # (B, N, D)
        cls = self.cls_token.expand(x.shape[0], -1, -1)  # (1, 1, D) -> (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, 1 + N, D)
        return self.pos_drop(x + self.pos_embed)  # (B, T, D) + (1, T, D)

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images ``(B, C, Hi, Wi)``. Returns: every token after the final norm, ``(B, T, D)``."""
        x = self.tokens(images)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images ``(B, C, Hi, Wi)``. Returns: logits ``(B, K)``, read off the class token."""
        return self.head(self.forward_features(images)[:, 0])  # (B, D) -> (B, K)

    def attention_weights(self) -> torch.Tensor:
        """Every block's attention weights from the latest forward pass.

        Returns:
            ``(B, L, H, T, T)``; query and key 0 are the class token, ``1..N`` the patches.
        """
        weights = [block.attn.last_attn_weights for block in self.blocks]
        if any(w is None for w in weights):
            raise RuntimeError("no attention weights yet: call the model on a batch of images first")
        return torch.stack(weights, dim=1)  # L x (B, H, T, T) -> (B, L, H, T, T)
