"""Extrapolated MM anchors in the chain (``generic._ChainRun.extrapolated``).

- Every extrapolated anchor meets the surrogate rows (no further past a bound than the plain
  step's point) and has a lower surrogate objective than the plain step's point, so the MM
  objective never increases and every iterate stays feasible.
- An extrapolated run ends at a certified fixed point (``optimal``, its own step improves by at
  most ``tol``), in fewer MM steps than the plain run on an Adult sample, at the plain run's
  objective to a few 1e-6 (MM fixed points are local: the two paths end at two fixed points
  1.2e-6 apart there, each certified at tol = 1e-8 too); on diabetes it meets every constraint.
- A ramp in the objective (an error rate) switches it off.
- Random small problems (hypothesis): the history is monotone and the anchors feasible.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ratecons as rc
import ratecons.chain_points as chain_points
import ratecons.generic as generic
from tests.shared_data import standardized


def _adult_sample(n: int = 2000) -> rc.Dataset:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    return train.take(np.random.default_rng(0).choice(train.n, n, replace=False))


def _diabetes() -> rc.Dataset:
    return standardized("diabetes", group_of=lambda X: {
        "age": np.where(X[:, 7] >= 30, "older", "younger")})


@pytest.fixture
def watched(monkeypatch):
    """Every extrapolation the chain makes: checks its safeguard and counts the moves."""
    moves: list[float] = []
    plain = generic._ChainRun.extrapolated

    def checked(self, anchor, found, value):
        best, best_value = plain(self, anchor, found, value)
        rows = chain_points.surrogate_rows(self.analysis, best[2])
        allowed = np.maximum(self.bounds, chain_points.surrogate_rows(self.analysis, found[2]))
        assert np.all(rows <= allowed + 1e-12)
        assert best_value <= value
        assert best_value == pytest.approx(
            chain_points.surrogate_objective(self.analysis, best[2], best[0].w), abs=1e-12)
        if best is not found:
            moves.append(value - best_value)
            assert best_value < value
        return best, best_value

    monkeypatch.setattr(generic._ChainRun, "extrapolated", checked)
    return moves


def _monotone(result: rc.Result, min_steps: int = 2) -> None:
    objectives = [h["objective"] for h in result.history if h.get("stage") in ("hinge", "mm")]
    assert len(objectives) >= min_steps
    assert np.all(np.diff(objectives) <= 1e-9)


def _meets_rows(problem: rc.Problem, result: rc.Result) -> None:
    bounds = result.certificate.details["step_bounds"]
    for row, bound in zip(problem.analysis.constraints, bounds, strict=True):
        assert row.value(result, "surrogate") <= bound + 1e-6
        assert row.value(result, "exact") <= row.bound + 1e-6


def test_adult_extrapolated_run_is_certified_shorter_and_at_the_plain_objective(watched):
    D = _adult_sample()
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    problem = rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    fast = problem.solve(method="structured")
    moved = len(watched)
    plain = problem.solve(method="structured", extrapolate=False)
    assert len(watched) == moved  # the plain run never extrapolates
    for result in (fast, plain):
        assert result.status == "optimal"
        assert result.certificate.details["repair_rounds"] == 0
        assert result.certificate.details["last_relative_decrease"] <= 1e-6
        _monotone(result)
        _meets_rows(problem, result)
    details = fast.certificate.details
    assert details["extrapolated_steps"] == moved >= 3
    assert plain.certificate.details["extrapolated_steps"] == 0
    assert details["mm_iterations"] < plain.certificate.details["mm_iterations"]
    assert abs(fast.objective - plain.objective) <= 5e-6 * max(1.0, abs(plain.objective))


def test_diabetes_extrapolated_run_is_certified_and_feasible(watched):
    D = _diabetes()
    old, young = D.group("age", "older"), D.group("age", "younger")
    problem = rc.Problem(
        minimize=rc.hinge_loss(D), model=rc.LinearModel(l2=1e-2),
        subject_to=[rc.false_positive_rate(old) - rc.false_positive_rate(young) <= 0.05,
                    rc.recall(D) >= 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = problem.solve(method="structured")
        plain = problem.solve(method="structured", extrapolate=False)
    assert fast.status == plain.status == "optimal"
    assert fast.certificate.details["extrapolated_steps"] == len(watched) >= 1
    assert fast.certificate.details["last_relative_decrease"] <= 1e-6
    _meets_rows(problem, fast)
    # both paths are repaired (the deterministic model missed the ramp-met rows); the
    # extrapolated one ends at another fixed point, 1.6e-4 lower here
    assert fast.objective <= plain.objective + 1e-6


def test_a_ramp_in_the_objective_is_not_extrapolated(watched):
    D = _diabetes()
    problem = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-2),
                         subject_to=[rc.recall(D) >= 0.7])
    result = problem.solve(method="structured")
    assert result.status == "optimal"
    assert result.certificate.details["extrapolated_steps"] == 0 and not watched


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), target=st.floats(0.6, 0.95),
       loss=st.sampled_from(["logistic", "hinge"]))
@example(seed=5143, target=0.625, loss="logistic")  # the hinge step is the fixed point
# the first of three rounds at the loss's scale is repaired: the run's repair_rounds counts it
@example(seed=194, target=0.84765625, loss="logistic")
def test_random_compositions_stay_monotone_and_feasible(watched, seed, target, loss):
    rng = np.random.default_rng(seed)
    n, d = 300, 4
    X = rng.normal(size=(n, d))
    group = rng.random(n) < 0.4
    X[:, 0] -= group
    y = (X @ rng.normal(size=d) + 0.7 * rng.normal(size=n) > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": np.where(group, "a", "b")})
    a, b = D.group("g", "a"), D.group("g", "b")
    objective = rc.logistic_loss(D) if loss == "logistic" else rc.hinge_loss(D)
    problem = rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e-2),
                         subject_to=[rc.positive_rate(a) >= target * rc.positive_rate(b)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method="structured")
    if result.certificate.details["repair_rounds"] == 0:
        _monotone(result, min_steps=1)  # the hinge step can be the fixed point already
    if result.status == "optimal":
        _meets_rows(problem, result)


def test_a_failed_step_at_an_extrapolated_anchor_goes_back_to_the_plain_step(monkeypatch):
    # the step at the first extrapolated anchor fails (as every structured start did on the
    # 200,000-row hinge + 80% rule): MM goes on from the plain step that anchor extended,
    # without extrapolation, to a certified fixed point
    from ratecons.solvers.mm import Step

    plain_solve = generic._ChainRun.solve
    failed: list[tuple] = []

    def failing_once(self, point, value):
        if not failed and self.retreat is not None and point is self.retreat[0]:
            failed.append(self.retreat[1])
            return Step("numerical_error", None, float("nan"), float("nan"))
        if failed and point is failed[0]:
            failed.append(point)  # the run went on from the plain step
        return plain_solve(self, point, value)

    monkeypatch.setattr(generic._ChainRun, "solve", failing_once)
    D = _adult_sample()
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    problem = rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method="structured")
    assert len(failed) == 2, "the failure was not injected, or MM did not resume from y"
    details = result.certificate.details
    assert result.status == "optimal"
    assert "extrapolation_abandoned" in details
    assert details["last_relative_decrease"] <= 1e-6
    _meets_rows(problem, result)
    monkeypatch.setattr(generic._ChainRun, "solve", plain_solve)
    plain = problem.solve(method="structured", extrapolate=False)
    assert abs(result.objective - plain.objective) <= 1e-4 * max(1.0, abs(plain.objective))
