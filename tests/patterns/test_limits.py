"""Limits that limit (issue 18): every method honours ``max_iterations`` and ``time_limit``.

A tiny budget gives ``iteration_limit`` / ``time_limit`` -- never ``optimal`` -- for every method
of every pattern, with the best point so far where the method has one, and exactly one
``ConvergenceWarning`` (the warning rule of the solver skeleton, issue 30: every run ends
through its Tracker; ``tests/house/test_solver_skeleton.py`` checks the rest).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons import limits, settings
from ratecons.backends.cvxpy_run import limit_options
from ratecons.dispatch import resolve
from ratecons.testing import fairness_problem

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 5))
Y = (X @ RNG.normal(size=5) + RNG.normal(size=300) > 0).astype(int)
XM, YM = RNG.normal(size=(120, 4)), RNG.integers(0, 3, 120)


def _rates():
    return fairness_problem(n=300, seed=2, kappa=0.9, l2=1e-2)


def _mrc():
    return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(XM, YM))))


def _top():
    return rc.Problem(maximize=rc.tpr_at_top(rc.Dataset(X, Y), k=5),
                      model=rc.LinearModel(l2=1e-2))


def _dro():
    ball = rc.PhiDivergenceBall(rc.Dataset(X, Y), phi="chi2", rho=0.1, strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-2))


def _composed():
    d = rc.Dataset(X, Y)
    return rc.Problem(minimize=rc.error_rate(d), subject_to=[rc.recall(d) >= 0.8],
                      model=rc.LinearModel(l2=1e-2))


METHODS = [(_rates, m) for m in ("mm", "cvxpy", "hinge", "structured")] + \
    [(_mrc, m) for m in ("lp", "ccg", "subgradient", "cvxpy")] + \
    [(_top, m) for m in ("dual_ca", "primal_ipm", "dual_qp", "cvxpy")] + \
    [(_dro, m) for m in ("lbfgs", "fsg", "gssg", "pssg", "sgd", "cvxpy", "structured")] + \
    [(_composed, m) for m in ("generic", "highs", "cvxpy", "structured")]
IDS = [f"{build.__name__[1:]}-{method}" for build, method in METHODS]


def test_every_method_of_every_pattern_is_in_the_budget_tests():
    """The budget tests below run every MethodSpec a pattern registers (issue 30): a method
    added to a pattern without a row here fails."""
    from ratecons.dispatch import patterns
    from ratecons.patterns.composed import GenericChain

    builds = {"rate constraints": _rates, "minimax risk": _mrc, "ranking at the top": _top,
              "robust learning (phi-divergence DRO)": _dro}
    registered = {(builds[p.name], m) for p in patterns() for m in p.methods()}
    registered |= {(_composed, m) for m in GenericChain().methods()}
    registered |= {(_composed, m) for m in ("generic", "highs")}  # by name, outside a pattern
    assert registered == set(METHODS)


def _solve(build, method, **options):
    return _solve_warned(build, method, **options)[0]


def _solve_warned(build, method, **options):
    """The Result and the ConvergenceWarnings the solve emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build().solve(method=method, seed=0, **options)
    return result, [str(w.message) for w in caught
                    if issubclass(w.category, rc.ConvergenceWarning)]


def _warning_rule(result, warned):
    """The Tracker's rule (:mod:`ratecons.solvers.tracker`): a run that a limit ended warns
    exactly once; a certified one does not."""
    if result.status in settings.LIMIT_STATUSES:
        assert len(warned) == 1, warned
    else:
        assert warned == []


#: the chain's ``max_iterations`` caps its MM steps: a robust loss has no ramp part, so its
#: chain is one convex step (certified by the step's own gap) that an MM cap does not stop
CONVEX_CHAINS = {(_dro, "structured")}


@pytest.mark.parametrize("build, method", METHODS, ids=IDS)
def test_one_iteration_is_an_iteration_limit_with_the_point_reached(build, method):
    result, warned = _solve_warned(build, method, max_iterations=1)
    if (build, method) in CONVEX_CHAINS:
        assert result.status == settings.OPTIMAL
        assert result.certificate.details["mm_iterations"] == 0
        assert warned == []
        return
    assert result.status == settings.ITERATION_LIMIT
    assert result.has_model  # the best point so far, usable
    assert result.certificate is not None
    _warning_rule(result, warned)


@pytest.mark.parametrize("build, method", METHODS, ids=IDS)
def test_a_spent_time_budget_is_a_time_limit(build, method):
    result, warned = _solve_warned(build, method, time_limit=1e-9)
    assert result.status == settings.TIME_LIMIT
    _warning_rule(result, warned)


@pytest.mark.parametrize("value, words", [
    (0, "The 'time_limit' parameter of method 'lp' must be a finite float > 0"),
    (-1.0, "Got -1.0 instead"),
    ("10", "Got '10' instead"),
    (True, "Got True instead"),
])
def test_time_limit_is_validated_in_the_parameter_format(value, words):
    with pytest.raises(rc.SpecError, match=words):
        _mrc().solve(method="lp", time_limit=value)


@pytest.mark.parametrize("method, name, value", [
    ("subgradient", "max_iterations", 0),
    ("ccg", "max_iterations", 2.5),
    ("ccg", "k_max", -3),
])
def test_iteration_caps_are_validated(method, name, value):
    with pytest.raises(rc.SpecError, match=f"The '{name}' parameter of method '{method}' must "
                                           f"be an int >= 1. Got {value!r} instead."):
        _mrc().solve(method=method, **{name: value})


def test_the_former_max_iter_is_refused_naming_max_iterations():
    with pytest.raises(rc.UnknownOptionError, match="'max_iter' is now 'max_iterations'"):
        _dro().solve(method="lbfgs", max_iter=4)


def test_common_options_are_listed_with_the_methods_own():
    with pytest.raises(rc.UnknownOptionError, match="time_limit.*max_iterations") as info:
        _mrc().solve(method="cvxpy", max_iters=3)
    assert "formulation" in str(info.value)


def test_max_iterations_goes_to_the_method_or_the_backend():
    problem = _dro()
    spec, _ = resolve(problem, "lbfgs")
    lim, options = limits.split_options("lbfgs", spec.options, {"max_iterations": 7})
    assert options == {"max_iterations": 7} and lim.backend_iterations is None
    spec, _ = resolve(_mrc(), "lp")
    lim, options = limits.split_options("lp", spec.options, {"max_iterations": 7,
                                                             "time_limit": 2})
    assert lim.backend_iterations == 7 and options == {"time_limit": 2}


def test_backend_options_carry_the_limits_under_each_backends_name():
    with limits.limits_scope(limits.Limits(time_limit=100.0, backend_iterations=5)):
        clarabel = limit_options("CLARABEL", {"max_iter": 500})
        scs = limit_options("SCS", {})
        highs = limit_options("HIGHS", {"time_limit": 1.0})
    assert clarabel["max_iter"] == 5 and 99 < clarabel["time_limit"] <= 100
    assert scs["max_iters"] == 5 and 99 < scs["time_limit_secs"] <= 100
    assert highs["time_limit"] == 1.0 and highs["simplex_iteration_limit"] == 5
    assert limit_options("CLARABEL", {}) == {}  # outside a solve: no limits


def test_an_overrun_budget_is_never_reported_optimal():
    result = _solve(_mrc, "lp")
    assert result.status == settings.OPTIMAL
    spent = limits.Limits(time_limit=1e-9)
    with pytest.warns(rc.ConvergenceWarning, match="time limit of 1e-09 s") as caught:
        assert limits.finish(result, spent).status == settings.TIME_LIMIT
    assert len([w for w in caught if issubclass(w.category, rc.ConvergenceWarning)]) == 1
    assert "time limit" in result.certificate.details["limit"]


@pytest.mark.parametrize("build, method", [(_rates, "cvxpy"), (_composed, "auto"),
                                           (_dro, "auto")])
def test_solve_time_is_the_wall_time_of_the_whole_solve(build, method):
    """A user's cvxpy rate solve under time_limit=0.5 took 0.82 s and reported solve_time
    0.0012 s (the last continuation's own clock); result.solve_time is the whole call's wall
    time, every run, repair and round included."""
    import time

    problem = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        begin = time.perf_counter()
        result = problem.solve(method)
        wall = time.perf_counter() - begin
    assert 0.9 * wall - 0.02 <= result.solve_time <= wall
    assert result.solution.solve_time <= result.solve_time + 1e-9


@pytest.mark.parametrize("method", ["pssg", "fsg", "sgd"])
def test_the_stochastic_robust_methods_keep_the_solves_wall_budget(method):
    """A user's KL-robust logistic loss on half of Adult (24,421 rows) under time_limit=1.0
    took 1.27-1.70 s: the methods' own clock leaves out the checkpoints' exact evaluations.
    The solve's wall-clock budget stops them too; what remains past it is one step and the
    last checkpoint (a few ms each here)."""
    data = rc.datasets.load_adult().split(0.5, seed=0)[0]
    ball = rc.PhiDivergenceBall(data, phi="kl", rho=0.1, strict=False)
    problem = rc.Problem(minimize=rc.robust_loss(ball, loss="logistic"),
                         model=rc.LinearModel(l2=1e-4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method, time_limit=0.5)
    assert result.status == "time_limit"
    assert result.solve_time <= 0.5 + 0.3
