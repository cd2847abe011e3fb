"""The robust hinge loss on Dask data, and nothing N-sized to the client after a robust solve
(issue 33).

The hinge's certificate refits the dual on the examples at the kink and its L-BFGS phase moves
onto them (:mod:`ratecons.solvers.dro_hinge`); on Dask data only those rows travel. After a
solve, the report and the degenerate-model check evaluate the robust loss at the result by the
Dask passes (:mod:`ratecons.dask_robust`), and at constant scores from the class counts.
Checked on a LocalCluster of two workers under the tripwire of ``conftest.no_vectors`` (any
Dask array of more than GATHER_ROWS rows made NumPy fails the test).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.canonical.dro import DROProgram  # noqa: E402
from ratecons.dask_robust import constant_robust_value  # noqa: E402
from ratecons.degenerate import check_degenerate  # noqa: E402
from ratecons.loss_functions import margin_loss  # noqa: E402
from ratecons.numerics.inner_max import inner_maximize  # noqa: E402
from ratecons.numerics.phi import CHI2, KL  # noqa: E402
from ratecons.solvers.dro_certificate import lower_bound  # noqa: E402
from ratecons.solvers.dro_dask import DaskPasses  # noqa: E402
from ratecons.solvers.dro_dask_bound import dask_lower_bound  # noqa: E402
from ratecons.solvers.dro_eval import evaluate  # noqa: E402
from ratecons.solvers.dro_hinge import kink_set  # noqa: E402
from ratecons.solvers.dro_lbfgs import _nearest_kink, solve_dro_lbfgs  # noqa: E402
from tests.data.conftest import install_tripwire  # noqa: E402
from tests.shared_data import standardized  # noqa: E402

TOL = 1e-8


def _forms(phi, l2, fit_intercept, n=1200, d=5, chunk=350, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0
    memory = DROProgram(X=X, y=np.where(y, 1.0, -1.0), loss="hinge", phi=phi, rho=0.1, l2=l2,
                        fit_intercept=fit_intercept)
    return memory, replace(memory, X=da.from_array(X, chunks=(chunk, d)))


@pytest.mark.parametrize("phi", [CHI2, KL])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_hinge_point_bound_and_kink_set_match(client, no_vectors, phi, fit_intercept):
    """At the in-memory optimum (margins at the kink) and near it: F, its gradient, the
    refitted bound and the kink-set guesses are the in-memory ones."""
    memory, lazy = _forms(phi, 1e-2, fit_intercept)
    theta_star = solve_dro_lbfgs(memory, warn=False).primal["theta"]
    passes = DaskPasses(lazy)
    for theta in (theta_star, theta_star + 1e-3):
        ours, ref = passes.evaluate(theta), evaluate(memory, theta)
        scale = max(1.0, abs(ref.value))
        assert abs(ours.value - ref.value) <= 1e-12 * scale
        assert np.max(np.abs(ours.grad - ref.grad)) <= 1e-11 * scale
        mine, theirs = dask_lower_bound(passes, ours), lower_bound(memory, ref)
        assert np.isfinite(theirs) and abs(mine - theirs) <= 1e-10 * scale
        assert mine > dask_lower_bound(passes, ours, refit=False) or theta is not theta_star
        for choice in range(3):
            got = kink_set(*passes.nearest_kink(ours, memory.dim), memory.dim, choice)
            want = kink_set(*_nearest_kink(memory, ref, memory.dim), memory.dim, choice)
            assert got.size >= 1 and np.array_equal(got, want)


@pytest.mark.parametrize(("phi", "l2", "fit_intercept", "limit", "seed"), [
    (CHI2, 1e-2, True, 1000, 0), (KL, 0.0, False, 20, 1)])
def test_hinge_solves_agree(client, no_vectors, monkeypatch, phi, l2, fit_intercept, limit,
                            seed):
    """Solves: the same status, w, b and F to 1e-8; only the labels sent, once. With l2 a
    whole solve; without l2 the hinge has no bound (status iteration_limit in both): 20
    iterations, the last ones in the kink-set phase on the workers (the same path as in
    memory, iteration for iteration)."""
    memory, lazy = _forms(phi, l2, fit_intercept, chunk=600, seed=seed)
    calls = []
    original = DaskPasses.nearest_kink
    monkeypatch.setattr(DaskPasses, "nearest_kink",
                        lambda self, *a: calls.append(1) or original(self, *a))
    no_vectors.clear()
    ours = solve_dro_lbfgs(lazy, max_iterations=limit, warn=False)
    assert no_vectors == [memory.n]  # the signed labels, once
    reference = solve_dro_lbfgs(memory, max_iterations=limit, warn=False)
    assert ours.status == reference.status == ("optimal" if l2 else "iteration_limit")
    assert np.max(np.abs(ours.primal["theta"] - reference.primal["theta"])) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL * max(1.0, abs(ours.objective))
    if not l2:
        assert calls  # the kink-set phase
        assert ours.certificate.details["iterations"] == reference.certificate.details[
            "iterations"]


@pytest.mark.slow
def test_real_data_solve_and_report_gather_nothing(client, no_vectors):
    """Mammographic masses (UCI, 961 rows), a chi-square-robust hinge loss with an intercept,
    as a Problem: the solve, the degenerate-model check and the report run under the tripwire
    and agree with the in-memory ones."""
    real = standardized("mammographic")
    lazy = rc.Dataset(da.from_array(real.X, chunks=(250, real.d)), real.y)

    def problem(data):
        ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.05)
        return rc.Problem(minimize=rc.robust_loss(ball, loss="hinge"),
                          model=rc.LinearModel(l2=1e-2))

    reference = problem(rc.Dataset(real.X, real.y)).solve(method="lbfgs")
    ours = problem(lazy).solve()
    assert ours.method == "lbfgs" and ours.status == reference.status == "optimal"
    assert np.max(np.abs(ours.w - reference.w)) <= TOL and abs(ours.b - reference.b) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL
    assert "degenerate_check" not in ours.certificate.details  # it ran
    row, ref_row = ours.report().rows[0], reference.report().rows[0]
    assert abs(row.indicator - ref_row.indicator) <= 1e-10


def test_degenerate_check_on_dask_data(client, monkeypatch):
    """Labels independent of the features and a large ball: the constant model is optimal
    (theta = 0), and the check says so on Dask data as in memory, under the tripwire (its
    constants evaluated from the class counts, the model's robust loss by the Dask passes).
    The check runs on the in-memory solve's result: the solver's own proof that theta = 0 is
    optimal (the balancing pmfs at tied margins) still gathers on Dask data."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(900, 4)), (rng.random(900) < 0.3).astype(int)

    def problem(data):
        ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.3)
        return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1.0))

    with pytest.warns(rc.TrivialOptimumWarning):
        result = problem(rc.Dataset(X, y)).solve(method="lbfgs")
    theirs = result.certificate.details.pop("degenerate")
    lazy = problem(rc.Dataset(da.from_array(X, chunks=(300, 4)), y))
    lazy.plan()
    install_tripwire(monkeypatch)
    with pytest.warns(rc.TrivialOptimumWarning):
        mine = check_degenerate(lazy, result)
    assert mine["constant"] == theirs["constant"]
    for key in ("constant_score", "model_objective", "constant_objective"):
        assert abs(mine[key] - theirs[key]) <= 1e-9, key


@pytest.mark.parametrize("phi", ["chi2", "kl"])
def test_constant_robust_value_is_the_inner_maximization(phi):
    """R at a constant score from the class counts equals the IM procedure on the N losses
    (both classes, one class absent, the case alpha* = 0, a score of 0: tied losses)."""
    rng = np.random.default_rng(2)
    for n, share in ((1200, 0.3), (777, 0.55), (60, 0.0)):
        y = (rng.random(n) < share).astype(int)
        X = da.from_array(rng.normal(size=(n, 2)), chunks=(300, 2))
        for rho in (0.01, 0.3, 3.0):
            ball = rc.PhiDivergenceBall(rc.Dataset(X, y), phi=phi, rho=rho, strict=False)
            for loss in ("logistic", "hinge", "squared"):
                for c in (0.3, -1.7, 0.0, 4.0):
                    z, _ = margin_loss(loss, (2.0 * y - 1.0) * c)
                    want = inner_maximize(z, ball.phi, rho).value
                    assert abs(constant_robust_value(ball, loss, c) - want) <= 1e-12 * max(
                        1.0, abs(want))


def test_kink_rows_capped(client, no_vectors, monkeypatch):
    """More kink rows than KINK_ROWS_CAP at the widest width: the refit uses the widest width
    within the cap, and equals the in-memory refit over those widths."""
    from ratecons.solvers import dro_certificate, dro_dask_bound

    memory, lazy = _forms(CHI2, 1e-2, True)
    theta = solve_dro_lbfgs(memory, warn=False).primal["theta"]
    passes = DaskPasses(lazy)
    ours = passes.evaluate(theta)
    margins = evaluate(memory, theta).margins
    wide, narrow = (np.count_nonzero(np.abs(margins - 1.0) <= w) for w in (1e-2, 1e-5))
    assert wide > narrow >= 1
    monkeypatch.setattr(dro_dask_bound, "KINK_ROWS_CAP", wide - 1)
    mine = dask_lower_bound(passes, ours)
    widths = tuple(w for w in dro_certificate.HINGE_REFIT_WIDTHS
                   if np.count_nonzero(np.abs(margins - 1.0) <= w) <= wide - 1)
    monkeypatch.setattr(dro_certificate, "HINGE_REFIT_WIDTHS", widths)
    theirs = lower_bound(memory, evaluate(memory, theta))
    assert np.isfinite(mine) and abs(mine - theirs) <= 1e-10 * max(1.0, abs(theirs))
