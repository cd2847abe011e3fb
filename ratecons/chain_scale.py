"""The chain at its loss's scale: rounds of MM at a ramp width t, each followed by the loss's
best scale for the fixed point (:mod:`ratecons.reductions.score_scale`, which states the
problem and when it applies).

:func:`chain_at_loss_scale` wraps the structured, CVXPY and matrix (HiGHS) chains (through
:func:`ratecons.sample_start.chain_from_sample`, so a row sample starts the first round only):

1. the chain at width t = 1, as the paper states the problem: a fixed point g;
2. s* = argmin over s > 0 of the exact objective at s g (:func:`best_scale`); while that
   lowers the objective by more than ``settings.SCALE_MIN_GAIN`` (relative) and fewer than
   ``settings.SCALE_ROUNDS`` rounds were solved again: t <- t s*, and the chain on the problem
   over g at width t (:func:`~ratecons.reductions.score_scale.scaled`), started from g (it
   meets the same rows; the round's first event in the history has the stage ``"scale"``), to
   its fixed point g'. A round that ends without a model, with a
   weaker status than the last kept round (``iteration_limit`` after ``optimal``), or with the
   same status but not below its objective (a repair can raise it above its start) is not
   kept, nor one of the same status that misses a row by more (a lower objective bought with
   a larger violation: five rounds under a spent budget did so, each further off the 80%
   rule); the last kept round is the answer. On a row sample the rounds are compared on
   status and objective alone: the sample's deterministic model is not repaired and its rates
   are estimates (:mod:`ratecons.sample_start`), and the run on all rows checks and repairs
   every row. On the whole Adult split (logistic loss + churn + 80% rule) the sample's second
   round (width 0.246, objective 0.370) was dropped for missing the rule by 1.6e-3 where the
   first (width 1) missed it by 2e-5; the run on all rows then began at width 1 and took 72
   MM steps there before its own round at 0.231: 178 s, 0.37294. From the sample's width:
   88 s, 0.37203. No round starts once the solve's
   ``time_limit`` is spent. A round with a stronger status is kept whatever
   its objective: a certified model that meets every row is worth more than a lower objective
   whose deterministic model misses one. A first round that ended ``iteration_limit`` because
   its deterministic model missed a row goes on the same way: on diabetes (logistic loss,
   recall >= 0.85, positive rate <= 0.5) the second round ends ``optimal`` at 0.617 where the
   first ended ``iteration_limit`` at 2.442, and a third at 0.566.
3. the answer is t g, with ramp width t (:meth:`ratecons.result.LinearScorer.scaled`): the
   certificate's objective and bounds, the rows' values and the model are in the user's
   units; ``certificate.details["score_scale"]`` lists the rounds (width, objective, counts,
   whether the best scale lay at the end of the search interval, 1e-4 or 1e4 times the last)
   and the objective of the first fixed point (at the paper's width, or the sample's), and
   the run's counts (``details["iterations"]``, ``"mm_iterations"``, ``"repair_rounds"``,
   ...: :data:`COUNTS`) add up every kept round; ``max_iterations`` caps each round.

The status is the last kept round's: ``optimal`` is a certified fixed point of Alg 1 at the
returned width, as at width 1 without the rounds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from . import limits, settings
from .chain_points import ScoreTable, surrogate_objective
from .constant_start import from_constant_if_better
from .expr.analysis import Analysis
from .reductions.score_scale import applies, scaled
from .sample_start import Chain, SampleStart, chain_from_sample
from .solution import Solution

__all__ = ["best_scale", "chain_at_loss_scale", "scale_note"]

#: the search interval of :func:`best_scale`: log s in [-SEARCH_LOG, SEARCH_LOG]
SEARCH_LOG = math.log(1e4)
#: the chain's counts in ``certificate.details`` that the answer adds up over the kept rounds
#: (its history holds their steps too: a repair in the first round raises the MM objective
#: there, whichever round comes last)
COUNTS = ("iterations", "mm_iterations", "repair_rounds", "extrapolated_steps",
          "phase1_restarts", "unreached_repairs")


def best_scale(analysis: Analysis, scorer: Any, w: np.ndarray) -> tuple[float, float, float]:
    """The s > 0 that minimizes the exact objective of ``analysis`` at the scores s g of
    ``scorer`` (g; ``w`` its feature-space weights, for the regularizer): ``(s, objective at
    s, objective at 1)``. The losses and the regularizer are convex in s: bounded Brent on
    log s (:data:`SEARCH_LOG`, ``settings.SCALE_SEARCH_TOL``), each candidate O(n) from the
    scores computed once (on Dask data persisted on the workers, a pass over them each)."""
    if any(d.in_dask for d in analysis.datasets):  # the scores persisted on the workers
        from .dask_metrics import WorkerEvaluation

        table = ScoreTable({}, scorer, WorkerEvaluation(scorer))
    else:
        table = ScoreTable({id(d.X): np.asarray(scorer.decision_function(d.X),
                                                dtype=np.float64)
                            for d in analysis.datasets}, scorer)

    def objective(log_s: float) -> float:
        return surrogate_objective(scaled(analysis, math.exp(log_s)), table, w)

    at_one = objective(0.0)
    found = minimize_scalar(objective, bounds=(-SEARCH_LOG, SEARCH_LOG), method="bounded",
                            options={"xatol": settings.SCALE_SEARCH_TOL})
    if not found.fun < at_one:
        return 1.0, at_one, at_one
    return math.exp(found.x), float(found.fun), at_one


def chain_at_loss_scale(form: Analysis, sample_start: Any, chain: Chain, only_step: Any
                        ) -> tuple[Solution, Any, Any]:
    """``chain`` on ``form`` in rounds at the loss's scale (module docstring); ``only_step``
    (a :class:`ratecons.generic.LastStep`) is solved at its own width, alone. With a start
    from a row sample, the sample's run makes the rounds first and the run on all rows starts
    at the sample's width, from its model."""
    if only_step is not None:
        width = only_step.scale
        solution, scorer, last = chain_from_sample(scaled(form, width), sample_start, chain,
                                                   True)
        return _at_width(solution, scorer, last, width)
    if applies(form) is not None:
        return from_constant_if_better(
            form, chain, lambda: chain_from_sample(form, sample_start, chain, False))
    on_sample: dict[str, Any] = {"width": 1.0, "rounds": []}

    def rounds_first(analysis: Analysis, start: SampleStart | None, sampled: bool
                     ) -> tuple[Solution, Any, Any]:
        if not sampled:  # all rows, at the sample's width
            return chain(scaled(analysis, on_sample["width"]), start, False)
        if on_sample["rounds"]:  # the sample tightened (its model missed a row on all rows):
            # at the width its first solve found, which the run on all rows is at
            return chain(scaled(analysis, on_sample["width"]), start, True)
        solution, scorer, last, width, rounds = _rounds(
            analysis, chain, True, 1.0, chain(analysis, start, True))
        on_sample.update(width=width, rounds=rounds)
        return solution, scorer, last

    first = chain_from_sample(form, sample_start, rounds_first, False)
    solution, scorer, last, width, rounds = _rounds(form, chain, False, on_sample["width"],
                                                    first)
    if scorer is None:
        return solution, scorer, last
    details = solution.certificate.details
    details["score_scale"] = {"ramp_width": width, "rounds": rounds,
                              "objective_at_first_width": rounds[0]["objective"]}
    if on_sample["rounds"]:
        details["score_scale"]["sample_rounds"] = on_sample["rounds"]
    for count in COUNTS:
        details[count] = sum(r[count] for r in rounds if r["kept"])
    return _at_width(solution, scorer, last, width)


def _rounds(form: Analysis, chain: Chain, sampled: bool, width: float,
            first: tuple[Solution, Any, Any]
            ) -> tuple[Solution, Any, Any, float, list[dict[str, Any]]]:
    """Steps 2 of the module docstring from ``first``, the chain's answer at ``width``: the
    last kept answer (over g), its width and the rounds' records."""
    solution, scorer, last = first
    rounds = [{**_round(width, solution), "kept": True}]
    while (scorer is not None and len(rounds) <= settings.SCALE_ROUNDS
           and not limits.active().expired()):  # no round starts past the budget
        s, at_s, at_one = best_scale(scaled(form, width), scorer, solution.primal["w"])
        if at_one - at_s <= settings.SCALE_MIN_GAIN * max(1.0, abs(at_one)):
            break
        start = SampleStart.of_model(solution.primal["w"], float(solution.primal["b"]),
                                     form.n_examples, solution.status, at_s,
                                     len(form.constraints), "scale")
        again, again_scorer, again_last = chain(scaled(form, width * s), start, sampled)
        better = _rank(again.status) - _rank(solution.status)
        # on a row sample the violation is not compared (module docstring)
        no_further_off = sampled or _violation(again) <= _violation(solution)
        kept = (again_scorer is not None and again.status in settings.SOLVED_STATUSES
                and (better > 0 or (better == 0 and again.objective < at_one
                                    and no_further_off)))
        rounds.append({**_round(width * s, again), "kept": kept, "started_at": at_s,
                       # the loss is still falling at the search's end (s -> 0: towards the
                       # constant model, whose loss the rows do not see)
                       "scale_at_search_end": abs(math.log(s)) >= SEARCH_LOG - 1e-3})
        if not kept:
            break
        width *= s
        if "sample_start" in solution.certificate.details:  # the first round's start
            again.certificate.details["sample_start"] = (
                solution.certificate.details["sample_start"])
        again.history = solution.history + again.history
        solution, scorer, last = again, again_scorer, again_last
    return solution, scorer, last, width, rounds


def scale_note(analysis: Analysis | None) -> str | None:
    """The plan's line for the rounds at the loss's scale (None where they do not apply)."""
    if analysis is None or applies(analysis) is not None:
        return None
    return ("the ramp's width is a variable (a loss objective, rate constraints): MM to a "
            "fixed point, then the loss's best scale for it, then MM again at that width, "
            f"while that lowers the objective by more than {settings.SCALE_MIN_GAIN:g} "
            f"(relative; at most {settings.SCALE_ROUNDS} more rounds); the model keeps its "
            "width (result.ramp_width)")


def _rank(status: str) -> int:
    """``optimal`` above the other statuses with a model (a first round's ``iteration_limit``
    often means its deterministic model misses a row): a round that ends with a stronger
    status than the last kept one is kept whatever its objective, one with a weaker status
    is not."""
    return int(status == settings.OPTIMAL)


def _violation(solution: Solution) -> float:
    """The largest constraint violation of an answer, up to the feasibility tolerance (two
    answers that meet every row tie): a round on all rows of the same status that misses a
    row by more is not kept for a lower objective (on a row sample it is: module docstring)."""
    return max(solution.certificate.max_violation or 0.0, settings.FEASIBILITY_TOL)


def _round(width: float, solution: Solution) -> dict[str, Any]:
    details = solution.certificate.details
    return {"ramp_width": width, "status": solution.status, "objective": solution.objective,
            **{count: details.get(count, 0) for count in COUNTS}}


def _at_width(solution: Solution, scorer: Any, last: Any, width: float
              ) -> tuple[Solution, Any, Any]:
    """The answer over g returned as f = t g with ramp width t (module docstring)."""
    if scorer is None or width == 1.0:
        return solution, scorer, last
    solution.primal = {"w": width * solution.primal["w"],
                       "b": np.float64(width * solution.primal["b"])}
    return solution, scorer.scaled(width), replace(last, scale=width)
