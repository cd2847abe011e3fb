"""SDCA on the dual (eq. 19) of the per-example two-sided hinge SVM (eq. 16) at fixed bias."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.canonical.rate_fold import ExampleDesign
from ratecons.errors import SolverError
from ratecons.solvers.sdca import _best_coordinate, _coordinate_gain, hinge_primal_dual, sdca
from tests.rate_bound_helpers import solve_weighted_hinge_cvxpy


def _design(X):
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else (X * X).sum(1)
    n = X.shape[0]
    return ExampleDesign(X, [], sq, np.zeros(n, np.int64), np.arange(n))


def _instance(seed, n=300, d=12, sparse=False, two_sided=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if sparse:
        X = sp.csr_matrix(np.where(rng.random((n, d)) < 0.3, X, 0.0))
    a = rng.uniform(0, 2, n) / n
    b = np.where(rng.random(n) < two_sided, rng.uniform(0, 2, n) / n, 0.0)
    b[a == 0] += 1.0 / n
    return X, a, b


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_duality_gap_closes_and_matches_cvxpy(sparse, seed):
    X, a, b = _instance(seed, sparse=sparse)
    lam, bias = 1e-2, 0.2 * (seed - 0.5)
    res = sdca(_design(X), a, b, lam, bias, tol=1e-8, max_epochs=20000, seed=seed)
    assert res.converged and 0 <= res.gap <= 1e-8
    ref = solve_weighted_hinge_cvxpy(X, a, b, lam, bias)
    assert res.primal == pytest.approx(ref.objective, rel=1e-5)
    assert res.dual <= ref.objective + 1e-7 <= res.primal + 2e-7
    # the reported values are the primal at the returned w and the dual at the returned xi
    primal, dual = hinge_primal_dual(_design(X), a, b, lam, res.w, bias, res.xi)
    assert primal == pytest.approx(res.primal, rel=1e-9, abs=1e-12)
    assert dual == pytest.approx(res.dual, rel=1e-9, abs=1e-12)
    assert np.all(res.xi >= -b - 1e-15) and np.all(res.xi <= a + 1e-15)


def _standardized_diabetes() -> tuple[np.ndarray, np.ndarray]:
    """The real diabetes data from ../shared/data, z-scored features and 0/1 labels."""
    from pathlib import Path

    from ratecons.datasets import load_csv

    path = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "diabetes.csv"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    data = load_csv(path)
    X = np.asarray(data.X, dtype=float)
    return (X - X.mean(0)) / X.std(0), np.asarray(data.y)


def test_dense_and_sparse_agree_and_real_data():
    X, y = _standardized_diabetes()
    n = X.shape[0]
    a = np.where(y == 0, 1.0 / n, 0.0)  # false positives
    b = np.where(y == 1, 2.0 / n, 0.0)  # false negatives, weighted twice
    dense = sdca(_design(X), a, b, 1e-3, 0.1, tol=1e-9, max_epochs=50000)
    sparse = sdca(_design(sp.csr_matrix(X)), a, b, 1e-3, 0.1, tol=1e-9, max_epochs=50000)
    ref = solve_weighted_hinge_cvxpy(X, a, b, 1e-3, 0.1)
    assert dense.converged and sparse.converged
    assert dense.primal == pytest.approx(ref.objective, rel=1e-5)
    assert sparse.primal == pytest.approx(ref.objective, rel=1e-5)


def test_warm_start_and_slope_is_a_valid_cut():
    X, a, b = _instance(3)
    design = _design(X)
    first = sdca(design, a, b, 1e-2, 0.0, tol=1e-9, max_epochs=20000)
    again = sdca(design, a, b, 1e-2, 0.0, first.xi.copy(), tol=1e-9)
    assert again.epochs == 0  # warm start from the converged duals: nothing left to do
    # D(xi; b') = D(xi; b) + slope (b' - b) lower-bounds min_w P(w, b') for every b'
    for other in (-0.7, 0.3, 1.5):
        ref = solve_weighted_hinge_cvxpy(X, a, b, 1e-2, other)
        assert first.dual + first.slope * other <= ref.objective + 1e-7


def test_l2_zero_is_refused_clearly():
    X, a, b = _instance(0, n=20)
    with pytest.raises(SolverError, match="l2"):
        sdca(_design(X), a, b, 0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(xi=st.floats(-1, 1), z=st.floats(-3, 3), q=st.floats(0.0, 5.0),
       a=st.floats(0, 1), bb=st.floats(0, 1), lam=st.floats(0.01, 1))
def test_coordinate_step_is_the_exact_maximizer(xi, z, q, a, bb, lam):
    """phi(s) = min(s/2 + bb, a - s/2) + (s - xi) z - (s - xi)^2 q / (2 lam) on [-bb, a]."""
    xi = float(np.clip(xi, -bb, a))

    def phi(s):
        return np.minimum(s / 2 + bb, a - s / 2) + (s - xi) * z - (s - xi) ** 2 * q / (2 * lam)

    s = _best_coordinate(xi, z, q, a, bb, lam)
    assert -bb - 1e-12 <= s <= a + 1e-12
    grid = np.linspace(-bb, a, 2001)
    assert phi(s) >= phi(grid).max() - 1e-9


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), bias=st.floats(-1, 1))
def test_weak_duality_for_any_feasible_duals(seed, bias):
    X, a, b = _instance(seed, n=40, d=4)
    rng = np.random.default_rng(seed)
    xi = rng.uniform(-b, a)
    lam = 0.1
    w = -(X.T @ xi) / lam
    primal, dual = hinge_primal_dual(_design(X), a, b, lam, w, bias, xi)
    assert primal >= dual - 1e-12


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shrink", [np.inf, 0.05, 1e-3])
def test_shrinking_matches_cvxpy_and_certifies_over_all_examples(sparse, shrink):
    """With or without shrinking, SDCA reaches the CVXPY optimum (1e-5 relative) and its gap
    is the exact one over *all* examples: recomputed in NumPy from (w, xi), it is <= tol."""
    X, a, b = _instance(5, n=400, d=10, sparse=sparse)
    lam, bias, tol = 3e-3, 0.1, 1e-8
    design = _design(X)
    res = sdca(design, a, b, lam, bias, tol=tol, shrink=shrink, max_epochs=50000)
    assert res.converged
    ref = solve_weighted_hinge_cvxpy(X, a, b, lam, bias)
    assert res.primal == pytest.approx(ref.objective, rel=1e-5)
    primal, dual = hinge_primal_dual(design, a, b, lam, res.w, bias, res.xi)
    assert primal - dual <= tol + 1e-12
    assert dual <= ref.objective + 1e-7 <= primal + 2e-7
    if np.isfinite(shrink) and shrink < 0.01:
        assert res.active < design.n  # examples settled at their plateau were skipped


def test_shrinking_real_data_matches_unshrunk_run():
    X, y = _standardized_diabetes()
    X = sp.csr_matrix(X)
    n = X.shape[0]
    a, b = np.where(y == 0, 1.0 / n, 0.0), np.where(y == 1, 1.0 / n, 0.0)
    full = sdca(_design(X), a, b, 1e-3, 0.0, tol=1e-8, shrink=np.inf, max_epochs=50000)
    shrunk = sdca(_design(X), a, b, 1e-3, 0.0, tol=1e-8, max_epochs=50000)
    ref = solve_weighted_hinge_cvxpy(X.toarray(), a, b, 1e-3, 0.0)
    assert full.converged and shrunk.converged
    assert shrunk.primal == pytest.approx(ref.objective, rel=1e-5)
    assert shrunk.primal == pytest.approx(full.primal, rel=1e-6)
    assert shrunk.active < n


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), i=st.integers(0, 29), bias=st.floats(-1, 1))
def test_coordinate_gain_is_the_change_of_the_dual(seed, i, bias):
    """The gain used to track D between full passes equals D(xi') - D(xi) for one exact
    coordinate step (identity of eq. 19 in xi_x)."""
    X, a, b = _instance(seed, n=30, d=5)
    rng = np.random.default_rng(seed)
    xi = rng.uniform(-b, a)
    lam = 0.05
    design = _design(X)
    u = X.T @ xi
    z = -(X[i] @ u) / lam - bias
    q = float(X[i] @ X[i])
    s = _best_coordinate(xi[i], z, q, a[i], b[i], lam)
    new = xi.copy()
    new[i] = s
    w = np.zeros(X.shape[1])
    _, before = hinge_primal_dual(design, a, b, lam, w, bias, xi)
    _, after = hinge_primal_dual(design, a, b, lam, w, bias, new)
    gain = _coordinate_gain(xi[i], s, z, q, a[i], b[i], lam)
    assert gain == pytest.approx(after - before, rel=1e-7, abs=1e-12)
    assert gain >= -1e-12
