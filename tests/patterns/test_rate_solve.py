"""Solving rate problems with the CVXPY reference: MM monotonicity, feasibility, statuses,
reports, JSON, errors."""

import json

import numpy as np
import pytest

import ratecons as rc
from ratecons.testing import fairness_problem, synthetic_groups


@pytest.fixture(scope="module")
def fair():
    problem = fairness_problem(n=400, seed=1, kappa=0.9)
    return problem, problem.solve(method="cvxpy")


def test_mm_objective_never_increases_and_stays_feasible(fair):
    problem, result = fair
    assert result.status == "optimal"
    objectives = [h["objective"] for h in result.history]
    assert len(objectives) >= 2
    assert np.all(np.diff(objectives) <= 1e-9)
    for record in result.history:
        assert record["max_violation"] <= 1e-6
    program = problem.canonical()
    assert result.objective == pytest.approx(program.objective(result.w, result.b, "ramp"))
    # MM improves on its start, the hinge relaxation's solution
    hinge = problem.solve(method="hinge")
    assert result.objective <= program.objective(hinge.w, hinge.b, "ramp") + 1e-9


def test_constrained_model_meets_its_ramp_target_and_beats_unconstrained_ratio(fair):
    problem, result = fair
    report = result.report()
    con = [r for r in report.rows if r.kind == "constraint"][0]
    assert con.ramp >= -1e-6  # s_p(a) - 0.9 s_p(b) >= 0 in expectation
    data = problem.objective.datasets[0]
    a, b = data.group("g", "a"), data.group("g", "b")
    free = rc.Problem(minimize=rc.error_rate(data), model=problem.model).solve(method="cvxpy")
    ratio = rc.positive_rate_ratio(a, b)
    assert ratio.value(result.scorer, "ramp") >= 0.9 - 1e-6
    assert ratio.value(free.scorer, "ramp") < ratio.value(result.scorer, "ramp")


def test_report_on_held_out_data_rebinds_subsets(fair):
    problem, result = fair
    test = synthetic_groups(n=300, seed=99)
    report = result.report(test)
    assert report.data == test.name
    rates = {r.name: r for r in report.rows if r.kind == "rate"}
    key = f"positive_rate({test.name}[g=a])"
    assert key in rates
    a = test.group("g", "a")
    expected = np.mean(result.predict(a.X))
    assert rates[key].indicator == pytest.approx(expected)
    text = str(report)
    assert "constraint" in text and "objective" in text


def test_to_json_round_trip(fair):
    _, result = fair
    out = json.loads(result.to_json())
    assert out["status"] == "optimal" and out["method"] == "cvxpy"
    assert len(out["w"]) == 5 and "report" in out
    assert out["report"]["rows"][0]["kind"] == "objective"


def test_randomized_predictions_follow_the_ramp(fair):
    problem, result = fair
    data = problem.objective.datasets[0]
    draws = np.mean([result.predict(data, randomized=True, seed=s) for s in range(200)], axis=0)
    expected = np.clip(0.5 + result.decision_function(data), 0, 1)
    assert np.max(np.abs(draws - expected)) < 0.15


def test_infeasible_problem_reports_status_not_model():
    data = synthetic_groups(n=200, seed=2)
    problem = rc.Problem(
        minimize=rc.error_rate(data),
        subject_to=[rc.positive_rate(data) >= 0.9, rc.positive_rate(data) <= 0.1],
    )
    result = problem.solve(method="cvxpy")
    assert result.status == "infeasible"  # proved: no predictions have both rates
    assert "no classifier meets" in result.certificate.details["message"]
    assert result.certificate.details["unreachable"]["violation"] == pytest.approx(0.4)
    with pytest.raises(rc.SolverError, match="infeasible"):
        result.predict(data)


def test_phase_one_finds_a_start_when_the_hinge_relaxation_is_infeasible():
    from ratecons.testing import tight_churn_recall_problem

    problem = tight_churn_recall_problem(l2=1e-3)
    assert problem.solve(method="hinge").status == "infeasible_inaccurate"  # no proof
    events = []
    result = problem.solve(method="cvxpy", callback=events.append)
    assert result.status == "optimal"
    steps = result.history[0]["subproblem_certificate"]["details"]["phase1_iterations"]
    phase1 = [e for e in events if e.get("stage") == "phase1"]
    assert [e["iteration"] for e in phase1] == list(range(steps + 1))
    assert phase1[-1]["violation"] <= 1e-9 < phase1[0]["violation"]
    for con in problem.constraints:  # the ramp rows hold (the start is feasible for them)
        ramp = con.expr.value(result.scorer, "ramp")
        assert ramp <= con.bound + 1e-6 if con.sense == "<=" else ramp >= con.bound - 1e-6



@pytest.mark.parametrize("budget", [{"max_iterations": 0}, {"time_limit": 1e-9}])
def test_phase_one_stopped_by_a_budget_says_so_not_infeasible(budget):
    from ratecons import limits
    from ratecons.phase_one import find_feasible_start
    from ratecons.testing import tight_churn_recall_problem

    analysis = tight_churn_recall_problem(l2=1e-3).analysis
    with limits.limits_scope(limits.Limits(time_limit=budget.get("time_limit"))):
        start = find_feasible_start(analysis, max_iterations=budget.get("max_iterations", 50))
    assert start.status == ("iteration_limit" if "max_iterations" in budget else "time_limit")
    assert "w" not in start.primal
    assert "raise time_limit" in start.certificate.details["message"]

def test_lp_case_uses_highs():
    data = synthetic_groups(n=200, seed=3)
    problem = rc.Problem(minimize=rc.error_rate(data),
                         subject_to=[rc.recall(data) >= 0.8],
                         model=rc.LinearModel(l2=0.0, l1=1e-3))
    assert "LP" in str(problem.plan())
    result = problem.solve(method="cvxpy")
    assert result.status == "optimal"
    assert "HIGHS" in result.solution.solver
    assert rc.recall(data).value(result.scorer, "ramp") >= 0.8 - 1e-6


def test_unknown_methods_and_options_are_rejected():
    problem = fairness_problem(n=100)
    with pytest.raises(rc.UnknownOptionError, match="unknown method 'fast'"):
        problem.solve(method="fast")
    with pytest.raises(rc.UnknownOptionError, match="max_iterations"):
        problem.solve(method="cvxpy", max_iters=3)
    with pytest.raises(rc.UnknownOptionError, match="unknown CVXPY solver"):
        problem.solve(method="cvxpy", solver="GUROBI")
    kernel = rc.Problem(minimize=rc.error_rate(synthetic_groups(50)),
                        model=rc.KernelModel(kernel="gaussian"))
    assert kernel.plan().pattern == "composed (generic chain)"  # kernel rates: generic chain


def test_scs_and_clarabel_agree_on_the_hinge_relaxation():
    problem = fairness_problem(n=300, seed=4)
    a = problem.solve(method="hinge", solver="CLARABEL")
    b = problem.solve(method="hinge", solver="SCS")
    assert a.solution.objective == pytest.approx(b.solution.objective, rel=1e-3)


def test_verify_prints_side_by_side():
    problem = fairness_problem(n=200, seed=5)
    report = rc.verify(problem, method="cvxpy", reference_options={"solver": "SCS"}, rtol=1e-2)
    text = str(report)
    assert "objective" in text and "max_violation" in text
    assert report.rows["objective_rel_gap"] <= 1e-2


def test_verify_auto_checks_the_specialized_method_even_when_auto_picks_the_reference():
    problem = fairness_problem(n=200, seed=6)
    assert problem.plan().method == "cvxpy"  # small: the reference is faster
    report = rc.verify(problem)
    assert report.method == "mm" and report.reference == "cvxpy"
    assert report.rows["objective_rel_gap"] <= 1e-3


def test_verify_auto_without_a_specialized_method_names_the_methods_to_compare():
    """An LP rate problem (l1, no l2): auto picks the reference and mm does not apply; verify
    said NotImplementedError('rate constraints has no cross-check') after solving the
    reference. Now a SpecError before any solve names the methods to pass instead."""
    data = synthetic_groups(n=200, seed=7)
    problem = rc.Problem(minimize=rc.error_rate(data), subject_to=[rc.recall(data) >= 0.8],
                         model=rc.LinearModel(l2=0.0, l1=1e-2))
    with pytest.raises(rc.SpecError, match=r"Pass method= one of \['mm', 'structured', "
                                           r"'generic', 'highs'\]"):
        rc.verify(problem)
    assert rc.verify(problem, method="highs").agrees
