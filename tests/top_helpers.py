"""An independent CVXPY reference of the ranking tests (Macha, Adam, Smidl): the projection (19)
onto the feasible set of the dual (7), which checks Thm 3.10 and Alg 1 from outside the
package."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

#: CLARABEL at tight tolerances: the projections are compared to 1e-6
TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def project_feasible(alpha0: np.ndarray, beta0: np.ndarray, C: float,
                     K: int) -> tuple[np.ndarray, np.ndarray]:
    """The projection (19) of (alpha0, beta0) onto the feasible set of (7): sum alpha =
    sum beta, 0 <= alpha <= C, 0 <= beta <= sum(alpha) / K."""
    alpha = cp.Variable(alpha0.size)
    beta = cp.Variable(beta0.size)
    cons = [cp.sum(alpha) == cp.sum(beta), alpha >= 0, beta >= 0,
            beta <= cp.sum(alpha) / K]
    if np.isfinite(C):
        cons.append(alpha <= C)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(alpha - alpha0)
                                  + 0.5 * cp.sum_squares(beta - beta0)), cons)
    prob.solve(solver="CLARABEL", **TIGHT)
    assert prob.status == "optimal", prob.status
    return np.asarray(alpha.value), np.asarray(beta.value)
