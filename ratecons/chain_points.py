"""The chain's points in the user's terms: the scores of a step's model on every training set
(:class:`ScoreTable`, so that MM evaluates every part at every iterate without recomputing
psi(X) w) and what the chain measures there: the surrogate objective with the regularizer, the
surrogate value of every constraint row and what the deterministic model misses.

On Dask data (issue 33) a point's scores stay on the workers, persisted with the features'
partitions (:func:`step_scores`), and its rows are checked there: the table's
:class:`~ratecons.dask_metrics.WorkerEvaluation` returns a few numbers per partition for each
row, and the columns those checks need (labels, example weights, the rows' coefficients) are
sent once per run (the run holds them: ``kept`` of :func:`score_table`), not at every iterate.
The scores reach the client only where the next step is lowered at the point (its per-piece
arrays are the client's: :func:`on_client`) and in the threshold search of the repair
(:attr:`ScoreTable.scores`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dask_types import is_dask
from .expr.analysis import Analysis, Row
from .reductions.kernelize import FeatureMap
from .reductions.to_cvxpy import ConvexStep
from .scans import count_pass

__all__ = ["ScoreTable", "missed_rows", "on_client", "regularizer", "score_table",
           "step_scores", "surrogate_objective", "surrogate_rows"]


class ScoreTable:
    """A scorer that answers for the training feature matrices from stored scores (MM
    evaluates every part at every iterate without recomputing psi(X) w).

    ``stored`` holds each matrix's scores, NumPy or (Dask data) a Dask vector on the workers;
    ``evaluation``, when some are on the workers, checks the rows there (module docstring).
    """

    def __init__(self, stored: dict[int, Any], fallback: Any, evaluation: Any = None) -> None:
        self.stored = stored
        self.fallback = fallback
        self.evaluation = evaluation
        self._gathered: dict[int, np.ndarray] | None = None

    @property
    def scores(self) -> dict[int, np.ndarray]:
        """The stored scores as NumPy vectors (those on the workers gathered, once)."""
        if self._gathered is None:
            self._gathered = on_client(self.stored)
        return self._gathered

    def decision_function(self, X: Any) -> np.ndarray:
        found = self.scores.get(id(X))
        return found if found is not None else self.fallback.decision_function(X)


def on_client(scores: dict[int, Any]) -> dict[int, np.ndarray]:
    """Per-example scores as NumPy vectors: those on the workers gathered (one pass over them
    each), the others as they are."""
    from .numerics.inner_max_dask import computed

    return {key: computed(z) if is_dask(z) else z for key, z in scores.items()}


def step_scores(psi: dict[int, Any], step: ConvexStep) -> dict[int, Any]:
    """psi w - b on every training set: NumPy in memory, persisted on the workers (one pass
    over the features) for Dask features."""
    out = {}
    for key, P in psi.items():
        if is_dask(P):
            count_pass()
            out[key] = (P @ np.asarray(step.w, dtype=np.float64) - step.b).persist()
        else:
            out[key] = np.asarray(P @ step.w).ravel() - step.b
    return out


def score_table(analysis: Analysis, fmap: FeatureMap, scores: dict[int, Any], step: ConvexStep,
                kept: dict[int, dict[Any, Any]] | None = None) -> ScoreTable:
    """The table of a point's ``scores``; ``kept``: the run's worker columns by dataset (held
    by the run, so that its every point sends them once; None: sent for this point alone)."""
    by_matrix = {id(d.X): scores[id(d)] for d in analysis.datasets}
    scorer = fmap.invert(step.w, step.b)
    lazy = [d for d in analysis.datasets if is_dask(scores[id(d)])]
    if not lazy:
        return ScoreTable(by_matrix, scorer)
    from .dask_metrics import WorkerEvaluation, WorkerScores

    return ScoreTable(by_matrix, scorer, WorkerEvaluation(scorer, *(WorkerScores(
        scorer, d, scores[id(d)], None if kept is None else kept.setdefault(id(d), {}))
        for d in lazy)))


def _row_value(row: Row, scorer: Any, kind: str) -> float:
    """``row``'s value at a point: on the workers for a table of Dask scores."""
    evaluation = getattr(scorer, "evaluation", None)
    return row.value(scorer, kind) if evaluation is None else evaluation.row_value(row, kind)


def regularizer(analysis: Analysis, w: np.ndarray) -> float:
    """(l2/2) ||w||^2 + l1 ||w||_1 of the score model."""
    model = analysis.model
    return 0.5 * model.l2 * float(w @ w) + getattr(model, "l1", 0.0) * float(np.abs(w).sum())


def surrogate_objective(analysis: Analysis, scorer: Any, w: np.ndarray) -> float:
    return _row_value(analysis.objective, scorer, "surrogate") + regularizer(analysis, w)


def surrogate_rows(analysis: Analysis, scorer: Any) -> np.ndarray:
    """The surrogate (ramp) value of every constraint row."""
    return np.array([_row_value(row, scorer, "surrogate") for row in analysis.constraints])


def missed_rows(analysis: Analysis, scorer: Any) -> np.ndarray:
    """max(0, exact row value - bound) for every constraint (deterministic predictions)."""
    return np.array([max(0.0, _row_value(row, scorer, "exact") - row.bound)
                     for row in analysis.constraints])
