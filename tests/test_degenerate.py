"""Degenerate answers named (issue 32, item 5): every solve compares its model with the best
constant classifier that meets the same constraints (ratecons/degenerate.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.degenerate import ConstantClassifier, check_degenerate
from ratecons.sklearn import DemographicParityDifference, RateConstrainedClassifier


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
    result.scorer = ConstantClassifier(True)  # the all-positive model meets recall >= 0.6
    with pytest.warns(rc.TrivialOptimumWarning, match="all-positive classifier"):
        record = check_degenerate(problem, result)
    assert record["constant"] == "all-positive" and record["binding"] == []
    assert record["model_objective"] == pytest.approx(1.0 - D.y.mean())
    assert "no constraint is tight" in record["message"]
    # a coverage band no constant classifier meets: nothing to compare with
    problem, _ = _problem(lambda D: [rc.positive_rate(D) >= 0.3, rc.positive_rate(D) <= 0.7])
    result = problem.solve()
    result.scorer = ConstantClassifier(False)
    assert check_degenerate(problem, result) is None


def test_objectives_that_are_not_rates_are_left_to_their_own_checks():
    problem, D = _problem(lambda D: [])
    problem = rc.Problem(minimize=rc.hinge_loss(D), model=rc.LinearModel(l2=1e-3))
    result = problem.solve()
    result.scorer = ConstantClassifier(False)
    assert check_degenerate(problem, result) is None
