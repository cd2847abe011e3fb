"""The composition analysis: curvature rules checked once, before anything is solved.

A problem is brought to one canonical form, *minimize row 0 subject to row j <= bound_j*:
a maximized objective and every ``>=`` constraint are negated. Each row is a sum of signed parts,
and each part must keep the canonical row convex (or majorizable):

=====================  ===========  ================================================
part                   curvature    allowed signs in the canonical (min / <=) form
=====================  ===========  ================================================
rates, ratios (App B)  ramp         any: majorized at an anchor (Goh et al., eq. 4)
worst-case rates       ramp         any: the reweighting adapts to the direction
robust loss, losses    convex       positive: minimize, bound above
TPR@K, TPR@tau         concave      negative: maximize, bound below
minimax risk           (own LP)     alone, minimized, no constraints, no model
=====================  ===========  ================================================

A violation raises :class:`ratecons.errors.CurvatureError` naming the offending part as the user
wrote it (``tpr_at_top(train, k=50) is concave; it cannot be bounded above``) with the fix to
try. The result, :class:`Analysis`, caches the facts dispatch reads (needs MM, LP-representable,
kernel model, sizes) and evaluates every row exactly or by its surrogate for reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import Dataset
from ..errors import CurvatureError, DataError, SpecError
from .atom import Composable, Constraint, Sum, as_sum, fmt, label_of
from .rate import RateExpr

__all__ = ["Analysis", "Row", "analyse"]


@dataclass
class Row:
    """One canonical row: ``sum_k coef_k part_k`` (minimized, or ``<= bound``).

    ``sign`` maps it back to the user's expression: user value = sign * canonical value.
    """

    name: str
    parts: list[tuple[float, Any]]
    constant: float
    sign: float
    bound: float = float("nan")
    source: Any = None

    @property
    def rate_parts(self) -> list[tuple[float, Any]]:
        """Parts that are majorized at an anchor (rates and worst-case rates)."""
        return [(c, p) for c, p in self.parts if p.curvature == "rate"]

    def value(self, scorer: Any, kind: str) -> float:
        """Canonical value: ``kind="exact"`` (indicators, exact thresholds) or ``"surrogate"``
        (ramp rates, the convex or concave surrogates)."""
        return self.constant + sum(c * p.evaluate(scorer, kind, c) for c, p in self.parts)

    def user_value(self, scorer: Any, kind: str) -> float:
        return self.to_user(self.value(scorer, kind))

    def to_user(self, canonical: float) -> float:
        """A canonical value of this row in the user's sense (the one inversion of the flip):
        for the objective, E + reg minimized or E - reg maximized."""
        return self.sign * canonical + 0.0  # + 0.0: a maximized 0 reads 0, not -0


@dataclass
class Analysis:
    """The facts of a composed problem (module docstring) and its canonical rows."""

    objective: Row
    constraints: list[Row]
    sense: str
    model: Any
    datasets: list[Dataset] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return [self.objective, *self.constraints]

    @property
    def needs_mm(self) -> bool:
        """Some part is a ramp (rates, worst-case rates): majorization-minimization (Alg 1)."""
        return any(row.rate_parts for row in self.rows)

    @property
    def kernel(self) -> bool:
        return not hasattr(self.model, "l1")

    @property
    def n_examples(self) -> int:
        return int(sum(d.n for d in self.datasets))

    def parts(self) -> list[Any]:
        return [p for row in self.rows for _, p in row.parts]

    def rate_rows(self) -> list[tuple[dict[Any, tuple[Any, float]], float, float]]:
        """The rate parts of rows 0..m as ``(terms, constant, bound)``: ``terms`` maps a subset
        key to ``(subset, coef)`` with the coefficients of every rate of the row summed,
        ``constant`` is the rates' constant and ``bound`` the row's (0 for the objective); the
        input of :func:`ratecons.canonical.rate_program.program_of_rows`. Other parts and the
        row's own constant are left out."""
        out = []
        for j, row in enumerate(self.rows):
            terms: dict[Any, tuple[Any, float]] = {}
            constant = 0.0
            for coef, part in row.parts:
                if part.mergeable:  # a linear rate expression (worst-case rates are not)
                    constant += coef * part.constant
                    for key, (subset, c) in part.terms.items():
                        terms[key] = (subset, terms.get(key, (subset, 0.0))[1] + coef * c)
            out.append((terms, constant, 0.0 if j == 0 else row.bound))
        return out

    def summary(self) -> str:
        kinds = sorted({type(p).__name__ for p in self.parts()})
        model = type(self.model).__name__
        return (f"composed problem: {self.objective.name}, "
                f"{len(self.constraints)} constraint(s), parts {kinds}, {model}, "
                f"{len(self.datasets)} dataset(s) with {self.n_examples} examples"
                + ("; ramp parts: majorization-minimization (Alg 1)" if self.needs_mm else ""))

    def describe(self) -> str:
        lines = [self.summary(), "", "canonical form (minimize row 0, rows j <= bound_j):"]
        for j, row in enumerate(self.rows):
            label = "obj" if j == 0 else f"c{j}"
            bound = "" if j == 0 else f"  <= {fmt(row.bound + 0.0)}"  # + 0.0: no "-0"
            lines.append(f"  {label}: {row.name}{bound}")
            for coef, part in row.parts:
                written = label_of(part)
                if " + " in written or " - " in written:  # -1 * (a - b), not -1 * a - b
                    written = f"({written})"
                lines.append(f"        {fmt(coef):>10} * {written}  [{part.curvature}]")
            if row.constant:
                lines.append(f"        {fmt(row.constant):>10}   (constant)")
        return "\n".join(lines)


def _what(context: str, coef: float) -> str:
    """How a part is used, in words: 'minimized', 'bounded above', ..."""
    if context == "minimize":
        return "minimized" if coef > 0 else "maximized"
    if context == "maximize":
        return "maximized" if coef < 0 else "minimized"
    if context == "<=":
        return "bounded above" if coef > 0 else "bounded below"
    return "bounded below" if coef < 0 else "bounded above"


def _check(part: Any, coef: float, context: str, where: str) -> None:
    curvature = part.curvature
    if curvature == "rate":
        return
    bad = (curvature == "convex" and coef < 0) or (curvature == "concave" and coef > 0)
    if not bad:
        return
    used = _what(context, coef)
    if curvature == "convex":
        fix = ("minimize it, bound it above (<=), or subtract it from a maximized objective "
               "(maximize tpr - 0.5 * loss); to reward a good fit, maximize a rate such as "
               "accuracy")
    else:
        fix = ("maximize it or bound it below (>=), e.g. rc.Problem(maximize=...) or "
               f"{label_of(part)} >= 0.5")
    raise CurvatureError(
        f"{label_of(part)} is {curvature}; it cannot be {used} ({where}). Its surrogate is "
        f"{curvature}, so the problem would not be convex: {fix}."
    )


def _row(expr: Any, sign: float, context: str, where: str, name: str,
         bound: float = float("nan"), source: Any = None) -> Row:
    s = as_sum(expr)
    parts = [(sign * c, p) for c, p in s.parts]
    for coef, part in parts:
        if isinstance(part, Sum):  # pragma: no cover - sums are flattened on construction
            raise SpecError(f"nested sum {part.name}")
        _check(part, coef, context, where)
    return Row(name, parts, sign * s.constant, sign, bound, source)


def _datasets(rows: list[Row]) -> list[Dataset]:
    seen: dict[int, Dataset] = {}
    for row in rows:
        for _, part in row.parts:
            for d in part.datasets:
                seen.setdefault(id(d), d)
    return list(seen.values())


def analyse(objective: Any, sense: str, constraints: list[Any], model: Any) -> Analysis:
    """Check the composition rules and build the canonical rows (module docstring)."""
    if not isinstance(objective, Composable):
        raise SpecError(
            f"cannot minimize or maximize a {type(objective).__name__}; objectives are rates "
            "(rc.error_rate(D), ...), rc.tpr_at_top, rc.tpr_at_quantile, rc.robust_loss, "
            "rc.mean_loss, rc.worst_case, sums of them, or rc.minimax_risk.")
    sign = 1.0 if sense == "minimize" else -1.0
    obj = _row(objective, sign, sense, f"the objective is {sense}d",
               f"{sense} {as_sum(objective).name}", source=objective)
    rows: list[Row] = []
    for i, con in enumerate(constraints):
        if isinstance(con, Constraint):
            s = 1.0 if con.sense == "<=" else -1.0
            rows.append(_row(con.expr, s, con.sense, f"in subject_to[{i}]: {con.name}",
                             con.name, s * con.bound, con))
        else:
            equality = (" (== and != make Python's True or False of a loss, a TPR, a robust "
                        "loss or a worst-case rate: only rates take ==, as two rows; write <= "
                        "and >=)" if isinstance(con, bool) else "")
            raise SpecError(
                f"subject_to[{i}] is a {type(con).__name__}, not a constraint{equality}; build "
                "constraints by comparing expressions with numbers, e.g. rc.recall(D) >= 0.9 "
                "or rc.tpr_at_top(D, k=5) >= 0.5.")
    analysis = Analysis(obj, rows, sense, model)
    analysis.datasets = _datasets(analysis.rows)
    _check_model(analysis)
    return analysis


def _check_model(analysis: Analysis) -> None:
    dims = {d.d for d in analysis.datasets}
    if len(dims) > 1:
        raise DataError(
            "the datasets of this problem have different numbers of features: "
            + ", ".join(f"{d.name}: {d.d}" for d in analysis.datasets)
            + ". One score model needs the same feature columns everywhere.")
    named = {tuple(d.feature_names) for d in analysis.datasets if d.feature_names is not None}
    if len(named) > 1:  # one w reads every dataset's columns by position
        first, other = sorted(named)[:2]
        where = next(i for i, (a, b) in enumerate(zip(first, other, strict=True)) if a != b)
        raise DataError(
            "the datasets of this problem name their feature columns differently ("
            + ", ".join(d.name for d in analysis.datasets) + f"): column {where} is "
            f"{first[where]!r} in one and {other[where]!r} in another. One score model reads "
            "every dataset's columns by position: give them the same columns in the same "
            "order (e.g. frame[columns]).")
    if all(isinstance(part, RateExpr) and not part.terms for part in analysis.parts()):
        # no part depends on the model (0 * rc.error_rate(D) + 1 crashed describe and solve)
        raise SpecError("the objective is a constant: there is nothing to optimize.")
    if np.isnan(analysis.objective.constant):  # pragma: no cover - guarded by Sum
        raise SpecError("the objective's constant is not a number.")
