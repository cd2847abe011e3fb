"""A convex composition (losses only: one step, no majorization) solved by the structured
chain carries its step's certified lower bound; the CVXPY reference's optimum lies between it
and the returned objective."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.chain_points import contradicted_bound
from tests.shared_data import DATA, standardized


def _synthetic(seed: int, n: int = 500, d: int = 6) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(int)
    return rc.Dataset(X, y, name=f"synthetic{seed}")


def _problems(D: rc.Dataset) -> list[rc.Problem]:
    ball = rc.PhiDivergenceBall(D, phi="chi2", rho=0.1)
    return [
        rc.Problem(minimize=rc.logistic_loss(D), subject_to=[rc.hinge_loss(D) <= 0.8],
                   model=rc.LinearModel(l2=1e-3)),
        rc.Problem(minimize=rc.robust_loss(ball) + 0.5 * rc.hinge_loss(D),
                   model=rc.LinearModel(l2=1e-2)),
    ]


@pytest.mark.parametrize("source", ["synthetic0", "synthetic1", "diabetes"])
def test_the_bound_brackets_the_reference_optimum(source):
    D = standardized("diabetes") if source == "diabetes" else _synthetic(int(source[-1]))
    for problem in _problems(D):
        ours = problem.solve(method="structured")
        reference = problem.solve(method="cvxpy", solver_options={"tol_gap_rel": 1e-10,
                                                                  "tol_gap_abs": 1e-10})
        assert ours.status == "optimal" and reference.status == "optimal"
        cert = ours.certificate
        assert cert.lower_bound is not None and cert.gap is not None
        assert cert.gap == pytest.approx(cert.upper_bound - cert.lower_bound, abs=1e-15)
        assert 0.0 <= cert.gap <= 1e-6 * max(1.0, abs(cert.upper_bound))
        optimum = reference.solution.objective
        slack = 1e-9 * max(1.0, abs(optimum))  # the reference's own tolerance
        assert cert.lower_bound <= optimum + slack
        assert optimum <= cert.upper_bound + slack


def test_a_majorized_composition_claims_no_bound_of_its_steps():
    """With rates (majorization-minimization) a step's bound is not the problem's."""
    D = _synthetic(2)
    problem = rc.Problem(minimize=rc.logistic_loss(D), subject_to=[rc.recall(D) >= 0.8],
                         model=rc.LinearModel(l2=1e-3))
    result = problem.solve(method="structured")
    assert result.certificate.lower_bound is None and result.certificate.gap is None


def test_a_bound_above_its_own_model_is_dropped_and_the_status_says_so():
    """Raw (unscaled) Pima features, a hinge robust loss over a chi-square ball of rho = 1e-6,
    no regularizer: the structured step's residuals passed its tests while its Lagrangian
    bound (0.50105) lay above the objective of its own model (0.49828; CVXPY's model reaches
    0.49824), and the result said ``optimal`` with gap 0. A bound that the returned model
    itself contradicts proves nothing: dropped, status ``optimal_inaccurate``, the message
    says why. Whatever the step solver does, an ``optimal`` answer's bound holds."""
    data, _ = rc.datasets.load_csv(DATA / "diabetes.csv").split(0.25, seed=0)
    ball = rc.PhiDivergenceBall(data, phi="chi2", rho=1e-6)
    problem = rc.Problem(minimize=rc.robust_loss(ball, loss="hinge"),
                         model=rc.LinearModel(l2=0.0))
    result = problem.solve(method="structured")
    cert = result.certificate
    step_bound = cert.details["step_objective"]
    if result.status == "optimal":
        assert cert.lower_bound <= result.objective + 1e-6 * max(1.0, abs(result.objective))
    else:
        assert result.status == "optimal_inaccurate" and step_bound > result.objective
        assert cert.lower_bound is None and cert.gap is None
        assert "certificate proves nothing" in cert.details["message"]


def test_contradicted_bound_names_a_bound_above_the_value_only():
    assert contradicted_bound(None, 1.0, 1e-6) == ""
    assert contradicted_bound(1.0 + 5e-7, 1.0, 1e-6) == ""  # within the tolerance
    assert contradicted_bound(0.5, 1.0, 1e-6) == ""
    assert "lower bound 1.01 is above the objective 1" in contradicted_bound(1.01, 1.0, 1e-6)
