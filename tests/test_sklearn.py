"""The scikit-learn style estimator."""

import numpy as np
import pytest

import ratecons as rc
from ratecons.testing import synthetic_groups


def test_fit_predict_with_a_fairness_constraint():
    data = synthetic_groups(n=300, seed=11)
    groups = {"g": data.groups["g"]}

    def rule(d):
        return [rc.positive_rate(d.group("g", "a")) >= 0.9 * rc.positive_rate(d.group("g", "b"))]

    clf = rc.RateConstrainedClassifier(constraints=rule, l2=1e-2, method="cvxpy")
    assert clf.fit(data.X, data.y, groups=groups) is clf
    np.testing.assert_allclose(clf.decision_function(data.X), data.X @ clf.coef_ + clf.intercept_)
    assert set(np.unique(clf.predict(data.X))) <= {0, 1}
    assert 0.5 < clf.score(data.X, data.y) <= 1.0
    ramp = rc.positive_rate_ratio(data.group("g", "a"), data.group("g", "b"))
    assert ramp.value(clf.result_.scorer, "ramp") >= 0.9 - 1e-6


def test_params_and_errors():
    clf = rc.RateConstrainedClassifier()
    assert clf.set_params(l2=0.5).get_params()["l2"] == 0.5
    with pytest.raises(rc.SpecError, match="unknown parameter"):
        clf.set_params(C=1.0)
    with pytest.raises(rc.SpecError, match="not fitted"):
        clf.predict(np.zeros((2, 2)))
    with pytest.raises(rc.SpecError, match="objective"):
        rc.RateConstrainedClassifier(objective="auc").fit(np.zeros((4, 1)), [0, 1, 0, 1])
