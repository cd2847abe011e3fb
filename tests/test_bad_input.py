"""Bad input gets a clear ratecons error that names what was wrong, or an honest status.

Each case asserts the error class and that the message names the offending input (issue 18's
battery, started here with data, labels, baselines, comparisons and compositions).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.errors import DataWarning

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(int)


def data(**kwargs):
    return rc.Dataset(kwargs.pop("X", X), kwargs.pop("y", Y), **kwargs)


@pytest.mark.parametrize("build, error, words", [
    (lambda: rc.Dataset(np.ones((3, 2, 2))), rc.DataError, "2-dimensional"),
    (lambda: rc.Dataset(np.array([[1.0, np.nan]])), rc.DataError, "NaN"),
    (lambda: rc.Dataset(np.array([[1.0, np.inf]])), rc.DataError, "infinite"),
    (lambda: rc.Dataset(np.zeros((0, 2))), rc.EmptySubsetError, "no rows"),
    (lambda: rc.Dataset([["a", "b"]]), rc.DataError, "numeric"),
    (lambda: data(y=Y[:-1]), rc.DataError, "one label per row"),
    (lambda: data(y=np.full(40, 0.5)), rc.LabelError, "non-integer"),
    (lambda: data(y=np.array(["yes"] * 40)), rc.LabelError, "one value only"),
    (lambda: data(X=np.c_[X, np.full(40, 1e200)]), rc.DataError, "overflow"),
    (lambda: data(baseline=np.linspace(0.1, 0.9, 40)), rc.DataError, "probabilities"),
    (lambda: data(baseline=np.ones(39)), rc.DataError, "one prediction or score per row"),
    (lambda: data(baseline=np.r_[np.nan, np.ones(39)]), rc.DataError, "NaN"),
    (lambda: data(weights=-np.ones(40)), rc.DataError, "nonnegative"),
    (lambda: data(weights=np.zeros(40)), rc.DataError, "sum to zero"),
    (lambda: data(groups={"g": np.ones(39)}), rc.DataError, "group 'g'"),
    (lambda: data(feature_names=["a"]), rc.DataError, "feature_names"),
])
def test_bad_data_is_refused_with_what_was_wrong(build, error, words):
    with pytest.raises(error, match=words):
        build()


def test_string_labels_are_encoded_with_their_mapping():
    labels = np.where(Y == 1, ">50K", "<=50K")
    d = data(y=labels)
    assert d.is_binary and list(d.label_values) == ["<=50K", ">50K"]
    assert np.array_equal(d.y, Y)  # the larger value in sort order is the positive class
    multi = data(y=np.array(["a", "b", "c", "d"] * 10))
    assert not multi.is_binary and list(multi.label_values) == ["a", "b", "c", "d"]
    assert set(np.unique(multi.y)) == {0, 1, 2, 3}
    assert list(d.take(np.arange(5)).label_values) == ["<=50K", ">50K"]


def test_badly_scaled_columns_are_named_in_a_warning():
    big = np.c_[X, 1e7 * X[:, 0]]
    with pytest.warns(DataWarning, match="column.*income.*Standardize"):
        rc.Dataset(big, Y, feature_names=["a", "b", "c", "income"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc.Dataset(X, Y)  # well scaled: no warning


def test_probability_baselines_need_an_explicit_threshold():
    p = np.linspace(0.05, 0.95, 40)
    d = data(baseline=p, baseline_threshold=0.5)
    assert np.array_equal(d.baseline_prediction, (p > 0.5).astype(np.int8))
    assert np.array_equal(d.take(np.arange(40)).baseline_prediction, d.baseline_prediction)
    again = data().with_baseline(p, baseline_threshold=0.5)
    assert again.baseline_prediction.sum() == d.baseline_prediction.sum()
    scores = data(baseline=p - 0.5)  # scores centred at 0 need no threshold
    assert np.array_equal(scores.baseline_prediction, d.baseline_prediction)


@pytest.mark.parametrize("compare", [
    lambda D: rc.recall(D) > 0.7,
    lambda D: rc.recall(D) < 0.7,
    lambda D: rc.tpr_at_top(D, k=3) > 0.5,
    lambda D: rc.hinge_loss(D) < 0.5,
])
def test_strict_inequalities_are_refused_with_the_fix(compare):
    with pytest.raises(rc.SpecError, match="strict inequality.*Write"):
        compare(data())


@pytest.mark.parametrize("build, error, words", [
    (lambda D: rc.recall(D) >= 1.2, rc.InfeasibleError, "can never hold"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=["recall >= 0.5"]),
     rc.SpecError, r"subject_to\[0\] is a str"),
    (lambda D: rc.Problem(minimize="error"), rc.SpecError, "cannot minimize or maximize a str"),
    (lambda D: rc.Problem(minimize=rc.precision(D)), rc.NotLinearError, "ratio"),
    (lambda D: rc.tpr_at_top(D, k=3) * rc.recall(D), rc.NotLinearError, "finite numbers"),
    (lambda D: rc.tpr_at_top(D, k=3) / 0, rc.NotLinearError, "nonzero"),
    (lambda D: bool(rc.tpr_at_top(D, k=3) >= 0.5), rc.SpecError, "no truth value"),
    (lambda D: rc.worst_case(rc.recall(D), D), rc.SpecError, "'U' parameter of worst_case"),
    (lambda D: rc.worst_case(0.5, rc.PhiDivergenceBall(D)), rc.SpecError,
     "'expr' parameter of worst_case"),
    (lambda D: rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(D.negatives)), rc.SpecError,
     "outside"),
    (lambda D: rc.mean_loss(D, "exponential"), rc.SpecError, "'loss' parameter of mean_loss"),
    (lambda D: rc.mean_loss(rc.Dataset(X), "hinge"), rc.LabelError, "labels"),
    (lambda D: rc.PhiDivergenceBall([1, 2]), rc.SpecError, "'data' parameter"),
    (lambda D: rc.Problem(maximize=rc.hinge_loss(D)), rc.CurvatureError, "convex"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.tpr_at_top(D, k=3) <= 0.4]),
     rc.CurvatureError, "bounded above"),
    (lambda D: rc.Problem(minimize=rc.error_rate(D) - rc.hinge_loss(D)), rc.CurvatureError,
     "maximized"),
    (lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D)),
                          model=rc.LinearModel(l2=1e-3)), rc.CurvatureError, "model="),
    (lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.5],
                          model=rc.KernelModel(kernel="precomputed")),
     rc.SpecError, "precomputed"),
])
def test_bad_specs_name_the_offending_input(build, error, words):
    with pytest.raises(error, match=words):
        build(data())


def test_unknown_generic_options_list_the_valid_ones():
    problem = rc.Problem(minimize=rc.hinge_loss(data()), subject_to=[rc.recall(data()) >= 0.5])
    with pytest.raises(rc.UnknownOptionError, match="max_iterations"):
        problem.solve(max_iter=3)
    with pytest.raises(rc.UnknownOptionError, match="unknown CVXPY solver"):
        problem.solve(solver="GUROBI")
    with pytest.raises(rc.UnknownOptionError, match="solves LPs only"):
        rc.Problem(minimize=rc.logistic_loss(data())).solve("generic", solver="HIGHS")


def test_out_of_reach_targets_give_an_honest_status_not_a_model():
    D = data()
    problem = rc.Problem(minimize=rc.hinge_loss(D),
                         subject_to=[rc.recall(D) >= 0.99, rc.false_positive_rate(D) <= 0.0,
                                     rc.positive_rate(D) <= 0.05])
    result = problem.solve()
    assert result.status == "infeasible" and not result.has_model
    assert "relax" in result.certificate.details["message"].lower()
    with pytest.raises(rc.SolverError, match="infeasible"):
        result.predict(X)


@pytest.mark.parametrize("model", [rc.LinearModel(l2=1e-2), rc.KernelModel(l2=1e-2)])
def test_nan_at_predict_is_refused_not_read_as_negative(model):
    result = rc.Problem(minimize=rc.hinge_loss(data()), model=model).solve()
    with pytest.raises(rc.DataError, match="NaN or infinite values in 1 rows"):
        result.predict(np.array([[np.nan, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(rc.DataError, match="fitted on 3 features"):
        result.decision_function(np.ones((2, 5)))
