"""Degenerate answers named (issue 32, item 5): every solve compares its model with the best
constant model that meets the same constraints (ratecons/degenerate.py): rates, losses, robust
losses, ranking at the top, compositions and minimax risk, each with a case that warns and a
normal fit that must not, on real data (Adult subsample, Pima diabetes)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.degenerate import ConstantScore, check_degenerate
from ratecons.sklearn import DemographicParityDifference, RateConstrainedClassifier
from tests.shared_data import fair_top5, standardized


def _fit(train: rc.Dataset, bound: float) -> tuple[RateConstrainedClassifier, list]:
    clf = RateConstrainedClassifier(constraints=DemographicParityDifference(bound=bound))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(train.X.toarray(), train.y, sensitive_features=train.groups["sex"])
    return clf, [w for w in caught if issubclass(w.category, rc.TrivialOptimumWarning)]


@pytest.fixture(scope="module")
def adult() -> rc.Dataset:
    return rc.datasets.load_adult().split(0.02, seed=0)[0]


@pytest.mark.slow
def test_exact_parity_returns_a_constant_model_and_says_so(adult):
    """fairlearn's DemographicParity() as a bound of 0: the answer predicts everyone alike, is
    no better than predicting everyone negative, and the warning names the parity rows."""
    clf, caught = _fit(adult, 0.0)
    predictions = clf.predict(adult.X.toarray())
    assert np.ptp(predictions) == 0  # a constant classifier
    accuracy = float((predictions == adult.y).mean())
    majority = float(1.0 - adult.y.mean())
    assert accuracy <= majority
    record = clf.result_.certificate.details["degenerate"]
    assert record["constant"] == "all-negative"
    assert record["constant_objective"] == pytest.approx(adult.y.mean())
    assert record["model_objective"] == pytest.approx(1.0 - accuracy)
    assert record["binding"] and all("demographic_parity" in name for name in record["binding"])
    assert len(caught) == 1 and "demographic_parity" in str(caught[0].message)
    assert "Loosen" in str(caught[0].message)


@pytest.mark.slow
def test_a_normal_fairness_solve_does_not_warn(adult):
    clf, caught = _fit(adult, 0.05)
    assert not caught
    assert "degenerate" not in clf.result_.certificate.details
    predictions = clf.predict(adult.X.toarray())
    assert (predictions == adult.y).mean() > 1.0 - adult.y.mean()  # beats the majority class


def _problem(subject_to: list) -> tuple[rc.Problem, rc.Dataset]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    D = rc.Dataset(X, y, name="d")
    return rc.Problem(minimize=rc.error_rate(D), subject_to=subject_to(D),
                      model=rc.LinearModel(l2=1e-3)), D


def test_check_compares_with_the_feasible_constants_only():
    problem, D = _problem(lambda D: [rc.recall(D) >= 0.6])
    result = problem.solve()
    assert "degenerate" not in result.certificate.details  # a trained model: no record
    assert check_degenerate(problem, result) is None
    result.scorer = ConstantScore(1.0)  # the all-positive model meets recall >= 0.6
    with pytest.warns(rc.TrivialOptimumWarning, match="all-positive classifier"):
        record = check_degenerate(problem, result)
    assert record["constant"] == "all-positive" and record["binding"] == []
    assert record["model_objective"] == pytest.approx(1.0 - D.y.mean())
    assert "no constraint is tight" in record["message"]
    assert "local fixed point" in record["message"]  # error rate: MM, whose fixed points are local
    # a run stopped by its limit is told so, not to change the regularization
    result.status = "time_limit"
    with pytest.warns(rc.TrivialOptimumWarning, match="status 'time_limit'.*time_limit="):
        record = check_degenerate(problem, result)
    assert "smaller l2" not in record["message"]
    # uncertified with no limit reached (stopped_by "stalled"): a larger budget changes
    # nothing, so the advice is the problem's, not more time (a user saw both, contradicting)
    result.status = "iteration_limit"
    result.certificate.details["stopped_by"] = "stalled"
    with pytest.warns(rc.TrivialOptimumWarning) as caught:
        record = check_degenerate(problem, result)
    assert "max_iterations=" not in record["message"] and "smaller l2" in record["message"]
    assert len(caught) == 1
    # a coverage band no constant classifier meets: nothing to compare with
    problem, _ = _problem(lambda D: [rc.positive_rate(D) >= 0.3, rc.positive_rate(D) <= 0.7])
    result = problem.solve()
    result.scorer = ConstantScore(-1.0)
    assert check_degenerate(problem, result) is None


def test_a_model_worse_than_a_feasible_constant_is_called_worse():
    # an MM fixed point can be worse than a constant model that meets every constraint
    # (exact parity on 2,000 Adult rows: the all-positive model at error 0.76, certified as a
    # fixed point, where the all-negative one has 0.24); the record and the warning say WORSE
    # and that 'optimal' certified the fixed point, not the best model
    problem, D = _problem(lambda D: [rc.positive_rate(D) <= 0.9])
    result = problem.solve()

    class Reversed:  # ranks the examples backwards: error well above the constants'
        def decision_function(self, X):
            return -np.asarray(X)[:, 0]

    result.scorer, result.status = Reversed(), "optimal"
    with pytest.warns(rc.TrivialOptimumWarning, match="WORSE than.*not the best model"):
        record = check_degenerate(problem, result)
    assert record["worse_than_constant"]
    assert record["model_objective"] > record["constant_objective"] + 0.2
    # a model only matching the constant is not called worse
    result.scorer = ConstantScore(-1.0)
    with pytest.warns(rc.TrivialOptimumWarning, match="no better than"):
        assert not check_degenerate(problem, result)["worse_than_constant"]


def test_a_loss_is_compared_with_the_best_constant_score():
    """A mean loss at a constant score c is a convex function of c: the check finds the best
    feasible c (the log-odds of the labels for the logistic loss) and compares exactly."""
    problem, D = _problem(lambda D: [])
    problem = rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3))
    result = problem.solve()
    assert check_degenerate(problem, result) is None
    share = D.y.mean()
    result.scorer = ConstantScore(np.log(share / (1.0 - share)) + 0.3)  # not the best constant
    with pytest.warns(rc.TrivialOptimumWarning, match="smaller l2 or l1"):
        record = check_degenerate(problem, result)
    best = -(share * np.log(share) + (1.0 - share) * np.log(1.0 - share))  # the label entropy
    assert record["constant_objective"] == pytest.approx(best, rel=1e-7)
    assert record["constant_score"] == pytest.approx(np.log(share / (1.0 - share)), abs=1e-3)
    assert record["model_objective"] > record["constant_objective"]


@pytest.fixture(scope="module")
def adult1500() -> rc.Dataset:
    data = standardized("adult")
    rows = np.random.default_rng(0).choice(data.n, 1500, replace=False)
    return data.take(rows, "adult1500")


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


def _solve(problem: rc.Problem, *args, **kwargs) -> tuple[rc.Result, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(*args, **kwargs)
    return result, [str(w.message) for w in caught
                    if issubclass(w.category, rc.TrivialOptimumWarning)]


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_losses_under_a_huge_l2_warn_and_a_normal_fit_does_not(adult1500, loss):
    objective = rc.mean_loss(adult1500, loss)
    huge, said = _solve(rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e7)))
    assert len(said) == 1 and "smaller l2" in said[0] and "no constraints" in said[0]
    record = huge.certificate.details["degenerate"]
    assert record["model_objective"] >= record["constant_objective"] * (1 - 1e-6)
    normal, said = _solve(rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e-3)))
    assert not said and "degenerate" not in normal.certificate.details
    assert normal.objective < 0.9 * record["constant_objective"]


def test_robust_losses_under_a_huge_l2_warn_and_a_normal_fit_does_not(diabetes):
    objective = rc.robust_loss(rc.PhiDivergenceBall(diabetes, phi="chi2", rho=0.1))
    huge, said = _solve(rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e7)))
    assert huge.method == "lbfgs" and len(said) == 1 and "smaller l2" in said[0]
    record = huge.certificate.details["degenerate"]
    # the constant's robust loss is evaluated under its own worst case, exactly
    constant = ConstantScore(record["constant_score"])
    assert record["constant_objective"] == pytest.approx(objective.value(constant), rel=1e-12)
    normal, said = _solve(rc.Problem(minimize=objective, model=rc.LinearModel(l2=1e-3)))
    assert not said and normal.robust_loss < 0.9 * record["constant_objective"]


def test_ranking_under_a_huge_l2_warns_and_a_normal_fit_does_not(diabetes):
    """A constant score ranks nothing: its surrogate TPR is 0; under l2 = 1e7 the model's is
    within 1e-6 of it, with a normal l2 above (K = 100 of the 500 negatives: with K <= 50
    w = 0 is the optimum itself on diabetes, and the check says so too)."""
    objective = rc.tpr_at_top(diabetes, k=100)
    huge, said = _solve(rc.Problem(maximize=objective, model=rc.LinearModel(l2=1e7)))
    assert len(said) == 1 and "ranks nothing" in said[0] and "larger K" in said[0]
    assert huge.certificate.details["degenerate"]["constant_objective"] == 0.0
    normal, said = _solve(rc.Problem(maximize=objective, model=rc.LinearModel(l2=1e-3)))
    assert not said and normal.objective > 0.005 and normal.metrics(diabetes)["tpr@100"] > 0.4
    _, said = _solve(rc.Problem(maximize=rc.tpr_at_top(diabetes, k=5),
                                model=rc.LinearModel(l2=1e-3)))
    assert len(said) == 1 and "ranks nothing" in said[0]


def test_a_composition_names_the_constraint_that_forces_the_constant(diabetes):
    """A logistic loss with a coverage floor of 1: only the all-positive scores meet it, and
    the warning names the floor; with a recall floor of 0.8 the model is trained."""
    objective = rc.logistic_loss(diabetes)
    forced, said = _solve(rc.Problem(minimize=objective,
                                     subject_to=[rc.positive_rate(diabetes) >= 1.0],
                                     model=rc.LinearModel(l2=1e-2)), "cvxpy")
    assert len(said) == 1 and "positive_rate(diabetes[all]) >= 1" in said[0]
    record = forced.certificate.details["degenerate"]
    assert record["constant"] == "all-positive" and record["constant_score"] > 0
    assert record["binding"] == ["positive_rate(diabetes[all]) >= 1"]
    normal, said = _solve(rc.Problem(minimize=objective,
                                     subject_to=[rc.recall(diabetes) >= 0.8],
                                     model=rc.LinearModel(l2=1e-2)), "cvxpy")
    assert not said and "degenerate" not in normal.certificate.details


def test_rates_on_diabetes_warn_only_when_forced(diabetes):
    forced, said = _solve(rc.Problem(minimize=rc.error_rate(diabetes),
                                     subject_to=[rc.positive_rate(diabetes) >= 1.0],
                                     model=rc.LinearModel(l2=1e-3)))
    assert len(said) == 1 and "all-positive classifier" in said[0]
    assert forced.certificate.details["degenerate"]["constant_objective"] == pytest.approx(
        1.0 - diabetes.y.mean())
    normal, said = _solve(rc.Problem(minimize=rc.error_rate(diabetes),
                                     subject_to=[rc.recall(diabetes) >= 0.7],
                                     model=rc.LinearModel(l2=1e-3)))
    assert not said and normal.metrics(diabetes)["error"] < 1.0 - diabetes.y.mean()


def test_minimax_risk_is_compared_with_the_most_frequent_label(diabetes):
    """On diabetes the MRC over the raw features (the default feature map) predicts the most
    frequent label for everyone, with R* = 0.354 above that rule's error 0.349: the check names
    it and suggests richer features; 50 random Fourier features give a model (error 0.258)."""
    linear, said = _solve(rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(diabetes))))
    share = float(np.bincount(diabetes.y).max() / diabetes.n)
    assert len(said) == 1 and "most frequent label" in said[0] and "Fourier" in said[0]
    record = linear.certificate.details["degenerate"]
    assert record["constant_objective"] == pytest.approx(1.0 - share)
    assert record["model_objective"] == pytest.approx(linear.error(diabetes))
    assert record["minimax_risk"] == linear.objective >= record["constant_objective"]
    fourier, said = _solve(rc.Problem(minimize=rc.minimax_risk(
        rc.MomentSet(diabetes, features=rc.features.RandomFourier(50, seed=0)))))
    assert not said and fourier.error(diabetes) < 0.9 * (1.0 - share)
    assert "degenerate" not in fourier.certificate.details


def test_a_ranking_surrogate_does_not_make_a_model_worse_than_a_constant():
    """A user's instance (1,025 Adult rows): minimize 0.5 error - TPR@5 under the 80% rule.
    The surrogate objective (0.172) is above the all-negative constant's (0.1195), and the
    warning called the constant "the better answer", while the model's exact objective is
    -0.20. The TPR@K surrogate is a lower bound of the exact TPR: no WORSE verdict rests on
    it, and the warning says the exact objective may still beat the constant's."""
    problem = fair_top5([(0.7, 0), (0.03, 0)], l2=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve()
    record = result.certificate.details["degenerate"]
    assert not record["worse_than_constant"] and "WORSE" not in record["message"]
    assert "the exact objective (result.report()) may still beat" in record["message"]
    assert result.metrics()["objective"] < record["constant_objective"]


def test_a_model_of_rounding_noise_is_returned_as_the_constant():
    """Diabetes (standardized), TPR@5 with l2 = 1e-2: w = 0 is optimal. primal_ipm and
    dual_ca returned it; cvxpy, generic and structured returned |w| ~ 1e-9 to 1e-11, and
    metrics() ranked that noise (train TPR@5 0.16 against 0). Such a model is now the
    constant (w = 0, score 0: no positive ranked above a negative, none predicted), with the
    spread in the record."""
    data = standardized("diabetes")
    problem = rc.Problem(maximize=rc.tpr_at_top(data, k=5), model=rc.LinearModel(l2=1e-2))
    for method in ("primal_ipm", "cvxpy", "structured"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = problem.solve(method)
        assert result.status == "optimal"
        assert np.all(result.w == 0.0), method
        assert result.metrics()["tpr@5"] == 0.0 and result.predict(data.X).sum() == 0
        assert result.objective == pytest.approx(0.0, abs=1e-9)
        record = result.certificate.details["degenerate"]
        if method == "primal_ipm":  # its own w = 0 is a constant already
            assert "snapped_spread" not in record
        else:
            assert 0.0 < record["snapped_spread"] <= 1e-6 and "rounding" in record["message"]


def test_a_stopped_minimax_run_blames_the_budget_not_lambda0():
    """Glass, lambda0 = 0.3 (R* = 0.5758): under max_iterations=2 the warning called the
    stopped model's worst-case risk (0.934) R* and advised a smaller lambda0."""
    from tests.shared_data import load

    problem = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(load("glass"), lambda0=0.3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve("lp", max_iterations=2)
    message = result.certificate.details["degenerate"]["message"]
    assert "stopped with status iteration_limit" in message
    assert "smaller lambda0" not in message and "R* =" not in message
    assert "use method='lp'" not in message  # the user is on it
