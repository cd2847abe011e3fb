"""The specialized Problem-3 solver of ``method="mm"`` (rate constraints), and its checks.

Majorization-minimization (Alg 1, :func:`ratecons.solvers.mm.majorize_minimize`) over the ramp
problem, every convex bound (the hinge relaxation first, then Problem 3 at each iterate) solved
by :func:`ratecons.solvers.rate_bound.solve_bound_specialized`: cutting planes over the
multipliers (Alg 2) and the bias (Alg 3) around SDCA (App. F.1), warm-started across MM
iterations from the previous bound's duals, multipliers and bias. It needs an l2 term and no l1
term (SDCA's setting); ``auto`` picks it where it applies and the cost model of
:mod:`ratecons.patterns.rate_auto` predicts it faster than the CVXPY reference.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .. import settings
from ..canonical.rate_program import RateProgram
from ..reductions.to_cvxpy import solve_bound_cvxpy
from ..result import Result
from ..solution import Solution
from ..solvers.rate_bound import solve_bound_specialized

__all__ = ["MM_TOL", "START_EPSILON", "SpecializedBound", "certified_epsilon", "mm_applicable",
           "same_anchor_rows"]


#: Alg 1's fixed-point tolerance for ``method="mm"``: the one of every MM run
#: (:data:`ratecons.settings.MM_RELATIVE_TOL`). A fixed point is certified by Alg 2's lower
#: bound L_t on the last bound, so that bound is solved to a gap of half of it
#: (:func:`certified_epsilon`)
MM_TOL = settings.MM_RELATIVE_TOL
#: the certified gap of ``method="mm"``'s first bounds (its ``start_epsilon``), looser than the
#: last bound's (:class:`SpecializedBound`)
START_EPSILON = 1e-3


def certified_epsilon(tol: float, epsilon: float | None) -> float:
    """The certified gap of the last bounds: ``epsilon``, or by default tol / 2, small enough
    for f(x) - L_t <= tol * max(1, |f(x)|) at a fixed point x (objectives are >= 0 here); at
    least 1e-8 (``tol = 0`` runs every step)."""
    return max(0.5 * tol, 1e-8) if epsilon is None else float(epsilon)


def equality_rows(form: RateProgram) -> list[str]:
    """The constraints that pair up into an equality (``rate == c``, or the same two bounds
    written apart): rows whose linear parts in the positive rates s_p are opposite and whose
    bounds leave a band of width 0. Each row reads alpha s_p + beta s_n <= gamma with
    s_n = 1 - s_p, so its part in s_p is alpha - beta and its bound gamma - sum(beta)."""
    slope = form.alpha[1:] - form.beta[1:]
    room = form.gamma - form.beta[1:].sum(axis=1)
    scale = 1.0 + np.abs(slope).max(axis=1)
    return [form.row_names[1 + i] for i in range(form.m) for j in range(i + 1, form.m)
            if np.allclose(slope[i], -slope[j], atol=1e-12 * scale[i])
            and abs(room[i] + room[j]) <= 1e-12 * scale[i]]


def mm_applicable(form: RateProgram) -> tuple[bool, str, str]:
    """Whether ``method="mm"`` can solve ``form``, why (for ``plan()``), and the method to
    use instead (for ``mm``'s refusal)."""
    pairs = equality_rows(form)
    if pairs:
        # 500 Adult rows, error rate with s_p(women) == s_p(men): the first bound's cutting
        # plane was not done in 20 s (each SDCA run slower as the two multipliers grow
        # together, only their difference mattering); structured: 0.34 s. A band of +-0.01
        # ran in 1.3 s, one of +-0.001 took 25 s and ended at the constant model
        return False, (f"an equality ('{pairs[0]}' and its opposite row): Alg 2's cutting "
                       "plane over the two multipliers, of which only the difference matters, "
                       "stalls"), ("method='structured', or a band at least 0.01 wide each "
                                   "side (narrower bands stall alike)")
    if form.l2 <= 0.0:
        return False, ("no l2 term: SDCA (method 'mm') needs lambda > 0, and every Problem-3 "
                       "subproblem is an LP, solved by HiGHS through CVXPY"), "method='cvxpy'"
    if form.l1 != 0.0:
        return (False, "l1 term: SDCA (method 'mm') handles the l2 regularizer only",
                "method='cvxpy'")
    return True, ("l2 term and no l1 term: each Problem-3 subproblem is a weighted SVM, so "
                  "the specialized solver (method 'mm': SDCA, App. F) applies next to "
                  "CVXPY"), ""


#: cap on the multipliers of the first bound (the hinge relaxation of Problem 2): its SVMs grow
#: slow as multipliers grow (5,000 Adult rows, five constraints: 373 s with the cap at 100, where
#: the relaxation turned out infeasible, 12.7 s at 10). A relaxation left violated at the cap is
#: treated as infeasible and goes to phase 1, whose first elastic step finds a feasible start at
#: once when the relaxation was feasible after all.
HINGE_V_MAX = 10.0


class SpecializedBound:
    """A Problem-3 solver for :func:`majorize_minimize` that remembers its last solution and
    warm-starts the next bound from it (SDCA duals, multipliers v, bias b).

    Inexact majorization-minimization: bound k (k = 0 the hinge relaxation, k >= 1 Problem 3
    at the k-th anchor) is solved to the certified gap

        eps_k = min(start_epsilon, max(epsilon, rho * (f_{k-1} - f_k)))   (k >= 2),

    eps_0 = eps_1 = start_epsilon, with f_k the ramp objective at the k-th anchor (the first
    MM step, from the hinge solution, usually makes the largest decrease), and eps_k = epsilon
    at the last bound Alg 1 may take (k = T). Solving a bound to within eps_k moves the next
    iterate at most eps_k above the exact MM step, so early bounds, whose decreases are large,
    need not be solved to the final accuracy (a bound solved so loosely that its point lies
    above the anchor's value is solved again to ``epsilon``); every bound still carries its
    own certificate
    L_t <= max F <= U_t with U_t - L_t <= eps_k (recorded in its certificate details).
    A starting bound (the hinge relaxation, or Problem 3 at a warm start's infeasible anchor)
    caps its multipliers at :data:`HINGE_V_MAX`. ``epoch_budget`` caps the SDCA
    epochs of all bounds together (the solve's ``max_epochs``; :meth:`exhausted`).
    """

    def __init__(self, seed: int | None, callback: Any, *, epsilon: float = 1e-5,
                 start_epsilon: float | None = None, rho: float = 0.02,
                 last_bound: int | None = None, epoch_budget: float = math.inf,
                 **options: Any) -> None:
        self.seed = seed
        self.callback = callback
        self.epsilon = float(epsilon)
        self.start_epsilon = self.epsilon if start_epsilon is None else float(start_epsilon)
        self.rho = float(rho)
        self.last_bound = last_bound
        self.epoch_budget = epoch_budget
        self.epochs = 0
        self.options = options
        self.previous: Solution | None = None
        self.calls = 0
        self.anchor_values: list[float] = []

    def exhausted(self) -> bool:
        """Whether the SDCA epochs of ``max_epochs`` are spent."""
        return self.epochs >= self.epoch_budget

    def accuracy(self, program: RateProgram, warm: dict | None) -> float:
        """eps_k of the class docstring for the bound about to be solved."""
        k = self.calls - 1
        if self.last_bound is not None and k >= self.last_bound:
            return self.epsilon
        if k >= 1 and warm is not None:
            self.anchor_values.append(float(warm["objective"]))
        if k <= 1 or len(self.anchor_values) < 2:
            return self.start_epsilon
        decrease = self.anchor_values[-2] - self.anchor_values[-1]
        return min(self.start_epsilon, max(self.epsilon, self.rho * decrease))

    def _solve(self, program: RateProgram, masks: list, warm: Any, eps: float, relay: Any,
               options: dict[str, Any]) -> Solution:
        sol = solve_bound_specialized(program, masks, warm, seed=self.seed, epsilon=eps,
                                      callback=relay,
                                      epoch_budget=self.epoch_budget - self.epochs, **options)
        self.epochs += sol.certificate.details["sdca_epochs"]
        return sol

    def __call__(self, program: RateProgram, masks: list, warm: dict | None) -> Solution:
        self.calls += 1
        bound_index = self.calls - 1
        eps = self.accuracy(program, warm)

        def relay(record: dict) -> None:
            if self.callback is not None:
                self.callback(dict(record, bound=bound_index))

        options = self.options
        starting = warm is None or bool(warm.get("start"))  # the hinge relaxation, or the
        if starting:  # bound at a warm start's infeasible anchor (patterns/rate_warm.py)
            # a multiplier at the cap sends the problem to phase 1 (below), so the warning's
            # advice to raise v_max does not apply to this bound
            options = dict(options, v_max=min(options.get("v_max", HINGE_V_MAX), HINGE_V_MAX),
                           warn_at_v_max=False)
        sol = self._solve(program, masks, self.previous or warm, eps, relay, options)
        if (not starting and eps > self.epsilon and sol.status in settings.SOLVED_STATUSES
                and sol.objective > float(warm["objective"])):
            # above the anchor's value, where this bound is tight, so Alg 1 would go uphill
            # (near a fixed point, e.g. a warm start at one): solved again from this solution
            # to the final gap
            eps = self.epsilon
            sol = self._solve(program, masks, sol, eps, relay, options)
        if (starting and sol.status != settings.OPTIMAL
                and not sol.certificate.details["budget_spent"]
                and (sol.certificate.max_violation or 0.0) > 1e-4):
            # a starting bound, unsolved, with a constraint violated (typically a multiplier
            # stuck at V_max): most likely infeasible, so the family looks for a feasible
            # start (the hinge relaxation, then phase 1) instead of starting MM from an
            # infeasible point
            sol.status = settings.INFEASIBLE
        sol.certificate.details["epsilon"] = eps
        if sol.status in settings.SOLVED_STATUSES:
            self.previous = sol
        return sol


def same_anchor_rows(program: RateProgram, result: Result) -> dict[str, Any]:
    """Rows for ``rc.verify``: the same convex subproblems solved by both solvers, and the
    fixed point of the result checked by the reference solver.

    The hinge relaxation and Problem 3 anchored at the mm solution (the bound the next MM
    iteration would solve, with the bounds gamma the deterministic repair left in force) are
    solved by the specialized solver (to a certified gap of 1e-7) and by CVXPY: a convex
    problem has one optimal value, so the two must agree (``*_rel_gap``). A fixed point x of
    Alg 1 is the minimizer of its own bound, so the reference's optimal value of the bound at x
    must reproduce f(x) (``fixed_point_rel_gap``): the two solvers take the same step from the
    same anchor, whatever path each took to it (MM's fixed points are local).
    """
    rows: dict[str, Any] = {}
    if not result.has_model:
        return rows
    margin = result.certificate.details.get("deterministic", {}).get("tightening_margin")
    in_force = program if margin is None else replace(program, gamma=program.gamma - margin)
    value = in_force.objective(result.w, result.b, "ramp")
    for name, prog, masks in (
            ("hinge_relaxation", program, program.bound_masks()),
            ("bound_at_mm_solution", in_force, in_force.bound_masks(result.w, result.b))):
        ref = solve_bound_cvxpy(prog, masks)
        if ref.status in settings.INFEASIBLE_STATUSES:  # no value to compare (the hinge
            # relaxation of a problem phase one starts): agreed when the specialized solver
            # certifies none, at the gap of mm's own first bound (at 1e-5 or 1e-7 its cutting
            # plane chased the unbounded dual for 15 s on 300 diabetes rows, to the same
            # status, against 0.6 s at 1e-3)
            mine = solve_bound_specialized(prog, masks, epsilon=START_EPSILON)
            rows[f"{name}_status"] = (mine.status, ref.status)
            rows[f"{name}_rel_gap"] = None if mine.status == settings.OPTIMAL else 0.0
            continue
        mine = solve_bound_specialized(prog, masks, epsilon=1e-7)
        rows[f"{name}_objective"] = (mine.objective, ref.objective)
        if np.isfinite(mine.objective) and np.isfinite(ref.objective):
            rows[f"{name}_rel_gap"] = abs(mine.objective - ref.objective) / max(
                1.0, abs(ref.objective))
            rows[f"{name}_violation"] = (mine.certificate.max_violation,
                                         ref.certificate.max_violation)
        if name == "bound_at_mm_solution":
            rows["fixed_point_rel_gap"] = (abs(value - ref.objective) / max(1.0, abs(value))
                                           if np.isfinite(ref.objective) else None)
    return rows
