"""The generic chain with the structured step solver: ``method="structured"``.

Every step of the chain of :mod:`ratecons.generic` (kernelize, the hinge relaxation,
majorization-minimization over the ramp parts (Alg 1 of Goh et al.), deterministic repair) is
lowered by :func:`~ratecons.reductions.to_structured.lower_structured` and solved by the
structured interior point (:func:`~ratecons.solvers.structured.solve_structured`), whose
Newton systems cost one weighted Gram product over the examples. A step it cannot certify
(status other than ``optimal``: an infeasible hinge relaxation, a stall) is solved again by
the CVXPY reference step, so the chain never ends worse than ``method="cvxpy"``; the step's
``message`` says so and the result's certificate counts such steps (``reference_steps``).
After :data:`GIVE_UP_AFTER` such steps in a row the run keeps the CVXPY steps; on more than
:data:`REFERENCE_FALLBACK_MAX_ROWS` rows an uncertified MM step ends the run at its last
certified iterate instead. A step the interior point proves infeasible (a Farkas ray) is not
solved again, nor by way of its elastic step: the first step and a repair's tightened step go
to phase one, and a problem without ramp parts ends ``infeasible``.

A step whose lowered problem is the last one's (the anchor moved, but no example crossed an
end of a ramp, so the bounds of eq. 4 are the same; typically the step that certifies the
fixed point) is not solved again: the last step's certified answer is its answer
(``certificate.details["reused_steps"]``; only an answer solved to the step tolerance is
reused).
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import numpy as np

from . import limits, settings
from .chain_points import on_client
from .chain_scale import chain_at_loss_scale
from .expr.analysis import Analysis
from .generic import LastStep, solve_generic
from .patterns.pattern import MethodSpec
from .reductions.kernelize import MAX_EXACT_KERNEL_POINTS, kernelize
from .reductions.to_cvxpy import ConvexStep, pick_solver, solve_step
from .reductions.to_structured import lower_structured, structured_support
from .result import Result
from .sample_start import SampleStart
from .solution import Solution
from .solvers.structured import CERTIFIED_TOL, DEFAULT_TOL
from .structured_fallback import by_reference, warm_then_cold
from .structured_phase_one import step_by_elastic, structured_elastic_step

__all__ = ["structured_method", "structured_step", "structured_support"]

#: after this many steps in a row that the structured interior point could not certify (steps
#: with no interior, such as a repair's tightened rows right at a phase-one start), the rest of
#: the run uses the CVXPY steps: on 2,000 Adult rows with churn and the 80% rule every step of
#: the run failed that way, and each failed attempt cost 0.3-0.4 s before its fallback
GIVE_UP_AFTER = 2
#: above this many rows an MM step that the structured solver cannot certify is not handed to
#: CVXPY (one CLARABEL step on 200,000 rows ran past two minutes): the run ends at its last
#: certified iterate with status ``iteration_limit`` and says why; the hinge relaxation (the
#: first step, which phase one may need) is always handed over
REFERENCE_FALLBACK_MAX_ROWS = 50_000
#: inexact MM steps: an MM step is solved to INEXACT_FRACTION times the relative decrease of the
#: step objective it is expected to make (:func:`_step_tolerance`; at most INEXACT_MAX, at least
#: the step tolerance), so that early steps, whose decrease is 1e-2..1e-1, stop after fewer
#: interior-point iterations while the steps near the fixed point are solved to the step
#: tolerance. Expecting the last decrease again (the earlier rule) cost a loose step and its
#: tight re-solve at the end of runs whose decrease collapsed at once (2,000 Adult rows, hinge
#: + 80% rule: 94 interior-point iterations against 77 with every step tight)
INEXACT_FRACTION = 1e-2
INEXACT_MAX = 1e-4
#: a loosely solved step (tolerance above the certificate's 1e-6) whose own decrease is below
#: INEXACT_SAFETY times its tolerance, or that has no previous step to compare with, is solved
#: again to the step tolerance from where it stopped: the MM driver may take it as the fixed
#: point, whose status ``optimal`` must rest on a certified step
INEXACT_SAFETY = 10.0


def _step_tolerance(tol: float, anchor: Any, previous: dict[str, Any]) -> float:
    """The tolerance of the next step: :data:`INEXACT_FRACTION` times the decrease the next
    step is expected to make, the last decrease times the ratio of the last two (MM converges
    linearly; a run whose decrease collapsed is at its fixed point, where a loose step would
    only be solved again, :data:`INEXACT_SAFETY`). Tight while fewer than two decreases are
    known."""
    decreases = previous.get("decreases", [])
    if anchor is None or len(decreases) < 2:
        return tol
    last, before = decreases[-1], decreases[-2]
    expected = last * min(1.0, last / before) if before > 0.0 else 0.0
    return float(np.clip(INEXACT_FRACTION * expected, tol, INEXACT_MAX))


def _decrease(previous: dict[str, Any], objective: float) -> float:
    """Relative decrease of the step objective from the last MM step (inf without one)."""
    if "objective" not in previous:
        return float("inf")
    last = previous["objective"]
    return (last - objective) / max(1.0, abs(last))


def _solve_mm_step(form: Any, tol: float, anchor: Any, previous: dict[str, Any],
                   deadline: float | None, counts: dict[str, int]) -> Any:
    """One step by the structured interior point: warm from the last certified step, to the
    tolerance of :func:`_step_tolerance`, tightened per :data:`INEXACT_SAFETY`."""
    warm = previous.get("warm") if anchor is not None else None
    step_tol = _step_tolerance(tol, anchor, previous)
    answer = warm_then_cold(form, step_tol, deadline, warm)
    decrease = _decrease(previous, answer.objective)
    loose_solved_again = (answer.status == settings.OPTIMAL and step_tol > CERTIFIED_TOL and (
        decrease == float("inf") or decrease < INEXACT_SAFETY * step_tol))
    if loose_solved_again:
        counts["tightened"] = counts.get("tightened", 0) + 1
        loose = answer
        answer = warm_then_cold(form, tol, deadline, loose.warm_start(form.m)).after(loose)
        decrease = _decrease(previous, answer.objective)
    previous["tight"] = step_tol <= tol or loose_solved_again
    if answer.status == settings.OPTIMAL and anchor is not None:
        if "objective" in previous:
            previous.setdefault("decreases", []).append(max(decrease, 0.0))
        previous["objective"] = answer.objective
    counts["interior_iterations"] = counts.get("interior_iterations", 0) + answer.iterations
    answer.message = answer.message or f"solved to relative tolerance {step_tol:.0e}"
    return answer


def lagrangian_bound(answer: Any) -> float:
    """The certified step's lower bound f - lam^T c(x) = f - gap max(1, |f|) (the Lagrangian
    at the answer's multipliers; it is their dual value g(lam) up to the stationarity
    residual, which the certificate holds below the step tolerance with the gap)."""
    return float(answer.objective - answer.rel_gap * max(1.0, abs(answer.objective)))


def structured_step(analysis: Analysis, tol: float = DEFAULT_TOL,
                    counts: dict[str, int] | None = None,
                    previous: dict[str, Any] | None = None):
    """A step solver for :func:`ratecons.generic.solve_generic` (the seam of
    :func:`ratecons.matrix_chain.highs_step`): lower, solve by the structured interior point,
    and fall back to the CVXPY step when it ends without a certificate. ``previous`` holds
    over the run the last certified step (``"warm"``: the next MM step starts there) and the
    last MM steps' decrease; given, it is the caller's (the chain on a row sample hands its
    last step's warm start, p + m numbers, to the first MM step on all rows)."""
    counts = counts if counts is not None else {}
    previous = {} if previous is None else previous
    lowered: dict[str, Any] = {}  # what the lowering keeps over the run's steps

    def step(psi: dict[int, Any], anchor: Any, bounds: np.ndarray) -> ConvexStep:
        anchor = None if anchor is None else on_client(anchor)  # the lowering's, per piece
        if counts.get("failed_in_a_row", 0) >= GIVE_UP_AFTER:
            counts["reference"] = counts.get("reference", 0) + 1
            return solve_step(analysis, psi, anchor, bounds, pick_solver(analysis, None))
        form = lower_structured(analysis, psi, anchor, bounds, lowered)
        last = previous.get("solved")  # (the last form's digest: not the form, kept)
        if last is not None and form.digest() == last[0]:
            counts["reused"] = counts.get("reused", 0) + 1
            return replace(last[1], solve_time=0.0, message=(
                "the same convex problem as the last step (the bounds of eq. 4 at this anchor "
                "are those at the last one): its certified answer, not solved again"))
        deadline = limits.active().deadline
        answer = _solve_mm_step(form, tol, anchor, previous, deadline, counts)
        unsolved = answer.status not in (settings.OPTIMAL, settings.TIME_LIMIT)
        if unsolved and anchor is None and analysis.needs_mm:  # phase one takes it (generic)
            return ConvexStep(answer.status, float("nan"), solver="structured",
                              solve_time=answer.solve_time, message=answer.message)
        if unsolved and answer.status != settings.INFEASIBLE:  # a thin interior
            answer = step_by_elastic(form, tol, deadline, answer, counts)
        if answer.status == settings.INFEASIBLE:  # proved (a Farkas ray): phase one, if any
            return ConvexStep(answer.status, float("nan"), solver="structured",
                              solve_time=answer.solve_time, message=answer.message)
        counts["structured"] = counts.get("structured", 0) + 1
        if answer.status == settings.OPTIMAL:
            counts["failed_in_a_row"] = 0
            previous["warm"] = answer.warm_start(form.m)
        if answer.status == settings.OPTIMAL:
            solved = ConvexStep(answer.status, answer.objective, answer.w, answer.b,
                                answer.duals, "structured", answer.solve_time,
                                f"{answer.iterations} interior-point iterations, relative gap "
                                f"{answer.rel_gap:.1e} ({answer.message})",
                                lower_bound=lagrangian_bound(answer))
            previous["solved"] = (form.digest(), solved) if previous["tight"] else None
            return solved
        if answer.status == settings.TIME_LIMIT:
            return ConvexStep(answer.status, answer.objective, answer.w, answer.b,
                              answer.duals, "structured", answer.solve_time, answer.message)
        if anchor is not None and form.rows.n > REFERENCE_FALLBACK_MAX_ROWS:
            # an MM step the structured solver could not certify on many rows: the chain keeps
            # its last certified iterate (status iteration_limit) rather than wait for CVXPY
            counts["uncertified"] = counts.get("uncertified", 0) + 1
            return ConvexStep(answer.status, float("nan"), solver="structured",
                              solve_time=answer.solve_time, message=answer.message)
        counts["reference"] = counts.get("reference", 0) + 1
        counts["failed_in_a_row"] = counts.get("failed_in_a_row", 0) + 1
        return by_reference(answer, lambda: solve_step(analysis, psi, anchor, bounds,
                                                       pick_solver(analysis, None)))

    return step


def _run(problem: Any, form: Analysis, *, seed: int | None = None, callback: Any = None,
         tol: float = settings.MM_RELATIVE_TOL, step_tol: float = DEFAULT_TOL,
         max_iterations: int = settings.MM_MAX_ITERATIONS, repair_rounds: int = 5,
         kernel_points: int = MAX_EXACT_KERNEL_POINTS,
         only_step: LastStep | None = None, extrapolate: bool = True,
         sample_start: bool | int | None = None) -> Result:
    reason = structured_support(form)
    if reason is not None:
        from .errors import NotLinearError

        raise NotLinearError(reason + ". Use method='cvxpy' (the reference chain) instead.")
    counts: dict[str, int] = {}
    on_sample: dict[str, Any] = {}  # the last sample solve's steps
    seed = 0 if seed is None else seed
    fmap = kernelize(form.model, form.datasets, kernel_points, seed)  # the sample's too

    def chain(analysis: Analysis, start: SampleStart | None, sampled: bool
              ) -> tuple[Solution, Any, LastStep | None]:
        if sampled:
            on_sample.clear()
            counted, previous = {}, on_sample
        else:
            # the first MM step on all rows starts from the sample's last certified step (w, b
            # and the rows' multipliers: the rates are means on both, so they carry over)
            counted = counts
            # (once: a later round at the loss's scale starts from its own model, cold)
            previous = ({"warm": on_sample.pop("warm")} if start is not None
                        and "warm" in on_sample else {})
        return solve_generic(
            analysis, max_iterations=max_iterations, tol=tol, repair_rounds=repair_rounds,
            kernel_points=kernel_points, seed=seed, feature_map=fmap,
            callback=None if sampled else callback, only_step=only_step,
            step_solver=structured_step(analysis, step_tol, counted, previous),
            step_solver_name=settings.STRUCTURED_METHOD, phase_one=True,
            extrapolate=extrapolate, start=start, start_only=sampled,
            elastic_solver=structured_elastic_step(analysis, step_tol, counted))

    solution, scorer, last_step = chain_at_loss_scale(form, sample_start, chain, only_step)
    solution.certificate.details["structured_steps"] = counts.get("structured", 0)
    solution.certificate.details["reference_steps"] = counts.get("reference", 0)
    solution.certificate.details["uncertified_steps"] = counts.get("uncertified", 0)
    solution.certificate.details["interior_iterations"] = counts.get("interior_iterations", 0)
    solution.certificate.details["tightened_steps"] = counts.get("tightened", 0)
    solution.certificate.details["reused_steps"] = counts.get("reused", 0)
    solution.certificate.details["phase1_reference_steps"] = counts.get("phase1_reference", 0)
    solution.certificate.details["phase1_inexact_steps"] = counts.get("phase1_inexact", 0)
    solution.certificate.details["elastic_steps"] = counts.get("rescued", 0)
    objective = form.objective.to_user(solution.objective)
    return Result(problem, settings.STRUCTURED_METHOD, solution, scorer, objective,
                  extras={"last_step": last_step}, to_user=form.objective.to_user)


def structured_method() -> MethodSpec:
    """``method="structured"``: the generic chain with every step solved by the structured
    interior point (module docstring).

    Options: ``step_tol`` (the steps' relative gap and residual tolerance, default 1e-8; MM
    steps far from the fixed point are solved more loosely, :data:`INEXACT_FRACTION`) and the
    chain's ``max_iterations``, ``tol``, ``repair_rounds``, ``kernel_points``, ``only_step``,
    ``sample_start`` (the start from a row sample on large data, :mod:`ratecons.sample_start`).
    """
    def run(problem: Any, form: Analysis, **kwargs: Any) -> Result:
        return _run(problem, form, **kwargs)

    run.__signature__ = inspect.signature(_run)
    return MethodSpec(settings.STRUCTURED_METHOD, run, "the generic chain with every step "
                      "solved by the structured interior point (one weighted Gram product per "
                      "Newton step)", at_loss_scale=True)
