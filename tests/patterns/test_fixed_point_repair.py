"""``optimal`` after the deterministic repair means the fixed point (issue 32, item 3).

When the exact bias repair moves the bias of a certified MM fixed point (its deterministic model
missed a constraint on the training data), the returned model is no longer that fixed point.
``make_deterministic`` then continues Alg 1 from the repaired model (the bounds the fixed point
missed tightened by the miss), so an ``optimal`` result is the certified fixed point of its last
run: one more MM step at the result (the bound solved by CVXPY, or the step exported by
``export_mps(at=result)``) improves on its objective by at most tol. A bias left moved (the
continuations spent) is an ``iteration_limit`` that says so. The generic chain's last-resort
threshold search is continued the same way (``solvers.mm.repair_ladder``).

Real data: the Pima diabetes set (../shared/data, z-scored) and an Adult subsample; every case
below had its bias moved by the repair before this change (``bias_repairs >= 1``).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.backends.mps import solve_mps
from ratecons.reductions.to_cvxpy import solve_bound_cvxpy
from ratecons.solvers.mm import repair_ladder
from tests.mps_readers import cbc_objective, cbc_path, glpk_objective
from tests.shared_data import standardized

TOL = settings.MM_RELATIVE_TOL


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


@pytest.fixture(scope="module")
def adult() -> rc.Dataset:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    pick = np.sort(np.random.default_rng(0).choice(train.n, 1500, replace=False))
    return train.take(pick, "adult[train]")


def _recall_floor(data: rc.Dataset, floor: float, l2: float, l1: float = 0.0) -> rc.Problem:
    return rc.Problem(minimize=rc.error_rate(data), subject_to=[rc.recall(data) >= floor],
                      model=rc.LinearModel(l2=l2, l1=l1))


def _rule(data: rc.Dataset, kappa: float, l2: float) -> rc.Problem:
    women, men = data.group("sex", "Female"), data.group("sex", "Male")
    return rc.Problem(minimize=rc.error_rate(data),
                      subject_to=[rc.positive_rate_ratio(women, men) >= kappa],
                      model=rc.LinearModel(l2=l2))


def _solve(problem: rc.Problem, method: str, **options) -> rc.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.solve(method=method, seed=0, verbose=False, **options)


def _step_at(problem: rc.Problem, result: rc.Result) -> float:
    """Problem 3 at the result under the bounds in force, solved by CVXPY: one more MM step."""
    program = problem.canonical()
    margin = result.certificate.details["deterministic"]["tightening_margin"]
    in_force = replace(program, gamma=program.gamma - margin)
    step = solve_bound_cvxpy(in_force, in_force.bound_masks(result.w, result.b))
    assert step.status == settings.OPTIMAL
    return program.to_user(step.objective)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


CASES = {  # (data, method, problem): the bias repair moved these fixed points' bias
    "diabetes-mm": ("diabetes", "mm", lambda d: _recall_floor(d, 0.7, l2=1e-2)),
    "diabetes-cvxpy-l1": ("diabetes", "cvxpy", lambda d: _recall_floor(d, 0.7, 0.0, 1e-3)),
    "adult-cvxpy": ("adult", "cvxpy", lambda d: _rule(d, 0.8, l2=1e-3)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_moved_bias_is_continued_to_a_certified_fixed_point(request, case):
    data_name, method, make = CASES[case]
    problem = make(request.getfixturevalue(data_name))
    result = _solve(problem, method)
    details = result.certificate.details
    det = details["deterministic"]
    assert det["bias_repairs"] >= 1  # the repair moved the bias of a certified fixed point
    assert result.status == settings.OPTIMAL and not det["bias_moved"]
    assert 0.0 < det["tightening_margin"].max()  # the continuation ran, bounds tightened
    assert -1e-7 <= details["last_relative_decrease"] <= TOL
    assert result.certificate.max_violation == 0.0 and result.report().all_satisfied
    # one more MM step at the returned model improves it by at most tol
    assert _step_at(problem, result) >= result.objective - TOL * max(1.0, result.objective)
    assert _rel(_step_at(problem, result), result.objective) <= TOL
    rounds = {h.get("round", 0) for h in result.history}
    assert rounds == set(range(det["bias_repairs"] + det["tightening_rounds"] + 1))


def test_the_exported_step_at_a_continued_result_reproduces_its_objective(diabetes, tmp_path):
    """The continuation's bounds travel with the result (``details["step_bounds"]``), so the LP
    ``export_mps(at=result)`` writes is the last step, in HiGHS, CBC and GLPK."""
    problem = _recall_floor(diabetes, 0.7, 0.0, 1e-3)
    result = _solve(problem, "cvxpy")
    assert result.certificate.details["deterministic"]["bias_repairs"] >= 1
    assert result.status == settings.OPTIMAL
    info = rc.export_mps(problem, tmp_path / "step.mps", at=result)
    solved = solve_mps(tmp_path / "step.mps")
    assert solved.status == settings.OPTIMAL
    assert _rel(info["sign"] * solved.objective, result.objective) <= TOL
    cbc = cbc_path()
    assert cbc is not None, "PuLP's CBC binary (test extra) is missing"
    printed = cbc_objective(cbc, tmp_path / "step.mps", tmp_path / "step.sol")
    assert _rel(info["sign"] * printed, result.objective) <= TOL
    assert _rel(info["sign"] * glpk_objective(tmp_path / "step.mps"), result.objective) <= TOL


@pytest.mark.parametrize("method", ["mm", "cvxpy"])
def test_optimal_never_comes_with_a_moved_bias(diabetes, method):
    moved = 0
    for floor in (0.6, 0.65, 0.7, 0.75, 0.8):
        result = _solve(_recall_floor(diabetes, floor, l2=1e-2), method)
        det = result.certificate.details["deterministic"]
        moved += det["bias_repairs"]
        if result.status == settings.OPTIMAL:
            assert not det["bias_moved"], floor
            assert result.certificate.details["last_relative_decrease"] <= TOL, floor
            assert result.certificate.max_violation == 0.0, floor
        else:
            assert result.status in settings.LIMIT_STATUSES, floor
    assert moved >= 1  # at least one target exercised the continuation


def test_a_bias_left_moved_is_an_iteration_limit_that_names_it(diabetes, monkeypatch):
    monkeypatch.setattr(settings, "BIAS_CONTINUATION_ROUNDS", 0)
    result = _solve(_recall_floor(diabetes, 0.7, l2=1e-2), "mm")
    details = result.certificate.details
    det = details["deterministic"]
    assert det["bias_moved"] and det["bias_repairs"] == 1
    assert result.status == settings.ITERATION_LIMIT
    assert result.certificate.max_violation == 0.0  # the moved model meets the constraint
    measured = f"{details['last_relative_decrease']:.3g}"
    assert "moved the bias 1 time(s)" in details["message"] and measured in details["message"]
    assert "not a certified fixed point" in details["message"]


def test_the_chain_continues_from_its_threshold_search(diabetes, tmp_path, monkeypatch):
    """``method="highs"`` with no re-solve rounds reaches the threshold search at once; the run
    continues from the moved intercept, so ``optimal`` is the exported step's objective."""
    problem = _recall_floor(diabetes, 0.7, 0.0, 1e-3)
    result = _solve(problem, "highs", repair_rounds=0)
    assert "threshold_shift" in result.certificate.details  # the search moved the intercept
    assert result.status == settings.OPTIMAL and result.report().all_satisfied
    assert "certified the fixed point returned" in result.certificate.details["message"]
    info = rc.export_mps(problem, tmp_path / "step.mps", at=result)
    assert _rel(info["sign"] * solve_mps(tmp_path / "step.mps").objective,
                result.objective) <= TOL
    monkeypatch.setattr(settings, "BIAS_CONTINUATION_ROUNDS", 0)  # no continuation: honest
    assert _solve(problem, "highs", repair_rounds=0).status == settings.ITERATION_LIMIT


def test_the_eager_ladder_continues_from_every_moved_point():
    """Points are ints; a point misses until it reaches 3; the intercept search moves any point
    (to -p - 1), and a continuation from a moved point lands at the next point."""
    calls: list[tuple] = []

    def resume(found: int, miss: np.ndarray, moves: int) -> int:
        calls.append(("resume", found, moves))
        return -found

    out = repair_ladder(0, missed=lambda p: np.array([0.0 if p >= 3 else 0.5]),
                        intercept=lambda p, last: -p - 1, resolve=lambda *a: None, rounds=3,
                        eager=True, resume=resume, resumes=5)
    assert calls == [("resume", -1, 1), ("resume", -2, 2), ("resume", -3, 3)]
    assert out.point == 3 and not out.intercepted and out.moves == 3
    calls.clear()
    out = repair_ladder(0, missed=lambda p: np.array([0.0 if p >= 3 else 0.5]),
                        intercept=lambda p, last: -p - 1, resolve=lambda *a: None, rounds=3,
                        eager=True, resume=resume, resumes=2)
    assert out.point == -3 and out.intercepted and out.moves == 3  # left moved: say so
