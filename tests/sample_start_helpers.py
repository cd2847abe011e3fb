"""Instances of the sample-start tests (tests/patterns/test_composed_sample_start.py and
test_sample_start_rule.py): two groups on Gaussian features, logistic loss + the 80% rule."""

from __future__ import annotations

import numpy as np

import ratecons as rc


def two_groups(n: int, seed: int = 0) -> rc.Dataset:
    """n rows, 4 features, groups "F" (about 40%, shifted on the first feature) and "M"."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = np.where(rng.random(n) < 0.4, "F", "M")
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.8 * rng.normal(size=n) > 0).astype(int)
    X[:, 0] -= 0.8 * (g == "F")
    return rc.Dataset(X, y, groups={"g": g})


def logistic_rule(D: rc.Dataset, l2: float = 1e-3) -> rc.Problem:
    """Logistic loss with the 80% rule between the groups."""
    return rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=l2),
                      subject_to=[rc.positive_rate(D.group("g", "F"))
                                  >= 0.8 * rc.positive_rate(D.group("g", "M"))])
