"""The GSSG estimator (7)-(8) is unbiased for grad R (Proposition 3); fixed subsets are not."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.solvers.dro import (
    DEFAULT_R,
    eta,
    full_objective,
    gssg_estimate,
    gssg_levels,
    subset_gradient,
)

DRAWS = 25000
Z_TOL = 4.5  # |mean - grad| <= 4.5 standard errors per coordinate (family-wise p ~ 1e-4)


def _form(n: int, phi: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X @ np.array([1.0, -0.5, 0.3]) + 0.8 * rng.normal(size=n) > 0).astype(int)
    ball = rc.PhiDivergenceBall(rc.Dataset(X, y), phi=phi, rho=0.2, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=0.0)).canonical()


def test_levels():
    sizes, q = gssg_levels(64, DEFAULT_R)
    assert sizes.tolist() == [2 ** k for k in range(7)]  # M_k = 2^k when N = 2^K
    np.testing.assert_allclose(q.sum(), 1.0)
    np.testing.assert_allclose(q[1:] / q[:-1], DEFAULT_R)
    sizes, q = gssg_levels(50, 0.3)
    assert sizes[0] == 1 and sizes[-1] == 50 and np.all(2 * sizes[:-1] >= sizes[1:])
    assert eta(50, 50, 0.1, 0.01) == 0.0 and eta(1, 50, 0.1, 0.01) > 0


@pytest.mark.parametrize(("n", "phi"), [(50, "chi2"), (32, "kl")])
def test_gssg_estimator_is_unbiased(n, phi):
    form = _form(n, phi)
    theta = np.array([0.4, -0.2, 0.1, 0.05])
    _, full, _ = full_objective(form, theta)
    sizes, q = gssg_levels(n, DEFAULT_R)
    rng = np.random.default_rng(123)
    draws = np.array([gssg_estimate(form, theta, rng, sizes, q, 0.1, 0.01)[0]
                      for _ in range(DRAWS)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(DRAWS)
    z = np.abs(draws.mean(axis=0) - full) / se
    assert np.all(z <= Z_TOL), (draws.mean(axis=0), full, z)


def test_fixed_subset_gradient_is_biased():
    """The same test detects the bias of Theorem 2 in fixed-size subset gradients (M = 2), so
    the unbiasedness test above has power."""
    n = 50
    form = _form(n, "chi2")
    theta = np.array([0.4, -0.2, 0.1, 0.05])
    _, full, _ = full_objective(form, theta)
    rng = np.random.default_rng(7)
    draws = np.array([subset_gradient(form, theta, rng.choice(n, 2, replace=False),
                                      form.rho + eta(2, n, 0.1, 0.01))[1]
                      for _ in range(20000)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    assert np.max(np.abs(draws.mean(axis=0) - full) / se) > 10.0


def test_compiled_gssg_kernel_is_unbiased():
    """The compiled estimator (dense data, built-in phi) passes the same statistical test."""
    from ratecons.solvers.dro_kernels import gssg_draws

    n = 48
    form = _form(n, "chi2", seed=2)
    theta = np.array([0.3, 0.1, -0.2, 0.0])
    _, full, _ = full_objective(form, theta)
    sizes, q = gssg_levels(n, DEFAULT_R)
    rng = np.random.default_rng(11)
    X = np.ascontiguousarray(form.X)
    none_i, none_f = np.empty(0, np.int64), np.empty(0)
    draws = np.array([gssg_draws(rng, X, none_i, none_i, none_f, False, form.y, theta, True, 0,
                                 0, form.rho, 0.1, 0.01, sizes, np.cumsum(q), q, 1)[0]
                      for _ in range(DRAWS)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(DRAWS)
    assert np.all(np.abs(draws.mean(axis=0) - full) / se <= Z_TOL)


def test_compiled_sparse_path_matches_dense():
    """The CSR branch of the kernel draws the same estimates as the dense one."""
    import scipy.sparse as sp

    from ratecons.solvers.dro_kernels import gssg_draws

    form = _form(40, "kl", seed=4)
    X = np.ascontiguousarray(form.X)
    X[np.abs(X) < 0.7] = 0.0
    S = sp.csr_matrix(X)
    theta = np.array([0.2, -0.4, 0.3, 0.1])
    sizes, q = gssg_levels(40, DEFAULT_R)
    none_i, none_f = np.empty(0, np.int64), np.empty(0)
    args = (form.y, theta, True, 0, 1, form.rho, 0.1, 0.01, sizes, np.cumsum(q), q, 50)
    dense = gssg_draws(np.random.default_rng(5), X, none_i, none_i, none_f, False, *args)
    sparse = gssg_draws(np.random.default_rng(5), np.empty((0, 0)), S.indptr.astype(np.int64),
                        S.indices.astype(np.int64), S.data, True, *args)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12, atol=1e-12)
    assert sparse[1] == dense[1]
