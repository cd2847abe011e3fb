"""CVXPY reference for the ranking-at-the-top family (the only module of it importing cvxpy).

* :func:`solve_primal` -- linear models: the primal (6) (TopPushK family, the threshold as the
  epigraph t >= ``cp.sum_largest(X~ w, K) / K``) or (9) (Pat&Mat family, the threshold
  equation in its convex form sum_j l(theta (w^T x~_j - t)) <= n~ tau, Appendix A.2), both
  scaled to the objective (3):
  (lambda/2)||w||^2 [+ l1 ||w||_1] + (1/n_+) sum_i l(t - w^T x_i^+).
* :func:`solve_dual` -- any kernel: the dual (7) or (10) with the signed kernel matrix of
  eq. (14) as the quadratic objective ``cp.quad_form(v, psd_wrap(K))``.
* :func:`project_feasible` -- the projection (19) onto the feasible set of (7), used to check
  Thm 3.10 and Alg 1.
* :func:`svm_dual_coefficients` -- the C-SVC baseline (23)/(24) of the experiments (Sec. 4.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np

from .. import settings
from ..backends.cvxpy_run import checked_solver, solve_cvxpy
from ..backends.cvxpy_status import status_of
from ..canonical.top import TopForm
from ..errors import SolverError
from ..loss_functions import surrogate_graph

__all__ = ["CvxpyTopResult", "solve_primal", "solve_dual", "project_feasible",
           "svm_dual_coefficients"]



@dataclass
class CvxpyTopResult:
    """What the reference returns: status, value of the problem solved, and the variables."""

    status: str
    value: float
    variables: dict[str, Any] = field(default_factory=dict)
    solve_time: float = 0.0
    solver: str = ""


def _conic(solver: str) -> str:
    """``solver`` checked: the ranking references are QPs (conic solvers only)."""
    return checked_solver(solver, False, "the ranking references are quadratic programs")


def _solve(prob: cp.Problem, solver: str, options: dict[str, Any] | None) -> tuple[str, float]:
    solver = _conic(solver)
    start = time.perf_counter()
    try:
        solve_cvxpy(prob, solver, **(options or {}))
    except cp.error.SolverError as exc:
        raise SolverError(f"{solver} failed on the ranking reference problem: {exc}") from exc
    return status_of(prob.status), time.perf_counter() - start


def solve_primal(form: TopForm, solver: str = settings.DEFAULT_CONIC_SOLVER,
                 solver_options: dict[str, Any] | None = None) -> CvxpyTopResult:
    """Primal (6) or (9) for a linear model, scaled to (3) (with ``form.l1`` ||w||_1);
    returns w and t."""
    if not form.linear_model:
        raise SolverError("the primal reference needs an explicit linear model; use "
                          "solve_dual for kernel models.")
    Xp, Xt = form.X_pos, form.X_tilde
    w = cp.Variable(form.d, name="w")
    reg = 0.5 * form.lam * cp.sum_squares(w)
    if form.l1 > 0:
        reg = reg + form.l1 * cp.norm1(w)
    t = cp.Variable(name="t")
    constraints: list[Any] = []
    if form.family == "toppushk":
        # the epigraph t >= mean of the K largest scores (exact: the objective increases in
        # t); writing t = cp.sum_largest(...) inline instead copies its n~ auxiliary
        # variables into every hinge row (n_+ x n~ nonzeros, 10x slower at n = 2000)
        constraints.append(cp.sum_largest(Xt @ w, int(form.K)) / int(form.K) <= t)
    else:
        tilde, rows = surrogate_graph(cp, form.surrogate, form.theta * (Xt @ w - t))
        constraints += [*rows, cp.sum(tilde) <= form.n_tilde * float(form.tau)]
    pos, rows = surrogate_graph(cp, form.surrogate, t - Xp @ w)
    constraints += rows
    obj = reg + cp.sum(pos) / form.n_pos
    prob = cp.Problem(cp.Minimize(obj), constraints)
    status, elapsed = _solve(prob, solver, solver_options)
    w_val = None if w.value is None else np.asarray(w.value, dtype=np.float64)
    t_val = None if w_val is None else float(np.asarray(t.value).item())
    return CvxpyTopResult(status, float(prob.value) if prob.value is not None else np.nan,
                          {"w": w_val, "t": t_val}, elapsed, f"cvxpy/{solver} primal")


def _factor(Kmat: np.ndarray) -> np.ndarray:
    """L with L L^T = K (K symmetrized, tiny negative eigenvalues dropped)."""
    vals, vecs = np.linalg.eigh(0.5 * (Kmat + Kmat.T))
    keep = vals > 1e-12 * max(1.0, float(vals.max(initial=0.0)))
    return vecs[:, keep] * np.sqrt(vals[keep])


def solve_dual(form: TopForm, solver: str = settings.DEFAULT_CONIC_SOLVER,
               solver_options: dict[str, Any] | None = None,
               Kmat: np.ndarray | None = None) -> CvxpyTopResult:
    """Dual (7) or (10) (C form) for any kernel; returns alpha, beta (and delta)."""
    Kmat = form.signed_gram() if Kmat is None else Kmat
    n, C = form.n_pos, form.C
    alpha = cp.Variable(n, nonneg=True, name="alpha")
    beta = cp.Variable(form.n_tilde, nonneg=True, name="beta")
    v = cp.hstack([alpha, beta])
    # v^T K v as the solver's quadratic objective (K is a kernel matrix, PSD up to rounding):
    # 3.4x faster in Clarabel than ||L^T v||^2 with K = L L^T at m = 2000 (and no eigh)
    obj = -0.5 * cp.quad_form(v, cp.psd_wrap(0.5 * (Kmat + Kmat.T))) + cp.sum(alpha)
    cons = [cp.sum(alpha) == cp.sum(beta)]
    if form.surrogate == "hinge":
        cons.append(alpha <= C)
    else:
        obj = obj - cp.sum_squares(alpha) / (4.0 * C)
    delta = None
    if form.family == "toppushk":
        if int(form.K) > 1:
            cons.append(beta <= cp.sum(alpha) / int(form.K))
    else:
        delta = cp.Variable(nonneg=True, name="delta")
        obj = obj + cp.sum(beta) / form.theta - delta * form.n_tilde * float(form.tau)
        if form.surrogate == "hinge":
            cons.append(beta <= delta * form.theta)
        else:
            obj = obj - cp.quad_over_lin(beta, delta) / (4.0 * form.theta**2)
    prob = cp.Problem(cp.Maximize(obj), cons)
    status, elapsed = _solve(prob, solver, solver_options)
    variables: dict[str, Any] = {}
    if alpha.value is not None:
        variables = {"alpha": np.maximum(np.asarray(alpha.value), 0.0),
                     "beta": np.maximum(np.asarray(beta.value), 0.0),
                     "delta": None if delta is None else float(delta.value)}
    return CvxpyTopResult(status, float(prob.value) if prob.value is not None else np.nan,
                          variables, elapsed, f"cvxpy/{solver} dual")


def project_feasible(alpha0: np.ndarray, beta0: np.ndarray, C: float, K: int,
                     solver: str = settings.DEFAULT_CONIC_SOLVER) -> tuple[np.ndarray, np.ndarray]:
    """The projection (19) of (alpha0, beta0) onto the feasible set of (7), by CVXPY."""
    alpha = cp.Variable(alpha0.size)
    beta = cp.Variable(beta0.size)
    cons = [cp.sum(alpha) == cp.sum(beta), alpha >= 0, beta >= 0,
            beta <= cp.sum(alpha) / K]
    if np.isfinite(C):
        cons.append(alpha <= C)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(alpha - alpha0)
                                  + 0.5 * cp.sum_squares(beta - beta0)), cons)
    tight = ({"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
             if _conic(solver) == "CLARABEL" else {"eps_abs": 1e-10, "eps_rel": 1e-10})
    _solve(prob, solver, tight)
    return np.asarray(alpha.value), np.asarray(beta.value)


def svm_dual_coefficients(Kmat: np.ndarray, y: np.ndarray, C: float,
                          solver: str = settings.DEFAULT_CONIC_SOLVER) -> np.ndarray:
    """The C-SVC baseline of Section 4.1: dual (24) with kernel matrix k(X, X) and labels
    y in {0, 1}; returns a_i = alpha_i y_i (y in {-1, +1}), so that the scores are k(x, X) a
    up to the bias (which no ranking metric depends on)."""
    ys = np.where(np.asarray(y) > 0, 1.0, -1.0)
    L = _factor(Kmat * np.outer(ys, ys))
    alpha = cp.Variable(ys.size)
    prob = cp.Problem(cp.Maximize(-0.5 * cp.sum_squares(L.T @ alpha) + cp.sum(alpha)),
                      [ys @ alpha == 0, alpha >= 0, alpha <= C])
    _solve(prob, solver, {})
    if alpha.value is None:
        raise SolverError("the SVM baseline failed to solve.")
    return np.asarray(alpha.value) * ys
