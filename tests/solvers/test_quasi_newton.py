"""The small L-BFGS loop (:mod:`ratecons.solvers.quasi_newton`) on a function it cannot
bound, and the robust-learning solve that met it.

On the UCI optdigits data (raw pixel counts 0-16, digit 0 against the rest: nearly separable)
a chi-square robust hinge loss starts with every loss tied, and the ``lbfgs`` certificate's
balancing pmfs (``dro_certificate._balancing_pmfs``) minimize a tilt that is unbounded below on
such data: its gradient stops changing, the change y underflows (y.y = 0) while s.y > 0, and
the loop divided by y.y (a ``ZeroDivisionError`` from ``solve()``). A pair whose y.y is 0 is
now skipped like any pair without curvature.
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.solvers.dro_certificate import _balancing_pmfs
from ratecons.solvers.quasi_newton import lbfgs, minimize_small
from tests.shared_data import DATA


def test_minimize_small_reaches_the_minimum_of_a_quadratic():
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    c = np.array([1.0, -1.0])
    x = minimize_small(lambda x: (0.5 * x @ A @ x - c @ x, A @ x - c), np.zeros(2))
    assert np.allclose(x, np.linalg.solve(A, c), atol=1e-8)


def test_a_direction_without_curvature_takes_steps_and_returns():
    """A linear function (no pair ever has curvature): gradient steps until max_steps."""
    seen = []
    lbfgs(lambda x: (float(-x.sum()), -np.ones_like(x)), np.zeros(3), 5, 4,
          lambda x, g: seen.append(x.copy()))
    assert len(seen) == 4 and np.all(np.diff([s[0] for s in seen]) > 0)


@pytest.fixture(scope="module")
def optdigits() -> rc.Dataset:
    raw = rc.datasets.load_csv(DATA / "optdigits.csv")
    X = np.asarray(raw.X, dtype=np.float64)
    return rc.Dataset(X, (np.asarray(raw.y) == 0).astype(np.int8), name="optdigits")


def test_the_balancing_tilt_on_nearly_separable_data_returns(optdigits):
    """The tilt's minimization runs to its step cap instead of dividing by y.y = 0; whatever
    pmfs it keeps are pmfs."""
    problem = rc.Problem(
        minimize=rc.robust_loss(rc.PhiDivergenceBall(optdigits, phi="chi2", rho=0.1),
                                loss="hinge"),
        model=rc.LinearModel(l2=1e-3))
    for q in _balancing_pmfs(problem.canonical()):
        assert q.min() >= 0.0 and abs(q.sum() - 1.0) <= 1e-9


def test_robust_hinge_on_nearly_separable_data_ends_honestly(optdigits):
    problem = rc.Problem(
        minimize=rc.robust_loss(rc.PhiDivergenceBall(optdigits, phi="chi2", rho=0.1),
                                loss="hinge"),
        model=rc.LinearModel(l2=1e-3))
    with pytest.warns(Warning):  # whatever lbfgs reaches, it is not proved optimal here
        ours = problem.solve(method="lbfgs", max_iterations=200)
    reference = problem.solve(method="cvxpy")
    assert reference.status == "optimal"
    assert ours.status in ("iteration_limit", "optimal")
    assert ours.objective >= reference.objective - 1e-7
    gap = ours.certificate.gap
    assert gap is not None and ours.objective - reference.objective <= gap + 1e-7
