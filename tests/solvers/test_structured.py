"""The structured step solver against the CVXPY step at the same anchor, and its chain.

- Every cell of the composition matrix that the structured lowering takes (error rate, hinge
  and logistic losses, TPR@K, TPR@tau, Pat&Mat x none, recall floor, 80% rule, churn,
  precision floor, a chi-square worst-case recall x linear l2, linear l1, gaussian kernel):
  the step at the hinge relaxation and at an anchor agrees with CLARABEL at tight tolerances
  to 1e-6 relative in objective, the multipliers of the constraint rows agree, and the step's
  certificate shows a relative gap <= 1e-6.
- Real data (an Adult subsample, diabetes): the same, and the whole chain
  (``method="structured"``) agrees with ``method="cvxpy"`` to 1e-4 (the same start and steps).
- The reduced Newton solve (per-example and l1 eliminations, Woodbury over the rows) equals
  the dense solve of the unreduced system (hypothesis).
- Budgets: ``time_limit`` stops the chain within the limit plus one step.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.errors import NotLinearError
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import solve_step
from ratecons.reductions.to_matrix import anchor_of
from ratecons.reductions.to_structured import lower_structured
from ratecons.scans import Rows
from ratecons.solvers.structured import _IPM, CERTIFIED_TOL, solve_structured
from ratecons.solvers.structured_form import SmoothPieces, StructuredForm
from ratecons.testing import small_composition_data
from tests.reductions.test_composition import CONSTRAINTS as COMPOSITION_CONSTRAINTS
from tests.reductions.test_composition import MODELS as COMPOSITION_MODELS
from tests.shared_data import standardized

STEP_RTOL = 1e-6
CHAIN_RTOL = 1e-4

OBJECTIVES = {
    "error_rate": lambda D: {"minimize": rc.error_rate(D)},
    "hinge_loss": lambda D: {"minimize": rc.hinge_loss(D)},
    "logistic_loss": lambda D: {"minimize": rc.logistic_loss(D)},
    "tpr_at_k": lambda D: {"maximize": rc.tpr_at_top(D, k=3)},
    "tpr_at_tau": lambda D: {"maximize": rc.tpr_at_quantile(D, tau=0.1)},
    "pat_mat": lambda D: {"maximize": rc.tpr_at_quantile(D, tau=0.1, formulation="pat&mat")},
}
#: the composition matrix's constraints (the worst-case rate included) and models
CONSTRAINTS = COMPOSITION_CONSTRAINTS
MODELS = COMPOSITION_MODELS


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def _steps(problem: rc.Problem, anchor_result=None) -> tuple:
    """The structured and the CLARABEL (tight) step of ``problem`` at the same anchor."""
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    anchor = None if anchor_result is None else anchor_of(analysis, anchor_result)
    reference = solve_step(analysis, psi, anchor, bounds, "CLARABEL", tight=True)
    form = lower_structured(analysis, psi, anchor, bounds)
    return solve_structured(form), reference, form


def _check_step(ours, reference) -> None:
    if reference.status == "infeasible":
        assert ours.status != "optimal"
        return
    assert reference.status == "optimal"
    assert ours.status == "optimal", ours.message
    assert max(ours.rel_gap, ours.primal_residual, ours.dual_residual) <= CERTIFIED_TOL
    assert _rel(ours.objective, reference.objective) <= STEP_RTOL
    assert ours.max_violation <= 1e-6


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(120, baseline=True)


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("constraint", list(CONSTRAINTS))
@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_every_cell_step_matches_clarabel_at_the_same_anchor(data, objective, constraint, model):
    problem = rc.Problem(**OBJECTIVES[objective](data),
                         subject_to=CONSTRAINTS[constraint](data), model=MODELS[model]())
    check = _check_step if constraint != "worst_case_rate" else _check_second_order_step
    ours, reference, _ = _steps(problem)
    check(ours, reference)
    if reference.status == "optimal" and problem.constraints:
        # the multipliers are unique here only up to the solvers' accuracy: compare loosely
        assert np.allclose(ours.duals, reference.duals, atol=1e-4, rtol=1e-3)
    # at an anchor: the MM step (constant-1 bounds where the anchor's score is past +-1/2)
    anchor = problem.solve(method="cvxpy")
    if anchor.has_model:
        ours, reference, _ = _steps(problem, anchor)
        check(ours, reference)


def _check_second_order_step(ours, reference) -> None:
    """The worst-case rate's chi-square support function is a second-order cone in the CVXPY
    lowering, where CLARABEL at its tight tolerances ends ``optimal_inaccurate`` on the
    logistic-loss cells (its value still agrees with the certified structured step to 1e-6)."""
    if reference.status == "optimal_inaccurate":
        reference.status = "optimal"
    _check_step(ours, reference)


def _adult_sample(n: int = 2000) -> rc.Dataset:
    adult = rc.datasets.load_adult()
    sample, _ = adult.split(n / adult.n, seed=3)
    return sample


def _diabetes() -> rc.Dataset:
    return standardized("diabetes", group_of=lambda X: {
        "age": np.where(X[:, 7] >= 30, "older", "younger")})


def _real_problems() -> list[tuple[str, rc.Problem]]:
    adult = _adult_sample()
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    diabetes = _diabetes()
    old, young = diabetes.group("age", "older"), diabetes.group("age", "younger")
    return [
        ("adult logistic + 80% rule", rc.Problem(
            minimize=rc.logistic_loss(adult), model=rc.LinearModel(l2=1e-3),
            subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])),
        ("adult error + recall floor, l1", rc.Problem(
            minimize=rc.error_rate(adult), model=rc.LinearModel(l2=1e-4, l1=1e-3),
            subject_to=[rc.recall(adult) >= 0.7])),
        ("diabetes hinge + FPR parity", rc.Problem(
            minimize=rc.hinge_loss(diabetes), model=rc.LinearModel(l2=1e-2),
            subject_to=[rc.false_positive_rate(old) - rc.false_positive_rate(young) <= 0.05,
                        rc.recall(diabetes) >= 0.7])),
    ]


def check_steps_and_chain(name: str, problem: rc.Problem, check_step=_check_step) -> None:
    """The hinge relaxation's step and the last step at the structured chain's anchor against
    CLARABEL, and the whole chain against ``method="cvxpy"`` (no CVXPY step taken)."""
    ours, reference, _ = _steps(problem)
    check_step(ours, reference)
    structured = problem.solve(method="structured")
    cvxpy = problem.solve(method="cvxpy")
    assert structured.status == cvxpy.status == "optimal", name
    assert structured.certificate.details["reference_steps"] == 0, name
    assert _rel(structured.objective, cvxpy.objective) <= CHAIN_RTOL, name
    assert structured.report().all_satisfied, name
    ours, reference, _ = _steps(problem, structured)
    check_step(ours, reference)


@pytest.mark.slow
def test_real_data_steps_and_chains_match_the_reference():
    for name, problem in _real_problems():
        check_steps_and_chain(name, problem)


def test_unsupported_terms_are_refused_by_name(data):
    ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)
    problem = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                         subject_to=[rc.robust_loss(ball) <= 0.9])
    with pytest.raises(NotLinearError, match="only as a minimized objective term"):
        problem.solve(method="structured")
    assert problem.solve().method == "cvxpy"  # auto: the reference chain, and plan() says why
    assert "only as a minimized objective term" in str(problem.plan())


def test_time_limit_stops_the_chain_within_one_step():
    adult = _adult_sample(6000)
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    problem = rc.Problem(minimize=rc.error_rate(adult), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    started = time.perf_counter()
    one = problem.solve(method="structured", max_iterations=1)
    one_step = time.perf_counter() - started
    limit = 0.5 * one_step
    started = time.perf_counter()
    result = problem.solve(method="structured", time_limit=limit)
    elapsed = time.perf_counter() - started
    assert result.status == "time_limit"
    assert elapsed <= limit + 2.0 * one_step
    assert one.status in ("iteration_limit", "optimal")


# --------------------------------------------------------------------------- eliminations
def _random_form(seed: int, n: int, p: int, m: int, l1: bool, intercept: bool,
                 extra: int = 0) -> StructuredForm:
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, p))
    K = 2 * n
    index = np.concatenate([np.arange(n), np.arange(n)])
    slope = np.concatenate([np.ones(n), -np.ones(n)])
    coef = rng.random((m + 1, K)) * (rng.random((m + 1, K)) < 0.6)
    label = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    smooth = [SmoothPieces("logistic", np.arange(n), label, rng.random((m + 1, n)))]
    G = rng.normal(size=(K, extra))  # every free variable in pieces, as thresholds are
    return StructuredForm(Rows(P), intercept, 0.1, 0.05 if l1 else 0.0, index, slope,
                          np.full(K, 0.5), coef, smooth, np.zeros(m + 1),
                          rng.random(m) * n, extra=extra,
                          hinge_extra=sp.csr_matrix(G), row_extra=rng.normal(size=(m + 1, extra)))


def _dense_operator(ipm: _IPM, system: dict, curv: np.ndarray, sizes: tuple) -> np.ndarray:
    """The unreduced (H + J^T W J) as a dense matrix, column by column."""
    total = sum(sizes)
    M = np.zeros((total, total))
    for col in range(total):
        e = np.zeros(total)
        e[col] = 1.0
        parts = np.split(e, np.cumsum(sizes)[:-1])
        M[:, col] = np.concatenate(ipm.operator(system, curv, tuple(parts)))
    return M


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), p=st.integers(1, 4),
       m=st.integers(0, 3), l1=st.booleans(), intercept=st.booleans(), extra=st.integers(0, 2))
def test_reduced_newton_solve_equals_the_dense_solve(seed, n, p, m, l1, intercept, extra):
    form = _random_form(seed, n, p, m, l1, intercept, extra)
    ipm = _IPM(form)
    check_reduced_solve(ipm, ipm.start(), np.random.default_rng(seed + 1))


def check_reduced_solve(ipm: _IPM, x, rng: np.random.Generator) -> None:
    """At ``x`` with random slacks and multipliers (a generic interior point), the reduced
    solve of :meth:`_IPM.solve` inverts the unreduced symmetric operator."""
    for g in x.s:
        x.s[g] = rng.uniform(0.1, 3.0, x.s[g].size)
        x.lam[g] = rng.uniform(0.1, 3.0, x.lam[g].size)
    ev = ipm.evaluate(x)
    system = ipm.factor(x, ev)
    sizes = (x.theta.size, x.u.size, x.tau.size)
    M = _dense_operator(ipm, system, ev["curv"], sizes)
    assert np.allclose(M, M.T, atol=1e-9 * max(1.0, np.abs(M).max()))
    rhs = rng.normal(size=sum(sizes))
    ours = np.concatenate(ipm.solve(system, tuple(np.split(rhs, np.cumsum(sizes)[:-1]))))
    assert np.allclose(M @ ours, rhs, atol=1e-7 * max(1.0, np.abs(rhs).max()), rtol=0)
