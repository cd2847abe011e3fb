"""The structured phase one: the elastic steps of the chain's search for a feasible start
solved by the structured interior point.

Phase one (:func:`ratecons.phase_one.find_feasible_start`) is majorization-minimization on the
elastic problem; each of its steps is the chain's step with a slack on every constraint row
(:mod:`ratecons.reductions.to_elastic`). :func:`structured_elastic_step` lowers such a step to
the structured form and solves it by :func:`~ratecons.solvers.structured.solve_structured`,
whose Newton systems cost one weighted Gram product over the examples, where the CVXPY
elastic step (``solve_step(..., elastic=True)``) hands CLARABEL a KKT system with a row per
example (tens of seconds a step on the 34,189 rows of the Adult split). Each step starts warm
from the last certified step of its stage. A step the interior point leaves uncertified at a
small gap (a stall, :data:`STALLED_ELASTIC_GAP`) gives phase one its iterate, with status
``optimal_inaccurate`` (phase one's merit test keeps its descent); any other uncertified step
is solved again by the CVXPY elastic step (the step's ``message`` says so and
``counts["phase1_reference"]`` counts such steps).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from . import limits, settings
from .chain_points import on_client
from .expr.analysis import Analysis
from .phase_one import ElasticSolver
from .reductions.to_cvxpy import ConvexStep, solve_step
from .reductions.to_elastic import elastic_form, objective_free
from .reductions.to_structured import lower_structured
from .solvers.structured import DEFAULT_TOL, solve_structured
from .solvers.structured_form import StructuredForm, StructuredSolution, WarmStart
from .structured_fallback import by_reference, certified, warm_then_cold

__all__ = ["step_by_elastic", "structured_elastic_step"]


def _fits(warm: WarmStart | None, form: StructuredForm) -> bool:
    """Whether ``warm`` (a step's answer with every row's multiplier) fits ``form``."""
    return (warm is not None and warm.extra.size == form.extra
            and warm.duals.size == form.m and warm.w.size == form.rows.p)


#: an elastic step the interior point leaves uncertified at a relative gap at most this (a
#: stall, not a time limit) gives phase one its iterate as the next anchor, status
#: ``optimal_inaccurate``, instead of being solved again by CLARABEL: phase one is MM on its
#: merit and takes a step only where the merit falls (else it raises the penalty), so an
#: inexact step keeps its descent. On the whole Adult split (logistic loss + churn + 80% rule)
#: the first elastic step stalled at 1.8e-2 after 98 iterations (22 s) and CLARABEL then took
#: 100-200 s on it
STALLED_ELASTIC_GAP = 0.1


def _usable(answer: StructuredSolution) -> bool:
    """Whether a stalled elastic step's iterate may be phase one's next anchor (asked only of
    an uncertified answer, never a time limit: :func:`~ratecons.structured_fallback.certified`
    keeps those)."""
    return (answer.rel_gap <= STALLED_ELASTIC_GAP and bool(np.all(np.isfinite(answer.w)))
            and bool(np.isfinite(answer.b)))


def _as_step(answer: StructuredSolution, status: str, user: int, message: str) -> ConvexStep:
    """The structured ``answer`` as phase one's step of ``status``, with the user's ``user``
    row multipliers."""
    return ConvexStep(status, answer.objective, answer.w, answer.b, answer.duals[:user],
                      "structured", answer.solve_time, message)


def structured_elastic_step(analysis: Analysis, tol: float = DEFAULT_TOL,
                            counts: dict[str, int] | None = None) -> ElasticSolver:
    """An elastic step solver for :func:`ratecons.generic.solve_generic` (module docstring),
    whose start phase one puts ``settings.PHASE1_MARGIN`` inside the rows (the MM steps of the
    interior point need an interior, :class:`~ratecons.phase_one.ElasticSolver`).

    Parameters
    ----------
    analysis : Analysis
        The problem whose phase one runs.
    tol : float
        The steps' relative gap and residual tolerance.
    counts : dict, optional
        Counters the caller reads: ``phase1_structured`` (steps certified by the interior
        point), ``phase1_inexact`` (stalled steps whose iterate phase one took,
        :data:`STALLED_ELASTIC_GAP`), ``phase1_reference`` (steps solved again by CVXPY) and
        ``interior_iterations`` (added to).
    """
    counts = counts if counts is not None else {}
    free = objective_free(analysis)
    user = len(analysis.constraints)
    caches: dict[bool, dict[str, Any]] = {True: {}, False: {}}  # by stage 1 (a penalty)
    warm: dict[str, WarmStart] = {}

    def step(psi: dict[int, Any], anchor: Any, bounds: np.ndarray,
             penalty: float | None) -> ConvexStep:
        staged = penalty is not None
        anchor = None if anchor is None else on_client(anchor)  # the lowering's, per piece
        plain = lower_structured(analysis if staged else free, psi, anchor, bounds,
                                 caches[staged])
        form = elastic_form(plain, penalty)
        start = warm.get("last")
        deadline = limits.active().deadline
        answer = warm_then_cold(form, tol, deadline, start if _fits(start, form) else None)
        counts["interior_iterations"] = counts.get("interior_iterations", 0) + answer.iterations
        if certified(answer):
            if answer.status == settings.OPTIMAL:
                counts["phase1_structured"] = counts.get("phase1_structured", 0) + 1
                warm["last"] = answer.warm_start(form.m)
            return _as_step(answer, answer.status, user,
                            f"{answer.iterations} interior-point iterations, relative gap "
                            f"{answer.rel_gap:.1e}" + (f" ({answer.message})"
                                                       if answer.message else ""))
        if _usable(answer):  # phase one's own merit test guards its descent
            counts["phase1_inexact"] = counts.get("phase1_inexact", 0) + 1
            return _as_step(answer, settings.OPTIMAL_INACCURATE, user,
                            f"{answer.status} after {answer.iterations} interior-point "
                            f"iterations at a relative gap of {answer.rel_gap:.1e}: its "
                            "iterate is phase one's next anchor (reduced accuracy)")
        counts["phase1_reference"] = counts.get("phase1_reference", 0) + 1
        return by_reference(answer, lambda: solve_step(
            analysis, psi, anchor, bounds, settings.DEFAULT_CONIC_SOLVER, elastic=True,
            penalty=penalty), "elastic step")

    return ElasticSolver(step, margin=settings.PHASE1_MARGIN)


#: the exact penalties tried, in turn, by :func:`step_by_elastic`: the elastic step's slacks
#: vanish once the penalty exceeds the plain step's multipliers (160 and 54 at the first MM
#: step on 2,000 Adult rows, logistic loss + churn + 80% rule, where 1e2 left a slack of 4e-4
#: and 1e3 none, in 57 interior-point iterations)
RESCUE_PENALTIES = (1e3, 1e5)
#: largest slack (in the rows' units) at which the elastic step's answer is the plain step's
RESCUE_SLACK = 1e-9


def step_by_elastic(form: StructuredForm, tol: float, deadline: float | None,
                    failed: StructuredSolution, counts: dict[str, int]) -> StructuredSolution:
    """The plain step ``form`` solved by way of its elastic step when the interior point could
    not certify it directly (``failed``).

    A step whose feasible set is thin (a start of phase one just inside the surrogate rows:
    every row is active or nearly so) stalled the interior point from its cold start, while
    the elastic step, whose slacks make every point feasible, converged. If the elastic step
    at an exact penalty P (:data:`RESCUE_PENALTIES`) ends with every slack at most
    :data:`RESCUE_SLACK`, its model is feasible for the plain step (up to that slack) and no
    plain-feasible point does better, since there the two objectives agree: it is the plain
    step's answer, with the elastic step's certificate (gap and residuals). When a slack
    stays positive at the largest P, no point meets the rows with multipliers below P: the
    answer has status ``infeasible`` (a repair's tightened step: the chain restarts phase one
    from there, :meth:`ratecons.generic._ChainRun.restart`). Otherwise (an elastic step not
    certified either) ``failed`` is returned.

    A step the interior point proved infeasible (a Farkas ray of its rows,
    :mod:`ratecons.solvers.structured_infeasible`) is not passed here: no point within the
    ray's radius meets its rows, so the elastic step keeps a slack at every penalty and its two
    solves would only reach the same status. The caller hands such a step to phase one at
    once, whose elastic steps minimize the violation from the same anchor (on diabetes,
    logistic loss with recall >= 0.85 and positive rate <= 0.5, the repair's tightened step:
    909 -> 860 interior-point iterations, two elastic solves fewer, the same model).
    """
    user = form.m if form.user_rows is None else form.user_rows
    for penalty in RESCUE_PENALTIES:
        answer = solve_structured(elastic_form(form, penalty), tol=tol, deadline=deadline)
        counts["interior_iterations"] = counts.get("interior_iterations", 0) + answer.iterations
        failed.after(answer)
        if answer.status != settings.OPTIMAL:
            return failed
        slack = np.maximum(form.row_values(answer.w, answer.b, answer.extra[:form.extra])[1:]
                           - form.bounds, 0.0)
        if slack.max(initial=0.0) <= RESCUE_SLACK:
            counts["rescued"] = counts.get("rescued", 0) + 1
            return replace(answer, objective=form.objective(answer.w, answer.b,
                                                            answer.extra[:form.extra]),
                           duals=answer.duals[:user], extra=answer.extra[:form.extra],
                           iterations=failed.iterations, solve_time=failed.solve_time,
                           max_violation=float(slack.max(initial=0.0)),
                           message=f"by way of the elastic step at penalty {penalty:g}")
    return replace(failed, status=settings.INFEASIBLE, message=(
        f"the elastic step at penalty {penalty:g} keeps a slack of {slack.max():.3g}: no point "
        f"meets the rows with multipliers below {penalty:g}"))
