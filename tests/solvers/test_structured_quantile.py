"""The structured step on TPR@tau parts (Pat&Mat on all examples and Pat&Mat-NP on the
negatives, Macha et al. problems (6) and (9) with the hinge surrogate; one tau-FPL instance,
which shares their lowering) against CLARABEL, on real data (an Adult subsample, diabetes).

Every instance is a composition the chain lowers with the threshold's own row
(1/n~) sum_j max(0, 1 + theta (z_j - t)) <= tau (:mod:`ratecons.reductions.to_structured`): with a
rate row (the 80% rule, a recall floor, FPR parity), where t is a free variable of the step,
and alone as the objective, where the ranking pins t at 0. For each, the step of the hinge
relaxation and the step at the structured chain's last anchor are ``optimal`` with a certified
gap <= 1e-6 and agree with CLARABEL's step (tight tolerances) to 1e-6 relative in objective,
and the whole chain (``method="structured"``) agrees with ``method="cvxpy"`` to 1e-4 without
handing a step to CLARABEL. (The diabetes instance with two user rows ended in a
ValueError before the chain's warm start carried the threshold row's multiplier:
:meth:`ratecons.solvers.structured_form.StructuredSolution.warm_start`.)

``auto`` runs these compositions by the structured steps, and ``plan()`` says so: on the
grid of ``benchmarks.composition`` they were faster than the CVXPY steps (whole Adult split:
4.7-4.8x).
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.expr.ranking import TPRAtQuantile
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers.structured import solve_structured
from tests.solvers.test_structured import (
    _adult_sample,
    _check_step,
    _diabetes,
    _steps,
    check_steps_and_chain,
)


def _quantile(D: rc.Dataset, tau: float, among: str, theta: float = 1.0) -> TPRAtQuantile:
    return rc.tpr_at_quantile(D, tau=tau, among=among, formulation="pat&mat", theta=theta)


def _adult_problems() -> dict[str, rc.Problem]:
    adult = _adult_sample()
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    rule = rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)
    parity = rc.false_positive_rate(women) - rc.false_positive_rate(men) <= 0.02
    return {
        "Pat&Mat tau=0.05 + 80% rule": rc.Problem(
            maximize=_quantile(adult, 0.05, "all"), model=rc.LinearModel(l2=1e-3),
            subject_to=[rule]),
        "Pat&Mat-NP tau=0.01 + recall floor + 80% rule": rc.Problem(
            maximize=_quantile(adult, 0.01, "negatives"), model=rc.LinearModel(l2=1e-3),
            subject_to=[rc.recall(adult) >= 0.7, rule]),
        "Pat&Mat-NP tau=0.2, theta=2 + FPR parity + recall floor": rc.Problem(
            maximize=_quantile(adult, 0.2, "negatives", theta=2.0),
            model=rc.LinearModel(l2=1e-2), subject_to=[parity, rc.recall(adult) >= 0.8]),
    }


def _diabetes_problems() -> dict[str, rc.Problem]:
    diabetes = _diabetes()
    old, young = diabetes.group("age", "older"), diabetes.group("age", "younger")
    return {
        "Pat&Mat-NP tau=0.1 + FPR parity + recall floor": rc.Problem(
            maximize=_quantile(diabetes, 0.1, "negatives"), model=rc.LinearModel(l2=1e-2),
            subject_to=[rc.false_positive_rate(old) - rc.false_positive_rate(young) <= 0.05,
                        rc.recall(diabetes) >= 0.7]),
        "Pat&Mat tau=0.2 + 80% rule": rc.Problem(
            maximize=_quantile(diabetes, 0.2, "all"), model=rc.LinearModel(l2=1e-3),
            subject_to=[rc.positive_rate(young) >= 0.8 * rc.positive_rate(old)]),
        # tau-FPL (the mean of the ceil(tau n-) largest negative scores) shares the lowering
        "tau-FPL tau=0.05 + recall floor + 80% rule": rc.Problem(
            maximize=rc.tpr_at_quantile(diabetes, tau=0.05), model=rc.LinearModel(l2=1e-3),
            subject_to=[rc.recall(diabetes) >= 0.6,
                        rc.positive_rate(young) >= 0.8 * rc.positive_rate(old)]),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_diabetes_problems()))
def test_diabetes_quantile_steps_and_chain_match_the_reference(name):
    check_steps_and_chain(name, _diabetes_problems()[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_adult_problems()))
def test_adult_quantile_steps_and_chain_match_the_reference(name):
    check_steps_and_chain(name, _adult_problems()[name])


@pytest.mark.parametrize("tau, among", [(0.01, "negatives"), (0.05, "all"), (0.2, "all"),
                                        (0.1, "negatives")])
def test_quantile_alone_step_matches_clarabel(tau, among):
    """TPR@tau alone as the objective (the pattern's problem, here lowered as a chain step with
    the threshold pinned at 0): the step matches CLARABEL on both datasets."""
    for D, l2 in ((_adult_sample(), 1e-3), (_diabetes(), 1e-2)):
        problem = rc.Problem(maximize=_quantile(D, tau, among), model=rc.LinearModel(l2=l2))
        ours, reference, form = _steps(problem)
        _check_step(ours, reference)
        assert form.extra == 0  # the ranking pins the threshold: no free variable
        # the threshold's row holds at the step's solution: (1/n~) sum max(0, 1 + z_j) <= tau
        rows = form.row_values(ours.w, ours.b, ours.extra)
        assert rows[-1] <= form.bounds[-1] + 1e-6
        assert form.bounds[-1] == tau


def test_warm_start_carries_the_threshold_rows_multiplier():
    """The step's answer has a multiplier for every row of the form, the threshold row of
    Pat&Mat included (active at the optimum: positive), and the next step's warm start takes
    them all; a form with fewer rows (the plain step of an elastic answer) takes the first."""
    problem = _diabetes_problems()["Pat&Mat-NP tau=0.1 + FPR parity + recall floor"]
    ours, reference, form = _steps(problem)
    _check_step(ours, reference)
    assert form.m == 3 and form.user_rows == 2
    assert ours.duals.size == 2 and ours.row_duals.size == 3
    assert np.array_equal(ours.row_duals[:2], ours.duals)
    assert ours.row_duals[2] > 1e-6  # the threshold row binds
    assert np.array_equal(ours.warm_start(3).duals, ours.row_duals)
    assert np.array_equal(ours.warm_start(2).duals, ours.duals)
    assert np.array_equal(ours.warm_start(4).duals, np.append(ours.row_duals, 0.0))


def test_auto_runs_quantile_compositions_by_the_structured_steps():
    adult = _adult_sample(1000)
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    problem = rc.Problem(maximize=_quantile(adult, 0.05, "all"), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    plan = problem.plan()
    assert plan.method == "structured"
    assert "each step by the structured interior point" in str(plan)


def _relaxation_form(problem: rc.Problem):
    """The structured form of the hinge relaxation (no anchor) of ``problem``."""
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    return lower_structured(analysis, psi, None, bounds)


def _relaxation_step(problem: rc.Problem):
    """The structured step of the hinge relaxation of ``problem``."""
    return solve_structured(_relaxation_form(problem))


@pytest.mark.parametrize("among", ["all", "negatives"])
def test_threshold_rows_multiplier_is_the_same_on_a_row_sample(among):
    """The threshold row's multiplier of Pat&Mat is of the same size on every 7th row as on
    all rows, so the chain's warm start from a row sample (which carries it,
    :meth:`~ratecons.solvers.structured_form.StructuredSolution.warm_start`) starts near the
    full step's. As the sum sum_j max(0, 1 + theta (z_j - t)) <= n~ tau the row's multiplier
    was 1/n~ of a mean's: on the sample 7 times the full step's (7.2 on the whole Adult
    split, where the warm start from the sample took 48 iterations and 43 with the mean)."""
    adult = _adult_sample(7000)
    sample = adult.take(np.arange(0, adult.n, 7))

    def problem(D: rc.Dataset) -> rc.Problem:
        women, men = D.group("sex", "Female"), D.group("sex", "Male")
        return rc.Problem(maximize=_quantile(D, 0.05, among), model=rc.LinearModel(l2=1e-3),
                          subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])

    full, part = _relaxation_step(problem(adult)), _relaxation_step(problem(sample))
    assert full.status == part.status == "optimal"
    assert full.row_duals.size == part.row_duals.size == 2
    assert full.row_duals[1] > 1e-6  # the threshold row binds
    assert 0.5 <= part.row_duals[1] / full.row_duals[1] <= 2.0


def _np_recall_parity(D: rc.Dataset) -> rc.Problem:
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    return rc.Problem(maximize=_quantile(D, 0.05, "negatives"), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.recall(D) >= 0.7, rc.false_positive_rate(women)
                                  - rc.false_positive_rate(men) <= 0.02])


def test_a_blocked_warm_start_with_inactive_user_rows_runs_weighted_cold():
    """Pat&Mat-NP with a recall floor and FPR parity (the benchmark's row) on 7,000 Adult rows,
    warm from the answer on every 7th row: the user rows are inactive, the threshold row
    binds, and the warm start is blocked (8 steps below 0.1). The warm call then runs cold on
    the weighted path of the inactive user rows (:mod:`ratecons.solvers.structured_centre`)
    and certifies the step: 33 iterations in all, against the blocked warm start and the
    caller's plain cold start (8 + 42; on the whole split 8 + 67 against 49)."""
    adult = _adult_sample(7000)
    full = _relaxation_form(_np_recall_parity(adult))
    sample = _relaxation_step(_np_recall_parity(adult.take(np.arange(0, adult.n, 7))))
    assert sample.status == "optimal"
    warm = sample.warm_start(full.m)
    cold = solve_structured(full)
    answer = solve_structured(full, warm=warm)
    assert cold.status == answer.status == "optimal", answer.message
    assert answer.iterations < 8 + cold.iterations
    assert abs(answer.objective - cold.objective) <= 1e-6 * max(1.0, abs(cold.objective))
