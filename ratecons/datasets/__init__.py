"""Datasets: the embedded Adult data and a loader for CSV files.

The tidy UCI CSV layout (as in the project's shared data folder): a header row with the
feature names and a ``label`` column, one row per instance, numeric features, integer class
codes 0..k-1. With pandas installed, :func:`load_csv` also reads string columns (features are
one-hot encoded, string labels encoded as :class:`~ratecons.Dataset` does).
In Adult the categorical columns hold 1-based codes of the category strings in alphabetical
order, ``?`` (missing) included; :func:`load_adult` decodes them to names and one-hot encodes
them.
"""

from __future__ import annotations

import gzip
import io
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import Dataset
from ..errors import DataError

__all__ = ["load_adult", "load_csv", "read_csv_table", "ADULT_CATEGORIES"]

#: category names of Adult's categorical columns (codes are 1-based positions in sorted order)
ADULT_CATEGORIES: dict[str, list[str]] = {
    name: sorted(values)
    for name, values in {
        "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                      "State-gov", "Without-pay", "Never-worked", "?"],
        "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                      "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
                      "Doctorate", "5th-6th", "Preschool"],
        "marital_status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated",
                           "Widowed", "Married-spouse-absent", "Married-AF-spouse"],
        "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales",
                       "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
                       "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
                       "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces",
                       "?"],
        "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                         "Unmarried"],
        "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
        "sex": ["Female", "Male"],
        "native_country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada",
                           "Germany", "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece",
                           "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy",
                           "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland",
                           "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti",
                           "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland",
                           "Thailand", "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru",
                           "Hong", "Holand-Netherlands", "?"],
    }.items()
}
ADULT_NUMERIC = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
                 "hours_per_week")


def read_csv_table(source: str | Path | io.TextIOBase) -> tuple[list[str], np.ndarray]:
    """Read a numeric CSV with a header row; return (column names, float matrix)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"no such file: {path}")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            return read_csv_table(fh)
    header = source.readline().strip().split(",")
    if not header or header == [""]:
        raise DataError("the CSV file is empty: expected a header row.")
    try:
        table = np.loadtxt(source, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise DataError(f"the CSV has non-numeric or ragged rows: {exc}") from None
    if table.shape[1] != len(header):
        raise DataError(f"the CSV header names {len(header)} columns, rows have {table.shape[1]}.")
    return header, table


def load_csv(path: str | Path, label: str = "label", name: str | None = None,
             groups: list[str] | tuple[str, ...] = (), pos_label: Any = None) -> Dataset:
    """Load a CSV with a header row and a ``label`` column.

    Numeric labels are kept as they are in the file (binary 0/1 or multiclass codes 0..k-1),
    string labels are encoded by their sorted values; features are the other columns (but
    ``groups``, which become group attributes), as floats, string columns one-hot encoded.
    ``pos_label`` makes the labels binary: 1 where the label equals it, 0 elsewhere (a class
    against the rest on multiclass files; see :class:`~ratecons.Dataset`).
    With pandas installed the file is read by ``pandas.read_csv`` and encoded by
    :meth:`Dataset.from_pandas`; without it, numeric files only are read.
    """
    name = name or Path(path).name.split(".")[0]
    if not Path(path).exists():
        raise DataError(f"no such file: {path}")
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        df = pd.read_csv(path)
        if label not in df.columns:
            raise DataError(f"{path}: no {label!r} column among {[str(c) for c in df.columns]}.")
        return Dataset.from_pandas(df, label=label, groups=groups, name=name,
                                   pos_label=pos_label)
    if groups:
        raise ImportError("load_csv(groups=...) needs pandas (pip install pandas).")
    try:
        header, table = read_csv_table(path)
    except DataError as exc:
        raise DataError(f"{exc} Install pandas (pip install pandas) to read CSV files with "
                        "string columns.") from None
    if label not in header:
        raise DataError(f"{path}: no {label!r} column among {header}.")
    j = header.index(label)
    keep = [i for i in range(len(header)) if i != j]
    return Dataset(table[:, keep], y=table[:, j].astype(np.int64),
                   feature_names=[header[i] for i in keep], name=name, pos_label=pos_label)


def load_adult(standardize: bool = True) -> Dataset:
    """The UCI Adult census data (48,842 people), shipped with the package.

    Returns a sparse Dataset: the six numeric columns (z-scored when ``standardize``) and
    one-hot columns for every category of the eight categorical ones (108 columns in all,
    ``?`` kept as its own category); labels 1 for income > 50K; groups ``sex``
    ("Female"/"Male"), ``race`` (by name) and ``age`` (years).
    """
    ref = resources.files(__name__).joinpath("data/adult.csv.gz")
    with ref.open("rb") as raw, gzip.open(raw, "rt") as fh:
        header, table = read_csv_table(fh)
    col = {name: table[:, i] for i, name in enumerate(header)}
    blocks, names = [], []
    for name in ADULT_NUMERIC:
        x = col[name]
        if standardize:
            x = (x - x.mean()) / x.std()
        blocks.append(sp.csr_matrix(x.reshape(-1, 1)))
        names.append(name)
    groups: dict[str, np.ndarray] = {"age": col["age"].astype(np.int64)}
    n = table.shape[0]
    for name, categories in ADULT_CATEGORIES.items():
        codes = col[name].astype(np.int64) - 1
        if codes.min() < 0 or codes.max() >= len(categories):
            raise DataError(f"adult: column {name!r} has codes outside 1..{len(categories)}.")
        blocks.append(sp.csr_matrix((np.ones(n), (np.arange(n), codes)),
                                    shape=(n, len(categories))))
        names += [f"{name}={c}" for c in categories]
        if name in ("sex", "race"):
            groups[name] = np.asarray(categories, dtype=object)[codes]
    X = sp.hstack(blocks, format="csr")
    return Dataset(X, y=col["label"].astype(np.int64), groups=groups, feature_names=names,
                   name="adult")
