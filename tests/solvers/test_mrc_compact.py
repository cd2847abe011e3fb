"""MRCpy's compact binary map (``MomentSet(..., one_hot=False)``) against an independent LP.

The reference is written here from the definitions, not through ratecons' lowering: with
Phi(x, 0) = psi(x), Phi(x, 1) = -psi(x) the label subsets of LP (4) give the rows
psi_i w - nu <= 0 ({0}), -psi_i w - nu <= 0 ({1}) and -nu <= -1/2 ({0, 1}), so

    R* = min_{w, t}  1 - tau^T w + lam^T |w| + t - 1   s.t.  t >= |psi_i w|,  t >= 1/2,

solved by scipy's linprog on w = w+ - w-. tau and lambda are recomputed from Phi(x_i, y_i).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import ratecons as rc
from ratecons.errors import SpecError
from tests.mrc_helpers import random_dataset
from tests.shared_data import load


def compact_phi(U: rc.MomentSet) -> np.ndarray:
    """Phi(x_i, y_i) of the compact map, row by row: psi for label code 0, -psi for code 1."""
    return np.array([U.psi[i] if U.y[i] == 0 else -U.psi[i] for i in range(U.n)])


def reference_risk(psi: np.ndarray, tau: np.ndarray, lam: np.ndarray,
                   fixed_marginals: bool = False) -> float:
    """R* of the compact-map MRC by linprog (general (2.2) or fixed marginals (2.5))."""
    n, p = psi.shape
    k = n if fixed_marginals else 1  # one t per instance (2.5) or a single t (2.2)
    c = np.concatenate([lam - tau, lam + tau, np.full(k, 1.0 / k)])
    T = np.eye(n) if fixed_marginals else np.ones((n, 1))
    A = np.vstack([np.hstack([psi, -psi, -T]), np.hstack([-psi, psi, -T]),
                   np.hstack([np.zeros((k, 2 * p)), -np.eye(k)])])
    b = np.concatenate([np.zeros(2 * n), np.full(k, -0.5)])
    bounds = [(0, None)] * (2 * p) + [(None, None)] * k
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tau_lambda_and_risk_match_the_independent_lp(seed):
    data = random_dataset(150 + 50 * seed, 3 + seed, 2, seed)
    U = rc.MomentSet(data, lambda0=0.3 + 0.2 * seed, one_hot=False)
    Phi = compact_phi(U)
    assert U.m == U.p
    np.testing.assert_allclose(U.tau, Phi.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(U.lam, U.lambda0 * Phi.std(axis=0) / np.sqrt(U.n), atol=1e-12)
    expected = reference_risk(U.psi, U.tau, U.lam)
    problem = rc.Problem(minimize=rc.minimax_risk(U))
    for method in ("lp", "ccg", "cvxpy"):
        result = problem.solve(method=method)
        assert result.status == "optimal", method
        assert abs(result.objective - expected) <= 1e-6, (method, result.objective, expected)
        # the rule's scores are Phi(x, y)^T mu: opposite for the two labels
        V = result.decision_function(data.X)
        np.testing.assert_allclose(V[:, 1], -V[:, 0], atol=1e-12)
        if method != "cvxpy":
            assert result.certificate.gap <= 1e-6


def test_fixed_marginals_compact_matches_the_independent_lp():
    data = random_dataset(120, 4, 2, 7)
    U = rc.MomentSet(data, one_hot=False)
    expected = reference_risk(U.psi, U.tau, U.lam, fixed_marginals=True)
    problem = rc.Problem(minimize=rc.minimax_risk(U, fixed_marginals=True))
    for method in ("lp", "cvxpy"):
        assert abs(problem.solve(method=method).objective - expected) <= 1e-6


@pytest.mark.parametrize("name", ["credit", "haberman"])
def test_compact_map_on_real_data(name):
    U = rc.MomentSet(load(name), one_hot=False)
    expected = reference_risk(U.psi, U.tau, U.lam)
    problem = rc.Problem(minimize=rc.minimax_risk(U))
    for method in ("lp", "ccg"):
        assert abs(problem.solve(method=method).objective - expected) <= 1e-6


def test_compact_map_is_refused_on_multiclass_data_and_by_the_subgradient_method():
    with pytest.raises(SpecError, match="binary"):
        rc.MomentSet(random_dataset(60, 3, 3, 0), one_hot=False)
    with pytest.raises(SpecError, match="True or False"):
        rc.MomentSet(random_dataset(60, 3, 2, 0), one_hot="no")
    U = rc.MomentSet(random_dataset(60, 3, 2, 0), one_hot=False)
    with pytest.raises(SpecError, match="one_hot=False"):
        rc.Problem(minimize=rc.minimax_risk(U)).solve(method="subgradient")
