"""Phase one of the chain: a point meeting every constraint's surrogate (ramp) row when the
hinge relaxation has none (:func:`find_feasible_start`), by majorization-minimization on the
elastic problem. Its steps come from an :class:`ElasticSolver`: the CVXPY elastic step
(:func:`cvxpy_elastic`, CLARABEL) or the structured one
(:func:`ratecons.structured_phase_one.structured_elastic_step`); the solver also says how far
inside the rows the start must lie (an interior point method's MM steps need an interior).
:func:`no_start` says why the chain's first step has no point, when none follows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import limits, settings
from .chain_points import (
    ScoreTable,
    regularizer,
    score_table,
    step_scores,
    surrogate_objective,
    surrogate_rows,
)
from .dask_types import is_dask
from .expr.analysis import Analysis
from .prediction_lp import free_predictions_meet
from .reductions.kernelize import MAX_EXACT_KERNEL_POINTS, FeatureMap, kernelized
from .reductions.to_cvxpy import ConvexStep, pick_solver, solve_step
from .settings import FEASIBILITY_TOL
from .solution import Solution
from .solvers.tracker import Tracker

__all__ = ["ElasticSolver", "cvxpy_elastic", "find_feasible_start", "no_start",
           "run_phase_one", "tpr_rows_note"]


@dataclass(frozen=True)
class ElasticSolver:
    """One elastic step of phase one and the start it needs.

    Attributes
    ----------
    solve : callable
        (psi by dataset, anchor scores or None, bounds, penalty or None) -> ConvexStep: the
        step with a slack on every row (:func:`~ratecons.reductions.to_cvxpy.lower_step` with
        ``elastic=True``, or its structured form).
    margin : float
        How far inside the rows phase one's start must lie for this solver's MM steps: an
        interior point method needs an interior (the structured steps stalled from a start on
        the rows: ``settings.PHASE1_MARGIN``). The generic chain's CVXPY steps take the same
        margin, so that both chains start MM from the same point; the rate pattern's do not
        (0: from 1e-4 inside them the rate pattern's exact-bias-repair continuation ended
        uncertified on a five-rule instance of ``benchmarks.rate_constraints``).
    """

    solve: Callable[[dict[int, Any], Any, np.ndarray, float | None], ConvexStep]
    margin: float = 0.0


def find_feasible_start(analysis: Analysis, *, solver: str | None = None,
                        solver_options: dict[str, Any] | None = None,
                        max_iterations: int = settings.PHASE1_MAX_ITERATIONS,
                        kernel_points: int = MAX_EXACT_KERNEL_POINTS, seed: int | None = 0,
                        callback: Callable[[dict[str, Any]], None] | None = None) -> Solution:
    """Phase 1: a point meeting every constraint's surrogate (ramp) row when the hinge
    relaxation has none; ``primal`` holds (w, b) over the feature map of the score model (the
    user's w for a linear model).

    Majorization-minimization in two stages, each step an elastic problem (slacks s_j >= 0 on
    the constraint rows, :func:`~ratecons.reductions.to_cvxpy.lower_step`; its rows upper-bound
    the surrogate rows and are tight at the anchor, so the stage's merit never increases):

    1. the exact penalty P(w, b) = objective + ``settings.PHASE1_PENALTY`` * V(w, b), with
       V = sum_j max(0, row_j - bound_j + margin) the total surrogate violation past the rows
       lowered by the elastic solver's ``margin`` (0 here, for the rate pattern; the chains'
       start lies strictly inside the rows, :class:`ElasticSolver`): it keeps the
       objective and the regularizer in view, so the feasible point it reaches is a good
       start for Alg 1 (the objective-free stage alone left a large-norm w on the full Adult
       split with five rate constraints, from which Alg 1 ended at a ramp objective of 3.0);
    2. when P stops decreasing with V > 0, or V falls by less than ``settings.PHASE1_CRAWL``
       of itself in a step (a penalty below the multipliers settles at V > 0, and MM crawls
       towards it: 1-2% a step on the Adult split with churn and the 80% rule), the penalty
       grows by ``settings.PHASE1_PENALTY_GROWTH`` up to ``settings.PHASE1_PENALTY_MAX``, and
       after that V + ``settings.PHASE1_NORM_WEIGHT`` * regularizer (stage 2; the regularizer
       keeps the step's optimal face bounded), from that point.

    It starts from the elastic hinge relaxation and stops as soon as V = 0 (status optimal: a
    feasible start) or when stage 2 stops decreasing: at a point meeting the rows without the
    margin (status optimal), else with status infeasible and the smallest violation found (the
    problem may still be feasible, but no feasible point was reached from here). After
    ``max_iterations`` steps (its own cap, :data:`ratecons.settings.PHASE1_MAX_ITERATIONS`,
    not the solve's ``max_iterations``) or at the solve's ``time_limit`` it stops with status
    ``iteration_limit`` / ``time_limit`` and no model. Steps are solved by CLARABEL unless
    ``solver`` names another (``method="structured"`` solves them by the structured interior
    point, :mod:`ratecons.structured_phase_one`; on the objective-free elastic LP HiGHS'
    default simplex was 18x slower than CLARABEL: 5,000 Adult rows, three constraints, 18.3 s
    against 1.0 s; it did not finish in 20 minutes on the full split).
    ``callback`` receives every step's record (stage "phase1": iteration, violation, penalty,
    or None in stage 2).
    """
    fmap, psi = kernelized(analysis, kernel_points, seed)
    bounds = np.array([row.bound for row in analysis.constraints])
    return run_phase_one(analysis, fmap, psi, cvxpy_elastic(analysis, solver, solver_options),
                         bounds, max_iterations, callback)[0]


def cvxpy_elastic(analysis: Analysis, solver: str | None,
                  solver_options: dict[str, Any] | None, margin: float = 0.0) -> ElasticSolver:
    """The CVXPY elastic step (CLARABEL unless ``solver`` names another), whose start lies
    ``margin`` inside the rows: 0 for the rate pattern (:func:`find_feasible_start`),
    ``settings.PHASE1_MARGIN`` for the generic chain, the structured chain's margin, so that
    the two chains start MM from the same point (:func:`ratecons.generic.solve_generic`)."""
    name = (settings.DEFAULT_CONIC_SOLVER if solver is None
            else pick_solver(analysis, solver))

    def solve(psi: dict[int, Any], anchor: Any, bounds: np.ndarray,
              penalty: float | None) -> ConvexStep:
        return solve_step(analysis, psi, anchor, bounds, name, solver_options, elastic=True,
                          penalty=penalty)

    return ElasticSolver(solve, margin=margin)


def run_phase_one(analysis: Analysis, fmap: FeatureMap, psi: dict[int, Any],
                  elastic: ElasticSolver, bounds: np.ndarray, max_iterations: int,
                  callback: Callable[[dict[str, Any]], None] | None,
                  anchor: dict[int, np.ndarray] | None = None, *,
                  kept: dict[int, dict[Any, Any]] | None = None
                  ) -> tuple[Solution, ConvexStep | None]:
    """:func:`find_feasible_start` on a kernelized problem under the row bounds ``bounds``,
    its steps solved by ``elastic``, from the elastic step at ``anchor`` (None: the elastic
    hinge relaxation); also returns the feasible step. ``kept``: the run's worker columns of
    the row checks (:func:`~ratecons.chain_points.score_table`; None: this search's own)."""
    kept = {} if kept is None else kept
    penalty: float | None = settings.PHASE1_PENALTY
    target = bounds - elastic.margin

    def solve(anchor: dict[int, np.ndarray] | None) -> ConvexStep:
        return elastic.solve(psi, anchor, target, penalty)

    tracker = Tracker("phase1")
    step = solve(anchor)
    best, smallest, last = np.inf, np.inf, np.inf
    nearest = (0, step)  # (iteration, step) of the smallest violation without the margin
    history: list[dict[str, Any]] = []
    status = settings.INFEASIBLE_INACCURATE  # a stall: no point found, none proved absent

    def found(t: int, violation: float, step: ConvexStep) -> tuple[Solution, ConvexStep]:
        return tracker.solution({"w": step.w, "b": np.float64(step.b)}, objective=step.objective,
                                status=settings.OPTIMAL, max_violation=violation, history=history,
                                details={"phase1_iterations": t},
                                solver=f"phase1({step.solver})"), step

    for t in range(max_iterations + 1):
        if step.status not in settings.SOLVED_STATUSES or step.w is None:
            status = step.status
            break
        scores = step_scores(psi, step)
        table = score_table(analysis, fmap, scores, step, kept)
        rows = surrogate_rows(analysis, table)
        violation = float(np.maximum(rows - target, 0.0).sum())
        plain = float(np.maximum(rows - bounds, 0.0).sum())  # without the margin
        if plain < smallest:
            smallest, nearest = plain, (t, step)
        history.append({"iteration": t, "stage": "phase1", "violation": violation,
                        "penalty": penalty})
        if callback is not None:
            callback(dict(history[-1]))
        if violation <= FEASIBILITY_TOL * 1e-3:
            return found(t, plain, step)
        merit = _merit(analysis, table, step.w, violation, penalty)
        crawling = penalty is not None and violation > (1.0 - settings.PHASE1_CRAWL) * last
        if crawling or merit >= best - settings.PHASE1_RELATIVE_TOL * abs(best):
            if penalty is None:
                if plain <= FEASIBILITY_TOL * 1e-3:
                    return found(t, plain, step)  # feasible, short of the margin
                break
            # a larger penalty, then stage 2 from here
            penalty = (penalty * settings.PHASE1_PENALTY_GROWTH
                       if penalty < settings.PHASE1_PENALTY_MAX else None)
            merit = _merit(analysis, table, step.w, violation, penalty)
        best, last = merit, violation
        if limits.active().expired():
            status = settings.TIME_LIMIT
            break
        if t == max_iterations:
            status = settings.ITERATION_LIMIT
            break
        tracker.iterations = t + 1
        step = solve(scores)
    if smallest <= FEASIBILITY_TOL * 1e-3 and status != settings.TIME_LIMIT:
        # a step met the rows, short of the margin: the search may have left it (6,000 Adult
        # rows, logistic loss + churn + 80% rule: met at a penalty step, then stage 2 stalled
        # at 2e-3 and the run said infeasible at a smallest violation of 0)
        return found(nearest[0], smallest, nearest[1])
    message = _no_point_message(analysis, status, smallest)
    return tracker.solution({}, objective=float("nan"), status=status, history=history,
                            details={"smallest_violation": smallest, "message": message},
                            advice=message), None


def _no_point_message(analysis: Analysis, status: str, smallest: float) -> str:
    """Why phase one ended without a point: a stall (``infeasible_inaccurate``: no proof,
    what to try) or a limit (``status``), at the smallest total violation ``smallest``."""
    if status != settings.INFEASIBLE_INACCURATE:
        return (
            "the hinge relaxation is infeasible, and the search for a feasible point "
            f"(phase 1) stopped with status {status} at a total violation of {smallest:.4g} "
            "before it found one; raise time_limit / max_iterations, or relax the targets.")
    stalled = ("no point satisfying the constraints was found, and none is proved absent "
               "(hence 'infeasible_inaccurate'): the hinge relaxation is infeasible, and "
               "minimizing the total ramp violation by majorization-minimization stopped at "
               f"{smallest:.4g} > 0. ")
    note = tpr_rows_note(analysis)
    if note:
        return f"{stalled}{note[0].upper()}{note[1:]}; or the search missed a feasible region."
    return stalled + _what_to_try(analysis)


def _what_to_try(analysis: Analysis) -> str:
    """The advice of a stalled phase one without TPR rows: whether free predictions meet the
    targets (:func:`~ratecons.prediction_lp.free_predictions_meet`), and what may find a
    point."""
    advice = ("The targets may be out of reach (relax them), or this local search missed a "
              "feasible region" + (
                  " (predictions chosen freely for each example meet the rate targets, so "
                  "the model class or this search is the limit). "
                  if free_predictions_meet(analysis) else ". "))
    # (raw Pima features, logistic loss with recall >= 0.85 and positive rate <= 0.5 ended
    # here; the standardized data solved optimal by 'structured')
    advice += ("Another method may find one." if _z_scored(analysis) else
               "Standardized features (a linear model meets the same rates at any feature "
               "scale) or another method may find one.")
    if all(p.mergeable for p in analysis.parts()):
        # (standardized haberman, recall >= 0.3 and precision >= 0.63: this search stalled;
        # from the model of precision >= 0.5, mm ended optimal at 0.65)
        advice += (" So may a model of looser targets: solve with them, then "
                   "solve(method='mm' or 'cvxpy', warm_start=that_result).")
    return advice


def _z_scored(analysis: Analysis) -> bool:
    """Whether every training feature lies within +-10, as z-scores do (in memory; Dask data
    are not read for it): the advice to standardize is then moot."""
    for data in analysis.datasets:
        X = data.X
        if is_dask(X) or (abs(X).max() if sp.issparse(X) else np.abs(X).max(initial=0.0)) > 10:
            return False
    return True


def _merit(analysis: Analysis, table: ScoreTable, w: np.ndarray, violation: float,
           penalty: float | None) -> float:
    """Phase one's merit: the exact penalty, or (``penalty`` None) V + nu * regularizer."""
    if penalty is None:
        return violation + settings.PHASE1_NORM_WEIGHT * regularizer(analysis, w)
    return surrogate_objective(analysis, table, w) + penalty * violation


def tpr_rows_note(analysis: Analysis) -> str:
    """What an infeasible answer means where a constraint holds a TPR@K / TPR@tau part ('' when
    none does): the row is held through its surrogate, not its exact value."""
    if not any(getattr(part, "curvature", "") == "concave" for row in analysis.constraints
               for _, part in row.parts):
        return ""
    return ("a TPR row is held through its concave lower bound (Section 4.4 of the ranking "
            "paper), often far below the exact TPR, so models meeting the exact target may "
            "exist: lower the target, or make the TPR the objective")


def no_start(analysis: Analysis, step: ConvexStep) -> tuple[str, str]:
    """The status and message of a chain whose first step (the hinge relaxation, or
    ``only_step``) has no solution. An infeasible step proves the problem infeasible only
    when every constraint is convex in the model (none replaced by a surrogate): then
    ``infeasible``; a relaxation's (rates by their hinge bounds, TPR rows by their concave
    lower bounds) is no proof: ``infeasible_inaccurate``."""
    if step.status not in settings.INFEASIBLE_STATUSES:
        return step.status, step.message or ""
    if not any(row.rate_parts for row in analysis.constraints):
        names = "; ".join(f"'{row.name}'" for row in analysis.constraints)
        if note := tpr_rows_note(analysis):
            return settings.INFEASIBLE_INACCURATE, (
                f"no model meets {names} as the chain states it: {note}.")
        return step.status, (
            "no model meets the constraints together on the training data: " + names
            + ". Every constraint is convex in the model (none is replaced by a "
            "surrogate), so this is exact: loosen a bound (a loss is never below 0), "
            "drop a constraint, or check them with problem.describe().")
    return settings.INFEASIBLE_INACCURATE, (
        "the hinge relaxation (every rate replaced by its hinge upper bound) is infeasible: "
        "the targets are out of reach of the convex relaxation, which proves nothing of the "
        "problem itself (method='auto' or 'structured' search for a feasible start). Relax "
        "the constraints, or check them with problem.describe().")
