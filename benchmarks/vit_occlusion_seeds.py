"""Notebook 14's occlusion test over several training seeds, with bootstrap intervals.

Run with ``python benchmarks/vit_occlusion_seeds.py`` (well under a minute per seed on one
CPU thread; ``--seeds 0 1 2`` picks them). Every seed trains notebook 14's ViT (same data split,
same model, same training loop and hyper-parameters; the seed sets the initial weights and
the batch order), then occludes every patch of every test image with 0 and prints, per seed:

* test accuracy;
* the mean drop of the true class's probability when occluding the patch picked by each score
  (rollout's most and least attended, the last layer's most attended, the most ink), by chance
  (any patch, or an inked one: exact averages over the allowed patches) and the ceiling, each
  with the 95 % bootstrap interval of its difference to a random inked patch;
* the mean Spearman correlation (average ranks for ties) of each score with the occlusion drop,
  with its 95 % bootstrap interval, and the interval of ink's minus rollout's.

Nothing here is a test; notebook 14 summarises the output, and docs/performance.md
records one run of it.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import attnlib
from attnlib.vit import VisionTransformer, patchify
from attnlib.vit_probes import attention_rollout, bootstrap_interval, occlude, rank_correlation


def fit(model, x, y, *, epochs=30, batch_size=64, lr=3e-3, weight_decay=0.05, warmup=0.1, seed=0):
    """Notebook 14's training loop (section 3), unchanged."""
    torch.manual_seed(seed)
    order = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    total = epochs * math.ceil(len(x) / batch_size)
    warm = round(warmup * total)

    def lr_factor(step):
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=order).split(batch_size):
            loss = F.cross_entropy(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    model.eval()


def one_seed(seed, x_train, y_train, x_test, y_test):
    torch.manual_seed(seed)
    model = VisionTransformer(img_size=8, patch_size=2, in_chans=1, num_classes=10,
                              embed_dim=32, depth=2, num_heads=4, mlp_ratio=2.0)  # fmt: skip
    attnlib.fast_attention(model)
    fit(model, x_train, y_train, seed=seed)
    attnlib.fast_attention(model, enabled=False)
    b, n = len(y_test), 16
    rows = torch.arange(b)
    with torch.no_grad():
        probs = torch.softmax(model(x_test), dim=-1)  # (B, 10)
        weights = model.attention_weights()  # (B, L, H, T, T)
        every = occlude(x_test.repeat_interleave(n, 0), torch.arange(n).repeat(b), patch_size=2)
        occluded = torch.softmax(model(every), dim=-1).view(b, n, 10)  # (B, N, 10)
    drop = probs[rows, y_test][:, None] - occluded[rows, :, y_test]  # (B, N)
    scores = {
        "rollout": attention_rollout(weights)[:, 0, 1:],
        "last layer": weights[:, -1, :, 0, 1:].mean(1),
        "ink": patchify(x_test, 2).sum(-1),
    }
    inked = scores["ink"] > 0
    per_image = {
        "most attended (rollout)": drop[rows, scores["rollout"].argmax(1)],
        "least attended (rollout)": drop[rows, scores["rollout"].argmin(1)],
        "most attended (last layer)": drop[rows, scores["last layer"].argmax(1)],
        "most ink": drop[rows, scores["ink"].argmax(1)],
        "random patch": drop.mean(1),
        "random inked patch": (drop * inked).sum(1) / inked.sum(1),
        "largest drop (ceiling)": drop.amax(1),
    }
    accuracy = (probs.argmax(-1) == y_test).float().mean().item()
    print(f"\nseed {seed}: test accuracy {accuracy:.4f}")
    for name, v in per_image.items():
        diff = v - per_image["random inked patch"]
        low, high = bootstrap_interval(diff)
        print(f"  {name:28s} drop {v.mean().item():.4f}   minus random inked {diff.mean().item():+.4f} "
              f"[{low:+.4f}, {high:+.4f}]")  # fmt: skip
    rhos = {name: rank_correlation(s, drop, atol=1e-6) for name, s in scores.items()}  # as notebook 14
    for name, rho in rhos.items():
        low, high = bootstrap_interval(rho)
        print(f"  Spearman {name:10s} {rho.mean().item():+.3f} [{low:+.3f}, {high:+.3f}]")
    ink_minus_rollout = bootstrap_interval(rhos["ink"] - rhos["rollout"])
    print(f"  Spearman ink minus rollout: [{ink_minus_rollout[0]:+.3f}, {ink_minus_rollout[1]:+.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    attnlib.reproducible()
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16
    labels = torch.tensor(digits.target)
    train_idx, test_idx = train_test_split(
        torch.arange(len(labels)).numpy(), test_size=360, random_state=0, stratify=digits.target
    )
    for seed in args.seeds:
        one_seed(seed, images[train_idx], labels[train_idx], images[test_idx], labels[test_idx])


if __name__ == "__main__":
    main()
