"""The specialized Problem-3 solver (Alg 2 / Alg 3 / SDCA) against the CVXPY reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.canonical.rate_fold import fold_bound
from ratecons.errors import SolverError
from ratecons.reductions.to_cvxpy import solve_bound_cvxpy
from ratecons.solution import Solution
from ratecons.solvers.rate_bound import WarmStart, solve_bound_specialized, warm_start_of
from ratecons.testing import churn_recall_datasets, fairness_problem, tight_churn_recall_problem
from tests.rate_bound_helpers import random_problem
from tests.shared_data import standardized


def _assert_matches(program, masks, sol, rtol=1e-4, vtol=1e-4):
    ref = solve_bound_cvxpy(program, masks)
    assert sol.status == "optimal", sol.certificate
    w, b = sol.primal["w"], float(sol.primal["b"])
    objective = program.bound_row_values(w, b, masks)[0] + program.regularizer(w)
    assert objective == pytest.approx(sol.objective, rel=1e-12)
    assert sol.objective == pytest.approx(ref.objective, rel=rtol)
    viol = np.max(program.bound_row_values(w, b, masks)[1:] - program.gamma, initial=0.0)
    assert viol <= vtol and sol.certificate.max_violation <= vtol
    cert = sol.certificate
    assert cert.lower_bound - 1e-6 <= ref.objective <= cert.upper_bound + 1e-6
    return ref


@pytest.mark.parametrize("seed,sparse,extra", [(0, False, None), (1, True, None),
                                               (2, False, 0.7), (3, True, 0.8)])
def test_hinge_relaxation_matches_cvxpy(seed, sparse, extra):
    program = random_problem(seed, sparse=sparse, extra_recall=extra)
    masks = program.bound_masks()
    _assert_matches(program, masks, solve_bound_specialized(program, masks, seed=seed))


def test_anchored_bound_and_warm_start_match_cvxpy():
    """Problem 3 at an anchor (constant-1 bounds for some examples), then the next MM bound
    warm-started from the previous solution's duals, multipliers and bias."""
    problem = fairness_problem(n=500, seed=4, kappa=0.85, l2=1e-2)
    program = problem.canonical()
    first_masks = program.bound_masks()
    first = solve_bound_specialized(program, first_masks)
    _assert_matches(program, first_masks, first)
    masks = program.bound_masks(first.primal["w"], float(first.primal["b"]))
    assert any((~mp).any() or (~mn).any() for mp, mn in masks)
    cold = solve_bound_specialized(program, masks)
    warm = solve_bound_specialized(program, masks, warm_start=first)
    _assert_matches(program, masks, cold)
    _assert_matches(program, masks, warm)
    # the warm start really starts from the previous multipliers and bias
    assert np.allclose(warm.history[0]["v"], first.primal["v"])
    assert cold.history[0]["v"] == pytest.approx(0.0)
    # ... its first cut is solved to the target gap (epsilon = 1e-5), the cold start's first
    # cut more loosely, and its first bracketing step is the previous bound's own move
    assert warm.history[0]["eps_t"] == pytest.approx(1e-5)
    assert cold.history[0]["eps_t"] > 1e-5
    step = warm_start_of(first, 1).v_step
    moved = abs(first.primal["v"][0] - first.history[0]["v"][0])
    v = first.primal["v"][0]
    assert step == pytest.approx(min(max(2 * moved, 0.01 * v), 0.25 * v))
    assert len(warm.history) > 1  # one cut does not certify the maximum here
    assert abs(warm.history[1]["v"][0] - warm.history[0]["v"][0]) <= step * (1 + 1e-9)


def _solved(v_first, v_best) -> Solution:
    return Solution(status="optimal", objective=0.0, primal={"v": np.array([v_best])},
                    history=[{"v": np.array([v_first])}])


@settings(max_examples=60, deadline=None)
@given(v_first=st.floats(0.0, 10.0), v_best=st.floats(1e-6, 10.0))
def test_warm_bracketing_step_is_twice_the_last_move_within_1_to_25_percent(v_first, v_best):
    """Alg 2's first step from a warm multiplier: 2 |v*_prev - v_first_prev|, clipped to
    [1%, 25%] of the multiplier it starts from."""
    step = warm_start_of(_solved(v_first, v_best), 1).v_step
    assert 0.01 * v_best * (1 - 1e-12) <= step <= 0.25 * v_best * (1 + 1e-12)
    if 0.01 * v_best <= 2 * abs(v_best - v_first) <= 0.25 * v_best:
        assert step == pytest.approx(2 * abs(v_best - v_first))


def test_warm_bracketing_step_needs_one_previous_multiplier():
    """No history, two multipliers, a multiplier at 0 or a plain dict: Alg 2's default step;
    multipliers of another length than the bound's: a cold Alg 2."""
    assert warm_start_of(None, 1) == WarmStart()
    assert warm_start_of({"v": np.array([0.2])}, 1).v_step is None
    assert warm_start_of(_solved(0.1, 0.0), 1).v_step is None
    two = Solution(status="optimal", objective=0.0, primal={"v": np.array([0.2, 0.3])},
                   history=[{"v": np.array([0.1, 0.3])}])
    assert warm_start_of(two, 2).v_step is None
    assert warm_start_of(two, 2).v is not None
    assert warm_start_of(two, 1).v is None  # another length: Alg 2 starts cold
    no_history = Solution(status="optimal", objective=0.0, primal={"v": np.array([0.2])})
    assert warm_start_of(no_history, 1).v_step is None
    parts = warm_start_of({"xi": np.ones(3), "v": np.array([0.2]), "b": np.float64(0.5)}, 1)
    assert parts.b == 0.5 and np.array_equal(parts.xi, np.ones(3))


def test_three_datasets_two_constraints_churn_recall():
    d1, d2, d3, _ = churn_recall_datasets(sizes=(600, 300, 400), d=6, seed=1)
    problem = rc.Problem(
        minimize=rc.error_rate(d1) + rc.false_positive_rate(d2),
        subject_to=[rc.recall(d2) >= 0.6, rc.churn_rate(d3) <= 0.15],
        model=rc.LinearModel(l2=1e-2),
    )
    program = problem.canonical()
    masks = program.bound_masks()
    _assert_matches(program, masks, solve_bound_specialized(program, masks))


@pytest.mark.slow
def test_adult_subsample_fairness_matches_cvxpy():
    adult = rc.datasets.load_adult()
    adult = adult.take(np.random.default_rng(0).choice(adult.n, 2500, replace=False))
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    problem = rc.Problem(minimize=rc.error_rate(adult),
                         subject_to=[rc.positive_rate_ratio(women, men) >= 0.8],
                         model=rc.LinearModel(l2=1e-3))
    program = problem.canonical()
    masks = program.bound_masks()
    first = solve_bound_specialized(program, masks)
    _assert_matches(program, masks, first)
    anchored = program.bound_masks(first.primal["w"], float(first.primal["b"]))
    _assert_matches(program, anchored, solve_bound_specialized(program, anchored, first))


def _warm_chain_matches_cvxpy(problem: rc.Problem, bounds: int = 4) -> list:
    """MM bounds of ``problem`` in a row, each anchored at the last one's solution and
    warm-started from it (Alg 2 from the previous v*, its first cut to the target gap and its
    bracket step from the last move): every one against the CVXPY reference."""
    program = problem.canonical()
    masks = program.bound_masks()
    solved = [solve_bound_specialized(program, masks)]
    _assert_matches(program, masks, solved[0])
    for _ in range(bounds - 1):
        last = solved[-1]
        masks = program.bound_masks(last.primal["w"], float(last.primal["b"]))
        warm = solve_bound_specialized(program, masks, last)
        _assert_matches(program, masks, warm)
        assert warm.history[0]["eps_t"] == pytest.approx(1e-5)  # the first cut to the gap
        solved.append(warm)
    return solved


@pytest.mark.slow
@pytest.mark.parametrize("name", ["adult", "diabetes"])
def test_warm_bounds_in_a_row_match_cvxpy_on_real_data(name):
    """The warm multiplier's rules on real data: four MM bounds in a row (Adult sample, 80%
    rule; Pima diabetes, recall floor), each equal to CLARABEL's bound to 1e-4 with its
    certificate bracketing CLARABEL's optimum; after the first warm bound the bracket step
    is the previous run's own move, below the old 25% of v."""
    if name == "adult":
        data = rc.datasets.load_adult()
        data = data.take(np.random.default_rng(1).choice(data.n, 2000, replace=False))
        women, men = data.group("sex", "Female"), data.group("sex", "Male")
        rows = [rc.positive_rate_ratio(women, men) >= 0.8]
    else:
        data = standardized("diabetes")
        rows = [rc.recall(data) >= 0.8]
    solved = _warm_chain_matches_cvxpy(rc.Problem(minimize=rc.error_rate(data),
                                                  subject_to=rows,
                                                  model=rc.LinearModel(l2=1e-3)))
    fractions = [warm_start_of(s, 1).v_step / s.primal["v"][0]
                 for s in solved[1:] if s.primal["v"][0] > 0]
    assert fractions and min(fractions) < 0.25


def test_lp_and_l1_problems_are_refused_clearly():
    program = random_problem(0)
    program.l2 = 0.0
    with pytest.raises(SolverError, match="l2"):
        solve_bound_specialized(program, program.bound_masks())
    program.l2, program.l1 = 1e-2, 1e-3
    with pytest.raises(SolverError, match="l1"):
        solve_bound_specialized(program, program.bound_masks())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), scale=st.floats(0.1, 3.0))
def test_folded_rows_equal_problem3_rows(seed, scale):
    """Eqs 13-15: the per-example folding reproduces every Problem-3 row at any anchor."""
    program = random_problem(seed % 5, n=120, d=4, extra_recall=0.6)
    rng = np.random.default_rng(seed)
    w_anchor, w = scale * rng.normal(size=4), rng.normal(size=4)
    masks = program.bound_masks(w_anchor, rng.normal())
    bound = fold_bound(program, masks)
    b = rng.normal()
    assert np.allclose(bound.rows(w, b), program.bound_row_values(w, b, masks), atol=1e-12)


@pytest.mark.parametrize("seed,sparse", [(4, False), (5, True)])
def test_cvxpy_reference_value_is_the_rows_at_its_solution(seed, sparse):
    """solve_bound_cvxpy sums the coefficients of an example met in several blocks into one
    epigraph variable per sign; its optimal value must still be Problem 3 evaluated by
    bound_row_values, row by row, at the point it returns."""
    program = random_problem(seed, sparse=sparse, extra_recall=0.9)
    rng = np.random.default_rng(seed)
    w0, b0 = rng.normal(size=program.d) * 0.3, 0.1
    solved = 0
    for masks in (program.bound_masks(), program.bound_masks(w0, b0)):
        sol = solve_bound_cvxpy(program, masks)
        if sol.status == "infeasible":
            continue
        solved += 1
        assert sol.status == "optimal"
        w, b = sol.primal["w"], float(sol.primal["b"])
        rows = program.bound_row_values(w, b, masks)
        assert np.maximum(rows[1:] - program.gamma, 0.0).max(initial=0.0) <= 1e-6
        expected = rows[0] + program.regularizer(w)
        assert sol.objective == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert solved


@pytest.mark.parametrize("penalty", [None, 10.0])
@pytest.mark.parametrize("anchored", [False, True])
def test_generic_elastic_step_value_is_the_rows_at_its_solution(penalty, anchored):
    """Phase 1's elastic step (the generic lowering with slacks on the constraint rows) at the
    hinge relaxation and at an anchor, on a problem whose hinge relaxation is infeasible: its
    optimal value must be the total excess of the Problem-3 rows over their bounds (no
    penalty) or the exact penalty objective, with the rows evaluated independently by
    bound_row_values at the point it returns."""
    from ratecons.reductions.kernelize import kernelize
    from ratecons.reductions.to_cvxpy import solve_step
    from ratecons.settings import PHASE1_NORM_WEIGHT

    problem = tight_churn_recall_problem(l2=1e-3)
    seed = 7
    analysis, program = problem.analysis, problem.canonical()
    fmap = kernelize(analysis.model, analysis.datasets)
    psi = {id(d): fmap.apply(d.X) for d in analysis.datasets}
    bounds = np.array([row.bound for row in analysis.constraints])
    rng = np.random.default_rng(seed)
    w0, b0 = rng.normal(size=program.d) * 0.3, 0.1
    anchor = {k: np.asarray(P @ w0).ravel() - b0 for k, P in psi.items()} if anchored else None
    masks = program.bound_masks(w0, b0) if anchored else program.bound_masks()
    step = solve_step(analysis, psi, anchor, bounds, "CLARABEL", tight=True, elastic=True,
                      penalty=penalty)
    assert step.status == "optimal"
    rows = program.bound_row_values(step.w, step.b, masks)
    excess = np.maximum(rows[1:] - program.gamma, 0.0).sum()
    assert excess > 1e-3  # the targets are out of the hinge relaxation's reach here
    if penalty is None:  # stage 2: the violation, with a share of the regularizer
        expected = excess + PHASE1_NORM_WEIGHT * program.regularizer(step.w)
    else:
        expected = rows[0] + program.constant[0] + program.regularizer(step.w) + penalty * excess
    assert step.objective == pytest.approx(expected, rel=1e-6, abs=1e-8)
