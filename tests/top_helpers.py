"""Independent CVXPY references of the ranking tests (Macha, Adam, Smidl): the projection (19)
onto the feasible set of the dual (7), and the exact dual (7)/(10) itself. The package's
reference is the generic chain's primal (6)/(9); these dual programs check the dual side
(Thm 3.10, Alg 1, strong duality) from outside the package."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from ratecons.canonical.top import TopForm

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


def exact_dual(form: TopForm) -> tuple[float, np.ndarray, np.ndarray]:
    """The dual (7) (TopPushK family) or (10) (Pat&Mat family) in its C form over all m
    points, with the signed kernel matrix of eq. (14) as the quadratic objective; returns
    its optimal value (lambda times it is the optimum of (3)), alpha and beta."""
    Kmat = form.signed_gram()
    C = form.C
    alpha = cp.Variable(form.n_pos, nonneg=True)
    beta = cp.Variable(form.n_tilde, nonneg=True)
    v = cp.hstack([alpha, beta])
    obj = -0.5 * cp.quad_form(v, cp.psd_wrap(0.5 * (Kmat + Kmat.T))) + cp.sum(alpha)
    cons = [cp.sum(alpha) == cp.sum(beta)]
    if form.surrogate == "hinge":
        cons.append(alpha <= C)  # (18)
    else:
        obj = obj - cp.sum_squares(alpha) / (4.0 * C)  # (27)
    if form.family == "toppushk":
        if int(form.K) > 1:
            cons.append(beta <= cp.sum(alpha) / int(form.K))  # (7c)
    else:
        delta = cp.Variable(nonneg=True)
        obj = obj + cp.sum(beta) / form.theta - delta * form.n_tilde * float(form.tau)
        if form.surrogate == "hinge":
            cons.append(beta <= delta * form.theta)  # (38)
        else:
            obj = obj - cp.quad_over_lin(beta, delta) / (4.0 * form.theta**2)  # (41)
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value), np.asarray(alpha.value), np.asarray(beta.value)
