"""A binary MRC solved by CCG on Dask-backed data (issue 33) on a LocalCluster of two workers.

The moment estimates, the centroid start, the separation scans and the upper bound (2.2) are
reductions over partitions (:mod:`ratecons.solvers.mrc_dask`); the features are never
gathered (the tripwire ``conftest.no_gather``). Same answers as in memory: tau and lambda to
1e-12, R* and mu to 1e-8, on synthetic data (one-hot and the compact map, linear and random
Fourier features, several CCG iterations) and on the diabetes data of ../shared/data.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.errors import SpecError  # noqa: E402
from ratecons.scans import dask_passes  # noqa: E402
from tests.shared_data import load  # noqa: E402

TOL = 1e-8


def _pair(X: np.ndarray, y: np.ndarray, chunk: int):
    memory = rc.Dataset(X, y, name="d")
    lazy = rc.Dataset(da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk),
                      name="d")
    return memory, lazy


def _synthetic(n: int = 1500, d: int = 4, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.8 * X[:, 1] - 0.4 * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    return X, y


def _solve_both(memory, lazy, **options):
    features = options.pop("features", "linear")
    one_hot = options.pop("one_hot", True)
    results = []
    for data in (memory, lazy):
        U = rc.MomentSet(data, features=features, one_hot=one_hot)
        results.append((U, rc.Problem(minimize=rc.minimax_risk(U)).solve(method="ccg",
                                                                          **options)))
    return results


def _agree(results, unique: bool = True) -> None:
    (U0, r0), (U1, r1) = results
    np.testing.assert_allclose(U1.tau, U0.tau, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(U1.lam, U0.lam, rtol=1e-12, atol=1e-12)
    assert r0.status == r1.status == "optimal"
    assert abs(r1.objective - r0.objective) <= TOL * max(1.0, abs(r0.objective))
    if not unique:  # a face of optima: the Dask mu is optimal for the in-memory LP (4)
        form = r0.problem.canonical()
        assert abs(form.objective(r1.mu) - r0.objective) <= TOL
    else:
        np.testing.assert_allclose(r1.mu, r0.mu, rtol=0, atol=TOL)
    assert r1.certificate.upper_bound - r1.certificate.lower_bound <= 1e-6


@pytest.mark.parametrize(("options", "chunk"), [
    ({}, 400),
    ({"n_max": 15}, 250),  # many CCG rounds; each partition sends its top rows only
    ({"one_hot": False}, 500),
    # psi by blocks rounds differently; both runs end on optimal vertices of one face
    ({"features": rc.features.RandomFourier(30, seed=1)}, 400),
])
def test_ccg_on_dask_agrees_with_memory(client, no_gather, options, chunk):
    memory, lazy = _pair(*_synthetic(), chunk=chunk)
    before = dask_passes()
    results = _solve_both(memory, lazy, **options)
    _agree(results, unique="features" not in options)
    ccg_rounds = len(results[1][1].history)
    assert dask_passes() - before >= ccg_rounds  # one pass per CONSTR scan at least
    if "n_max" in options:
        assert ccg_rounds > 5
    # the fitted rule predicts new in-memory inputs alike
    X_new = np.random.default_rng(9).normal(size=(50, 4))
    np.testing.assert_array_equal(results[1][1].predict(X_new), results[0][1].predict(X_new))


def test_ccg_on_dask_real_data(client, no_gather):
    raw = load("diabetes")
    X, y = np.asarray(raw.X, dtype=float), np.asarray(raw.y)
    memory, lazy = _pair(X, y, chunk=200)
    _agree(_solve_both(memory, lazy))


def test_mrc_on_dask_auto_plan_and_refusals(client):
    _, lazy = _pair(*_synthetic(n=600), chunk=200)
    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(lazy)))
    assert "distributed over 3 partitions" in str(problem.plan())
    assert problem.solve().method == "ccg"
    with pytest.raises(SpecError, match=r"method 'lp' needs the examples in one process.*"
                                        r"method='ccg' for rc.minimax_risk"):
        problem.solve(method="lp")
    with pytest.raises(SpecError, match=r"start='ipm' solves the full LP \(4\) in memory"):
        problem.solve(method="ccg", start="ipm")
    fixed = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(lazy), fixed_marginals=True))
    with pytest.raises(SpecError, match=r"fixed_marginals=True .* no method that reads Dask"):
        fixed.solve(method="ccg")
    with pytest.raises(SpecError, match=r"feature maps \['Linear', 'RandomFourier', "
                                        r"'RandomReLU'\].*got 'callable'"):
        rc.MomentSet(lazy, features=lambda Z: Z)


def test_a_worker_killed_mid_ccg_ends_in_a_finished_solve(lose_a_worker):
    """One of three worker processes is killed during an MRC solve by CCG (the moment
    estimates and the separation scans are reductions over the partitions it held): the
    solve finishes with the in-memory answer (R* and mu to 1e-8), or raises a clear error;
    never a hang."""
    X, y = _synthetic(n=3000, seed=5)
    memory, lazy = _pair(X, y, chunk=300)

    def solve(data):
        return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(data))).solve(
            method="ccg", n_max=15)

    result = lose_a_worker(lambda: solve(lazy), delay=0.3)
    if isinstance(result, Exception):
        assert str(result), f"{type(result).__name__} without a message"
        return
    reference = solve(memory)
    assert result.status == reference.status == "optimal"
    assert abs(result.objective - reference.objective) <= TOL * max(1.0, abs(reference.objective))
    np.testing.assert_allclose(result.mu, reference.mu, rtol=0, atol=TOL)
