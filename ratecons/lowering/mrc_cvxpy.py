"""CVXPY reference for minimax risk classifiers, written from the definitions.

It does not reuse the matrix lowering: it states (2.2) / (2.5) directly,

    min_mu  1 - tau^T mu + lam^T |mu| + varphi(mu)

with varphi(mu) = max_{i, C} (sum_{y in C} Phi(x_i, y)^T mu - 1) / |C| (eq. 2.3), or the average
over instances of the per-instance maximum (eq. 2.6) for fixed marginals, and lets CVXPY build
the LP. All 2^|Y| - 1 subsets are enumerated, so it is for small |Y| only.

``formulation="compact"`` states the same problems with n (|Y| + 1) extra variables instead of
n (2^|Y| - 1) subset terms, through the LP duality (thesis Sec. 3.5.2)

    varphi(mu, x_i) = min { t_i : sum_y (s_iy - t_i)_+ <= 1 },   s_iy = Phi(x_i, y)^T mu,

which holds because sum_y (s_iy - t)_+ <= 1 is exactly "sum_{y in C} (s_iy - t) <= 1 for every C",
i.e. t >= (sum_{y in C} s_iy - 1) / |C|. It is the reference for data where enumerating the
subsets is too large for CVXPY (e.g. the subgradient benchmark).
"""

from __future__ import annotations

import time

import numpy as np

from .. import settings
from ..backends.cvxpy_run import checked_solver, solve_cvxpy
from ..backends.cvxpy_status import status_of
from ..canonical.mrc import MRCForm, all_subset_masks
from ..errors import SolverError, UnknownOptionError
from ..solution import Certificate, Solution

__all__ = ["solve_mrc_cvxpy"]



def solve_mrc_cvxpy(
    form: MRCForm, solver: str = "CLARABEL", formulation: str = "subsets"
) -> Solution:
    """Solve (2.2) or (2.5) with CVXPY.

    Parameters
    ----------
    form : MRCForm
    solver : {"CLARABEL", "SCS", "HIGHS"}
    formulation : {"subsets", "compact"}
        varphi as the maximum over all label subsets (eq. 2.3 / 2.6), or through its compact LP
        dual (see the module docstring).
    """
    import cvxpy as cp

    solver = checked_solver(solver, True, "")  # an LP: every CVXPY solver of ours takes it
    if formulation not in ("subsets", "compact"):
        raise UnknownOptionError(
            f"unknown formulation {formulation!r} for the MRC CVXPY reference; use 'subsets' "
            "or 'compact'."
        )
    K, p, n = form.n_classes, form.p, form.n
    mu = cp.Variable(form.m, name="mu")
    V = form.psi @ cp.reshape(mu, (p, form.n_blocks), order="F")  # V[i, y] = Phi(x_i, y)^T mu
    if form.label_map is not None:  # Phi(x, y) = E[y] kron psi(x)
        V = V @ form.label_map.T
    constraints = []
    if formulation == "subsets":
        masks = all_subset_masks(K)
        sizes = masks.sum(axis=1)
        average = (masks.T / sizes).astype(np.float64)  # (K, S): column C averages C's labels
        G = V @ average - (1.0 / sizes)[None, :]  # (n, S): (sum_C Phi^T mu - 1) / |C|
        phi_i = cp.max(G, axis=1)
    else:
        phi_i = cp.Variable(n, name="t")
        W = cp.Variable((n, K), nonneg=True, name="w")  # w_iy >= (s_iy - t_i)_+
        constraints = [W >= V - cp.reshape(phi_i, (n, 1), order="F") @ np.ones((1, K)),
                       cp.sum(W, axis=1) <= 1]
    phi = cp.sum(phi_i) / n if form.fixed_marginals else cp.max(phi_i)
    objective = 1 - form.tau @ mu + form.lam @ cp.abs(mu) + phi
    prob = cp.Problem(cp.Minimize(objective), constraints)
    start = time.perf_counter()
    try:
        solve_cvxpy(prob, solver)
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
        solver=f"cvxpy/{solver} ({formulation})",
        solve_time=elapsed,
    )
