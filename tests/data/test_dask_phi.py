"""The robust loss with a custom phi on Dask data, its per-example vectors on the workers
(issue 33; :mod:`ratecons.numerics.inner_max_dask_phi`, by way of
:mod:`ratecons.numerics.inner_max_dask_rule`).

The inner maximization's dual is found by a damped Newton search on the dual, one batch of
candidate multipliers per pass over the persisted margins; the answers are the in-memory
bisection's (:func:`ratecons.numerics.inner_max._inner_bisection`): F, its gradient, P*'s
divergence and dual value at a point, and whole solves to 1e-8 in w, b and F with the same
status. Checked on a LocalCluster of two workers under the tripwire of ``conftest.no_vectors``
(any Dask array of more than GATHER_ROWS rows made NumPy fails the test).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import ratecons as rc  # noqa: E402
from ratecons.canonical.dro import DROProgram  # noqa: E402
from ratecons.numerics.inner_max import inner_maximize  # noqa: E402
from ratecons.numerics.inner_max_dask_rule import worst_case_rule  # noqa: E402
from ratecons.scans import dask_state_passes  # noqa: E402
from ratecons.solvers.dro_certificate import lower_bound  # noqa: E402
from ratecons.solvers.dro_dask import DaskPasses  # noqa: E402
from ratecons.solvers.dro_dask_bound import dask_lower_bound  # noqa: E402
from ratecons.solvers.dro_eval import evaluate  # noqa: E402
from ratecons.solvers.dro_lbfgs import solve_dro_lbfgs  # noqa: E402
from tests.data.conftest import install_tripwire  # noqa: E402
from tests.shared_data import standardized  # noqa: E402
from tests.shared_phi import CHI2_CUSTOM, HELLINGER  # noqa: E402

TOL = 1e-8


def _forms(phi, loss, l2=1e-2, fit_intercept=True, n=1200, d=5, chunk=350, seed=0, rho=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0
    memory = DROProgram(X=X, y=np.where(y, 1.0, -1.0), loss=loss, phi=phi, rho=rho, l2=l2,
                        fit_intercept=fit_intercept)
    return memory, replace(memory, X=da.from_array(X, chunks=(chunk, d)))


@pytest.mark.parametrize("phi", [HELLINGER, CHI2_CUSTOM])
@pytest.mark.parametrize("rho", [0.01, 0.3])
def test_inner_maximization_matches_the_bisection(client, no_vectors, phi, rho):
    """The dual search's P* against the in-memory bisection: the robust value, alpha*,
    lambda* (with P* = s / sum s, lambda is fixed up to the normalization's tolerance)."""
    rng = np.random.default_rng(1)
    z = rng.gamma(2.0, size=1500)
    memory = inner_maximize(z, phi, rho)
    assert memory.case == "bisection"
    margins = da.from_array(1.0 - z, chunks=400)  # hinge losses max(0, 1 - m) = z > 0
    _, rule, _ = worst_case_rule(margins, "hinge", phi, rho)
    s = rule.weights(z)
    p = s / s.sum()
    assert rule.kind == "phi"
    assert abs(p @ z - memory.value) <= 1e-12 * memory.value
    assert abs(rule.alpha - memory.alpha) <= 1e-9 * memory.alpha
    assert abs(phi.divergence(p) - rho) <= 1e-12 * rho


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_point_and_bound_match(client, no_vectors, loss):
    """At a point: F, its gradient, P*'s divergence and dual value and the certified lower
    bound equal the in-memory ones; an evaluation takes a few passes over the margins."""
    memory, lazy = _forms(HELLINGER, loss)
    theta = np.array([0.3, -0.2, 0.1, 0.0, 0.05, 0.1])
    passes = DaskPasses(lazy)
    before = dask_state_passes()
    ours = passes.evaluate(theta)
    assert dask_state_passes() - before <= 20
    ref = evaluate(memory, theta)
    scale = max(1.0, abs(ref.value))
    assert abs(ours.value - ref.value) <= 1e-12 * scale
    assert np.max(np.abs(ours.grad - ref.grad)) <= 1e-11 * scale
    assert abs(ours.inner.divergence - ref.inner.divergence) <= 1e-12
    assert abs(ours.inner.dual_value - ref.inner.dual_value) <= 1e-10 * scale
    mine, theirs = dask_lower_bound(passes, ours), lower_bound(memory, ref)
    assert np.isfinite(theirs) and abs(mine - theirs) <= 1e-9 * scale


def test_solve_agrees_and_sends_the_labels_once(client, no_vectors):
    """A whole L-BFGS solve (Hellinger ball, logistic loss): the same status, w, b and F to
    1e-8; the signed labels are the only N-vector sent to the workers."""
    memory, lazy = _forms(HELLINGER, "logistic", chunk=600)
    no_vectors.clear()
    ours = solve_dro_lbfgs(lazy, warn=False)
    assert no_vectors == [memory.n]
    reference = solve_dro_lbfgs(memory, warn=False)
    assert ours.status == reference.status == "optimal"
    assert np.max(np.abs(ours.primal["theta"] - reference.primal["theta"])) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL * max(1.0, abs(ours.objective))


@pytest.mark.slow
def test_real_data_problem_and_metrics(client, monkeypatch):
    """Mammographic masses (UCI, 961 rows, z-scored), a Hellinger-robust logistic loss as a
    Problem: the Dask solve (lbfgs on the workers) agrees with the in-memory one, and its
    metrics (the robust loss among them) are the in-memory ones, under the tripwire."""
    real = standardized("mammographic")
    lazy = rc.Dataset(da.from_array(real.X, chunks=(250, real.d)), real.y)

    def problem(data):
        ball = rc.PhiDivergenceBall(data, phi=HELLINGER, rho=0.05)
        return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))

    reference = problem(rc.Dataset(real.X, real.y)).solve(method="lbfgs")
    install_tripwire(monkeypatch)
    ours = problem(lazy).solve()
    assert ours.method == "lbfgs" and ours.status == reference.status == "optimal"
    assert np.max(np.abs(ours.w - reference.w)) <= TOL and abs(ours.b - reference.b) <= TOL
    assert abs(ours.objective - reference.objective) <= TOL
    mine, theirs = ours.metrics(lazy), reference.metrics(rc.Dataset(real.X, real.y))
    for key, want in theirs.items():
        assert abs(mine[key] - want) <= (_tied_pairs(reference, real) if key == "auc"
                                         else TOL), key


def _tied_pairs(result, data) -> float:
    """The AUC's share of positive-negative pairs whose scores tie up to rounding (1e-12
    relative): scores that agree to 1e-8 between two solves, or to an ulp between the blocks'
    products and the whole matrix's, can count such a pair 0, 1/2 or 1. On mammographic's
    integer-valued features a pair is tied in exact arithmetic: the two AUCs parted by 2.2e-6,
    half a pair of the 445 x 516 (an AMD EPYC machine, numpy 2.4.6)."""
    s, pos = result.decision_function(data.X), np.asarray(data.y) == 1
    gap = np.abs(s[pos][:, None] - s[~pos][None, :])
    return float(np.sum(gap <= 1e-12 * max(1.0, np.abs(s).max()))) / gap.size + 1e-12
