"""Warm starts of the rate methods (``solve(warm_start=result)``): Alg 1 from a previous model.

Algorithm 1 (Goh et al. 2016) needs a point feasible for the ramp problem (Problem 2); cold, it
starts from the hinge relaxation's solution. A warm start uses the linear model (w, b) of an
earlier :class:`~ratecons.result.Result` instead, e.g. the neighbouring target of a trade-off
sweep (:func:`ratecons.sweep`):

- when (w, b) meets every ramp constraint of this program, it is Alg 1's first anchor as it
  is: no hinge relaxation is solved and the ramp objective never rises above its value there;
- otherwise Problem 3 (eq. 5) anchored at (w, b) is solved first, as the deterministic
  repair's re-solves do: its solution meets every ramp constraint (each bound is an upper
  bound on the ramp rows), so it is a feasible first anchor (its objective may be above the
  anchor's: the anchor was infeasible). When that bound is infeasible too, the method starts
  cold from the hinge relaxation.

The previous solve's SDCA duals ``xi`` and multipliers ``v`` (``result.solution.dual``) seed the
first Problem-3 step of ``method="mm"`` when their shapes fit this program (same examples, same
number of constraints); otherwise SDCA starts from zero. Warm starts change where Alg 1 starts,
never how it stops: the status is ``optimal`` only when the last step improves the returned
point by at most ``tol`` (:func:`ratecons.solvers.mm.fixed_point`). MM's fixed points are local,
so a warm-started solve may end at another fixed point than a cold one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import settings
from ..canonical.rate_program import RateProgram
from ..errors import SpecError
from ..result import Result
from ..solution import Solution
from ..solvers.tracker import Tracker

__all__ = ["Anchor", "check_warm_start", "warm_start_solution"]


@dataclass(frozen=True)
class Anchor:
    """A model (w, b) the library itself starts Alg 1 from (the best feasible constant,
    :mod:`ratecons.constant_start`); a user's ``warm_start`` is a Result."""

    w: np.ndarray
    b: float


def check_warm_start(program: RateProgram, warm_start: Any) -> tuple[np.ndarray, float,
                                                                     dict[str, np.ndarray]]:
    """(w, b, duals) of ``warm_start``: the Result of an earlier solve of a linear model over
    this program's d features; a clear :class:`~ratecons.errors.SpecError` otherwise."""
    if not isinstance(warm_start, Result):
        raise SpecError(f"warm_start must be the Result of an earlier solve (result = "
                        f"problem.solve(...)); got {type(warm_start).__name__}.")
    if not warm_start.has_model:
        raise SpecError(f"warm_start has no model to start from (its solve ended with status "
                        f"{warm_start.status!r}); pass a result with a model or drop "
                        "warm_start.")
    w = getattr(warm_start.scorer, "w", None)
    if w is None:
        raise SpecError(f"warm_start holds a {type(warm_start.scorer).__name__}, not a linear "
                        "model <w, x> - b: rate problems warm-start only from linear models.")
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (program.d,):
        raise SpecError(f"warm_start's model has {w.size} weights but this problem has "
                        f"{program.d} features: warm-start only from a result on the same "
                        "feature columns (e.g. the previous target of a sweep on the same "
                        "data), or drop warm_start.")
    duals = {k: np.asarray(v) for k, v in warm_start.solution.dual.items() if k in ("xi", "v")}
    return w, float(warm_start.scorer.b), duals


def warm_start_solution(program: RateProgram, solve_bound: Any, warm_start: Any
                        ) -> tuple[Solution | None, dict[str, Any]]:
    """The first anchor of Alg 1 from ``warm_start`` (module docstring; a Result, or an
    :class:`Anchor` of the library's own), or None when the bound anchored there is
    infeasible (the method then starts cold), and what was done.

    Returns
    -------
    (Solution or None, dict)
        The start (primal ``w``, ``b``; the previous duals for the first step) and the record
        ``{"anchor_feasible", "anchor_objective", "anchor_violation", "cold_fallback"}`` kept
        in ``certificate.details["warm_start"]``.
    """
    w, b, duals = ((warm_start.w, warm_start.b, {}) if isinstance(warm_start, Anchor)
                   else check_warm_start(program, warm_start))
    violation = float(np.max(program.violations(w, b, "ramp"), initial=0.0))
    value = program.objective(w, b, "ramp")
    info: dict[str, Any] = {"anchor_feasible": violation <= settings.FEASIBILITY_TOL,
                            "anchor_objective": value, "anchor_violation": violation,
                            "cold_fallback": False}
    if info["anchor_feasible"]:
        start = Tracker("warm start", warn=False).solution(
            {"w": w, "b": np.float64(b)}, objective=value, status=settings.OPTIMAL, dual=duals,
            upper=value, max_violation=violation, solve_time=0.0)
        return start, info
    step = solve_bound(program, program.bound_masks(w, b),
                       {"w": w, "b": b, "objective": value, "start": True, **duals})
    if step.status not in settings.SOLVED_STATUSES or "w" not in step.primal:
        info["cold_fallback"] = True
        return None, info
    return step, info
