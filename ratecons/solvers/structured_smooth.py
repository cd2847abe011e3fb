"""The smooth margin losses of a structured step (logistic, squared margin) on the examples,
for the interior point of :mod:`.structured` (``ipm``): their rows' values, the per-example
gradient and curvature of the multiplier-weighted Lagrangian, and the constraint rows'
Jacobian in the scores z."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..loss_functions import margin_loss
from .margin_curvature import SMOOTH_LOSSES

__all__ = ["row_jacobian_z", "smooth_terms"]


def smooth_terms(ipm: Any, z: np.ndarray, weights: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """Per-example gradient sum_j weights_j S_j y l' and curvature sum_j weights_j S_j l''
    (both scattered to the N examples), every row's loss-derivative vectors
    (S_j y l' per piece, for the Jacobian), and the rows' smooth values."""
    N = ipm.rows.n
    grad, curv, slopes = np.zeros(N), np.zeros(N), []
    values = np.zeros(ipm.m + 1)
    for piece, S in zip(ipm.form.smooth, ipm.sc.S, strict=True):
        margins = piece.label * z[piece.index]
        loss, d1 = margin_loss(piece.loss, margins)
        d2 = SMOOTH_LOSSES[piece.loss](margins)
        values += S @ loss
        weighted = weights @ S  # the multiplier-weighted coefficient of each example's loss
        grad += np.bincount(piece.index, weights=weighted * piece.label * d1, minlength=N)
        curv += np.bincount(piece.index, weights=weighted * piece.label ** 2 * d2, minlength=N)
        slopes.append(piece.label * d1)
    return grad, curv, slopes, values


def row_jacobian_z(ipm: Any, slopes: list[np.ndarray]) -> np.ndarray:
    """d(smooth part of rows 1..m)/dz as an (N, m) matrix."""
    N = ipm.rows.n
    out = np.zeros((N, ipm.m))
    for piece, S, slope in zip(ipm.form.smooth, ipm.sc.S, slopes, strict=True):
        for j in range(ipm.m):
            if np.any(S[j + 1]):
                out[:, j] += np.bincount(piece.index, weights=S[j + 1] * slope, minlength=N)
    return out
