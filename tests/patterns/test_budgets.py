"""Every budget stops (issue 32, item 4): ``max_epochs``, ``max_iterations`` and ``time_limit``
end every method of the rate pattern and of the generic chain within one step of the limit,
with the status ``iteration_limit`` / ``time_limit`` and the best point so far.

Real data: the Pima diabetes set of ../shared/data (z-scored) with a recall floor, and an
Adult subsample (``rc.datasets.load_adult``) for a kernel composition.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.patterns.rate_constraints import PATTERN
from tests.shared_data import standardized

RATE_METHODS = list(PATTERN.methods())  # every method the rate pattern lists
CHAIN_METHODS = ["generic", "highs"]


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


def _recall_floor(data: rc.Dataset, l2: float = 1e-3, l1: float = 0.0) -> rc.Problem:
    return rc.Problem(minimize=rc.error_rate(data), subject_to=[rc.recall(data) >= 0.8],
                      model=rc.LinearModel(l2=l2, l1=l1))


def _timed(problem: rc.Problem, method: str, **options):
    """(result, seconds, times of the step events: the start, then every MM step)."""
    steps: list[float] = []
    began = time.perf_counter()

    def record(event: dict) -> None:
        if event.get("stage") in ("hinge", "start", "step") or (
                event.get("stage") == "mm" and event.get("iteration", 0) >= 1):
            steps.append(time.perf_counter() - began)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method=method, seed=0, callback=record, **options)
    return result, time.perf_counter() - began, steps


def _longest_step(steps: list[float]) -> float:
    """The longest gap between two step events (the first from the start of the solve)."""
    return float(np.max(np.diff([0.0, *steps]), initial=0.0))


def test_max_epochs_one_stops_within_seconds_on_diabetes(diabetes):
    """The case of the issue: SDCA's epochs are a budget of the whole solve, not a cap per call
    that the cutting planes over b and v multiply (before: over 60 s, then ``optimal``)."""
    unlimited, _, _ = _timed(_recall_floor(diabetes), "mm")  # also compiles SDCA's kernels
    assert unlimited.status == settings.OPTIMAL
    result, elapsed, _ = _timed(_recall_floor(diabetes), "mm", max_epochs=1)
    assert elapsed < 5.0
    assert result.status == settings.ITERATION_LIMIT
    assert result.has_model  # the best point so far
    # the hinge relaxation used the one epoch; no bound after it was solved
    assert result.certificate.details["mm_steps"] == 0


@pytest.mark.parametrize("budget", [3, 40])
def test_max_epochs_caps_the_sdca_epochs_of_all_bounds(diabetes, budget):
    from ratecons.patterns.rate_mm import SpecializedBound

    used: list[int] = []
    original = SpecializedBound.__call__

    def counting(self, program, masks, warm):
        out = original(self, program, masks, warm)
        used.append(self.epochs)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SpecializedBound, "__call__", counting)
        result, _, _ = _timed(_recall_floor(diabetes), "mm", max_epochs=budget)
    assert result.status == settings.ITERATION_LIMIT
    # one SDCA call may finish its epochs over the active set: at most one step past the cap
    assert budget <= used[-1] <= budget + 2 * settings.MM_MAX_ITERATIONS


@pytest.mark.parametrize("method", RATE_METHODS + CHAIN_METHODS)
def test_max_iterations_counts_every_step_repairs_included(diabetes, method):
    problem = _recall_floor(diabetes, l2=0.0 if method == "highs" else 1e-3,
                            l1=1e-3 if method == "highs" else 0.0)
    result, _, steps = _timed(problem, method, max_iterations=2, tol=0.0) \
        if method != "hinge" else _timed(problem, method, max_iterations=2)
    assert result.has_model
    if method == "hinge":  # one convex problem: the cap is its backend's iteration limit
        assert result.status in (settings.OPTIMAL, settings.ITERATION_LIMIT)
        return
    assert result.status == settings.ITERATION_LIMIT  # tol = 0: never a fixed point here
    assert len(steps) <= 1 + 2  # the start and two steps, whatever the repairs wanted


@pytest.mark.parametrize("method", RATE_METHODS + CHAIN_METHODS)
def test_time_limit_stops_each_method_within_one_step(diabetes, method):
    problem = _recall_floor(diabetes, l2=0.0 if method == "highs" else 1e-3,
                            l1=1e-3 if method == "highs" else 0.0)
    limit = 0.05
    options = {} if method == "hinge" else {"tol": 0.0, "max_iterations": 10_000}
    result, elapsed, steps = _timed(problem, method, time_limit=limit, **options)
    if elapsed <= limit and result.status == settings.OPTIMAL:
        return  # done within the budget (a quiet machine reaches the exact fixed point first)
    assert result.status == settings.TIME_LIMIT
    assert elapsed <= limit + _longest_step(steps) + 0.5


def test_time_limit_stops_a_kernel_composition_within_one_step():
    """issue 29: ``time_limit=2`` on a kernel composition returned after 5 to 14 s. A gaussian
    kernel model under the 80% rule and a worst-case recall floor on 300 Adult rows, tol = 0
    (MM does not stop by itself: without a limit this ran past 300 s): the solve ends at the
    first step boundary after the limit."""
    adult = rc.datasets.load_adult()
    data = adult.take(np.random.default_rng(0).choice(adult.n, 300, replace=False))
    women, men = data.group("sex", "Female"), data.group("sex", "Male")
    problem = rc.Problem(
        minimize=rc.error_rate(data),
        subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men),
                    rc.worst_case(rc.recall(data),
                                  rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.1))
                    >= 0.6],
        model=rc.KernelModel(kernel="gaussian", l2=0.1))
    # the first worst-case evaluation in a process compiles the inner maximization's numba
    # kernel (3.5 s): a one-time cost of the process, not of the stop rule timed here
    _timed(problem, "generic", max_iterations=1)
    limit = 2.0
    result, elapsed, steps = _timed(problem, "generic", time_limit=limit, tol=0.0,
                                    max_iterations=10_000)
    assert result.status == settings.TIME_LIMIT
    assert result.has_model
    assert elapsed <= limit + _longest_step(steps) + 0.5


def _adult_top(n: int) -> rc.Problem:
    """TPR@top (K = 5) with a linear model on ``n`` Adult rows: ``dual_qp``'s QP has m = n."""
    adult = rc.datasets.load_adult()
    data = adult.take(np.random.default_rng(0).choice(adult.n, n, replace=False))
    return rc.Problem(maximize=rc.tpr_at_top(data, k=5), model=rc.LinearModel(l2=1e-2))


def _warned(problem: rc.Problem, method: str, **options):
    """(result, seconds, the ConvergenceWarnings' messages)."""
    began = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method=method, **options)
    return result, time.perf_counter() - began, [
        str(w.message) for w in caught if issubclass(w.category, rc.ConvergenceWarning)]


def test_dual_qp_refuses_a_budget_below_its_compile_on_adult():
    """The audit's case: ``time_limit=1`` on 2,000 Adult rows returned after 4 s (3,000 rows:
    9 s), spent compiling the dense 2000 x 2000 QP, which no limit stops. Now the estimated
    compile and setup (3.4 s here) exceed the budget, so the solve stops at once with
    ``time_limit``, no model and what to do instead."""
    result, elapsed, warned = _warned(_adult_top(2000), "dual_qp", time_limit=1.0)
    assert elapsed <= 1.0 + 0.5
    assert result.status == settings.TIME_LIMIT
    assert not result.has_model
    assert "method='dual_ca'" in result.certificate.details["limit"]
    assert len(warned) == 1 and "No point" in warned[0]


def test_dual_qp_stops_when_its_compile_used_up_the_budget(monkeypatch):
    """An estimate too low (a loaded machine): the compile runs past the budget, and the
    solve then stops with ``time_limit`` instead of starting the backend."""
    from ratecons.patterns import ranking
    from ratecons.reductions import to_cvxpy

    monkeypatch.setattr(ranking, "DUAL_QP_SETUP_SECONDS", (0.0, 0.0))

    def no_backend(*args, **kwargs):
        raise AssertionError("the backend ran after the budget was spent")

    monkeypatch.setattr(to_cvxpy, "solve_cvxpy", no_backend)
    result, _, warned = _warned(_adult_top(1500), "dual_qp", time_limit=0.2)
    assert result.status == settings.TIME_LIMIT
    assert not result.has_model
    assert "while CVXPY compiled" in result.certificate.details["limit"]
    assert len(warned) == 1


def test_dual_qp_stops_within_one_backend_step_with_its_point():
    """A budget above the compile (about 1.5 s at m = 1,000; CLARABEL needs 29 iterations,
    5 s): the backend gets the time left and stops one iteration (0.2 s) past it, with its
    point and the duality gap."""
    result, elapsed, warned = _warned(_adult_top(1000), "dual_qp", time_limit=2.5)
    assert result.status == settings.TIME_LIMIT
    assert result.has_model
    assert elapsed <= 2.5 + 1.0
    assert len(warned) == 1


@pytest.mark.parametrize("method", ["mm", "cvxpy", "generic", "highs"])
@pytest.mark.parametrize("name, value", [
    ("max_iterations", 0), ("max_iterations", -2), ("max_iterations", 2.5),
    ("max_iterations", "10"), ("time_limit", 0), ("time_limit", -1.0), ("time_limit", "2"),
    ("time_limit", float("inf")), ("max_epochs", 0), ("max_epochs", -1), ("max_epochs", 1.5),
])
def test_bad_budgets_are_refused_with_the_parameter_and_the_value(diabetes, method, name,
                                                                  value):
    problem = _recall_floor(diabetes)
    if name == "max_epochs" and method != "mm":
        with pytest.raises(rc.UnknownOptionError, match="max_epochs"):
            problem.solve(method=method, **{name: value})
        return
    with pytest.raises(rc.SpecError, match=f"The '{name}' parameter of method '{method}' "
                                           f"must be .* Got {value!r} instead"):
        problem.solve(method=method, **{name: value})
