"""Trade-off frontiers (``rc.sweep``): what a constraint costs, across a path of targets.

``rc.sweep(problem, constraint, targets, fairness=..., test=...)`` solves ``problem`` (the base
problem: objective, model and any constraints that always hold) once without the swept
constraint, the unconstrained point, and once per target with ``constraint(target)`` added. For
each solve it measures the objective with deterministic predictions (the "achieved" column of
the report: an error rate is the error) and the fairness quantity achieved, on the training
data and on held-out data, and returns a :class:`Frontier`: a table, a notebook display and
the input of :func:`ratecons.plot.tradeoff` (the Pareto front).

The solves walk the path from the tightest target to the loosest, each warm-started from its
neighbour's model (continuation), in parallel stretches with joblib (``n_jobs``); a point that
another solve's model beats while meeting its constraints is re-solved from that model or
re-uses it (:func:`sweep`), so the frontier is monotone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .data import Dataset
from .display import html_table
from .errors import RateconsError, SpecError
from .problem import Problem
from .rates import RateExpr, RatioExpr
from .report import make_rebinder
from .settings import FEASIBILITY_TOL

__all__ = ["Frontier", "FrontierPoint", "sweep"]

#: the columns of :meth:`Frontier.to_records`, in order
COLUMNS = ("target", "status", "method", "train_objective", "test_objective",
           "train_fairness", "test_fairness", "solve_time", "model_from")


@dataclass
class FrontierPoint:
    """One point of a sweep: its target (None for the unconstrained problem), status, method,
    the objective and the fairness quantity on the training and the held-out data (NaN
    without a model or without held-out data), the :class:`~ratecons.result.Result` and
    ``model_from``: empty when the model is this target's own solve, else the solve whose
    model it re-uses (e.g. ``"target 0.8"``; status, method, time and result are that
    solve's, see :func:`sweep`)."""

    target: float | None
    status: str
    method: str
    train_objective: float
    test_objective: float
    train_fairness: float
    test_fairness: float
    solve_time: float
    result: Any = field(default=None, repr=False)
    model_from: str = ""


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
    resolves : int
        Solves made to repair dominated points (:func:`sweep`), beyond one per point.
    maximized : bool
        Whether the objective is maximized (higher is better), from the base problem's sense.
    """

    points: list[FrontierPoint]
    unconstrained: FrontierPoint
    objective: str
    fairness: str
    higher_is_better: bool
    resolves: int = 0
    maximized: bool = False

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
        """The solved points no other solved point beats on both the objective (in its sense:
        lower is better when minimized, higher when maximized) and the fairness quantity (in
        its direction), the unconstrained point included; sorted by fairness."""
        key = "test" if held_out else "train"
        candidates = [p for p in [*self.points, self.unconstrained]
                      if np.isfinite(getattr(p, f"{key}_objective"))
                      and np.isfinite(getattr(p, f"{key}_fairness"))]
        sign = 1.0 if self.higher_is_better else -1.0
        lower = -1.0 if self.maximized else 1.0  # the objective as a loss: lower is better
        values = np.array([[lower * getattr(p, f"{key}_objective"),
                            sign * getattr(p, f"{key}_fairness")]
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
                 f"({'higher' if self.higher_is_better else 'lower'} is better)",
                 f"{'target':>10s} {'status':>21s} {'train obj':>10s} {'test obj':>10s} "
                 f"{'train fair':>10s} {'test fair':>10s} {'time (s)':>9s}  model from"]
        for p in [*self.points, self.unconstrained]:
            target = "none" if p.target is None else f"{p.target:.4g}"
            lines.append(f"{target:>10s} {p.status:>21s} {p.train_objective:10.4f} "
                         f"{p.test_objective:10.4f} {p.train_fairness:10.4f} "
                         f"{p.test_fairness:10.4f} {p.solve_time:9.2f}  "
                         f"{p.model_from or 'own solve'}")
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
    wrong = [type(c).__name__ for c in items if getattr(c, "sense", None) not in ("<=", ">=")]
    if wrong:
        raise SpecError(f"constraint({target!r}) returned {wrong[0]}, not a constraint: pass a "
                        "callable of the target that builds one, e.g. lambda k: "
                        "rc.positive_rate_ratio(a, b) >= k.")
    return items


def _on_rates(constraint: Any) -> bool:
    """Whether ``constraint`` is on rates alone (:attr:`Constraint.rates_only`: its ``expr``
    measured by ``expr.value``); a constraint with a worst-case rate, a loss or TPR@K holds a
    ``Sum``."""
    return bool(getattr(constraint, "rates_only", False))


def _default_fairness(made: dict[float, list[Any]], constraint: Callable[[float], Any]
                      ) -> tuple[RateExpr | RatioExpr, bool]:
    """The measured quantity of the swept constraint (``constraint(t)`` built at each target
    in ``made``) and whether higher is fairer: its ratio; the ratio A / B where the target
    scales B in a rate constraint A >= k B however it is written (``k*B <= A``,
    ``A - k*B >= 0``; the 80% rule written out: A alone, a group's positive rate, is no
    fairness quantity), or A / B, lower is fairer, for A <= k B; else its left-hand side,
    in the sense's direction."""
    targets = list(made)
    first = made[targets[0]][0]
    if not _on_rates(first):
        raise SpecError("sweep measures the swept constraint's own quantity only for rate "
                        "constraints; pass fairness= (a rate or ratio expression) for "
                        f"'{getattr(first, 'name', type(first).__name__)}'.")
    if first.ratio is not None:
        return first.ratio, first.sense == ">="
    ratio = _scaled_ratio({t: made[t][0] for t in targets},
                          lambda t: _as_constraints(constraint(t), t)[0])
    if ratio is not None:
        return ratio
    return (first.lhs if first.lhs is not None else first.expr), first.sense == ">="


def _scaled_ratio(made: dict[float, Any], probe: Callable[[float], Any]
                  ) -> tuple[RatioExpr, bool] | None:
    """(A / B, True) when every constraint ``made[t]`` reads A - t B >= 0 once moved to one
    side (G(t) = +-(expr - bound) >= 0, affine in t: G = E0 + t E1 with E1 = -B), with A and
    B rate expressions of nonnegative coefficients; (A / B, False) for A - t B <= 0. The
    affine form is read off two targets (``probe(t)`` builds a second one) and checked at
    every other; else None."""
    def affine(c: Any) -> Any:
        if not (getattr(c.expr, "mergeable", False) and hasattr(c.expr, "terms")):
            return None
        return (c.expr - c.bound) * (1.0 if c.sense == ">=" else -1.0)

    def rate(expr: Any) -> bool:  # a nonnegative rate expression (up to rounding residue)
        coefs = _significant(expr)
        return abs(expr.constant) <= 1e-12 and bool(coefs) and min(coefs.values()) > 0

    t0 = next(iter(made))
    t1 = next((t for t in made if t != t0), t0 / 2.0 if t0 else 0.5)
    try:
        g0, g1 = affine(made[t0]), affine(made[t1] if t1 in made else probe(t1))
    except RateconsError:  # the probe's target is out of the expression's range
        return None
    if g0 is None or g1 is None:
        return None
    e1 = (g1 - g0) / (t1 - t0)
    e0 = g0 - e1 * t0
    for t, c in made.items():  # the same affine form at every target
        g = affine(c)
        if g is None:
            return None
        have, want = _significant(g), _significant(e0 + e1 * t)
        if abs(g.constant - (e0.constant + t * e1.constant)) > 1e-12 or any(
                abs(have.get(k, 0.0) - want.get(k, 0.0)) > 1e-12 * max(1.0, abs(v))
                for k, v in {**have, **want}.items()):
            return None
    if rate(-e1) and rate(e0):  # A - t B >= 0: A / B >= t, higher is fairer
        a, b, higher = e0, -e1, True
    elif rate(e1) and rate(-e0):  # t B - A >= 0: A / B <= t, lower is fairer
        a, b, higher = -e0, e1, False
    else:
        return None
    return RatioExpr(a, b, f"{_plain_name(a)} / {_plain_name(b)}"), higher


def _significant(expr: Any) -> dict:
    """A rate expression's coefficients by term, without the residue of its arithmetic
    (|coef| <= 1e-12 of the largest)."""
    coefs = {key: coef for key, (_, coef) in expr.terms.items()}
    scale = max((abs(c) for c in coefs.values()), default=0.0)
    return {key: c for key, c in coefs.items() if abs(c) > 1e-12 * scale}


def _plain_name(expr: Any) -> str:
    """A rate expression's name as written where it is one of its rates (coefficients and
    constant equal up to rounding), else its arithmetic's name in parentheses."""
    mine = _significant(expr)
    for atom in expr.atoms:
        theirs = _significant(atom)
        if (theirs.keys() == mine.keys() and abs(atom.constant - expr.constant) <= 1e-12
                and all(abs(theirs[k] - mine[k]) <= 1e-12 * abs(mine[k]) for k in mine)):
            return atom.name
    return f"({expr.name})"


def _feasible(constraints: list[Any], scorer: Any) -> bool | None:
    """Whether the deterministic model meets every rate constraint on the training data (None
    when a constraint is not a rate constraint: no re-use is attempted then)."""
    if not all(_on_rates(c) for c in constraints):
        return None
    return all(c.slack(c.expr.value(scorer, "indicator")) >= -FEASIBILITY_TOL
               for c in constraints)


def _measure(result: Any, target: float | None, fairness: Any, test: Any) -> FrontierPoint:
    """The point of ``result``: objective and fairness achieved, on training and test data."""
    from .result import Result

    point = FrontierPoint(target, result.status, result.method, np.nan, np.nan, np.nan,
                          np.nan, result.solve_time, result)
    if not result.has_model:
        return point
    point.train_objective = Result.report(result).rows[0].indicator
    point.train_fairness = float(fairness.value(result.scorer))
    if test is not None:
        point.test_objective = Result.report(result, test).rows[0].indicator
        rebind, _ = make_rebinder(fairness.datasets, test)
        point.test_fairness = float(fairness.rebind(rebind).value(result.scorer))
    return point


def _takes_warm_start(problem: Problem, method: str) -> bool:
    """Whether the method ``solve(method)`` runs on ``problem`` has a ``warm_start`` option."""
    from .dispatch import resolve

    return "warm_start" in resolve(problem, method)[0].options


def _solve_chain(chain: list[tuple[Problem, float | None, bool]], fairness: Any, test: Any,
                 method: str, options: dict[str, Any]) -> list[FrontierPoint]:
    """Solve a stretch of the path in order, each solve warm-started from the one before it
    (the first one cold) where its flag says that its method takes a warm start."""
    points: list[FrontierPoint] = []
    for problem, target, warm in chain:
        previous = points[-1].result if points else None
        extra = ({"warm_start": previous}
                 if warm and previous is not None and previous.has_model else {})
        result = problem.solve(method=method, **options, **extra)
        points.append(_measure(result, target, fairness, test))
    return points


def _chunks(items: list[Any], count: int) -> list[list[Any]]:
    """``items`` cut into ``count`` contiguous stretches of near-equal length."""
    edges = np.linspace(0, len(items), count + 1).round().astype(int)
    return [items[lo:hi] for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


@dataclass
class _Path:
    """The solves of a sweep in path order (tightest target first, the unconstrained problem
    last) and what the re-use step compares: ``solved`` holds (index of the problem solved,
    its point) for every solve, re-solves included."""

    problems: list[Problem]
    targets: list[float | None]
    points: list[FrontierPoint]
    sign: float  # +1 when the objective is minimized
    fair_sign: float  # +1 when higher fairness is better
    solved: list[tuple[int, FrontierPoint]] = field(default_factory=list)

    def best_for(self, i: int) -> tuple[int, FrontierPoint] | None:
        """The best solve whose model meets the i-th problem's constraints: fewer errors, then
        fairer, then a solve of the i-th problem itself (None when no model does, or when the
        constraints are not rate constraints)."""
        usable = []
        for owner, c in self.solved:
            if not np.isfinite(c.train_objective):
                continue
            feasible = _feasible(self.problems[i].constraints, c.result.scorer)
            if feasible is None:
                return None
            if feasible:
                usable.append((owner, c))
        return min(usable, default=None, key=lambda oc: (
            self.sign * oc[1].train_objective, -self.fair_sign * oc[1].train_fairness,
            0 if oc[0] == i else 1))


def _reuse(path: _Path, fairness: Any, test: Any, method: str, options: dict[str, Any],
           warm: list[bool]) -> int:
    """Make the path's points monotone by re-solving and re-using (see :func:`sweep`); returns
    the number of re-solves."""
    path.solved = list(enumerate(path.points))
    resolves = 0
    for i, point in enumerate(path.points):  # tightest first: its models serve looser targets
        best = path.best_for(i)
        if (warm[i] and best is not None and np.isfinite(point.train_objective)
                and path.sign * best[1].train_objective < path.sign * point.train_objective):
            # continuation from the better model (MM fixed points are local)
            result = path.problems[i].solve(method=method, **options,
                                            warm_start=best[1].result)
            path.solved.append((i, _measure(result, path.targets[i], fairness, test)))
            resolves += 1
    for i in range(len(path.points)):
        best = path.best_for(i)
        if best is None:
            continue
        owner, chosen = best
        if owner == i:
            path.points[i] = chosen
            continue
        source = "unconstrained" if chosen.target is None else f"target {chosen.target:.4g}"
        path.points[i] = replace(chosen, target=path.targets[i], model_from=source)
    return resolves


def sweep(problem: Problem, constraint: Callable[[float], Any], targets: Iterable[float],
          fairness: RateExpr | RatioExpr | None = None,
          test: Dataset | Mapping[Dataset, Dataset] | None = None, method: str = "auto",
          n_jobs: int | None = None, **solve_options: Any) -> Frontier:
    """Solve ``problem`` with ``constraint(target)`` added, for every target, and without it.

    The path runs from the tightest target (the largest for a ``>=`` constraint, the smallest
    for ``<=``) to the loosest, then the unconstrained problem: every model of a tighter target
    meets the looser ones, so each solve is warm-started from its neighbour's model
    (``solve(warm_start=...)``, for the methods that take one: Algorithm 1 then starts at a
    feasible point and the ramp objective never rises above the neighbour's). With ``n_jobs``
    the path is cut into ``n_jobs`` stretches solved in parallel with joblib, each warm-started
    along itself and its first solve cold.

    The frontier is then made monotone honestly. MM's fixed points are local (Goh et al. 2016,
    Alg 1), so a looser target's solve can end worse than a tighter target's model, which is
    feasible for it: such a point is re-solved warm-started from the better model (the standard
    continuation remedy), and each point then takes the best model, among every solve of the
    sweep, that meets its own constraints on the training data (fewer errors first, then the
    fairer). A point whose model comes from another target's solve says so in ``model_from``
    (its status, method and result are that solve's); no number is edited. The training
    objective is then nondecreasing as the target tightens (the models meeting a tighter target
    meet the looser ones) and so is the fairness achieved.

    Parameters
    ----------
    problem : Problem
        The base problem: the objective, the model and the constraints every point keeps.
        Solved as it is for the unconstrained point.
    constraint : callable
        ``constraint(target)`` returns the swept constraint (or a list of them), e.g.
        ``lambda t: rc.positive_rate_ratio(women, men) >= t``; a larger target is tighter for
        ``>=``, a smaller one for ``<=``.
    targets : iterable of float
    fairness : RateExpr or RatioExpr, optional
        The quantity whose achieved value is the frontier's horizontal axis. Default: the
        swept constraint's ratio (for a ratio constraint, or A / B for A >= k B however
        written, the target k scaling a fixed B: the 80% rule written out; lower is fairer
        for A <= k B) or its left-hand side.
    test : Dataset or mapping, optional
        Held-out data (as for ``result.report(test)``): the objective and the fairness
        quantity are also measured there.
    method : str
    n_jobs : int, optional
        Stretches of the path solved in parallel with joblib (None or 1: one after another;
        -1: one per core).
    **solve_options
        Passed to every ``solve``; a ``warm_start`` given here starts every solve (None: every
        solve cold) instead of the neighbour's model, and nothing is re-solved.

    Returns
    -------
    Frontier
        The points in the order of ``targets``; ``resolves`` counts the re-solves.
    """
    targets = [float(t) for t in targets]
    if not targets:
        raise SpecError("sweep needs at least one target.")
    made = {t: _as_constraints(constraint(t), t) for t in targets}
    first = made[targets[0]][0]
    if fairness is None:
        fairness, higher = _default_fairness(made, constraint)
    else:
        higher = getattr(first, "sense", ">=") == ">="
    order = sorted(set(targets), reverse=higher)  # the tightest target first
    key = "maximize" if problem.sense == "maximize" else "minimize"
    base = list(problem.constraints)
    problems = [Problem(**{key: problem.objective}, subject_to=[*base, *made[t]],
                        model=problem.model if problem.model_given else None)
                for t in order]
    path_targets: list[float | None] = [*order, None]
    options = {"verbose": False, **solve_options}
    # per solve: the unconstrained end of an auto path often goes to a method without one
    warm = ["warm_start" not in options and _takes_warm_start(p, method)
            for p in [*problems, problem]]
    jobs = list(zip([*problems, problem], path_targets, warm))
    count = 1 if n_jobs in (None, 1) else min(len(jobs), _cores(n_jobs))
    if count == 1:
        points = _solve_chain(jobs, fairness, test, method, options)
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=count)(delayed(_solve_chain)(chunk, fairness, test, method,
                                                             options)
                                       for chunk in _chunks(jobs, count))
        points = [p for part in parts for p in part]
    path = _Path([*problems, problem], path_targets, points,
                 -1.0 if problem.sense == "maximize" else 1.0, 1.0 if higher else -1.0)
    resolves = _reuse(path, fairness, test, method, options, warm)
    by_target = dict(zip(order, path.points[:-1]))
    return Frontier([by_target[t] for t in targets], path.points[-1], problem.objective.name,
                    fairness.name, higher, resolves, problem.sense == "maximize")


def _cores(n_jobs: int) -> int:
    """joblib's meaning of ``n_jobs`` (-1: every core, -2: all but one, ...)."""
    from joblib import cpu_count

    return max(1, n_jobs if n_jobs > 0 else cpu_count() + 1 + n_jobs)
