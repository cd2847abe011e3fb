"""The lower bound on the expected 0-1 loss of a fitted MRC rule (MRCpy's ``get_lower_bound``).

For a classification rule h (deterministic or randomized), the smallest expected 0-1 loss over
the distributions of the uncertainty set U (eq. 2) supported on the training instances,

    L(h) = min_{p >= 0}  sum_{i, y} p_iy (1 - h(y|x_i))
           s.t.  tau - lam <= sum_{i, y} p_iy Phi(x_i, y) <= tau + lam,   sum_{i, y} p_iy = 1,

is the bound MRCpy reports as the lower bound of a fitted MRC (Mazuelas et al.): while the
minimax risk R* bounds the error from above when the true distribution lies in U, L(h) bounds
it from below for the same distributions. MRCpy states it through the LP dual,
L = max_mu tau^T mu - lam^T |mu| + min_{i, y} (1 - h(y|x_i) - Phi(x_i, y)^T mu); here the
primal above is built over the n |Y| (instance, label) columns (the singleton subsets of
eq. (5)) and solved by HiGHS.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import settings
from ..backends.highs import HighsLP
from ..canonical.matrix_lp import MatrixLP
from ..canonical.mrc import MRCForm, subset_rows
from ..errors import DataError
from ..solution import Solution
from .tracker import Tracker

__all__ = ["expected_loss_lower_bound", "lower_bound_lp"]


def lower_bound_lp(form: MRCForm, H: np.ndarray) -> MatrixLP:
    """The LP of L(h) (module docstring) for rule values ``H[i, y] = h(y|x_i)``."""
    H = np.asarray(H, dtype=np.float64)
    if H.shape != (form.n, form.n_classes) or not np.all(np.isfinite(H)):
        raise DataError(f"the rule values h(y|x_i) must be a finite ({form.n}, "
                        f"{form.n_classes}) array; got shape {H.shape}.")
    K = form.n_classes
    instances = np.repeat(np.arange(form.n), K)
    masks = np.tile(np.eye(K, dtype=bool), (form.n, 1))  # column (i, y) is Phi(x_i, y)
    F, _ = subset_rows(form.psi, instances, masks, form.label_map)
    A = sp.vstack([F.T.tocsr(), sp.csr_matrix(np.ones((1, instances.size)))], format="csr")
    return MatrixLP(
        c=(1.0 - H).ravel(),
        A=A,
        row_lower=np.concatenate([form.tau - form.lam, [1.0]]),
        row_upper=np.concatenate([form.tau + form.lam, [1.0]]),
        col_lower=np.zeros(instances.size),
        col_upper=np.full(instances.size, np.inf),
        name=form.name + "_lower_bound",
        notes={"kind": "min over U of the expected 0-1 loss of h"},
    )


def expected_loss_lower_bound(form: MRCForm, H: np.ndarray, solver: str = "ipm") -> Solution:
    """L(h) of the module docstring by HiGHS.

    Parameters
    ----------
    form : MRCForm
        The general MRC's form (tau, lambda, psi of the training instances, label map).
    H : ndarray, shape (n, n_classes)
        h(y|x_i) at the training instances (rows in [0, 1] summing to 1; a deterministic rule
        is one-hot).
    solver : {"ipm", "simplex", "choose"}

    Returns
    -------
    Solution
        ``objective`` = L(h); the certificate holds the LP's dual value as ``lower_bound`` and
        its primal value as ``upper_bound`` (the gap HiGHS proved); ``primal["p"]`` is the
        minimizing distribution, shape (n, n_classes).
    """
    lp = lower_bound_lp(form, H)
    tracker = Tracker(f"highs-{solver}")
    res = HighsLP(lp, solver=solver).solve()
    tracker.iterations = res.iterations
    if res.status != settings.OPTIMAL:
        return tracker.solution({}, objective=np.nan, status=res.status,
                                details={"highs_status": res.raw_status})
    # dual value over the row bounds HiGHS reports active (min-convention signs); the columns'
    # bounds are 0, so they add nothing
    y = res.row_dual
    dual = float(np.where(y > 0, lp.row_lower, lp.row_upper) @ y)
    return tracker.solution(
        {"p": res.x.reshape(form.n, form.n_classes)}, objective=float(res.objective),
        status=settings.OPTIMAL, lower=min(dual, float(res.objective)),
        upper=float(res.objective), gap=abs(float(res.objective) - dual),
        details={"highs_status": res.raw_status})
