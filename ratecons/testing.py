"""The conformance kit: seeded problem generators and reference comparisons for solver tests.

Every specialized method is tested the same way: build instances here, solve them with the
method and with the family's CVXPY reference, and call :func:`assert_matches_reference`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from . import rates
from .data import Dataset
from .models import LinearModel
from .problem import Problem
from .verify import VerifyReport, verify

__all__ = ["synthetic_groups", "small_composition_data", "fairness_problem",
           "churn_recall_datasets", "tight_churn_recall_problem", "assert_matches_reference"]


def synthetic_groups(n: int = 400, d: int = 5, seed: int = 0, sparse: bool = False,
                     shift: float = 1.0) -> Dataset:
    """Binary labels from a noisy linear rule; group "g" ("a"/"b") shifts the features, so an
    unconstrained classifier predicts positive at different rates on the two groups."""
    rng = np.random.default_rng(seed)
    group = rng.random(n) < 0.4
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(group, -shift, 0.0)
    w_true = rng.normal(size=d)
    y = (X @ w_true + 0.5 * rng.normal(size=n) > 0).astype(int)
    features = sp.csr_matrix(X) if sparse else X
    return Dataset(features, y, groups={"g": np.where(group, "a", "b")}, name=f"synthetic{seed}")


def small_composition_data(n: int = 120, seed: int = 3, group: str = "g",
                           values: tuple[str, str] = ("a", "b"), baseline: bool = False,
                           feature_names: list[str] | None = None) -> Dataset:
    """Three features, labels from a noisy rule that the first group value lowers (so the 80%
    rule binds), and optionally the 0/1 predictions of a noisy deployed model: the small
    instance the composition matrix and the export tests share."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    first = rng.random(n) < 0.4
    y = ((X[:, 0] + 0.6 * X[:, 1] - 0.4 * first + 0.5 * rng.normal(size=n)) > 0).astype(int)
    deployed = ((X[:, 0] + 0.8 * rng.normal(size=n)) > 0).astype(int) if baseline else None
    return Dataset(X, y, groups={group: np.where(first, *values)}, baseline=deployed,
                   feature_names=feature_names, name="syn")


def fairness_problem(n: int = 400, d: int = 5, seed: int = 0, kappa: float = 0.8,
                     l2: float = 1e-2, sparse: bool = False) -> Problem:
    """Minimize error subject to s_p(group a) >= kappa * s_p(group b) (Table 2, fairness)."""
    data = synthetic_groups(n, d, seed, sparse)
    a, b = data.group("g", "a"), data.group("g", "b")
    return Problem(minimize=rates.error_rate(data),
                   subject_to=[rates.positive_rate(a) >= kappa * rates.positive_rate(b)],
                   model=LinearModel(l2=l2))


def churn_recall_datasets(sizes: tuple[int, int, int] = (3000, 1500, 2000), d: int = 10,
                          seed: int = 0) -> tuple[Dataset, Dataset, Dataset, np.ndarray]:
    """The setting of section 4.2 on generated data: D1 (labelled, actively sampled: enriched
    near the boundary), D2 (labelled, i.i.d.), D3 (unlabelled, i.i.d.), and the deployed model's
    weights ``w_deployed`` (trained on a different, older rule). Baselines are attached to D2
    (recall) and D3 (churn)."""
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=d)
    w_old = w_true + 0.35 * rng.normal(size=d)

    def draw(n: int, active: bool) -> tuple[np.ndarray, np.ndarray]:
        X = rng.normal(size=(n, d))
        if active:  # shrink examples toward the true boundary, as active sampling would
            margin = X @ w_true / np.linalg.norm(w_true)
            X -= 0.7 * np.outer(margin, w_true / np.linalg.norm(w_true))
        y = (X @ w_true + 0.3 + 0.7 * rng.normal(size=n) > 0).astype(int)
        return X, y

    X1, y1 = draw(sizes[0], True)
    X2, y2 = draw(sizes[1], False)
    X3, _ = draw(sizes[2], False)
    d1 = Dataset(X1, y1, name="D1")
    d2 = Dataset(X2, y2, baseline=X2 @ w_old, name="D2")
    d3 = Dataset(X3, baseline=X3 @ w_old, name="D3")
    return d1, d2, d3, w_old



def tight_churn_recall_problem(l2: float = 1e-3) -> Problem:
    """Minimize error on D1 keeping the deployed model's recall on D2 and churning at most 2% of
    D3 (:func:`churn_recall_datasets` with sizes 400/300/300, seed 1): targets whose hinge
    relaxation is infeasible although the ramp problem is not (phase 1's test case)."""
    d1, d2, d3, _ = churn_recall_datasets((400, 300, 300), seed=1)
    floor = float(np.mean(d2.baseline_prediction[d2.y == 1]))
    return Problem(minimize=rates.error_rate(d1),
                   subject_to=[rates.recall(d2) >= floor, rates.churn_rate(d3) <= 0.02],
                   model=LinearModel(l2=l2))

def assert_matches_reference(problem: Problem, method: str, rtol: float = 1e-4,
                             violation_tol: float = 1e-4, **kwargs: Any) -> VerifyReport:
    """Solve with ``method`` and with the reference; assert objectives within ``rtol``
    (relative to max(1, |reference|)) and both feasible within ``violation_tol``."""
    report = verify(problem, method=method, rtol=rtol, **kwargs)
    rows = report.rows
    assert report.result.status == report.reference_result.status, str(report)
    gap = rows.get("objective_rel_gap")
    assert gap is not None and gap <= rtol, str(report)
    for v in rows.get("max_violation", ()):
        assert v is None or v <= violation_tol, str(report)
    return report
