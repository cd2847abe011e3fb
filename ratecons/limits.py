"""The limits of one solve: a wall-clock budget and an iteration cap shared by every method.

``solve(time_limit=..., max_iterations=...)`` is accepted by every method.
:func:`ratecons.dispatch.run_method` turns the two options into a :class:`Limits`, makes it the
*active* limits of the solve (:func:`limits_scope`) and hands the method's own options on:

- ``max_iterations`` is every method's iteration cap under that one name, handed to the method
  as it is (a few methods also keep an own name for it, resolved against it by
  :func:`ratecons.solvers.tracker.iteration_cap`: ``k_max``, ``max_epochs``, ``primal_ipm``'s
  ``max_iter``; the robust methods' former ``max_iter`` is refused naming the new name,
  :func:`renamed_options`); a method with no loop of its own (one backend call: ``lp``,
  ``hinge``, the ``cvxpy`` references) passes it to the backend as its iteration limit
  (:attr:`Limits.backend_iterations`);
- ``time_limit`` goes to the method when it takes one, and is also the deadline that every loop
  checks at its head (:meth:`Limits.expired`) and that every backend call receives as its
  own time limit (:meth:`Limits.remaining`), so a long backend solve stops too.

A method that stops on a limit returns its best point so far with status ``iteration_limit`` or
``time_limit`` (:mod:`ratecons.settings`) and its certificate; :func:`finish` makes sure a method
that overran its budget never reports ``optimal``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import settings
from .caller import user_stacklevel
from .errors import ConvergenceWarning

__all__ = ["RENAMED_OPTIONS", "Limits", "active", "current", "finish", "limits_scope",
           "renamed_options", "split_options"]

#: former option names -> the name that replaced them (see CHANGELOG)
RENAMED_OPTIONS = {"max_iter": "max_iterations"}


@dataclass(frozen=True)
class Limits:
    """A solve's wall-clock budget (seconds) and the iteration cap of its backend call.

    Parameters
    ----------
    time_limit : float or None
        Seconds from ``started``; None for no budget.
    backend_iterations : int or None
        Iteration limit of the single backend call of a method with no loop of its own.
    """

    time_limit: float | None = None
    backend_iterations: int | None = None
    started: float = field(default_factory=time.perf_counter)

    def remaining(self) -> float:
        """Seconds left (``inf`` without a budget, never negative)."""
        if self.time_limit is None:
            return math.inf
        return max(0.0, self.time_limit - (time.perf_counter() - self.started))

    @property
    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` reading at which the budget ends (None: no budget)."""
        return None if self.time_limit is None else self.started + self.time_limit

    def expired(self) -> bool:
        """Whether the budget is used up."""
        return self.time_limit is not None and self.remaining() <= 0.0


_ACTIVE: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("ratecons_limits",
                                                                         default=None)
_UNLIMITED = Limits()


def active() -> Limits:
    """The limits of the solve running in this context (no limits outside a solve)."""
    return _ACTIVE.get() or _UNLIMITED


def current() -> Limits | None:
    """The limits of the solve running in this context; None outside a solve."""
    return _ACTIVE.get()


@contextlib.contextmanager
def limits_scope(limits: Limits) -> Iterator[Limits]:
    """Make ``limits`` the active limits while the block runs."""
    token = _ACTIVE.set(limits)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)


def split_options(method: str, accepted: tuple[str, ...], options: dict[str, Any]
                  ) -> tuple[Limits, dict[str, Any]]:
    """Route the common limits in ``options`` (checked by :mod:`ratecons.options`) to the
    method.

    Returns the :class:`Limits` of the solve and the options to pass to the method (the
    common ``time_limit`` and ``max_iterations`` removed when the method does not take them:
    the latter is then the backend's iteration limit).
    """
    options = dict(options)
    time_limit = options.get("time_limit")
    time_limit = None if time_limit is None else float(time_limit)
    if "time_limit" in options and "time_limit" not in accepted:
        del options["time_limit"]
    backend_iterations = None
    if "max_iterations" in options and "max_iterations" not in accepted:
        backend_iterations = options.pop("max_iterations")
    return Limits(time_limit=time_limit, backend_iterations=backend_iterations), options


def renamed_options(unknown: list[str]) -> str:
    """The sentence that names the new name of every renamed option in ``unknown`` (empty when
    none was renamed), for the unknown-option error."""
    return "".join(f" {old!r} is now {RENAMED_OPTIONS[old]!r}." for old in unknown
                   if old in RENAMED_OPTIONS)


def finish(result: Any, limits: Limits) -> Any:
    """Never ``optimal`` past the budget, or with a backend iteration cap that was reached.

    A method that checks its limits returns ``time_limit`` itself (and warns); this catches the
    remaining case of a last step that overran the budget, says so in the certificate and warns
    once, as the solver skeleton does for every limit-ended solve.
    """
    if result.status not in (settings.OPTIMAL, settings.OPTIMAL_INACCURATE):
        return result
    if limits.expired():
        result.status = settings.TIME_LIMIT
        message = (f"the time limit of {limits.time_limit:g} s was reached before the method "
                   "finished; the point is the best found so far")
        result.certificate.details["limit"] = message
        warnings.warn(message, ConvergenceWarning, stacklevel=user_stacklevel())
    return result
