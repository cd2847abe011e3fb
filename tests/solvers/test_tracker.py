"""The solver skeleton (issue 30): one tracker of best point, bounds, limits, events and stop.

Every method of the minimax-risk and ranking patterns honours ``time_limit`` and
``max_iterations`` with the same status words, keeps its own cap name working, reports its
events under the shared keys, and its solver modules build no ``Solution`` themselves.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ratecons as rc
from ratecons import limits, settings
from ratecons.errors import ConvergenceWarning, SpecError
from ratecons.patterns.mrc import PATTERN as MRC
from ratecons.patterns.ranking import PATTERN as RANKING
from ratecons.solvers import (
    ccg,
    mrc_bounds,
    mrc_ipm,
    mrc_lp,
    subgradient,
    top_block,
    top_dual,
    top_ipm,
    top_primal,
)
from ratecons.solvers.tracker import (
    EVENT_KEYS,
    STOP_STATUS,
    HeldWarnings,
    Tracker,
    iteration_cap,
    rounded_lower,
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 5))
Y = (X @ RNG.normal(size=5) + RNG.normal(size=300) > 0).astype(int)
XM, YM = RNG.normal(size=(120, 4)), RNG.integers(0, 3, 120)


def _mrc() -> rc.Problem:
    return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(XM, YM))))


def _top() -> rc.Problem:
    return rc.Problem(maximize=rc.tpr_at_top(rc.Dataset(X, Y), k=5),
                      model=rc.LinearModel(l2=1e-2))


METHODS = ([(_mrc, name) for name in MRC.methods()]
           + [(_top, name) for name in RANKING.methods()])
IDS = [f"{build.__name__[1:]}-{name}" for build, name in METHODS]
#: the methods' own names for the iteration cap, kept working next to ``max_iterations``
OWN_CAPS = [(_mrc, "ccg", "k_max"), (_top, "dual_ca", "max_epochs"),
            (_top, "primal_ipm", "max_iter")]


def _solve(build, method, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build().solve(method=method, seed=0, **options)


def test_the_methods_are_the_patterns_own():
    assert {name for _, name in METHODS} >= {"lp", "ccg", "subgradient", "cvxpy", "dual_ca",
                                              "primal_ipm", "dual_qp"}


@pytest.mark.parametrize("build, method", METHODS, ids=IDS)
def test_every_method_honours_max_iterations_with_one_status_word(build, method):
    result = _solve(build, method, max_iterations=1)
    assert result.status == settings.ITERATION_LIMIT == STOP_STATUS["iteration_limit"]


@pytest.mark.parametrize("build, method", METHODS, ids=IDS)
def test_every_method_honours_time_limit_with_one_status_word(build, method):
    result = _solve(build, method, time_limit=1e-9)
    assert result.status == settings.TIME_LIMIT == STOP_STATUS["time_limit"]


@pytest.mark.parametrize("build, method, own", OWN_CAPS)
def test_the_methods_own_cap_names_still_work_and_not_twice(build, method, own):
    assert _solve(build, method, **{own: 1}).status == settings.ITERATION_LIMIT
    assert "max_iterations" in RANKING.methods().get(method, MRC.methods().get(method)).options
    with pytest.raises(SpecError, match=f"'max_iterations'.*'{own}'"):
        _solve(build, method, max_iterations=2, **{own: 3})


@pytest.mark.parametrize("build, method", [(_mrc, "ccg"), (_mrc, "subgradient"),
                                           (_top, "dual_ca"), (_top, "primal_ipm")])
def test_events_use_the_shared_keys(build, method):
    events: list[dict] = []
    _solve(build, method, callback=events.append)
    assert events and all(isinstance(e["iteration"], int) and e["time"] >= 0 for e in events)
    # no method's own name for a shared key
    assert not set().union(*events) & {"lower_bound", "upper_bound", "R"}
    assert any(set(e) & {"lower", "upper", "objective"} for e in events)


def test_the_solver_modules_build_their_solution_through_the_tracker():
    for module in (ccg, subgradient, top_dual, top_ipm, top_block, top_primal, mrc_ipm,
                   mrc_lp, mrc_bounds):
        assert "Solution(" not in inspect.getsource(module), module.__name__


def test_iteration_cap_resolves_the_common_and_the_own_name():
    assert iteration_cap("m", 7) == (7, "max_iterations")
    assert iteration_cap("m", 7, k_max=None) == (7, "k_max")
    assert iteration_cap("m", 7, 3, k_max=None) == (3, "max_iterations")
    assert iteration_cap("m", 7, None, k_max=4) == (4, "k_max")
    with pytest.raises(SpecError, match="The 'max_iterations' parameter of m must be given "
                                        "once .it is the method's 'k_max'."):
        iteration_cap("m", 7, 3, k_max=4)
    with pytest.raises(SpecError, match="The 'k_max' parameter of m must be an int >= 1. "
                                        "Got 0 instead."):
        iteration_cap("m", 7, k_max=0)


def test_tracker_keeps_the_best_point_and_the_bounds_and_stops_on_the_gap():
    tracker = Tracker("demo", max_iterations=10, tol=0.1)
    assert tracker.offer(2.0, x=np.array([1.0])) and not tracker.offer(3.0, x=np.array([9.0]))
    assert tracker.gap == math.inf and not tracker.check(1)
    tracker.bound(lower=1.5)
    tracker.bound(lower=1.0)  # bounds only tighten
    assert tracker.lower == 1.5 and tracker.upper == 2.0 and tracker.gap == 0.5
    tracker.offer(1.55, x=np.array([2.0]))
    assert tracker.check(2) and tracker.stop_reason == "gap"
    tracker.record(2, objective=1.55, lower=1.5, upper=1.55, gap=tracker.gap)
    sol = tracker.solution({"x": tracker.best_point["x"]}, max_violation=0.0)
    assert sol.status == settings.OPTIMAL and sol.objective == 1.55
    assert sol.primal["x"].tolist() == [2.0] and sol.certificate.lower_bound == 1.5
    assert sol.certificate.gap == pytest.approx(0.05)
    assert sol.certificate.details == {"iterations": 2, "stopped_by": "gap"}
    assert sol.history[0]["iteration"] == 2 and "time" in sol.history[0]


def test_tracker_limits_and_their_warning():
    tracker = Tracker("demo", max_iterations=3, cap_name="k_max")
    assert not tracker.check(2) and tracker.check(3) and tracker.stop_reason == "iteration_limit"
    with pytest.warns(ConvergenceWarning, match="reached k_max=3 after 3 iterations"):
        sol = tracker.solution({}, objective=1.0, advice="Raise k_max.")
    assert sol.status == settings.ITERATION_LIMIT and sol.certificate.lower_bound is None
    late = Tracker("demo", time_limit=1e-12)
    assert late.check(1) and late.stop_reason == "time_limit"
    with rc.limits.limits_scope(rc.limits.Limits(time_limit=1e-12)):
        assert Tracker("demo").expired()  # the active limits count too
    backend = Tracker("demo").solution({}, objective=0.0, status=settings.INFEASIBLE)
    assert backend.status == settings.INFEASIBLE
    assert backend.certificate.details["stopped_by"] == "backend"


def test_held_warnings_show_only_the_kept_runs_limit_warning_once_per_solve():
    """Two runs of one solve, one kept (:mod:`ratecons.constant_start`): each run's limit
    warning is held; the kept run's is shown, the other's dropped, the other warnings of both
    shown; the discarded run's warning does not silence the kept run's."""
    with warnings.catch_warnings(record=True) as caught, \
            limits.limits_scope(limits.Limits(time_limit=None)):
        warnings.simplefilter("always")
        with HeldWarnings() as first:
            Tracker("first").solution({}, objective=1.0, status=settings.ITERATION_LIMIT)
            warnings.warn("first's note", UserWarning, stacklevel=1)
        with HeldWarnings() as again:
            Tracker("again").solution({}, objective=1.0, status=settings.ITERATION_LIMIT)
        assert caught == []  # nothing shown before the caller decides
        first.replay(limit_warnings=False)
        again.replay(limit_warnings=True)
        # once per solve: a third limit-ended run of the same solve stays silent
        Tracker("later").solution({}, objective=1.0, status=settings.ITERATION_LIMIT)
    shown = [(w.category, str(w.message)) for w in caught]
    assert [m for c, m in shown if c is UserWarning] == ["first's note"]
    limit = [m for c, m in shown if c is ConvergenceWarning]
    assert len(limit) == 1 and limit[0].startswith("again:"), shown


def test_tracker_refuses_a_second_name_for_a_shared_key():
    tracker = Tracker("demo")
    with pytest.raises(ValueError, match="progress events use the keys"):
        tracker.record(1, lower_bound=0.0)
    assert set(EVENT_KEYS) >= {"iteration", "objective", "lower", "upper", "gap", "time"}


@given(upper=st.floats(-1e6, 1e6), ulps=st.integers(0, 4), below=st.floats(0.0, 1.0))
def test_a_lower_bound_an_ulp_above_the_value_is_reported_as_the_value(upper, ulps, below):
    """The DRO certificate of a constant optimum read lower_bound log 2 + 1 ulp above its
    objective log 2 on one machine (AMD EPYC, numpy 2.4.6): a bound within rounding of the
    value is the value; one below it, or above by more than rounding, is kept."""
    above = upper
    for _ in range(ulps):
        above = np.nextafter(above, np.inf)
    assert rounded_lower(above, upper) == upper
    assert rounded_lower(upper - below, upper) == upper - below
    far = upper + 1e-9 * max(1.0, abs(upper))
    assert rounded_lower(far, upper) == far
    tracker = Tracker("m", relative=True, scale_floor=1.0, tol=1e-6)
    tracker.bound(lower=above, upper=upper)
    cert = tracker.solution({"x": np.zeros(1)}, objective=upper, status="optimal").certificate
    assert cert.lower_bound <= cert.upper_bound and cert.gap == 0.0
