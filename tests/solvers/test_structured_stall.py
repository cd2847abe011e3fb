"""The structured step on elastic (phase one) steps of logistic loss + churn + 80% rule, whose
cold runs stalled: a smooth objective beside hinge rows, 20-100 pieces at their kinks blocking
Mehrotra's predictor in every iteration (:func:`.structured_correctors.predictor_sigma`), and
a gap that held still while the primal residual fell (:func:`.structured_stop.stalled`).

The step is one that the structured chain's phase one met on the benchmark's 5,000 Adult rows
(``benchmarks.composition``, "logistic + churn + 80%", after a repair's tightened rows
restarted phase one), captured from the chain: its arrays are stored (an anchor alone does not
rebuild it, and one example sits within 1e-14 of a ramp's end, where eq. 4's bound switches).
Before the two changes its cold run ended ``numerical_error`` after 55 iterations with a
relative gap of 1.0 and the chain handed it to CLARABEL; on the whole split such steps took
CLARABEL 100-200 s each.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ratecons.solvers.structured import solve_structured
from ratecons.solvers.structured_correctors import BLOCKED_BELOW, predictor_sigma
from ratecons.solvers.structured_form import Iterate, StructuredForm
from ratecons.solvers.structured_stop import (
    CONVERGING,
    EXTRA_ITERATIONS,
    STALL_AFTER,
    STALL_WINDOW,
    converging,
    stalled,
)
from tests.reductions.test_elastic_step import _adult_churn_rule
from tests.solvers.structured_reference import assert_certified, form_reference, stored_step

STEP = Path(__file__).parent / "data" / "adult5000_churn_rule_elastic_step.npz"


def _captured_step() -> StructuredForm:
    """The captured elastic step: its arrays from :data:`STEP`, its features the 5,000 Adult
    rows of the benchmark's sample (P is those rows' X, checked when it was captured)."""
    return stored_step(STEP, _adult_churn_rule(5000).analysis.datasets[0].X)


@pytest.mark.slow
def test_captured_elastic_step_is_certified_and_matches_clarabel():
    form = _captured_step()
    answer = solve_structured(form)
    assert_certified(answer)
    assert answer.iterations <= 60  # 50 measured (69 with the stall rule alone)
    status, objective, rows = form_reference(form)
    assert status == "optimal"
    assert abs(answer.objective - objective) <= 1e-6 * max(1.0, abs(objective))
    assert answer.max_violation <= 1e-6
    assert np.all(rows[1:] <= form.bounds + 1e-6)


def _pairs(s: list[float], lam: list[float], ds: list[float], dlam: list[float]) -> tuple:
    x = Iterate(np.zeros(1), np.zeros(0), np.zeros(0), {"A": np.array(s)}, {"A": np.array(lam)})
    d = Iterate(np.zeros(1), np.zeros(0), np.zeros(0), {"A": np.array(ds)},
                {"A": np.array(dlam)})
    return x, d


def test_predictor_sigma_leaves_out_the_first_blockers():
    """Ten pairs; the predictor halves nine products and drives one to 0 at step 0.05. Without
    blockers left out sigma is (1 - 0.05)^3; with one, the step is 1 and mu_aff counts the
    products of the nine pairs that step reaches (the blocker's, past the boundary, as 0); a
    predictor whose true step is not below BLOCKED_BELOW keeps it."""
    x, d = _pairs([1.0] * 10, [1.0] * 10, [-0.5] * 9 + [-20.0], [0.0] * 10)
    weights = {"A": np.ones(10)}
    sigma, step = predictor_sigma(x, d, weights, 1.0, (0.05, 0.05), 0)
    assert step == pytest.approx(0.05)
    assert sigma == pytest.approx(max((9 * 0.975 / 10) ** 3, 0.95 ** 3))
    sigma, step = predictor_sigma(x, d, weights, 1.0, (0.05, 0.05), 1)
    assert step == pytest.approx(1.0)
    assert sigma == pytest.approx((9 * 0.5 / 10) ** 3)
    x, d = _pairs([1.0] * 10, [1.0] * 10, [-0.5] * 9 + [-1.0 / BLOCKED_BELOW], [0.0] * 10)
    assert predictor_sigma(x, d, weights, 1.0, (BLOCKED_BELOW,) * 2, 1)[1] == BLOCKED_BELOW
    # separate steps without blockers: the slacks move by the primal step, the multipliers by
    # the dual one (Mehrotra's rule as before)
    x, d = _pairs([1.0] * 2, [1.0] * 2, [-0.5, 0.0], [0.0, -0.5])
    sigma, step = predictor_sigma(x, d, {"A": np.ones(2)}, 1.0, (1.0, 0.4), 0)
    assert step == pytest.approx(0.4)
    assert sigma == pytest.approx(max(((0.5 + 0.8) / 2) ** 3, 0.6 ** 3))


def test_stall_watches_each_measure_alone():
    """A run whose gap holds still while its primal residual keeps halving has not stalled;
    one where all three hold still has."""
    n = STALL_AFTER + 1
    falling = [(2.0, 0.9 * 0.8 ** k, 1e-3) for k in range(n)]
    assert not stalled(falling)
    still = [(2.0, 0.9, 1e-3)] * n
    assert stalled(still)
    assert not stalled(still[:STALL_AFTER])
    assert STALL_WINDOW < STALL_AFTER


def test_a_failed_warm_run_leaves_both_cold_paths_to_its_caller(monkeypatch):
    """A cold call that stalls tries the weighted path of every row, then the plain path once
    more with the adaptive corrector budget (:mod:`.structured_retry`); a warm call that stalls
    returns at once (its caller's cold start, ``warm_then_cold``, runs both cold paths and the
    retry: run after the warm one too, the weighted run came twice, 686 of 2,083 iterations on
    the whole split's logistic + churn + 80% rule)."""
    from ratecons import settings
    from ratecons.solvers import structured
    from ratecons.solvers.structured_form import WarmStart
    from tests.solvers.test_structured import _random_form

    form = _random_form(0, 60, 3, 2, False, True)
    answer = solve_structured(form)
    assert answer.status == "optimal"
    warm = WarmStart(answer.w, answer.b, answer.duals, answer.extra)
    runs: list[tuple[bool, bool]] = []  # (the weighted path of every row, adaptive budget)
    ipm_init, run = structured._IPM.__init__, structured._run

    def recorded(self, form, weighted=None, adaptive=False, scaled=None):
        runs.append((weighted is not None and bool(np.all(weighted)), adaptive))
        ipm_init(self, form, weighted, adaptive, scaled)

    def stalls(*args):
        out = run(*args)
        out.status = settings.NUMERICAL_ERROR
        return out

    monkeypatch.setattr(structured._IPM, "__init__", recorded)
    monkeypatch.setattr(structured, "_run", stalls)
    stalled = solve_structured(form)
    assert stalled.status == settings.NUMERICAL_ERROR
    # the weighted path of every row, then the plain path with the adaptive budget, last
    assert runs[-2:] == [(True, False), (False, True)]
    assert "a cold retry with the adaptive corrector budget ended numerical_error" in (
        stalled.message)
    runs.clear()
    assert solve_structured(form, warm=warm).status == settings.NUMERICAL_ERROR
    assert runs and not any(every or adaptive for every, adaptive in runs)
    runs.clear()  # a caller's own smaller allowance is a limit: no retry
    assert solve_structured(form, max_iterations=99).status == settings.NUMERICAL_ERROR
    assert runs and not any(adaptive for _, adaptive in runs)


def test_converging_measures_the_merit_over_the_last_window():
    """The merit is the largest of the gap and the residuals; a run is converging when it fell
    to CONVERGING[1] times its value CONVERGING[0] iterations before, and never before that
    many iterations."""
    window, factor = CONVERGING
    falling = [(1.0, 0.1, 0.1)] + [(0.9, 0.1, 0.1)] * (window - 1) + [(factor, 0.1, 0.1)]
    assert converging(falling)
    assert not converging(falling[1:])  # too few iterations
    assert not converging(falling[:-1] + [(1.01 * factor, 0.1, 0.1)])
    assert not converging(falling[:-1] + [(0.1, 0.1, 1.01 * factor)])  # a residual counts


@pytest.mark.slow
def test_a_run_converging_at_its_limit_goes_on():
    """The captured elastic step certified in 50 iterations: with a limit of 30 or 40 the run
    is converging there and goes on (EXTRA_ITERATIONS, once) to the same answer, where it
    ended ``iteration_limit`` before (on the whole Adult split every cold MM step of this
    composition hit the limit of 100 while converging and was started again by the cold
    retry: 196-201 iterations, 118-123 with the extension); a limit of 8 stays a limit."""
    form = _captured_step()
    free = solve_structured(form)
    assert free.status == "optimal" and free.iterations < 30 + EXTRA_ITERATIONS
    for limit in (30, 40):
        answer = solve_structured(form, max_iterations=limit)
        assert answer.status == "optimal"
        assert answer.iterations == free.iterations and answer.objective == free.objective
    assert solve_structured(form, max_iterations=8).status == "iteration_limit"
