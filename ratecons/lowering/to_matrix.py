"""Matrix LP data: the form HiGHS solves directly and MPS files store.

    minimize (or maximize)  c @ x + offset
    subject to              row_lower <= A @ x <= row_upper
                            col_lower <= x <= col_upper

Infinite bounds are ``np.inf``. ``A`` is a ``scipy.sparse.csr_matrix``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import DataError

__all__ = ["MatrixLP"]


@dataclass
class MatrixLP:
    """A linear program as arrays (see the module docstring for the form)."""

    c: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    offset: float = 0.0
    maximize: bool = False
    col_names: list[str] | None = None
    row_names: list[str] | None = None
    name: str = "ratecons"
    notes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.c = np.asarray(self.c, dtype=np.float64)
        self.A = sp.csr_matrix(self.A, dtype=np.float64)
        n_row, n_col = self.A.shape
        for name, size in (("col_lower", n_col), ("col_upper", n_col), ("row_lower", n_row),
                           ("row_upper", n_row), ("c", n_col)):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (size,):
                raise DataError(f"MatrixLP.{name} must have shape ({size},); got {arr.shape}.")
            if np.any(np.isnan(arr)):
                raise DataError(f"MatrixLP.{name} has NaN entries.")
            setattr(self, name, arr)
        if not np.all(np.isfinite(self.A.data)) or not np.all(np.isfinite(self.c)):
            raise DataError("MatrixLP: A and c must be finite.")

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.A.shape[1])

    def summary(self) -> str:
        return (
            f"LP with {self.n_cols} columns, {self.n_rows} rows, {self.A.nnz} nonzeros "
            f"({'max' if self.maximize else 'min'}imize)"
        )
