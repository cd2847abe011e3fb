"""method="mm" in the rate family: auto choice, plan, MM monotonicity, verify rows, errors."""

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.errors import SolverError, UnknownOptionError
from ratecons.testing import fairness_problem

STRUCTURED = settings.STRUCTURED_METHOD


@pytest.fixture(scope="module")
def fair():
    problem = fairness_problem(n=500, seed=2, kappa=0.9, l2=1e-2)
    events = []
    result = problem.solve(method="mm", seed=0, callback=events.append)
    return problem, result, events


def plan_names_only(plan) -> None:
    """The plan says the chosen method is used and never that the other one is."""
    text = str(plan)
    assert f"method '{plan.method}' is used" in text, text
    for other in {"mm", "cvxpy", settings.STRUCTURED_METHOD} - {plan.method}:
        assert f"method '{other}' is used" not in text, text
    if plan.method == "cvxpy":
        assert "instead of a general conic solver" not in text, text


def rule_problem(data, m: int, l2: float) -> rc.Problem:
    a, b = data.group("g", "a"), data.group("g", "b")
    made = [rc.positive_rate(a) >= 0.8 * rc.positive_rate(b), rc.recall(data) >= 0.6,
            rc.positive_rate(data) <= 0.7]
    return rc.Problem(minimize=rc.error_rate(data), subject_to=made[:m],
                      model=rc.LinearModel(l2=l2))


@pytest.mark.parametrize("n, d, m, l2, expected", [
    (20000, 50, 1, 1e-2, "mm"),  # one constraint, strongly regularized: few SDCA epochs
    (40000, 20, 1, 1e-3, "mm"),
    # issue 31's dense frame: mm 1.27 s, structured 1.21 s, cvxpy 42.6 s (benchmarks.auto_grid)
    (3000, 100, 1, 1e-3, STRUCTURED),
    (20000, 5, 3, 1e-2, STRUCTURED),  # three multipliers for Alg 2's cutting plane
    # two constraints, strongly regularized: the model before 2026-11-28 took mm here, as on
    # the whole Adult split at l2 = 1e-2 (mm 12.1 s, structured 2.2 s; benchmarks.auto_grid)
    (40000, 20, 2, 1e-2, STRUCTURED),
    (300, 5, 1, 1e-3, STRUCTURED),  # weakly regularized: many SDCA epochs per bound
    (2000, 5, 3, 1e-3, STRUCTURED),
])
def test_auto_picks_by_the_measured_cost_and_the_plan_says_so(n, d, m, l2, expected):
    from ratecons.patterns.rate_auto import predicted_log_ratio, rate_size

    problem = rule_problem(rc.testing.synthetic_groups(n, d, 0, False), m, l2)
    plan = problem.plan()
    assert plan.method == expected, plan.reasons
    size = rate_size(problem.canonical())
    assert size.density == 1.0 and size.nnz == size.n * d
    if m > 1:  # a rule, not a model: the structured chain, and the plan says why
        assert any(f"{m} constraints: so method 'structured' is used" in r
                   for r in plan.reasons), plan.reasons
    else:
        # log10 of each method's predicted time over mm's: the plan takes the smallest
        predicted = {"mm": 0.0, "cvxpy": -predicted_log_ratio(size),
                     STRUCTURED: -predicted_log_ratio(size, settings.MM_STRUCTURED_COST_MODEL)}
        assert min(predicted, key=predicted.__getitem__) == expected
        assert any(f"{size.nnz:.3g} nonzero terms" in r for r in plan.reasons)
    plan_names_only(plan)


def test_auto_reads_density_and_refuses_mm_where_it_does_not_apply():
    data = rc.testing.synthetic_groups(10000, 100, 0, False)
    dense = rule_problem(data, 1, 1e-3)
    X = data.X.copy()
    X[:, 5:] = 0.0  # the same frame with 5 of its 100 columns nonzero
    sparse = rule_problem(rc.Dataset(X, data.y, groups=dict(data.groups)), 1, 1e-3)
    from ratecons.patterns.rate_auto import rate_size

    assert rate_size(sparse.canonical()).density == pytest.approx(0.05)
    # SDCA's epochs cost the nonzeros, the structured step's Gram products barely more
    assert dense.plan().method == "mm" and sparse.plan().method == STRUCTURED
    lp = fairness_problem(n=100, l2=0.0).plan()
    assert lp.method == "cvxpy" and any("LP" in r for r in lp.reasons)
    assert not any("applies" in r for r in lp.reasons)
    for plan in (dense.plan(), sparse.plan(), lp):
        plan_names_only(plan)
    assert any("SDCA" in r for r in dense.plan().reasons)


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
    # Alg 1 stopped by the reference's rule (mm's default tol is 1e-3, for speed: docs/mm.md)
    report = rc.verify(problem, method="mm", options={"tol": settings.MM_RELATIVE_TOL})
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


def test_inexact_mm_schedule_certifies_every_bound_and_tightens_at_the_end():
    """Bounds 0 and 1 at start_epsilon, then rho * (last decrease) clipped to
    [epsilon, start_epsilon], the last one (k = T) at epsilon; each bound's certified gap is
    within its own accuracy, and the iterates carry increasing time stamps."""
    problem = fairness_problem(n=800, seed=4, kappa=0.9, l2=1e-2)
    T = 4
    result = problem.solve(method="mm", max_iterations=T, epsilon=1e-6, start_epsilon=1e-3,
                           rho=0.05, tol=0.0)
    history = result.history
    eps = [h["subproblem_certificate"]["details"]["epsilon"] for h in history]
    gaps = [h["subproblem_certificate"]["gap"] for h in history]
    assert eps[0] == eps[1] == 1e-3
    for k in range(2, len(history)):
        decrease = history[k - 2]["objective"] - history[k - 1]["objective"]
        expected = 1e-6 if k == T else min(1e-3, max(1e-6, 0.05 * decrease))
        assert eps[k] == pytest.approx(expected)
    assert all(g <= e * (1 + 1e-9) for g, e in zip(gaps, eps, strict=True))
    stamps = [h["time"] for h in history]
    assert stamps[0] > 0 and np.all(np.diff(stamps) >= 0)
    objectives = [h["objective"] for h in history]
    assert np.all(np.diff(objectives) <= 1e-9)
    # every bound solved to epsilon when start_epsilon = epsilon
    exact = problem.solve(method="mm", max_iterations=2, epsilon=1e-6, start_epsilon=1e-6)
    assert {h["subproblem_certificate"]["details"]["epsilon"] for h in exact.history} == {1e-6}


def test_mm_schedule_options_are_validated():
    problem = fairness_problem(n=100, l2=1e-2)
    with pytest.raises(ValueError, match="rho"):
        problem.solve(method="mm", rho=0.0)
    with pytest.raises(ValueError, match="start_epsilon"):
        problem.solve(method="mm", start_epsilon=-1.0)


@pytest.mark.parametrize("bound_status", ["optimal", "iteration_limit", "time_limit"])
def test_mm_stop_is_optimal_only_on_a_bound_solved_to_its_tolerance(bound_status):
    """Alg 1 stops when the ramp objective no longer decreases; that certifies a fixed point
    only if the bound that showed it was solved to its tolerance."""
    from ratecons.solution import Certificate, Solution
    from ratecons.solvers.mm import majorize_minimize

    program = fairness_problem(n=200, seed=1, l2=1e-2).canonical()
    start = Solution(settings.OPTIMAL, 0.0, primal={"w": np.zeros(program.d), "b": np.float64(0.0)},
                     certificate=Certificate())

    def same_point(program, masks, warm):  # a bound whose minimizer is the anchor itself
        return Solution(bound_status, warm["objective"], primal={"w": warm["w"], "b": warm["b"]},
                        certificate=Certificate())

    sol = majorize_minimize(program, same_point, start)
    assert sol.status == bound_status
    # one bound solved, at the start: a fixed point there, so no iterate after the start
    assert sol.certificate.details["mm_steps"] == 1
    assert sol.certificate.details["mm_iterations"] == 0
    assert sol.certificate.details["last_relative_decrease"] == 0.0


def test_hinge_start_at_its_multiplier_cap_goes_to_phase_one_without_a_v_max_warning():
    """An infeasible hinge relaxation drives the multipliers of bound 0 to HINGE_V_MAX; that is
    phase 1's cue, not the user's (the warning's advice to raise v_max would mislead)."""
    import warnings

    from ratecons.testing import tight_churn_recall_problem

    problem = tight_churn_recall_problem(l2=1e-2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method="mm")
    assert not [w for w in caught if "V_max = 10" in str(w.message)]
    first = result.history[0]["subproblem_certificate"]["details"]
    assert first["phase1_iterations"] >= 0
    assert result.status == "optimal"
    assert result.report().all_satisfied


def test_mm_refuses_an_equality_and_says_what_works():
    """``s_p(women) == s_p(men)`` is two rows of opposite sign: Alg 2's cutting plane over
    their two multipliers (only the difference matters) did not finish the first bound in 20 s
    on 500 Adult rows. ``mm`` now refuses it at once, naming the structured chain and a band;
    the same rows written apart by 0.04 still run."""
    from ratecons.patterns.rate_mm import equality_rows

    adult = rc.datasets.load_adult()
    train, _ = adult.split(500 / adult.n, seed=0)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    gap = rc.positive_rate(women) - rc.positive_rate(men)
    equal = rc.Problem(minimize=rc.error_rate(train), subject_to=gap == 0,
                       model=rc.LinearModel(l2=1e-3))
    written_apart = rc.Problem(minimize=rc.error_rate(train), subject_to=[gap <= 0, gap >= 0],
                               model=rc.LinearModel(l2=1e-3))
    band = rc.Problem(minimize=rc.error_rate(train), subject_to=[gap <= 0.02, gap >= -0.02],
                      model=rc.LinearModel(l2=1e-3))
    assert len(equality_rows(equal.canonical())) == 1
    assert len(equality_rows(written_apart.canonical())) == 1
    assert equality_rows(band.canonical()) == []
    with pytest.raises(SolverError, match="an equality .*use method='structured', or a band"):
        equal.solve(method="mm")
    assert band.solve(method="mm").status == "optimal"


def test_the_summarys_count_adds_up_every_round():
    """A user's mm solve (2,051 Adult rows, the 80% rule) made 18 MM steps and repairs (23
    history records) and summary()["iterations"] said 1: the last repair round's count."""
    adult = rc.datasets.load_adult()
    data = adult.take(np.random.default_rng(2).choice(adult.n, 2000, replace=False))
    women, men = data.group("sex", "Female"), data.group("sex", "Male")
    problem = rc.Problem(minimize=rc.error_rate(data), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate_ratio(women, men) >= 0.8])
    result = problem.solve(method="mm")
    details = result.certificate.details
    assert result.summary()["iterations"] >= details["mm_iterations"] > 1
