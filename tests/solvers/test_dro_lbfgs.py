"""The certified default (lbfgs) and the certificates of every DRO method, against CVXPY."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.solvers.dro import evaluate, lower_bound
from tests.shared_data import DATA

OBJ_RTOL = 1e-5  # objective against the CVXPY optimum, relative to max(1, |F*|)
CERT_SLACK = 1e-7  # CLARABEL's own accuracy: a valid lower bound is <= F*_cvxpy + this


def _synthetic(n: int, d: int, seed: int) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(int)
    return rc.Dataset(X, y, name=f"synthetic{seed}")


def _standardized(name: str, rows: int, seed: int = 0) -> rc.Dataset:
    path = DATA / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"real data not found at {path}")
    data = rc.datasets.load_csv(path)
    idx = np.random.default_rng(seed).choice(data.n, rows, replace=False)
    X = np.asarray(data.X, dtype=np.float64)[idx]
    return rc.Dataset((X - X.mean(0)) / X.std(0), np.asarray(data.y)[idx], name=name)


def _problem(data, phi="chi2", rho=0.1, loss="logistic", l2=1e-3, intercept=True):
    ball = rc.PhiDivergenceBall(data, phi=phi, rho=rho, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball, loss=loss),
                      model=rc.LinearModel(l2=l2, fit_intercept=intercept))


def _rel(a, b):
    return (a - b) / max(1.0, abs(b))


def _check_against_reference(res, ref, tol):
    """The method's certificate against the CVXPY optimum F*."""
    cert = res.certificate
    assert cert.lower_bound is not None and cert.lower_bound <= ref.objective + CERT_SLACK
    assert cert.upper_bound == pytest.approx(res.objective, rel=1e-12)
    if ref.status == "optimal":  # then F* = ref.objective up to CLARABEL's accuracy
        assert res.objective >= ref.objective - CERT_SLACK
    if res.status == "optimal":  # the certificate proves the tolerance, and it holds
        assert cert.gap <= tol * max(1.0, abs(res.objective))
        assert _rel(res.objective, ref.objective) <= tol + CERT_SLACK


@pytest.mark.parametrize(("phi", "loss", "rho", "l2", "intercept", "seed"), [
    ("chi2", "logistic", 0.1, 1e-3, True, 0),
    ("kl", "logistic", 0.5, 1e-2, True, 1),
    ("chi2", "squared", 1.0, 1e-4, True, 2),
    ("kl", "squared", 0.05, 1e-3, False, 3),
    ("chi2", "logistic", 0.01, 1e-2, False, 4),
    ("chi2", "hinge", 0.1, 1e-3, True, 5),
    ("kl", "hinge", 1.0, 1e-4, True, 6),
])
def test_lbfgs_matches_cvxpy_with_certificate(phi, loss, rho, l2, intercept, seed):
    problem = _problem(_synthetic(400, 6, seed), phi, rho, loss, l2, intercept)
    assert problem.plan().method == "lbfgs"
    res = problem.solve()
    ref = problem.solve("cvxpy")
    assert res.method == "lbfgs" and res.status == "optimal"
    assert abs(_rel(res.objective, ref.objective)) <= OBJ_RTOL
    _check_against_reference(res, ref, 1e-6)
    np.testing.assert_allclose(res.theta, ref.theta, atol=1e-3)  # unique: l2 > 0
    assert res.certificate.details["stop"] == "tol"


@pytest.mark.slow
@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_lbfgs_on_adult_matches_cvxpy(phi):
    problem = _problem(_standardized("adult", 2000), phi, 0.1, "logistic", 1e-3)
    res = problem.solve()
    ref = problem.solve("cvxpy")
    assert res.status == "optimal"
    assert abs(_rel(res.objective, ref.objective)) <= OBJ_RTOL
    _check_against_reference(res, ref, 1e-6)
    np.testing.assert_allclose(res.theta, ref.theta, atol=1e-3)
    assert np.max(np.abs(res.weights - ref.weights)) <= 1e-4


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_lower_bound_is_valid_anywhere(phi, loss):
    """The duality bound at any theta (even far from optimal) stays below F*, and at the
    reference optimum it is tight (up to CLARABEL's accuracy)."""
    problem = _problem(_synthetic(200, 4, 7), phi, 0.05, loss, 1e-2)
    form = problem.canonical()
    ref = problem.solve("cvxpy")
    rng = np.random.default_rng(0)
    for theta in rng.normal(size=(5, form.dim)):
        assert lower_bound(form, evaluate(form, theta)) <= ref.objective + CERT_SLACK
    at_opt = lower_bound(form, evaluate(form, ref.theta))
    assert at_opt <= ref.objective + CERT_SLACK
    assert ref.objective - at_opt <= 1e-4  # tight near theta* (hinge: refitted at the kink)


@pytest.mark.parametrize(("phi", "rho"), [("chi2", 3.0), ("kl", 1.0)])
def test_constant_predictor_certified_on_a_large_ball(phi, rho):
    """With a large ball, theta = 0 is optimal (F = log 2): P*(0) is not unique and the
    balancing pmf in the ball certifies it."""
    problem = _problem(_synthetic(300, 6, 2), phi, rho, "logistic", 1e-2)
    res = problem.solve()
    ref = problem.solve("cvxpy")
    assert res.status == "optimal" and np.max(np.abs(res.theta)) <= 1e-9
    assert res.objective == pytest.approx(np.log(2.0), rel=1e-12)
    assert res.certificate.details["constant_predictor"]
    _check_against_reference(res, ref, 1e-6)


def test_custom_phi_lbfgs_certified():
    """A user Phi (the chi-square formulas) goes through the generic IM path and reaches the
    built-in chi2 optimum with a certificate."""
    custom = rc.Phi(lambda s: (s - 1.0) ** 2, lambda s: 2.0 * (s - 1.0),
                    lambda t: -1.0 + 0.25 * np.maximum(t + 2.0, 0.0) ** 2, name="mine")
    data = _synthetic(150, 3, 5)
    ball = rc.PhiDivergenceBall(data, phi=custom, rho=0.2, strict=False)
    problem = rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))
    plan = problem.plan()
    assert plan.method == "lbfgs" and any("no conic form" in r for r in plan.reasons)
    res = problem.solve()
    ref = _problem(data, "chi2", 0.2, l2=1e-2).solve("cvxpy")
    assert res.status == "optimal"
    assert abs(_rel(res.objective, ref.objective)) <= OBJ_RTOL
    _check_against_reference(res, ref, 1e-6)


def test_tiny_budgets_never_optimal():
    problem = _problem(_synthetic(300, 5, 6), "kl", 0.1)
    with pytest.warns(rc.ConvergenceWarning):
        res = problem.solve("lbfgs", max_iterations=1)
    assert res.status == "iteration_limit" and res.certificate.gap > 1e-6
    with pytest.warns(rc.ConvergenceWarning):
        res = problem.solve("lbfgs", time_limit=1e-9)
    assert res.status == "time_limit"
    for method in ("fsg", "pssg", "gssg", "sgd"):
        with pytest.warns(rc.ConvergenceWarning):
            res = problem.solve(method, seed=0, max_iterations=2)
        assert res.status == "iteration_limit", method
        with pytest.warns(rc.ConvergenceWarning):
            res = problem.solve(method, seed=0, time_limit=1e-9)
        assert res.status == "time_limit", method
        assert res.certificate.gap is not None and res.certificate.gap > 1e-3


@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_cvxpy_reference_budget_never_optimal(phi):
    """The reference stopped after one interior-point iteration says iteration_limit."""
    problem = _problem(_synthetic(200, 4, 6), phi, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = problem.solve("cvxpy", solver_options={"max_iter": 1})
    assert res.status == "iteration_limit"


@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_stochastic_certificates_against_reference(phi):
    """Each first-order method's final certificate is valid against the CVXPY optimum, and its
    status is optimal only when the certified gap meets its tolerance (1e-3 relative)."""
    problem = _problem(_synthetic(500, 5, 8), phi, 0.1, "logistic", 1e-2)
    ref = problem.solve("cvxpy")
    statuses = {}
    for method in ("fsg", "pssg", "gssg", "sgd"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rc.ConvergenceWarning)
            res = problem.solve(method, seed=0, max_iterations=3000)
        _check_against_reference(res, ref, 1e-3)
        statuses[method] = res.status
        gaps = [h["gap"] for h in res.history]
        assert res.certificate.gap == pytest.approx(min(gaps), rel=1e-9, abs=1e-15)
    assert statuses["fsg"] == "optimal"  # deterministic full gradients reach 1e-3 here


def test_no_certificate_for_the_hinge_without_l2():
    """With l2 = 0 and the hinge loss lbfgs has no bound: never optimal; auto uses the conic
    reference (the smooth losses have the Newton-corrected bound: test_dro_unregularized)."""
    problem = _problem(_synthetic(200, 4, 9), "chi2", 0.1, "hinge", 0.0)
    assert problem.plan().method == "cvxpy"
    with pytest.warns(rc.ConvergenceWarning):
        res = problem.solve("lbfgs", max_iterations=200)
    assert res.status == "iteration_limit" and res.certificate.lower_bound is None


def test_benchmark_grid_runs_on_a_tiny_grid(capsys):
    """The benchmark's grid code end to end on two tiny instances."""
    from benchmarks import dro

    instances = [dro.Instance(dro.synthetic(300, 4, 1), "chi2", 0.1, 1e-3),
                 dro.Instance(dro.synthetic(256, 3, 2), "kl", 1.0, 1e-2)]
    rows = dro.run_grid(instances, stochastic_time=0.05)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("WORST time(cvxpy)/time(auto) over the grid:")
    assert out[-1].endswith("yes")
    assert {r["method"] for r in rows} == {"auto", "structured", "cvxpy", "floor", "fsg", "pssg",
                                           "gssg", "sgd"}
    assert all(r["status"] == "optimal" for r in rows if r["method"] == "auto")
    worst, _, agree = dro.summary(rows)
    assert worst > 0 and agree
