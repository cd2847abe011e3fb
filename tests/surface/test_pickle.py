"""Problems, results, reports and the estimators pickle and joblib-dump; a loaded result
predicts the same; Result.to_json round-trips the model."""

import base64
import io
import json
import pickle
import warnings

import joblib
import numpy as np
import pytest

import ratecons as rc
from ratecons.result import Result
from ratecons.sklearn import (
    DemographicParityRatio,
    MinimaxRiskClassifier,
    RateConstrainedClassifier,
    RobustClassifier,
    TopKClassifier,
)

N = 120


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    g = rng.random(N) < 0.4
    y = ((X[:, 0] + 0.6 * X[:, 1] - 0.4 * g + 0.5 * rng.normal(size=N)) > 0).astype(int)
    baseline = ((X[:, 0] + 0.8 * rng.normal(size=N)) > 0).astype(int)
    return rc.Dataset(X, y, groups={"g": np.where(g, "a", "b")}, baseline=baseline, name="syn")


PROBLEMS = {
    "rates": lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[
        rc.positive_rate(D.group("g", "a")) >= 0.8 * rc.positive_rate(D.group("g", "b")),
        rc.precision(D) >= 0.6, rc.churn_rate(D) <= 0.3, rc.f1_score(D) >= 0.5,
        rc.win_loss_ratio(D) >= 1.0, rc.true_positives(D) >= 10, -rc.errors(D) >= -40]),
    "composed": lambda D: rc.Problem(minimize=rc.hinge_loss(D), subject_to=[rc.recall(D) >= 0.7]),
    "top": lambda D: rc.Problem(maximize=rc.tpr_at_top(D, k=3)),
    "robust": lambda D: rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, rho=0.1))),
    "minimax": lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D))),
    "worst_case": lambda D: rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.worst_case(
        rc.recall(D), rc.PhiDivergenceBall(D.positives, rho=0.1)) >= 0.7]),
}


def _roundtrip(obj):
    once = pickle.loads(pickle.dumps(obj))
    buf = io.BytesIO()
    joblib.dump(obj, buf)
    buf.seek(0)
    return once, joblib.load(buf)


@pytest.mark.parametrize("kind", list(PROBLEMS))
def test_problem_result_report_pickle(kind, data):
    problem = PROBLEMS[kind](data)
    loaded, _ = _roundtrip(problem)
    assert loaded.pattern.name == problem.pattern.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        result = problem.solve(verbose=False)
    assert result.has_model
    for copy in _roundtrip(result):
        np.testing.assert_array_equal(copy.predict(data.X), result.predict(data.X))
        assert copy.status == result.status and copy.objective == result.objective
    report = result.report()  # the one report type
    for copy in _roundtrip(report):
        assert copy.to_json() == report.to_json()
    text = result.to_json()
    pickled = json.loads(text)["model"]["type"] == "pickle"
    if pickled:  # not plain data: unpickling runs what the file names, so it is asked for
        with pytest.raises(rc.SpecError, match="allow_pickle=True"):
            Result.from_json(text)
    back = Result.from_json(text, allow_pickle=pickled)
    np.testing.assert_array_equal(back.predict(data.X), result.predict(data.X))
    assert back.status == result.status and back.method == result.method
    assert back.objective == pytest.approx(result.objective)


def test_a_json_model_is_not_unpickled_unless_asked(data, tmp_path):
    """A user's crafted file: ``from_json`` unpickled any "pickle" model, running its code."""
    payload = base64.b64encode(pickle.dumps(_Marker(str(tmp_path / "ran")))).decode("ascii")
    text = json.dumps({"status": "optimal", "objective": 0.0, "method": "auto",
                       "model": {"type": "pickle", "base64": payload}})
    with pytest.raises(rc.SpecError, match="runs any code the file names"):
        Result.from_json(text)
    assert not (tmp_path / "ran").exists()
    with pytest.raises(rc.SpecError, match="allow_pickle"):
        Result.from_json(text, allow_pickle="yes")


class _Marker:
    """Unpickling it writes a file: proof that code ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_rebinding_survives_pickling(data):
    """A loaded rate problem still reports on held-out data (its recipes are picklable)."""
    train, test = data.split(0.6, seed=1)
    result = PROBLEMS["rates"](train).solve(verbose=False)
    loaded = pickle.loads(pickle.dumps(result))
    [loaded_train] = loaded.problem.analysis.datasets
    assert loaded_train.n == train.n
    a = result.report(test).to_records()
    b = loaded.report(test).to_records()
    assert [r["achieved"] for r in a] == [r["achieved"] for r in b]


def test_estimators_pickle_and_joblib(data):
    A = data.groups["g"]
    clf = RateConstrainedClassifier(constraints=DemographicParityRatio(0.8), l2=1e-2)
    clf.fit(data.X, data.y, sensitive_features=A)
    mrc = MinimaxRiskClassifier().fit(data.X, np.where(data.y == 1, "yes", "no"))
    top = TopKClassifier(k=5).fit(data.X, data.y)
    robust = RobustClassifier(rho=0.1).fit(data.X, data.y)
    for est in (clf, mrc, top, robust):
        for copy in _roundtrip(est):
            np.testing.assert_array_equal(copy.predict(data.X), est.predict(data.X))
            np.testing.assert_allclose(copy.decision_function(data.X),
                                       est.decision_function(data.X))
            if hasattr(est, "predict_proba"):
                np.testing.assert_allclose(copy.predict_proba(data.X), est.predict_proba(data.X))
            assert repr(copy) == repr(est)


def test_unfitted_json_result_has_no_report(data):
    result = rc.Problem(minimize=rc.error_rate(data)).solve(verbose=False)
    back = Result.from_json(result.to_json())
    with pytest.raises(rc.SpecError, match="without its problem"):
        back.report()


def test_json_keeps_infinities_metrics_says_why_and_summary_is_plain(data):
    """A user's history gap of inf came back from JSON as 1e308 (math.isinf False); metrics()
    of a loaded result blamed its argument ("got NoneType"); json.dumps(summary()) failed on
    mm's arrays. Infinities read back as infinities, metrics says the problem is not stored,
    and summary() is plain data."""
    import json
    import math

    problem = PROBLEMS["rates"](data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve("mm", verbose=False)
    result.history[0]["gap"] = math.inf
    back = Result.from_json(result.to_json())
    assert math.isinf(back.history[0]["gap"]) and back.history[0]["gap"] > 0
    for call in (back.metrics, lambda: back.metrics(data)):
        with pytest.raises(rc.SpecError, match="without its problem"):
            call()
    json.dumps(result.summary())  # mm's history holds the rows as arrays
