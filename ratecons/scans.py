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

from .solvers.interior import weighted_gram

__all__ = ["Rows", "BLOCK_ROWS"]

#: rows per block of a pass (a dense block of 16,384 x 100 float64 is 13 MB)
BLOCK_ROWS = 16_384


class Rows:
    """A feature matrix P (N x p) seen as row blocks.

    Parameters
    ----------
    P : ndarray or sparse matrix, shape (N, p)
        Converted once to C-ordered float64 (dense) or CSR float64 (sparse).
    block_rows : int
        Rows per block of :meth:`gram`.
    """

    def __init__(self, P: Any, block_rows: int = BLOCK_ROWS) -> None:
        if sp.issparse(P):
            self.P = sp.csr_matrix(P, dtype=np.float64)
        else:
            self.P = np.ascontiguousarray(np.asarray(P, dtype=np.float64))
        if self.P.ndim != 2:
            raise ValueError(f"Rows needs a 2-D feature matrix; got shape {self.P.shape}.")
        self.block_rows = int(block_rows)

    @property
    def n(self) -> int:
        return int(self.P.shape[0])

    @property
    def p(self) -> int:
        return int(self.P.shape[1])

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.P)

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
            block = self.P[start:stop]
            weights = c[start:stop]
            if self.is_sparse:
                scaled = sp.diags(np.maximum(weights, 0.0)) @ block
                G += (block.T @ scaled).toarray()
            else:
                G += weighted_gram(block, weights)
        return G
