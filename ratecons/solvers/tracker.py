"""The solver skeleton: one tracker of a run's best point, bounds, limits, events and stop.

Every solver of the house runs its own mathematics and leaves the bookkeeping to a
:class:`Tracker`, in the spirit of SciPy's ``OptimizeResult`` and its callback halting. The
loops written on it (CCG, the subgradient methods, the ranking solvers, the MRC LP and bounds)
use all of it; the runs whose loop lives elsewhere (MM, the SDCA bound, the DRO methods, the
CVXPY runs, the generic chain and phase 1) hand it their own status, bounds, history and
clock, and it builds their Solution all the same:

- the **limits**: ``time_limit`` (seconds, the method's own or the active
  :func:`ratecons.limits.active` budget, whichever ends first) and ``max_iterations`` (the
  method's own cap name, e.g. CCG's ``k_max``, resolved once by :func:`iteration_cap`);
  :meth:`Tracker.check` says when one of them, or the certified gap, stops the run;
- the **best point** (:meth:`Tracker.offer`, minimization) and the certified **bounds**
  (:meth:`Tracker.bound`), from which the gap follows;
- the **progress events**: :meth:`Tracker.record` appends one record to the history and hands
  a copy to the callback, under one set of key names (:data:`EVENT_KEYS`) plus the method's
  own extras;
- the **stop reason** (:data:`STOP_STATUS`), which maps to the one status vocabulary of
  :mod:`ratecons.settings`; a status reported by a backend or a step (HiGHS, CLARABEL through
  CVXPY, already translated by the backend's own table) gives its reason by
  :data:`STATUS_REASON`;
- the :class:`~ratecons.solution.Solution` built from all of it (:meth:`Tracker.solution`):
  no module outside this one constructs a ``Solution`` (``tests/house/test_solver_skeleton.py``
  checks it); :func:`no_point` is the answer of a step that could not run,
  :func:`revised` the one copy of a Solution with some fields changed and
  :func:`from_record` a stored one read back.

The warning rule: a run that a limit, not a certificate, ended (status ``iteration_limit`` or
``time_limit``) warns with one :class:`~ratecons.errors.ConvergenceWarning`, once per solve
(:func:`ratecons.limits.current`): the Tracker of a step inside another run is built with
``warn=False``, and a second limit-ended Tracker of the same solve stays silent. Outside a
solve (a solver called directly) every limit-ended run warns.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import limits
from ..caller import user_stacklevel
from ..errors import ConvergenceWarning, parameter_error
from ..settings import (
    ITERATION_LIMIT,
    LIMIT_STATUSES,
    NUMERICAL_ERROR,
    OPTIMAL,
    ROUNDING_TOL,
    TIME_LIMIT,
)
from ..solution import Certificate, Solution

__all__ = ["EVENT_KEYS", "STATUS_REASON", "STOP_STATUS", "HeldWarnings", "Tracker",
           "iteration_cap",
           "from_record", "limit_warning", "no_point", "revised", "rounded_lower"]

logger = logging.getLogger(__name__)

#: the shared keys of every progress event: the iteration counter, the method's stage, the
#: objective at the current iterate, certified lower and upper bounds on the optimum, their
#: gap (upper - lower), the largest constraint violation and the elapsed seconds
EVENT_KEYS = ("iteration", "stage", "objective", "lower", "upper", "gap", "max_violation",
              "time")
#: names that mean one of :data:`EVENT_KEYS` and are refused in an event (one name each)
_OTHER_NAMES = frozenset({"epoch", "R", "lower_bound", "upper_bound", "primal", "dual",
                          "best_objective"})

#: why a run stopped -> its status
STOP_STATUS = {
    "gap": OPTIMAL,                    # the certificate reached the tolerance
    "iteration_limit": ITERATION_LIMIT,
    "time_limit": TIME_LIMIT,
    "stalled": ITERATION_LIMIT,        # a stopping rule short of a certificate
    "numerical_error": NUMERICAL_ERROR,
}
#: a status a backend or a step reported (already in the one vocabulary) -> the stop reason
#: recorded in ``details["stopped_by"]``; any other status (optimal and the like: the
#: backend's own certificate decided) is reason ``"backend"``
STATUS_REASON = {ITERATION_LIMIT: "iteration_limit", TIME_LIMIT: "time_limit",
                 NUMERICAL_ERROR: "numerical_error"}

#: the solves (their active :class:`ratecons.limits.Limits`) that have warned already
_WARNED: weakref.WeakSet = weakref.WeakSet()


def _first_warning() -> bool:
    """Whether a limit warning is the first of the running solve (always outside a solve)."""
    solve = limits.current()
    if solve is None:
        return True
    if solve in _WARNED:
        return False
    _WARNED.add(solve)
    return True


def rounded_lower(lower: float, upper: float) -> float:
    """``lower``, or ``upper`` where ``lower`` exceeds it by rounding only
    (:data:`~ratecons.settings.ROUNDING_TOL`): a lower bound above the value it bounds is
    impossible, and a reader comparing the two should not meet it."""
    if 0.0 < lower - upper <= ROUNDING_TOL * max(1.0, abs(upper)):
        return upper
    return lower


def iteration_cap(owner: str, default: int | None, max_iterations: int | None = None,
                  **own: int | None) -> tuple[int | None, str]:
    """The iteration cap of a run and the name the user gave it.

    ``max_iterations`` is the common name; ``own`` holds the method's own name for the same
    cap (CCG's ``k_max``, ``max_epochs``, ``max_iter``), kept working for its users. Giving
    both is an error; neither gives ``default``.

    Returns
    -------
    cap : int or None
    name : str
        The name to quote in messages (``max_iterations`` unless the own name was used).
    """
    if len(own) > 1:
        raise TypeError(f"iteration_cap takes one own name; got {sorted(own)}")
    own_name, own_value = next(iter(own.items())) if own else ("max_iterations", None)
    if max_iterations is not None and own_value is not None:
        raise parameter_error("max_iterations", owner,
                              f"given once (it is the method's {own_name!r})", max_iterations)
    name, cap = (own_name, own_value) if own_value is not None else ("max_iterations",
                                                                    max_iterations)
    if cap is None:
        return default, own_name
    if isinstance(cap, bool) or not isinstance(cap, numbers.Integral) or cap < 1:
        raise parameter_error(name, owner, "an int >= 1", cap)
    return int(cap), name


class Tracker:
    """Best point, bounds, limits, events and stop reason of one solver run.

    Parameters
    ----------
    solver : str
        Name of the method, for the Solution and the messages.
    max_iterations : int, optional
        Iteration cap (see :func:`iteration_cap`); None for none.
    cap_name : str
        The cap's name as the user gave it, quoted when it stops the run.
    time_limit : float, optional
        The method's own budget in seconds; the active :mod:`ratecons.limits` apply too.
    tol : float, optional
        Stop with reason ``"gap"`` once ``gap <= tol``; None: the method decides.
    relative : bool
        Compare ``tol`` with the gap relative to ``max(|upper|, scale_floor)``.
    scale_floor : float
        The smallest scale of the relative gap (DRO's tolerance is relative to
        ``max(1, |F|)``: ``scale_floor=1``).
    callback : callable, optional
        Receives a copy of every event.
    stage : str, optional
        Written into every event (``"ccg"``, ...) when given.
    warn : bool
        Apply the warning rule of the module (False for a step inside another run, whose own
        Tracker speaks for it).
    """

    def __init__(self, solver: str, *, max_iterations: int | None = None,
                 cap_name: str = "max_iterations", time_limit: float | None = None,
                 tol: float | None = None, relative: bool = False,
                 scale_floor: float = 1e-300,
                 callback: Callable[[dict[str, Any]], None] | None = None,
                 stage: str | None = None, warn: bool = True) -> None:
        self.solver = solver
        self.start = time.perf_counter()
        budget = limits.active().remaining()
        if time_limit is not None and math.isfinite(time_limit):
            budget = min(budget, float(time_limit))
        self.time_limit = budget if math.isfinite(budget) else None
        #: the limit as the user gave it (the method's own or the solve's), for messages
        self.time_limit_given = time_limit if time_limit is not None and math.isfinite(
            time_limit) else limits.active().time_limit
        self.deadline = self.start + budget
        self.max_iterations = max_iterations
        self.cap_name = cap_name
        self.tol = tol
        self.relative = relative
        self.scale_floor = scale_floor
        self.warn = warn
        self.callback = callback
        self.stage = stage
        self.best_value = math.inf
        self.best_point: dict[str, np.ndarray] | None = None
        self.lower = -math.inf
        self.upper = math.inf
        self.iterations = 0
        self.history: list[dict[str, Any]] = []
        self.stop_reason: str | None = None
        self._why = ""

    # ------------------------------------------------------------------ limits
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        """Seconds left (``inf`` without a budget), for the backend calls of the run."""
        return max(0.0, self.deadline - time.perf_counter())

    def expired(self) -> bool:
        return time.perf_counter() >= self.deadline

    # ------------------------------------------------------------------ best point, bounds
    def offer(self, value: float, **point: np.ndarray) -> bool:
        """Keep ``point`` (copied) when ``value`` is the lowest so far; True when it is."""
        if not value < self.best_value:
            return False
        self.best_value = float(value)
        self.best_point = {k: np.array(v, copy=True) for k, v in point.items()}
        self.upper = min(self.upper, self.best_value)
        return True

    def bound(self, lower: float | None = None, upper: float | None = None) -> None:
        """Tighten the certified bounds on the optimum."""
        if lower is not None and lower > self.lower:
            self.lower = float(lower)
        if upper is not None and upper < self.upper:
            self.upper = float(upper)

    @property
    def gap(self) -> float:
        """``upper - lower`` (inf while a bound is missing)."""
        if not (math.isfinite(self.upper) and math.isfinite(self.lower)):
            return math.inf
        return self.upper - self.lower

    def relative_gap(self, gap: float | None = None, upper: float | None = None) -> float:
        """``gap / max(|upper|, scale_floor)`` (the tracked gap and upper bound by default)."""
        gap = self.gap if gap is None else gap
        upper = self.upper if upper is None else upper
        return gap / max(abs(upper), self.scale_floor)

    def _gap_measure(self) -> float:
        return self.relative_gap() if self.relative else self.gap

    # ------------------------------------------------------------------ events and stops
    def record(self, iteration: int, **fields: Any) -> dict[str, Any]:
        """Append the event of ``iteration`` (shared keys first) and call the callback."""
        bad = _OTHER_NAMES.intersection(fields)
        if bad:
            raise ValueError(f"progress events use the keys {EVENT_KEYS}; got {sorted(bad)}")
        self.iterations = max(self.iterations, int(iteration))
        entry: dict[str, Any] = {"iteration": int(iteration)}
        if self.stage is not None:
            entry["stage"] = self.stage
        entry.update(fields)
        entry["time"] = self.elapsed()
        self.history.append(entry)
        logger.debug("%s iteration %d: %s", self.solver, iteration, entry)
        if self.callback is not None:
            self.callback(dict(entry))
        return entry

    def stop(self, reason: str, why: str = "") -> bool:
        """Set the stop reason (a key of :data:`STOP_STATUS`); returns True."""
        if reason not in STOP_STATUS:
            raise ValueError(f"unknown stop reason {reason!r}; expected one of "
                             f"{sorted(STOP_STATUS)}")
        self.stop_reason, self._why = reason, why
        return True

    def check(self, iteration: int) -> bool:
        """After ``iteration``: True (and the reason set) when the gap reached ``tol``, the
        budget is spent or the cap reached."""
        self.iterations = max(self.iterations, int(iteration))
        if self.tol is not None and self._gap_measure() <= self.tol:
            return self.stop("gap")
        if self.expired():
            return self.stop("time_limit")
        if self.max_iterations is not None and iteration >= self.max_iterations:
            return self.stop("iteration_limit")
        return False

    def _explain(self, reason: str) -> str:
        if self._why:
            return self._why
        if reason == "iteration_limit":
            capped = self.max_iterations is not None and self.iterations >= self.max_iterations
            return (f"reached {self.cap_name}={self.max_iterations}" if capped
                    else "reached its iteration limit")
        if reason == "time_limit":
            return f"reached time_limit={self.time_limit_given:g} s" \
                if self.time_limit_given is not None else "reached time_limit"
        return f"stopped ({reason})"

    # ------------------------------------------------------------------ the Solution
    def solution(self, primal: dict[str, Any], *, objective: float | None = None,
                 status: str | None = None, dual: dict[str, Any] | None = None,
                 lower: float | None = None, upper: float | None = None,
                 gap: float | None = None, max_violation: float | None = None,
                 details: dict[str, Any] | None = None, solver: str | None = None,
                 advice: str = "", history: list[dict[str, Any]] | None = None,
                 solve_time: float | None = None) -> Solution:
        """The run's :class:`~ratecons.solution.Solution`.

        ``status`` defaults to :data:`STOP_STATUS` of the stop reason (``iteration_limit``
        when none was set); a given status with no reason set is the backend's or the step's,
        its reason :data:`STATUS_REASON`. ``objective``, ``lower``, ``upper`` and ``gap``
        default to the tracked values (None for a bound that is not finite), ``history`` to
        the recorded events and ``solve_time`` to the seconds since the Tracker was built
        (a solver with its own clock, e.g. one that leaves its checkpoints out, passes it).
        A limit status warns by the module's rule, with ``advice``.
        """
        reason = self.stop_reason or (STATUS_REASON.get(status, "backend") if status
                                      else "iteration_limit")
        status = status or STOP_STATUS[reason]
        lower = self.lower if lower is None else lower
        upper = self.upper if upper is None else upper
        lower = lower if lower is not None and math.isfinite(lower) else None
        upper = upper if upper is not None and math.isfinite(upper) else None
        if lower is not None and upper is not None:
            lower = rounded_lower(lower, upper)
        if gap is None and lower is not None and upper is not None:
            gap = upper - lower
        if objective is None:
            objective = self.best_value if math.isfinite(self.best_value) else math.nan
        if status in LIMIT_STATUSES and self.warn:
            shown = "none" if gap is None else f"{gap:.3g}"
            limit_warning(f"{self.solver}: {self._explain(reason)} after {self.iterations} "
                          f"iterations (status {status}) with certified gap {shown}; "
                          + ("the point returned is the best found, not a certified "
                             "optimum. " if primal else "no point was reached. ") + advice)
        info = {"iterations": self.iterations, "stopped_by": reason, **(details or {})}
        return Solution(status=status, objective=float(objective), primal=dict(primal),
                        dual=dict(dual or {}),
                        certificate=Certificate(lower_bound=lower, upper_bound=upper, gap=gap,
                                                max_violation=max_violation, details=info),
                        history=self.history if history is None else history,
                        solver=solver or self.solver,
                        solve_time=self.elapsed() if solve_time is None else solve_time)


def limit_warning(message: str) -> bool:
    """Warn ``message`` (a :class:`~ratecons.errors.ConvergenceWarning`) by the module's rule:
    once per solve. For a status a limit set after the run's Tracker finished (a repair that
    could not certify its point). Returns whether it warned."""
    if not _first_warning():
        return False
    warnings.warn(message.rstrip(), ConvergenceWarning, stacklevel=user_stacklevel())
    return True


class HeldWarnings:
    """The warnings of a ``with`` block, held back until the caller knows whether the block's
    run is the answer: :meth:`replay` shows them, the run's limit warnings only if asked.

    For a solve that runs twice and keeps one answer (:mod:`ratecons.constant_start`): the
    discarded run's :class:`~ratecons.errors.ConvergenceWarning` speaks of a model the user
    never gets, and under the once-per-solve rule it would silence the kept run's. A block
    leaves the rule as it found it; :meth:`replay` applies it to the limit warnings shown.
    """

    def __init__(self) -> None:
        self.caught: list[warnings.WarningMessage] = []
        self._catcher = warnings.catch_warnings(record=True)
        self._solve: limits.Limits | None = None
        self._had_warned = False

    def __enter__(self) -> HeldWarnings:
        self._solve = limits.current()
        self._had_warned = self._solve is not None and self._solve in _WARNED
        self.caught = self._catcher.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc: object) -> None:
        self._catcher.__exit__(*exc)
        if self._solve is not None and not self._had_warned:
            _WARNED.discard(self._solve)

    def replay(self, limit_warnings: bool) -> None:
        """Show the held warnings under the filters in force: every one but the limit
        warnings, and these too (once per solve) if ``limit_warnings``."""
        for held in self.caught:
            if issubclass(held.category, ConvergenceWarning) and not (
                    limit_warnings and _first_warning()):
                continue
            warnings.warn_explicit(held.message, held.category, held.filename, held.lineno)


def no_point(status: str, *, solver: str = "", details: dict[str, Any] | None = None,
             history: list[dict[str, Any]] | None = None, solve_time: float = 0.0) -> Solution:
    """The answer of a run or step that ended without a point (``status``: infeasible, a
    limit reached before it could start, a failed backend): objective nan, no primal, no
    warning (the caller that acts on it decides)."""
    return Solution(status, math.nan, certificate=Certificate(details=dict(details or {})),
                    history=list(history or []), solver=solver, solve_time=solve_time)


def revised(solution: Solution, **changes: Any) -> Solution:
    """A copy of ``solution`` with ``changes`` (fields of :class:`Solution`); the certificate
    is copied too, so the two never share a details dict."""
    cert = changes.pop("certificate", None) or dataclasses.replace(
        solution.certificate, details=dict(solution.certificate.details))
    return dataclasses.replace(solution, certificate=cert, **changes)


def from_record(data: dict[str, Any]) -> Solution:
    """The Solution of a stored record (:meth:`ratecons.result.Result.from_json`'s ``status``,
    ``objective``, ``certificate``, ``solver``, ``solve_time`` and ``history``): no run."""
    cert = data.get("certificate", {})
    objective = data["objective"]
    return Solution(data["status"], math.nan if objective is None else objective,
                    certificate=Certificate(cert.get("lower_bound"), cert.get("upper_bound"),
                                            cert.get("gap"), cert.get("max_violation"),
                                            cert.get("details", {})),
                    solver=data.get("solver", ""), solve_time=data.get("solve_time", 0.0),
                    history=data.get("history", []))
