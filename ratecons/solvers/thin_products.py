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
direction's time on that split (error rate + 80% rule). The pieces' coefficients on the free
variables are kept as dense columns for the same reason (:class:`FreeColumns`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .structured_kernels import columns_transposed

__all__ = ["FreeColumns", "column_and_coefficient", "columns_times", "rows_transpose_times"]


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


class FreeColumns:
    """The pieces' coefficients G (K, r) on the free variables v (the thresholds of TPR@K and
    TPR@tau, the robust pieces' (eta, lam)) for the products the structured interior point
    forms with them: G v, G^T a and G^T diag(e) G, from G's nonzero columns kept dense
    (columns of zeros, such as the robust pieces' (eta, lam), are not stored), each entry
    summed in the order of the sparse matrix's products, over its nonzero entries, so that
    the numbers are those of the sparse products (compiled:
    :func:`.structured_kernels.columns_transposed`).

    On the whole Adult split (TPR@tau + 80% rule: 72,662 pieces, one free variable, 42,370
    nonzeros; CPU time, one BLAS thread) the free variables' block of the reduced system
    (:func:`.structured_free.free_block`: G^T diag(e) G and the cross terms with the examples,
    formed through an (N, K) sparse matrix built in every iteration) took 0.8 + 2.5 ms as
    sparse products and 0.24 + 0.08 ms here, G v 66 against 39 us, G^T a 200 us both: the
    step's interior-point iterations 10% cheaper (35-37 against 33 ms), to the same numbers.
    """

    def __init__(self, G: Any) -> None:
        self.shape = G.shape
        dense = G.toarray() if sp.issparse(G) else np.asarray(G, dtype=float)
        #: the indices of the nonzero columns and those columns, (K, len(nonzero))
        self.nonzero = np.flatnonzero(np.any(dense != 0, axis=0))
        self.columns = np.ascontiguousarray(dense[:, self.nonzero])

    def times(self, v: np.ndarray) -> np.ndarray:
        """G v for v of shape (r,) or (r, k): (K,) or (K, k)."""
        out = np.zeros((self.shape[0],) + np.shape(v)[1:])
        for at, j in enumerate(self.nonzero):
            column = self.columns[:, at] if np.ndim(v) == 1 else self.columns[:, at, None]
            out += column * v[j]
        return out

    def transpose_times(self, a: np.ndarray) -> np.ndarray:
        """G^T a for a of shape (K,) or (K, k): (r,) or (r, k)."""
        out = np.zeros((self.shape[1],) + np.shape(a)[1:])
        if self.nonzero.size:
            out[self.nonzero] = columns_transposed(
                self.columns, a[:, None] if a.ndim == 1 else a).reshape(
                (self.nonzero.size,) + np.shape(a)[1:])
        return out

    def weighted_gram(self, e: np.ndarray) -> np.ndarray:
        """G^T diag(e) G, (r, r)."""
        out = np.zeros((self.shape[1], self.shape[1]))
        if self.nonzero.size:
            # G^T (G e): the products G_kj e_k first, as the sparse G.multiply(e) forms them
            out[np.ix_(self.nonzero, self.nonzero)] = columns_transposed(
                self.columns, self.columns * e[:, None])
        return out


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
