"""The unregularized robust loss (l2 = 0): lbfgs certified by the Newton-corrected Fenchel dual
(``solvers.dro_certificate.newton_dual_value``) against the CVXPY reference, and the bound's
validity."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from benchmarks.dro_instances import real, synthetic
from ratecons.solvers.dro import evaluate, lower_bound

OBJ_RTOL = 1e-6  # objective against the CVXPY optimum, relative to max(1, |F*|)
CERT_SLACK = 1e-7  # CLARABEL's own accuracy: a valid lower bound is <= F*_cvxpy + this
WEIGHTS_RTOL = 5e-3  # P* and theta against the reference (measured: at most 1.8e-3)


def _problem(data: rc.Dataset, phi: str, rho: float, intercept: bool,
             loss: str = "logistic") -> rc.Problem:
    ball = rc.PhiDivergenceBall(data, phi=phi, rho=rho, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball, loss=loss),
                      model=rc.LinearModel(l2=0.0, fit_intercept=intercept))


def _real(name: str, rows: int | None) -> rc.Dataset:
    data = real(name, rows)
    if data is None:
        pytest.skip(f"real data {name!r} not found")
    return data


def _check(problem: rc.Problem) -> None:
    """auto is the certified lbfgs; it agrees with the reference in objective, worst-case
    weights and theta; its bound is below the reference optimum."""
    assert problem.plan().method == "lbfgs"
    res = problem.solve()
    ref = problem.solve("cvxpy")
    cert = res.certificate
    assert res.method == "lbfgs" and res.status == "optimal"
    assert cert.details["stop"] == "tol"
    assert cert.gap <= 1e-6 * max(1.0, abs(res.objective))
    assert cert.lower_bound <= ref.objective + CERT_SLACK
    assert abs(res.objective - ref.objective) <= OBJ_RTOL * max(1.0, abs(ref.objective))
    # a 1e-6 gap in F fixes theta and P* to about sqrt(1e-6) (F grows quadratically at theta*)
    assert np.max(np.abs(res.weights - ref.weights)) <= WEIGHTS_RTOL * np.max(ref.weights)
    scale = max(1.0, float(np.max(np.abs(ref.theta))))  # unique: no instance is separable
    np.testing.assert_allclose(res.theta, ref.theta, atol=WEIGHTS_RTOL * scale)


@pytest.mark.parametrize(("phi", "rho", "intercept", "seed"), [
    ("chi2", 0.1, False, 0),
    ("kl", 0.1, False, 1),
    ("chi2", 1.0, True, 2),
    ("kl", 0.2, True, 3),
    ("chi2", 0.01, True, 4),
])
def test_certified_on_synthetic(phi, rho, intercept, seed):
    _check(_problem(synthetic(600, 5, seed), phi, rho, intercept))


@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_certified_with_sparse_features(phi):
    data = synthetic(500, 6, 8)
    sparse = rc.Dataset(sp.csr_matrix(np.where(np.abs(data.X) > 0.5, data.X, 0.0)), data.y)
    _check(_problem(sparse, phi, 0.1, True))


@pytest.mark.parametrize(("phi", "intercept"), [("chi2", True), ("kl", False)])
def test_certified_squared_loss(phi, intercept):
    _check(_problem(synthetic(400, 4, 5), phi, 0.02, intercept, loss="squared"))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "rows", "phi", "rho", "intercept"), [
    ("diabetes", None, "chi2", 0.1, True),
    ("diabetes", None, "kl", 0.1, False),
    ("adult", 2000, "chi2", 0.1, True),
    ("adult", 2000, "kl", 0.1, True),
])
def test_certified_on_real_data(name, rows, phi, rho, intercept):
    _check(_problem(_real(name, rows), phi, rho, intercept))


def test_status_is_honest_when_the_gap_is_not_reached():
    """Stopped before the gap closes: a limit status with the measured gap, not optimal."""
    problem = _problem(synthetic(500, 6, 6), "kl", 0.1, True)
    with pytest.warns(rc.ConvergenceWarning):
        res = problem.solve("lbfgs", max_iterations=2)
    assert res.status == "iteration_limit"
    cert = res.certificate
    if cert.gap is not None:
        assert cert.gap > 1e-6 * max(1.0, abs(res.objective))


_FORMS: dict[tuple[str, bool], tuple] = {}


def _form_and_optimum(phi: str, intercept: bool) -> tuple:
    """The canonical form of one small instance and its CVXPY optimum (cached)."""
    key = (phi, intercept)
    if key not in _FORMS:
        problem = _problem(synthetic(150, 3, 7), phi, 0.05, intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = problem.solve("cvxpy")
        _FORMS[key] = (problem.canonical(), ref.objective, ref.theta)
    return _FORMS[key]


@settings(max_examples=40, deadline=None)
@given(phi=st.sampled_from(["chi2", "kl"]), intercept=st.booleans(),
       scale=st.floats(1e-6, 1.0), seed=st.integers(0, 2**31 - 1))
def test_dual_bound_below_primal_values(phi, intercept, scale, seed):
    """At any theta (near the optimum, where the corrected dual is finite, and far from it)
    the bound is <= F(theta') for every theta' and <= the reference optimum F*."""
    form, f_star, theta_star = _form_and_optimum(phi, intercept)
    rng = np.random.default_rng(seed)
    theta = theta_star + scale * rng.normal(size=form.dim)
    bound = lower_bound(form, evaluate(form, theta))
    assert bound <= f_star + CERT_SLACK
    for other in (theta, theta_star + rng.normal(size=form.dim), np.zeros(form.dim)):
        assert bound <= evaluate(form, other).value + 1e-12
    if scale <= 1e-3:  # close to theta*: the corrected dual is finite and tight
        assert np.isfinite(bound)
        assert f_star - bound <= 1e-5


def test_benchmark_part_b_runs_on_a_tiny_grid(capsys):
    """benchmarks.dro part B end to end on two tiny instances (l2 = 0 and 1e-3)."""
    from benchmarks import dro

    data = dro.synthetic(300, 4, 1)
    instances = [dro.Instance(data, "chi2", 0.1, 0.0, intercept=False),
                 dro.Instance(data, "kl", 0.1, 1e-3, intercept=False)]
    rows = dro.run_unregularized(instances, reference_max_n=300)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("WORST time(auto)/time(L-BFGS-B):")
    assert out[-2].startswith("WORST time(cvxpy)/time(auto):")
    assert all(r["status"] == "optimal" and r["chosen"] == "lbfgs" for r in rows)
    assert all(abs(r["vs_ref"]) <= 1e-6 and r["gap"] <= 1e-6 for r in rows)
    skipped = dro.run_unregularized(instances[:1], reference_max_n=100)
    assert skipped[0]["ref_status"] == "skipped"
    assert "cvxpy skipped" in capsys.readouterr().out
