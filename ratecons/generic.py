"""The generic chain: any composition that passes the curvature rules, solved by CVXPY.

Dispatch sends a problem here when no specialized pattern accepts it (``plan()`` says why). The
chain is

    kernelize (KernelModel -> linear over psi)  ->  [hinge relaxation, then MM bounds at anchors]
    ->  to_cvxpy  ->  invert (w over psi -> the user's scorer)

1. **Hinge relaxation.** Every ramp part (rates, worst-case rates) replaced by its hinge upper
   bound: one convex problem (Problem 2 relaxed); its solution is feasible for the ramp problem.
2. **Majorization-minimization** (Alg 1 of Goh et al.): at the anchor (w', b') every ramp part is
   replaced by its convex upper bound of eq. (4), tight at the anchor, and the convex problem
   (Problem 3 with the other parts unchanged) is solved again; the surrogate objective never
   increases. The loop is :func:`ratecons.solvers.mm.fixed_point`, the one MM loop of the rate
   pattern and the chain: it stops at a fixed point, when the step at the current point
   improves on its objective by at most ``tol`` relative (``optimal``, the point returned; the
   measured value in ``certificate.details["last_relative_decrease"]``, the step at the point
   is the :class:`LastStep` that ``export_mps(at=result)`` writes), after ``max_iterations``
   steps counted over MM and the repairs (``iteration_limit``) or at the solve's time limit
   (``time_limit``, at most one step past it). A last step the backend solved only to reduced
   accuracy (CVXPY's ``optimal_inaccurate``) or stopped at a limit passes its status on instead
   of ``optimal``; the step's own status is in ``certificate.details["step_status"]``. When
   the objective has no ramp part, each step is continued along its own direction as far as
   the surrogate objective falls and the surrogate rows stay met
   (:meth:`_ChainRun.extrapolated`, ``extrapolate=True``): the same monotone loop and
   fixed-point test, in fewer steps (``certificate.details["extrapolated_steps"]``). A step
   that cannot be solved at an extrapolated anchor sends MM back to the plain step it extended,
   without extrapolation (``details["extrapolation_abandoned"]``).
3. **Deterministic repair** (:func:`ratecons.solvers.mm.repair_ladder`, as for rate programs, with
   the threshold search as its last resort). The ramp and the indicator differ near the
   boundary, so the deterministic model f(x) > 0 may miss a ramp-satisfied constraint on the
   training data. Each constraint the deterministic model misses is tightened by what it misses
   (plus 1e-6, times 2^r in round r) and MM continues from the current point, at most
   ``repair_rounds`` times. A constraint still missed then gets the **threshold search**, the
   last resort: every row is a step function of the intercept, so the chain tries the intercepts
   between neighbouring distinct training scores
   (:func:`~ratecons.chain_points.threshold_search`: the nearest on each side and some spread
   over the score range; the exact search of :mod:`ratecons.solvers.bias_repair` over any row)
   and moves the intercept to the nearest one that meets every constraint with the deterministic
   model. This is what a mass of equal scores needs (many examples alike in the features the
   model uses: the ramp sees them as one fraction, the indicator flips them all at once). The
   move is in ``certificate.details["threshold_shift"]``. A moved model is off the fixed point
   MM certified, so MM continues from it (:func:`~ratecons.solvers.mm.repair_ladder`, at most
   ``settings.BIAS_CONTINUATION_ROUNDS`` times) and the status is the continuation's; a moved
   model that no continuation could start from (a budget was spent) is returned with status
   ``iteration_limit`` (``time_limit`` past the limit), never ``optimal``. When every
   continuation from a moved model ends at a fixed point whose deterministic model misses a row
   again, the last moved model, which meets every row, is returned with status
   ``iteration_limit``. A constraint still missed after that is named with its violation in the
   certificate and the status is ``iteration_limit``. A repair whose tightened step is
   infeasible at the current point (the bound of eq. 4 is an inner approximation too) restarts
   phase one (:func:`~ratecons.phase_one.find_feasible_start`) from that point under the
   tightened rows (``details["phase1_restarts"]``), and MM goes on from the start it finds. When
   it finds none (``details["unreached_repairs"]``), the tightening is undone (the bounds return
   to those of the last round MM ran under), the threshold search moves the intercept of the
   current point (no budget was spent), and MM continues from the moved model under those bounds
   raised, row by row, to the moved model's surrogate values: the moved model meets its own step
   (eq. 4 is tight at the anchor), so the continuation is Alg 1 from a feasible anchor, and an
   ``optimal`` status is its certified fixed point, whose deterministic model meets every
   constraint (``details["step_bounds"]`` are the bounds it is certified for; a row's may exceed
   the user's bound, which only the deterministic model must meet: each such loosened bound is
   named in ``details["loosened_bounds"]`` and the message, and ``report(data)`` says in its
   status and on the row that ``optimal`` is the loosened surrogate problem's, next to the exact
   value that meets the user's bound).

**Ties** of eq. (4) on the path (an example at a switch point, both bounds tight, the step
solver's rounding choosing one) are counted in ``details["tied_anchors"]`` and
``details["tied_examples"]`` (:func:`~ratecons.chain_points.tied_examples`). With no ramp
part the problem is one convex solve.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import settings
from .chain_points import (
    ScoreTable,
    bound_sides,
    contradicted_bound,
    loosened_bounds,
    missed_rows,
    score_table,
    step_scores,
    surrogate_objective,
    surrogate_rows,
    threshold_search,
    tied_examples,
)
from .chain_scale import chain_at_loss_scale
from .expr.analysis import Analysis
from .patterns.pattern import MethodSpec
from .phase_one import ElasticSolver, cvxpy_elastic, no_start, run_phase_one
from .reductions.kernelize import (
    MAX_EXACT_KERNEL_POINTS,
    FeatureMap,
    kernelize,
    kernelized,
    warn_if_drawn,
)
from .reductions.to_cvxpy import ConvexStep, is_lp, pick_solver, solve_step
from .result import Result
from .sample_start import NO_TIME_LEFT, SampleStart
from .settings import FEASIBILITY_TOL
from .solution import Solution
from .solvers.mm import Step, fixed_point, repair_ladder
from .solvers.tracker import Tracker

__all__ = ["generic_method", "solve_generic"]

#: how far past a missed constraint the repair step tightens it
REPAIR_MARGIN = 1e-6
#: the largest multiple of an MM step by which the anchors are extrapolated
#: (:meth:`_ChainRun.extrapolated`)
EXTRAPOLATION_MAX = 16.0
#: the smallest multiple tried when the whole step's continuation fails
EXTRAPOLATION_MIN = 0.125
#: a sample's model that misses a surrogate row on all rows by m is solved again on the
#: sample with that row's bound lowered by this times m (:meth:`_ChainRun.from_sample`)
SAMPLE_TIGHTENING = 2.0
#: one convex step of the chain: (psi by dataset, anchor scores or None, bounds) -> ConvexStep
StepSolver = Callable[[dict[int, Any], Any, np.ndarray], ConvexStep]


@dataclass
class LastStep:
    """The last convex problem of a run: its anchor (scores by dataset; None for the hinge
    relaxation), the row bounds in force (tightened by repairs) and its optimal value, minimized
    (a maximum's is negated). Unique, so ``verify`` checks the chain by solving this same step
    with another solver (MM's fixed points are local: two paths may end at different ones)."""

    anchor: dict[int, np.ndarray] | None
    bounds: np.ndarray
    bound_objective: float
    #: the ramp's width of the step's problem (:mod:`ratecons.chain_scale`): the step is over
    #: g = f / scale, its objective's losses at margin scale ``scale``
    scale: float = 1.0


def solve_generic(analysis: Analysis, *, solver: str | None = None,
                  solver_options: dict[str, Any] | None = None,
                  max_iterations: int = settings.MM_MAX_ITERATIONS,
                  tol: float = settings.MM_RELATIVE_TOL, repair_rounds: int = 5,
                  kernel_points: int = MAX_EXACT_KERNEL_POINTS, seed: int | None = 0,
                  callback: Callable[[dict[str, Any]], None] | None = None,
                  only_step: LastStep | None = None, step_solver: StepSolver | None = None,
                  step_solver_name: str = "", phase_one: bool | None = None,
                  extrapolate: bool = True, elastic_solver: ElasticSolver | None = None,
                  start: SampleStart | None = None, start_only: bool = False,
                  feature_map: FeatureMap | None = None
                  ) -> tuple[Solution, Any, LastStep | None]:
    """Run the chain (module docstring); returns the Solution, the user's scorer and the
    last convex step. With ``only_step`` it solves that one step and nothing else.

    ``step_solver(psi, anchor, bounds) -> ConvexStep`` replaces the CVXPY step (the matrix
    form on HiGHS, :mod:`ratecons.matrix_chain`; the structured interior point,
    :mod:`ratecons.structured_chain`), named ``step_solver_name``. ``phase_one`` (default: only
    with CVXPY steps) searches for a feasible start by
    :func:`~ratecons.phase_one.find_feasible_start` when the hinge relaxation is infeasible;
    ``elastic_solver`` solves its elastic steps (default: the CVXPY elastic step, on CLARABEL
    unless ``solver`` names another; :mod:`ratecons.structured_phase_one`'s). ``start``: a
    model solved on a row sample, from which MM (or phase one) starts instead of the hinge
    relaxation (:meth:`_ChainRun.from_sample`, :mod:`ratecons.sample_start`). ``start_only``:
    the run only makes a start (a row sample's): MM stops at the relative decrease
    ``settings.SAMPLE_START_TOL`` (or ``tol``, when looser), no deterministic repair, no check
    of what it misses. ``feature_map``: the model's map, made beforehand from all rows (so that
    a sample's w starts the chain over the same psi); default: made from ``analysis``."""
    start_time = time.perf_counter()
    if start_only:
        tol = max(tol, settings.SAMPLE_START_TOL)
    phase_one = step_solver is None if phase_one is None else phase_one
    name = step_solver_name
    if step_solver is None:
        name = pick_solver(analysis, solver)

        def step_solver(psi: dict[int, Any], anchor: Any, bounds: np.ndarray) -> ConvexStep:
            return solve_step(analysis, psi, anchor, bounds, name, solver_options)
    fmap, psi = kernelized(analysis, kernel_points, seed, feature_map)
    if not start_only and only_step is None:
        warn_if_drawn(analysis, fmap, kernel_points, seed)
    anchor, bounds = ((None, np.array([row.bound for row in analysis.constraints]))
                      if only_step is None else (only_step.anchor, only_step.bounds))
    run = _ChainRun(analysis, fmap, psi, step_solver, bounds, start_time, tol=tol,
                    max_iterations=max_iterations, callback=callback,
                    run_details={"solver": name, "feature_map": fmap.describe(),
                                 "kernel_points": kernel_points, "seed": seed,
                                 "steps_are_lps": is_lp(analysis)}, extrapolate=extrapolate,
                    start_only=start_only)
    phase1: dict[str, Any] = {}
    if phase_one and analysis.needs_mm and only_step is None:
        # the structured chain's margin: the two chains start MM from the same point (with
        # CLARABEL's phase one on the rows, 2,000 Adult rows of logistic loss + churn + 80%
        # rule ended at fixed points 0.34 apart, both certified)
        run.elastic = elastic_solver or cvxpy_elastic(analysis, solver, solver_options,
                                                      margin=settings.PHASE1_MARGIN)
    sampled = (run.from_sample(start) if start is not None and only_step is None
               and analysis.needs_mm else None)
    if sampled is not None:
        (step, scores, table), phase1 = sampled
    else:
        step = step_solver(psi, anchor, bounds)
        run.step_anchor, run.step_bounds = anchor, bounds  # what produced ``step``
    if (sampled is None and run.elastic is not None
            and step.status not in settings.SOLVED_STATUSES
            and step.status not in settings.LIMIT_STATUSES):
        # the hinge relaxation is only an inner approximation (infeasible), or its step
        # could not be solved: search for a feasible start
        after = step.status
        found, feasible = run_phase_one(analysis, fmap, psi, run.elastic, bounds,
                                        settings.PHASE1_MAX_ITERATIONS, callback, kept=run.kept)
        run.history += found.history
        if feasible is None:
            return run.finish(found.status, None, dict(found.certificate.details))
        step = feasible
        phase1 = {"phase1_iterations": found.certificate.details["phase1_iterations"],
                  "phase1_solver": found.solver, "phase1_after": after}
    if step.status not in settings.SOLVED_STATUSES:
        status, message = no_start(analysis, step)
        return run.finish(status, None, {"message": message})
    if (step.status == settings.TIME_LIMIT and analysis.needs_mm and sampled is None
            and only_step is None):  # the relaxation's iterate is no point of the chain
        return run.finish(step.status, None, {"message": NO_TIME_LEFT})
    if sampled is None:
        _, scores, table = run.point_of(step, step_scores(psi, step))
    value = surrogate_objective(analysis, table, step.w)
    stage = "start" if phase1 else (start.origin if sampled else "hinge")
    if not run.start_recorded:  # else :meth:`_ChainRun.step_from_missing` recorded it
        run.record({"iteration": 0, "stage": stage if anchor is None else "step",
                    "objective": value, "bound_objective": step.objective})
    if only_step is not None:
        return run.finish(step.status, step, {"only_step": True}, table)
    if analysis.needs_mm:
        point = (step, scores, table)
        step, scores, table = (run.run_round(point, value) if start_only else
                               run.majorize_and_repair(point, value, repair_rounds))
    elif step.status != settings.OPTIMAL:
        run.status = step.status  # the one convex step was solved only to reduced accuracy
    details = run.details(step, table, phase1)  # may lower the status: before finish
    return run.finish(run.status, step, details, table)


class _ChainRun:
    """The state one run of the chain shares between its steps: the history, the row bounds
    in force (tightened by repairs), the step that produced the current point and the one
    solved at it, and the MM counters. Its methods are the hooks of the one MM loop
    (:func:`~ratecons.solvers.mm.fixed_point`) and of the repair ladder
    (:func:`~ratecons.solvers.mm.repair_ladder`); a point is ``(step, scores, table)``."""

    def __init__(self, analysis: Analysis, fmap: FeatureMap, psi: dict[int, Any],
                 step_solver: StepSolver, bounds: np.ndarray, start_time: float, *,
                 tol: float, max_iterations: int,
                 callback: Callable[[dict[str, Any]], None] | None,
                 run_details: dict[str, Any], extrapolate: bool = True,
                 start_only: bool = False) -> None:
        self.analysis, self.fmap, self.psi = analysis, fmap, psi
        self.step_solver, self.bounds, self.start_time = step_solver, bounds, start_time
        self.tol, self.max_iterations, self.callback = tol, max_iterations, callback
        self.run_details = run_details
        self.history: list[dict[str, Any]] = []
        self.step_anchor: dict[int, np.ndarray] | None = None  # what produced the point's step
        self.step_bounds = bounds
        self.at_point: ConvexStep | None = None  # the step solved at the point (a fixed point)
        self.status = settings.OPTIMAL
        self.iterations = 0  # steps of MM and of the repairs together
        self.rounds = 0
        self.intercepted = False  # the returned model is off its certified fixed point
        self.continuations_missed = False  # ... because its continuations missed a row
        self.last_decrease = float("nan")
        self.mm_message = ""
        self.shifts: list[float] = []
        self.numbers = itertools.count(1)
        # only when the objective has no ramp part: with ramps in the objective (error rates)
        # the extrapolated path reached other local fixed points than the plain steps (3e-4
        # apart on 2,000 Adult rows, error rate + recall floor with l1)
        self.extrapolate = extrapolate and not analysis.rows[0].rate_parts
        self.extrapolations: list[float] = []  # the beta of every extrapolated anchor
        # the last extrapolated anchor and the plain MM step it extends: (x_beta, y, f(y))
        self.retreat: tuple[tuple, tuple, float] | None = None
        self.retreated = ""  # why the run went back to a plain MM step (certificate details)
        self.elastic: ElasticSolver | None = None  # phase one's steps, when it may run
        self.restarts = 0  # repairs whose infeasible step phase one restarted (:meth:`solve`)
        #: a repair's tightened rows had no feasible point that MM or phase one could reach:
        #: its round ended without a budget spent, so the threshold search still runs
        self.no_start = False
        self.reachable = bounds  # the bounds of the last round that MM could run under
        self.continuing = False  # MM continues from a moved model after a round with no start
        self.unreached = 0  # repairs whose tightened rows phase one found no point for
        #: the columns the row checks keep on the workers over the run, by dataset (Dask data:
        #: :func:`~ratecons.chain_points.score_table`), released with the run
        self.kept: dict[int, dict[Any, Any]] = {}
        #: MM steps whose anchor had an example at a tie of eq. 4 (None: not counted)
        self.tied_anchors: int | None = 0
        self.sides = bound_sides(analysis)  # the bounds of eq. 4 each example has
        self.start_only = start_only  # a row sample's run (solve_generic): no repair, no check
        self.start_recorded = False  # the history's iteration-0 event is written

    def record(self, event: dict[str, Any]) -> None:
        """One history event (with the time since the start), passed to the callback."""
        self.history.append({**event, "time": time.perf_counter() - self.start_time})
        if self.callback:
            self.callback(self.history[-1])

    def finish(self, status: str, step: ConvexStep | None, details: dict[str, Any],
               table: ScoreTable | None = None) -> tuple:
        """The Solution, the user's scorer and the :class:`LastStep` (None, None if no model)."""
        details.update(self.run_details)
        name = self.run_details["solver"]
        tracker = Tracker(f"generic/{name}", max_iterations=self.max_iterations)
        tracker.iterations = self.iterations
        if status == settings.ITERATION_LIMIT and self.iterations < self.max_iterations:
            # uncertified with steps to spare (a repair's miss, a moved bias): not a cap
            tracker.stop("stalled", "ended without a certified fixed point")
        elapsed = time.perf_counter() - self.start_time
        advice = details.get("message", "") if status in settings.LIMIT_STATUSES else ""
        if step is None or step.w is None:
            return tracker.solution({}, objective=float("nan"), status=status, details=details,
                                    history=self.history, solver=name, solve_time=elapsed,
                                    advice=advice), None, None
        scorer = self.fmap.invert(step.w, step.b)
        value = surrogate_objective(self.analysis, table, step.w)
        missed = missed_rows(self.analysis, table)
        details["indicator_violations"] = {row.name: float(v) for row, v in
                                           zip(self.analysis.constraints, missed)}
        last = self.at_point or step  # the last convex step solved: at the point, or to it
        details["step_objective"] = last.objective
        details["step_bounds"] = self.step_bounds.copy()  # the last step's (after any repair)
        convex = not self.analysis.needs_mm and self.at_point is None  # one step, no MM
        lower = last.lower_bound if convex else None  # the step's certified bound is ours
        contradicted = contradicted_bound(lower, value, self.tol)
        if contradicted:
            details["message"], lower = contradicted, None
            status = settings.OPTIMAL_INACCURATE if status == settings.OPTIMAL else status
        sol = tracker.solution({"w": step.w, "b": np.float64(step.b)}, objective=value,
                               status=status, dual={"v": last.duals}, upper=value,
                               lower=lower, gap=None if lower is None else value - lower,
                               max_violation=float(missed.max(initial=0.0)), details=details,
                               history=self.history, solve_time=elapsed, advice=advice)
        return sol, scorer, LastStep(self.step_anchor, self.step_bounds, last.objective)

    def point_of(self, step: ConvexStep, scores: dict[int, np.ndarray]) -> tuple:
        return step, scores, score_table(self.analysis, self.fmap, scores, step,
                                         self.kept)

    def solve(self, point: tuple, value: float) -> Step:
        """The MM step at ``point`` under the bounds in force."""
        anchor_scores = point[1]
        self.count_ties(point)
        nxt = self.step_solver(self.psi, anchor_scores, self.bounds)
        restarted = (nxt.status in settings.INFEASIBLE_STATUSES and value == np.inf
                     and self.elastic is not None)
        if restarted:
            nxt = self.restart(anchor_scores, nxt)
        info = (nxt, anchor_scores, self.bounds)
        if nxt.status not in settings.SOLVED_STATUSES or nxt.w is None:
            return Step(nxt.status, None, float("nan"), float("nan"), info=info, handled=(
                "phase one, restarted there under the tightened rows, found no point meeting "
                "them: the tightening is undone and the repair goes on from the last iterate"
                if restarted else ""))
        found = self.point_of(nxt, step_scores(self.psi, nxt))
        found_value = surrogate_objective(self.analysis, found[2], nxt.w)
        if (self.extrapolate and anchor_scores is not None and not restarted
                and (value - nxt.objective) / max(1.0, abs(value)) > self.tol):
            found, found_value = self.extrapolated(point, found, found_value)
        return Step(nxt.status, found, found_value, nxt.objective, info=info,
                    restored=restarted)

    def count_ties(self, anchor: tuple) -> None:
        """Count ``anchor`` in ``tied_anchors`` if an example is at a tie of eq. 4 (None: Dask)."""
        ties = tied_examples(self.sides, anchor[2])
        if ties is None or self.tied_anchors is None:
            self.tied_anchors = None
        else:
            self.tied_anchors += ties > 0

    def restart(self, anchor: dict[int, np.ndarray], failed: ConvexStep) -> ConvexStep:
        """Phase one from ``anchor`` under the bounds in force, for a repair whose tightened
        step is infeasible there (module docstring): its feasible point is the step's answer,
        from which MM goes on; ``failed`` when it finds none."""
        start, feasible = run_phase_one(self.analysis, self.fmap, self.psi, self.elastic,
                                        self.bounds, settings.PHASE1_MAX_ITERATIONS,
                                        self.callback, anchor, kept=self.kept)
        self.history += start.history
        self.restarts += 1
        self.no_start = feasible is None
        if feasible is None:  # undo the tightening no start could meet
            self.bounds = self.reachable
            self.unreached += 1
        return failed if feasible is None else feasible

    def from_sample(self, start: SampleStart) -> tuple[tuple, dict[str, Any]] | None:
        """The first point from a model solved on a row sample (:mod:`ratecons.sample_start`):
        None (the chain starts from the hinge relaxation) when the sample's MM took steps but
        gained less than ``settings.SAMPLE_START_MIN_GAIN`` over its hinge relaxation; the
        model itself when it meets every surrogate row on all rows with the phase-one margin
        (MM's first anchor has an interior); else the answer of the MM step solved at it
        (:meth:`step_from_missing`), else the sample's model solved again with the missed rows
        tightened, else phase one's point from its scores; None when phase one finds none or
        the chain has none. Also phase one's details (empty without it)."""
        if start.mm_iterations > 1 and start.gain < settings.SAMPLE_START_MIN_GAIN:
            self.used(start, (
                f"no: its MM steps lowered its hinge relaxation's objective by only "
                f"{start.gain:.1e} (relative, below {settings.SAMPLE_START_MIN_GAIN:g}), so the "
                "chain starts from the hinge relaxation on all rows"))
            return None
        margin = 0.0 if self.elastic is None else self.elastic.margin
        for tightenings in itertools.count():
            step = ConvexStep(settings.OPTIMAL, float("nan"), start.w, start.b, solver="sample",
                              message=f"the model solved on a {start.rows}-row sample")
            point = self.point_of(step, step_scores(self.psi, step))
            miss = surrogate_rows(self.analysis, point[2]) - (self.bounds - margin)
            if np.all(miss <= 0.0):
                self.used(start, "as the start of MM")
                return point, {}
            if tightenings == 0:
                stepped = self.step_from_missing(point, start)
                if stepped is not None:
                    return stepped, {}
            tighter = (start.tightened(SAMPLE_TIGHTENING * np.maximum(miss, 0.0))
                       if tightenings < settings.SAMPLE_START_TIGHTENINGS else None)
            if tighter is None:
                break
            start = tighter
        if self.elastic is None:
            self.used(start, "no: it misses a surrogate row on all rows and this chain has "
                             "no phase one")
            return None
        found, feasible = run_phase_one(self.analysis, self.fmap, self.psi, self.elastic,
                                        self.bounds, settings.PHASE1_MAX_ITERATIONS,
                                        self.callback, point[1], kept=self.kept)
        self.history += found.history
        if feasible is None:
            self.used(start, f"no: phase one from it ended {found.status} without a "
                             "feasible point")
            return None
        self.used(start, "as the anchor of phase one (it misses a surrogate row on all rows)")
        return self.point_of(feasible, step_scores(self.psi, feasible)), {
            "phase1_iterations": found.certificate.details["phase1_iterations"],
            "phase1_solver": found.solver, "phase1_after": "sample start"}

    def used(self, start: SampleStart, how: str) -> None:
        """Says in ``run_details["sample_start"]`` how a row sample's model was used."""
        if start.origin == "sample":
            self.run_details["sample_start"] = start.details(how)

    def step_from_missing(self, point: tuple, start: SampleStart) -> tuple | None:
        """The first MM step on all rows solved at ``point``, a sample's model that misses a
        surrogate row there (:mod:`ratecons.sample_start`): its certified answer meets every
        surrogate row (the bound of eq. 4 at the anchor is above the ramp everywhere), so MM
        goes on from it as from any iterate; None when the step has no certified answer (the
        sample is then solved again, tightened). In the history: the sample's event, MM's first."""
        step = self.step_solver(self.psi, point[1], self.bounds)
        if step.status != settings.OPTIMAL or step.w is None:
            return None
        self.count_ties(point)
        self.iterations += 1
        self.step_anchor, self.step_bounds = point[1], self.bounds
        self.used(start, "as the anchor of the first MM step (it misses a surrogate row on "
                         "all rows)")
        self.start_recorded = True
        self.record({"iteration": 0, "stage": start.origin, "objective": surrogate_objective(
            self.analysis, point[2], start.w), "bound_objective": float("nan")})
        found = self.point_of(step, step_scores(self.psi, step))
        self.accept(Step(step.status, found, surrogate_objective(self.analysis, found[2],
                                                                 step.w), step.objective))
        return found

    def extrapolated(self, anchor: tuple, found: tuple, value: float) -> tuple[tuple, float]:
        """The MM step from ``anchor`` to ``found`` continued along its own direction,
        x_beta = found + beta (found - anchor): beta = 1, 2, 4, ... up to
        :data:`EXTRAPOLATION_MAX` while the surrogate objective keeps decreasing, or, when
        beta = 1 fails, 1/2, 1/4, ... down to :data:`EXTRAPOLATION_MIN`; a point counts only
        when every surrogate row stays within its bound (or no further past it than at
        ``found``). The best such point is the next anchor (``found`` itself when none is
        better). Every bound of eq. 4 of Goh et al. is tight at any anchor meeting the rows,
        so Alg 1's monotone decrease and its fixed points are those of the plain steps: only
        the path is shorter (an accelerated MM in the spirit of Varadhan & Roland's SQUAREM,
        safeguarded by the exact surrogate objective)."""
        step, scores, _ = found
        base, base_scores = anchor[0], anchor[1]
        dw, db = step.w - base.w, step.b - base.b
        dz = {key: z - base_scores[key] for key, z in scores.items()}
        allowed = np.maximum(self.bounds, surrogate_rows(self.analysis, found[2]))

        def trial(beta: float) -> tuple[tuple, float] | None:
            w = step.w + beta * dw
            point = self.point_of(replace(step, w=w, b=step.b + beta * db),
                                  {key: z + beta * dz[key] for key, z in scores.items()})
            if np.any(surrogate_rows(self.analysis, point[2]) > allowed):
                return None
            return point, surrogate_objective(self.analysis, point[2], w)

        best, best_value, chosen = found, value, 0.0
        betas = [1.0]
        while betas:
            beta = betas.pop()
            tried = trial(beta)
            if tried is not None and tried[1] < best_value:
                (best, best_value), chosen = tried, beta
                if beta >= 1.0 and 2.0 * beta <= EXTRAPOLATION_MAX:
                    betas.append(2.0 * beta)
            elif beta <= 1.0 and chosen == 0.0 and 0.5 * beta >= EXTRAPOLATION_MIN:
                betas.append(0.5 * beta)
        if chosen:
            self.extrapolations.append(chosen)
            self.retreat = (best, found, value)
        return best, best_value

    def accept(self, taken: Step) -> None:
        self.record({"iteration": next(self.numbers), "stage": "mm", "objective": taken.value,
                     "bound_objective": taken.lower})

    def run_round(self, point: tuple, value: float) -> tuple:
        """MM (the one loop) from ``point`` under the bounds in force."""
        out = fixed_point(point, value, self.solve, tol=self.tol, accept=self.accept,
                          max_iterations=self.max_iterations - self.iterations)
        if out.failed and self.retreat is not None and out.point is self.retreat[0]:
            # the step at an extrapolated anchor could not be solved (on 200,000 synthetic
            # rows, hinge loss + 80% rule, every structured start stalled there while the
            # plain MM path solved): MM goes on from the plain step y it extended, without
            # extrapolation; y is an MM iterate, so the run is Alg 1's from there
            _, plain, plain_value = self.retreat
            self.iterations += out.steps
            self.extrapolate, self.retreat, self.retreated = False, None, out.message
            out = fixed_point(plain, plain_value, self.solve, tol=self.tol, accept=self.accept,
                              max_iterations=self.max_iterations - self.iterations)
        self.iterations += out.steps
        if not out.failed:
            self.reachable = self.bounds
        self.status, self.last_decrease = out.status, out.last_relative_decrease
        self.mm_message = out.message or self.mm_message
        if out.at_point is not None:  # a fixed point: its step is the last step
            self.at_point, self.step_anchor, self.step_bounds = out.at_point.info
        elif out.accepted is not None:
            self.at_point = None
            _, self.step_anchor, self.step_bounds = out.accepted.info
        return out.point

    def missed(self, point: tuple) -> np.ndarray:
        miss = missed_rows(self.analysis, point[2])
        return np.where(miss > FEASIBILITY_TOL, miss, 0.0)

    def intercept(self, point: tuple, last: bool) -> tuple | None:
        """The threshold search (module docstring), the last resort of the repair."""
        if self.status in settings.LIMIT_STATUSES and not self.no_start:
            return None  # no search past a budget
        found, scores, table = point
        # the last resort keeps the least violating intercept when none meets every row
        shift = threshold_search(self.analysis, table, self.fmap, found, best_effort=last)
        if shift is None:
            return None
        self.shifts.append(shift)
        self.continuing = self.no_start
        return self.point_of(replace(found, b=found.b + shift),
                             {key: z - shift for key, z in scores.items()})

    def resolve(self, point: tuple, miss: np.ndarray, done: int) -> tuple | None:
        """Tighten the missed rows by what they miss, doubling each round (the indicator's gap
        to the ramp, and the adversary's reweighting for worst-case rates, need not shrink in
        step), and run MM again (the tightened problem has another surrogate objective: value
        inf, so a step is taken). After a round whose tightened rows phase one could not reach
        (:meth:`restart`), the threshold search's moved model is continued instead: MM from it
        under the last reachable bounds raised to its own surrogate rows (module docstring)."""
        if self.continuing:
            self.continuing = self.no_start = False
            self.bounds = np.maximum(self.reachable, surrogate_rows(self.analysis, point[2]))
            return self.run_round(point, surrogate_objective(self.analysis, point[2], point[0].w))
        if self.status in settings.LIMIT_STATUSES:
            return None
        self.bounds = self.bounds - np.where(miss > 0.0,
                                             (miss + REPAIR_MARGIN) * 2.0 ** done, 0.0)
        return self.run_round(point, np.inf)

    def majorize_and_repair(self, point: tuple, value: float, repair_rounds: int) -> tuple:
        """MM from the first point, then the deterministic repair (module docstring)."""
        repaired = repair_ladder(self.run_round(point, value), missed=self.missed,
                                 intercept=self.intercept, resolve=self.resolve,
                                 rounds=repair_rounds, eager=False)
        self.rounds, self.intercepted = repaired.rounds, repaired.intercepted
        self.continuations_missed = repaired.continuations_missed
        return repaired.point

    def details(self, step: ConvexStep, table: ScoreTable,
                phase1: dict[str, Any]) -> dict[str, Any]:
        """The certificate's details of a run that reached a model; a constraint the
        deterministic model still misses is named (the warning of :meth:`finish`) and the
        status becomes ``iteration_limit`` unless the time limit ended the run."""
        analysis = self.analysis
        details: dict[str, Any] = {"mm_iterations": self.iterations,
                                   "phase1_restarts": self.restarts,
                                   "unreached_repairs": self.unreached,
                                   "extrapolated_steps": len(self.extrapolations),
                                   "repair_rounds": self.rounds, "local": analysis.needs_mm,
                                   "step_status": (self.at_point or step).status, **phase1}
        if self.retreated:
            details["extrapolation_abandoned"] = (
                f"{self.retreated}: at an extrapolated anchor; MM went on from the plain step "
                "it extended, without extrapolation")
        if analysis.needs_mm:
            details["last_relative_decrease"] = self.last_decrease
            details["tol"] = self.tol
            details["tied_examples"] = tied_examples(self.sides, table)
            details["tied_anchors"] = self.tied_anchors
        if self.mm_message:
            details["message"] = self.mm_message
        if self.shifts:
            details["threshold_shift"] = self.shifts[-1]
            moved = (f"the threshold search moved the intercept {len(self.shifts)} time(s), "
                     f"the last by {self.shifts[-1] + 0.0:.3g}, so that the deterministic model "
                     "meets every constraint; ")
            if self.intercepted:  # off the certified fixed point: no continuation could run
                details["message"] = moved + (
                    "MM from each moved model ended where the deterministic model misses a row "
                    "again, so the last moved model is returned, which is not a certified "
                    "fixed point" if self.continuations_missed else
                    "no continuation could run from the moved model ("
                    + ("phase one found no point meeting the tightened rows" if self.no_start
                       else "a budget was spent") + "), so it is not a certified fixed point")
                if self.status not in settings.LIMIT_STATUSES:
                    self.status = settings.ITERATION_LIMIT
            elif self.status == settings.OPTIMAL:
                details["message"] = moved + (
                    "MM continued from the moved model and certified the fixed point returned")
            else:  # the continuation ended uncertified: say so, with its own reason if any
                details["message"] = moved + (
                    f"MM continued from the moved model and ended {self.status} without "
                    "certifying a fixed point" + (f" ({self.mm_message})" if self.mm_message
                                                  else ""))
        loosened = loosened_bounds(analysis, self.step_bounds, table)
        if loosened:
            details["loosened_bounds"] = loosened
            before = details.get("message")
            details["message"] = (before + "; " if before else "") + (
                f"{self.status} certifies the fixed point of the surrogate problem with "
                "loosened bounds, not of yours: " + "; ".join(
                    f"'{row['constraint']}' {row['sense']} {row['certified_bound']:.6g} "
                    f"(yours: {row['user_bound']:.6g}; exact value at the model "
                    f"{row['exact']:.6g})" for row in loosened)
                + ". The deterministic model meets your bounds on the training data")
        missed = missed_rows(analysis, table)
        if missed.max(initial=0.0) > FEASIBILITY_TOL and not self.start_only:
            names = " and ".join(f"'{row.name}' by {v:.3g}" for row, v in zip(
                analysis.constraints, missed, strict=True) if v > FEASIBILITY_TOL)
            details["message"] = (
                f"the deterministic model misses {names} on the training data after "
                f"{self.rounds} repair round(s); "
                + ("the time limit ended the run" if self.status == settings.TIME_LIMIT
                   else f"the run took all max_iterations = {self.max_iterations} steps: a "
                   "larger max_iterations lets the repair go on"
                   if self.iterations >= self.max_iterations
                   else "no time or iteration limit was reached, so a larger max_iterations "
                   "changes nothing"))
            if self.status != settings.TIME_LIMIT:
                self.status = settings.ITERATION_LIMIT  # finish() warns with the message
        return details


def generic_method(name: str = "generic") -> MethodSpec:
    """The generic chain as a method of any score-model problem (``method="generic"``)."""
    def run(problem: Any, form: Analysis, **kwargs: Any) -> Result:
        result = _run(problem, form, **kwargs)
        result.method = name
        return result

    run.__signature__ = inspect.signature(_run)  # the options of the chain
    return MethodSpec(name, run, "the generic chain (CVXPY), the reference of every pattern",
                      at_loss_scale=True)


def _run(problem: Any, form: Analysis, *, seed: int | None = None, callback: Any = None,
         solver: str | None = None, solver_options: dict[str, Any] | None = None,
         max_iterations: int = settings.MM_MAX_ITERATIONS,
         tol: float = settings.MM_RELATIVE_TOL, repair_rounds: int = 5,
         kernel_points: int = MAX_EXACT_KERNEL_POINTS,
         only_step: LastStep | None = None, extrapolate: bool = True,
         sample_start: bool | int | None = None) -> Result:
    seed = 0 if seed is None else seed
    fmap = kernelize(form.model, form.datasets, kernel_points, seed)  # the sample's too

    def chain(analysis: Analysis, start: SampleStart | None, sampled: bool
              ) -> tuple[Solution, Any, LastStep | None]:
        return solve_generic(
            analysis, solver=solver, solver_options=solver_options,
            max_iterations=max_iterations, tol=tol, repair_rounds=repair_rounds,
            kernel_points=kernel_points, seed=seed, feature_map=fmap,
            callback=None if sampled else callback, only_step=only_step,
            extrapolate=extrapolate, start=start, start_only=sampled)

    solution, scorer, last_step = chain_at_loss_scale(form, sample_start, chain, only_step)
    objective = form.objective.to_user(solution.objective)  # the surrogate E at the solution
    return Result(problem, "cvxpy", solution, scorer, objective,
                  extras={"last_step": last_step}, to_user=form.objective.to_user)
