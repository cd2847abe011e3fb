"""CVXPY reference for the phi-divergence DRO program (the only DRO module importing cvxpy).

Whole problem (eq. 2), through the dual of the inner maximization (4) (Ben-Tal et al.):

    R(theta) = min_{alpha >= 0, lambda}
               alpha rho + lambda + (alpha/N) sum_n phi*((l_n - lambda)/alpha)

- chi-square, phi*(t) = -1 + (t + 2)_+^2 / 4: minimizing over alpha in closed form leaves
  R(theta) = min_eta eta + sqrt((1 + rho)/N) ||(l(theta) - eta)_+||_2, a second-order cone;
- KL, phi*(t) = e^t - 1: alpha exp((l_n - lambda)/alpha) <= v_n are exponential cones, and
  R(theta) = min alpha rho + lambda - alpha + (1/N) sum_n v_n.

Inner problem alone (tests): max_p p.z s.t. sum_m phi(M p_m) <= M rho, sum p = 1, p >= 0 in
primal form (chi2: a sum of squares; KL: sum_m p_m log p_m <= rho - log M, with cp.entr).
"""

from __future__ import annotations

import time
from typing import Any

import cvxpy as cp
import numpy as np

from ..canonical.dro import DROProgram
from ..errors import SolverError, SpecError
from ..phi_divergence import CHI2, KL, Phi
from ..settings import DEFAULT_CONIC_SOLVER, OPTIMAL, OPTIMAL_INACCURATE
from ..solution import Certificate, Solution
from .cvxpy_run import solve_cvxpy, stopped_by_limits
from .cvxpy_status import status_of

__all__ = ["solve_inner_cvxpy", "solve_dro_cvxpy", "TIGHT_CLARABEL"]

#: tight tolerances for reference solves with CLARABEL
TIGHT_CLARABEL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                  "tol_ktratio": 1e-8, "max_iter": 500}

_SOLVED = (OPTIMAL, OPTIMAL_INACCURATE)


#: CLARABEL variants tried after the tight default stalls (InsufficientProgress on some KL
#: instances): shorter steps, then no equilibration
CLARABEL_RETRIES = ({"max_step_fraction": 0.95}, {"equilibrate_enable": False})


def _solve(prob: cp.Problem, solver: str, options: dict[str, Any] | None) -> str:
    """Solve with tight tolerances; if the solver fails there (an error or no solution),
    retry with the variants of :data:`CLARABEL_RETRIES` (tight tolerances), then with its
    defaults. Returns which settings produced the answer."""
    if options is None and solver == "CLARABEL":
        attempts = [("tight", TIGHT_CLARABEL)]
        attempts += [(f"tight+{next(iter(extra))}", {**TIGHT_CLARABEL, **extra})
                     for extra in CLARABEL_RETRIES]
        attempts.append(("default", {}))
    else:
        attempts = [("default" if not options else "user", options or {})]
    for name, opts in attempts:
        try:
            solve_cvxpy(prob, solver, **opts)
        except cp.error.SolverError as exc:
            if len(attempts) == 1:
                raise SolverError(f"CVXPY ({solver}) failed: {exc}") from None
            continue
        if status_of(prob.status) in _SOLVED or stopped_by_limits(prob):
            return name
    raise SolverError(f"CVXPY ({solver}) failed with every setting tried: "
                      f"{[name for name, _ in attempts]}.")


def _require_builtin(phi: Phi) -> None:
    if phi is not CHI2 and phi is not KL:
        raise SpecError(
            f"the CVXPY reference supports phi='chi2' and phi='kl' only; got {phi!r}. Solve "
            "custom phi-divergences with method='fsg', 'pssg' or 'gssg'."
        )


def solve_inner_cvxpy(
    z: np.ndarray, phi: Phi, rho: float, solver: str = DEFAULT_CONIC_SOLVER,
    options: dict[str, Any] | None = None,
) -> tuple[float, np.ndarray]:
    """Problem (4) for losses ``z`` by CVXPY; returns (optimal value, P*)."""
    _require_builtin(phi)
    z = np.asarray(z, dtype=np.float64)
    m = z.size
    p = cp.Variable(m, nonneg=True)
    if phi is CHI2:
        ball = cp.sum_squares(m * p - 1.0) <= m * rho
    else:
        ball = -cp.sum(cp.entr(p)) <= rho - np.log(m)
    prob = cp.Problem(cp.Maximize(z @ p), [cp.sum(p) == 1.0, ball])
    _solve(prob, solver, options)
    if status_of(prob.status) not in _SOLVED:
        raise SolverError(f"CVXPY ({solver}) could not solve the inner problem: {prob.status}.")
    return float(prob.value), np.asarray(p.value, dtype=np.float64)


def _loss_expr(form: DROProgram, w: cp.Variable, b: Any) -> cp.Expression:
    scores = form.X @ w - b
    margins = cp.multiply(form.y, scores)
    if form.loss == "logistic":
        return cp.logistic(-margins)
    if form.loss == "hinge":
        return cp.pos(1.0 - margins)
    return cp.square(1.0 - margins)


def solve_dro_cvxpy(
    form: DROProgram, solver: str = DEFAULT_CONIC_SOLVER, options: dict[str, Any] | None = None
) -> Solution:
    """The whole DRO program (module docstring) with CVXPY; theta and the dual (alpha, lambda).

    The returned ``objective`` is the conic optimum; the family re-evaluates R(theta) exactly.
    """
    _require_builtin(form.phi)
    n = form.n
    w = cp.Variable(form.d)
    b = cp.Variable() if form.fit_intercept else 0.0
    losses = _loss_expr(form, w, b)
    reg = 0.5 * form.l2 * cp.sum_squares(w) if form.l2 > 0 else 0.0
    if form.phi is CHI2:
        eta_ = cp.Variable()
        excess = cp.Variable(n, nonneg=True)
        cons = [excess >= losses - eta_]
        objective = eta_ + np.sqrt((1.0 + form.rho) / n) * cp.norm(excess, 2) + reg
    else:
        alpha = cp.Variable(nonneg=True)
        lam = cp.Variable()
        ell = cp.Variable(n)
        v = cp.Variable(n)
        cons = [ell >= losses, cp.constraints.ExpCone(ell - lam, alpha * np.ones(n), v)]
        objective = alpha * form.rho + lam - alpha + cp.sum(v) / n + reg
    prob = cp.Problem(cp.Minimize(objective), cons)
    start = time.perf_counter()
    tolerances = _solve(prob, solver, options)
    if stopped_by_limits(prob) and w.value is None:
        return Solution(status_of(prob.status), np.nan, solver=f"cvxpy/{solver}")
    elapsed = time.perf_counter() - start
    if status_of(prob.status) not in _SOLVED and not stopped_by_limits(prob):
        raise SolverError(f"CVXPY ({solver}) could not solve the DRO program: {prob.status}.")
    theta = np.asarray(w.value, dtype=np.float64)
    if form.fit_intercept:
        theta = np.append(theta, float(b.value))
    dual: dict[str, np.ndarray] = {}
    if form.phi is KL:
        dual = {"alpha": np.float64(alpha.value), "lambda": np.float64(lam.value)}
    stats = prob.solver_stats
    return Solution(
        status=status_of(prob.status), objective=float(prob.value), primal={"theta": theta},
        dual=dual,
        certificate=Certificate(
            upper_bound=float(prob.value), max_violation=0.0,
            details={"solver": solver, "iterations": getattr(stats, "num_iters", None),
                     "tolerances": tolerances},
        ),
        solver=f"cvxpy/{solver}", solve_time=elapsed,
    )
