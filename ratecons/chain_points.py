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
(:attr:`ScoreTable.scores`, :func:`threshold_search`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .canonical.rate_program import hinge_ties, program_of_rows
from .dask_types import is_dask
from .expr.analysis import Analysis, Row
from .reductions.kernelize import FeatureMap
from .reductions.to_cvxpy import ConvexStep
from .scans import count_pass
from .settings import FEASIBILITY_TOL

__all__ = ["ScoreTable", "bound_sides", "missed_rows", "on_client", "regularizer", "score_table",
           "step_scores", "surrogate_objective", "surrogate_rows", "tied_examples",
           "loosened_bounds", "threshold_search", "LOOSENED_TOL", "THRESHOLD_NEAREST",
           "THRESHOLD_SPREAD", "contradicted_bound"]


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
    if not any(is_dask(z) for z in scores.values()):
        return dict(scores)  # (not importing Dask, which costs 0.2-0.4 s once)
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


#: which examples have a u+ and which a u- bound of eq. (4), by feature matrix (its id)
Sides = dict[int, tuple[np.ndarray, np.ndarray]]


def bound_sides(analysis: Analysis) -> Sides:
    """Which training examples have a u+ bound of eq. (4) in some row and which a u- bound,
    keyed by the id of their dataset's feature matrix (as :class:`ScoreTable`): those of the
    rates (:meth:`~ratecons.canonical.rate_program.RateProgram.bound_sides`) and of the
    worst-case rates (u+ where the indicator's coefficient, signed by the adversary, is
    positive; u- where it is negative)."""
    sides = {id(d.X): (np.zeros(d.n, dtype=bool), np.zeros(d.n, dtype=bool))
             for d in analysis.datasets}
    rows = analysis.rate_rows()
    if any(terms for terms, _, _ in rows):
        sources: list[int] = []  # the keys of the program's sources

        def features(data: Any) -> Any:
            sources.append(id(data.X))
            return data.X

        program = program_of_rows(rows, features, [row.name for row in analysis.rows])
        for key, (upper, lower) in zip(sources, program.bound_sides(), strict=True):
            sides[key][0][:] |= upper
            sides[key][1][:] |= lower
    for row in analysis.rows:
        for coef, part in row.parts:
            reweighted = getattr(part, "reweighted_indicators", None)
            if reweighted is not None:
                support, coefficients = reweighted
                h = np.sign(coef) * coefficients
                upper, lower = sides[id(support.data.X)]
                upper[support.index[h > 0]] = True
                lower[support.index[h < 0]] = True
    return sides


def tied_examples(sides: Sides, table: ScoreTable) -> int | None:
    """How many training examples are at a tie of the bounds of eq. (4) at the point
    ``table`` (an anchor): :func:`~ratecons.canonical.rate_program.hinge_ties` over the
    bounds ``sides`` (:func:`bound_sides`); an example of several rows counts once. None when
    the scores are on Dask workers (not counted: gathering them would cost a pass over the
    data at every step).

    At an anchor where an example's score is at the switch point of one of its bounds of eq.
    (4) (z' = 1/2 for u+, -1/2 for u-), both bounds are tight and Alg 1 may take either; the
    step solver's rounding decides (``hinge_masks``). An example with a u+ term in one row and
    a u- term in another (churn against the baseline beside a group's positive rate, an
    error-rate objective beside the 80% rule) is pinned there by the kink of its other hinge,
    so such ties recur at most anchors, and one tie taken the other way moved the next step's
    w by 0.1 (2,000 Adult rows, logistic loss + churn + 80% rule): two step solvers then
    follow different MM paths to different local fixed points (docs/composition_log.md,
    "Where the two chains part"). With no tie on the path, the bounds chosen along it do not
    depend on the step solvers' rounding at a switch point.
    """
    if any(is_dask(z) for z in table.stored.values()):
        return None
    return int(sum(int(np.sum(hinge_ties(np.asarray(z), *sides[key])))
                   for key, z in table.scores.items()))


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


def contradicted_bound(lower: float | None, value: float, tol: float) -> str:
    """Why a convex step's certified lower bound ``lower`` on the problem's optimum is no
    bound: it lies above ``value``, the problem's own objective at the step's model, by more
    than ``tol`` relative (the solver's residuals passed its tests on badly scaled data; raw
    Pima features and a chi-square ball of rho = 1e-6: 0.50105 above 0.49828, where another
    model reaches 0.49824). An empty string when it bounds."""
    if lower is None or lower - value <= tol * max(1.0, abs(value)):
        return ""
    return (f"the step solver's lower bound {lower:.8g} is above the objective {value:.8g} of "
            "its own model, so its certificate proves nothing (status optimal_inaccurate); "
            "standardize the features or compare method='cvxpy'")


def missed_rows(analysis: Analysis, scorer: Any) -> np.ndarray:
    """max(0, exact row value - bound) for every constraint (deterministic predictions)."""
    return np.array([max(0.0, _row_value(row, scorer, "exact") - row.bound)
                     for row in analysis.constraints])


def loosened_bounds(analysis: Analysis, step_bounds: np.ndarray,
                    table: ScoreTable) -> list[dict[str, Any]]:
    """The constraints whose surrogate bound in the last step (``step_bounds``) is looser than
    the user's: after an unreached repair MM continues under the bounds the moved model meets
    (:mod:`ratecons.generic`), so ``optimal`` certifies the fixed point of that loosened surrogate
    problem. One dict per such constraint, in the user's sense: ``constraint`` (its name),
    ``sense``, ``user_bound``, ``certified_bound`` (the surrogate bound the fixed point is
    certified for), ``surrogate`` and ``exact`` (the ramp and the deterministic value at the
    model, on the training data) and ``met`` (whether ``exact`` meets the user's bound)."""
    out = []
    for row, used in zip(analysis.constraints, step_bounds):
        if used - row.bound <= LOOSENED_TOL * max(1.0, abs(row.bound)):
            continue
        exact = row.value(table, "exact")
        out.append({"constraint": row.name, "sense": "<=" if row.sign > 0 else ">=",
                    "user_bound": float(row.to_user(row.bound)),
                    "certified_bound": float(row.to_user(used)),
                    "surrogate": float(row.to_user(row.value(table, "surrogate"))),
                    "exact": float(row.to_user(exact)),
                    "met": bool(exact - row.bound <= FEASIBILITY_TOL)})
    return out


#: a step bound above the user's by more than this (relative) is a loosened bound
#: (:func:`loosened_bounds`); below it, rounding of the surrogate rows it was raised to
LOOSENED_TOL = 1e-12


#: intercepts the threshold search tries next to the solution's, on each side
THRESHOLD_NEAREST = 64
#: intercepts it tries spread evenly over the ranks of the distinct training scores
THRESHOLD_SPREAD = 129


def threshold_search(analysis: Analysis, table: ScoreTable, fmap: FeatureMap,
                     step: ConvexStep, best_effort: bool = False) -> float | None:
    """The smallest move of the intercept (subtracted from every score) after which the
    deterministic model meets every constraint, None when none does: the last resort of the
    chain's repair (:mod:`ratecons.generic`). Every row is a step function of the intercept,
    so the candidates are the intercepts between neighbouring distinct training scores: the
    :data:`THRESHOLD_NEAREST` nearest the solution's on each side and
    :data:`THRESHOLD_SPREAD` spread over the ranks, tried nearest first. With
    ``best_effort``, when no candidate meets every row, the one whose largest miss is the
    least (the nearest of equals), if that miss is smaller than the model's own; else None
    (the rate pattern's repair keeps its least violating bias the same way)."""
    scores = np.unique(np.concatenate([z for z in table.scores.values()]))
    if scores.size < 2:
        return None
    cuts = 0.5 * (scores[:-1] + scores[1:])  # predictions change only between distinct scores
    cuts = np.concatenate([[scores[0] - 1.0], cuts, [scores[-1] + 1.0]])
    here = int(np.searchsorted(cuts, 0.0))
    near = np.arange(max(0, here - THRESHOLD_NEAREST), min(cuts.size, here + THRESHOLD_NEAREST))
    spread = np.linspace(0, cuts.size - 1, THRESHOLD_SPREAD).round().astype(int)
    candidates = cuts[np.union1d(near, spread)]
    least, chosen = missed_rows(analysis, table).max(initial=0.0) - FEASIBILITY_TOL, None
    for shift in candidates[np.argsort(np.abs(candidates), kind="stable")]:
        moved = ScoreTable({key: z - shift for key, z in table.scores.items()},
                           fmap.invert(step.w, step.b + shift))
        miss = missed_rows(analysis, moved).max(initial=0.0)
        if miss <= FEASIBILITY_TOL:
            return float(shift)
        if miss < least:
            least, chosen = miss, float(shift)
    return chosen if best_effort else None
