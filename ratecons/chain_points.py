"""The chain's points in the user's terms: the scores of a step's model on every training set
(:class:`ScoreTable`, so that MM evaluates every part at every iterate without recomputing
psi(X) w) and what the chain measures there: the surrogate objective with the regularizer, the
surrogate value of every constraint row and what the deterministic model misses."""

from __future__ import annotations

from typing import Any

import numpy as np

from .expr.analysis import Analysis
from .reductions.kernelize import FeatureMap
from .reductions.to_cvxpy import ConvexStep

__all__ = ["ScoreTable", "missed_rows", "regularizer", "score_table", "step_scores",
           "surrogate_objective", "surrogate_rows"]


class ScoreTable:
    """A scorer that answers for the training feature matrices from stored scores (MM
    evaluates every part at every iterate without recomputing psi(X) w)."""

    def __init__(self, scores: dict[int, np.ndarray], fallback: Any) -> None:
        self.scores = scores
        self.fallback = fallback

    def decision_function(self, X: Any) -> np.ndarray:
        found = self.scores.get(id(X))
        return found if found is not None else self.fallback.decision_function(X)


def step_scores(psi: dict[int, Any], step: ConvexStep) -> dict[int, np.ndarray]:
    return {key: np.asarray(P @ step.w).ravel() - step.b for key, P in psi.items()}


def score_table(analysis: Analysis, fmap: FeatureMap, psi: dict[int, Any],
           scores: dict[int, np.ndarray], step: ConvexStep) -> ScoreTable:
    by_matrix = {id(d.X): scores[id(d)] for d in analysis.datasets}
    return ScoreTable(by_matrix, fmap.invert(step.w, step.b))


def regularizer(analysis: Analysis, w: np.ndarray) -> float:
    """(l2/2) ||w||^2 + l1 ||w||_1 of the score model."""
    model = analysis.model
    return 0.5 * model.l2 * float(w @ w) + getattr(model, "l1", 0.0) * float(np.abs(w).sum())


def surrogate_objective(analysis: Analysis, scorer: Any, w: np.ndarray) -> float:
    return analysis.objective.value(scorer, "surrogate") + regularizer(analysis, w)


def surrogate_rows(analysis: Analysis, scorer: Any) -> np.ndarray:
    """The surrogate (ramp) value of every constraint row."""
    return np.array([row.value(scorer, "surrogate") for row in analysis.constraints])


def missed_rows(analysis: Analysis, scorer: Any) -> np.ndarray:
    """max(0, exact row value - bound) for every constraint (deterministic predictions)."""
    return np.array([max(0.0, row.value(scorer, "exact") - row.bound)
                     for row in analysis.constraints])
