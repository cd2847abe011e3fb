"""Majorization-minimization for the ramp problem (Goh et al. 2016, Algorithm 1).

Starting from a point feasible for Problem 2 (the hinge relaxation's solution is one, since the
hinge upper-bounds the ramp), each iteration builds Problem 3 at the current iterate (the convex
upper bound of eq. 5, tight there), solves it with any Problem-3 solver, and moves to its
solution. Because every bound is tight at the anchor, the ramp objective never increases and
every iterate stays feasible (up to the subproblem solver's tolerance). The loop stops at a fixed
point (the bound at the current iterate improves on it by at most ``tol``, relative: the
current iterate is returned), after ``max_iterations`` bounds, or when a budget is spent.

:func:`fixed_point` is the one MM loop of ratecons: the rate pattern (:func:`majorize_minimize`,
every Problem-3 solver) and the generic chain (:func:`ratecons.generic.solve_generic`, every
step solver) drive it with their own steps, and :func:`repair_ladder` is their one
deterministic repair.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import limits, settings
from ..canonical.rate_program import RateProgram
from ..solution import Solution
from .tracker import Tracker

__all__ = ["BoundSolver", "Outcome", "Repaired", "Step", "fixed_point", "limit_reached",
           "majorize_minimize", "repair_ladder"]

log = logging.getLogger(__name__)

#: a step whose optimal value lies more than this (relative) above the point it is tight at is
#: inexact, not the fixed point (:func:`fixed_point`); below it, the step solver's accuracy:
#: CLARABEL's exponential-cone steps of logistic loss + churn + 80% rule (2,000 Adult rows,
#: the CVXPY chain) came back 5.5e-6 and 1.1e-5 above their points, while the false fixed
#: point of the whole split (structured chain at 1657153) was 2.0e-2 above its point
ABOVE_POINT_TOL = 1e-4

#: ``solve_bound(program, masks, warm_start) -> Solution`` with primal {"w", "b"}; warm_start
#: is None for the hinge relaxation, else the anchor {"w", "b", "objective"} (its ramp objective)
BoundSolver = Callable[[RateProgram, list, dict | None], Solution]


def _iterate_record(program: RateProgram, w: np.ndarray, b: float, t: int,
                    sub: Solution | None, elapsed: float) -> tuple[dict[str, Any], list]:
    """The history record of the iterate (w, b) and the bound masks of Problem 3 anchored at
    it (:meth:`RateProgram.bound_masks`), all from one product of the features with w."""
    scores = program.block_scores(w, b)
    ramp = program.rows_at_scores(scores, "ramp")
    indicator = program.rows_at_scores(scores, "indicator")
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
    }, program.masks_at_block_scores(scores)


def limit_reached(exhausted: Callable[[], bool] | None = None) -> str | None:
    """The limit status when the solve's time limit or a step solver's own budget (e.g. the
    SDCA epochs of ``max_epochs``, ``exhausted``) is used up, else None."""
    if limits.active().expired():
        return settings.TIME_LIMIT
    if exhausted is not None and exhausted():
        return settings.ITERATION_LIMIT
    return None


@dataclass
class Step:
    """One convex step of Alg 1 as :func:`fixed_point` sees it.

    Attributes
    ----------
    status : str
        The step solver's status.
    point : Any
        The step's solution in the caller's own representation (None: no solution).
    value : float
        The non-convex objective f at that solution.
    lower : float
        A lower bound on the step's optimal value: its optimal value, or a dual bound.
    certified : bool
        Whether ``lower`` is a dual bound, valid whatever accuracy the step reached.
    info : Any
        The step solver's own answer (a :class:`Solution`, a ``ConvexStep``, ...).
    handled : str
        For a step without a solution: what the caller did or does instead (e.g. phase one
        restarted from the point); "" when nothing did, so the last iterate is kept.
    restored : bool
        Whether ``point`` is not the step's optimum but a point another search found (phase
        one, restarted where the tightened step was infeasible): it meets its own rows only to
        that search's tolerance, so the next step is taken whatever it gives, as a round's
        first step is.
    """

    status: str
    point: Any
    value: float
    lower: float
    certified: bool = False
    info: Any = None
    handled: str = ""
    restored: bool = False


@dataclass
class Outcome:
    """What :func:`fixed_point` ends with: the status, the returned iterate ``point`` and its
    ``value``, the step solved at that iterate (``at_point``, a fixed point) and the last step
    accepted, the number of steps solved and the last step's relative decrease; ``failed``
    when the step at ``point`` ended without a solution."""

    status: str
    point: Any
    value: float
    at_point: Step | None
    accepted: Step | None
    steps: int
    last_relative_decrease: float
    message: str = ""
    failed: bool = False


def fixed_point(point: Any, value: float, solve_step: Callable[[Any, float], Step], *,
                max_iterations: int, tol: float,
                exhausted: Callable[[], bool] | None = None,
                accept: Callable[[Step], None] | None = None) -> Outcome:
    """The one MM loop (Algorithm 1 of Goh et al. 2016) of the rate pattern and the chain.

    From ``point`` (objective ``value``; ``inf`` when the bounds just changed, so the first step
    is taken whatever it gives), ``solve_step(point, value)`` solves the convex upper bound
    tight at the point. With L its lower bound (:attr:`Step.lower`), the step improves on
    f(point) by at most f(point) - L; when (f(point) - L) / max(1, |f(point)|) <= ``tol`` the
    point is a fixed point and is returned (``optimal`` when L is certified or the step was
    solved to optimality, else the step's status). A step whose L lies above f(point) by more
    than :data:`ABOVE_POINT_TOL` (or ``tol``) relative cannot be right (the point meets its own
    step's rows, where the bound is tight, so the step's optimum is at most f(point)): the run
    ends with ``iteration_limit`` at the point, never ``optimal`` (the whole Adult split,
    logistic loss + churn + 80% rule at 1657153: a step 2.0e-2 above its point was taken for the
    fixed point). Otherwise the step's solution becomes the point (``accept`` sees it), unless
    it went uphill by more than ``tol`` (an inexact step), which ends the run with
    ``iteration_limit``. The loop also stops after ``max_iterations`` steps
    (``iteration_limit``), at the solve's time limit (``time_limit``), when ``exhausted()`` (the
    step solver's own budget, ``iteration_limit``), on a failed step (its limit status or
    ``iteration_limit``) and after a step that a spent budget stopped. A failed step is logged
    as a warning that the last iterate is kept, unless the step says what its caller did instead
    (:attr:`Step.handled`, logged at info level: the caller reports it).
    """
    status = settings.ITERATION_LIMIT
    steps = 0
    failed = False
    last_decrease = float("nan")
    at_point: Step | None = None
    accepted: Step | None = None
    message = ""
    while True:
        reached = limit_reached(exhausted) or (
            settings.ITERATION_LIMIT if steps >= max_iterations else None)
        if reached:
            status = reached
            message = _stopped(reached, steps, last_decrease, tol)
            break
        steps += 1
        step = solve_step(point, value)
        if step.status not in settings.SOLVED_STATUSES or step.point is None:
            status = (step.status if step.status in settings.LIMIT_STATUSES
                      else settings.ITERATION_LIMIT)
            message = (f"MM step {steps} ended with status {step.status}; "
                       + (step.handled or "the last iterate is kept"))
            (log.info if step.handled else log.warning)(message)
            failed = True
            break
        scale = max(1.0, abs(value))
        last_decrease = (value - step.lower) / scale
        if last_decrease < -max(tol, ABOVE_POINT_TOL):  # above the point it is tight at
            message = (f"MM step {steps} ended {-last_decrease:.3g} (relative) above the "
                       "objective of the point it is tight at: an inexact step or a point "
                       "outside its own rows, so the point is not certified as a fixed point")
            log.info(message)
            status = (step.status if step.status in settings.LIMIT_STATUSES
                      else settings.ITERATION_LIMIT)
            break
        if last_decrease <= tol:  # a fixed point: the point is returned
            at_point = step
            status = (settings.OPTIMAL if step.certified or step.status == settings.OPTIMAL
                      else step.status)
            break
        if step.value > value + tol * scale:  # an inexact step went uphill: Alg 1 must not
            message = (f"MM step {steps} went uphill by {step.value - value:.3g}; the fixed "
                       f"point is certified only to {last_decrease:.3g}, above tol = {tol:g}")
            log.info(message)
            status = (step.status if step.status in settings.LIMIT_STATUSES
                      else settings.ITERATION_LIMIT)
            break
        point, value, accepted = step.point, (np.inf if step.restored else step.value), step
        if accept is not None:
            accept(step)
        if step.status in settings.LIMIT_STATUSES and limit_reached(exhausted):
            status = step.status  # the step itself was stopped by the budget
            message = _stopped(status, steps, last_decrease, tol)
            break
    return Outcome(status, point, value, at_point, accepted, steps, last_decrease, message,
                   failed)


def _stopped(status: str, steps: int, last_decrease: float, tol: float) -> str:
    """What a budget's stop of MM means for its point (a ``time_limit`` result said nothing)."""
    budget = "the time limit" if status == settings.TIME_LIMIT else "the iteration budget"
    measured = (f" (last relative decrease {last_decrease:.3g}, tol {tol:g})"
                if np.isfinite(last_decrease) else "")
    return (f"{budget} ended MM after {steps} step(s), before a fixed point was certified"
            f"{measured}: the last point reached is returned")


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
    """Algorithm 1 on a rate program: :func:`fixed_point` over Problem 3 (eq. 5) at each iterate.

    Parameters
    ----------
    program : RateProgram
    solve_bound : callable
        ``solve_bound(program, masks, warm_start) -> Solution`` solving Problem 3 for the masks
        of :meth:`RateProgram.bound_masks` (e.g. the CVXPY reference or the specialized solver);
        ``warm_start`` is the anchor ``{"w", "b", "objective"}`` (its ramp objective). Its
        certificate's ``lower_bound``, when set, is a dual bound (Alg 2's L_t).
    start : Solution
        A feasible starting point with primal ``w`` and ``b``: the hinge relaxation's solution
        (cold) or a previous model (a warm start, :mod:`ratecons.patterns.rate_warm`); its dual
        ``xi`` and ``v``, when set, are passed to the first bound (a warm start of SDCA).
    max_iterations : int
        T of Algorithm 1: the most bounds solved (0: return the start).
    tol : float
        The fixed-point tolerance of :func:`fixed_point`.
    callback : callable, optional
        Receives each iterate's record.
    exhausted : callable, optional
        ``exhausted() -> bool``: whether the bound solver's own budget is spent.

    Returns
    -------
    Solution
        The iterate :func:`fixed_point` returns, with its status. ``history`` holds every
        iterate's ramp objective, ramp and indicator row values, the subproblem certificate
        and ``time``, the seconds since the start (``start.solve_time`` plus this loop);
        ``certificate.details`` ``last_relative_decrease`` (of the last bound solved),
        ``mm_iterations`` (iterates after the start) and ``mm_steps`` (bounds solved).
    """
    tracker = Tracker("majorization-minimization (Alg 1)", max_iterations=max_iterations)
    began = tracker.start
    offset = float(start.solve_time or 0.0)
    w, b = np.asarray(start.primal["w"], dtype=np.float64), float(start.primal["b"])
    record, masks = _iterate_record(program, w, b, 0, start, offset)
    history = [record]
    if callback:
        callback(dict(record, stage="mm"))

    # a warm start's duals (SDCA's xi, the multipliers v) seed the first step only; later
    # steps are seeded by the step solver from its own previous bound
    seeds = {k: v for k, v in start.dual.items() if k in ("xi", "v")}

    def solve(point: tuple, value: float) -> Step:
        w, b, _, masks = point
        warm = {"w": w, "b": b, "objective": value, **seeds}
        seeds.clear()
        sub = solve_bound(program, masks, warm)
        if sub.status not in settings.SOLVED_STATUSES:
            return Step(sub.status, None, float("nan"), float("nan"), info=sub)
        lower = sub.certificate.lower_bound
        certified = lower is not None and bool(np.isfinite(lower))
        w_new, b_new = np.asarray(sub.primal["w"]), float(sub.primal["b"])
        new, masks = _iterate_record(program, w_new, b_new, len(history), sub,
                                     offset + time.perf_counter() - began)
        return Step(sub.status, (w_new, b_new, new, masks), new["objective"],
                    float(lower) if certified else sub.objective, certified, sub)

    def accept(step: Step) -> None:
        history.append(step.point[2])
        if callback:
            callback(dict(step.point[2], stage="mm"))

    out = fixed_point((w, b, record, masks), record["objective"], solve,
                      max_iterations=max_iterations, tol=tol, exhausted=exhausted,
                      accept=accept)
    w, b, record, _ = out.point
    last = out.at_point or out.accepted
    last_sub = start if last is None else last.info
    details: dict[str, Any] = {"mm_iterations": len(history) - 1, "mm_steps": out.steps,
                               "last_relative_decrease": out.last_relative_decrease,
                               "tol": tol, "last_subproblem": last_sub.certificate.to_dict()}
    if out.message:
        details["message"] = out.message
    tracker.iterations = out.steps
    return tracker.solution({"w": w, "b": np.float64(b)}, objective=record["objective"],
                            status=out.status, dual=last_sub.dual, lower=None,
                            upper=record["objective"], max_violation=record["max_violation"],
                            details=details, history=history, solver=f"mm({last_sub.solver})")


@dataclass
class Repaired:
    """What :func:`repair_ladder` ends with: the point, the re-solves it took, whether the
    intercept search chose the point (it is then off the MM fixed point) and how many times the
    intercept search moved a point (each followed by a continuation while ``resumes`` lasts)."""

    point: Any
    rounds: int
    intercepted: bool
    moves: int = 0
    #: the moved point was returned because every continuation from a moved point ended at a
    #: fixed point whose deterministic model misses a row again
    continuations_missed: bool = False


def repair_ladder(point: Any, *, missed: Callable[[Any], np.ndarray],
                  intercept: Callable[[Any, bool], Any | None],
                  resolve: Callable[[Any, np.ndarray, int], Any | None], rounds: int,
                  eager: bool, resume: Callable[[Any, np.ndarray, int], Any | None] | None = None,
                  resumes: int | None = None) -> Repaired:
    """The one deterministic repair of the rate pattern and the chain.

    The ramp and the indicator differ near the boundary, so the deterministic model of an MM
    fixed point may miss a ramp-satisfied constraint on the training data. While it does
    (``missed(point)``: the violation of every constraint, 0 where met):

    1. the intercept search, ``intercept(point, last)``: a point whose deterministic model
       meets every constraint by moving the intercept only (None when there is none; when
       ``last``, the caller may return its best effort instead), tried in every round when
       ``eager`` (an exact, cheap search: the rate pattern's bias repair) or only as the last
       resort otherwise (the chain's threshold search);
    2. ``resolve(point, missed, round)``: the violated bounds tightened and MM re-run from
       the point (None when nothing more can be re-solved, e.g. a budget is spent: the
       intercept search is then the last resort), at most ``rounds`` times.

    A moved point is off the fixed point its MM run certified, so MM continues from it (Alg 1
    from the moved point, which meets the constraints; issue 32), at most ``resumes`` times:
    ``resume(found, missed, moves)`` when given (a round of its own, before the re-solves are
    spent), else, in the last-resort ladder, ``resolve(found, missed, 0)`` (the re-solve from
    the moved point, with the first round's margins). The continuation's fixed point is checked
    again (``resumes`` None: ``settings.BIAS_CONTINUATION_ROUNDS``). When a continuation cannot
    run (None), the moved point is returned (``intercepted``:
    the caller's status must then not claim the fixed point). When the last-resort ladder has
    spent its ``resumes`` and the last continuation's point misses a row again, the last moved
    point is returned if it met every row (``intercepted`` and ``continuations_missed``: a
    model that meets the constraints on the training data before a certified one that does
    not, as the user reads them), else the last certified point with what it misses, so that
    the caller's status says so.
    """
    done = moves = 0
    resumes = settings.BIAS_CONTINUATION_ROUNDS if resumes is None else resumes
    met = None  # the last moved point that met every row
    while True:
        miss = missed(point)
        if not np.any(miss > 0.0):
            return Repaired(point, done, False, moves)
        last = done >= rounds
        if eager or last:
            if not eager and resume is None and moves >= resumes:  # continuations spent
                if met is not None:
                    return Repaired(met, done, True, moves, continuations_missed=True)
                return Repaired(point, done, False, moves)
            found = intercept(point, last)
            if found is not None:
                met = found if not np.any(missed(found) > 0.0) else None
                moves += 1
                again = None
                if moves <= resumes and resume is not None and not last:
                    again = resume(found, miss, moves)
                elif resume is None and not eager:
                    again = resolve(found, miss, 0)
                if again is None:
                    return Repaired(found, done, True, moves)
                point = again
                continue
        if last:
            return Repaired(point, done, False, moves)
        again = resolve(point, miss, done)
        if again is None:
            rounds = done  # the intercept search is the last resort now
            continue
        point, done = again, done + 1
