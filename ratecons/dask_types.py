"""Recognizing a Dask collection without importing dask (which is an optional extra)."""

from __future__ import annotations

from typing import Any

__all__ = ["is_dask"]


def is_dask(values: Any) -> bool:
    """A Dask collection (array, DataFrame, Series): it has a task graph and ``compute``."""
    return hasattr(values, "__dask_graph__") and hasattr(values, "compute")
