"""Compiled kernels of the row passes in :mod:`ratecons.scans` (loaded on first use, so that
``import ratecons`` does not load numba)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["sparse_weighted_gram_upper"]


@numba.njit(cache=True)
def sparse_weighted_gram_upper(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                               c: np.ndarray, G: np.ndarray) -> None:
    """Add sum_i c_i a_i a_i^T over the rows a_i of a CSR matrix into the upper triangle of G.

    Row i adds the outer product of its own nonzeros only, nnz_i (nnz_i + 1) / 2 updates,
    against p (p + 1) / 2 for a dense row. The column indices of every row must be sorted
    and unique (then each pair j <= k lands once, in the upper triangle). Weights below 0
    (rounding) count as 0.
    """
    for i in range(indptr.size - 1):
        ci = c[i]
        if ci <= 0.0:
            continue
        lo = indptr[i]
        hi = indptr[i + 1]
        for a in range(lo, hi):
            ja = indices[a]
            va = ci * data[a]
            for b in range(a, hi):
                G[ja, indices[b]] += va * data[b]

