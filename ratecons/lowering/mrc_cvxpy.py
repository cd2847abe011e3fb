"""CVXPY reference for minimax risk classifiers, written from the definitions.

It does not reuse the matrix lowering: it states (2.2) / (2.5) directly,

    min_mu  1 - tau^T mu + lam^T |mu| + varphi(mu)

with varphi(mu) = max_{i, C} (sum_{y in C} Phi(x_i, y)^T mu - 1) / |C| (eq. 2.3), or the average
over instances of the per-instance maximum (eq. 2.6) for fixed marginals, and lets CVXPY build
the LP. All 2^|Y| - 1 subsets are enumerated, so it is for small |Y| only.
"""

from __future__ import annotations

import time

import numpy as np

from .. import settings
from ..canonical.mrc import MRCForm, all_subset_masks
from ..errors import SolverError, UnknownOptionError
from ..solution import Certificate, Solution
from .cvxpy_status import status_of

__all__ = ["solve_mrc_cvxpy"]



def solve_mrc_cvxpy(form: MRCForm, solver: str = "CLARABEL") -> Solution:
    """Solve (2.2) or (2.5) with CVXPY; ``solver`` is CLARABEL (default), SCS or HIGHS."""
    import cvxpy as cp

    allowed = settings.CONIC_SOLVERS + settings.LP_SOLVERS
    if solver not in allowed:
        raise UnknownOptionError(f"unknown CVXPY solver {solver!r}; use one of {allowed}.")
    K, p = form.n_classes, form.p
    masks = all_subset_masks(K)
    sizes = masks.sum(axis=1)
    average = (masks.T / sizes).astype(np.float64)  # (K, S): column C averages the labels in C
    mu = cp.Variable(form.m, name="mu")
    V = form.psi @ cp.reshape(mu, (p, K), order="F")  # V[i, y] = Phi(x_i, y)^T mu
    G = V @ average - (1.0 / sizes)[None, :]  # (n, S): (sum_C Phi^T mu - 1) / |C|
    phi = cp.sum(cp.max(G, axis=1)) / form.n if form.fixed_marginals else cp.max(G)
    objective = 1 - form.tau @ mu + form.lam @ cp.abs(mu) + phi
    prob = cp.Problem(cp.Minimize(objective))
    start = time.perf_counter()
    try:
        prob.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/{solver} failed on the MRC reference: {exc}") from exc
    elapsed = time.perf_counter() - start
    status = status_of(prob.status)
    if status not in settings.SOLVED_STATUSES:
        return Solution(status, np.nan, solver=f"cvxpy/{solver}", solve_time=elapsed)
    mu_val = np.asarray(mu.value, dtype=np.float64)
    exact = form.objective(mu_val)
    return Solution(
        status=status,
        objective=float(prob.value),
        primal={"mu": mu_val},
        certificate=Certificate(
            upper_bound=exact,
            max_violation=0.0,
            details={"objective_at_mu": exact, "solver_status": prob.status},
        ),
        solver=f"cvxpy/{solver}",
        solve_time=elapsed,
    )
