"""CVXPY lowering of the rate program: the hinge relaxation and Problem 3 (the reference).

For masks selecting, per example, the hinge or the constant-1 upper bound of eq. (4), the
convex problem is

    minimize   sum_i alpha_i^(0) r^_p(D_i) + beta_i^(0) r^_n(D_i) + (l2/2)||w||^2 + l1||w||_1
    subject to sum_i alpha_i^(j) r^_p(D_i) + beta_i^(j) r^_n(D_i) <= gamma^(j)

with r^_p(D) = sum_x weight_x [hinge: max(0, 1/2 + z_x) | 1] and r^_n likewise with 1/2 - z_x
(eq. 5), z_x = <w, x> - b. All masks True is the hinge relaxation of Problem 2 (and of
Problem 1). This is the only module of the rate family that imports cvxpy.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import settings
from ..backends.cvxpy_run import checked_solver, solve_cvxpy
from ..backends.cvxpy_status import status_of
from ..canonical.rate_fold import fold_bound
from ..canonical.rate_program import RateProgram
from ..solution import Certificate, Solution

__all__ = ["solve_bound_cvxpy"]



def _pick_solver(program: RateProgram, solver: str | None, elastic: bool = False,
                 penalty: float | None = None) -> str:
    """The backend for one bound: HiGHS for the LPs of a problem without l2, CLARABEL for the
    QPs and for the phase-1 (elastic) problems. The objective-free elastic LP is always
    feasible, and on it HiGHS' default simplex was 18x slower than CLARABEL (5,000 Adult rows,
    3 constraints: 18.3 s against 1.0 s, the same violation to 2e-9; HiGHS' IPM 10.1 s) and did
    not finish in 20 minutes on the full training split (CLARABEL: 20.6 s)."""
    if solver is None and elastic:
        return settings.DEFAULT_CONIC_SOLVER
    return checked_solver(solver, program.is_lp or (elastic and penalty is None),
                          f"this problem has an l2 term (l2={program.l2:g}; l2=0 makes it one)")


def solve_bound_cvxpy(
    program: RateProgram,
    masks: list[tuple[np.ndarray, np.ndarray]],
    warm_start: dict[str, np.ndarray] | None = None,
    *,
    solver: str | None = None,
    elastic: bool = False,
    penalty: float | None = None,
) -> Solution:
    """Solve Problem 3 (or the hinge relaxation) for the bounds chosen by ``masks``.

    With ``elastic=True`` it solves a phase-1 problem instead, with slack variables s_j >= 0
    on the bounded rows (row_j <= gamma_j + s_j): without ``penalty`` it minimizes the total
    violation sum_j s_j (no objective row, no regularizer: an LP), with it the exact penalty
    row_0 + regularizer + penalty * sum_j s_j. Either upper-bounds its ramp counterpart and is
    tight at the anchor.

    Parameters
    ----------
    program : RateProgram
    masks : list of (hinge_p, hinge_n) boolean arrays, one pair per block
        From :meth:`RateProgram.bound_masks`.
    warm_start : dict, optional
        ``{"w": ..., "b": ...}`` initial values (used by solvers that accept them).
    solver : {"CLARABEL", "SCS", "HIGHS"}, optional
        Default: HIGHS when the problem is an LP (no l2 term) and ``elastic`` is False, else
        CLARABEL.

    Returns
    -------
    Solution
        ``primal={"w", "b"}``, ``dual={"v"}`` (constraint multipliers), objective of Problem 3.
    """
    import cvxpy as cp

    name = _pick_solver(program, solver, elastic, penalty)
    w = cp.Variable(program.d, name="w")
    b = cp.Variable(name="b") if program.fit_intercept else cp.Constant(0.0)
    if warm_start is not None:
        w.value = np.asarray(warm_start["w"], dtype=np.float64)
        if program.fit_intercept:
            b.value = float(warm_start["b"])
    rows, epigraph = _bound_rows(cp, program, masks, w, b)
    reg = 0.0
    if program.l2 > 0:
        reg = reg + 0.5 * program.l2 * cp.sum_squares(w)
    if program.l1 > 0:
        reg = reg + program.l1 * cp.norm1(w)
    constraints = []
    if elastic:
        slack = cp.Variable(program.m, nonneg=True, name="s")
        if program.m:
            constraints = [rows[1:] <= program.gamma + slack]
        goal = (cp.sum(slack) if penalty is None
                else rows[0] + reg + float(penalty) * cp.sum(slack))
        problem = cp.Problem(cp.Minimize(goal), constraints + epigraph)
    else:
        if program.m:
            constraints = [rows[1:] <= program.gamma]
        problem = cp.Problem(cp.Minimize(rows[0] + reg), constraints + epigraph)
    start = time.perf_counter()
    try:
        solve_cvxpy(problem, name, warm_start=warm_start is not None)
    except cp.error.SolverError as exc:
        return Solution(settings.NUMERICAL_ERROR, float("nan"), solver=f"cvxpy/{name}",
                        solve_time=time.perf_counter() - start,
                        certificate=Certificate(details={"message": str(exc)}))
    elapsed = time.perf_counter() - start
    status = status_of(problem.status)
    if status not in settings.SOLVED_STATUSES or w.value is None:
        return Solution(status, float("nan"), solver=f"cvxpy/{name}", solve_time=elapsed,
                        certificate=Certificate(details={"cvxpy_status": problem.status}))
    w_val = np.asarray(w.value, dtype=np.float64)
    b_val = float(b.value) if program.fit_intercept else 0.0
    v = (np.asarray(constraints[0].dual_value, dtype=np.float64).reshape(program.m)
         if constraints else np.zeros(0))
    rows = program.bound_row_values(w_val, b_val, masks)
    violation = float(np.max(np.maximum(rows[1:] - program.gamma, 0.0), initial=0.0))
    return Solution(
        status,
        float(problem.value),
        primal={"w": w_val, "b": np.float64(b_val)},
        dual={"v": v},
        certificate=Certificate(max_violation=violation,
                                details={"cvxpy_status": problem.status,
                                         "num_iters": problem.solver_stats.num_iters}),
        solver=f"cvxpy/{name}",
        solve_time=elapsed,
    )


def _bound_rows(cp, program: RateProgram, masks: list[tuple[np.ndarray, np.ndarray]], w, b
                ) -> tuple[Any, list]:
    """Rows 0..m of Problem 3 (eq. 5) as one CVXPY vector, and the epigraph constraints.

    The coefficients are :func:`~ratecons.canonical.rate_fold.fold_bound`'s (eqs 13-15): an example
    met in several blocks (a group, all the data, the positives ...) gets one epigraph variable
    per sign, t >= 0, t >= 1/2 +- z_x, whose coefficients in every row are summed first: 7,984
    variables instead of 20,000 for five constraints on 5,000 Adult rows. The fold is checked
    against :meth:`RateProgram.bound_row_values` on its own (tests/test_rate_bound.py), and so is
    this reference's optimal value. The explicit epigraph is the standard LP form, which also
    sidesteps CVXPY's bound propagation for ``pos`` atoms that made HiGHS report feasible LPs as
    infeasible (CVXPY 1.9).
    """
    bound = fold_bound(program, masks)
    terms, epigraph = [], []
    for sign, coef in ((+1.0, bound.A), (-1.0, bound.B)):
        used = np.flatnonzero(np.any(coef != 0, axis=0))
        if used.size:
            t = cp.Variable(used.size, nonneg=True)
            epigraph.append(t >= 0.5 + sign * (bound.design.X[used] @ w - b))
            terms.append(coef[:, used] @ t)
    return bound.const + sum(terms, cp.Constant(np.zeros(program.m + 1))), epigraph
