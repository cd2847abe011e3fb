"""Robust learning end to end: FSG/GSSG against the CVXPY optimum, results, errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ratecons as rc
from ratecons.errors import LabelError, SpecError, UnknownOptionError
from ratecons.solvers.dro import full_objective
from tests.shared_data import DATA

CONVERGENCE_RTOL = 1e-3  # the "within 1e-3 relative" of the CVXPY optimum


def _synthetic(n: int, d: int, seed: int) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(int)
    return rc.Dataset(X, y, name=f"synthetic{seed}")


def _standardized(path: Path) -> rc.Dataset:
    if not path.exists():
        pytest.skip(f"real data not found at {path}")
    data = rc.datasets.load_csv(path)
    X = np.asarray(data.X)
    return rc.Dataset((X - X.mean(0)) / X.std(0), data.y, name=data.name)


def _problem(data, phi="chi2", rho=0.1, loss="logistic", l2=1e-2):
    ball = rc.PhiDivergenceBall(data, phi=phi, rho=rho, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball, loss=loss), model=rc.LinearModel(l2=l2))


def _rel(a, b):
    return (a - b) / max(1.0, abs(b))


@pytest.mark.parametrize(("phi", "loss", "seed"), [("chi2", "logistic", 0), ("kl", "logistic", 1),
                                                   ("chi2", "squared", 2)])
def test_fsg_matches_cvxpy(phi, loss, seed):
    problem = _problem(_synthetic(150, 4, seed), phi=phi, loss=loss)
    ref = problem.solve("cvxpy")
    fsg = problem.solve("fsg", max_iterations=20000, tol=1e-7)
    assert ref.status == "optimal" and fsg.status == "optimal"  # certified gap <= 1e-7
    assert abs(_rel(fsg.objective, ref.objective)) <= CONVERGENCE_RTOL
    assert fsg.objective >= ref.objective - 1e-6 * abs(ref.objective)  # ref is the minimum
    np.testing.assert_allclose(fsg.theta, ref.theta, atol=1e-2)


def test_gssg_converges_to_cvxpy_optimum():
    problem = _problem(_synthetic(200, 3, 5), phi="kl", rho=0.2)
    ref = problem.solve("cvxpy")
    res = problem.solve("gssg", seed=0, a=20.0, max_iterations=30000, warn=False)
    assert 0 <= _rel(res.objective, ref.objective) <= CONVERGENCE_RTOL
    assert res.history[-1]["samples"] > 0 and res.method == "gssg"


@pytest.mark.slow
def test_real_data_diabetes_fsg_gssg_vs_cvxpy():
    train, test = _standardized(DATA / "diabetes.csv").split(0.7, seed=0)
    problem = _problem(train, phi="chi2", rho=0.1)
    ref = problem.solve("cvxpy")
    fsg = problem.solve("fsg", max_iterations=3000, tol=1e-6)
    gssg = problem.solve("gssg", seed=1, a=20.0, max_iterations=40000, warn=False)
    assert fsg.status == "optimal"
    assert abs(_rel(fsg.objective, ref.objective)) <= 1e-5
    assert 0 <= _rel(gssg.objective, ref.objective) <= CONVERGENCE_RTOL
    assert np.max(np.abs(fsg.weights - ref.weights)) <= 1e-4
    assert 0.15 <= fsg.metrics(test)["error"] <= 0.35  # logistic models reach ~23% on Pima diabetes


@pytest.mark.slow
def test_real_data_adult_subsample_verify():
    data = _standardized(DATA / "adult.csv")
    sub = data.take(np.random.default_rng(0).choice(data.n, 1500, replace=False), "adult1500")
    problem = _problem(sub, phi="kl", rho=0.1, l2=1e-3)
    report = rc.verify(problem, method="fsg", rtol=1e-4, options={"max_iterations": 3000})
    assert report.agrees, str(report)
    assert report.rows["weights_max_diff"] <= 1e-4


def test_result_contents_and_exact_objective():
    train, test = _synthetic(300, 5, 3).split(0.7, seed=0)
    problem = _problem(train, phi="chi2", rho=0.3, l2=1e-3)
    res = problem.solve("pssg", seed=0, max_iterations=2000, warn=False)
    value, _, sol = full_objective(problem.canonical(), res.theta)
    assert res.objective == pytest.approx(value, rel=1e-12)  # exact on full data
    assert res.robust_loss == pytest.approx(sol.value, rel=1e-12)
    assert res.weights.shape == (train.n,) and res.weights.sum() == pytest.approx(1.0)
    assert res.w.shape == (5,) and isinstance(res.b, float)
    np.testing.assert_allclose(res.theta[:5], res.w)
    m = res.metrics(test)
    assert 0 <= m["error"] <= 1 and m["robust_loss"] >= m["mean_loss"]
    times = [h["time"] for h in res.history]
    samples = [h["samples"] for h in res.history]
    assert times == sorted(times) and samples == sorted(samples) and samples[-1] > 0
    assert '"theta"' in res.to_json()


def test_sgd_and_seeds_reproducible():
    problem = _problem(_synthetic(120, 3, 4))
    a = problem.solve("sgd", seed=3, max_iterations=300, warn=False)
    b = problem.solve("sgd", seed=3, max_iterations=300, warn=False)
    np.testing.assert_array_equal(a.theta, b.theta)
    with pytest.warns(rc.ConvergenceWarning):
        res = problem.solve("gssg", seed=0, max_iterations=50)
    assert res.status == "iteration_limit"


def test_auto_plan_reasons():
    small = _problem(_synthetic(100, 3, 0))
    plan = small.plan()
    assert plan.method == "lbfgs" and "O(N log N)" in plan.reasons[0]
    hinge = _problem(_synthetic(100, 3, 0), loss="hinge")
    assert hinge.plan().method == "lbfgs" and "hinge" in hinge.plan().reasons[-1]
    custom = rc.Phi(lambda s: (s - 1.0) ** 2, lambda s: 2.0 * (s - 1.0),
                    lambda t: -1.0 + 0.25 * np.maximum(t + 2.0, 0.0) ** 2, name="mine")
    ball = rc.PhiDivergenceBall(_synthetic(100, 3, 0), phi=custom, rho=0.1, strict=False)
    problem = rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel())
    assert problem.plan().method == "lbfgs"  # no conic form: the gradient methods only
    res = problem.solve("fsg", max_iterations=60, warn=False)  # nested bisection: slower per step
    same = _problem(_synthetic(100, 3, 0), l2=problem.model.l2)  # same data, built-in chi2
    ref = same.solve("fsg", max_iterations=60, warn=False)  # the same deterministic iterates
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)


def test_bad_inputs():
    data = _synthetic(50, 3, 0)
    with pytest.raises(SpecError, match="Assumption 1"):
        rc.PhiDivergenceBall(data, rho=0.1, strict=True)  # 0.1 > 1/(N-1): the paper's bound
    assert not rc.PhiDivergenceBall(data, rho=0.1).assumption1_holds  # accepted by default
    ok = rc.PhiDivergenceBall(data, rho=0.99 / 49, strict=True)
    assert ok.rho_bound == pytest.approx(1 / 49) and ok.assumption1_holds
    with pytest.raises(SpecError, match="'rho' parameter"):
        rc.PhiDivergenceBall(data, rho=-1.0)
    with pytest.raises(SpecError, match="degenerate"):
        rc.PhiDivergenceBall(data, rho=100.0, strict=False)
    with pytest.raises(SpecError, match="'phi' parameter"):
        rc.PhiDivergenceBall(data, phi="hellinger")
    with pytest.raises(SpecError, match="'loss' parameter"):
        rc.robust_loss(ok, loss="exponential")
    multi = rc.Dataset(np.ones((6, 2)), [0, 1, 2, 0, 1, 2])
    with pytest.raises(LabelError, match="binary"):
        rc.PhiDivergenceBall(multi, rho=0.01)
    with pytest.raises(SpecError, match="weights"):
        rc.PhiDivergenceBall(rc.Dataset(data.X, data.y, weights=np.ones(50)), rho=0.01)
    U = rc.robust_loss(ok)
    with pytest.raises(SpecError, match="minimize"):
        rc.Problem(maximize=U)
    # outside the DRO pattern (an l1 term, a kernel model): the generic chain says why
    for model, why in ((rc.LinearModel(l1=0.1), "l2 regularizer only"),
                       (rc.KernelModel(), "LinearModel")):
        plan = rc.Problem(minimize=U, model=model).plan()
        assert plan.pattern == "composed (generic chain)" and why in plan.reasons[0]
    problem = rc.Problem(minimize=U)
    with pytest.raises(UnknownOptionError, match="step"):
        problem.solve("fsg", stepsize=0.1)
    with pytest.raises(SpecError, match="'r' parameter"):
        problem.solve("gssg", r=0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = problem.solve("fsg", max_iterations=5)
    with pytest.raises(rc.DataError, match="features"):
        res.predict(np.ones((2, 7)))


def test_strict_ball_near_bound_all_weights_positive():
    """rho at 0.9 of the Assumption 1 bound: P* > 0 everywhere, FSG matches CVXPY."""
    data = _synthetic(100, 3, 8)
    ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.9 / 99)  # strict: bound 1/(N-1)
    problem = rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))
    ref = problem.solve("cvxpy")
    fsg = problem.solve("fsg", max_iterations=3000)
    assert abs(_rel(fsg.objective, ref.objective)) <= CONVERGENCE_RTOL
    assert np.all(fsg.weights > 0) and np.all(ref.weights > 0)
