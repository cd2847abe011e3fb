"""Held-out group metrics in one call: ``estimator.report(X, y, sensitive_features=A)`` and
``ratecons.sklearn.report(pipeline, ...)`` equal the hand-built report; the per-group table's
numbers against direct counts; JSON round trip."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ratecons as rc
from ratecons.report import RateReport, group_table
from ratecons.sklearn import DemographicParityRatio, RateConstrainedClassifier, report
from ratecons.testing import synthetic_groups


@pytest.fixture(scope="module")
def split():
    train, test = synthetic_groups(n=700, seed=5).split(0.6, seed=1)
    return ((3.0 * train.X + 1.0, train.y, train.groups["g"]),
            (3.0 * test.X + 1.0, test.y, test.groups["g"]))


@pytest.fixture(scope="module")
def pipe(split):
    (X, y, A), _ = split
    clf = RateConstrainedClassifier(constraints=DemographicParityRatio(bound=0.9),
                                    method="cvxpy")
    return make_pipeline(StandardScaler(), clf).fit(
        X, y, rateconstrainedclassifier__sensitive_features=A)


def test_one_call_equals_the_hand_built_report(pipe, split):
    _, (X_test, y_test, A_test) = split
    hand = pipe[-1].result_.report(
        rc.Dataset(pipe[:-1].transform(X_test), y_test, groups={"sensitive": A_test}))
    one = report(pipe, X_test, y_test, sensitive_features=A_test)
    direct = pipe[-1].report(pipe[:-1].transform(X_test), y_test, sensitive_features=A_test)
    assert one.to_dict() == hand.to_dict() == direct.to_dict()
    assert one.to_json() == hand.to_json()
    assert set(one.groups) == {"sensitive"}
    assert [r.kind for r in one.rows].count("constraint") == 2  # a/b and b/a


def test_group_table_matches_direct_counts(pipe, split):
    _, (X_test, y_test, A_test) = split
    table = report(pipe, X_test, y_test, sensitive_features=A_test).groups["sensitive"]
    pred = pipe.predict(X_test)
    assert table.levels == ["a", "b"]
    assert table.columns == ["count", "selection_rate", "error_rate", "true_positive_rate",
                             "false_positive_rate"]
    for level, row in zip(table.levels, table.values):
        m = A_test == level
        expected = [m.sum(), pred[m].mean(), (pred[m] != y_test[m]).mean(),
                    pred[m & (y_test == 1)].mean(), pred[m & (y_test == 0)].mean()]
        assert row == pytest.approx(expected)
    sel = np.array([row[1] for row in table.values])
    assert table.summary("difference")["selection_rate"] == pytest.approx(sel.max() - sel.min())
    assert table.summary("ratio")["selection_rate"] == pytest.approx(sel.min() / sel.max())
    assert table.summary("overall")["error_rate"] == pytest.approx((pred != y_test).mean())
    assert table.summary("overall")["count"] == len(y_test)
    assert np.isnan(table.summary("ratio")["count"])
    with pytest.raises(ValueError, match="'overall', 'difference', 'ratio'"):
        table.summary("max")
    records = table.to_records()
    assert [r["sensitive"] for r in records] == ["a", "b", "overall", "difference", "ratio"]
    frame = table.to_frame()
    assert frame.loc["a", "selection_rate"] == pytest.approx(sel[0])
    assert "by sensitive" in str(one_report := report(pipe, X_test, y_test,
                                                      sensitive_features=A_test))
    assert "groups=sensitive" in repr(one_report)


def test_grid_search_and_string_labels(split):
    (X, y, A), (X_test, y_test, A_test) = split
    labels = np.array(["no", "yes"])
    search = GridSearchCV(RateConstrainedClassifier(constraints=DemographicParityRatio(0.9),
                                                    method="cvxpy"),
                          {"l2": [1e-3]}, cv=2)
    search.fit(X, labels[y], sensitive_features=A)
    rep = report(search, X_test, labels[y_test], sensitive_features=A_test)
    assert rep.groups["sensitive"].values[0][0] == np.sum(A_test == "a")
    with pytest.raises(ValueError, match="not fitted on"):
        report(search, X_test, np.where(y_test == 1, "yes", "maybe"), sensitive_features=A_test)


def test_weighted_levels_without_labels_and_json_round_trip():
    data = rc.Dataset(np.eye(4), groups={"g": ["x", "x", "y", "y"]},
                      weights=[1.0, 3.0, 1.0, 1.0])
    table = group_table(np.array([1, 0, 1, 1]), data, "g")
    assert table.columns == ["count", "selection_rate"]
    assert table.values == [[2.0, 0.25], [2.0, 1.0]]
    assert table.overall == [4.0, pytest.approx(0.5)]
    rep = RateReport("d", groups={"g": table})
    back = RateReport.from_dict(rep.to_dict())
    assert back.to_json() == rep.to_json()
    with pytest.raises(rc.SpecError, match="no group attribute 'h'"):
        group_table(np.zeros(4), data, "h")
    # -1/+1 and bool as 0/1; scores, probabilities and label names are refused (a user's
    # scores read 0.148 / 0.170 where 0.466 / 0.518 of them are positive: cast to int8)
    assert group_table(np.array([1, -1, 1, 1]), data, "g").values == table.values
    assert group_table(np.array([True, False, True, True]), data, "g").values == table.values
    for bad in (np.array([0.4, -0.2, 1.3, 0.8]), np.array([0.9, 0.1, 0.7, 0.6]),
                np.array(["yes", "no", "yes", "yes"])):
        with pytest.raises(rc.SpecError, match="binary predictions .*scores > 0"):
            group_table(bad, data, "g")


def test_reports_skip_attributes_with_many_levels():
    data = synthetic_groups(n=200, seed=2)
    data.groups["id"] = np.arange(200)  # one level per example: no table
    result = rc.Problem(minimize=rc.error_rate(data)).solve(method="cvxpy")
    assert set(result.report().groups) == {"g"}


def test_pickled_estimator_keeps_the_model_not_the_training_data():
    import pickle

    adult = rc.datasets.load_adult()
    rows = np.random.default_rng(0).choice(adult.n, 6000, replace=False)
    train, test = adult.take(rows).split(0.7, seed=0)
    clf = RateConstrainedClassifier(constraints=DemographicParityRatio(0.8), method="mm")
    clf.fit(train.X, train.y, sensitive_features=train.groups["sex"])
    blob = pickle.dumps(clf)
    assert len(blob) < 100_000, len(blob)
    assert len(pickle.dumps(clf.result_.problem)) > 10 * len(blob)  # what is left behind
    back = pickle.loads(blob)
    assert back.result_.problem is None and back.result_.solution.dual == {}
    np.testing.assert_array_equal(back.decision_function(test.X), clf.decision_function(test.X))
    assert back.result_.status == clf.result_.status
    assert back.result_.certificate.to_dict() == clf.result_.certificate.to_dict()
    # the held-out report of the unpickled estimator: the problem rebuilt on the test data
    sex = test.groups["sex"]
    assert (back.report(test.X, test.y, sensitive_features=sex).to_dict()
            == clf.report(test.X, test.y, sensitive_features=sex).to_dict())


def test_every_estimator_reports_after_unpickling(split):
    import pickle

    from ratecons.sklearn import MinimaxRiskClassifier, RobustClassifier, TopKClassifier

    (X, y, A), (X_test, y_test, A_test) = split
    for est in (TopKClassifier(k=3), RobustClassifier(rho=0.1), MinimaxRiskClassifier()):
        est.fit(X, y)
        back = pickle.loads(pickle.dumps(est))
        assert back.result_.problem is None and est.result_.problem is not None
        a = est.report(X_test, y_test, sensitive_features=A_test).to_dict()
        assert back.report(X_test, y_test, sensitive_features=A_test).to_dict() == a
        assert set(a["groups"]) == {"sensitive"}


def test_a_held_out_report_shows_the_rows_it_can_measure():
    """A small group absent from a test split (a user's Adult split had no 'Other' race)
    raised EmptySubsetError for the whole report; the rows over it now read NaN with a note,
    and the others are measured."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": np.where(X[:, 1] > 0, "a", "b")})
    result = rc.Problem(minimize=rc.error_rate(D),
                        subject_to=[rc.positive_rate(D.group("g", "a")) <= 0.5,
                                    rc.recall(D) >= 0.5]).solve(verbose=False)
    test = rc.Dataset(X, y, groups={"g": np.repeat("b", 200)})
    rep = result.report(test)
    missing, recall = rep.rows[1], rep.rows[2]
    assert np.isnan(missing.indicator) and "not measured here" in missing.note
    assert "g=a" in missing.note and missing.satisfied is None
    assert recall.indicator == pytest.approx(np.mean(result.predict(X)[y == 1]))
    assert not rep.all_satisfied  # one row could not be checked
    # the rates of an unmeasured constraint: NaN where its subset is empty, measured elsewhere
    both = rc.Problem(minimize=rc.error_rate(D), subject_to=[
        rc.positive_rate(D.group("g", "a")) >= 0.5 * rc.positive_rate(D.group("g", "b"))]
    ).solve(verbose=False)
    rates = {row.name: row for row in both.report(test).rows if row.kind == "rate"}
    assert np.isnan(rates["positive_rate(data[g=a])"].indicator)
    assert rates["positive_rate(data[g=b])"].indicator == pytest.approx(
        np.mean(both.predict(X)))  # every test row is in b


def test_a_printed_report_shows_the_sign_of_a_value_next_to_a_bound():
    """README's 80% rule on Adult, held out: the randomized rule's multiplied-through value is
    -2.2e-05 (a missed bound), which four decimals printed as "-0.0000"."""
    from ratecons.report import ReportRow

    row = ReportRow("constraint", "ratio >= 0.8", ">= 0.8", 0.7914, 0.79997, -0.0086, False,
                    linear_indicator=-0.0016, linear_ramp=-2.24e-05)
    text = str(RateReport("adult[test]", [row]))
    assert "-2.2e-05" in text and "-0.0000" not in text
    assert "    0.7914" in text and "    0.8000" in text  # the others keep four decimals
    zero = str(RateReport("d", [ReportRow("rate", "r", "", 0.0, 0.0)]))
    assert "    0.0000" in zero
