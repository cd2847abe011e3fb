"""Matrix LP / QP data: the form HiGHS solves directly and MPS files store.

    minimize (or maximize)  c @ x + (1/2) x @ P @ x + offset
    subject to              row_lower <= A @ x <= row_upper
                            col_lower <= x <= col_upper

Infinite bounds are ``np.inf``. ``A`` is a ``scipy.sparse.csr_matrix``; ``P`` (optional, a QP) is
a symmetric positive semidefinite ``scipy.sparse.csr_matrix`` (HiGHS' and MPS QUADOBJ's 1/2
convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import DataError

__all__ = ["MatrixLP"]


@dataclass
class MatrixLP:
    """A linear or convex quadratic program as arrays (see the module docstring for the form)."""

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
    P: sp.csr_matrix | None = None

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
        if self.P is not None:
            self.P = sp.csr_matrix(self.P, dtype=np.float64)
            if self.P.shape != (n_col, n_col) or not np.all(np.isfinite(self.P.data)):
                raise DataError(f"MatrixLP.P must be a finite ({n_col}, {n_col}) matrix.")
            if self.P.nnz == 0:
                self.P = None

    @property
    def is_qp(self) -> bool:
        """True when the objective has a quadratic term."""
        return self.P is not None

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.A.shape[1])

    @property
    def file_columns(self) -> int:
        """The columns of an MPS file of this problem, as readers count them: its own and, for
        a nonzero objective constant, the column fixed at 1 that carries it
        (:mod:`ratecons.backends.mps`)."""
        return self.n_cols + int(float(self.offset) != 0.0)

    def summary(self) -> str:
        """One line: the kind, the size as a file holds it (:attr:`file_columns`), the sense."""
        cols = (f"{self.file_columns} columns (one fixed at 1 for the objective constant)"
                if self.file_columns > self.n_cols else f"{self.n_cols} columns")
        return (
            f"{'QP' if self.is_qp else 'LP'} with {cols}, {self.n_rows} rows, "
            f"{self.A.nnz} nonzeros "
            f"({'max' if self.maximize else 'min'}imize)"
        )
