"""Shared helper of the MRC tests: seeded random instances (the real data: tests.shared_data)."""

from __future__ import annotations

import numpy as np

import ratecons as rc


def random_dataset(n: int, d: int, n_classes: int, seed: int) -> rc.Dataset:
    """Gaussian classes with shifted means (labels 0..n_classes-1, all present)."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    means = rng.normal(scale=1.5, size=(n_classes, d))
    X = means[y] + rng.normal(size=(n, d))
    return rc.Dataset(X, y, name=f"random{seed}")
