"""Products of per-example matrices with vectors over the few constraint rows (or the few free
variables), as the structured interior point (:mod:`.structured`) forms them several times in
every Newton direction.

A step of the chain has m constraint rows (m = 1 on most compositions: one 80% rule, one recall
floor) and r free variables (r = 0 without TPR@K thresholds). NumPy's ``matmul`` of an (n, 1)
matrix with a 1-vector is an outer product that it computes without BLAS: on the whole Adult
split (43,546 pieces, one BLAS thread) ``A @ y`` took 156 us and ``B.T @ y`` (B of shape
(1, n)) 170 us, against 23 us for the scaled column ``A[:, 0] * y[0]``, which is the same
number in every entry (one product each, no sum). A SciPy sparse matrix with no columns (the
pieces' coefficients G on the free variables when there are none) still costs 50-120 us per
product with its transpose. Five such products in each direction came to about a fifth of a
direction's time on that split (error rate + 80% rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["column_and_coefficient", "columns_times", "rows_transpose_times",
           "sparse_transpose_times"]


def columns_times(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A @ y for a tall A of shape (n, m) and y of shape (m,): the scaled column when m = 1
    (module docstring), else ``matmul``."""
    if A.shape[1] == 1:
        return A[:, 0] * y[0]
    return A @ y


def rows_transpose_times(B: np.ndarray, y: np.ndarray) -> np.ndarray:
    """B.T @ y for a wide B of shape (m, n) and y of shape (m,): the scaled row when m = 1
    (module docstring), else ``matmul``."""
    if B.shape[0] == 1:
        return B[0] * y[0]
    return B.T @ y


def sparse_transpose_times(G: Any, a: np.ndarray) -> np.ndarray:
    """G.T @ a for a (sparse or dense) G of shape (n, r) and a of shape (n,) or (n, k): zeros
    of shape (0,) or (0, k) at once when r = 0 (module docstring)."""
    if G.shape[1] == 0:
        return np.zeros((0,) + np.shape(a)[1:])
    return G.T @ a


def column_and_coefficient(A: np.ndarray | None, y: np.ndarray, K: int
                           ) -> tuple[np.ndarray, float]:
    """A tall (K, m) matrix A times y (the rows' few multipliers) as a column and a
    coefficient for the compiled pieces' passes (:mod:`.structured_kernels`), whose column
    coef is then the entry of A y as :func:`columns_times` forms it: (A[:, 0], y[0]) for one
    row, (A y, 1.0) for several, and (zeros, 0.0) for none (A None or m = 0: the NumPy
    expressions added 0.0 there)."""
    if A is None or A.shape[1] == 0:
        return np.zeros(K), 0.0
    if A.shape[1] == 1:
        return A[:, 0], float(y[0])
    return A @ y, 1.0
