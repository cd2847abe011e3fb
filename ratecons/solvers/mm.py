"""Majorization-minimization for the ramp problem (Goh et al. 2016, Algorithm 1).

Starting from a point feasible for Problem 2 (the hinge relaxation's solution is one, since the
hinge upper-bounds the ramp), each iteration builds Problem 3 at the current iterate (the convex
upper bound of eq. 5, tight there), solves it with any Problem-3 solver, and moves to its
solution. Because every bound is tight at the anchor, the ramp objective never increases and
every iterate stays feasible (up to the subproblem solver's tolerance). The loop stops at a fixed
point (the bound at the current iterate improves on it by at most ``tol``, relative: the
current iterate is returned), after ``max_iterations`` bounds, or when a budget is spent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import limits, settings
from ..canonical.rate_program import RateProgram
from ..solution import Certificate, Solution

__all__ = ["BoundSolver", "limit_reached", "majorize_minimize"]

log = logging.getLogger(__name__)

#: ``solve_bound(program, masks, warm_start) -> Solution`` with primal {"w", "b"}; warm_start
#: is None for the hinge relaxation, else the anchor {"w", "b", "objective"} (its ramp objective)
BoundSolver = Callable[[RateProgram, list, dict | None], Solution]


def _iterate_record(program: RateProgram, w: np.ndarray, b: float, t: int,
                    sub: Solution | None, elapsed: float) -> dict[str, Any]:
    ramp = program.row_values(w, b, "ramp")
    indicator = program.row_values(w, b, "indicator")
    return {
        "iteration": t,
        "objective": float(ramp[0]) + program.regularizer(w),
        "ramp_rows": ramp,
        "indicator_rows": indicator,
        "max_violation": float(np.max(np.maximum(ramp[1:] - program.gamma, 0), initial=0.0)),
        "subproblem_status": None if sub is None else sub.status,
        "subproblem_objective": None if sub is None else sub.objective,
        "subproblem_time": None if sub is None else sub.solve_time,
        "subproblem_certificate": None if sub is None else sub.certificate.to_dict(),
        "time": elapsed,
    }


def limit_reached(exhausted: Callable[[], bool] | None = None) -> str | None:
    """The limit status when the solve's time limit or a step solver's own budget (e.g. the
    SDCA epochs of ``max_epochs``, ``exhausted``) is used up, else None."""
    if limits.active().expired():
        return settings.TIME_LIMIT
    if exhausted is not None and exhausted():
        return settings.ITERATION_LIMIT
    return None


def majorize_minimize(
    program: RateProgram,
    solve_bound: BoundSolver,
    start: Solution,
    *,
    max_iterations: int = settings.MM_MAX_ITERATIONS,
    tol: float = settings.MM_RELATIVE_TOL,
    callback: Callable[[dict[str, Any]], None] | None = None,
    exhausted: Callable[[], bool] | None = None,
) -> Solution:
    """Algorithm 1: minimize Problem 2 by successive tight convex upper bounds (Problem 3).

    Parameters
    ----------
    program : RateProgram
    solve_bound : callable
        ``solve_bound(program, masks, warm_start) -> Solution`` solving Problem 3 for the masks
        of :meth:`RateProgram.bound_masks` (e.g. the CVXPY reference or the specialized solver);
        ``warm_start`` is the anchor ``{"w", "b", "objective"}`` (its ramp objective).
    start : Solution
        A feasible starting point with primal ``w`` and ``b`` (typically the hinge relaxation).
    max_iterations : int
        T of Algorithm 1: the most bounds solved (0: return the start).
    tol : float
        The fixed-point tolerance: stop when the bound at the current iterate x cannot improve
        on it by more than ``tol * max(1, |f(x)|)``, i.e. f(x) - L <= tol * max(1, |f(x)|)
        with L a certified lower bound on the bound's optimal value (the solver's optimal
        value, or Alg 2's L_t for the specialized solver).
    callback : callable, optional
        Receives each iterate's record.
    exhausted : callable, optional
        ``exhausted() -> bool``: whether the bound solver's own budget is spent (the loop then
        stops with ``iteration_limit``, as at the solve's ``time_limit`` with ``time_limit``).

    Returns
    -------
    Solution
        On a fixed point, the iterate x at which the last bound was solved (Problem 3 at x then
        reproduces its objective to ``tol``: what ``export_mps(at=result)`` checks), with
        status ``optimal`` (a stationary point of the MM scheme, not a global optimum of the
        non-convex Problem 2); otherwise the last accepted iterate with status
        ``iteration_limit`` (T bounds solved, a budget spent, or a last bound not solved
        accurately enough to certify the tolerance) or ``time_limit``. ``history`` holds every
        iterate's ramp objective, ramp and indicator row values, the subproblem certificate
        and ``time``, the seconds since the start (``start.solve_time`` plus this loop);
        ``certificate.details["last_relative_decrease"]`` is (f(x) - L) / max(1, |f(x)|) of
        the last bound solved and ``details["mm_steps"]`` the number of bounds solved.
    """
    began = time.perf_counter()
    offset = float(start.solve_time or 0.0)
    w, b = np.asarray(start.primal["w"], dtype=np.float64), float(start.primal["b"])
    record = _iterate_record(program, w, b, 0, start, offset)
    history = [record]
    if callback:
        callback(dict(record, stage="mm"))
    status = settings.ITERATION_LIMIT
    last_sub = start
    last_decrease = float("nan")
    steps = 0
    message = ""
    for t in range(1, max_iterations + 1):
        reached = limit_reached(exhausted)
        if reached:
            status = reached
            break
        masks = program.bound_masks(w, b)
        anchor_value = record["objective"]
        sub = solve_bound(program, masks, {"w": w, "b": b, "objective": anchor_value})
        steps += 1
        if sub.status not in settings.SOLVED_STATUSES:
            log.warning("MM iteration %d: subproblem ended with status %s; keeping the last "
                        "iterate", t, sub.status)
            status = settings.OPTIMAL_INACCURATE
            break
        scale = max(1.0, abs(anchor_value))
        lower = sub.certificate.lower_bound
        certified = lower is not None and np.isfinite(lower)  # a dual bound, valid at any gap
        lower = float(lower) if certified else sub.objective
        last_decrease = (anchor_value - lower) / scale
        if last_decrease <= tol:
            # a fixed point: the bound at x improves on f(x) by at most tol; x is returned
            # (``optimal`` when that is certified: a dual bound or a bound solved to optimality)
            status = (settings.OPTIMAL if certified or sub.status == settings.OPTIMAL
                      else sub.status)
            last_sub = sub
            break
        w_new, b_new = np.asarray(sub.primal["w"]), float(sub.primal["b"])
        new = _iterate_record(program, w_new, b_new, t, sub,
                              offset + time.perf_counter() - began)
        if new["objective"] > anchor_value + tol * scale:
            # an inexact bound may step uphill: Alg 1 must not, so keep the iterate
            message = (f"MM step {t} went uphill by {new['objective'] - anchor_value:.3g} (a "
                       f"bound solved to gap {lower - sub.objective:.3g}); the fixed point is "
                       f"certified only to {last_decrease:.3g}, above tol = {tol:g}")
            log.info(message)
            status = sub.status if sub.status in settings.LIMIT_STATUSES \
                else settings.ITERATION_LIMIT
            break
        w, b, record, last_sub = w_new, b_new, new, sub
        history.append(record)
        if callback:
            callback(dict(record, stage="mm"))
        if sub.status in settings.LIMIT_STATUSES and limit_reached(exhausted):
            status = sub.status  # the bound itself was stopped by the budget
            break
    details: dict[str, Any] = {"mm_iterations": len(history) - 1, "mm_steps": steps,
                               "last_relative_decrease": last_decrease, "tol": tol,
                               "last_subproblem": last_sub.certificate.to_dict()}
    if message:
        details["message"] = message
    return Solution(
        status,
        record["objective"],
        primal={"w": w, "b": np.float64(b)},
        dual=dict(last_sub.dual),
        certificate=Certificate(
            upper_bound=record["objective"],
            max_violation=record["max_violation"],
            details=details,
        ),
        history=history,
        solver=f"mm({last_sub.solver})",
        solve_time=time.perf_counter() - began,
    )
