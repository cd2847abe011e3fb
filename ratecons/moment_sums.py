"""Sums over training rows behind a moment set (Bondugula et al., eq. 2), for one block of rows.

Each function takes a block of psi(x_i) with its label codes and returns a small sum, so that the
in-memory :class:`~ratecons.moments.MomentSet` (one block: all rows) and its Dask-backed form
(:mod:`ratecons.dask_moments`: one block per partition, summed) compute the same numbers.
"""

from __future__ import annotations

import numpy as np

from .numerics.moment_scores import label_scores

__all__ = ["moment_pass", "wrong_predictions"]


def moment_pass(psi: np.ndarray, y: np.ndarray, n_classes: int, label_map: np.ndarray | None,
                tau_blocks: np.ndarray | None = None) -> np.ndarray:
    """One pass of the moment estimates over rows ``psi`` with label codes ``y``.

    Without ``tau_blocks``: the sums of Phi(x_i, y_i) over the rows, shape (L, p) (one-hot:
    row c sums psi over the examples of class c; compact map: one row, sum of E[y_i] psi(x_i)).
    With ``tau_blocks`` (L, p): the sums of squared deviations of Phi(x_i, y_i) from tau; for
    one-hot only over each class's own examples (the others' (0 - tau_j)^2 terms are
    (n - n_c) tau_j^2, added by the caller). Summed over row blocks, both give the sums of
    :class:`~ratecons.moments.MomentSet` (eq. 2).
    """
    if label_map is None:
        out = np.zeros((n_classes, psi.shape[1]))
        if tau_blocks is None:
            np.add.at(out, y, psi)
        else:
            np.add.at(out, y, (psi - tau_blocks[y]) ** 2)
        return out
    phi = psi * label_map[y]  # Phi(x_i, y_i) = E[y_i] psi(x_i), L = 1
    if tau_blocks is None:
        return phi.sum(axis=0)[None, :]
    return ((phi - tau_blocks[0]) ** 2).sum(axis=0)[None, :]


def wrong_predictions(psi: np.ndarray, y: np.ndarray, start: int, mu: np.ndarray, n_classes: int,
                      label_map: np.ndarray | None) -> int:
    """Rows of the block that the argmax rule of mu gets wrong (``start``, the block's first
    row, is unused: the signature of :meth:`ratecons.dask_moments.PartitionedPsi.reduce`)."""
    return int(np.sum(np.argmax(label_scores(psi, mu, n_classes, label_map), axis=1) != y))
