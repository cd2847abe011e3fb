"""Column normalization and validation for :class:`~ratecons.data.Dataset`.

One function per kind of input: the feature matrix (dense, sparse or a pandas DataFrame; 2-D,
numeric, finite, magnitudes that do not overflow when squared), per-example columns (pandas
missing values refused by row), labels (binary encodings to 0/1, integer codes, strings encoded
by sorted value), baseline predictions or scores, and the choice of feature columns of a table.
Every error says what is wrong and what to do.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .caller import user_stacklevel
from .dask_types import is_dask
from .errors import DataError, DataWarning, LabelError

__all__ = ["Features", "OVERFLOW_MAGNITUDE", "BADLY_SCALED_MAGNITUDE", "as_features",
           "binary_codes", "check_feature_names", "check_magnitudes", "column",
           "feature_columns",
           "is_pandas", "named_columns", "normalize_baseline", "normalize_labels",
           "nonfinite_rows", "numeric_array", "pandas_features", "refuse_missing"]

Features = np.ndarray | sp.csr_matrix

#: feature magnitudes above this overflow when squared in a solver (kernels, l2 terms): refused
OVERFLOW_MAGNITUDE = 1e150
#: columns with a largest magnitude above this are reported (solvers lose accuracy)
BADLY_SCALED_MAGNITUDE = 1e6


def check_magnitudes(X: Features, feature_names: Sequence[str] | None,
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


def is_pandas(values: Any) -> bool:
    """A pandas Series or DataFrame (recognized without importing pandas)."""
    return hasattr(values, "isna") and hasattr(values, "to_numpy") and hasattr(values, "dtypes")


def check_feature_names(trained: list[str] | None, given: list[str] | None) -> None:
    """Refuse features whose column names differ from the training data's (both known): the
    model reads columns by position, so reordered, renamed or differently encoded columns
    (one-hot levels from another set of categories) would be scored silently wrong."""
    if trained is None or given is None or list(given) == list(trained):
        return
    if sorted(given) == sorted(trained):
        raise DataError("the features' columns are the training data's in another order; the "
                        "model reads them by position: reorder them, X[result.feature_names].")
    missing = [c for c in trained if c not in set(given)][:5]
    extra = [c for c in given if c not in set(trained)][:5]
    differ = "; ".join(part for part in (f"missing {missing}" if missing else "",
                                         f"not in training {extra}" if extra else "") if part)
    raise DataError(f"the features' columns differ from the training data's: {differ}. The "
                    "model reads columns by position; build the data with the training "
                    "columns, in their order (result.feature_names; one-hot columns from the "
                    "training categories, e.g. frame.reindex(columns=result.feature_names, "
                    "fill_value=0) after pd.get_dummies).")


def pandas_features(X: Any) -> np.ndarray:
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


def numeric_array(values: Any, what: str) -> np.ndarray:
    """``values`` as a float64 array, or a :class:`DataError` naming ``what`` when they are
    not numbers (strings, objects)."""
    if np.iscomplexobj(values):
        raise DataError(f"{what} must be real numbers; got complex values.")
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} must be numeric; {exc}. Encode text columns first (e.g. "
                        "rc.Dataset.from_pandas(..., categorical='onehot')).") from None


def column(values: Any, what: str) -> np.ndarray:
    """A 1-D array from an array-like or a pandas Series. Pandas missing values (NA, or NaN in
    a nullable column) are refused naming the rows; nullable integer, float and boolean
    columns become NumPy integers, floats and booleans."""
    if not is_pandas(values):
        array = np.asarray(values)
        if array.dtype.kind in "US" and not isinstance(values, np.ndarray):
            # NumPy made text of a list's NaN and None ('nan', 'None'): refused as missing
            refuse_missing(np.asarray(values, dtype=object), what)
        return array
    missing = np.flatnonzero(np.asarray(values.isna()).reshape(len(values), -1).any(axis=1))
    if missing.size:
        raise DataError(
            f"{what} has {missing.size} missing values (pandas NA or NaN; first rows: "
            f"{missing[:5].tolist()}); drop those rows or fill them (e.g. .fillna(...)) "
            "before building a Dataset.")
    numpy_dtype = getattr(values.dtype, "numpy_dtype", None)  # nullable Int64, Float64, boolean
    return values.to_numpy(dtype=numpy_dtype) if numpy_dtype is not None else values.to_numpy()


def refuse_missing(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` unchanged when no entry is missing; NaN (float or object arrays) or None
    refused naming the rows, as :func:`column` refuses pandas' missing values (a group level
    NaN or None can never be selected: NaN != NaN)."""
    if values.dtype.kind == "f":
        missing = np.isnan(values)
    elif values.dtype.kind == "O":
        missing = np.equal(values, None) | np.not_equal(values, values)
    else:
        return values
    rows = np.flatnonzero(missing)
    if rows.size:
        raise DataError(
            f"{what} has {rows.size} missing values (NaN or None; first rows: "
            f"{rows[:5].tolist()}); drop those rows or fill them before building a Dataset.")
    return values


def named_columns(values: Any, what: str) -> dict[str, Any]:
    """Named group attributes from a mapping, a DataFrame (one attribute per column) or a
    named Series."""
    if values is None:
        return {}
    if is_pandas(values) or is_dask(values):
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


def feature_columns(what: str, columns: list[Any], label: str | None, groups: list[str],
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


def nonfinite_rows(X: Features) -> np.ndarray:
    """The rows of a dense or CSR matrix holding NaN or inf (sorted; a sparse matrix is read
    through its stored values, never densified)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        stored_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        return np.unique(stored_rows[~np.isfinite(X.data)])
    return np.unique(np.nonzero(~np.isfinite(X))[0])


def as_features(X: Any) -> Features:
    """Validate a feature matrix: 2-D, numeric, finite; sparse inputs become CSR float64."""
    if is_pandas(X):
        X = pandas_features(X)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.ndim != 2:
            raise DataError(f"X must be 2-dimensional; got a sparse matrix of shape {X.shape}.")
        if not np.all(np.isfinite(X.data)):
            rows = nonfinite_rows(X)
            raise DataError(
                f"X has NaN or infinite values in {rows.size} rows (first: "
                f"{rows[:5].tolist()}); impute or drop them before building a Dataset."
            )
        return X
    X = numeric_array(X, "X")
    if X.ndim != 2:
        raise DataError(
            f"X must be 2-dimensional (n_examples, n_features); got shape {X.shape}. "
            "Use X.reshape(-1, 1) for a single feature."
        )
    if not np.all(np.isfinite(X)):
        rows = nonfinite_rows(X)
        raise DataError(
            f"X has NaN or infinite values in {rows.size} rows (first: {rows[:5].tolist()}); "
            "impute or drop them before building a Dataset."
        )
    return X


def binary_codes(values: np.ndarray, what: str) -> np.ndarray | None:
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


def normalize_labels(y: Any, n: int, pos_label: Any = None
                     ) -> tuple[np.ndarray, bool, np.ndarray | None]:
    """Normalize labels once: binary encodings become 0/1, other integer codes stay as they are,
    and string (or other non-numeric) labels are encoded by their sorted values: two values
    become 0/1 (the larger one, in sort order, positive, as scikit-learn's ``classes_[1]``),
    more become codes 0..K-1. With ``pos_label`` the labels become 0/1 whatever they are: 1
    where the label equals ``pos_label``, 0 for every other value. Returns (codes, is_binary,
    original values by code or None)."""
    y = column(y, "y")
    if y.ndim != 1 or y.shape[0] != n:
        raise DataError(f"y must be a 1-D array with one label per row of X ({n}); got {y.shape}.")
    if y.dtype.kind == "O":  # a missing label is no class ('None' against '1')
        refuse_missing(y, "y")
    if pos_label is not None:
        return _labels_against(y, pos_label)
    codes = binary_codes(y, "labels")
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


def _labels_against(y: np.ndarray, pos_label: Any) -> tuple[np.ndarray, bool, np.ndarray | None]:
    """0/1 codes of ``y == pos_label`` (see :func:`normalize_labels`); the original values by
    code when the labels take exactly two values."""
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise DataError("labels contain NaN or infinite values.")
    try:
        values = np.unique(y.astype(str) if y.dtype.kind == "O" else y)
    except TypeError as exc:
        raise LabelError(f"labels cannot be sorted into classes: {exc}") from None
    wanted = str(pos_label) if y.dtype.kind == "O" else pos_label
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns where it cannot compare types
        hit = np.asarray(values == wanted)
    if hit.shape != values.shape or not hit.any():
        raise LabelError(f"pos_label {pos_label!r} is not among the labels' values "
                         f"{values[:10].tolist()}; give one of them.")
    positive = np.asarray((y.astype(str) if y.dtype.kind == "O" else y) == wanted)
    if positive.all():
        raise LabelError(f"every label is pos_label {pos_label!r}: a classifier needs two "
                         "classes.")
    names = np.array([values[~hit][0], values[hit][0]]) if values.size == 2 else None
    return positive.astype(np.int8), True, names


#: at most this many distinct nonnegative integers in a baseline read as class codes
BASELINE_MAX_CODES = 10


def _refuse_class_codes(raw: np.ndarray) -> None:
    """Refuse baseline values that the default threshold 0 would misread: nonnegative
    integer codes other than 0/1 (predictions coded 1/2, as in many UCI files, or 0/1/2),
    and scores all above 0 (a deployed model positive on every row)."""
    values = np.unique(raw)
    if (raw.min() >= 0.0 and np.all(values == np.round(values))
            and values.size <= BASELINE_MAX_CODES):
        shown = ", ".join(f"{v:g}" for v in values)
        raise DataError(
            f"baseline values are the integers {{{shown}}}: they look like class codes, "
            "not 0/1 predictions or scores, and the default threshold 0 would read every "
            "nonzero code as 'positive'. Pass the 0/1 predictions (e.g. baseline == 2 where 2 "
            "is the positive class), or baseline_threshold=... to say where positive begins.")
    if raw.min() > 0.0:
        raise DataError(
            f"baseline scores are all above 0 (from {raw.min():.4g} to {raw.max():.4g}): the "
            "default threshold 0 would make the deployed model predict 'positive' on every "
            "row. Pass baseline_threshold=... (positive where the score is above it), or the "
            "0/1 predictions themselves.")


def normalize_baseline(baseline: Any, n: int, threshold: float | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Return (raw baseline values, 0/1 baseline predictions).

    A binary array is taken as the deployed model's predictions; any other numeric array as its
    scores, predicting positive where the score is > ``threshold`` (default 0, the convention
    of f(x) = <w,x> - b). Values that all lie in [0, 1] but are not 0/1 look like
    probabilities, for which 0 is the wrong threshold: they need an explicit ``threshold``;
    so do nonnegative integer class codes (1/2, 0/1/2) and scores all above 0
    (:func:`_refuse_class_codes`).
    """
    raw = column(baseline, "baseline")
    if raw.ndim != 1 or raw.shape[0] != n:
        raise DataError(
            f"baseline must be a 1-D array with one prediction or score per row of X ({n}); "
            f"got shape {raw.shape}."
        )
    codes = binary_codes(raw, "baseline predictions")
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
        _refuse_class_codes(raw)
        threshold = 0.0
    elif not np.isfinite(threshold):
        raise DataError(f"baseline_threshold must be finite; got {threshold!r}.")
    predictions = (raw > threshold).astype(np.int8)
    if predictions.min() == predictions.max():
        warnings.warn(
            f"baseline_threshold={threshold:g} makes the deployed model predict "
            f"{'positive' if predictions[0] else 'negative'} on every row (its scores run from "
            f"{raw.min():.4g} to {raw.max():.4g}): churn then equals the model's own positive "
            "or negative rate. Check the threshold.", DataWarning, stacklevel=user_stacklevel())
    return raw.astype(np.float64), predictions
