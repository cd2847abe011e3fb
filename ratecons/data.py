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
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .caller import user_stacklevel
from .errors import DataError, DataWarning, EmptySubsetError, LabelError, SpecError

__all__ = ["Dataset", "Subset", "as_subset", "Features"]

Features = np.ndarray | sp.csr_matrix

#: feature magnitudes above this overflow when squared in a solver (kernels, l2 terms): refused
OVERFLOW_MAGNITUDE = 1e150
#: columns with a largest magnitude above this are reported (solvers lose accuracy)
BADLY_SCALED_MAGNITUDE = 1e6


def _is_dask(values: Any) -> bool:
    """A Dask collection (recognized without importing dask)."""
    return hasattr(values, "__dask_graph__") and hasattr(values, "compute")


def _check_magnitudes(X: Features, feature_names: Sequence[str] | None,
                      peak: np.ndarray | None = None) -> None:
    """Refuse magnitudes that overflow; warn about badly scaled columns, naming them.
    ``peak``: the largest magnitude per column when already known (Dask features)."""
    if peak is None and sp.issparse(X):
        peak = np.asarray(abs(X).max(axis=0).todense()).ravel() if X.nnz else np.zeros(
            X.shape[1])
    elif peak is None:
        peak = np.abs(X).max(axis=0) if X.size else np.zeros(X.shape[1])

    def names(cols: np.ndarray) -> str:
        shown = [feature_names[c] if feature_names else str(c) for c in cols[:5]]
        return ", ".join(shown) + (", ..." if cols.size > 5 else "")

    huge = np.flatnonzero(peak > OVERFLOW_MAGNITUDE)
    if huge.size:
        raise DataError(
            f"X has values of magnitude up to {peak[huge].max():.3g} in column(s) "
            f"{names(huge)}: squaring them overflows in every solver. Rescale those columns "
            "(e.g. standardize, or take logarithms) before building a Dataset.")
    large = np.flatnonzero(peak > BADLY_SCALED_MAGNITUDE)
    if large.size:
        warnings.warn(
            f"X column(s) {names(large)} reach magnitudes up to {peak[large].max():.3g}: "
            "conic and interior-point solvers lose accuracy on badly scaled data. "
            "Standardize the features (z-scores) first.", DataWarning, stacklevel=user_stacklevel())


def _is_pandas(values: Any) -> bool:
    """A pandas Series or DataFrame (recognized without importing pandas)."""
    return hasattr(values, "isna") and hasattr(values, "to_numpy") and hasattr(values, "dtypes")


def _pandas_features(X: Any) -> np.ndarray:
    """A float matrix from a DataFrame: numeric and boolean columns (nullable ones included;
    a missing value becomes NaN, which the finite check then reports by row). Other columns
    are refused by name."""
    import pandas as pd

    frame = X.to_frame() if X.ndim == 1 else X
    other = [str(c) for c, dtype in frame.dtypes.items()
             if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))]
    if other:
        raise DataError(
            f"X has non-numeric columns {other[:5]}{' ...' if len(other) > 5 else ''}: "
            "encode them first, e.g. rc.Dataset.from_pandas(df, label=..., "
            "categorical='onehot').")
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


def _column(values: Any, what: str) -> np.ndarray:
    """A 1-D array from an array-like or a pandas Series. Pandas missing values (NA, or NaN in
    a nullable column) are refused naming the rows; nullable integer, float and boolean
    columns become NumPy integers, floats and booleans."""
    if not _is_pandas(values):
        return np.asarray(values)
    missing = np.flatnonzero(np.asarray(values.isna()).reshape(len(values), -1).any(axis=1))
    if missing.size:
        raise DataError(
            f"{what} has {missing.size} missing values (pandas NA or NaN; first rows: "
            f"{missing[:5].tolist()}); drop those rows or fill them (e.g. .fillna(...)) "
            "before building a Dataset.")
    numpy_dtype = getattr(values.dtype, "numpy_dtype", None)  # nullable Int64, Float64, boolean
    return values.to_numpy(dtype=numpy_dtype) if numpy_dtype is not None else values.to_numpy()


def _named_columns(values: Any, what: str) -> dict[str, Any]:
    """Named group attributes from a mapping, a DataFrame (one attribute per column) or a
    named Series."""
    if values is None:
        return {}
    if _is_pandas(values) or _is_dask(values):
        if values.ndim == 1:
            if values.name is None:
                raise DataError(f"{what} is an unnamed Series: pass {{name: series}} or give "
                                "the Series a name.")
            return {str(values.name): values}
        return {str(c): values[c] for c in values.columns}
    if not isinstance(values, Mapping):
        raise DataError(f"{what} must be a mapping {{name: values}} or a DataFrame; got "
                        f"{type(values).__name__}.")
    return dict(values)


def _feature_columns(what: str, columns: list[Any], label: str | None, groups: list[str],
                     features: Sequence[str] | None, baseline: str | None,
                     weights: str | None) -> list[Any]:
    """The feature columns of a table: ``features`` checked, or every column that is not the
    label, a group, the baseline or the weights."""
    special = [c for c in (label, baseline, weights) if c is not None]
    missing = [c for c in [*special, *groups, *(features or [])] if c not in columns]
    if missing:
        raise DataError(f"{what}: no column(s) {missing} among {[str(c) for c in columns][:20]}.")
    if features is None:
        features = [c for c in columns if c not in special and c not in groups]
    if not features:
        raise DataError(f"{what}: no feature columns are left.")
    return list(features)


def _as_features(X: Any) -> Features:
    """Validate a feature matrix: 2-D, numeric, finite; sparse inputs become CSR float64."""
    if _is_pandas(X):
        X = _pandas_features(X)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.ndim != 2:
            raise DataError(f"X must be 2-dimensional; got a sparse matrix of shape {X.shape}.")
        if not np.all(np.isfinite(X.data)):
            bad = int(np.sum(~np.isfinite(X.data)))
            raise DataError(
                f"X has {bad} NaN or infinite entries; impute or drop them before building "
                "a Dataset."
            )
        return X
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"X must be a numeric array or scipy.sparse matrix: {exc}") from None
    if X.ndim != 2:
        raise DataError(
            f"X must be 2-dimensional (n_examples, n_features); got shape {X.shape}. "
            "Use X.reshape(-1, 1) for a single feature."
        )
    if not np.all(np.isfinite(X)):
        rows = np.unique(np.nonzero(~np.isfinite(X))[0])
        raise DataError(
            f"X has NaN or infinite values in {rows.size} rows (first: {rows[:5].tolist()}); "
            "impute or drop them before building a Dataset."
        )
    return X


def _binary_codes(values: np.ndarray, what: str) -> np.ndarray | None:
    """Return 0/1 codes if ``values`` are binary in one of the accepted encodings, else None.

    Accepted: {0, 1}, {-1, +1} and booleans (a single value of any of them counts as binary).
    """
    if values.dtype == bool:
        return values.astype(np.int8)
    if not np.issubdtype(values.dtype, np.number):
        return None
    if not np.all(np.isfinite(values)):
        raise DataError(f"{what} contain NaN or infinite values.")
    uniq = np.unique(values)
    if np.all(np.isin(uniq, (0, 1))):
        return values.astype(np.int8)
    if np.all(np.isin(uniq, (-1, 1))):
        return (values > 0).astype(np.int8)
    return None


def _normalize_labels(y: Any, n: int) -> tuple[np.ndarray, bool, np.ndarray | None]:
    """Normalize labels once: binary encodings become 0/1, other integer codes stay as they are,
    and string (or other non-numeric) labels are encoded by their sorted values: two values
    become 0/1 (the larger one, in sort order, positive, as scikit-learn's ``classes_[1]``),
    more become codes 0..K-1. Returns (codes, is_binary, original values by code or None)."""
    y = _column(y, "y")
    if y.ndim != 1 or y.shape[0] != n:
        raise DataError(f"y must be a 1-D array with one label per row of X ({n}); got {y.shape}.")
    codes = _binary_codes(y, "labels")
    if codes is not None:
        return codes, True, None
    if y.dtype.kind in "USO":
        try:
            values, inverse = np.unique(y.astype(str) if y.dtype.kind == "O" else y,
                                        return_inverse=True)
        except TypeError as exc:
            raise LabelError(f"labels cannot be sorted into classes: {exc}") from None
        if values.size < 2:
            raise LabelError(
                f"labels have one value only ({values[0]!r}): a classifier needs two classes.")
        return inverse.astype(np.int64 if values.size > 2 else np.int8), values.size == 2, values
    if np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)):
            raise DataError("labels contain NaN or infinite values.")
        if not np.all(y == np.round(y)):
            raise LabelError(
                "labels must be binary (0/1, -1/+1, bool) or integer class codes; got "
                "non-integer floats."
            )
        y = y.astype(np.int64)
    elif not np.issubdtype(y.dtype, np.integer):
        raise LabelError(
            f"labels must be binary (0/1, -1/+1, bool), integer class codes or strings; got "
            f"dtype {y.dtype}."
        )
    return y.astype(np.int64), False, None


def _normalize_baseline(baseline: Any, n: int, threshold: float | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Return (raw baseline values, 0/1 baseline predictions).

    A binary array is taken as the deployed model's predictions; any other numeric array as its
    scores, predicting positive where the score is > ``threshold`` (default 0, the convention
    of f(x) = <w,x> - b). Values that all lie in [0, 1] but are not 0/1 look like
    probabilities, for which 0 is the wrong threshold: they need an explicit ``threshold``.
    """
    raw = _column(baseline, "baseline")
    if raw.ndim != 1 or raw.shape[0] != n:
        raise DataError(
            f"baseline must be a 1-D array with one prediction or score per row of X ({n}); "
            f"got shape {raw.shape}."
        )
    codes = _binary_codes(raw, "baseline predictions")
    if codes is not None:
        return raw, codes
    if not np.issubdtype(raw.dtype, np.number):
        raise DataError(f"baseline must be numeric predictions or scores; got dtype {raw.dtype}.")
    if not np.all(np.isfinite(raw)):
        raise DataError("baseline scores contain NaN or infinite values.")
    if threshold is None:
        if raw.min() >= 0.0 and raw.max() <= 1.0:
            raise DataError(
                "baseline values lie in [0, 1] but are not 0/1 predictions: they look like "
                "probabilities, which the default threshold 0 would read as 'positive "
                "everywhere'. Pass baseline_threshold=0.5 (positive where p > 0.5), or the "
                "0/1 predictions themselves, or scores centred at 0.")
        threshold = 0.0
    elif not np.isfinite(threshold):
        raise DataError(f"baseline_threshold must be finite; got {threshold!r}.")
    return raw.astype(np.float64), (raw > threshold).astype(np.int8)


class Dataset:
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

    Notes
    -----
    Labels given as strings are encoded by their sorted values (two values: the larger one is
    the positive class, 1); ``label_values`` holds the original value of each code.
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
    ) -> None:
        peak = None
        groups = _named_columns(groups, "groups")
        if any(_is_dask(v) for v in (X, y, baseline, weights, *groups.values())):
            from .dask_data import dask_inputs  # features stay in Dask (ratecons.dask_data)

            given = dask_inputs(X, y, groups, baseline, weights, feature_names)
            X, y, groups, baseline, weights = (given.X, given.y, given.groups, given.baseline,
                                               given.weights)
            feature_names, peak = given.feature_names, given.peak
        if feature_names is None and _is_pandas(X) and X.ndim == 2:
            feature_names = [str(c) for c in X.columns]
        self.X: Features = X if _is_dask(X) else _as_features(X)
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
            self.y, self.is_binary, self.label_values = _normalize_labels(y, n)
        self.groups: dict[str, np.ndarray] = {}
        for key, values in groups.items():
            arr = _column(values, f"group {key!r}")
            if arr.ndim != 1 or arr.shape[0] != n:
                raise DataError(
                    f"group {key!r} must have one value per row of X ({n}); got shape {arr.shape}."
                )
            self.groups[str(key)] = arr
        self.baseline: np.ndarray | None = None
        self.baseline_prediction: np.ndarray | None = None
        if baseline is not None:
            self.baseline, self.baseline_prediction = _normalize_baseline(
                baseline, n, baseline_threshold)
        self.baseline_threshold = baseline_threshold
        self.weights: np.ndarray | None = None
        if weights is not None:
            w = np.asarray(_column(weights, "weights"), dtype=np.float64)
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
        self.feature_names: list[str] | None = feature_names
        self.name: str = name or "data"
        _check_magnitudes(self.X, feature_names, peak)

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
        features = _feature_columns("from_pandas", list(df.columns), label, groups, features,
                                    baseline, weights)
        X = df[features]
        nan_rows = np.flatnonzero(X.isna().to_numpy().any(axis=1))
        if nan_rows.size:
            bad = [str(c) for c in X.columns[X.isna().to_numpy().any(axis=0)]]
            raise DataError(f"from_pandas: feature column(s) {bad[:5]} have missing values in "
                            f"{nan_rows.size} rows (first: {nan_rows[:5].tolist()}); drop or "
                            "fill them first.")
        text = [c for c, dtype in X.dtypes.items()
                if not (pd.api.types.is_numeric_dtype(dtype)
                        or pd.api.types.is_bool_dtype(dtype))]
        if text and categorical == "error":
            raise DataError(f"from_pandas: feature column(s) {[str(c) for c in text[:5]]} are "
                            "not numeric; pass categorical='onehot' or encode them.")
        if text:
            X = pd.get_dummies(X, columns=text, prefix_sep="=", dtype=np.float64)
        return cls(X, None if label is None else df[label], groups=df[groups] if groups else None,
                   baseline=None if baseline is None else df[baseline],
                   weights=None if weights is None else df[weights], name=name,
                   baseline_threshold=baseline_threshold)

    @classmethod
    def from_parquet(
        cls,
        path: Any,
        label: str | None = None,
        groups: Sequence[str] = (),
        features: Sequence[str] | None = None,
        baseline: str | None = None,
        weights: str | None = None,
        name: str | None = None,
        baseline_threshold: float | None = None,
    ) -> Dataset:
        """A Dask-backed Dataset read lazily from Parquet files (needs ``ratecons[dask]``).

        Parameters
        ----------
        path : str or list of str
            A Parquet file, a directory of them or a glob, as ``dask.dataframe.read_parquet``
            takes it (local or remote file systems alike).
        label, groups, features, baseline, weights, name, baseline_threshold
            As in :meth:`from_pandas`; the feature columns must be numeric or boolean.

        Notes
        -----
        The features stay in Dask, one partition per Parquet row group or file, and are
        validated by one reduction over the partitions (NaN and infinite values are reported
        with their column, partition and row); the per-example columns are held in memory
        (:mod:`ratecons.dask_data`). See ``docs/cluster.md``.
        """
        from .dask_data import open_parquet

        groups = [groups] if isinstance(groups, str) else list(groups)
        frame = open_parquet(path)
        features = _feature_columns(f"from_parquet({path!r})", list(frame.columns), label,
                                    groups, features, baseline, weights)

        def column(name: str | None) -> Any:
            return None if name is None else frame[name]

        return cls(frame[features], column(label), groups={str(g): frame[g] for g in groups},
                   baseline=column(baseline), weights=column(weights), name=name,
                   baseline_threshold=baseline_threshold)

    # ------------------------------------------------------------------ basic facts
    @property
    def in_dask(self) -> bool:
        """Whether the features live in Dask (partitions on workers, never gathered)."""
        return _is_dask(self.X)

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.X.shape[1])

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
                f"classes {self.classes.tolist()[:10]}. Binarize them first, e.g. y == k."
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
        return Subset._build(self, _All())

    @property
    def positives(self) -> Subset:
        """D^+: examples labelled positive (binary labels)."""
        return Subset._build(self, _Label(1))

    @property
    def negatives(self) -> Subset:
        """D^-: examples labelled negative (binary labels)."""
        return Subset._build(self, _Label(0))

    def label(self, value: int) -> Subset:
        """Examples whose label equals ``value`` (binary or multiclass)."""
        return Subset._build(self, _Label(int(value)))

    def group(self, name: str, value: Any) -> Subset:
        """Examples whose group attribute ``name`` equals ``value``."""
        return Subset._build(self, _Group(str(name), value))

    def where(self, mask: np.ndarray | Callable[[Dataset], np.ndarray], name: str | None = None):
        """Examples selected by a boolean mask, or by a callable ``mask(dataset)``.

        A callable can be re-applied to held-out data (reports on test sets); a fixed array
        cannot.
        """
        return Subset._build(self, _Mask(mask, name))

    def baseline_cell(self, label: int, prediction: int) -> Subset:
        """D^{ab} of Table 1: label ``a`` and baseline prediction ``b`` (each 0 or 1).

        ``baseline_cell(1, 0)`` is D^{+-}: positive examples the deployed model predicts negative.
        """
        return Subset._build(self, _Label(int(label)) & _Baseline(int(prediction)))

    def baseline_predicts(self, prediction: int) -> Subset:
        """Examples on which the baseline predicts ``prediction`` (0 or 1); needs no labels."""
        return Subset._build(self, _Baseline(int(prediction)))

    # ------------------------------------------------------------------ derived datasets
    def take(self, index: np.ndarray, name: str | None = None) -> Dataset:
        """A new Dataset holding the rows ``index`` (all attributes sliced alike)."""
        index = np.asarray(index)
        out = Dataset(
            self.X[index],
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
        out.baseline, out.baseline_prediction = _normalize_baseline(baseline, self.n,
                                                                    baseline_threshold)
        out.baseline_threshold = baseline_threshold
        return out


# ---------------------------------------------------------------------- selection recipes
class _Selector:
    """How a subset was chosen; re-applicable to any dataset with the needed attributes."""

    def mask(self, data: Dataset) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def __and__(self, other: _Selector) -> _Selector:
        if isinstance(self, _All):
            return other
        if isinstance(other, _All):
            return self
        return _Combine("&", self, other)

    def __or__(self, other: _Selector) -> _Selector:
        return _Combine("|", self, other)


@dataclass(frozen=True)
class _All(_Selector):
    def mask(self, data: Dataset) -> np.ndarray:
        return np.ones(data.n, dtype=bool)

    def describe(self) -> str:
        return "all"


@dataclass(frozen=True)
class _Label(_Selector):
    value: int

    def mask(self, data: Dataset) -> np.ndarray:
        return data.require_labels("selecting examples by label") == self.value

    def describe(self) -> str:
        return {1: "+", 0: "-"}.get(self.value, f"y={self.value}")


@dataclass(frozen=True)
class _Group(_Selector):
    name: str
    value: Any

    def mask(self, data: Dataset) -> np.ndarray:
        if self.name not in data.groups:
            raise SpecError(
                f"dataset {data.name!r} has no group attribute {self.name!r}; it has "
                f"{sorted(data.groups) or 'none'}. Pass groups={{{self.name!r}: ...}}."
            )
        return data.groups[self.name] == self.value

    def describe(self) -> str:
        return f"{self.name}={self.value}"


@dataclass(frozen=True)
class _Baseline(_Selector):
    prediction: int

    def mask(self, data: Dataset) -> np.ndarray:
        return data.require_baseline("selecting by baseline prediction") == self.prediction

    def describe(self) -> str:
        return "baseline" + ("+" if self.prediction == 1 else "-")


class _Mask(_Selector):
    def __init__(self, mask: Any, name: str | None) -> None:
        self.fn = mask if callable(mask) else None
        self.fixed = None if callable(mask) else np.asarray(mask)
        self.name = name or ("where(callable)" if callable(mask) else "where(mask)")

    def mask(self, data: Dataset) -> np.ndarray:
        m = self.fn(data) if self.fn is not None else self.fixed
        m = np.asarray(m)
        if m.dtype != bool:
            raise DataError(f"{self.name}: the mask must be boolean; got dtype {m.dtype}.")
        if m.shape != (data.n,):
            hint = (
                " A fixed mask cannot be re-applied to another dataset: pass a callable "
                "where(lambda data: ...) to report on held-out data."
                if self.fn is None
                else ""
            )
            raise DataError(
                f"{self.name}: the mask has shape {m.shape}, dataset {data.name!r} has "
                f"{data.n} rows.{hint}"
            )
        return m

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class _Combine(_Selector):
    op: str
    left: _Selector
    right: _Selector

    def mask(self, data: Dataset) -> np.ndarray:
        a, b = self.left.mask(data), self.right.mask(data)
        return a & b if self.op == "&" else a | b

    def describe(self) -> str:
        joiner = " & " if self.op == "&" else " | "
        return "(" + self.left.describe() + joiner + self.right.describe() + ")"


class Subset:
    """A view of some examples of a :class:`Dataset`: an index array plus its selection recipe.

    Build subsets from a dataset (``D.positives``, ``D.group("sex", "Male")``, ...) and combine
    them with ``&`` (intersection) and ``|`` (union). Every rate over a subset is an average, so a
    subset must not be empty; the check happens when a rate is built on it.
    """

    def __init__(self, data: Dataset, index: np.ndarray, selector: _Selector) -> None:
        self.data = data
        self.index = np.asarray(index, dtype=np.int64)
        self.selector = selector
        self._key = (id(data), hashlib.sha1(self.index.tobytes()).hexdigest())

    @classmethod
    def _build(cls, data: Dataset, selector: _Selector) -> Subset:
        return cls(data, np.flatnonzero(selector.mask(data)), selector)

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
        if self.n == 0:
            raise EmptySubsetError(
                f"{what} is an average over {self.name}, which has no examples. Check the "
                "group value, label or baseline that selects it."
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
        return self & self.data.positives

    @property
    def negatives(self) -> Subset:
        return self & self.data.negatives

    def group(self, name: str, value: Any) -> Subset:
        return self & self.data.group(name, value)

    def baseline_cell(self, label: int, prediction: int) -> Subset:
        return self & self.data.baseline_cell(label, prediction)

    def baseline_predicts(self, prediction: int) -> Subset:
        return self & self.data.baseline_predicts(prediction)

    def label(self, value: int) -> Subset:
        return self & self.data.label(value)

    def on(self, data: Dataset) -> Subset:
        """The same selection applied to another dataset (e.g. a held-out split)."""
        return Subset._build(data, self.selector)

    def __repr__(self) -> str:
        return f"Subset({self.name}, n={self.n})"


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
