"""The hinge loss's kink in the robust loss's certificate and in its L-BFGS phase on the kink set.

At m = 1 the hinge's slope l'(m) jumps between -1 and 0, so neither the certificate's dual
v = l'(m(theta)) nor L-BFGS's model of F is right at the examples whose margins sit there at
theta* (eq. 2 of Ghosh & Squillante with l the hinge). Both need only the few examples nearest
the kink, and the rest of the data through sums:

- the refitted dual (:func:`hinge_refit_bound`): v refitted on the examples with
  |m_n - 1| <= width and p_n > 0 (:class:`KinkRows`), from the class-split sums
  (:class:`HingeSums`) of all examples;
- the kink-set guess (:func:`kink_set`): the examples with the smallest |m_n - 1|.

Each is split into a part that runs on one block of examples (:func:`kink_rows`,
:func:`nearest_kink`) and a finish from what the blocks returned: in memory the data are one
block; on Dask data (:mod:`ratecons.solvers.dro_dask_bound`, :mod:`ratecons.solvers.dro_dask`)
every partition is one, and only the rows at the kink travel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear

__all__ = ["HINGE_REFIT_WIDTHS", "HingeSums", "KinkRows", "hinge_dual_from_sums",
           "hinge_refit_bound", "intercept_scales", "kink_rows", "kink_set", "nearest_kink"]

#: margin widths |m - 1| <= width within which the hinge dual is refitted
HINGE_REFIT_WIDTHS = (1e-2, 1e-3, 1e-4, 1e-5)


def intercept_scales(a: float, b: float) -> tuple[float, float]:
    """The scales of v on the examples labelled +1 and -1 that restore the intercept condition
    sum_n p_n v_n y~_n = 0 of the l2 dual (:func:`~ratecons.solvers.dro_certificate.lower_bound`)
    given a = sum p v over the +1 class and b over the -1 class: the class with the larger
    |sum p v| is scaled down (v stays in [-1, 0] for the logistic and hinge losses)."""
    return (b / a if abs(a) > abs(b) else 1.0, a / b if abs(b) > abs(a) else 1.0)


@dataclass(frozen=True)
class HingeSums:
    """Sums over all examples at the (mixed) worst-case weights p and the slopes v.

    Attributes
    ----------
    parts : ndarray, shape (d, 2)
        sum_n p_n v_n y~_n x_n over the examples labelled +1 (column 0) and -1 (column 1).
    pv_pos, pv_neg : float
        sum_n p_n v_n over the examples labelled +1 and -1.
    """

    parts: np.ndarray
    pv_pos: float
    pv_neg: float


def hinge_dual_from_sums(sums: HingeSums, l2: float, fit_intercept: bool) -> float:
    """The l2 dual -sum p l*(v) - ||sum p v y~ x||^2 / (2 l2) of the weighted hinge ERM from the
    class sums (l*(v) = v on [-1, 0] is linear, so the sums determine it), the intercept
    condition restored by :func:`intercept_scales`."""
    scales = intercept_scales(sums.pv_pos, sums.pv_neg) if fit_intercept else (1.0, 1.0)
    u = scales[0] * sums.parts[:, 0] + scales[1] * sums.parts[:, 1]
    return -(scales[0] * sums.pv_pos + scales[1] * sums.pv_neg) - float(u @ u) / (2.0 * l2)


@dataclass(frozen=True)
class KinkRows:
    """Examples at the kink: features (dense), signed labels, weights p, slopes v, |m - 1|."""

    X: np.ndarray
    y: np.ndarray
    p: np.ndarray
    v: np.ndarray
    dist: np.ndarray


def kink_rows(X: object, margins: np.ndarray, y: np.ndarray, p: np.ndarray, v: np.ndarray,
              width: float) -> KinkRows:
    """One block's examples with |m_n - 1| <= width and p_n > 0."""
    keep = np.flatnonzero((np.abs(margins - 1.0) <= width) & (p > 0))
    X_k = X[keep]
    X_k = X_k.toarray() if sp.issparse(X_k) else np.asarray(X_k, dtype=np.float64)
    return KinkRows(X_k, np.asarray(y[keep], dtype=np.float64), p[keep], v[keep],
                    np.abs(margins[keep] - 1.0))


def hinge_refit_bound(rows: KinkRows, sums: HingeSums, w: np.ndarray, l2: float,
                      fit_intercept: bool, width: float) -> float:
    """The hinge dual with v refitted on the kink rows with |m_n - 1| <= width (-inf if none).

    The optimal v satisfies the stationarity of the weighted ERM: sum_n p_n v_n y~_n x_n
    = -l2 w and sum_n p_n v_n y~_n = 0. Keeping v off the kink, the kink values are fitted to
    these d + 1 equations by bounded least squares (v in [-1, 0]); any such v gives a valid
    bound (:func:`hinge_dual_from_sums` of the updated sums), and at theta* it attains it.
    """
    sel = rows.dist <= width
    if not np.any(sel):
        return -np.inf
    p, y, v_old = rows.p[sel], rows.y[sel], rows.v[sel]
    cols = (p * y)[:, None] * rows.X[sel]  # d(sum p v y x)/dv_k
    lhs, rhs = cols.T, -l2 * w - (sums.parts.sum(axis=1) - cols.T @ v_old)
    if fit_intercept:
        c_b = p * y
        rest_b = (sums.pv_pos - sums.pv_neg) - float(c_b @ v_old)  # off the kink
        lhs, rhs = np.vstack([lhs, c_b[None, :]]), np.append(rhs, -rest_b)
    fit = lsq_linear(lhs, rhs, bounds=(-1.0, 0.0), method="bvls", lsmr_tol="auto")
    change = fit.x - v_old
    pos = y > 0
    delta = cols * change[:, None]
    moved = HingeSums(
        parts=sums.parts + np.column_stack([delta[pos].sum(axis=0), delta[~pos].sum(axis=0)]),
        pv_pos=sums.pv_pos + float(p[pos] @ change[pos]),
        pv_neg=sums.pv_neg + float(p[~pos] @ change[~pos]))
    return hinge_dual_from_sums(moved, l2, fit_intercept)


def nearest_kink(margins: np.ndarray, live: np.ndarray, index: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """One block's k examples (``live``: p_n > 0) with the smallest |m_n - 1|: (|m - 1|, their
    global indices), ties broken by the index (so that the blocks' merge, sorted the same way,
    is the whole data's)."""
    dist = np.where(live, np.abs(margins - 1.0), np.inf)
    order = np.lexsort((index, dist))[:k]
    return dist[order], index[order]


def kink_set(dist: np.ndarray, index: np.ndarray, k: int, choice: int) -> np.ndarray:
    """A guess of the examples at the hinge kink at theta* from the blocks'
    :func:`nearest_kink` (concatenated): the k < d + 2 nearest, cut where consecutive sorted
    values jump the most (``choice`` 0 takes the largest jump, 1 the second largest, ...)."""
    finite = np.isfinite(dist)  # examples with p_n = 0, and the blocks' padding
    dist, index = dist[finite], index[finite].astype(np.int64)
    order = np.lexsort((index, dist))[:k]
    ranked, picked = np.maximum(dist[order], 1e-300), index[order]
    if ranked.size < 2:
        return picked[:1]
    jumps = ranked[1:] / ranked[:-1]  # jump after k = 1, 2, ... examples
    cuts = np.argsort(-jumps) + 1
    return picked[: cuts[min(choice, cuts.size - 1)]]
