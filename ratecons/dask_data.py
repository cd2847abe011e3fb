"""Datasets whose features live in Dask: lazy reading, validation as one reduction, persistence.

A :class:`~ratecons.data.Dataset` built from a Dask array or Dask DataFrame (or read by
:meth:`~ratecons.data.Dataset.from_parquet`) keeps its features as a Dask array of row
partitions, float64, every column in one chunk, so that the scans
(:mod:`ratecons.dask_scans`) reduce each partition to p-sized and p x p results on the worker
that holds it. The features are never gathered into the client process.

Validation is the in-memory one done as a reduction: one pass over the partitions returns, per
partition, its length, its count of NaN or infinite features with the first offending row and
column, the largest magnitude per column and, for every per-example column given as a Dask
collection (labels, groups, baseline, weights), its count of missing or non-finite values with
the first offending row. Errors name the column, the partition and the row (global and within
the partition).

Current limit: the per-example columns (labels, groups, baseline, weights; one to eight bytes
per row) are held by the client as NumPy arrays after that pass, and so are the index arrays of
subsets and the per-example vectors of a solve (scores, weights); only the n x d features stay
on the workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import scipy.sparse as sp

from .dask_types import is_dask
from .errors import DataError

__all__ = ["DaskInputs", "dask_inputs", "open_parquet"]


@dataclass
class DaskInputs:
    """The Dataset's inputs after the validation pass: features still in Dask (or as given
    when only columns were), the per-example columns as NumPy, the largest magnitude per
    feature column (None when the features are not in Dask)."""

    X: Any
    y: Any
    groups: dict[str, Any]
    baseline: Any
    weights: Any
    feature_names: list[str] | None
    peak: np.ndarray | None


def _numeric_frame(frame: Any, what: str) -> None:
    other = [str(c) for c, dtype in frame.dtypes.items()
             if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))]
    if other:
        raise DataError(f"{what} has non-numeric columns {other[:5]}: encode them first (a "
                        "Dask DataFrame is not one-hot encoded by ratecons; use "
                        "dask_ml.preprocessing or categorize and get_dummies in Dask).")


def _feature_array(X: Any) -> tuple[Any, list[str] | None]:
    """The features as a float64 Dask array (lengths possibly unknown) and their names."""
    if isinstance(X, dd.DataFrame):
        _numeric_frame(X, "X")
        return X, [str(c) for c in X.columns]
    if isinstance(X, dd.Series):
        return X.to_frame(), [str(X.name)]
    if not isinstance(X, da.Array):
        X = da.from_array(np.asarray(X, dtype=np.float64))
    if X.ndim != 2:
        raise DataError(f"X must be 2-dimensional (n_examples, n_features); got a Dask array "
                        f"of shape {X.shape}.")
    if sp.issparse(getattr(X, "_meta", None)):
        raise DataError("X is a Dask array of scipy.sparse blocks, which the scans do not take "
                        "yet: make the partitions dense, X.map_blocks(lambda b: b.toarray()), "
                        "or keep sparse data in memory (rc.Dataset(X.compute(), ...)).")
    return X.astype(np.float64).rechunk({1: -1}), None


def _feature_stats(block: Any) -> dict[str, Any]:
    """One partition's facts: length, non-finite count with its first row and column, and the
    largest magnitude per column."""
    values = (block.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(block, "to_numpy")
              else np.asarray(block, dtype=np.float64))
    bad = ~np.isfinite(values)
    out: dict[str, Any] = {"n": values.shape[0], "bad": int(bad.sum()), "row": -1, "col": -1}
    if out["bad"]:
        rows, cols = np.nonzero(bad)
        out["row"], out["col"] = int(rows[0]), int(cols[0])
    finite = np.where(bad, 0.0, np.abs(values))
    out["peak"] = finite.max(axis=0) if values.shape[0] else np.zeros(values.shape[1])
    return out


def _float_block(frame: Any) -> np.ndarray:
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


def _column_stats(values: Any) -> dict[str, Any]:
    """One partition of a per-example column: length, missing (or non-finite) count, first
    such row."""
    series = pd.Series(np.asarray(values).ravel()) if not hasattr(values, "isna") else values
    missing = np.asarray(series.isna())
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
            series.dtype):
        numbers = series.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = missing | ~np.isfinite(numbers)
    bad = np.flatnonzero(missing)
    return {"n": int(series.shape[0]), "bad": int(bad.size),
            "row": int(bad[0]) if bad.size else -1}


def _partitions(values: Any) -> list[Any]:
    if isinstance(values, (dd.DataFrame, dd.Series)):
        return list(values.to_delayed())
    return list(values.to_delayed().ravel())


def _where(stats: list[dict[str, Any]], k: int) -> str:
    start = sum(s["n"] for s in stats[:k])
    row = stats[k]["row"]
    return f"partition {k}, row {start + row} (row {row} of the partition)"


def _check_features(stats: list[dict[str, Any]], names: list[str] | None) -> None:
    total = sum(s["bad"] for s in stats)
    if total:
        k = next(i for i, s in enumerate(stats) if s["bad"])
        col = stats[k]["col"]
        column = repr(names[col]) if names else str(col)
        raise DataError(
            f"X has {total} NaN or infinite values; the first is in column {column}, "
            f"{_where(stats, k)}. Impute or drop them before building a Dataset.")


def _check_column(what: str, stats: list[dict[str, Any]], n: int) -> None:
    length = sum(s["n"] for s in stats)
    if length != n:
        raise DataError(f"{what} has {length} values for the {n} rows of X; give one per row "
                        "(with the same partitions as X).")
    total = sum(s["bad"] for s in stats)
    if total:
        k = next(i for i, s in enumerate(stats) if s["bad"])
        raise DataError(f"{what} has {total} missing or non-finite values; the first is in "
                        f"{_where(stats, k)}. Drop those rows or fill them before building a "
                        "Dataset.")


def _gather_column(values: Any) -> np.ndarray:
    """A per-example column on the client (the current limit, module docstring), partition by
    partition: ``values.compute()`` would first concatenate the whole column on one worker,
    which at 20M rows exceeded a 1 GB worker's memory."""
    parts = dask.compute(*_partitions(values))
    if hasattr(parts[0], "to_numpy"):
        numpy_dtype = getattr(parts[0].dtype, "numpy_dtype", None)
        parts = [p.to_numpy(dtype=numpy_dtype) if numpy_dtype is not None else p.to_numpy()
                 for p in parts]
    return np.concatenate([np.asarray(p) for p in parts])


def dask_inputs(X: Any, y: Any, groups: Mapping[str, Any], baseline: Any, weights: Any,
                feature_names: Sequence[str] | None) -> DaskInputs:
    """Validate Dask inputs in one pass over their partitions (module docstring).

    Parameters
    ----------
    X : Dask array or DataFrame (or an in-memory matrix when only a column is in Dask)
    y, baseline, weights : per-example columns (Dask or in memory), optional
    groups : mapping of names to per-example columns
    feature_names : names of X's columns, optional (default: a DataFrame's columns)

    Returns
    -------
    DaskInputs
        X as a float64 Dask array with known partition lengths, every column in one chunk;
        the Dask columns computed to NumPy.
    """
    in_dask = is_dask(X)
    X, names = _feature_array(X) if in_dask else (X, None)
    columns = {"y": y, "baseline": baseline, "weights": weights,
               **{f"group {k!r}": v for k, v in groups.items()}}
    lazy = {what: v for what, v in columns.items() if v is not None and is_dask(v)}
    tasks = [dask.delayed(_feature_stats)(p) for p in _partitions(X)] if in_dask else []
    column_tasks = {what: [dask.delayed(_column_stats)(p) for p in _partitions(v)]
                    for what, v in lazy.items()}
    stats, column_stats = dask.compute(tasks, column_tasks)
    names = list(feature_names) if feature_names is not None else names
    _check_features(stats, names)
    n = sum(s["n"] for s in stats) if in_dask else int(np.shape(X)[0])
    for what, found in column_stats.items():
        _check_column(what, found, n)
    if isinstance(X, dd.DataFrame):  # one float64 block per partition, lengths known
        width = len(X.columns)
        X = da.concatenate([
            da.from_delayed(dask.delayed(_float_block)(part), shape=(s["n"], width),
                            dtype=np.float64)
            for part, s in zip(X.to_delayed(), stats, strict=True)], axis=0)
    elif in_dask and any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    peak = np.max([s["peak"] for s in stats], axis=0) if stats else None
    gathered = {what: _gather_column(v) for what, v in lazy.items()}
    pick = {what: gathered.get(what, v) for what, v in columns.items()}
    return DaskInputs(X=X, y=pick["y"], baseline=pick["baseline"], weights=pick["weights"],
                      groups={k: pick[f"group {k!r}"] for k in groups},
                      feature_names=names, peak=peak)


def open_parquet(path: Any) -> Any:
    """Parquet files as a lazy Dask DataFrame (nothing is read but the metadata)."""
    return dd.read_parquet(path)
