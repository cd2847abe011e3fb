"""The one MM loop (``solvers.mm.fixed_point``) and the one repair ladder (``repair_ladder``)
that the rate pattern and the generic chain both drive (issue 29, item 2).

The loop is checked on a problem whose steps are known in closed form: f(x) = x^2 majorized at
x by a convex bound whose minimizer is x / 2 (optimal value (x / 2)^2), so the run halves x
until the step improves f by at most ``tol`` relative; the real problems are in
tests/solvers/test_fixed_point.py and tests/patterns/test_budgets.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ratecons import limits, settings
from ratecons.solvers.mm import Step, fixed_point, repair_ladder


def _halving(status: str = settings.OPTIMAL):
    def solve(x: float, value: float) -> Step:
        return Step(status, x / 2, (x / 2) ** 2, (x / 2) ** 2)
    return solve


def test_the_fixed_point_is_the_point_whose_own_step_is_within_tol():
    accepted: list[float] = []
    out = fixed_point(1.0, 1.0, _halving(), max_iterations=100, tol=1e-6,
                      accept=lambda s: accepted.append(s.point))
    # x = 2^-k: the step at x improves by 0.75 x^2 <= 1e-6 first at x = 2^-10
    assert out.status == settings.OPTIMAL
    assert out.point == 2.0 ** -10 and out.value == out.point ** 2
    assert out.steps == 11 and accepted == [2.0 ** -k for k in range(1, 11)]
    assert out.at_point is not None and out.at_point.point == 2.0 ** -11
    assert out.last_relative_decrease == pytest.approx(0.75 * 2.0 ** -20)


def test_an_uncertified_step_passes_its_status_on():
    out = fixed_point(1.0, 1.0, _halving(settings.OPTIMAL_INACCURATE), max_iterations=100,
                      tol=1e-6)
    assert out.status == settings.OPTIMAL_INACCURATE
    certified = fixed_point(1.0, 1.0, lambda x, v: Step(settings.ITERATION_LIMIT, x / 2,
                                                         (x / 2) ** 2, (x / 2) ** 2, True),
                            max_iterations=100, tol=1e-6)
    assert certified.status == settings.OPTIMAL  # a dual bound certifies at any accuracy


def test_the_step_cap_the_budget_and_the_time_limit_stop_the_loop():
    capped = fixed_point(1.0, 1.0, _halving(), max_iterations=3, tol=1e-6)
    assert capped.status == settings.ITERATION_LIMIT and capped.steps == 3
    assert capped.point == 0.125 and capped.at_point is None
    spent = fixed_point(1.0, 1.0, _halving(), max_iterations=100, tol=1e-6,
                        exhausted=lambda: True)
    assert spent.status == settings.ITERATION_LIMIT and spent.steps == 0 and spent.point == 1.0
    with limits.limits_scope(limits.Limits(time_limit=1e-9)):
        late = fixed_point(1.0, 1.0, _halving(), max_iterations=100, tol=1e-6)
    assert late.status == settings.TIME_LIMIT and late.steps == 0
    # each says what the stop means for its point (a time_limit result's message was empty)
    assert capped.message == (
        "the iteration budget ended MM after 3 step(s), before a fixed point was certified "
        "(last relative decrease 0.0469, tol 1e-06): the last point reached is returned")
    assert late.message == ("the time limit ended MM after 0 step(s), before a fixed point was "
                            "certified: the last point reached is returned")


def test_an_uphill_or_failed_step_keeps_the_last_point():
    uphill = fixed_point(1.0, 1.0, lambda x, v: Step(settings.OPTIMAL, 2 * x, 4 * x * x, 0.5),
                         max_iterations=100, tol=1e-6)
    assert uphill.status == settings.ITERATION_LIMIT and uphill.point == 1.0
    assert "uphill" in uphill.message
    failed = fixed_point(1.0, 1.0, lambda x, v: Step(settings.NUMERICAL_ERROR, None, math.nan,
                                                      math.nan), max_iterations=100, tol=1e-6)
    assert failed.status == settings.ITERATION_LIMIT and failed.point == 1.0
    assert "numerical_error" in failed.message


def test_a_step_above_its_own_point_is_not_a_fixed_point():
    """The step at a point is tight there, so its optimum is at most the point's objective; a
    step whose optimal value (or bound) lies above it is an inexact step, not the fixed point.
    Numbers of the whole Adult split, logistic loss + churn + 80% rule at 1657153: the step at
    0.96602912 came back at 2.02e-2 above it and the run ended ``optimal`` there, 4 MM steps
    in, while MM from that point goes on down (below 0.80)."""
    value = 0.96602912
    out = fixed_point(1.0, value, lambda x, v: Step(settings.OPTIMAL, 0.5, value + 0.0202,
                                                     value + 0.0202), max_iterations=100,
                      tol=1e-6)
    assert out.status == settings.ITERATION_LIMIT and out.point == 1.0 and out.at_point is None
    assert out.last_relative_decrease == pytest.approx(-0.0202)
    assert "not certified as a fixed point" in out.message
    # overshoots within a step solver's accuracy still certify the point (CLARABEL's
    # exponential-cone steps: 5.5e-6 and 1.1e-5 above their points on 2,000 Adult rows)
    for above in (1e-7, 1.1e-5):
        within = fixed_point(1.0, value, lambda x, v, above=above: Step(
            settings.OPTIMAL, 0.5, value, value + above), max_iterations=100, tol=1e-6)
        assert within.status == settings.OPTIMAL and within.point == 1.0


def test_a_failed_step_the_caller_handles_says_what_happens_instead(caplog):
    """A failed step warns that the last iterate is kept only when nothing else took over;
    a step whose caller did something else (phase one restarted from it) says that, at info
    level, and never claims the last iterate is kept."""
    instead = "phase one restarted from the point and found none"
    with caplog.at_level("INFO", logger="ratecons.solvers.mm"):
        handled = fixed_point(1.0, 1.0, lambda x, v: Step(
            settings.INFEASIBLE, None, math.nan, math.nan, handled=instead),
            max_iterations=100, tol=1e-6)
        plain = fixed_point(1.0, 1.0, lambda x, v: Step(settings.INFEASIBLE, None, math.nan,
                                                         math.nan), max_iterations=100, tol=1e-6)
    assert handled.failed and handled.point == 1.0
    assert handled.message == f"MM step 1 ended with status infeasible; {instead}"
    assert plain.message == "MM step 1 ended with status infeasible; the last iterate is kept"
    levels = {r.getMessage(): r.levelname for r in caplog.records}
    assert levels == {handled.message: "INFO", plain.message: "WARNING"}


def test_a_step_after_changed_bounds_is_always_taken():
    out = fixed_point(0.0, math.inf, lambda x, v: Step(settings.OPTIMAL, 5.0, 25.0, 25.0),
                      max_iterations=1, tol=1e-6)
    assert out.point == 5.0 and out.status == settings.ITERATION_LIMIT


def test_the_step_after_a_restored_point_is_always_taken():
    """A point that phase one found (``Step.restored``: the tightened step was infeasible at
    the anchor) meets its rows only to phase one's tolerance, so the step at it may lie above
    it: that step is taken, as after changed bounds, and MM goes on down from it. Numbers of
    3,000 rows of the shared Adult CSV (error rate, 80% rule, FPR parity +-0.02, recall >=
    0.6): the restored point at 0.201809 had its step at 0.206368, the run ended there
    ``iteration_limit`` with the 80% rule missed; taken, MM went on to a certified fixed
    point that meets every row."""
    values = iter([(0.201809, 0.201913, True), (0.205917, 0.206368, False),
                   (0.202830, 0.202966, False), (0.202830, 0.202830, False)])

    def solve(x: float, value: float) -> Step:
        val, lower, restored = next(values)
        return Step(settings.OPTIMAL, x + 1.0, val, lower, restored=restored)

    seen: list[float] = []
    out = fixed_point(0.0, math.inf, solve, max_iterations=100, tol=1e-6,
                      accept=lambda s: seen.append(s.value))
    assert out.status == settings.OPTIMAL and out.point == 3.0 and out.value == 0.202830
    assert seen == [0.201809, 0.205917, 0.202830] and out.steps == 4
    # without the flag the step above the point ends the run there, uncertified
    plain = fixed_point(0.0, 0.201809, lambda x, v: Step(settings.OPTIMAL, x + 1.0, 0.205917,
                                                          0.206368), max_iterations=100,
                        tol=1e-6)
    assert plain.status == settings.ITERATION_LIMIT and plain.point == 0.0


def _ladder(eager: bool, rounds: int, feasible_after: int, resolve_fails: bool = False):
    """Points are ints (the number of re-solves); a point misses its constraint until
    ``feasible_after`` re-solves; the intercept search succeeds from the last round on."""
    calls: list[tuple] = []

    def missed(p: int) -> np.ndarray:
        return np.array([0.0 if p >= feasible_after else 1.0])

    def intercept(p: int, last: bool):
        calls.append(("intercept", p, last))
        return -1 if last else None

    def resolve(p: int, miss: np.ndarray, done: int):
        calls.append(("resolve", p, done))
        return None if resolve_fails else p + 1

    out = repair_ladder(0, missed=missed, intercept=intercept, resolve=resolve, rounds=rounds,
                        eager=eager)
    return out, calls


def test_the_eager_ladder_tries_the_intercept_search_every_round():
    out, calls = _ladder(eager=True, rounds=2, feasible_after=5)
    assert calls == [("intercept", 0, False), ("resolve", 0, 0), ("intercept", 1, False),
                     ("resolve", 1, 1), ("intercept", 2, True)]
    assert out.point == -1 and out.intercepted and out.rounds == 2


def test_the_last_resort_ladder_re_solves_first():
    out, calls = _ladder(eager=False, rounds=3, feasible_after=2)
    assert calls == [("resolve", 0, 0), ("resolve", 1, 1)]
    assert out.point == 2 and not out.intercepted and out.rounds == 2
    out, calls = _ladder(eager=False, rounds=1, feasible_after=5)
    # a moved point is continued from (resolve from it, issue 32), at most
    # BIAS_CONTINUATION_ROUNDS times; then the last fixed point is returned with its miss
    resumes = settings.BIAS_CONTINUATION_ROUNDS
    assert calls == [("resolve", 0, 0)] + [("intercept", 1, True), ("resolve", -1, 0)] \
        + [("intercept", 0, True), ("resolve", -1, 0)] * (resumes - 1)
    assert out.point == 0 and not out.intercepted and out.moves == resumes


def test_a_re_solve_that_cannot_run_leaves_the_intercept_search_as_the_last_resort():
    out, calls = _ladder(eager=False, rounds=3, feasible_after=5, resolve_fails=True)
    assert calls == [("resolve", 0, 0), ("intercept", 0, True), ("resolve", -1, 0)]
    assert out.point == -1 and out.rounds == 0 and out.intercepted  # no continuation ran
