"""Datasets and subsets: validation, label normalization, selection recipes, loaders."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import ratecons as rc
from tests.shared_data import DATA


def small(**kw):
    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array([1, 0, 1, 1, 0, 0])
    groups = {"g": np.array(["a", "a", "b", "b", "b", "a"])}
    return rc.Dataset(X, y, groups=groups, **kw)


def test_labels_normalized_from_pm1_and_bool():
    X = np.zeros((4, 1))
    assert rc.Dataset(X, [-1, 1, 1, -1]).y.tolist() == [0, 1, 1, 0]
    assert rc.Dataset(X, [True, False, True, True]).y.tolist() == [1, 0, 1, 1]
    d = rc.Dataset(X, [0, 2, 1, 2])
    assert not d.is_binary and d.classes.tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": np.zeros(3)}, "2-dimensional"),
        ({"X": [[1.0, np.nan], [0.0, 1.0]]}, "NaN or infinite"),
        ({"X": sp.csr_matrix(np.array([[np.inf, 1.0]]))}, "NaN or infinite"),
        ({"X": np.zeros((3, 2)), "y": [0, 1]}, "one label per row"),
        ({"X": np.zeros((2, 2)), "y": [0.5, 1.0]}, "non-integer"),
        ({"X": np.zeros((2, 2)), "y": [1 + 2j, 3j]}, "labels"),
        ({"X": np.zeros((2, 2)), "groups": {"g": [1]}}, "group 'g'"),
        ({"X": np.zeros((2, 2)), "baseline": [1, 0, 1]}, "baseline"),
        ({"X": np.zeros((2, 2)), "weights": [-1, 1]}, "nonnegative"),
        ({"X": np.zeros((0, 2))}, "no rows"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(rc.DataError, match=match):
        rc.Dataset(**kwargs)


def test_subsets_and_algebra():
    d = small()
    assert d.positives.index.tolist() == [0, 2, 3]
    assert d.negatives.index.tolist() == [1, 4, 5]
    a = d.group("g", "a")
    assert a.index.tolist() == [0, 1, 5]
    assert (a & d.positives).index.tolist() == [0]
    assert (a | d.positives).index.tolist() == [0, 1, 2, 3, 5]
    assert a.positives.index.tolist() == [0]
    assert d.where(np.array([1, 0, 0, 0, 0, 1], bool)).index.tolist() == [0, 5]


def test_baseline_cells_table1():
    d = small(baseline=[1, 1, 0, 1, 0, 1])
    assert d.baseline_cell(1, 1).index.tolist() == [0, 3]  # D++
    assert d.baseline_cell(1, 0).index.tolist() == [2]  # D+-
    assert d.baseline_cell(0, 1).index.tolist() == [1, 5]  # D-+
    assert d.baseline_cell(0, 0).index.tolist() == [4]  # D--
    scores = rc.Dataset(np.zeros((3, 1)), baseline=[0.3, -2.0, 0.0])
    assert scores.baseline_prediction.tolist() == [1, 0, 0]


def test_subset_recipe_reapplies_to_other_data():
    d = small()
    other = rc.Dataset(np.zeros((3, 2)), [1, 1, 0], groups={"g": ["b", "a", "a"]})
    assert d.group("g", "a").positives.on(other).index.tolist() == [1]
    fixed = d.where(np.ones(6, bool))
    with pytest.raises(rc.DataError, match="callable"):
        fixed.on(other)
    by_fn = d.where(lambda data: data.X[:, 0] >= 0)
    assert by_fn.on(other).n == 3


def test_missing_attributes_are_explained():
    d = rc.Dataset(np.zeros((3, 1)))
    with pytest.raises(rc.LabelError, match="needs labels"):
        _ = d.positives
    with pytest.raises(rc.SpecError, match="no group attribute"):
        d.group("sex", "Male")
    with pytest.raises(rc.SpecError, match="no baseline"):
        d.baseline_predicts(1)


def test_split_is_stratified_and_reproducible():
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = np.r_[np.ones(50), np.zeros(150)]
    a, b = rc.Dataset(X, y).split(0.7, seed=3)
    assert a.n + b.n == 200 and a.y.sum() == 35
    a2, _ = rc.Dataset(X, y).split(0.7, seed=3)
    np.testing.assert_array_equal(a.X, a2.X)
    with pytest.raises(rc.SpecError, match="fraction"):
        rc.Dataset(X, y).split(1.5)


def test_weighted_subsets_normalize_weights():
    d = small(weights=[1, 1, 2, 2, 0, 2])
    w = d.positives.weights
    np.testing.assert_allclose(w, [0.2, 0.4, 0.4])
    assert d.positives.size == 5.0


def test_load_adult_decodes_categories():
    adult = rc.datasets.load_adult()
    assert adult.n == 48842 and adult.is_sparse and adult.d == 108
    assert set(adult.groups["sex"]) == {"Female", "Male"}
    assert (adult.groups["sex"] == "Male").sum() == 32650
    assert "White" in set(adult.groups["race"])
    assert adult.y.sum() == 11687
    row = adult.X[0].toarray().ravel()
    hot = {n for n, v in zip(adult.feature_names, row) if v == 1.0}
    assert {"workclass=State-gov", "education=Bachelors", "sex=Male"} <= hot


@pytest.mark.skipif(not DATA.exists(), reason="shared/data not present")
def test_load_csv_keeps_multiclass_labels():
    iris = rc.datasets.load_csv(DATA / "iris.csv")
    assert iris.n == 150 and iris.d == 4 and iris.classes.tolist() == [0, 1, 2]
    with pytest.raises(rc.DataError, match="no such file"):
        rc.datasets.load_csv(DATA / "nope.csv")


def test_empty_selection_raises_at_once_naming_the_values():
    d = small(baseline=[1, 1, 1, 1, 1, 1])
    with pytest.raises(rc.EmptySubsetError, match=r"data\[g=Nobody\] selects no examples.*"
                       r"'g' takes the values 'a', 'b'"):
        d.group("g", "Nobody")
    with pytest.raises(rc.EmptySubsetError, match=r"where\(mask\).*no examples of the 6"):
        d.where(np.zeros(6, bool))
    with pytest.raises(rc.EmptySubsetError, match="baseline-"):
        d.baseline_predicts(0)
    # an intersection may be empty (counts over it are zero); a rate over it is refused
    a = d.group("g", "a")
    assert (a & d.group("g", "b")).n == 0 and a.baseline_predicts(0).n == 0
    with pytest.raises(rc.EmptySubsetError, match="no examples"):
        rc.positive_rate(a & d.group("g", "b"))
    # re-applied to held-out data where the group is absent: empty, refused by the rate
    held_out = rc.Dataset(np.zeros((2, 2)), [0, 1], groups={"g": np.array(["b", "b"])})
    assert a.on(held_out).n == 0


def test_a_report_on_data_whose_group_values_differ_in_type_lists_them():
    # the training groups are floats, the test split's strings: the rebound subset is empty,
    # and the error names the values the test data has (it said only "check the group value")
    rng = np.random.default_rng(0)
    X, g = rng.normal(size=(300, 3)), np.where(rng.random(300) < 0.4, 1.0, 2.0)
    y = (X[:, 0] > 0).astype(int)
    D = rc.Dataset(X, y, groups={"g": g})
    test = rc.Dataset(X, y, groups={"g": g.astype(int).astype(str)}, name="test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = rc.Problem(minimize=rc.error_rate(D),
                            subject_to=[rc.positive_rate(D.group("g", 1.0)) >= 0.3],
                            model=rc.LinearModel(l2=1e-2)).solve()
    note = result.report(test).rows[1].note  # the row is not measured; the note says why
    assert re.search(r"no examples of the 300 in dataset 'test'.*'g' takes the values '1', "
                     r"'2'; the value asked for is 1.0, a float, and the values are strs", note)
    # a string asked of integer codes says so: '5' and 5 print alike in the selection's name
    coded = rc.Dataset(X, y, groups={"race": (np.arange(300) % 5 + 1)}, name="adf")
    with pytest.raises(rc.EmptySubsetError, match=r"adf\[race=5\].*takes the values 1, 2, 3, "
                                                  r"4, 5; the value asked for is '5', a str"):
        coded.group("race", "5")
