"""Trade-off frontiers (``rc.sweep``): what a constraint costs, across a path of targets.

``rc.sweep(problem, constraint, targets, fairness=..., test=...)`` solves ``problem`` (the base
problem: objective, model and any constraints that always hold) once without the swept
constraint, the unconstrained point, and once per target with ``constraint(target)`` added. For
each solve it measures the objective with deterministic predictions (the "achieved" column of
the report: an error rate is the error) and the fairness quantity achieved, on the training
data and on held-out data, and returns a :class:`Frontier`: a table, a notebook display and
the input of :func:`ratecons.plot.tradeoff` (the Pareto front).

The solves of the path are independent, so they run in parallel with joblib (``n_jobs``); no
method takes a warm start yet, so each solve starts cold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .data import Dataset
from .display import html_table
from .errors import SpecError
from .problem import Problem
from .rates import RateExpr, RatioExpr
from .report import make_rebinder

__all__ = ["Frontier", "FrontierPoint", "sweep"]

#: the columns of :meth:`Frontier.to_records`, in order
COLUMNS = ("target", "status", "method", "train_objective", "test_objective",
           "train_fairness", "test_fairness", "solve_time")


@dataclass
class FrontierPoint:
    """One solve of a sweep: its target (None for the unconstrained problem), status, method,
    the objective and the fairness quantity on the training and the held-out data (NaN
    without a model or without held-out data) and the :class:`~ratecons.result.Result`."""

    target: float | None
    status: str
    method: str
    train_objective: float
    test_objective: float
    train_fairness: float
    test_fairness: float
    solve_time: float
    result: Any = field(default=None, repr=False)


@dataclass(repr=False)
class Frontier:
    """The points of :func:`sweep`, in the order of the targets, and the unconstrained one.

    Attributes
    ----------
    points : list of FrontierPoint
    unconstrained : FrontierPoint
    objective, fairness : str
        Names of the measured quantities.
    higher_is_better : bool
        The fairness direction, from the swept constraint's sense (``>=``: higher is better).
    """

    points: list[FrontierPoint]
    unconstrained: FrontierPoint
    objective: str
    fairness: str
    higher_is_better: bool

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per point (keys :data:`COLUMNS`), the unconstrained point last."""
        return [{c: getattr(p, c) for c in COLUMNS} for p in [*self.points, self.unconstrained]]

    def to_frame(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` (pandas is needed here)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("Frontier.to_frame needs pandas (pip install pandas); "
                              "to_records() gives the same table.") from exc
        return pd.DataFrame(self.to_records(), columns=list(COLUMNS))

    def pareto(self, held_out: bool = True) -> list[FrontierPoint]:
        """The solved points no other solved point beats on both the objective (lower is
        better) and the fairness quantity (in its direction), the unconstrained point
        included; sorted by fairness."""
        key = "test" if held_out else "train"
        candidates = [p for p in [*self.points, self.unconstrained]
                      if np.isfinite(getattr(p, f"{key}_objective"))
                      and np.isfinite(getattr(p, f"{key}_fairness"))]
        sign = 1.0 if self.higher_is_better else -1.0
        values = np.array([[getattr(p, f"{key}_objective"), sign * getattr(p, f"{key}_fairness")]
                           for p in candidates]).reshape(-1, 2)
        keep = []
        for i, (err, fair) in enumerate(values):
            beaten = ((values[:, 0] <= err) & (values[:, 1] >= fair)
                      & ((values[:, 0] < err) | (values[:, 1] > fair)))
            if not beaten.any():
                keep.append(candidates[i])
        return sorted(keep, key=lambda p: getattr(p, f"{key}_fairness"))

    def __repr__(self) -> str:
        solved = sum(p.status == "optimal" for p in self.points)
        return (f"Frontier({len(self.points)} targets, {solved} optimal, "
                f"objective={self.objective!r}, fairness={self.fairness!r})")

    def __str__(self) -> str:
        lines = [f"frontier: {self.objective} against {self.fairness} "
                 f"({'higher' if self.higher_is_better else 'lower'} is fairer)",
                 f"{'target':>10s} {'status':>16s} {'train obj':>10s} {'test obj':>10s} "
                 f"{'train fair':>10s} {'test fair':>10s} {'time (s)':>9s}"]
        for p in [*self.points, self.unconstrained]:
            target = "none" if p.target is None else f"{p.target:.4g}"
            lines.append(f"{target:>10s} {p.status:>16s} {p.train_objective:10.4f} "
                         f"{p.test_objective:10.4f} {p.train_fairness:10.4f} "
                         f"{p.test_fairness:10.4f} {p.solve_time:9.2f}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [[r[c] for c in COLUMNS] for r in self.to_records()]
        rows[-1][0] = "unconstrained"
        return html_table(COLUMNS, rows, caption=f"frontier: {self.objective} against "
                                                 f"{self.fairness}")


def _as_constraints(made: Any, target: float) -> list[Any]:
    items = list(made) if isinstance(made, (list, tuple)) else [made]
    if not items:
        raise SpecError(f"constraint({target!r}) returned no constraint.")
    return items


def _default_fairness(made: list[Any]) -> RateExpr | RatioExpr:
    """The measured quantity of the swept constraint: its ratio, or its expression."""
    first = made[0]
    if not hasattr(first, "ratio"):  # a rate constraint (rates.Constraint) knows its ratio
        raise SpecError("sweep measures the swept constraint's own quantity only for rate "
                        "constraints; pass fairness= (a rate or ratio expression) for "
                        f"{type(first).__name__}.")
    if first.ratio is not None:
        return first.ratio
    return first.lhs if first.lhs is not None else first.expr


def _solve_point(problem: Problem, target: float | None, fairness: Any, test: Any,
                 method: str, options: dict[str, Any]) -> FrontierPoint:
    from .result import Result

    result = problem.solve(method=method, **options)
    point = FrontierPoint(target, result.status, result.method, np.nan, np.nan, np.nan,
                          np.nan, result.solve_time, result)
    if not result.has_model:
        return point
    objective_row = Result.report(result).rows[0]
    point.train_objective = objective_row.indicator
    point.train_fairness = float(fairness.value(result.scorer))
    if test is not None:
        point.test_objective = Result.report(result, test).rows[0].indicator
        rebind, _ = make_rebinder(fairness.datasets, test)
        point.test_fairness = float(fairness.rebind(rebind).value(result.scorer))
    return point


def sweep(problem: Problem, constraint: Callable[[float], Any], targets: Iterable[float],
          fairness: RateExpr | RatioExpr | None = None,
          test: Dataset | Mapping[Dataset, Dataset] | None = None, method: str = "auto",
          n_jobs: int | None = None, **solve_options: Any) -> Frontier:
    """Solve ``problem`` with ``constraint(target)`` added, for every target, and without it.

    Parameters
    ----------
    problem : Problem
        The base problem: the objective, the model and the constraints every point keeps.
        Solved as it is for the unconstrained point.
    constraint : callable
        ``constraint(target)`` returns the swept constraint (or a list of them), e.g.
        ``lambda t: rc.positive_rate_ratio(women, men) >= t``.
    targets : iterable of float
    fairness : RateExpr or RatioExpr, optional
        The quantity whose achieved value is the frontier's horizontal axis. Default: the
        swept constraint's ratio (for a ratio constraint) or its left-hand side.
    test : Dataset or mapping, optional
        Held-out data (as for ``result.report(test)``): the objective and the fairness
        quantity are also measured there.
    method : str
    n_jobs : int, optional
        Solves in parallel with joblib (None or 1: one after another; -1: every core).
    **solve_options
        Passed to every ``solve``.

    Returns
    -------
    Frontier
    """
    targets = [float(t) for t in targets]
    if not targets:
        raise SpecError("sweep needs at least one target.")
    made = {t: _as_constraints(constraint(t), t) for t in targets}
    first = made[targets[0]][0]
    if fairness is None:
        fairness = _default_fairness(made[targets[0]])
    sense = getattr(first, "sense", ">=")
    base = list(problem.constraints)
    key = "maximize" if problem.sense == "maximize" else "minimize"
    problems = [Problem(**{key: problem.objective}, subject_to=[*base, *made[t]],
                        model=problem.model if problem.model_given else None)
                for t in targets]
    jobs = [(problem, None), *zip(problems, targets)]
    options = {"verbose": False, **solve_options}
    if n_jobs in (None, 1):
        points = [_solve_point(p, t, fairness, test, method, options) for p, t in jobs]
    else:
        from joblib import Parallel, delayed

        points = Parallel(n_jobs=n_jobs)(delayed(_solve_point)(p, t, fairness, test, method,
                                                               options) for p, t in jobs)
    return Frontier(points[1:], points[0], problem.objective.name, fairness.name, sense == ">=")
