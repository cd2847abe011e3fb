"""The real UCI datasets of ../shared/data for tests: loaded, standardized, or the test skipped
when the folder is missing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name: str, groups: list[str] | tuple[str, ...] = ()) -> rc.Dataset:
    """``name``.csv as it is (``groups``: columns that become group attributes, not
    features); skips the calling test when the shared data are not there."""
    path = DATA / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return rc.datasets.load_csv(path, groups=groups)


def standardized(name: str, groups: dict[str, np.ndarray] | None = None,
                 group_of=None) -> rc.Dataset:
    """``name``.csv with every feature standardized; ``group_of(X)`` (on the raw features)
    gives named groups. Skips the calling test when the shared data are not there."""
    raw = load(name)
    X = np.asarray(raw.X, dtype=float)
    found = dict(groups or {})
    if group_of is not None:
        found.update(group_of(X))
    return rc.Dataset((X - X.mean(0)) / X.std(0), raw.y, groups=found or None, name=name)


def fair_top5(splits: list[tuple[float, int]], l2: float) -> rc.Problem:
    """0.5 error rate - TPR@5 under the 80% rule between the sexes on an Adult sample (the
    first part of each ``(fraction, seed)`` split in turn): a ranking objective whose repairs
    and degenerate checks users met."""
    data = rc.datasets.load_adult()
    for fraction, seed in splits:
        data, _ = data.split(fraction, seed=seed)
    women, men = data.group("sex", "Female"), data.group("sex", "Male")
    return rc.Problem(minimize=0.5 * rc.error_rate(data) - rc.tpr_at_top(data, k=5),
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
                      model=rc.LinearModel(l2=l2))
