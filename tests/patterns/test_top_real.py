"""Ranking at the top on real data (one-vs-rest optdigits), dual CA vs CVXPY."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from tests.shared_data import load


def _subsample(data: rc.Dataset, n: int, positive: int | None, seed: int) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(data.n, n, replace=False))
    X = np.asarray(data.X[idx], dtype=np.float64)
    y = data.y[idx] if positive is None else (data.y[idx] == positive)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return rc.Dataset(X, y.astype(int), name=data.name)


@pytest.mark.parametrize("objective", ["toppushk", "tau-fpl", "pat&mat-np"])
def test_optdigits_one_vs_rest_gaussian(objective):
    data = _subsample(load("optdigits"), 400, positive=3, seed=0)
    obj = {"toppushk": lambda: rc.tpr_at_top(data, k=5),
           "tau-fpl": lambda: rc.tpr_at_quantile(data, 0.05, surrogate="quadratic_hinge"),
           "pat&mat-np": lambda: rc.tpr_at_quantile(data, 0.05, formulation="pat&mat",
                                                    theta=0.5)}[objective]()
    problem = rc.Problem(maximize=obj, model=rc.KernelModel("gaussian", l2=1e-3))
    res = problem.solve("dual_ca", tol=1e-6)
    ref = problem.solve("cvxpy")
    assert res.status == "optimal"
    assert abs(res.objective - ref.objective) <= 1e-4 * (1.0 - ref.objective)  # rel. to (3)
    report = res.metrics(data)
    assert report["auc"] > 0.95  # digit 3 vs rest is easy with a Gaussian kernel


def test_optdigits_linear_toppush_and_quadratic_toppushk():
    data = _subsample(load("optdigits"), 500, positive=5, seed=1)
    for obj in (rc.tpr_at_top(data, k=1), rc.tpr_at_top(data, k=5, surrogate="quadratic_hinge")):
        problem = rc.Problem(maximize=obj, model=rc.LinearModel(l2=1e-2))
        res = problem.solve("dual_ca", tol=1e-6, max_epochs=50000)
        ref = problem.solve("cvxpy")
        assert res.status == "optimal"
        assert abs(res.objective - ref.objective) <= 1e-4 * (1.0 - ref.objective)
        assert np.linalg.norm(ref.w) > 1e-3  # a nontrivial model
        np.testing.assert_allclose(res.w, ref.w, atol=5e-2 * np.linalg.norm(ref.w))
