"""The infeasibility certificate of the structured interior point (:mod:`.structured`): a
Farkas ray of the constraint rows, read off the multipliers of a run whose primal residual
stays while its multipliers grow.

For linear rows (hinge pieces and free variables, no smooth or robust parts in rows 1..m) the
step's constraints are the linear inequalities (A) u_k - a_k z_{i_k} - c_k - G_k v >= 0,
(B) u_k >= 0 and (R) bound_j - const_j - C_j u - F_j v >= 0 over (theta, u), theta = (w, b, v),
z = Q theta. Multipliers y >= 0 on the rows and l_A, l_B >= 0 on the pieces with
l_A + l_B = C_R^T y (so that u drops out) give, for every feasible point,

    0 <= -e^T theta - margin,   e = (Q^T (a l_A), G^T l_A + F_R^T y),
    margin = c^T l_A + (const_R - bound)^T y,

so when margin > 0 no (w, b, v) with ||theta||_1 < margin / ||e||_inf meets the rows (Farkas'
lemma; a ray, e = 0, proves infeasibility outright). This is the test Clarabel and ECOS apply
to the normalized dual iterate of their homogeneous embedding (a dual residual small relative
to the ray's value, tolerance 1e-8 there); here the infeasible-start iterate's own multipliers
play the ray: on an infeasible step they grow without bound while the primal residual stays
(a 768-row diabetes step with recall >= 0.999 and positive rate <= 0.01: the rows'
multipliers 2e2 -> 1e11 in ten iterations, primal residual 1.1 throughout).

When the multipliers' rounding ends the run before their ray is good enough (the whole Adult
split's hinge relaxation of logistic loss + churn + 80% rule: radius at most 4.6e3 at
||theta||_1 = 17), a cold run that stalls far from feasible is checked by the violation step
(:func:`violation_form`, an LP solved by the same interior point): its certified positive
least violation proves infeasibility, its multipliers are the ray.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import settings
from .structured_form import Iterate, StructuredForm, StructuredSolution
from .structured_kernels import scatter_product

__all__ = ["infeasible_message", "violation_proof"]

#: a ray proves the step infeasible when no point with ||(w, b, v)||_1 below this times
#: (1 + the iterate's ||(w, b, v)||_1) meets the rows. The test is rigorous (up to rounding):
#: a feasible point theta gives margin <= ||e||_inf ||theta||_1, so a feasible step is never
#: called infeasible unless all its points are that far out. On the diabetes step of the
#: module docstring the ray's radius grew 1, 4, 37, 280, 1.6e3, ..., 4e5, 5.6e6 over the plain
#: run's iterations before the multipliers' rounding ended it (at 1e11); on other bounds it
#: peaked at 2.4e5. Over 30 bound pairs (recall floor, positive-rate cap), 1e6 proved 16 of
#: the 27 infeasible steps, 1e4 proved 26 (in 6-13 iterations; the last by the violation step)
INFEASIBLE_RADIUS = 1e4


@dataclass
class FarkasRay:
    """A certificate that the rows cannot all be met (module docstring)."""

    rows: np.ndarray  # y >= 0 on the constraint rows, in the form's units, summing to 1
    margin: float  # the ray's value (> 0), in the scaled rows, for y scaled to sum 1
    residual: float  # ||e||_inf for the same scaling
    radius: float  # margin / residual: no model with ||(w, b, v)||_1 below it meets the rows


def farkas_ray(ipm: Any, x: Iterate) -> FarkasRay | None:
    """The Farkas ray of the rows from the multipliers of ``x`` (module docstring), or None
    when the rows are not linear or the ray's value is not positive."""
    f, sc = ipm.form, ipm.sc
    if not linear_rows(f):
        return None
    y = np.maximum(x.lam["R"], 0.0)
    total = float(y.sum())
    if total <= 0:
        return None
    y = y / total
    lam_a = np.clip(x.lam["A"] / total, 0.0, sc.C[1:].T @ y)
    margin = float(f.hinge_offset @ lam_a + (sc.const[1:] - sc.bounds) @ y)
    if margin <= 0:
        return None
    on_examples = scatter_product(f.hinge_index, f.hinge_slope, lam_a, ipm.rows.n)
    e = ipm.theta_of(on_examples, ipm.G.transpose_times(lam_a) + sc.F[1:].T @ y)
    residual = float(np.max(np.abs(e), initial=0.0))
    duals = y * sc.kappa[1:]
    return FarkasRay(duals / duals.sum(), margin, residual,
                     np.inf if residual == 0 else margin / residual)


def proves_infeasible(ray: FarkasRay | None, theta: np.ndarray) -> bool:
    """Whether ``ray`` proves the rows infeasible near an iterate at ``theta``
    (:data:`INFEASIBLE_RADIUS`)."""
    return ray is not None and ray.radius >= INFEASIBLE_RADIUS * (
        1.0 + float(np.abs(theta).sum()))


def infeasible_message(ipm: Any, x: Iterate, pres: float, tol: float) -> str:
    """The message of status ``infeasible`` when the multipliers of ``x`` (an iterate whose
    relative primal residual ``pres`` is above ``tol`` and whose rows' multipliers exceed 1)
    prove the rows infeasible (:func:`proves_infeasible`); else ""."""
    if pres <= tol or np.max(x.lam["R"], initial=0.0) <= 1.0:
        return ""
    ray = farkas_ray(ipm, x)
    if not proves_infeasible(ray, x.theta):
        return ""
    return (f"infeasible: the rows' multipliers {np.array2string(ray.rows, precision=3)} "
            f"(a Farkas ray, value {ray.margin:.2e}, residual {ray.residual:.1e}) prove that no "
            f"model with ||(w, b, v)||_1 < {ray.radius:.1e} meets the rows")


#: a cold run that ends uncertified with a relative primal residual above this is checked by
#: the violation step (:func:`violation_form`). Infeasible steps ended with 0.25-1.4 (diabetes,
#: the Adult split); at 1e-4 stalled feasible MM steps were checked too, for nothing (TPR@K +
#: 80% rule on 34,189 synthetic rows: 205 -> 272 interior-point iterations, same answer)
SUSPECT_RESIDUAL = 1e-2


def linear_rows(form: StructuredForm) -> bool:
    """Whether rows 1..m are linear in (theta, u): hinge pieces and free variables only."""
    return bool(form.m) and not form.robust and not any(np.any(s.coef[1:]) for s in form.smooth)


def violation_form(form: StructuredForm) -> StructuredForm:
    """The step's rows with one more free variable t: minimize t subject to
    row_j(w, b, v) - t <= bound_j (an LP: no regularizer, no objective pieces). Its optimal t*
    is the least worst violation of the rows; the multipliers y of a certified answer sum to 1
    and its Lagrangian bound t* - gap, when positive, bounds min_theta sum_j y_j (row_j -
    bound_j) from below: no (w, b, v) meets every row (Farkas' lemma, with y the ray)."""
    column = np.zeros((form.m + 1, 1))
    column[0], column[1:] = 1.0, -1.0
    return replace(form, l2=0.0, l1=0.0, smooth=[], extra=form.extra + 1,
                   hinge_coef=np.vstack([np.zeros_like(form.hinge_coef[:1]),
                                         form.hinge_coef[1:]]),
                   constant=np.concatenate([[0.0], form.constant[1:]]),
                   hinge_extra=sp.hstack([form.G, sp.csr_matrix((form.hinge_index.size, 1))],
                                         format="csr"),
                   row_extra=np.hstack([form.F, column]), user_rows=None)


def violation_proof(form: StructuredForm, failed: StructuredSolution,
                    solve: Callable[[StructuredForm], StructuredSolution], cold: bool
                    ) -> StructuredSolution | None:
    """``failed`` (an uncertified ``cold`` run of ``form`` whose primal residual stayed above
    :data:`SUSPECT_RESIDUAL`; a warm one is solved again cold by its caller) as status
    ``infeasible`` when ``solve`` certifies the violation step (:func:`violation_form`) with a
    positive Lagrangian bound; else None. The answer's duals are the ray's row multipliers
    (summing to 1, the user's rows first)."""
    if not cold or not linear_rows(form) or failed.primal_residual <= SUSPECT_RESIDUAL:
        return None
    answer = solve(violation_form(form))
    bound = answer.objective - answer.rel_gap * max(1.0, abs(answer.objective))
    failed.after(answer)
    if answer.status != settings.OPTIMAL or bound <= 0:
        return None
    user = form.m if form.user_rows is None else form.user_rows
    ray = np.maximum(answer.duals, 0.0)
    return replace(failed, status=settings.INFEASIBLE, duals=ray[:user] / ray.sum(), message=(
        f"infeasible: the violation step (minimize t, every row <= its bound + t) is certified "
        f"with t >= {bound:.3e} > 0 (relative gap {answer.rel_gap:.1e}); its row multipliers "
        f"{np.array2string(ray / ray.sum(), precision=3)} are a Farkas ray"))
