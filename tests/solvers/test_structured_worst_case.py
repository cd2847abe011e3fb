"""Worst-case rates (``rc.worst_case`` over chi-square and KL balls) in the structured step.

- Synthetic compositions: a worst-case recall (ball on the positives: the rate's own subset),
  a worst-case positive rate of a group (ball on the group) as a floor, a ceiling and inside
  the 80% rule beside a plain rate, and a conditional recall (ball on a group, the rate over
  its positives), each for chi-square and KL, beside a logistic loss or an error rate: the
  step at the hinge relaxation and at an anchor agrees with CLARABEL to 1e-6 relative with a
  certified gap <= 1e-6, and the whole chain agrees with ``method="cvxpy"`` to 1e-4 with no
  CVXPY step.
- Real data (an Adult 2,000-row sample, diabetes): the same.
- The reduced Newton solve with support-function pieces in a constraint row (multiplier-
  weighted curvature, a row Jacobian that moves with the iterate, fixed losses) equals the
  dense solve of the unreduced system (hypothesis).
- The row's value at the step's (eta, lam) is the support function of the bounded losses
  (App. A.1 of Ghosh & Squillante), and ``auto`` / ``plan()`` pick the structured steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.numerics.inner_max import inner_maximize
from ratecons.numerics.phi import Phi
from ratecons.reductions.to_structured import structured_support
from ratecons.solvers.structured_robust import RobustPieces
from ratecons.testing import small_composition_data
from tests.solvers.test_structured import (
    _adult_sample,
    _diabetes,
    _random_form,
    _steps,
    check_steps_and_chain,
)
from tests.solvers.test_structured_robust import (
    _check_step,
    _quartic_conjugate,
    check_reduced_solve_with,
)

PHIS = ("chi2", "kl")


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(120, baseline=True)


def _constraint(D: rc.Dataset, kind: str, phi: str) -> list:
    a, b = D.group("g", "a"), D.group("g", "b")
    if kind == "recall":  # the ball on the rate's own subset
        return [rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(D.positives, phi, 0.1))
                >= 0.7]
    if kind == "group floor":
        return [rc.worst_case(rc.positive_rate(a), rc.PhiDivergenceBall(a, phi, 0.1)) >= 0.4]
    if kind == "ceiling":
        return [rc.worst_case(rc.positive_rate(D), rc.PhiDivergenceBall(D, phi, 0.1)) <= 0.4]
    if kind == "80% rule":
        return [rc.worst_case(rc.positive_rate(a), rc.PhiDivergenceBall(a, phi, 0.05))
                >= 0.8 * rc.positive_rate(b)]
    # conditional: the recall of group a under every reweighting of group a
    return [rc.worst_case(rc.recall(a), rc.PhiDivergenceBall(a, phi, 0.1)) >= 0.8]


KINDS = ("recall", "group floor", "ceiling", "80% rule", "conditional")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("phi", PHIS)
def test_worst_case_rate_steps_match_clarabel_and_the_chain_matches_cvxpy(data, phi, kind):
    objective = rc.logistic_loss(data) if kind != "ceiling" else rc.error_rate(data)
    problem = rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e-2),
                         subject_to=_constraint(data, kind, phi))
    ours, reference, form = _steps(problem)
    _check_step(ours, reference)
    assert len(form.robust) == 1 and form.robust[0].row == 1
    assert form.robust[0].phi == phi
    cvxpy = problem.solve(method="cvxpy")
    ours, reference, _ = _steps(problem, cvxpy)  # an MM step at the reference's anchor
    _check_step(ours, reference)
    structured = problem.solve(method="structured")
    # the KL 80% rule: a repair round's tightened step is infeasible, and both chains restart
    # phase one from there (the structured chain knows it by way of the elastic step)
    assert structured.status == cvxpy.status
    assert abs(structured.objective - cvxpy.objective) <= 1e-4 * max(1.0, abs(cvxpy.objective))
    if cvxpy.status == "optimal":
        assert structured.certificate.details["reference_steps"] == 0
        assert structured.report().all_satisfied


def test_worst_case_rate_in_the_objective_and_two_balls(data):
    """A minimized worst-case error rate (row 0) beside a worst-case recall floor: two
    support functions, one per row."""
    problem = rc.Problem(
        minimize=rc.worst_case(rc.error_rate(data), rc.PhiDivergenceBall(data, "kl", 0.1)),
        model=rc.LinearModel(l2=1e-2), subject_to=_constraint(data, "recall", "chi2"))
    ours, reference, form = _steps(problem)
    _check_step(ours, reference)
    assert sorted(piece.row for piece in form.robust) == [0, 1]
    cvxpy = problem.solve(method="cvxpy")
    ours, reference, _ = _steps(problem, cvxpy)
    _check_step(ours, reference)


def test_the_row_is_the_support_function_of_the_bounded_losses(data):
    """At the step's (eta, lam) the row's robust part equals the inner maximization of App. A.1
    over the per-example bounds (eq. 4 of Goh et al., here the hinge relaxation), and any
    other (eta, lam) gives a larger value (the dual form is an upper bound)."""
    wc = rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data.positives, "kl", 0.1))
    problem = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                         subject_to=[wc >= 0.7])
    ours, _, form = _steps(problem)
    piece = form.robust[0]
    z = form.rows.scores(ours.w, ours.b)
    u = np.maximum(0.0, form.hinge_slope * z[form.hinge_index] + form.hinge_offset)
    losses = np.concatenate([piece.offset + piece.slope * u[piece.index], piece.fixed])
    exact = inner_maximize(losses, wc.ball.phi, 0.1).value
    values = form.row_values(ours.w, ours.b, ours.extra)
    # the row is -(c + S(-g)) with the rate's constant c = 0: the robust part is S
    assert abs(values[1] - form.constant[1] - exact) <= 1e-6 * max(1.0, abs(exact))
    moved = ours.extra.copy()
    moved[piece.lam] *= 1.5
    assert form.row_values(ours.w, ours.b, moved)[1] - form.constant[1] >= exact


def _real_problems() -> list[tuple[str, rc.Problem]]:
    adult = _adult_sample()
    women, men = adult.group("sex", "Female"), adult.group("sex", "Male")
    diabetes = _diabetes()
    old = diabetes.group("age", "older")
    return [
        ("adult logistic + chi2 worst-case 80% rule", rc.Problem(
            minimize=rc.logistic_loss(adult), model=rc.LinearModel(l2=1e-3),
            subject_to=[rc.worst_case(rc.positive_rate(women), rc.PhiDivergenceBall(
                women, "chi2", 0.1)) >= 0.8 * rc.positive_rate(men)])),
        ("diabetes error + KL worst-case recall", rc.Problem(
            minimize=rc.error_rate(diabetes), model=rc.LinearModel(l2=1e-2),
            subject_to=[rc.worst_case(rc.recall(diabetes), rc.PhiDivergenceBall(
                diabetes.positives, "kl", 0.1)) >= 0.6])),
        ("diabetes logistic + chi2 conditional recall", rc.Problem(
            minimize=rc.logistic_loss(diabetes), model=rc.LinearModel(l2=1e-2),
            subject_to=[rc.worst_case(rc.recall(old), rc.PhiDivergenceBall(
                old, "chi2", 0.1)) >= 0.75])),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("case", range(3))
def test_real_data_worst_case_steps_and_chains_match_the_reference(case):
    check_steps_and_chain(*_real_problems()[case], check_step=_check_step)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), p=st.integers(1, 4),
       m=st.integers(1, 2), l1=st.booleans(), intercept=st.booleans(),
       phi=st.sampled_from(PHIS), fixed=st.integers(0, 3))
def test_reduced_newton_solve_with_a_worst_case_row_equals_the_dense_solve(
        seed, n, p, m, l1, intercept, phi, fixed):
    form = _random_form(seed, n, p, m, l1, intercept, extra=1)
    rng = np.random.default_rng(seed + 2)
    # the support function over n of the hinge epigraphs (losses offset + factor u) and
    # ``fixed`` constant losses, in the last constraint row
    check_reduced_solve_with(form, RobustPieces(
        phi, 0.1, 0.7, "hinge", rng.permutation(2 * n)[:n], np.zeros(n), 1, 2, row=m,
        factor=rng.uniform(0.2, 2.0, n), offset=rng.uniform(-1.0, 0.5, n),
        fixed=rng.uniform(-1.0, 1.0, fixed)), rng)


def test_auto_picks_the_structured_steps_and_plan_says_so():
    """benchmarks.composition at 2,000 Adult rows: the structured chain took 2.5-3.9x less
    time than the CVXPY chain on the three worst-case rows (docs/composition_log.md)."""
    data = small_composition_data(600, baseline=True)
    problem = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                         subject_to=_constraint(data, "80% rule", "chi2"))
    plan = problem.plan()
    assert plan.method == "structured"
    assert "structured interior point" in str(plan)


def test_worst_case_rates_the_lowering_cannot_take_are_refused_by_name(data):
    custom = Phi(lambda s: (s - 1.0) ** 4, lambda s: 4.0 * (s - 1.0) ** 3, _quartic_conjugate,
                 name="quartic")
    problem = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                         subject_to=[rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(
                             data.positives, custom, 0.1)) >= 0.7])
    problem.plan()
    assert "chi-square and KL balls only" in structured_support(problem.analysis)
    a, b = data.group("g", "a"), data.group("g", "b")
    conditional = rc.worst_case(rc.recall(a), rc.PhiDivergenceBall(a, "chi2", 0.1))
    beside = rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-2),
                        subject_to=[conditional >= 0.8 * rc.recall(b)])
    with pytest.raises(rc.SpecError, match="strict subset"):
        beside.solve(method="structured")
