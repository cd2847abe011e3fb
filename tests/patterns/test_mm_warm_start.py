"""solve(warm_start=result) for the rate methods: a warm-started run reaches a fixed point under
the same certificate rules as a cold one (``optimal`` only when the last step improves the
returned point by at most tol), equals the cold run where both sit at the same fixed point, starts
from a feasible neighbour without the hinge relaxation, and refuses results it cannot start from.
"""

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.testing import synthetic_groups

TOL = settings.MM_RELATIVE_TOL


def adult_rows(n: int) -> tuple[rc.Dataset, rc.Subset, rc.Subset]:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    pick = np.sort(np.random.default_rng(0).choice(train.n, n, replace=False))
    train = train.take(pick, "adult[train]")
    return train, train.group("sex", "Female"), train.group("sex", "Male")


def rule_problem(data: tuple, kappa: float, l2: float) -> rc.Problem:
    train, women, men = data
    return rc.Problem(minimize=rc.error_rate(train),
                      subject_to=[rc.positive_rate_ratio(women, men) >= kappa],
                      model=rc.LinearModel(l2=l2))


# (method, rows, l2): instances whose cold result is the MM fixed point itself (the bias repair
# left the bias where the solver certified it), so a warm start from it is at a fixed point
CASES = [("cvxpy", 600, 1e-3), ("mm", 1000, 1e-2)]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def case(request):
    method, n, l2 = request.param
    data = adult_rows(n)
    results = {k: rule_problem(data, k, l2).solve(method=method, verbose=False)
               for k in (0.6, 0.9)}
    return method, data, l2, results


def certified(result: rc.Result) -> bool:
    details = result.certificate.details
    return result.status != "optimal" or details["last_relative_decrease"] <= TOL


def test_warm_start_at_a_fixed_point_agrees_with_the_cold_solve(case):
    method, data, l2, results = case
    cold = results[0.9]
    assert cold.status == "optimal"
    assert not cold.certificate.details["deterministic"]["bias_moved"]
    warm = rule_problem(data, 0.9, l2).solve(method=method, verbose=False, warm_start=cold)
    details = warm.certificate.details
    assert warm.status == "optimal" and certified(warm)
    assert details["mm_steps"] == 1  # the first step certifies the anchor
    assert details["warm_start"] == {"anchor_feasible": True,
                                     "anchor_objective": pytest.approx(cold.objective),
                                     "anchor_violation": 0.0, "cold_fallback": False}
    assert "hinge_relaxation_objective" not in details
    assert abs(warm.objective - cold.objective) <= TOL * max(1.0, abs(cold.objective))
    np.testing.assert_allclose(warm.w, cold.w)


def test_warm_start_from_a_tighter_target_starts_at_its_model(case):
    method, data, l2, results = case
    warm = rule_problem(data, 0.6, l2).solve(method=method, verbose=False,
                                             warm_start=results[0.9])
    start = warm.certificate.details["warm_start"]
    assert start["anchor_feasible"] and not start["cold_fallback"]
    assert warm.status in settings.SOLVED_STATUSES and certified(warm)
    ramp = [h["objective"] for h in warm.history]
    assert ramp[0] == pytest.approx(start["anchor_objective"])  # no hinge relaxation first
    first = [h["objective"] for h in warm.history if h.get("round", 0) == 0]
    assert np.all(np.diff(first) <= TOL * max(1.0, ramp[0]))  # Alg 1 never goes uphill
    for k in range(1, 1 + max(h.get("round", 0) for h in warm.history)):
        # a continuation after a moved bias (make_deterministic): monotone from its first step
        steps = [h["objective"] for h in warm.history if h.get("round") == k]
        assert np.all(np.diff(steps) <= TOL * max(1.0, ramp[0]))
    assert warm.report().all_satisfied


def test_warm_start_from_a_looser_target_solves_the_bound_at_its_model_first(case):
    method, data, l2, results = case
    warm = rule_problem(data, 0.9, l2).solve(method=method, verbose=False,
                                             warm_start=results[0.6])
    start = warm.certificate.details["warm_start"]
    assert not start["anchor_feasible"] and start["anchor_violation"] > 0
    assert warm.status in settings.SOLVED_STATUSES and certified(warm)
    assert warm.report().all_satisfied


def test_warm_start_refuses_results_it_cannot_start_from(case):
    method, data, l2, results = case
    problem = rule_problem(data, 0.9, l2)
    other = synthetic_groups(n=200, d=5, seed=1)
    small = rc.Problem(minimize=rc.error_rate(other), model=rc.LinearModel(l2=1e-2)).solve(
        method="cvxpy", verbose=False)
    with pytest.raises(rc.SpecError, match="has 5 weights but this problem has 108 features"):
        problem.solve(method=method, verbose=False, warm_start=small)
    with pytest.raises(rc.SpecError, match="must be the Result of an earlier solve"):
        problem.solve(method=method, verbose=False, warm_start=results[0.9].w)
