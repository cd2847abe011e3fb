"""One Result for every score-model problem (issue 29 item 3): the same ``metrics(data)`` keys,
exact values on held-out data, family values as extras read as attributes, and extras that
survive pickling and JSON; on Pima diabetes."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.report import METRIC_KEYS
from tests.shared_data import standardized

FAMILIES = {
    "rates": (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
                                   model=rc.LinearModel(l2=1e-3)), set()),
    "composition": (lambda D: rc.Problem(minimize=rc.logistic_loss(D),
                                         subject_to=[rc.recall(D) >= 0.7],
                                         model=rc.LinearModel(l2=1e-3)), {"mean_loss"}),
    "ranking": (lambda D: rc.Problem(maximize=rc.tpr_at_top(D, k=100),
                                     model=rc.LinearModel(l2=1e-3)), {"tpr@100"}),
    "robust": (lambda D: rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, rho=0.1)),
                                    model=rc.LinearModel(l2=1e-3)),
               {"mean_loss", "robust_loss"}),
}


@pytest.fixture(scope="module")
def split() -> tuple[rc.Dataset, rc.Dataset]:
    return standardized("diabetes").split(0.7, seed=0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_metrics_have_the_same_keys_and_exact_values(split, family):
    train, test = split
    build, extra_keys = FAMILIES[family]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        result = build(train).solve(verbose=False)
    assert type(result) is rc.Result
    m = result.metrics(test)
    assert set(m) == set(METRIC_KEYS) | extra_keys
    predicted = result.predict(test) == 1
    assert m["error"] == pytest.approx(np.mean(predicted != (test.y == 1)))
    assert m["accuracy"] == pytest.approx(1.0 - m["error"])
    assert m["positive_rate"] == pytest.approx(np.mean(predicted))
    # the objective on the training data is the analysis' exact value at the model
    at_train = result.metrics(train)["objective"]
    assert result.metrics() == result.metrics(train)  # as report(): the training data
    exact = result.problem.analysis.objective.user_value(result.scorer, "exact")
    assert at_train == pytest.approx(exact, rel=1e-12)
    if family == "ranking":
        assert m["objective"] == m["tpr@100"] and result.threshold == result.extras["threshold"]
    if family == "robust":
        assert m["robust_loss"] >= m["mean_loss"] and m["objective"] == m["robust_loss"]
        assert result.robust_loss == result.extras["robust_loss"]
        back = rc.Result.from_json(result.to_json())
        np.testing.assert_allclose(back.theta, result.theta)
        np.testing.assert_allclose(pickle.loads(pickle.dumps(result)).weights, result.weights)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        result.nonesuch  # noqa: B018 - the error names the extras there are


def test_metrics_without_data_names_the_datasets_when_there_are_several(split):
    train, test = split
    problem = rc.Problem(minimize=rc.error_rate(train), subject_to=[rc.recall(test) >= 0.5],
                         model=rc.LinearModel(l2=1e-3))
    result = problem.solve(verbose=False)
    with pytest.raises(rc.SpecError, match="has 2 .*pass the one to measure"):
        result.metrics()


def test_predictions_on_a_subset_are_those_of_its_rows(split):
    """result.predict / decision_function take a Subset (D.group(...), D.positives) as they
    take a Dataset (a Subset raised TypeError from numpy)."""
    train, test = split
    result = FAMILIES["rates"][0](train).solve(verbose=False)
    positives = test.positives
    np.testing.assert_array_equal(result.predict(positives),
                                  result.predict(test)[test.y == 1])
    np.testing.assert_allclose(result.decision_function(positives),
                               result.decision_function(test)[test.y == 1])


def test_a_ratio_constraints_slack_is_in_the_ratios_units(split):
    """precision >= 0.6 reports target, achieved and slack = achieved - target in precision's
    units (the slack was the multiplied-through form's, #TP - 0.6 (#TP + #FP), in counts);
    the line beneath keeps the multiplied-through value, and met or not is its sign."""
    train, _ = split
    problem = rc.Problem(minimize=rc.error_rate(train), subject_to=[rc.precision(train) >= 0.6],
                         model=rc.LinearModel(l2=1e-3))
    result = problem.solve(verbose=False)
    row = result.report().rows[1]
    pred, y = result.predict(train), train.y
    tp, fp = np.sum((pred == 1) & (y == 1)), np.sum((pred == 1) & (y == 0))
    assert row.indicator == pytest.approx(tp / (tp + fp))
    assert row.slack == pytest.approx(tp / (tp + fp) - 0.6)
    assert row.linear_indicator == pytest.approx(tp - 0.6 * (tp + fp))
    assert row.satisfied == (row.linear_indicator >= -1e-9)


def test_held_out_data_too_small_for_k_keeps_the_keys(split):
    """TPR@60 on held-out data with fewer negatives than 60 (a user's diabetes split):
    ``metrics`` dropped the ``tpr@60`` key; it now keeps the same keys, NaN, and ``report``
    says that the held-out data cannot measure the objective."""
    train, _ = split
    result = rc.Problem(maximize=rc.tpr_at_top(train, k=60),
                        model=rc.LinearModel(l2=1e-2)).solve(verbose=False)
    small = train.take(np.arange(80), name="small")
    assert np.sum(small.y == 0) < 60
    m = result.metrics(small)
    assert set(m) == set(result.metrics(train)) and np.isnan(m["tpr@60"])
    with pytest.raises(rc.SpecError, match="cannot be measured on small.*number of negatives"):
        result.report(small)
