"""Degenerate answers named: every solve's model against the best constant classifier.

A rate problem can have an answer that no model needs to be trained for: with
``DemographicParityDifference(0.0)`` on Adult the solve returns the all-positive model
(accuracy 0.233, where predicting everyone negative has 0.761). Such an answer is correct for
the problem as stated -- exact parity leaves (nearly) only constant classifiers -- but it should
not be taken for a trained model.

:func:`check_degenerate` runs once at the end of every solve (``ratecons.dispatch.run_method``).
For a problem whose objective is made of rates (error rate, recall, worst-case rates, ...; the
only objectives for which "predict everyone positive / negative" is a classifier of the same
kind), it evaluates the exact objective and constraints (deterministic predictions, eq. 1 of
Goh et al.) of the two constant classifiers. When one of them meets every constraint (within
:data:`~ratecons.settings.FEASIBILITY_TOL`) and the returned model is no better on the
objective (within :data:`OBJECTIVE_TOL`), the result's ``certificate.details["degenerate"]``
says so -- which constant, both objective values, and the constraints with no slack at the
model, the ones that force it -- and a :class:`~ratecons.errors.TrivialOptimumWarning` carries
the same text with what to change (unless the solve's own w = 0 test has warned already:
``details["trivial_optimum"]``, then the record alone).

Objectives of other kinds (ranking at the top, losses, minimax risk) have their own test for a
constant model, w = 0, where they are solved (the ranking pattern and the generic chain).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .caller import user_stacklevel
from .errors import TrivialOptimumWarning
from .settings import FEASIBILITY_TOL

__all__ = ["ConstantClassifier", "check_degenerate", "OBJECTIVE_TOL"]

#: how much better than the best feasible constant classifier (absolute, in the objective's
#: units: rates move in steps of 1/n) a model must be not to be reported as degenerate
OBJECTIVE_TOL = 1e-9


class ConstantClassifier:
    """Predicts every example positive (``positive=True``) or negative: the score +1 or -1."""

    def __init__(self, positive: bool) -> None:
        self.positive = positive
        self.name = "all-positive" if positive else "all-negative"

    def decision_function(self, X: Any) -> np.ndarray:
        return np.full(X.shape[0], 1.0 if self.positive else -1.0)


def _is_rate_objective(analysis: Any) -> bool:
    objective = analysis.objective
    return bool(objective.parts) and len(objective.rate_parts) == len(objective.parts)


def check_degenerate(problem: Any, result: Any) -> dict[str, Any] | None:
    """Compare ``result``'s model with the best feasible constant classifier (module docstring).

    Returns the record written to ``result.certificate.details["degenerate"]`` (and warned
    about), or None when the model does better than every feasible constant classifier, when
    no constant classifier is feasible, or when the check does not apply (no model, or an
    objective that is not made of rates).
    """
    analysis = getattr(problem, "analysis", None)
    scorer = getattr(result, "scorer", None)
    if analysis is None or scorer is None or not _is_rate_objective(analysis):
        return None
    objective, constraints = analysis.objective, analysis.constraints
    model_value = objective.value(scorer, "exact")
    if not np.isfinite(model_value):
        return None
    feasible: list[tuple[float, ConstantClassifier]] = []
    for constant in (ConstantClassifier(True), ConstantClassifier(False)):
        if all(row.value(constant, "exact") <= row.bound + FEASIBILITY_TOL
               for row in constraints):
            feasible.append((objective.value(constant, "exact"), constant))
    if not feasible:
        return None
    best_value, best = min(feasible, key=lambda pair: pair[0])
    if model_value < best_value - OBJECTIVE_TOL:
        return None
    binding = [row.name for row in constraints
               if row.bound - row.value(scorer, "exact") <= FEASIBILITY_TOL]
    user_model, user_best = objective.to_user(model_value), objective.to_user(best_value)
    if binding:
        forced = ("forced by the constraint(s) with no slack at the model: "
                  + "; ".join(f"'{name}'" for name in binding)
                  + ". Loosen them (e.g. a fairness difference bound of 0.01-0.05 instead of "
                  "0, a ratio bound below 1)")
    elif constraints:
        forced = ("no constraint is tight at the model, so the objective and the "
                  "regularization make a constant optimal: try a smaller l2 or l1, "
                  "standardized features or a kernel model")
    else:
        forced = ("there are no constraints: the objective and the regularization make a "
                  "constant optimal; try a smaller l2 or l1, standardized features or a "
                  "kernel model")
    message = (f"degenerate answer: the returned model's objective ({objective.name}) is "
               f"{user_model:.6g}, no better than the {best.name} classifier's {user_best:.6g}, "
               f"which meets every constraint; {forced}.")
    record = {"constant": best.name, "model_objective": float(user_model),
              "constant_objective": float(user_best), "binding": binding, "message": message}
    details = result.certificate.details
    details["degenerate"] = record
    if not details.get("trivial_optimum"):  # the chain's w = 0 test has warned already
        warnings.warn(message, TrivialOptimumWarning, stacklevel=user_stacklevel())
    return record
