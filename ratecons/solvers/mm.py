"""Majorization-minimization for the ramp problem (Goh et al. 2016, Algorithm 1).

Starting from a point feasible for Problem 2 (the hinge relaxation's solution is one, since the
hinge upper-bounds the ramp), each iteration builds Problem 3 at the current iterate (the convex
upper bound of eq. 5, tight there), solves it with any Problem-3 solver, and moves to its
solution. Because every bound is tight at the anchor, the ramp objective never increases and
every iterate stays feasible (up to the subproblem solver's tolerance). The loop stops when the
objective decreases by less than ``tol`` (relative) or after ``max_iterations``.
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

__all__ = ["majorize_minimize", "BoundSolver"]

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


def majorize_minimize(
    program: RateProgram,
    solve_bound: BoundSolver,
    start: Solution,
    *,
    max_iterations: int = settings.MM_MAX_ITERATIONS,
    tol: float = settings.MM_RELATIVE_TOL,
    callback: Callable[[dict[str, Any]], None] | None = None,
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
        T of Algorithm 1.
    tol : float
        Stop when the ramp objective decreases by less than ``tol * max(1, |objective|)``.
    callback : callable, optional
        Receives each iterate's record.

    Returns
    -------
    Solution
        The last accepted iterate; ``history`` holds every iterate's ramp objective, ramp and
        indicator row values, the subproblem certificate and ``time``, the seconds since the
        start (``start.solve_time`` plus the time spent in this loop). Status ``optimal`` means the
        objective stopped decreasing (a stationary point of the MM scheme, not a global optimum
        of the non-convex Problem 2) on a bound solved to its tolerance; ``iteration_limit``
        means T iterations were used, or the bound that stopped the loop hit its own
        iteration cap (``time_limit`` likewise).
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
    for t in range(1, max_iterations + 1):
        if limits.active().expired():
            status = settings.TIME_LIMIT
            break
        masks = program.bound_masks(w, b)
        sub = solve_bound(program, masks, {"w": w, "b": b, "objective": record["objective"]})
        if sub.status not in settings.SOLVED_STATUSES:
            log.warning("MM iteration %d: subproblem ended with status %s; keeping the last "
                        "iterate", t, sub.status)
            status = settings.OPTIMAL_INACCURATE
            break
        w_new, b_new = np.asarray(sub.primal["w"]), float(sub.primal["b"])
        new = _iterate_record(program, w_new, b_new, t, sub,
                              offset + time.perf_counter() - began)
        decrease = record["objective"] - new["objective"]
        # a stop at no decrease certifies a fixed point of Alg 1 only when the bound that
        # showed it was solved to its tolerance; a bound stopped by its own budget (e.g.
        # SDCA's max_epochs) passes its limit status on
        stopped = sub.status if sub.status in settings.LIMIT_STATUSES else settings.OPTIMAL
        if decrease < -tol * max(1.0, abs(record["objective"])):
            # An inexact subproblem solve may step uphill: Alg 1 must not, so keep the iterate.
            log.info("MM iteration %d increased the objective by %.3g; stopping", t, -decrease)
            status = stopped
            break
        w, b, record, last_sub = w_new, b_new, new, sub
        history.append(record)
        if callback:
            callback(dict(record, stage="mm"))
        if decrease <= tol * max(1.0, abs(record["objective"])):
            status = stopped
            break
    return Solution(
        status,
        record["objective"],
        primal={"w": w, "b": np.float64(b)},
        dual=dict(last_sub.dual),
        certificate=Certificate(
            upper_bound=record["objective"],
            max_violation=record["max_violation"],
            details={"mm_iterations": len(history) - 1,
                     "last_subproblem": last_sub.certificate.to_dict()},
        ),
        history=history,
        solver=f"mm({last_sub.solver})",
        solve_time=time.perf_counter() - began,
    )
