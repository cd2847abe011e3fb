"""The one translation of CVXPY's status strings to ratecons' statuses."""

from __future__ import annotations

from .. import limits, settings

__all__ = ["CVXPY_STATUS", "status_of"]

#: CVXPY problem.status -> ratecons status (anything else is settings.NUMERICAL_ERROR)
CVXPY_STATUS = {
    "optimal": settings.OPTIMAL,
    "optimal_inaccurate": settings.OPTIMAL_INACCURATE,
    "infeasible": settings.INFEASIBLE,
    "infeasible_inaccurate": settings.INFEASIBLE_INACCURATE,
    "unbounded": settings.UNBOUNDED,
    "unbounded_inaccurate": settings.UNBOUNDED,
    "user_limit": settings.ITERATION_LIMIT,
}


def status_of(cvxpy_status: str | None) -> str:
    """ratecons' status for a CVXPY ``problem.status`` (a backend limit reached once the
    solve's time budget is used up is ``time_limit``)."""
    if cvxpy_status == "user_limit" and limits.active().expired():
        return settings.TIME_LIMIT
    return CVXPY_STATUS.get(cvxpy_status or "", settings.NUMERICAL_ERROR)
