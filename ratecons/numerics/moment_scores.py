"""Scores of every label under a moment map's coefficients (Bondugula et al., eq. 2).

Phi(x, y) = E[y] kron psi(x) with a label map E (one-hot: E = I; binary compact: E = [[1], [-1]]);
the score of label y at x is Phi(x, y)^T mu. The moment set (a spec), the MRC canonical form
and its solvers all need it; it imports none of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["label_scores"]


def label_scores(
    psi: np.ndarray, mu: np.ndarray, n_classes: int, label_map: np.ndarray | None = None
) -> np.ndarray:
    """Phi(x, y)^T mu = E[y] @ mu.reshape(L, p) @ psi(x) for every row of psi and label y:
    shape (n, n_classes). ``label_map`` None is one-hot (E = I).

    The products are NumPy's einsum loops, not BLAS: with a few label columns BLAS's threads
    cost more than the arithmetic (measured on the shared 2 cores at n = 48,842, p = 15:
    41 ms by ``@`` against 3.8 ms by einsum; 20,000 x 401: 50 ms against 24 ms). This is
    CONSTR's scan of every instance in each CCG round."""
    p = psi.shape[1]
    mu = np.asarray(mu, dtype=np.float64)
    if label_map is None:
        return np.einsum("ij,kj->ik", psi, mu.reshape(n_classes, p))
    S = np.einsum("ij,lj->il", psi, mu.reshape(label_map.shape[1], p))
    return np.einsum("il,kl->ik", S, label_map)
