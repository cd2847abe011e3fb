"""The centred warm start of the structured step (:mod:`ratecons.solvers.structured_warm`):
the first iterate of an MM step from the previous step's answer has every slack-multiplier
pair at a product of at least mu_0 and a relative gap near ``WARM_GAP``, and the warm-started
step reaches the same certified optimum as a cold start and as the CVXPY step at that anchor;
a warm start given up as blocked is started again centred deeper before any cold start."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import structured_fallback
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import pick_solver, solve_step
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers.structured import _IPM, solve_structured
from ratecons.solvers.structured_correctors import (
    BLOCKED_BELOW,
    BLOCKED_BELOW_WARM,
    PREDICTOR_BLOCKERS,
    WARM_BLOCKERS_PIECES,
    warm_predictor_blockers,
)
from ratecons.solvers.structured_form import WarmStart
from ratecons.solvers.structured_stop import BLOCKED_MESSAGE, WARM_BLOCKED
from ratecons.solvers.structured_warm import RECENTRED_GAP, WARM_GAP, recentred


def _problem(constraint: str, objective=rc.error_rate) -> rc.Problem:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    D = train.take(np.random.default_rng(0).choice(train.n, 2000, replace=False))
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    rows = {"recall": [rc.recall(D) >= 0.8],
            "80% rule": [rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)]}
    return rc.Problem(minimize=objective(D), model=rc.LinearModel(l2=1e-3),
                      subject_to=rows[constraint])


@pytest.fixture(scope="module", params=["recall", "80% rule"])
def second_step(request):
    """The first MM step (anchored at the hinge relaxation's answer) and a warm start from
    that answer."""
    analysis = _problem(request.param).analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    cache: dict = {}
    first = solve_structured(lower_structured(analysis, psi, None, bounds, cache))
    assert first.status == "optimal"
    anchor = {key: np.asarray(P @ first.w).ravel() - first.b for key, P in psi.items()}
    form = lower_structured(analysis, psi, anchor, bounds, cache)
    warm = WarmStart(first.w, first.b, first.duals, first.extra)
    return analysis, psi, anchor, bounds, form, warm


def test_the_warm_start_is_centred(second_step):
    *_, form, warm = second_step
    ipm = _IPM(form)
    x = ipm.start(warm)
    ev = ipm.evaluate(x)
    pairs = sum(x.s[g].size for g in x.s)
    mu0 = WARM_GAP * max(float(ipm.sc.kappa[0]), abs(ev["objective"])) / pairs
    for g in x.s:
        assert np.all(x.s[g] > 0) and np.all(x.lam[g] > 0)
        assert np.all(x.s[g] * x.lam[g] >= mu0 * ipm.weights[g] * (1 - 1e-9)), g
    rel_gap = ipm.measures(x, ev)[0]
    # the pairs at the floor give WARM_GAP; the pieces whose side changed add the rest (the
    # former start, every slack and multiplier shifted by 0.3, began at a relative gap above 1)
    assert WARM_GAP * 0.99 <= rel_gap < 3 * WARM_GAP


def test_the_warm_step_reaches_the_cold_and_the_cvxpy_optimum(second_step):
    analysis, psi, anchor, bounds, form, warm = second_step
    hot = solve_structured(form, warm=warm)
    cold = solve_structured(form)
    reference = solve_step(analysis, psi, anchor, bounds, pick_solver(analysis, None),
                           tight=True)
    assert hot.status == cold.status == "optimal" and hot.rel_gap <= 1e-8
    assert hot.objective == pytest.approx(cold.objective, rel=1e-7)
    assert hot.objective == pytest.approx(reference.objective, rel=1e-6)


def test_the_recentred_start_is_centred_deeper(second_step):
    """:func:`recentred` starts at the same point with every pair's product at least mu_0 of
    ``RECENTRED_GAP``, and the step reaches the warm and cold starts' optimum."""
    *_, form, warm = second_step
    ipm = _IPM(form)
    x = ipm.start(recentred(warm))
    ev = ipm.evaluate(x)
    pairs = sum(x.s[g].size for g in x.s)
    mu0 = RECENTRED_GAP * max(float(ipm.sc.kappa[0]), abs(ev["objective"])) / pairs
    for g in x.s:
        assert np.all(x.s[g] * x.lam[g] >= mu0 * ipm.weights[g] * (1 - 1e-9)), g
    assert RECENTRED_GAP * 0.99 <= ipm.measures(x, ev)[0] < 3 * RECENTRED_GAP
    np.testing.assert_array_equal(x.theta, ipm.start(warm).theta)
    again = solve_structured(form, warm=recentred(warm))
    assert again.status == "optimal" and again.rel_gap <= 1e-8
    assert again.objective == pytest.approx(solve_structured(form, warm=warm).objective,
                                            rel=1e-7)


class _Captured(Exception):
    """Raised to end a chain once a blocked warm step is captured."""


@pytest.fixture(scope="module")
def blocked_step():
    """The first MM step of logistic loss + churn <= 0.05 + 80% rule on 2,000 Adult rows
    whose warm start was blocked: its form and the warm start."""
    from tests.patterns.test_chain_scale import _adult, _churn_rule

    caught: list = []

    def recorded(form, *, tol, deadline, warm):
        answer = solve_structured(form, tol=tol, deadline=deadline, warm=warm)
        if warm is not None and answer.message == BLOCKED_MESSAGE:
            caught.append((form, tol, warm, answer))
            raise _Captured
        return answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(structured_fallback, "solve_structured", recorded)
        with pytest.raises(_Captured):
            _churn_rule(_adult(2000)).solve(method="structured")
    return caught[0]


def test_a_blocked_warm_step_is_recentred_before_the_cold_start(blocked_step):
    """On a step whose warm start was blocked, the recentred start reaches the cold start's
    certified optimum in fewer iterations, and ``warm_then_cold`` takes it (no cold start)."""
    form, tol, warm, blocked = blocked_step
    assert blocked.status == "numerical_error" and blocked.iterations == WARM_BLOCKED[0]
    again = solve_structured(form, tol=tol, warm=recentred(warm))
    cold = solve_structured(form, tol=tol)
    assert again.status == cold.status == "optimal"
    assert again.objective == pytest.approx(cold.objective, rel=10 * tol)
    assert again.iterations < cold.iterations
    answer = structured_fallback.warm_then_cold(form, tol, None, warm)
    assert answer.status == "optimal"
    assert answer.iterations == blocked.iterations + again.iterations


@pytest.mark.parametrize("smooth", [True, False])
def test_only_steps_with_smooth_parts_are_recentred(monkeypatch, smooth):
    """After a blocked warm start, a step with smooth parts starts again recentred; a
    piecewise-linear one goes to the cold start (recentred, TPR@K + 80% rule's blocked step
    on the whole Adult split was blocked again: 33 more iterations)."""
    from dataclasses import replace

    from ratecons import settings
    from tests.solvers.test_structured import _random_form

    form = _random_form(0, 60, 3, 2, False, True)
    form = form if smooth else replace(form, smooth=[])
    first = solve_structured(form)
    warm = WarmStart(first.w, first.b, first.duals, first.extra)
    starts: list[str] = []

    def blocked_first(form, *, tol, deadline, warm=None):
        starts.append("cold" if warm is None else "warm" if warm.gap is None else "recentred")
        answer = solve_structured(form, tol=tol, deadline=deadline, warm=warm)
        if len(starts) == 1:
            answer.status, answer.message = settings.NUMERICAL_ERROR, BLOCKED_MESSAGE
        return answer

    monkeypatch.setattr(structured_fallback, "solve_structured", blocked_first)
    answer = structured_fallback.warm_then_cold(form, 1e-8, None, warm)
    assert answer.status == "optimal"
    assert starts == ["warm", "recentred" if smooth else "cold"]


def test_warm_runs_of_large_smooth_steps_leave_the_blockers_out_at_every_step():
    rule = (PREDICTOR_BLOCKERS, BLOCKED_BELOW)
    assert warm_predictor_blockers(rule, WARM_BLOCKERS_PIECES, True) == (
        PREDICTOR_BLOCKERS, BLOCKED_BELOW_WARM)
    assert warm_predictor_blockers(rule, WARM_BLOCKERS_PIECES - 1, True) == rule
    assert warm_predictor_blockers(rule, WARM_BLOCKERS_PIECES, False) == rule
    assert warm_predictor_blockers((0, BLOCKED_BELOW), 10**6, True)[0] == 0  # robust parts


def test_a_warm_step_with_the_blockers_out_reaches_the_cold_optimum(blocked_step, monkeypatch):
    """The warm rule on the captured smooth step (its 2,000 rows' pieces below the rule's
    size, so the size lowered here): the start takes it, and the run ends at the cold start's
    certified optimum."""
    from ratecons.solvers import structured_correctors

    form, tol, warm, _ = blocked_step
    cold = solve_structured(form, tol=tol)
    monkeypatch.setattr(structured_correctors, "WARM_BLOCKERS_PIECES", 0)
    ipm = _IPM(form)
    assert ipm.blockers[1] < BLOCKED_BELOW_WARM
    ipm.start(recentred(warm))
    assert ipm.blockers == (PREDICTOR_BLOCKERS, BLOCKED_BELOW_WARM)
    hot = solve_structured(form, tol=tol, warm=recentred(warm))
    assert hot.status == cold.status == "optimal"
    assert hot.objective == pytest.approx(cold.objective, rel=10 * tol)


def test_both_warm_modes_reach_the_cvxpy_step_on_a_smooth_step(monkeypatch):
    """Logistic loss + 80% rule on 2,000 Adult rows, the step at the hinge relaxation's answer:
    from the recentred start, and with the predictor's blockers out at every step (the size
    lowered for the test), the structured step reaches the CVXPY step's optimum at that
    anchor."""
    from ratecons.solvers import structured_correctors

    analysis = _problem("80% rule", rc.logistic_loss).analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    cache: dict = {}
    first = solve_structured(lower_structured(analysis, psi, None, bounds, cache))
    anchor = {key: np.asarray(P @ first.w).ravel() - first.b for key, P in psi.items()}
    form = lower_structured(analysis, psi, anchor, bounds, cache)
    warm = recentred(WarmStart(first.w, first.b, first.duals, first.extra))
    reference = solve_step(analysis, psi, anchor, bounds, pick_solver(analysis, None),
                           tight=True)
    answers = [solve_structured(form, warm=warm)]
    monkeypatch.setattr(structured_correctors, "WARM_BLOCKERS_PIECES", 0)
    answers.append(solve_structured(form, warm=warm))
    for answer in answers:
        assert answer.status == "optimal" and answer.rel_gap <= 1e-8
        assert answer.objective == pytest.approx(reference.objective, rel=1e-6)
