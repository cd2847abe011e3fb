"""The composition matrix: objectives x constraints x models over one score model.

Every cell of {error rate, TPR@K, TPR@tau, robust loss (chi2, KL), hinge loss, logistic loss}
x {none, rate floor, 80% rule, churn vs a baseline, precision floor, worst-case rate}
x {LinearModel l2, LinearModel l1 only, KernelModel gaussian} is a convex (or MM-convex)
problem, so every cell solves: status optimal, every constraint met on the training data by
the returned deterministic model, and

- where a specialized pattern accepts the cell, its result agrees with the generic chain
  (``method="generic"``) to 1e-4 relative;
- where none does, ``rc.verify`` agrees: the reference's last convex step (same anchor, same
  bounds) solved by a second, independent solver (SCS at 1e-9, or CLARABEL for LP steps) has
  the same optimal value to 1e-4 relative.

The compositions that break a curvature rule raise the documented CurvatureError, naming the
offending sub-expression (``test_curvature_errors_name_the_sub_expression``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.testing import small_composition_data

N = 120


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(N, baseline=True)


OBJECTIVES = {
    "error_rate": lambda D: {"minimize": rc.error_rate(D)},
    "tpr_at_k": lambda D: {"maximize": rc.tpr_at_top(D, k=3)},
    "tpr_at_tau": lambda D: {"maximize": rc.tpr_at_quantile(D, tau=0.1)},
    "robust_chi2": lambda D: {"minimize": rc.robust_loss(
        rc.PhiDivergenceBall(D, phi="chi2", rho=0.1))},
    "robust_kl": lambda D: {"minimize": rc.robust_loss(
        rc.PhiDivergenceBall(D, phi="kl", rho=0.1))},
    "hinge_loss": lambda D: {"minimize": rc.hinge_loss(D)},
    "logistic_loss": lambda D: {"minimize": rc.logistic_loss(D)},
}

CONSTRAINTS = {
    "none": lambda D: [],
    "rate_floor": lambda D: [rc.recall(D) >= 0.75],
    "80pct_rule": lambda D: [rc.positive_rate(D.group("g", "a"))
                             >= 0.8 * rc.positive_rate(D.group("g", "b"))],
    "churn": lambda D: [rc.churn_rate(D) <= 0.25],
    "precision_floor": lambda D: [rc.precision(D) >= 0.75],
    "worst_case_rate": lambda D: [rc.worst_case(
        rc.recall(D), rc.PhiDivergenceBall(D.positives, phi="chi2", rho=0.1)) >= 0.7],
}

MODELS = {
    "linear_l2": lambda: rc.LinearModel(l2=1e-2),
    "linear_l1": lambda: rc.LinearModel(l2=0.0, l1=1e-2),
    "kernel_gaussian": lambda: rc.KernelModel(kernel="gaussian", l2=1e-2),
}

GENERIC = "composed (generic chain)"


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("constraint", list(CONSTRAINTS))
@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_every_cell_solves_meets_its_constraints_and_verifies(data, objective, constraint,
                                                               model):
    problem = rc.Problem(**OBJECTIVES[objective](data), subject_to=CONSTRAINTS[constraint](data),
                         model=MODELS[model]())
    check = None
    if problem.pattern.name == GENERIC:
        # auto takes the reference (the CVXPY chain) on every generic cell of this size, and
        # verify solves it with that method first: its reference result is the solve auto
        # returns (a deterministic chain), so it is not solved a second time
        assert problem.plan().method == problem.pattern.reference_method == "cvxpy"
        check = rc.verify(problem)
        result = check.reference_result
    else:
        result = problem.solve()
    assert result.status in ("optimal", "optimal_inaccurate"), result.certificate.details
    if problem.constraints:
        report = result.report()
        assert report.all_satisfied, str(report)
    if check is not None:
        assert result.status == "optimal"
        assert check.agrees, str(check)
    else:  # a pattern accepted the cell: it agrees with the generic chain
        generic = problem.solve("generic")
        assert generic.status == "optimal"
        assert generic.report().all_satisfied
        assert abs(result.objective - generic.objective) <= 1e-4 * max(
            1.0, abs(generic.objective)), (problem.pattern.name, result.method,
                                            result.objective, generic.objective)


def test_which_cells_use_a_pattern(data):
    """Patterns accept exactly their own structures; every other cell is generic."""
    def family(objective: str, constraint: str, model: str) -> str:
        return rc.Problem(**OBJECTIVES[objective](data), subject_to=CONSTRAINTS[constraint](data),
                          model=MODELS[model]()).plan().pattern

    assert family("error_rate", "80pct_rule", "linear_l2") == "rate constraints"
    assert family("error_rate", "worst_case_rate", "linear_l2") == GENERIC
    assert family("error_rate", "rate_floor", "kernel_gaussian") == GENERIC
    assert family("tpr_at_k", "none", "kernel_gaussian") == "ranking at the top"
    assert family("tpr_at_k", "80pct_rule", "linear_l2") == GENERIC
    assert family("robust_chi2", "none", "linear_l2") == "robust learning (phi-divergence DRO)"
    assert family("robust_chi2", "rate_floor", "linear_l2") == GENERIC
    plan = rc.Problem(**OBJECTIVES["tpr_at_k"](data), subject_to=CONSTRAINTS["churn"](data),
                      model=MODELS["linear_l2"]()).plan()
    assert "does not accept" in plan.reasons[0] and "majorization" in plan.reasons[-1]


@pytest.mark.parametrize("build, offending, used", [
    (lambda D: rc.Problem(minimize=rc.tpr_at_top(D, k=3)), "tpr_at_top(syn, k=3)",
     "cannot be minimized"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D),
                          subject_to=[rc.tpr_at_top(D, k=50) <= 0.5]),
     "tpr_at_top(syn, k=50)", "cannot be bounded above"),
    (lambda D: rc.Problem(maximize=rc.robust_loss(rc.PhiDivergenceBall(D))),
     "robust_loss(syn[all]", "cannot be maximized"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.hinge_loss(D) >= 0.1]),
     "mean_loss(syn[all], 'hinge')", "cannot be bounded below"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D) + rc.tpr_at_top(D, k=3)),
     "tpr_at_top(syn, k=3)", "cannot be minimized"),
    (lambda D: rc.Problem(maximize=rc.tpr_at_top(D, k=3) + rc.logistic_loss(D)),
     "mean_loss(syn[all], 'logistic')", "cannot be maximized"),
    (lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)),
                          subject_to=[rc.recall(D) >= 0.5]), "minimax_risk", "not a score model"),
    (lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)), model=rc.LinearModel()),
     "minimax_risk", "drop model="),
])
def test_curvature_errors_name_the_sub_expression(data, build, offending, used):
    with pytest.raises(rc.CurvatureError) as err:
        build(data)
    assert offending in str(err.value) and used in str(err.value)


def test_terms_compose_and_compare(data):
    """Terms take part in sums and comparisons (formerly bare TypeErrors)."""
    tpr = rc.tpr_at_top(data, k=5)
    floor = tpr >= 0.5
    assert floor.name == "tpr_at_top(syn, k=5) >= 0.5"
    mixed = 0.5 * rc.error_rate(data) - tpr
    problem = rc.Problem(minimize=mixed, model=rc.LinearModel(l2=1e-2))
    assert problem.plan().pattern == GENERIC
    result = problem.solve()
    assert result.status == "optimal"
    with pytest.raises(rc.SpecError, match="strict inequality"):
        rc.recall(data) > 0.7  # noqa: B015
    with pytest.raises(rc.SpecError, match="strict inequality"):
        tpr > 0.5  # noqa: B015


def test_tpr_at_top_takes_a_subset_like_rates_do(data):
    """TPR@K among a group's examples (a Subset), composed with a rate on the whole data."""
    women = data.group("g", "a")
    tpr = rc.tpr_at_top(women, k=2)
    assert tpr.data.n == women.n and tpr.label == f"tpr_at_top({women.name}, k=2)"
    problem = rc.Problem(maximize=tpr, subject_to=[rc.recall(data) >= 0.6],
                         model=rc.LinearModel(l2=1e-2))
    result = problem.solve()
    assert result.status == "optimal" and result.report().all_satisfied
    with pytest.raises(rc.EmptySubsetError):
        rc.tpr_at_top(data.where(np.zeros(data.n, bool), name="none"), k=1)


@pytest.mark.parametrize("objective", ["tpr_at_k", "tpr_at_tau"])
def test_unconstrained_ranker_predicts_above_its_threshold_on_both_paths(data, objective):
    """TPR@K is shift-invariant; without constraints the generic chain pins b to the ranking
    threshold, so its deterministic model is the pattern's (the solution is unique: l2 > 0)."""
    problem = rc.Problem(**OBJECTIVES[objective](data), model=rc.LinearModel(l2=1e-2))
    ours, generic = problem.solve(), problem.solve("generic")
    assert problem.pattern.name == "ranking at the top"
    s_ours, s_generic = (r.decision_function(data.X) for r in (ours, generic))
    assert np.max(np.abs(s_ours - s_generic)) <= 1e-4 * max(1.0, np.max(np.abs(s_ours)))
    flagged = np.mean(s_generic > 0)
    assert 0.0 < flagged < 0.5  # the top of the ranking, not every example or none


def test_worst_case_value_is_below_the_nominal_rate(data):
    """min over the ball <= the rate at the centre <= max over the ball, for any scorer."""
    U = rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.2)
    wc = rc.worst_case(rc.recall(data), U)
    scorer = rc.Problem(minimize=rc.error_rate(data)).solve().scorer
    nominal = rc.recall(data).value(scorer)
    assert wc.value_for(scorer, -1.0) <= nominal + 1e-12 <= wc.value_for(scorer, 1.0) + 2e-12
    with pytest.raises(rc.SpecError, match="outside"):
        rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data.negatives, rho=0.1))


def test_generic_chain_flags_a_trivial_optimum():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    D = rc.Dataset(X, (X[:, 0] + rng.normal(size=200) > 0).astype(int))
    con = [rc.positive_rate(D) >= 0.3]
    heavy = rc.Problem(minimize=rc.hinge_loss(D), subject_to=con,
                       model=rc.LinearModel(l2=0.0, l1=10.0))
    with pytest.warns(rc.TrivialOptimumWarning, match="smaller l2 or l1"):
        result = heavy.solve("generic")
    record = result.certificate.details["degenerate"]
    assert np.all(result.w == 0) and record["constant"] == "all-positive"
    assert record["model_objective"] >= record["constant_objective"] - 1e-9  # w = 0 itself
    light = rc.Problem(minimize=rc.hinge_loss(D), subject_to=con,
                       model=rc.LinearModel(l2=0.0, l1=1e-3))
    assert "degenerate" not in light.solve("generic").certificate.details


def test_generic_chain_finds_a_start_when_the_hinge_relaxation_is_infeasible():
    """Churn and recall targets out of the hinge relaxation's reach: the generic chain runs
    phase 1 (elastic steps) instead of calling the problem infeasible, then MM, and returns a
    model meeting both constraints on the training data."""
    from ratecons.testing import tight_churn_recall_problem

    problem = tight_churn_recall_problem(l2=1e-3)
    assert problem.solve(method="hinge").status == "infeasible_inaccurate"  # no proof
    events = []
    result = problem.solve(method="generic", callback=events.append)
    assert result.status == "optimal", result.certificate.details.get("message")
    phase1 = [e for e in events if e.get("stage") == "phase1"]
    assert phase1 and phase1[0]["violation"] > 1e-3 and phase1[-1]["violation"] <= 1e-9
    assert result.certificate.details["phase1_iterations"] == len(phase1) - 1
    assert result.report().all_satisfied


def test_random_fourier_features_approximate_the_gaussian_kernel():
    """psi(x)^T psi(x') of the random-feature map approximates k(x, x') (Rahimi and Recht:
    the error falls like 1/sqrt(D)); up to ``max_exact`` rows the representer form is exact."""
    from ratecons.kernels import KernelSpec, kernel_block
    from ratecons.reductions.kernelize import kernelize
    from ratecons.testing import synthetic_groups

    data = synthetic_groups(n=1500, d=5, seed=0)
    model = rc.KernelModel(kernel="gaussian", approximation="random_features")
    K = kernel_block(KernelSpec.from_model(model, data.d), data.X, data.X)
    errors = []
    for D in (50, 1000):
        fmap = kernelize(model, [data], max_exact=D)
        assert "random Fourier" in fmap.describe()
        psi = fmap.apply(data.X)
        assert psi.shape == (data.n, D)
        errors.append(float(np.abs(psi @ psi.T - K).mean()))
    assert errors[1] < 0.03 and errors[1] < errors[0] / 3
    assert "exact representer" in kernelize(model, [data], max_exact=1500).describe()


def test_kernel_model_with_random_features_solves_verifies_and_pickles():
    import pickle

    from ratecons.testing import synthetic_groups

    data = synthetic_groups(n=600, d=5, seed=0)
    a, b = data.group("g", "a"), data.group("g", "b")
    problem = rc.Problem(minimize=rc.error_rate(data),
                         subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)],
                         model=rc.KernelModel(l2=1e-2, approximation="random_features"))
    assert "500 random Fourier features for 600 training rows" in str(problem.plan())
    result = problem.solve(kernel_points=200)
    assert result.status == "optimal" and result.report().all_satisfied
    assert "200 random Fourier" in result.certificate.details["feature_map"]
    again = pickle.loads(pickle.dumps(result.scorer))
    assert np.array_equal(again.decision_function(data.X), result.decision_function(data.X))
    report = rc.verify(problem, options={"kernel_points": 200},
                       reference_options={"kernel_points": 200})
    assert report.agrees, str(report)


@pytest.mark.parametrize("kwargs", [{"approximation": "rff"},
                                    {"kernel": "polynomial", "approximation": "random_features"}])
def test_kernel_approximation_is_checked(kwargs):
    with pytest.raises(rc.SpecError, match="'approximation' parameter of KernelModel"):
        rc.KernelModel(**kwargs)
