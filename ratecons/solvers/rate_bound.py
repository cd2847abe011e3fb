"""The specialized Problem-3 solver: Alg 2 over v around Alg 3 over b around SDCA over w.

``solve_bound_specialized(program, masks)`` solves the convex upper bound (Problem 3, eq. 5) of
Goh et al. (2016) selected by ``masks`` (all True = the hinge relaxation of Problem 2) without a
general-purpose conic solver, as in the paper's section 2.2 and App. E-G. It is the
``solve_bound`` plugged into the majorization-minimization loop (Alg 1) for ``method="mm"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import limits, settings
from ..canonical.rate_fold import fold_bound
from ..canonical.rate_program import RateProgram
from ..errors import SolverError
from ..solution import Solution
from .cutting_plane import SDCAState, maximize_over_v, probe_step
from .sdca import require_l2
from .tracker import Tracker

__all__ = ["WarmStart", "solve_bound_specialized", "warm_start_of"]


@dataclass(frozen=True)
class WarmStart:
    """What a previous bound's answer hands the next one (:func:`warm_start_of`): SDCA's
    duals ``xi``, Alg 2's multipliers ``v``, Alg 3's bias ``b`` and Alg 2's first bracketing
    step ``v_step`` (None: each solver's cold default)."""

    xi: np.ndarray | None = None
    v: np.ndarray | None = None
    b: float | None = None
    v_step: float | None = None


def warm_start_of(warm_start: Solution | dict | None, m: int) -> WarmStart:
    """The warm start of a bound with ``m`` multipliers from a previous :class:`Solution` of
    this solver or a dict of ``xi``, ``v`` and ``b`` (multipliers of another length are left
    out: Alg 2 starts cold).

    The bracketing step is set from a single warm multiplier v > 0 with its previous run's
    history only: :func:`~ratecons.solvers.cutting_plane.probe_step` of the distance the
    multiplier moved in that run (its first evaluation to its best), within [1%, 25%] of v
    (Alg 2's default is 25%; on the Adult demo, v* moved by 0.1-3% between late bounds while
    the default step probed 25% away)."""
    if warm_start is None:
        return WarmStart()
    if isinstance(warm_start, Solution):
        xi, v, b = (warm_start.dual.get("xi"), warm_start.primal.get("v"),
                    warm_start.primal.get("b"))
    else:
        xi, v, b = warm_start.get("xi"), warm_start.get("v"), warm_start.get("b")
    if v is not None and np.shape(v) != (m,):
        v = None
    b = None if b is None else float(np.asarray(b))
    first = (warm_start.history[0].get("v")
             if isinstance(warm_start, Solution) and warm_start.history else None)
    if v is None or m != 1 or first is None or np.size(first) != 1 or float(v[0]) <= 0.0:
        return WarmStart(xi, v, b)
    moved = abs(float(v[0]) - float(np.asarray(first).ravel()[0]))
    return WarmStart(xi, v, b, probe_step(moved, 0.01 * float(v[0]), 0.25 * float(v[0])))


def solve_bound_specialized(
    program: RateProgram,
    masks: list[tuple[np.ndarray, np.ndarray]],
    warm_start: Solution | dict | None = None,
    *,
    epsilon: float = 1e-5,
    v_max: float = 100.0,
    v_chooser: str = "auto",
    b_chooser: str = "center_of_mass",
    max_iterations: int = 100,
    max_b_iterations: int = 200,
    max_epochs: int = 2000,
    epoch_budget: float = math.inf,
    seed: int | None = None,
    callback: Callable[[dict], None] | None = None,
    warn_at_v_max: bool = True,
) -> Solution:
    """Solve Problem 3 at ``masks`` by cutting planes over v and b around SDCA.

    Parameters
    ----------
    program : RateProgram
        Problem 1 data; needs ``l2 > 0`` and ``l1 == 0`` (SDCA's setting, App. F.1).
    masks : list of (hinge_p, hinge_n)
        Bound choice per example (:meth:`RateProgram.bound_masks`).
    warm_start : Solution or dict, optional
        A previous result of this function (its dual ``xi``, multipliers ``v`` and bias ``b``
        seed SDCA, Alg 2 and Alg 3), e.g. from the previous MM iteration.
    epsilon : float
        Target certified gap U_t - L_t of Alg 2 (absolute, objective units).
    v_max : float
        V = [0, v_max]^m; a multiplier at v_max raises a ConvergenceWarning.
    v_chooser : {"auto", "maximization", "center_of_mass"}
        CutChooser over v: App. E.1 (any m) or E.2 (m = 1); auto = E.2 when m = 1.
    b_chooser : {"center_of_mass", "minimization"}
        CutChooser over b: Definition 4 (App. F.2.2) or Definition 3 (App. F.2.1).
    max_iterations, max_b_iterations, max_epochs : int
        Limits of Alg 2, Alg 3 (per call) and SDCA (epochs per call).
    epoch_budget : float
        The most SDCA epochs of all calls together (the rest of the solve's ``max_epochs``):
        once spent, the cutting planes stop with the best point so far and the status is
        ``iteration_limit`` (``details["budget_spent"]``).
    seed : int, optional
        Seed of SDCA's visiting orders (0 when None).
    callback : callable, optional
        Receives one dict per Alg 2 iteration.
    warn_at_v_max : bool
        Passed to :func:`~ratecons.solvers.cutting_plane.maximize_over_v`.

    Returns
    -------
    Solution
        primal ``w``, ``b``, ``v``; dual ``xi`` (SDCA's variables, for warm starts) and ``v``;
        objective = Problem-3 objective (bound row 0 + regularizer) at (w, b); certificate with
        L_t (lower), U_t (upper), their gap and the largest bound-constraint violation.
    """
    require_l2(program.l2)
    if program.l1 != 0.0:
        raise SolverError("the specialized solver (SDCA, App. F.1) handles the l2 regularizer "
                          "only; this problem has l1 > 0: use method='cvxpy'.")
    tracker = Tracker("mm/sdca+cutting-planes", warn=False)  # a step: the MM run warns
    bound = fold_bound(program, masks)
    warm = warm_start_of(warm_start, program.m)
    seed = 0 if seed is None else int(seed)
    state = SDCAState.fresh(bound, warm.xi, seed)
    state.epoch_budget = epoch_budget
    res = maximize_over_v(bound, v_max=v_max, epsilon=epsilon, chooser=v_chooser,
                          b_chooser=b_chooser, v_start=warm.v, b_start=warm.b,
                          v_step=warm.v_step, state=state,
                          max_iterations=max_iterations, max_b_iterations=max_b_iterations,
                          max_epochs=max_epochs, seed=seed, callback=callback,
                          warn_at_v_max=warn_at_v_max)
    rows = bound.rows(res.w, res.b)
    objective = float(rows[0]) + 0.5 * program.l2 * float(res.w @ res.w)
    violation = float(np.max(np.maximum(0.0, rows[1:] - program.gamma), initial=0.0))
    if not res.converged:
        status = (settings.TIME_LIMIT if limits.active().expired()
                  else settings.ITERATION_LIMIT)
    elif np.any(res.at_bound) and violation > max(epsilon, settings.FEASIBILITY_TOL):
        status = settings.OPTIMAL_INACCURATE
    else:
        status = settings.OPTIMAL
    tracker.iterations = res.iterations
    return tracker.solution(
        {"w": res.w, "b": np.array(res.b), "v": res.v}, objective=objective, status=status,
        dual={"xi": state.xi, "v": res.v}, lower=res.lower, upper=res.upper,
        gap=res.upper - res.lower, max_violation=violation, history=res.history,
        details={"alg2_iterations": res.iterations, "sdca_epochs": state.epochs,
                 "sdca_calls": state.calls, "multipliers_at_v_max": res.at_bound,
                 "bound_rows": rows, "v_max": v_max,
                 "budget_spent": not res.converged and state.out_of_budget(),
                 "note": "L_t <= max_V F <= U_t (eq. 6); objective is Problem 3 at (w, b)"})
