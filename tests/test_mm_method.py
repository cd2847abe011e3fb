"""method="mm" in the rate family: auto choice, plan, MM monotonicity, verify rows, errors."""

import numpy as np
import pytest

import ratecons as rc
from ratecons.errors import SolverError, UnknownOptionError
from ratecons.testing import fairness_problem


@pytest.fixture(scope="module")
def fair():
    problem = fairness_problem(n=500, seed=2, kappa=0.9, l2=1e-2)
    events = []
    result = problem.solve(method="mm", seed=0, callback=events.append)
    return problem, result, events


def test_auto_picks_mm_for_l2_problems_and_plan_explains():
    plan = fairness_problem(n=6000, l2=1e-2).plan()
    assert plan.method == "mm" and "mm" in plan.available
    small = fairness_problem(n=100, l2=1e-2).plan()
    assert small.method == "cvxpy" and any("example-terms" in r for r in small.reasons)
    assert any("SDCA" in r for r in plan.reasons)
    lp = fairness_problem(n=100, l2=0.0).plan()
    assert lp.method == "cvxpy"
    assert any("LP" in r for r in lp.reasons)


def test_mm_objective_is_monotone_feasible_and_reported(fair):
    problem, result, events = fair
    assert result.status == "optimal"
    objectives = [h["objective"] for h in result.history]
    assert len(objectives) >= 2 and np.all(np.diff(objectives) <= 1e-9)
    for record in result.history:
        assert record["max_violation"] <= 1e-4
        assert "indicator_rows" in record and "ramp_rows" in record
    program = problem.canonical()
    assert result.objective == pytest.approx(program.objective(result.w, result.b, "ramp"))
    stages = {e.get("stage") for e in events}
    assert {"hinge", "mm", "multipliers"} <= stages
    assert {e["bound"] for e in events if e.get("stage") == "multipliers"} >= {0, 1}


def test_verify_compares_final_objective_and_the_same_bounds(fair):
    problem, _, _ = fair
    report = rc.verify(problem, method="mm")
    assert report.method == "mm" and report.reference == "cvxpy"
    rows = report.rows
    assert rows["hinge_relaxation_rel_gap"] <= 1e-4
    assert rows["bound_at_mm_solution_rel_gap"] <= 1e-4
    assert max(rows["bound_at_mm_solution_violation"]) <= 1e-4
    assert report.agrees, str(report)


def test_mm_refuses_lp_problems_and_unknown_options():
    with pytest.raises(SolverError, match="l2"):
        fairness_problem(n=100, l2=0.0).solve(method="mm")
    with pytest.raises(UnknownOptionError):
        fairness_problem(n=100, l2=1e-2).solve(method="mm", sdca_speed=3)
