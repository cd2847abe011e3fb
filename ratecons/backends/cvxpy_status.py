"""The one translation of CVXPY's status strings to ratecons' statuses."""

from __future__ import annotations

from .. import settings

__all__ = ["CVXPY_STATUS", "status_of"]

#: CVXPY problem.status -> ratecons status (anything else is settings.NUMERICAL_ERROR)
CVXPY_STATUS = {
    "optimal": settings.OPTIMAL,
    "optimal_inaccurate": settings.OPTIMAL_INACCURATE,
    "infeasible": settings.INFEASIBLE,
    "infeasible_inaccurate": settings.INFEASIBLE,
    "unbounded": settings.UNBOUNDED,
    "unbounded_inaccurate": settings.UNBOUNDED,
    "user_limit": settings.ITERATION_LIMIT,
}


def status_of(cvxpy_status: str | None) -> str:
    """ratecons' status for a CVXPY ``problem.status``."""
    return CVXPY_STATUS.get(cvxpy_status or "", settings.NUMERICAL_ERROR)
