"""The full MRC LP (4) / fixed-marginals LP (2.5) solved by HiGHS, primal or dual (6).

All n (2^|Y| - 1) rows are built (scipy.sparse) and passed to HiGHS once; simplex or interior
point is selectable. The certificate evaluates the objective of (2.2)/(2.5) at the returned mu
with the exact greedy varphi (an upper bound on R*) and the dual value -b^T alpha of the LP's
multipliers (a lower bound when alpha is dual feasible, whose violation is reported).
"""

from __future__ import annotations

import numpy as np

from .. import settings
from ..backends.highs import HighsLP
from ..canonical.mrc import MRCForm, subset_rows
from ..canonical.mrc_matrix import full_rows, mrc_dual_lp, mrc_primal_lp
from ..errors import UnknownOptionError
from ..solution import Solution
from .tracker import Tracker

__all__ = ["dual_certificate", "solve_mrc_lp"]


def dual_certificate(
    form: MRCForm, instances: np.ndarray, masks: np.ndarray, alpha: np.ndarray
) -> tuple[float, float]:
    """Value -b^T alpha of multipliers alpha >= 0 of the rows (instances, masks) of (4)/(2.5),
    and their largest violation of the dual constraints of (6) (0 when dual feasible)."""
    alpha = np.maximum(alpha, 0.0)
    F, b = subset_rows(form.psi, instances, masks, form.label_map)
    g = F.T @ alpha
    viol = np.maximum(np.abs(g - form.tau) - form.lam, 0.0)
    if form.fixed_marginals:
        mass = np.bincount(instances, weights=alpha, minlength=form.n) - 1.0 / form.n
    else:
        mass = np.array([alpha.sum() - 1.0])
    return float(-b @ alpha), float(max(viol.max(initial=0.0), np.abs(mass).max()))


def solve_mrc_lp(
    form: MRCForm,
    solver: str = "simplex",
    formulation: str = "primal",
    time_limit: float | None = None,
) -> Solution:
    """Solve the full LP with HiGHS.

    Parameters
    ----------
    form : MRCForm
    solver : {"simplex", "ipm", "choose"}
    formulation : {"primal", "dual"}
        The primal (4) / (2.5), or the dual (6) whose row multipliers give mu.
    time_limit : float, optional
    """
    if formulation not in ("primal", "dual"):
        raise UnknownOptionError(
            f"unknown formulation {formulation!r} for the MRC LP; use 'primal' or 'dual'."
        )
    instances, masks = full_rows(form)
    m = form.m
    if formulation == "primal":
        lp = mrc_primal_lp(form, instances, masks, names=False)
    else:
        lp = mrc_dual_lp(form)
    tracker = Tracker(f"highs-{solver} ({formulation})", time_limit=time_limit)
    res = HighsLP(lp, solver=solver, time_limit=tracker.time_limit).solve()
    tracker.iterations = res.iterations
    if res.status not in settings.SOLVED_STATUSES or not np.all(np.isfinite(res.x)):
        return tracker.solution({}, objective=np.nan, status=res.status,
                                details={"highs_status": res.raw_status})
    if formulation == "primal":
        mu = res.x[:m] - res.x[m:2 * m]
        alpha = -res.row_dual  # rows are "<= b": nonnegative multipliers
        nu = res.x[2 * m:]
    else:
        alpha = res.x
        mu = res.row_dual[:m]
        nu = None
    upper = form.objective(mu)
    # rows F mu - nu_i <= b hold iff nu_i >= 1 + varphi(mu, x_i)
    violation = 0.0 if nu is None else float(max((1.0 + form.varphi(mu) - nu).max(), 0.0))
    lower, dual_violation = dual_certificate(form, instances, masks, alpha)
    if dual_violation > settings.FEASIBILITY_TOL:  # not dual feasible: no bound (a stopped run)
        lower = None
    primal = {"mu": mu}
    if nu is not None:
        primal["nu"] = nu
    # a stopped simplex's value is not the model's: its worst-case risk R(mu) is (docs/mrc.md)
    objective = float(res.objective) if res.status == settings.OPTIMAL else upper
    return tracker.solution(
        primal, objective=objective, status=res.status, dual={"alpha": alpha},
        lower=lower, upper=upper, max_violation=violation,
        details={
            "rows": lp.n_rows if formulation == "primal" else lp.n_cols,
            "cols": lp.n_cols if formulation == "primal" else lp.n_rows,
            "dual_violation": dual_violation,
            "highs_status": res.raw_status,
        },
        advice="Raise time_limit.")
