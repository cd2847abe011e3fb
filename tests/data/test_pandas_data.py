"""Datasets from pandas: DataFrame columns kept as feature names, ``groups=df[[...]]``,
nullable integers with and without NA, string categories one-hot encoded by
``Dataset.from_pandas``, ``load_csv`` on a CSV with string columns (with pandas, and the
numeric reader without it)."""

import sys

import numpy as np
import pytest

import ratecons as rc

pd = pytest.importorskip("pandas")


@pytest.fixture
def frame():
    return pd.DataFrame({
        "age": pd.array([25, 40, 31, 58, 22, 47], dtype="Int64"),
        "hours": [40.0, 50.0, 38.5, 20.0, 45.0, 60.0],
        "job": ["clerk", "engineer", "clerk", "farmer", "engineer", "clerk"],
        "member": pd.array([True, False, True, True, False, False], dtype="boolean"),
        "sex": ["F", "M", "F", "M", "F", "M"],
        "race": pd.Categorical(["a", "b", "a", "a", "b", "b"]),
        "income": pd.array([0, 1, 0, 1, 0, 1], dtype="Int64"),
    })


def test_from_pandas_encodes_strings_and_keeps_names(frame):
    data = rc.Dataset.from_pandas(frame, label="income", groups=["sex", "race"],
                                  categorical="onehot", name="people")
    assert data.feature_names == ["age", "hours", "member", "job=clerk", "job=engineer",
                                  "job=farmer"]
    np.testing.assert_array_equal(data.X[:, 0], [25, 40, 31, 58, 22, 47])
    np.testing.assert_array_equal(data.X[:, 3], [1, 0, 1, 0, 0, 1])
    assert data.is_binary and data.y.tolist() == [0, 1, 0, 1, 0, 1]
    assert set(data.groups) == {"sex", "race"}
    assert data.group("race", "b").n == 3 and data.group("sex", "F").index.tolist() == [0, 2, 4]
    # a group column becomes a feature too when listed explicitly
    both = rc.Dataset.from_pandas(frame, label="income", groups=["sex"],
                                  features=["hours", "sex"])
    assert both.feature_names == ["hours", "sex=F", "sex=M"] and "sex" in both.groups


def test_from_pandas_refusals(frame):
    with pytest.raises(rc.DataError, match=r"\['job', 'sex', 'race'\] are not numeric"):
        rc.Dataset.from_pandas(frame, label="income", categorical="error")
    with pytest.raises(rc.DataError, match=r"no column\(s\) \['gender'\]"):
        rc.Dataset.from_pandas(frame, label="income", groups=["gender"])
    with pytest.raises(rc.SpecError, match="'onehot' or 'error'"):
        rc.Dataset.from_pandas(frame, label="income", categorical="ordinal")
    frame.loc[2, "age"] = pd.NA
    with pytest.raises(rc.DataError, match=r"\['age'\] have missing values in 1 rows"):
        rc.Dataset.from_pandas(frame, label="income", groups=["sex"])
    # dates and durations were one-hot encoded, one feature per distinct value
    dated = frame.assign(hired=pd.date_range("2020-01-01", periods=6),
                         tenure=pd.to_timedelta(range(6), unit="D")).drop(columns="age")
    with pytest.raises(rc.DataError, match=r"\['hired', 'tenure'\] hold dates or durations"):
        rc.Dataset.from_pandas(dated, label="income", groups=["sex"])
    assert rc.Dataset.from_pandas(dated, label="income", groups=["sex"],
                                  features=["hours"]).feature_names == ["hours"]


def test_constructor_takes_frames_and_nullable_columns(frame):
    X = frame[["age", "hours", "member"]]
    data = rc.Dataset(X, frame["income"], groups=frame[["sex", "race"]])
    assert data.feature_names == ["age", "hours", "member"]
    assert set(data.groups) == {"sex", "race"} and data.is_binary
    assert rc.Dataset(X, frame["income"], groups=frame["sex"]).groups["sex"].tolist()[:2] == [
        "F", "M"]
    labels = frame["income"].copy()
    labels[1] = pd.NA
    with pytest.raises(rc.DataError, match=r"y has 1 missing values .*first rows: \[1\]"):
        rc.Dataset(X, labels)
    ages = X.copy()
    ages.loc[4, "age"] = pd.NA
    with pytest.raises(rc.DataError, match=r"NaN or infinite values in 1 rows \(first: \[4\]\)"):
        rc.Dataset(ages, frame["income"])
    with pytest.raises(rc.DataError, match=r"non-numeric columns \['job'\].*from_pandas"):
        rc.Dataset(frame[["age", "job"]], frame["income"])
    sex = frame["sex"].copy()
    sex[0] = None
    with pytest.raises(rc.DataError, match="group 'sex' has 1 missing values"):
        rc.Dataset(X, frame["income"], groups={"sex": sex})
    with pytest.raises(rc.DataError, match="must be a mapping"):
        rc.Dataset(X, frame["income"], groups=["F", "M"])


CSV = """age,job,hours,sex,label
25,clerk,40,F,no
40,engineer,50,M,yes
31,clerk,38.5,F,no
58,farmer,20,M,yes
"""


def test_load_csv_reads_string_columns(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(CSV)
    data = rc.datasets.load_csv(path, groups=["sex"])
    assert data.name == "people" and data.n == 4
    assert data.feature_names == ["age", "hours", "job=clerk", "job=engineer", "job=farmer"]
    assert data.label_values.tolist() == ["no", "yes"] and data.y.tolist() == [0, 1, 0, 1]
    assert data.groups["sex"].tolist() == ["F", "M", "F", "M"]


def test_a_numeric_column_with_a_missing_value_token_is_not_one_hot_encoded(tmp_path):
    """UCI files mark missing values '?': the column read as strings and every number became
    a category ('b=2', 'b=6', 'b=?'); now refused naming the column, the token and the rows."""
    path = tmp_path / "uci.csv"
    path.write_text("a,b,job,label\n1,2,x,1\n3,?,y,0\n5,6,x,1\n7,8,y,0\n")
    with pytest.raises(rc.DataError, match=r"column 'b' holds numbers but for \['\?'\] in 1 "
                                           r"rows \(first: \[1\]\)"):
        rc.datasets.load_csv(path)
    frame = pd.read_csv(path, na_values=["?"]).dropna()
    assert rc.Dataset.from_pandas(frame, label="label").feature_names == ["a", "b", "job=x",
                                                                          "job=y"]


def test_load_csv_without_pandas_reads_numeric_files(tmp_path, monkeypatch):
    numeric = tmp_path / "numbers.csv"
    numeric.write_text("x0,x1,label\n1,2,0\n3,4,2\n5,6,1\n")
    with_pandas = rc.datasets.load_csv(numeric)
    monkeypatch.setitem(sys.modules, "pandas", None)
    without = rc.datasets.load_csv(numeric)
    np.testing.assert_array_equal(with_pandas.X, without.X)
    np.testing.assert_array_equal(with_pandas.y, without.y)
    assert with_pandas.feature_names == without.feature_names == ["x0", "x1"]
    text = tmp_path / "people.csv"
    text.write_text(CSV)
    with pytest.raises(rc.DataError, match="Install pandas"):
        rc.datasets.load_csv(text)
    with pytest.raises(ImportError, match="from_pandas needs pandas"):
        rc.Dataset.from_pandas(None)


def test_pos_label_chooses_the_positive_class(tmp_path):
    """Two string labels default to the larger in sort order ("good" over "bad", as
    scikit-learn's ``classes_[1]``); ``pos_label`` chooses, on arrays, frames and CSV files,
    and makes a multiclass column one class against the rest."""
    X = np.arange(12.0).reshape(6, 2)
    y = ["good", "bad", "good", "bad", "good", "good"]
    assert rc.Dataset(X, y).y.tolist() == [1, 0, 1, 0, 1, 1]
    bad = rc.Dataset(X, y, pos_label="bad")
    assert bad.is_binary and bad.y.tolist() == [0, 1, 0, 1, 0, 0]
    assert bad.label_values.tolist() == ["good", "bad"]
    assert bad.split(0.5, seed=0)[0].label_values.tolist() == ["good", "bad"]
    frame = pd.DataFrame({"x": X[:, 0], "risk": y})
    assert rc.Dataset.from_pandas(frame, label="risk", pos_label="bad").y.tolist() == bad.y.tolist()
    # integer codes: one class against the rest; 0/1 labels may be flipped
    three = rc.Dataset(X, [0, 1, 2, 0, 1, 2], pos_label=2)
    assert three.is_binary and three.y.tolist() == [0, 0, 1, 0, 0, 1]
    assert rc.Dataset(X, [0, 1, 0, 1, 1, 0], pos_label=0).y.tolist() == [1, 0, 1, 0, 0, 1]
    path = tmp_path / "wine.csv"
    path.write_text("x0,label\n1,3\n2,5\n3,3\n4,4\n")
    assert rc.datasets.load_csv(path, pos_label=5).y.tolist() == [0, 1, 0, 0]
    with pytest.raises(rc.LabelError, match=r"pos_label 'ok' is not among .*\['bad', 'good'\]"):
        rc.Dataset(X, y, pos_label="ok")
    with pytest.raises(rc.LabelError, match="pos_label 7 is not among"):
        rc.Dataset(X, [0, 1, 2, 0, 1, 2], pos_label=7)
    with pytest.raises(rc.LabelError, match="every label is pos_label"):
        rc.Dataset(X, ["a"] * 6, pos_label="a")
    with pytest.raises(rc.DataError, match="NaN"):
        rc.Dataset(X, [0.0, 1.0, np.nan, 0.0, 1.0, 0.0], pos_label=1.0)
