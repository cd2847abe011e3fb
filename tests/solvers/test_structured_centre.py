"""The weighted central path of the structured interior point (solvers/structured_centre.py).

- A step whose constraint row is inactive at the optimum (hinge loss with the bound of a
  positive rate in a row of its own, loosened past the unconstrained optimum's value: the
  shape of the 200,000-row hinge + 80% rule step that stalled at gap 1.2e-3): from a warm
  start whose row multiplier is 0 (and the threshold of pieces lowered to this size) the
  step runs on the weighted path, ends ``optimal`` with
  a certified gap in at most half the iterations of the plain path, and agrees with CLARABEL
  on the same problem to 1e-6 (and the plain path too).
- A step with smooth or robust parts (logistic loss; a robust chi-square hinge loss, on
  synthetic rows and on an Adult sample) whose rate row is inactive starts warm on the plain
  path, in fewer iterations than cold on the weighted one, to the CVXPY step's optimum, and
  goes there only when the warm run fails; a piecewise-linear one still starts cold on the
  weighted path.
- The weights: 1 on the objective's pieces, PIECE_WEIGHT / n_j on the pieces that enter only
  constraint rows (summing to PIECE_WEIGHT per flagged row), robust pieces counted in their
  row (hypothesis); the weighted mu with unit weights is the mean product; which warm
  multipliers mark a row inactive.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import pick_solver, solve_step
from ratecons.reductions.to_structured import lower_structured
from ratecons.scans import Rows
from ratecons.solvers import structured, structured_centre
from ratecons.solvers.structured import _IPM, CERTIFIED_TOL, solve_structured
from ratecons.solvers.structured_centre import (
    INACTIVE_DUAL,
    PIECE_WEIGHT,
    expected_inactive,
    group_weights,
    piece_weights,
    weighted_mu,
)
from ratecons.solvers.structured_form import StructuredForm, WarmStart
from ratecons.solvers.structured_robust import RobustPieces
from tests.shared_data import load
from tests.solvers.test_structured import _random_form


def _inactive_row_step(n: int, seed: int = 0, slack: float = 0.05
                       ) -> tuple[StructuredForm, np.ndarray, np.ndarray, np.ndarray]:
    """The inactive-row step (:func:`_inactive_row_form`) on synthetic data: 5 gaussian
    features, a linear labelling with noise, a group of about 40% of the rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.where(X @ rng.normal(size=5) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    a = np.flatnonzero(rng.random(n) < 0.4)
    return _inactive_row_form(X, y, a, slack)


def _inactive_row_form(X, y: np.ndarray, a: np.ndarray, slack: float
                       ) -> tuple[StructuredForm, np.ndarray, np.ndarray, np.ndarray]:
    """Hinge loss (1/n) sum max(0, 1 - y z) + (l2/2)|w|^2 with the rate bound
    (1/n_a) sum_a max(0, 1/2 + z) <= bound, bound ``slack`` above its value at the
    unconstrained optimum (the row is inactive)."""
    n = X.shape[0]
    index = np.concatenate([np.arange(n), a])
    C = np.zeros((2, index.size))
    C[0, :n], C[1, n:] = 1.0 / n, 1.0 / a.size
    form = StructuredForm(Rows(X), True, 1e-3, 0.0, index, np.concatenate([-y, np.ones(a.size)]),
                          np.concatenate([np.ones(n), np.full(a.size, 0.5)]), C, [],
                          np.zeros(2), np.array([10.0]))
    free = solve_structured(form)
    form.bounds = np.array([form.row_values(free.w, free.b)[1] + slack])
    return form, X, y, a


def _clarabel(form: StructuredForm, X: np.ndarray, y: np.ndarray, a: np.ndarray) -> float:
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    z = X @ w - b
    objective = cp.sum(cp.pos(1 - cp.multiply(y, z))) / y.size + 0.5 * form.l2 * cp.sum_squares(w)
    row = cp.sum(cp.pos(0.5 + z[a])) / a.size <= form.bounds[0]
    problem = cp.Problem(cp.Minimize(objective), [row])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == "optimal"
    return float(problem.value)


def test_inactive_row_step_runs_on_the_weighted_path_and_matches_clarabel(monkeypatch):
    # the row has 2,400 pieces: the weighted start is taken from that many on here (50,000
    # in the solver, where the plain warm start was measured to cost more)
    monkeypatch.setattr(structured_centre, "WEIGHTED_START_FROM", 2000)
    form, X, y, a = _inactive_row_step(6000)
    reference = _clarabel(form, X, y, a)
    plain = solve_structured(form)
    anchor = 0.9 * plain.w
    weighted = solve_structured(form, warm=WarmStart(anchor, plain.b, np.zeros(1), np.zeros(0)))
    for answer in (plain, weighted):
        assert answer.status == "optimal", answer.message
        assert max(answer.rel_gap, answer.primal_residual, answer.dual_residual) <= CERTIFIED_TOL
        assert abs(answer.objective - reference) <= 1e-6 * max(1.0, abs(reference))
        assert answer.max_violation <= 1e-8
    assert weighted.duals[0] <= 1e-6  # the row is inactive
    assert 2 * weighted.iterations <= plain.iterations, (weighted.iterations, plain.iterations)
    # a warm start whose row multiplier is not 0 keeps the plain path, to the same answer
    warm = solve_structured(form, warm=WarmStart(anchor, plain.b, np.array([0.5]), np.zeros(0)))
    assert warm.status == "optimal"
    assert abs(warm.objective - reference) <= 1e-6 * max(1.0, abs(reference))


def _real_inactive_row_steps():
    """(name, X, y in {-1, 1}, group rows) on real data: a 3,000-row Adult sample (sparse
    one-hot features, the group is women) and diabetes (standardized, the group is the rows
    with an above-median age)."""
    adult = rc.datasets.load_adult()
    sample, _ = adult.split(3000 / adult.n, seed=5)
    women = np.flatnonzero(np.asarray(sample.groups["sex"]) == "Female")
    yield "adult", sample.X, np.where(np.asarray(sample.y) > 0, 1.0, -1.0), women
    raw = load("diabetes")
    X = np.asarray(raw.X, dtype=float)
    older = np.flatnonzero(X[:, 7] > np.median(X[:, 7]))  # column 7: age
    yield ("diabetes", (X - X.mean(0)) / X.std(0), np.where(np.asarray(raw.y) > 0, 1.0, -1.0),
           older)


def test_weighted_path_matches_clarabel_on_real_data(monkeypatch):
    # the weighted start from as many pieces as the real group has (its solver threshold,
    # 50,000 pieces in a row, is met only past about 100,000 rows of Adult)
    monkeypatch.setattr(structured_centre, "WEIGHTED_START_FROM", 200)
    paths: list[bool] = []  # per interior-point run: on the weighted path?

    def recording_ipm(form, weighted=None, scaled=None):
        paths.append(weighted is not None)
        return _IPM(form, weighted, scaled=scaled)

    monkeypatch.setattr(structured, "_IPM", recording_ipm)
    for name, X, y, a in _real_inactive_row_steps():
        form, X, y, a = _inactive_row_form(X, y, a, slack=0.05)
        reference = _clarabel(form, X, y, a)
        paths.clear()
        plain = solve_structured(form)
        assert paths == [False], name
        weighted = solve_structured(form, warm=WarmStart(0.9 * plain.w, plain.b, np.zeros(1),
                                                         np.zeros(0)))
        assert paths == [False, True], (name, paths)  # answered on the weighted path
        for answer in (plain, weighted):
            assert answer.status == "optimal", (name, answer.message)
            assert max(answer.rel_gap, answer.primal_residual,
                       answer.dual_residual) <= CERTIFIED_TOL, name
            assert abs(answer.objective - reference) <= 1e-6 * max(1.0, abs(reference)), name
            assert answer.max_violation <= 1e-8, name
        assert weighted.duals[0] <= 1e-6, name  # the row is inactive


def _robust(row: int, index: np.ndarray) -> RobustPieces:
    return RobustPieces("chi2", 0.1, 1.0, "hinge", index, np.ones(index.size), 0, 1, row=row)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(1, 30), m=st.integers(1, 3),
       robust_row=st.integers(0, 3))
def test_piece_weights_give_each_flagged_row_one_barrier(seed, K, m, robust_row):
    rng = np.random.default_rng(seed)
    C = np.where(rng.random((m + 1, K)) < 0.4, rng.random((m + 1, K)), 0.0)
    robust = []
    if robust_row <= m:
        robust = [_robust(robust_row, np.flatnonzero(rng.random(K) < 0.3))]
    flagged = rng.random(m) < 0.6
    omega = piece_weights(C, robust, K, flagged)
    in_objective = C[0] > 0
    inside = C[1:] > 0
    for piece in robust:
        if piece.row == 0:
            in_objective[piece.index] = True
        else:
            inside[piece.row - 1, piece.index] = True
    only = inside & ~in_objective[None, :]
    weighted = np.any(only & flagged[:, None], axis=0)
    assert np.all(omega[~weighted] == 1.0)
    assert np.all((omega[weighted] > 0) & (omega[weighted] < 1.0 + 1e-15))
    for j in np.flatnonzero(flagged):
        if only[j].any():
            # each flagged row's pieces weigh PIECE_WEIGHT together, or less where a piece is
            # shared with a more crowded flagged row
            assert np.sum(omega[only[j]]) <= PIECE_WEIGHT * (1 + 1e-12)
            if not np.any(only[j] & (only.sum(axis=0) > 1)):
                assert np.isclose(np.sum(omega[only[j]]), min(PIECE_WEIGHT, only[j].sum()))
    assert np.all(piece_weights(C, robust, K, np.zeros(m, dtype=bool)) == 1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(1, 20), m=st.integers(0, 3))
def test_weighted_mu_is_the_mean_product_with_unit_weights(seed, K, m):
    rng = np.random.default_rng(seed)
    sizes = {"A": K, "B": K, "R": m}
    s = {g: rng.random(n) + 0.1 for g, n in sizes.items()}
    lam = {g: rng.random(n) + 0.1 for g, n in sizes.items()}
    ones = group_weights(np.ones(K), sizes)
    products = np.concatenate([s[g] * lam[g] for g in sizes])
    assert np.isclose(weighted_mu(s, lam, ones), products.mean())
    omega = rng.random(K) + 0.01
    weights = group_weights(omega, sizes)
    total = 2 * omega.sum() + m
    assert np.isclose(weighted_mu(s, lam, weights), products.sum() / total)


def test_expected_inactive_reads_the_scaled_warm_multipliers():
    kappa = np.array([100.0, 1.0, 10.0])  # scaled multiplier: lam * kappa[0] / kappa[j]
    assert expected_inactive(None, kappa) is None
    assert expected_inactive(np.array([1.0, 1.0]), kappa) is None
    rows = expected_inactive(np.array([0.5 * INACTIVE_DUAL / 100.0, INACTIVE_DUAL]), kappa)
    assert rows is not None and rows.tolist() == [True, False]
    # a warm start over fewer rows (the user's) leaves the others unmarked
    assert expected_inactive(np.zeros(1), kappa).tolist() == [True, False]


def _jacobian_transpose(ipm, system, y):
    """J^T y: the parts the interior point keeps apart, with Q^T zr added."""
    rest, t_u, t_tau, zr = ipm.jacobian_transpose_parts(system, y)
    return rest + np.concatenate([ipm.q_transpose(zr), np.zeros(ipm.r)]), t_u, t_tau


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), p=st.integers(1, 4),
       m=st.integers(0, 3), l1=st.booleans(), intercept=st.booleans(), extra=st.integers(0, 2),
       weighted=st.booleans())
def test_shared_products_equal_the_separate_ones(seed, n, p, m, l1, intercept, extra, weighted):
    """The products the direction shares (solvers/structured.py): a solve with a per-example
    part of the rhs left to it equals the solve of the whole rhs, its Q d_theta is Q times
    the solved d_theta, J^T split into (rest, zr) is the adjoint of J, and the direction (with one
    refinement) solves the unreduced Newton system, on the plain and the weighted path."""
    form = _random_form(seed, n, p, m, l1, intercept, extra)
    ipm = _IPM(form, np.ones(m, dtype=bool) if weighted else None)
    rng = np.random.default_rng(seed + 1)
    x = ipm.start()
    for g in x.s:
        x.s[g], x.lam[g] = rng.uniform(0.1, 3.0, x.s[g].size), rng.uniform(0.1, 3.0, x.s[g].size)
    ev = ipm.evaluate(x)
    system = ipm.factor(x, ev)
    sizes = (x.theta.size, x.u.size, x.tau.size)
    r = tuple(rng.normal(size=k) for k in sizes)
    on_z = rng.normal(size=form.rows.n)
    whole = (r[0] + np.concatenate([ipm.q_transpose(on_z), np.zeros(ipm.r)]), r[1], r[2])
    (d, dz) = ipm.solve_scored(system, r, on_z)
    for ours, theirs in zip(d, ipm.solve(system, whole), strict=True):
        assert np.allclose(ours, theirs, atol=1e-8 * max(1.0, np.abs(theirs).max(initial=0.0)))
    if dz is not None:
        assert np.allclose(dz, ipm.q_apply(d[0]), atol=1e-10 * max(1.0, np.abs(dz).max()))
    y = {g: rng.normal(size=x.s[g].size) for g in x.s}
    full = _jacobian_transpose(ipm, system, y)
    # the adjoint identity <y, J d> = <J^T y, d> against jacobian_apply, an independent path
    step = tuple(rng.normal(size=k) for k in sizes)
    jd = ipm.jacobian_apply(system, step)
    left = sum(float(y[g] @ jd[g]) for g in y)
    right = sum(float(a @ b) for a, b in zip(full, step, strict=True))
    assert abs(left - right) <= 1e-9 * max(1.0, abs(left))
    r_c = {g: rng.uniform(0.1, 1.0, x.s[g].size) for g in x.s}
    direction = ipm.direction(x, ev, system, r_c, refine=True)
    xi = {g: system["W"][g] * (ev["c"][g] - x.s[g]) + r_c[g] / x.s[g] for g in x.s}
    jt = _jacobian_transpose(ipm, system, xi)
    rhs = np.concatenate([-ev["r_theta"] - jt[0], -ev["r_u"] - jt[1], -ev["r_tau"] - jt[2]])
    applied = np.concatenate(ipm.operator(system, ev["curv"], (direction.theta, direction.u,
                                                                direction.tau)))
    assert np.allclose(applied, rhs, atol=1e-7 * max(1.0, np.abs(rhs).max()), rtol=0)


def _inactive_rate_steps(case: str):
    """An MM step anchored where the rate's row is inactive, with its warm start from the
    last answer there: on 6,000 synthetic rows a robust chi-square hinge loss (``"robust"``)
    or the logistic loss (``"logistic"``) with a positive rate of group a at least 0.05,
    after two steps; on a 3,000-row Adult sample (``"adult"``, real data) the robust
    chi-square hinge loss with the positive rate of women at least 0.02, after three."""
    if case == "adult":
        adult = rc.datasets.load_adult()
        D, _ = adult.split(3000 / adult.n, seed=5)
        group, bound, steps = D.group("sex", "Female"), 0.02, 3
    else:
        rng = np.random.default_rng(4)
        X = rng.normal(size=(6000, 5))
        y = (X @ rng.normal(size=5) + 0.5 * rng.normal(size=6000) > 0).astype(int)
        D = rc.Dataset(X, y, groups={"g": np.where(rng.random(6000) < 0.4, "a", "b")})
        group, bound, steps = D.group("g", "a"), 0.05, 2
    loss = (rc.logistic_loss(D) if case == "logistic" else
            rc.robust_loss(rc.PhiDivergenceBall(D, phi="chi2", rho=0.1), loss="hinge"))
    analysis = rc.Problem(minimize=loss, model=rc.LinearModel(l2=1e-3),
                          subject_to=[rc.positive_rate(group) >= bound]).analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    answer, anchor = None, None  # the hinge relaxation first, then the MM steps
    for _ in range(steps):
        form = lower_structured(analysis, psi, anchor, bounds, {})
        answer = solve_structured(form, warm=None if answer is None else answer.warm_start(
            form.m))
        assert answer.status == "optimal"
        anchor = {key: np.asarray(P @ answer.w).ravel() - answer.b for key, P in psi.items()}
    form = lower_structured(analysis, psi, anchor, bounds, {})
    return analysis, psi, anchor, bounds, form, answer.warm_start(form.m)


def _recording(monkeypatch, fail_first: bool = False) -> list[tuple[bool, bool]]:
    """Per interior-point run of structured._attempts: (on the weighted path, warm); the
    first run's answer replaced by a ``numerical_error`` when ``fail_first``."""
    runs: list[tuple[bool, bool]] = []
    run = structured._run

    def recording_run(form, ipm, tol, budget, deadline, start):
        runs.append((ipm.omega.min() < 1.0, start is not None))
        answer = run(form, ipm, tol, budget, deadline, start)
        if fail_first and len(runs) == 1:
            answer.status = "numerical_error"
        return answer

    monkeypatch.setattr(structured, "_run", recording_run)
    return runs


@pytest.mark.parametrize("case", ["robust", "logistic", "adult"])
def test_a_smooth_or_robust_step_starts_warm_on_the_plain_path(monkeypatch, case):
    # every row inactive in a step with smooth or robust parts: warm on the plain path, not
    # cold on the weighted one (the 200,000-row robust chi-square hinge + 80% rule steps: 66
    # and 69 iterations there, 20 and 21 warm), to the CVXPY step's optimum
    analysis, psi, anchor, bounds, form, warm = _inactive_rate_steps(case)
    # the threshold at this size: the Adult sample's row has 119 pieces of its own at this
    # anchor, the synthetic rows' about 1,300
    monkeypatch.setattr(structured_centre, "WEIGHTED_START_FROM", 100)
    assert form.smooth or form.robust
    assert warm.duals[0] <= 1e-6  # the row is inactive at the last step's answer
    run = structured._run
    runs = _recording(monkeypatch)
    answer = solve_structured(form, warm=warm)
    assert runs == [(False, True)], runs
    reference = solve_step(analysis, psi, anchor, bounds, pick_solver(analysis, None),
                           tight=True)
    assert answer.status == "optimal"
    assert max(answer.rel_gap, answer.primal_residual, answer.dual_residual) <= CERTIFIED_TOL
    assert answer.objective == pytest.approx(reference.objective, rel=1e-6)
    cold = run(form, _IPM(form, np.ones(1, dtype=bool)), 1e-8, 100, None, None)
    assert cold.status == "optimal"
    assert answer.objective == pytest.approx(cold.objective, rel=1e-7)
    assert answer.iterations < cold.iterations, (answer.iterations, cold.iterations)
    # a plain warm run that fails goes on cold on the weighted path, to the same optimum
    runs = _recording(monkeypatch, fail_first=True)
    again = solve_structured(form, warm=warm)
    assert runs == [(False, True), (True, False)], runs
    assert again.status == "optimal"
    assert again.objective == pytest.approx(reference.objective, rel=1e-6)


def test_a_piecewise_linear_step_still_starts_cold_on_the_weighted_path(monkeypatch):
    # without smooth or robust parts the cold weighted start stays first (the 200,000-row
    # hinge + 80% rule step: 21 and 22 iterations there, a stall warm on the plain path)
    monkeypatch.setattr(structured_centre, "WEIGHTED_START_FROM", 2000)
    form, *_ = _inactive_row_step(6000)
    plain = solve_structured(form)
    runs = _recording(monkeypatch)
    answer = solve_structured(form, warm=WarmStart(0.9 * plain.w, plain.b, np.zeros(1),
                                                   np.zeros(0)))
    assert answer.status == "optimal"
    assert runs == [(True, False)], runs
