"""Datasets and subsets: the data every rate, threshold and uncertainty set is defined on.

A :class:`Dataset` holds features (dense or ``scipy.sparse``), optional labels (binary 0/1 or
multiclass codes), named group attributes, the predictions or scores of a deployed baseline model
and example weights. A :class:`Subset` is a cheap view of a dataset (an index array) that also
remembers *how* it was selected, so the same selection can be re-applied to held-out data
(``subset.on(test)``): a rate defined on ``train.group("sex", "Female")`` is reported on the women
of the test set.

Notation follows Goh et al., "Satisfying Real-world Goals with Dataset Constraints" (Table 1):
``D.positives`` is D^+, ``D.negatives`` is D^-, ``D.baseline_cell(1, 0)`` is D^{+-} (labelled
positive, baseline predicts negative), and so on.

The validation of each input column is :mod:`ratecons.data_columns`; the selection recipes
behind subsets are :mod:`ratecons.data_select`; Dask-backed inputs go through
:mod:`ratecons.dask_data`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .dask_types import is_dask
from .data_columns import (
    Features,
    as_features,
    check_magnitudes,
    column,
    feature_columns,
    is_pandas,
    named_columns,
    normalize_baseline,
    normalize_labels,
    numeric_array,
    refuse_missing,
)
from .data_select import All, Baseline, Group, Label, Mask, Selector
from .errors import DataError, EmptySubsetError, LabelError, SpecError
from .shapes import ExampleShape

__all__ = ["Dataset", "Subset", "as_subset", "Features"]


#: the options of :meth:`Dataset.from_parquet` and their defaults (those of ``from_pandas``)
PARQUET_OPTIONS: dict[str, Any] = {"label": None, "groups": (), "features": None,
                                   "baseline": None, "weights": None, "name": None,
                                   "baseline_threshold": None, "pos_label": None}


class Dataset(ExampleShape):
    """Examples with optional labels, named groups, baseline predictions and weights.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n, d)
        Features. Must be finite.
    y : array-like of shape (n,), optional
        Labels: binary as 0/1, -1/+1 or bool (normalized to 0/1), or integer class codes for
        multiclass problems (kept as they are).
    groups : mapping of str to array-like of shape (n,), or DataFrame, optional
        Named group attributes (e.g. ``{"sex": [...], "race": [...]}``, or
        ``df[["sex", "race"]]``: one attribute per column) used by :meth:`group`. Values may
        be strings or numbers.
    baseline : array-like of shape (n,), optional
        Predictions (binary) or scores (positive means > 0, or > ``baseline_threshold``) of a
        deployed model, used by churn, win and loss rates and by :meth:`baseline_cell`.
        Values in [0, 1] that are not 0/1 (probabilities) need ``baseline_threshold``.
    weights : array-like of shape (n,), optional
        Nonnegative example weights; every rate becomes a weighted average.
    feature_names : sequence of str, optional
        Default: the column names when ``X`` is a DataFrame.
    name : str, optional
        Used in reports.
    baseline_threshold : float, optional
        The deployed model predicts positive where its score exceeds this (default 0); give
        0.5 for probabilities.
    pos_label : optional
        The label value of the positive class: labels become 1 where ``y == pos_label`` and 0
        elsewhere (any other value, so also one class against the rest). Default: see Notes.

    Notes
    -----
    Labels given as strings are encoded by their sorted values (two values: the larger one in
    sort order is the positive class, 1, as scikit-learn's ``classes_[1]``; ``"bad"`` /
    ``"good"`` makes ``"good"`` positive): pass ``pos_label`` to choose.
    ``label_values`` holds the original value of each code.
    ``X`` may be a DataFrame of numeric and boolean columns (pandas nullable types included);
    :meth:`from_pandas` also encodes string and categorical columns. Missing values
    (NaN, pandas NA) are refused, naming the rows.
    Magnitudes above 1e150 are refused (they overflow when squared); columns above 1e6 get a
    :class:`~ratecons.errors.DataWarning` advising to standardize.
    """

    def __init__(
        self,
        X: Any,
        y: Any = None,
        groups: Mapping[str, Any] | None = None,
        baseline: Any = None,
        weights: Any = None,
        feature_names: Sequence[str] | None = None,
        name: str | None = None,
        baseline_threshold: float | None = None,
        pos_label: Any = None,
    ) -> None:
        peak = None
        groups = named_columns(groups, "groups")
        if any(is_dask(v) for v in (X, y, baseline, weights, *groups.values())):
            from .dask_data import dask_inputs  # features stay in Dask (ratecons.dask_data)

            given = dask_inputs(X, y, groups, baseline, weights, feature_names)
            X, y, groups, baseline, weights = (given.X, given.y, given.groups, given.baseline,
                                               given.weights)
            feature_names, peak = given.feature_names, given.peak
        if feature_names is None and is_pandas(X) and X.ndim == 2:
            feature_names = [str(c) for c in X.columns]
        self.X: Features = X if is_dask(X) else as_features(X)
        n = self.X.shape[0]
        if n == 0:
            raise EmptySubsetError("X has no rows: a Dataset needs at least one example.")
        if self.X.shape[1] == 0:
            raise DataError(f"X has {n} rows but no columns: a Dataset needs at least one "
                            "feature.")
        self.y: np.ndarray | None
        self.is_binary: bool
        #: original label values by code, when the labels were strings (None otherwise)
        self.label_values: np.ndarray | None = None
        if y is None:
            self.y, self.is_binary = None, False
        else:
            self.y, self.is_binary, self.label_values = normalize_labels(y, n, pos_label)
        self.groups: dict[str, np.ndarray] = {}
        for key, values in groups.items():
            arr = column(values, f"group {key!r}")
            if arr.ndim != 1 or arr.shape[0] != n:
                raise DataError(
                    f"group {key!r} must have one value per row of X ({n}); got shape {arr.shape}."
                )
            self.groups[str(key)] = (refuse_missing(arr, f"group {key!r}")
                                     if isinstance(arr, np.ndarray) else arr)
        self.baseline: np.ndarray | None = None
        self.baseline_prediction: np.ndarray | None = None
        if baseline is not None:
            self.baseline, self.baseline_prediction = normalize_baseline(
                baseline, n, baseline_threshold)
        if baseline is None and baseline_threshold is not None:
            raise DataError("baseline_threshold was given without a baseline: pass the deployed "
                            "model's scores as baseline= too.")
        self.baseline_threshold = baseline_threshold
        self.weights: np.ndarray | None = None
        if weights is not None:
            w = numeric_array(column(weights, "weights"), "weights")
            if w.ndim != 1 or w.shape[0] != n:
                raise DataError(f"weights must have shape ({n},); got {w.shape}.")
            if not np.all(np.isfinite(w)) or np.any(w < 0):
                raise DataError("weights must be finite and nonnegative.")
            if w.sum() <= 0:
                raise DataError("weights sum to zero: at least one example needs positive weight.")
            self.weights = w
        if feature_names is not None:
            feature_names = [str(f) for f in feature_names]
            if len(feature_names) != self.X.shape[1]:
                raise DataError(
                    f"feature_names has {len(feature_names)} names for {self.X.shape[1]} columns."
                )
            twice = sorted(f for f, k in Counter(feature_names).items() if k > 1)
            if twice:  # columns are matched by name at predict
                raise DataError(f"feature names must be unique; {twice[:5]} appear more than "
                                "once.")
        self.feature_names: list[str] | None = feature_names
        self.name: str = name or "data"
        check_magnitudes(self.X, feature_names, peak)

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        label: str | None = None,
        groups: Sequence[str] = (),
        categorical: str = "onehot",
        features: Sequence[str] | None = None,
        baseline: str | None = None,
        weights: str | None = None,
        name: str | None = None,
        baseline_threshold: float | None = None,
        pos_label: Any = None,
    ) -> Dataset:
        """A Dataset from the columns of a pandas DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
        label : str, optional
            The label column (binary, integer codes or strings; see :class:`Dataset`).
        groups : sequence of str
            Columns that become named group attributes (``D.group("sex", "Female")``).
        categorical : {"onehot", "error"}
            What to do with string, categorical and object feature columns: one 0/1 column
            per category (``pandas.get_dummies``, named ``"column=category"``), or refuse
            them.
        features : sequence of str, optional
            The feature columns. Default: every column but ``label``, ``groups``,
            ``baseline`` and ``weights`` (list a group column here to use it as a feature
            too).
        baseline, weights : str, optional
            Columns holding the deployed model's predictions or scores, and example weights.
        name : str, optional
        baseline_threshold : float, optional
        pos_label : optional
            The label value of the positive class (see :class:`Dataset`).

        Notes
        -----
        Missing values (NaN, pandas NA) anywhere in the used columns are refused, naming the
        column and rows: drop or fill them first. Pandas nullable types (``Int64``,
        ``boolean``, ``string``) are read as their NumPy counterparts. ``feature_names`` are
        the (encoded) column names.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("Dataset.from_pandas needs pandas (pip install pandas).") from exc
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"from_pandas takes a pandas DataFrame; got {type(df).__name__}.")
        if categorical not in ("onehot", "error"):
            raise SpecError(f"The 'categorical' parameter of from_pandas must be 'onehot' or "
                            f"'error'. Got {categorical!r} instead.")
        groups = [groups] if isinstance(groups, str) else list(groups)
        features = feature_columns("from_pandas", list(df.columns), label, groups, features,
                                    baseline, weights)
        X = df[features]
        nan_rows = np.flatnonzero(X.isna().to_numpy().any(axis=1))
        if nan_rows.size:
            bad = [str(c) for c in X.columns[X.isna().to_numpy().any(axis=0)]]
            raise DataError(f"from_pandas: feature column(s) {bad[:5]} have missing values in "
                            f"{nan_rows.size} rows (first: {nan_rows[:5].tolist()}); drop or "
                            "fill them first.")
        dates = [str(c) for c, dtype in X.dtypes.items()
                 if pd.api.types.is_datetime64_any_dtype(dtype)
                 or pd.api.types.is_timedelta64_dtype(dtype)]
        if dates:
            raise DataError(f"from_pandas: feature column(s) {dates[:5]} hold dates or "
                            "durations, which one-hot encoding would split into one feature per "
                            "distinct value: convert them to numbers first (e.g. "
                            "df[col].dt.year, or (df[col] - df[col].min()).dt.days) or leave "
                            "them out with features=[...].")
        text = [c for c, dtype in X.dtypes.items()
                if not (pd.api.types.is_numeric_dtype(dtype)
                        or pd.api.types.is_bool_dtype(dtype))]
        for c in text:  # a numeric column with a few tokens such as '?' is not a category
            parsed = pd.to_numeric(X[c], errors="coerce").notna().to_numpy()
            if parsed.mean() >= 0.5 and not parsed.all():
                rows = np.flatnonzero(~parsed)
                tokens = sorted({str(v) for v in X[c].to_numpy()[rows]})
                raise DataError(
                    f"from_pandas: column {str(c)!r} holds numbers but for {tokens[:5]} in "
                    f"{rows.size} rows (first: {rows[:5].tolist()}); one-hot encoding would make "
                    "every number a category. Mark those values missing and drop or fill them "
                    f"in pandas (pd.read_csv(path, na_values={tokens[:5]}), then dropna() or "
                    "fillna()), and build the Dataset with rc.Dataset.from_pandas.")
        if text and categorical == "error":
            raise DataError(f"from_pandas: feature column(s) {[str(c) for c in text[:5]]} are "
                            "not numeric; pass categorical='onehot' or encode them.")
        if text:
            X = pd.get_dummies(X, columns=text, prefix_sep="=", dtype=np.float64)
        return cls._from_frame(df, X, df[groups] if groups else None, {
            "label": label, "baseline": baseline, "weights": weights, "name": name,
            "baseline_threshold": baseline_threshold, "pos_label": pos_label})

    @classmethod
    def from_parquet(cls, path: Any, **columns: Any) -> Dataset:
        """A Dask-backed Dataset read lazily from Parquet files (needs ``ratecons[dask]``).

        Parameters
        ----------
        path : str or list of str
            A Parquet file, a directory of them or a glob, as ``dask.dataframe.read_parquet``
            takes it (local or remote file systems alike).
        **columns
            ``label``, ``groups``, ``features``, ``baseline``, ``weights``, ``name``,
            ``baseline_threshold`` and ``pos_label``, as in :meth:`from_pandas`; the feature
            columns must be numeric or boolean (no ``categorical`` encoding).

        Notes
        -----
        The features stay in Dask, one partition per Parquet row group or file, and are
        validated by one reduction over the partitions (NaN and infinite values are reported
        with their column, partition and row); the per-example columns are held in memory
        (:mod:`ratecons.dask_data`). See ``docs/cluster.md``.
        """
        from .dask_data import open_parquet

        unknown = sorted(set(columns) - set(PARQUET_OPTIONS))
        if unknown:
            raise SpecError(f"Dataset.from_parquet got unknown option(s) {unknown}; it takes "
                            f"{list(PARQUET_OPTIONS)} (as in from_pandas).")
        options = {**PARQUET_OPTIONS, **columns}
        frame = open_parquet(path)
        groups = options["groups"]
        groups = [groups] if isinstance(groups, str) else list(groups)
        features = feature_columns(f"from_parquet({path!r})", list(frame.columns),
                                   options["label"], groups, options["features"],
                                   options["baseline"], options["weights"])
        return cls._from_frame(frame, frame[features],
                               {str(g): frame[g] for g in groups} or None, options)

    @classmethod
    def _from_frame(cls, frame: Any, X: Any, groups: Any, options: dict[str, Any]) -> Dataset:
        """The Dataset of features ``X``, the group columns ``groups`` and the label, baseline
        and weight columns of ``frame`` named in ``options`` (keys of :data:`PARQUET_OPTIONS`)."""

        def column(key: str) -> Any:
            return None if options[key] is None else frame[options[key]]

        return cls(X, column("label"), groups=groups,
                   baseline=column("baseline"), weights=column("weights"), name=options["name"],
                   baseline_threshold=options["baseline_threshold"],
                   pos_label=options["pos_label"])

    # ------------------------------------------------------------------ basic facts
    @property
    def in_dask(self) -> bool:
        """Whether the features live in Dask (partitions on workers, never gathered)."""
        return is_dask(self.X)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def classes(self) -> np.ndarray:
        """Sorted distinct labels (requires labels)."""
        return np.unique(self.require_labels("classes"))

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        parts = [f"n={self.n}", f"d={self.d}"]
        if self.y is not None:
            parts.append("binary labels" if self.is_binary else f"{self.classes.size} classes")
        if self.groups:
            parts.append("groups=" + ",".join(self.groups))
        if self.baseline is not None:
            parts.append("baseline")
        if self.weights is not None:
            parts.append("weighted")
        if self.is_sparse:
            parts.append("sparse")
        return f"Dataset({self.name!r}, {', '.join(parts)})"

    def require_labels(self, what: str, binary: bool = False) -> np.ndarray:
        """Return the labels, raising a clear error if they are missing (or not binary)."""
        if self.y is None:
            raise LabelError(
                f"{what} needs labels, but dataset {self.name!r} has none. Pass y= when building "
                "the Dataset, or use a rate that needs no labels (e.g. positive_rate, churn_rate)."
            )
        if binary and not self.is_binary:
            raise LabelError(
                f"{what} needs binary labels (0/1, -1/+1 or bool), but dataset {self.name!r} has "
                f"classes {self.classes.tolist()[:10]}. Binarize them first: "
                "Dataset(..., pos_label=k) makes class k positive and the others negative."
            )
        return self.y

    def require_baseline(self, what: str) -> np.ndarray:
        """Return the 0/1 baseline predictions, raising a clear error if there are none."""
        if self.baseline_prediction is None:
            raise SpecError(
                f"{what} compares with a deployed model, but dataset {self.name!r} has no "
                "baseline. Pass baseline= (its predictions or scores) when building the Dataset."
            )
        return self.baseline_prediction

    # ------------------------------------------------------------------ subsets
    @property
    def all(self) -> Subset:
        """All examples, as a subset."""
        return Subset._build(self, All())

    @property
    def positives(self) -> Subset:
        """D^+: examples labelled positive (binary labels)."""
        return Subset._build(self, Label(1))

    @property
    def negatives(self) -> Subset:
        """D^-: examples labelled negative (binary labels)."""
        return Subset._build(self, Label(0))

    def label(self, value: Any) -> Subset:
        """Examples whose label equals ``value`` (binary or multiclass): a code (0/1, or
        0..K-1), or one of the original labels when they were strings (``label_values``)."""
        return Subset._build(self, Label(self._label_code(value)))

    def _label_code(self, value: Any) -> int:
        """The code of the label ``value`` (:meth:`label`)."""
        if self.label_values is not None:
            hits = np.flatnonzero(self.label_values.astype(str) == str(value))
            if hits.size:
                return int(hits[0])
        if (isinstance(value, (int, float, np.integer, np.floating))
                and not isinstance(value, bool) and float(value).is_integer()):
            return int(value)
        known = (self.label_values.tolist() if self.label_values is not None
                 else np.unique(self.y).tolist() if self.y is not None else [])
        raise DataError(f"dataset {self.name!r} has no label {value!r}; its labels are "
                        f"{known[:10]}.")

    def group(self, name: str, value: Any) -> Subset:
        """Examples whose group attribute ``name`` equals ``value``."""
        return Subset._build(self, Group(str(name), value))

    def where(self, mask: np.ndarray | Callable[[Dataset], np.ndarray], name: str | None = None):
        """Examples selected by a boolean mask, or by a callable ``mask(dataset)``.

        A callable can be re-applied to held-out data (reports on test sets); a fixed array
        cannot.
        """
        return Subset._build(self, Mask(mask, name))

    def baseline_cell(self, label: int, prediction: int) -> Subset:
        """D^{ab} of Table 1: label ``a`` and baseline prediction ``b`` (each 0 or 1).

        ``baseline_cell(1, 0)`` is D^{+-}: positive examples the deployed model predicts negative.
        """
        return Subset._build(self, Label(int(label)) & Baseline(int(prediction)))

    def baseline_predicts(self, prediction: int) -> Subset:
        """Examples on which the baseline predicts ``prediction`` (0 or 1); needs no labels."""
        return Subset._build(self, Baseline(int(prediction)))

    # ------------------------------------------------------------------ derived datasets
    def take(self, index: np.ndarray, name: str | None = None,
             features: Features | None = None) -> Dataset:
        """A new Dataset holding the rows ``index`` (all attributes sliced alike);
        ``features``: those rows' features when the caller holds them already (a sample
        gathered from Dask, :mod:`ratecons.sample_start`)."""
        index = _row_index(index, self.n, self.name)
        out = Dataset(
            self.X[index] if features is None else features,
            None if self.y is None else self.y[index],
            {k: v[index] for k, v in self.groups.items()},
            None if self.baseline is None else self.baseline[index],
            None if self.weights is None else self.weights[index],
            self.feature_names,
            name or self.name,
            self.baseline_threshold if self.baseline is not None else None,
        )
        out.label_values = self.label_values
        return out

    def split(self, fraction: float = 0.7, seed: int | None = 0) -> tuple[Dataset, Dataset]:
        """Random split into (first, second) with ``fraction`` of the rows in the first.

        Stratified by label when the labels are discrete, so both parts keep the class balance.
        """
        if not 0.0 < fraction < 1.0:
            raise SpecError(
                f"The 'fraction' parameter of split must be in (0, 1). Got {fraction!r} instead."
            )
        if seed is not None and (isinstance(seed, bool)
                                 or not isinstance(seed, (int, np.integer))):
            raise SpecError(f"The 'seed' parameter of split must be an int or None. Got "
                            f"{seed!r} instead.")
        rng = np.random.default_rng(seed)
        if self.y is None:
            order = rng.permutation(self.n)
            cut = int(round(fraction * self.n))
            first, second = order[:cut], order[cut:]
        else:
            first_parts, second_parts = [], []
            for value in np.unique(self.y):
                idx = rng.permutation(np.flatnonzero(self.y == value))
                cut = int(round(fraction * idx.size))
                first_parts.append(idx[:cut])
                second_parts.append(idx[cut:])
            first = np.sort(np.concatenate(first_parts))
            second = np.sort(np.concatenate(second_parts))
        if first.size == 0 or second.size == 0:
            raise EmptySubsetError(
                f"split({fraction}) of {self.n} examples leaves one part empty; use more data "
                "or a fraction nearer 0.5."
            )
        return self.take(first, f"{self.name}[train]"), self.take(second, f"{self.name}[test]")

    def with_baseline(self, baseline: Any, baseline_threshold: float | None = None) -> Dataset:
        """The same data with (new) baseline predictions or scores (see ``Dataset``)."""
        out = self.take(np.arange(self.n), self.name)
        out.baseline, out.baseline_prediction = normalize_baseline(baseline, self.n,
                                                                    baseline_threshold)
        out.baseline_threshold = baseline_threshold
        return out


class Subset:
    """A view of some examples of a :class:`Dataset`: an index array plus its selection recipe.

    Build subsets from a dataset (``D.positives``, ``D.group("sex", "Male")``, ...) and combine
    them with ``&`` (intersection) and ``|`` (union). Every rate over a subset is an average, so a
    subset must not be empty: a selection from a Dataset that picks no row raises
    :class:`~ratecons.errors.EmptySubsetError` at once; an intersection may be empty and is
    checked when a rate is built on it.
    """

    def __init__(self, data: Dataset, index: np.ndarray, selector: Selector) -> None:
        self.data = data
        self.index = np.asarray(index, dtype=np.int64)
        self.selector = selector
        self._key = (id(data), hashlib.sha1(self.index.tobytes()).hexdigest())

    @classmethod
    def _build(cls, data: Dataset, selector: Selector, empty_ok: bool = False) -> Subset:
        """The rows of ``data`` that ``selector`` picks. A selection made from a Dataset must
        pick at least one row (``empty_ok=False``: EmptySubsetError at once, naming it);
        selections inside a subset (its positives, a baseline cell) and re-applications to
        other data may be empty and are checked by the rate that averages over them."""
        index = np.flatnonzero(selector.mask(data))
        if index.size == 0 and not empty_ok:
            raise EmptySubsetError(
                f"{data.name}[{selector.describe()}] selects no examples of the {data.n} in "
                f"dataset {data.name!r}. Check the group value, label, baseline or mask "
                f"({selector.hint(data)}).")
        return cls(data, index, selector)

    def _within(self, selector: Selector) -> Subset:
        """This subset intersected with a selection on its dataset (possibly empty)."""
        return self & Subset._build(self.data, selector, empty_ok=True)

    # -- facts
    @property
    def n(self) -> int:
        return int(self.index.size)

    def __len__(self) -> int:
        return self.n

    @property
    def name(self) -> str:
        return f"{self.data.name}[{self.selector.describe()}]"

    @property
    def key(self) -> tuple[int, str]:
        """Identity of (dataset, rows): rates over equal keys merge in a linear expression."""
        return self._key

    @property
    def X(self) -> Features:
        return self.data.X[self.index]

    @property
    def y(self) -> np.ndarray | None:
        return None if self.data.y is None else self.data.y[self.index]

    @property
    def weights(self) -> np.ndarray:
        """Example weights normalized to sum to 1 (uniform 1/|D| when the data are unweighted)."""
        if self.data.weights is None:
            return np.full(self.n, 1.0 / max(self.n, 1))
        w = self.data.weights[self.index]
        total = w.sum()
        if total <= 0:
            raise EmptySubsetError(f"subset {self.name} has zero total weight.")
        return w / total

    @property
    def size(self) -> float:
        """|D|: number of examples, or total weight for weighted data (used by count metrics)."""
        if self.data.weights is None:
            return float(self.n)
        return float(self.data.weights[self.index].sum())

    def require_nonempty(self, what: str) -> Subset:
        """This subset, refused (naming ``what`` averages over it) when it has no examples or,
        on weighted data, when all of its examples have weight 0: the average is undefined."""
        if self.n == 0:
            raise EmptySubsetError(
                f"{what} is an average over {self.name}, which has no examples of the "
                f"{self.data.n} in dataset {self.data.name!r}. Check the group value, label or "
                f"baseline that selects it ({self.selector.hint(self.data)})."
            )
        if not self.size > 0:  # (weighted data: |D| is the total weight)
            raise EmptySubsetError(
                f"{what} is an average over {self.name}, whose {self.n} examples all have "
                f"weight 0 in dataset {self.data.name!r}: the average is undefined. Give "
                "some of them a positive weight, or drop the term."
            )
        return self

    # -- algebra
    def _check_same(self, other: Subset, op: str) -> None:
        if not isinstance(other, Subset):
            raise SpecError(f"cannot {op} a Subset with {type(other).__name__}.")
        if other.data is not self.data:
            raise SpecError(
                f"cannot {op} subsets of different datasets ({self.data.name!r} and "
                f"{other.data.name!r})."
            )

    def __and__(self, other: Subset) -> Subset:
        self._check_same(other, "intersect")
        index = np.intersect1d(self.index, other.index)
        return Subset(self.data, index, self.selector & other.selector)

    def __or__(self, other: Subset) -> Subset:
        self._check_same(other, "unite")
        index = np.union1d(self.index, other.index)
        return Subset(self.data, index, self.selector | other.selector)

    @property
    def positives(self) -> Subset:
        return self._within(Label(1))

    @property
    def negatives(self) -> Subset:
        return self._within(Label(0))

    def group(self, name: str, value: Any) -> Subset:
        return self & self.data.group(name, value)

    def baseline_cell(self, label: int, prediction: int) -> Subset:
        return self._within(Label(int(label)) & Baseline(int(prediction)))

    def baseline_predicts(self, prediction: int) -> Subset:
        return self._within(Baseline(int(prediction)))

    def label(self, value: int) -> Subset:
        return self._within(Label(int(value)))

    def on(self, data: Dataset) -> Subset:
        """The same selection applied to another dataset (e.g. a held-out split); it may be
        empty there (a rate over it then raises EmptySubsetError)."""
        if not isinstance(data, Dataset):
            raise SpecError(f"Subset.on needs a Dataset (e.g. the held-out split); got "
                            f"{type(data).__name__}: build rc.Dataset(X, y, groups=...) from it "
                            "first.")
        return Subset._build(data, self.selector, empty_ok=True)

    def __repr__(self) -> str:
        return f"Subset({self.name}, n={self.n})"


def _row_index(index: Any, n: int, name: str) -> np.ndarray:
    """``index`` as rows of a dataset of ``n`` rows: integers in [-n, n) or a boolean mask of
    length n, at least one row."""
    index = np.asarray(index)
    if index.dtype == bool:
        if index.shape != (n,):
            raise DataError(f"take() with a boolean mask needs one entry per row of {name!r} "
                            f"({n}); got shape {index.shape}.")
        index = np.flatnonzero(index)
    elif index.size and not np.issubdtype(index.dtype, np.integer):
        raise DataError(f"take() needs integer row positions or a boolean mask; got dtype "
                        f"{index.dtype}.")
    if index.ndim != 1 or index.size == 0:
        raise EmptySubsetError(f"take() of {name!r} needs a 1-D index of at least one row; got "
                               f"shape {index.shape}.")
    outside = index[(index < -n) | (index >= n)]
    if outside.size:
        raise DataError(f"take() row {int(outside[0])} is outside {name!r}, which has {n} rows "
                        f"(positions 0 to {n - 1}).")
    return index


def as_subset(data: Dataset | Subset, what: str = "a rate") -> Subset:
    """Accept a Dataset (meaning all its examples) or a Subset; reject anything else."""
    if isinstance(data, Subset):
        return data
    if isinstance(data, Dataset):
        return data.all
    raise SpecError(
        f"{what} is defined over a Dataset or Subset; got {type(data).__name__}. Wrap arrays "
        "with rc.Dataset(X, y, ...)."
    )
