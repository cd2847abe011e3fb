"""CVXPY references for the SVM subproblems of the specialized rate solver (App. F).

The folded Problem 3 (see :mod:`ratecons.solvers.folded`) written directly in CVXPY:

* :func:`solve_weighted_hinge_cvxpy` — min_w (and b unless fixed)
  sum_x a_x max(0, 1/2 + z_x) + b_x max(0, 1/2 - z_x) + (lambda/2)||w||^2, the problem SDCA
  (eq. 19) and the b-cutting plane (Alg 3) solve;
* :func:`solve_covariance_constrained_svm` — the Zafar et al. baseline of App. D;
* :func:`solve_folded_bound_cvxpy` — Problem 3 itself with its m constraints, written from the
  folded coefficients (an independent reference is the lead's
  ``ratecons.lowering.rate_cvxpy.solve_bound_cvxpy``, written from the rate program).
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from .. import settings
from ..errors import SolverError
from ..solution import Certificate, Solution
from .cvxpy_run import solve_cvxpy
from .cvxpy_status import status_of

__all__ = ["solve_covariance_constrained_svm", "solve_folded_bound_cvxpy",
           "solve_weighted_hinge_cvxpy"]



def _hinges(X, w, b, a, bcoef):
    z = X @ w - b
    return a @ cp.pos(0.5 + z) + bcoef @ cp.pos(0.5 - z)


def _solve(prob: cp.Problem, solver: str) -> str:
    try:
        solve_cvxpy(prob, solver)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/{solver} failed: {exc}") from None
    return status_of(prob.status)


def solve_weighted_hinge_cvxpy(X, a: np.ndarray, bcoef: np.ndarray, l2: float,
                               bias: float | None = None, *,
                               solver: str = settings.DEFAULT_CONIC_SOLVER) -> Solution:
    """Weighted two-sided hinge SVM (eq. 16); ``bias`` fixed when given, else optimized."""
    start = time.perf_counter()
    w = cp.Variable(X.shape[1])
    b = cp.Variable() if bias is None else float(bias)
    prob = cp.Problem(cp.Minimize(_hinges(X, w, b, a, bcoef) + 0.5 * l2 * cp.sum_squares(w)))
    status = _solve(prob, solver)
    bval = float(b.value) if bias is None else float(bias)
    return Solution(status, float(prob.value), {"w": np.asarray(w.value), "b": np.array(bval)},
                    solver=f"cvxpy/{solver}", solve_time=time.perf_counter() - start)


def solve_folded_bound_cvxpy(bound, *, solver: str = settings.DEFAULT_CONIC_SOLVER) -> Solution:
    """Problem 3 from a :class:`~ratecons.solvers.folded.FoldedBound`: row 0 plus the
    regularizer, subject to rows 1..m <= gamma; duals of the constraints returned as ``v``."""
    start = time.perf_counter()
    X = bound.design.X
    w = cp.Variable(X.shape[1])
    b = cp.Variable() if bound.fit_intercept else 0.0
    cons = [_hinges(X, w, b, bound.A[j], bound.B[j]) <= bound.gamma_check[j - 1]
            for j in range(1, bound.m + 1)]
    obj = bound.const[0] + _hinges(X, w, b, bound.A[0], bound.B[0])
    prob = cp.Problem(cp.Minimize(obj + 0.5 * bound.l2 * cp.sum_squares(w)), cons)
    status = _solve(prob, solver)
    if status not in settings.SOLVED_STATUSES:
        return Solution(status, np.nan, solver=f"cvxpy/{solver}",
                        solve_time=time.perf_counter() - start)
    wv = np.asarray(w.value)
    bv = float(b.value) if bound.fit_intercept else 0.0
    viol = float(np.max(np.maximum(0.0, bound.rows(wv, bv)[1:] - bound.gamma_check
                                   - bound.const[1:]), initial=0.0))
    v = np.array([float(c.dual_value) for c in cons])
    return Solution(status, float(prob.value), {"w": wv, "b": np.array(bv)}, {"v": v},
                    Certificate(max_violation=viol), solver=f"cvxpy/{solver}",
                    solve_time=time.perf_counter() - start)


def solve_covariance_constrained_svm(X, y: np.ndarray, l2: float, xbar: np.ndarray | None,
                                     c: float, *,
                                     solver: str = settings.DEFAULT_CONIC_SOLVER) -> Solution:
    """The baseline of Zafar et al. (2015) as in App. D of Goh et al. (2016).

    The hinge relaxation of the error rate (margins +-1/2 as in eq. 4),
    (1/n) sum_{y=1} max(0, 1/2 - z) + (1/n) sum_{y=0} max(0, 1/2 + z) + (l2/2)||w||^2,
    subject to -c <= <w, xbar> <= c (eq. 8: xbar = mean of group M minus mean of group F), the
    linear approximation of s_p(M) - s_p(F). ``xbar=None`` drops the constraint (plain SVM).
    """
    start = time.perf_counter()
    n = X.shape[0]
    pos = (np.asarray(y) == 1).astype(float) / n
    neg = (np.asarray(y) != 1).astype(float) / n
    w = cp.Variable(X.shape[1])
    b = cp.Variable()
    cons = [] if xbar is None else [cp.abs(np.asarray(xbar) @ w) <= c]
    prob = cp.Problem(cp.Minimize(_hinges(X, w, b, neg, pos) + 0.5 * l2 * cp.sum_squares(w)),
                      cons)
    status = _solve(prob, solver)
    if status not in settings.SOLVED_STATUSES:
        return Solution(status, np.nan, solver=f"cvxpy/{solver}",
                        solve_time=time.perf_counter() - start)
    return Solution(status, float(prob.value),
                    {"w": np.asarray(w.value), "b": np.array(float(b.value))},
                    solver=f"cvxpy/{solver}", solve_time=time.perf_counter() - start)
