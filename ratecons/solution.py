"""What a solver returns: primal (and dual) values, status, certificate and history.

Solvers take a canonical form (plain data) and return a :class:`Solution`; the family that
called them turns it into a user-facing :class:`ratecons.result.Result`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .settings import STATUSES

__all__ = ["Certificate", "Solution"]


@dataclass
class Certificate:
    """Evidence of how good a solution is.

    Attributes
    ----------
    lower_bound, upper_bound : float or None
        Certified bounds on the optimal value of the problem the solver was given (in that
        problem's own sense).
    gap : float or None
        A duality gap or ``upper_bound - lower_bound``.
    max_violation : float or None
        Largest constraint violation of the returned point (0 when feasible).
    details : dict
        Solver-specific facts (iterations of inner solvers, multipliers at their bound, ...).
    """

    lower_bound: float | None = None
    upper_bound: float | None = None
    gap: float | None = None
    max_violation: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def in_sense(self, to_user: Callable[[float], float]) -> Certificate:
        """This certificate with its bounds carried by ``to_user``, an affine map of the
        objective (the canonical, minimized value to the user's): swapped where the map
        decreases (a lower bound on a minimized -E is an upper bound on E). The gap, the
        violation and the details (the same dict) are unchanged."""
        lower = None if self.lower_bound is None else float(to_user(self.lower_bound))
        upper = None if self.upper_bound is None else float(to_user(self.upper_bound))
        if to_user(1.0) < to_user(0.0):
            lower, upper = upper, lower
        return replace(self, lower_bound=lower, upper_bound=upper)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lower_bound": self.lower_bound,
            "upper_bound": self.upper_bound,
            "gap": self.gap,
            "max_violation": self.max_violation,
            "details": _jsonable(self.details),
        }


@dataclass
class Solution:
    """A solver's answer to a canonical form.

    Attributes
    ----------
    status : str
        One of :data:`ratecons.settings.STATUSES`.
    objective : float
        Objective value of the canonical problem at ``primal`` (nan when there is none).
    primal : dict of str to ndarray
        Named primal variables, e.g. ``{"w": ..., "b": ...}`` or ``{"mu": ...}``.
    dual : dict of str to ndarray
        Named dual variables where the solver has them.
    certificate : Certificate
    history : list of dict
        One record per outer iteration (objective, bounds, timings, ...) for plots.
    solver : str
        Human-readable name of the back-end that produced it.
    solve_time : float
        Wall time in seconds.
    """

    status: str
    objective: float
    primal: dict[str, np.ndarray] = field(default_factory=dict)
    dual: dict[str, np.ndarray] = field(default_factory=dict)
    certificate: Certificate = field(default_factory=Certificate)
    history: list[dict[str, Any]] = field(default_factory=list)
    solver: str = ""
    solve_time: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown solver status {self.status!r}; expected one of {STATUSES}")


def _jsonable(value: Any) -> Any:
    """Convert NumPy scalars and arrays (nested in dicts and lists) to plain Python."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else (INFINITE if value > 0 else -INFINITE)
    return value


#: how :func:`_jsonable` writes an infinite float (JSON has no infinity), read back as one by
#: :func:`_from_jsonable`
INFINITE = 1e308


def _from_jsonable(value: Any) -> Any:
    """The inverse of :func:`_jsonable`'s infinities (nested in dicts and lists): a gap or
    bound of inf read back as 1e308 failed ``math.isinf``."""
    if isinstance(value, dict):
        return {k: _from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_jsonable(v) for v in value]
    if isinstance(value, float) and abs(value) >= INFINITE:
        return math.inf if value > 0 else -math.inf
    return value
