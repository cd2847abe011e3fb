"""Degenerate answers named: every solve's model against the best constant model.

A problem can have an answer that no model needs to be trained for: with
``DemographicParityDifference(0.0)`` on Adult the solve returns the all-positive model
(accuracy 0.233, where predicting everyone negative has 0.761); a loss under a huge l2, or a
TPR@K whose optimum is w = 0, returns a model that scores every example alike. Such an answer
may be correct for the problem as stated, but it should not be taken for a trained model.

:func:`check_degenerate` runs once at the end of every solve (``ratecons.dispatch.run_method``)
and compares the returned model with the best *constant* model that meets the same constraints:

- **score models** (rates, worst-case rates, mean and robust losses, ranking at the top, and
  any composition of them): the constant score s(x) = c for every example (w = 0, b = -c).
  Every row of the canonical form (:mod:`ratecons.expr.analysis`) is evaluated at c by
  :func:`comparison_value`: rates and worst-case rates exactly (deterministic predictions,
  eq. 1 of Goh et al.: they depend on the sign of c only), mean and robust losses exactly
  (the robust loss under its worst-case reweighting; convex in c), and TPR@K / TPR@tau by
  their concave surrogate 1 - (1/n_+) sum l(t - s_i) (a constant score ranks nothing: its
  surrogate is 1 - l(0) = 0 for the TopPushK family, whatever c; the exact TPR counts no
  positive tied with a threshold of the negatives, :func:`ratecons.thresholds.above_threshold`,
  and with ``among="all"`` every one). On each side of 0 (on the whole line
  when no row has a rate) the objective is a convex function of c plus a constant and the
  feasible c form an interval, so the best feasible constant is found by a bounded 1-D search
  (Brent) of the exact penalty (objective + :data:`PENALTY` x total violation) over
  |c| <= :data:`MAX_CONSTANT_SCORE`, or by the scores +-1 when no row depends on c beyond its
  sign. The regularizer is left out: a constant pays none, so the model is compared on what
  it is fitted for. The search evaluates each row at 20-40 constants per side: the parts that
  depend on the sign of c only (rates, worst-case rates, ranking surrogates) once per side,
  a mean loss by its closed form W+ l(c) + W- l(-c) and a robust loss by its worst case over
  one weight per class (a 1-D root; ``value_at_constant`` of each), any other part at each
  c. On the whole Adult split (34,189 rows; the old and this search alternating in one
  process, median of 5, load 3-7): hinge loss + 80% rule 0.87-3.16 s -> 0.17 s, hinge loss +
  FPR parity 0.35-0.65 -> 0.01-0.29 s, logistic loss + 80% rule 0.34-2.39 -> 0.02 s, robust
  KL loss + 80% rule 2.3-3.3 -> 0.08 s.
- **minimax risk classifiers**: the rule that predicts the most frequent training label for
  every example; the MRC's training error (argmax rule) and its minimax risk R* are compared
  with that rule's training error.

When the model is no better (within :data:`OBJECTIVE_TOL` for objectives made of rates, whose
values move in steps of 1/n, and :data:`RELATIVE_TOL` relative for losses and surrogates), the
result's ``certificate.details["degenerate"]`` says so -- the constant, both values, and the
constraints with no slack at the model, the ones that force it -- and a
:class:`~ratecons.errors.TrivialOptimumWarning` carries the same text with what to change. A
linear model whose training scores then spread by less than :data:`SCORE_NOISE` is returned as
that constant exactly (w = 0), so that no metric ranks rounding noise.

On Dask data the model's scores are summarized in one reduction (range and mean,
:meth:`ratecons.scans.Rows.score_summary`). Robust losses are evaluated on the workers; any
other problem is compared only when its linear model's scores spread by less than
:data:`SCORE_NOISE`, as the constant at their mean (a model that separates would need every
example scored on the client: ``details["degenerate_check"]`` says it was not compared).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from .caller import user_stacklevel
from .dask_robust import on_dask
from .dask_types import is_dask
from .errors import TrivialOptimumWarning
from .expr.analysis import Analysis, Row
from .result import LinearScorer
from .scans import Rows, ScoreSummary
from .settings import FEASIBILITY_TOL, LIMIT_STATUSES

__all__ = ["ConstantScore", "best_feasible_constant", "check_degenerate", "comparison_value",
           "MAX_CONSTANT_SCORE",
           "OBJECTIVE_TOL", "PENALTY", "RELATIVE_TOL", "SCORE_NOISE"]

#: how much better than the best feasible constant (absolute, in the objective's units: rates
#: move in steps of 1/n) a model of a rate objective must be not to be reported as degenerate
OBJECTIVE_TOL = 1e-9
#: the same, relative to max(1, |constant's value|), for objectives with losses or surrogates
#: (a model under a huge l2 is a constant up to rounding: w ~ 1/l2)
RELATIVE_TOL = 1e-6
#: the constant scores searched: 0 < |c| <= this (the logistic loss's best c is the log-odds of
#: the labels, |c| = 50 is a label share of 1 - 2e-22)
MAX_CONSTANT_SCORE = 50.0
#: a linear model no better than the constant whose training scores spread by less than this
#: (in score units; the ramp and the hinge have width 1) separates and ranks nothing but
#: rounding: the chain and the conic solvers returned |w| ~ 1e-9 to 1e-11 where w = 0 is the
#: optimum of a TPR@K, and every metric then ranked that noise (train TPR@5 0.249 against 0)
SCORE_NOISE = 1e-6
#: weight of the total constraint violation in the 1-D search (an exact penalty of a convex
#: problem once above the multiplier; margin losses have slopes of at most 1, squared 2|c|+2)
PENALTY = 1e6


class ConstantScore:
    """The model s(x) = ``score`` for every example (w = 0, b = -score)."""

    def __init__(self, score: float) -> None:
        self.score = float(score)
        self.name = "all-positive" if self.score > 0 else "all-negative"

    def decision_function(self, X: Any) -> np.ndarray:
        return np.full(X.shape[0], self.score)


def _curvature(part: Any) -> str:
    """A part's curvature (:mod:`ratecons.expr.analysis`): rate expressions have none."""
    return getattr(part, "curvature", "rate")


def _ranking(part: Any) -> bool:
    """TPR@K and TPR@tau, the concave terms."""
    return _curvature(part) == "concave"


def _level_dependent(part: Any) -> bool:
    """A part whose value at a constant score depends on more than its sign: losses."""
    return _curvature(part) == "convex"


def _part_value(coef: float, part: Any, scorer: Any) -> float:
    """A part's value as the check compares it: exact, except the ranking parts, which take
    their surrogate."""
    return part.surrogate_value(scorer) if _ranking(part) else part.evaluate(scorer, "exact", coef)


def comparison_value(row: Row, scorer: Any) -> float:
    """A canonical row's value as the check compares it (module docstring): exact, except the
    ranking parts, which take their surrogate."""
    return row.constant + sum(coef * _part_value(coef, part, scorer) for coef, part in row.parts)


class _RowsAtConstants:
    """Every row of an analysis at constant scores c, for the 1-D search.

    A part that is not a loss depends on the sign of c only (rates and worst-case rates:
    indicators of c > 0; ranking surrogates: invariant under a common shift of the scores),
    so its value is computed once per sign; a mean or robust loss takes its closed form
    (:meth:`~ratecons.expr.mean_loss.MeanLoss.value_at_constant`,
    :meth:`~ratecons.expr.robust_loss.RobustLoss.value_at_constant`), any other part is
    evaluated at c. Each search step then evaluates no scores: O(1) per mean loss, one count
    of the labels per robust loss."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self._by_sign: dict[bool, dict[int, float]] = {}

    def _sign_parts(self, c: float) -> dict[int, float]:
        positive = c > 0
        if positive not in self._by_sign:
            probe = ConstantScore(1.0 if positive else -1.0)
            self._by_sign[positive] = {
                id(row): row.constant + sum(coef * _part_value(coef, part, probe)
                                            for coef, part in row.parts
                                            if not _level_dependent(part))
                for row in self.analysis.rows}
        return self._by_sign[positive]

    def value(self, row: Row, c: float) -> float:
        total = self._sign_parts(c)[id(row)]
        for coef, part in row.parts:
            if _level_dependent(part):
                closed = getattr(part, "value_at_constant", None)
                total += coef * (closed(c) if closed is not None
                                 else _part_value(coef, part, ConstantScore(c)))
        return total

    def excess(self, c: float) -> np.ndarray:
        """max(0, row - bound) of every constraint at the constant score c."""
        return _excess(self.analysis, lambda row: self.value(row, c))


def _excess(analysis: Analysis, value: Callable[[Row], float]) -> np.ndarray:
    """max(0, value(row) - bound) of every constraint."""
    return np.array([max(0.0, value(row) - row.bound) for row in analysis.constraints])


def _best_constant(at: _RowsAtConstants, ends: tuple[float, float], near: float
                   ) -> tuple[float, ConstantScore] | None:
    """The best constant score in ``ends`` (one side of 0, or both when no part depends on the
    sign alone) that meets every constraint, or None. ``near`` (the model's mean score) is
    tried besides the search's answer: a model that is a constant up to rounding is then
    compared with itself, not with a search that stopped within its tolerance of the best
    (where a robust loss has a kink, that tolerance shows in the value)."""
    analysis = at.analysis
    side = float(np.sign(ends[1]))
    if not any(_level_dependent(p) for row in analysis.constraints for _, p in row.parts) \
            and at.excess(side).max(initial=0.0) > FEASIBILITY_TOL:
        return None  # the constraints depend on the sign of c only: none is met on this side
    if not any(_level_dependent(p) for row in analysis.rows for _, p in row.parts):
        # every row depends on the sign only: its value at +-1 is exact and checked above
        return at.value(analysis.objective, side), ConstantScore(side)

    def penalized(c: float) -> float:
        return at.value(analysis.objective, c) + PENALTY * float(at.excess(c).sum())

    low, high = sorted(ends)
    found = minimize_scalar(penalized, bounds=(low, high), method="bounded",
                            options={"xatol": 1e-5, "maxiter": 200})
    candidates = [float(found.x)] + ([near] if low < near < high else [])
    constant = ConstantScore(min(candidates, key=penalized))
    if _excess(analysis, lambda row: comparison_value(row, constant)).max(
            initial=0.0) > FEASIBILITY_TOL:
        return None
    return comparison_value(analysis.objective, constant), constant


def _hint(analysis: Analysis, binding: list[str], status: str | None = None) -> str:
    if status in LIMIT_STATUSES:
        return (f"the solve ended with status '{status}' (its time or iteration limit) before "
                "a certified answer, so the model may be little moved from its start: give it "
                "more time (time_limit=) or iterations (max_iterations=) before changing the "
                "problem")
    if binding:
        return ("possibly forced by the constraint(s) with no slack at the model"
                + (" (MM's fixed points are local)" if analysis.needs_mm else "") + ": "
                + "; ".join(f"'{name}'" for name in binding)
                + ". Loosen them (e.g. a fairness difference bound of 0.01-0.05 instead of 0, "
                "a ratio bound below 1)")
    ranking = any(_ranking(p) for _, p in analysis.objective.parts)
    where = ("no constraint is tight at the model, so" if analysis.constraints
             else "there are no constraints:")
    local = (" (or the majorization-minimization stopped at a local fixed point: compare "
             "another method, e.g. method='cvxpy' on a sample)" if analysis.needs_mm else "")
    return (f"{where} the objective and the regularization may make a constant optimal"
            f"{local}; try a smaller l2 or l1, standardized features"
            + (", a larger K (e.g. 1% of the negatives)" if ranking else "")
            + " or a kernel model")


def _on_workers(analysis: Analysis, scorer: Any) -> bool:
    """Whether every part evaluates with the examples' scores kept on the Dask workers: robust
    losses on a chi-square or KL ball (:func:`ratecons.dask_robust.on_dask`)."""
    return all(hasattr(part, "ball") and on_dask(part.ball, scorer)
               for row in analysis.rows for _, part in row.parts)


def _score_summary(scorer: Any, datasets: list[Any]) -> ScoreSummary | None:
    """The model's training scores summarized (range, mean) over the datasets' rows; on Dask
    data one reduction per dataset (:meth:`ratecons.scans.Rows.score_summary`), the scores
    never gathered, for a linear model only (None for another model there)."""
    parts = []
    for data in datasets:
        if is_dask(data.X):
            if type(scorer) is not LinearScorer:
                return None
            summary = Rows(data.X).score_summary(scorer.w, scorer.b)
        else:
            summary = ScoreSummary.of(scorer.decision_function(data.X))
        parts.append((summary, data.X.shape[0]))
    return ScoreSummary.pooled(parts)


def _noise_level(scores: ScoreSummary) -> bool:
    """Whether scores spread by less than :data:`SCORE_NOISE` (relative to their size when
    above 1): the model separates and ranks nothing but rounding."""
    return scores.spread <= SCORE_NOISE * max(1.0, scores.mean_abs)


def best_feasible_constant(analysis: Analysis, near: float = 0.0
                           ) -> tuple[float, ConstantScore] | None:
    """The best constant score that meets every constraint of ``analysis`` and its objective
    (canonical, as :func:`comparison_value` compares it), None when no constant is feasible;
    ``near`` (a model's mean score) is tried besides the search's answer (module docstring)."""
    signed = any(row.rate_parts for row in analysis.rows)
    if signed:  # rates: a step at c = 0
        sides = [(1e-9, MAX_CONSTANT_SCORE), (-1e-9, -MAX_CONSTANT_SCORE)]
    else:  # losses and surrogates only: convex in c on the whole line
        sides = [(-MAX_CONSTANT_SCORE, MAX_CONSTANT_SCORE)]
    at = _RowsAtConstants(analysis)
    feasible = [best for ends in sides
                if (best := _best_constant(at, ends, near)) is not None]
    return min(feasible, key=lambda pair: pair[0]) if feasible else None


def _score_model_record(analysis: Analysis, scorer: Any, near: float,
                        status: str | None = None) -> dict[str, Any] | None:
    """The record of a score model no better than the best feasible constant (None when it
    is better or no constant is feasible); ``near`` is the model's mean training score."""
    objective = analysis.objective
    model_value = comparison_value(objective, scorer)
    if not np.isfinite(model_value):
        return None
    signed = any(row.rate_parts for row in analysis.rows)
    found = best_feasible_constant(analysis, near)
    if found is None:
        return None
    best_value, best = found
    continuous = any(_curvature(p) != "rate" for _, p in objective.parts)
    tol = RELATIVE_TOL * max(1.0, abs(best_value)) if continuous else OBJECTIVE_TOL
    if model_value < best_value - tol:
        return None
    binding = [row.name for row in analysis.constraints
               if row.bound - comparison_value(row, scorer) <= FEASIBILITY_TOL]
    levels = any(_level_dependent(p) for row in analysis.rows for _, p in row.parts)
    what = (f"the constant score {best.score:.6g} (w = 0, {best.name})" if levels
            else f"the {best.name} classifier (w = 0)" if signed
            else "a constant score (w = 0)")
    # + 0.0: a maximized objective of 0 comes back as -0.0, which would read "-0"
    user_model = objective.to_user(model_value) + 0.0
    user_best = objective.to_user(best_value) + 0.0
    surrogate = any(_ranking(p) for _, p in objective.parts)
    # beaten, not only matched; a TPR@K surrogate is a lower bound of the model's exact TPR
    # (its exact objective may beat the constant's), so no verdict of WORSE rests on it
    beaten = bool(model_value > best_value + tol)
    worse = beaten and not surrogate
    message = (f"degenerate answer: the returned model's objective ({objective.name}"
               + (", by its surrogate: a constant score ranks nothing" if surrogate else "")
               + f") is {user_model:.6g}, " + ("WORSE than" if worse else "no better than")
               + f" {user_best:.6g} of {what}, which meets every constraint; "
               + ("the exact objective (result.report()) may still beat the constant's, "
                  "which the surrogate, a bound on the TPR, does not show; "
                  if surrogate and beaten else "")
               + (f"status '{status}' certifies where the method stopped (a local fixed point "
                  "of majorization-minimization), not the best model: that constant model is "
                  "the better answer; " if worse and status == "optimal" and analysis.needs_mm
                  else "")
               + f"{_hint(analysis, binding, status)}.")
    return {"constant": best.name, "constant_score": best.score,
            "model_objective": float(user_model), "constant_objective": float(user_best),
            "worse_than_constant": worse, "binding": binding, "message": message}


def _minimax_record(problem: Any, scorer: Any, risk: float, status: str | None,
                    method: str = "") -> dict[str, Any] | None:
    """The MRC (training error of the argmax rule, minimax risk R* = ``risk`` when ``status``
    is optimal, else the stopped model's worst-case risk, an upper bound on R*) against the
    most-frequent-label rule on the training data."""
    U = getattr(problem.objective, "U", None)
    mu = getattr(scorer, "mu", None)
    if U is None or mu is None or not np.isfinite(risk):
        return None
    model_error = U.training_error(mu)
    counts = np.bincount(U.y, minlength=U.n_classes)
    label = int(np.argmax(counts))
    constant_error = float(1.0 - counts[label] / U.y.size)
    majority = U.classes[label].item() if hasattr(U.classes[label], "item") else U.classes[label]
    if model_error < constant_error - OBJECTIVE_TOL:
        return None
    head = (f"degenerate answer: the minimax risk classifier's training error "
            f"{model_error:.6g} is no better than {constant_error:.6g}, the error of predicting "
            f"the most frequent label {majority!r} for every example; ")
    if status is not None and status != "optimal":  # the budget, not the model, is the cause
        exact = "" if method in ("lp", "ccg") else ", or use method='lp' or 'ccg'"
        tail = (f"the run stopped with status {status} before the optimum (its worst-case risk "
                f"{risk:.6g} bounds R* from above, it is not R*): raise max_iterations / "
                f"time_limit{exact}, before changing lambda0.")
    else:
        verdict = ("no better either" if risk >= constant_error
                   else "below it, but only as a bound over the moment set U")
        tail = (f"its minimax risk R* = {risk:.6g} is {verdict}; try a smaller lambda0 "
                "(tighter moment bounds) or richer features (e.g. a random Fourier feature "
                "map).")
    return {"constant": f"predict {majority!r}", "model_objective": model_error,
            "constant_objective": constant_error, "minimax_risk": risk, "binding": [],
            "message": head + tail}


def check_degenerate(problem: Any, result: Any) -> dict[str, Any] | None:
    """Compare ``result``'s model with the best feasible constant model (module docstring).

    Returns the record written to ``result.certificate.details["degenerate"]`` (and warned
    about), or None when the model does better than every feasible constant, when no constant
    is feasible, or when there is no model.
    """
    scorer = getattr(result, "scorer", None)
    if scorer is None:
        return None
    analysis = getattr(problem, "analysis", None)
    status = getattr(result, "status", None)
    certificate = getattr(result, "certificate", None)
    if certificate is not None and certificate.details.get("stopped_by") == "stalled":
        status = None  # uncertified, but no limit stopped it: a larger budget changes nothing
    if analysis is None:
        record = _minimax_record(problem, scorer, float(result.objective), status,
                                 getattr(result, "method", ""))
    else:
        record = _score_model_check(analysis, result, scorer, status)
    if record is None:
        return None
    result.certificate.details["degenerate"] = record
    warnings.warn(record["message"], TrivialOptimumWarning, stacklevel=user_stacklevel())
    return record


def _score_model_check(analysis: Analysis, result: Any, scorer: Any, status: str | None
                       ) -> dict[str, Any] | None:
    """:func:`check_degenerate` for a score model, with the snap to the constant. On Dask
    data whose rows are not all evaluated on the workers (:func:`_on_workers`) the model is
    compared only when its scores spread by less than :data:`SCORE_NOISE` (one reduction,
    :meth:`ratecons.scans.Rows.score_summary`): it is then the constant at its mean score up
    to rounding, and evaluated as that constant; a model that separates is not compared (the
    comparison would score every example on the client)."""
    scores = _score_summary(scorer, analysis.datasets)
    evaluated = scorer
    if any(is_dask(d.X) for d in analysis.datasets) and not _on_workers(analysis, scorer):
        if scores is None or not _noise_level(scores):
            result.certificate.details["degenerate_check"] = (
                "not run on Dask data: comparing a model that separates with the best "
                "constant model scores every example on the client; solve an in-memory "
                "sample to check it")
            return None
        evaluated = ConstantScore(scores.mean)
    near = scores.mean if scores is not None else 0.0
    record = _score_model_record(analysis, evaluated, near, status)
    if record is not None and evaluated is not scorer:
        record["message"] += (f" (On Dask data the model was compared as the constant score "
                              f"{scores.mean:.6g}, its mean: its training scores spread by "
                              f"only {scores.spread:.2g}.)")
    if record is not None and scores is not None:
        _snap_to_constant(result, analysis, scorer, record, scores)
    return record


def _snap_to_constant(result: Any, analysis: Analysis, scorer: Any, record: dict[str, Any],
                      scores: ScoreSummary) -> None:
    """A linear model no better than the constant whose training scores spread by less than
    :data:`SCORE_NOISE` becomes that constant exactly (w = 0; a TPR@K objective alone: the
    score 0, which ranks no positive above a negative and predicts none), its objective
    re-evaluated; the record and its message say so."""
    if type(scorer) is not LinearScorer or not scores.spread > 0.0 or not _noise_level(scores):
        return  # a constant already, or a model that separates
    ranking_only = not analysis.constraints and any(
        _ranking(p) for _, p in analysis.objective.parts)
    constant = 0.0 if ranking_only else float(record["constant_score"])
    snapped = LinearScorer(np.zeros_like(scorer.w), -constant, scorer.ramp_width)
    result.scorer = snapped
    if "threshold" in result.extras:  # the ranking pattern's t: the model predicts s > t
        result.extras["threshold"] = snapped.b
    record["objective_before_snap"] = float(result.objective)  # the method's own, as certified
    result.objective = analysis.objective.to_user(  # scores nothing (Dask data stay put)
        comparison_value(analysis.objective, ConstantScore(constant))) + 0.0
    record["snapped_spread"] = scores.spread
    record["message"] += (f" The returned model's training scores spread by only "
                          f"{scores.spread:.2g} (rounding, below {SCORE_NOISE:g}): it is "
                          f"returned as the constant score {constant:.6g} (w = 0), so that no "
                          "metric ranks rounding noise.")
