"""Shared helpers of the MRC tests: data location and seeded random instances."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name: str) -> rc.Dataset:
    path = DATA / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"shared data {path} not found")
    return rc.datasets.load_csv(path)


def random_dataset(n: int, d: int, n_classes: int, seed: int) -> rc.Dataset:
    """Gaussian classes with shifted means (labels 0..n_classes-1, all present)."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    means = rng.normal(scale=1.5, size=(n_classes, d))
    X = means[y] + rng.normal(size=(n, d))
    return rc.Dataset(X, y, name=f"random{seed}")
