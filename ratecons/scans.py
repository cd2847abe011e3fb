"""Passes over the examples: the one place that walks the rows of a feature matrix.

A solver that works over a score model z = psi(X) w - b needs, per iteration, a handful of sums
over the examples: the scores themselves, products P^T V of per-example vectors (gradients,
Jacobian rows), and the weighted Gram product P^T diag(c) P of a Newton system. :class:`Rows`
offers exactly these over row blocks of a dense (NumPy) or sparse (SciPy CSR) matrix, so that
the memory a pass needs beyond the data is one block, never an N x p copy, and so that another
engine (for example Dask partitions) can stand behind the same methods without a solver
changing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk

__all__ = ["Rows", "BLOCK_ROWS", "weighted_gram"]

#: rows per block of a pass (a dense block of 16,384 x 100 float64 is 13 MB)
BLOCK_ROWS = 16_384
#: a sparse matrix whose dense copy takes at most this many bytes and that has at least
#: :data:`DENSE_MIN_DENSITY` nonzeros also keeps a dense copy for the weighted Gram product:
#: BLAS syrk took 15 ms against 23 ms for SciPy's sparse product on the Adult training split
#: (34,189 x 108, 13% nonzeros), while products with vectors stay sparse (0.4 ms against 0.8)
DENSE_MAX_BYTES = 256 * 2**20
DENSE_MIN_DENSITY = 0.05


def weighted_gram(A: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A^T diag(c) A for rows A (N x p) and weights c >= 0 (rounding below 0 is clipped).

    One symmetric rank-N update (BLAS syrk, half the work of a general product), called on
    whichever of B = diag(sqrt(c)) A and B^T is Fortran-ordered so that BLAS gets it without a
    copy; the result is symmetrized.
    """
    B = A * np.sqrt(np.maximum(c, 0.0))[:, None]
    if B.flags.f_contiguous:
        upper = dsyrk(1.0, B, trans=1, lower=0)
    else:
        upper = dsyrk(1.0, B.T, trans=0, lower=0)
    return np.triu(upper) + np.triu(upper, 1).T



def _fits_dense(P: Any) -> bool:
    cells = P.shape[0] * P.shape[1]
    return cells * 8 <= DENSE_MAX_BYTES and P.nnz >= DENSE_MIN_DENSITY * cells


class Rows:
    """A feature matrix P (N x p) seen as row blocks.

    Parameters
    ----------
    P : ndarray or sparse matrix, shape (N, p)
        Converted once to C-ordered float64 (dense) or CSR float64 (sparse; with a dense copy
        for :meth:`gram` when it is small and dense enough, :data:`DENSE_MAX_BYTES`).
    block_rows : int
        Rows per block of :meth:`gram`.
    """

    def __init__(self, P: Any, block_rows: int = BLOCK_ROWS) -> None:
        if sp.issparse(P):
            self.P = sp.csr_matrix(P, dtype=np.float64)
            self.dense = (np.ascontiguousarray(self.P.toarray()) if _fits_dense(self.P)
                          else None)
        else:
            self.P = np.ascontiguousarray(np.asarray(P, dtype=np.float64))
            self.dense = self.P
        if self.P.ndim != 2:
            raise ValueError(f"Rows needs a 2-D feature matrix; got shape {self.P.shape}.")
        self.block_rows = int(block_rows)

    @property
    def n(self) -> int:
        return int(self.P.shape[0])

    @property
    def p(self) -> int:
        return int(self.P.shape[1])

    def blocks(self) -> Iterator[tuple[int, int]]:
        """(start, stop) of every row block."""
        for start in range(0, self.n, self.block_rows):
            yield start, min(start + self.block_rows, self.n)

    def scores(self, w: np.ndarray, b: float = 0.0) -> np.ndarray:
        """z = P w - b, shape (N,)."""
        return np.asarray(self.P @ w).ravel() - b

    def apply(self, W: np.ndarray) -> np.ndarray:
        """P W for a (p,) vector or (p, r) matrix."""
        return np.asarray(self.P @ W)

    def transpose_apply(self, V: np.ndarray) -> np.ndarray:
        """P^T V for per-example values V of shape (N,) or (N, r)."""
        return np.asarray(self.P.T @ V)

    def gram(self, c: np.ndarray) -> np.ndarray:
        """P^T diag(c) P (dense p x p) for weights c >= 0, summed over row blocks."""
        G = np.zeros((self.p, self.p))
        for start, stop in self.blocks():
            weights = c[start:stop]
            if self.dense is not None:
                G += weighted_gram(self.dense[start:stop], weights)
            else:
                block = self.P[start:stop]
                G += (block.T @ (sp.diags(np.maximum(weights, 0.0)) @ block)).toarray()
        return G
