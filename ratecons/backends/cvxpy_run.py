"""The one call of a CVXPY backend: the solve's limits passed on, Ctrl-C honoured promptly.

Every CVXPY solve in ratecons goes through :func:`solve_cvxpy`. It gives the backend the time
left in the solve's budget and, for a method with no loop of its own, its iteration cap
(:mod:`ratecons.limits`), under each backend's own option name, unless the caller set that
option; and it runs the backend through :func:`ratecons.interrupts.call_interruptibly`, so
Ctrl-C raises :class:`KeyboardInterrupt` within a fraction of a second even while CLARABEL or
SCS compute (their solve releases the GIL; measured: the main thread was never held more than
0.33 s during a 7 s CLARABEL solve). A backend stopped by the time limit reports CVXPY status
``user_limit``, which :func:`ratecons.backends.cvxpy_status.status_of` reads as ``time_limit``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import limits, settings
from ..errors import UnknownOptionError
from ..interrupts import call_interruptibly

__all__ = ["BACKEND_LIMIT_OPTIONS", "checked_solver", "limit_options", "solve_cvxpy",
           "stopped_by_limits"]

#: backend -> (its time-limit option, its iteration-limit options)
BACKEND_LIMIT_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "CLARABEL": ("time_limit", ("max_iter",)),
    "SCS": ("time_limit_secs", ("max_iters",)),
    "HIGHS": ("time_limit", ("simplex_iteration_limit", "ipm_iteration_limit")),
}


def checked_solver(solver: str | None, lp: bool, not_lp: str) -> str:
    """The CVXPY solver for a problem: ``solver`` checked (upper case), or by default HiGHS for
    an LP and CLARABEL otherwise; ``not_lp`` says why the problem is not an LP, for the error
    when HiGHS is named for one."""
    if solver is None:
        return settings.LP_SOLVERS[0] if lp else settings.DEFAULT_CONIC_SOLVER
    name = str(solver).upper()
    known = settings.CONIC_SOLVERS + settings.LP_SOLVERS
    if name not in known:
        raise UnknownOptionError(f"unknown CVXPY solver {solver!r}; choose one of {known}.")
    if name in settings.LP_SOLVERS and not lp:
        raise UnknownOptionError(f"{name} solves LPs only, but {not_lp}; use one of "
                                 f"{settings.CONIC_SOLVERS}.")
    return name


def limit_options(solver: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the active limits under ``solver``'s option names (the smaller of a
    given value and the limit)."""
    names = BACKEND_LIMIT_OPTIONS.get((solver or "").upper())
    if names is None:
        return dict(options)
    out = dict(options)
    active = limits.active()
    remaining = active.remaining()
    time_option, iteration_options = names
    if math.isfinite(remaining):
        out[time_option] = min(out.get(time_option, math.inf), max(remaining, 1e-3))
    if active.backend_iterations is not None:
        for name in iteration_options:
            out[name] = min(out.get(name, active.backend_iterations),
                            active.backend_iterations)
    return out


def stopped_by_limits(problem: Any) -> bool:
    """Whether the backend stopped on a limit of the solve (not on a default cap of its own):
    a point to report with ``time_limit`` / ``iteration_limit``, not a failure to retry."""
    active = limits.active()
    return problem.status == "user_limit" and (
        active.expired() or active.backend_iterations is not None)


def _solve_quietly(problem: Any, **options: Any) -> Any:
    """``problem.solve(**options)`` without CVXPY's "Solution may be inaccurate" warning: the
    inaccurate statuses reach the user through :func:`~.cvxpy_status.status_of` and the
    certificate, so the warning would only repeat them (from a worker thread, pointing at
    ratecons' internals)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                category=UserWarning)
        return problem.solve(**options)


def solve_cvxpy(problem: Any, solver: str | None = None, **options: Any) -> Any:
    """``problem.solve(solver=solver, **options)`` under the active limits, interruptibly."""
    return call_interruptibly(_solve_quietly, problem, solver=solver,
                              **limit_options(solver, options))
