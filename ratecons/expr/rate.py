"""Rates: the primitive s_p(D) and linear combinations of it, and ratios of two such.

Every rate is a linear combination of the positive prediction rate

    s_p(D; w, b) = sum_{x in D} weight_x 1(<w, x> - b > 0)     (Goh et al. 2016, eq. 1)

on subsets D (weights 1/|D| for unweighted data), plus a constant; the negative rate is
s_n(D) = 1 - s_p(D). :func:`rate_atom` is the one primitive every named rate of
:mod:`ratecons.rates` is built from (as TFCO's ``binary_rates`` builds every rate from one):
a builder maps subsets to ``(terms, constant)``, and the rate keeps it as a *recipe* that
rebuilds it on other data, so a rate defined on the training set is reported on a held-out set
with that set's own proportions.

A :class:`RateExpr` is a :class:`~ratecons.expr.atom.Term` of curvature ``"rate"``: it adds,
scales and compares like every other term, and rates in one sum merge into one linear
expression (terms over the same subset merge, which gives tighter relaxations: the TFCO
lesson). A :class:`RatioExpr` (precision, F1, the 80% rule's rate ratio, ...) is a term that
may only be compared with a constant; the comparison is multiplied through by the
(nonnegative) denominator, as in Appendix B: ``precision(D) >= 0.9`` becomes
``#TP - 0.9 (#TP + #FP) >= 0``. Caveat (App. B): under the ramp relaxation / randomized rule
this constrains the ratio of expectations, not the expectation of the ratio, and when the
denominator is zero the multiplied-through constraint holds trivially.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data import Dataset, Subset, as_subset
from ..errors import InfeasibleError, NotLinearError, SpecError
from ..ramp import ramp, ramp_scores
from ..settings import FEASIBILITY_TOL, ROUNDING_TOL
from .atom import Constraint, Term, as_sum, fmt, is_number

__all__ = ["RateExpr", "RatioExpr", "rate_atom", "ratio_metric", "FRACTION_RATIOS"]

Rebind = Callable[[Subset], Subset]


class RateExpr(Term):
    """A linear combination ``constant + sum_D coef_D * s_p(D)`` of positive rates.

    Build them with the rate helpers (``rc.positive_rate(D)``, ``rc.error_rate(D)``, ...) and
    combine with ``+``, ``-``, scalar ``*`` and ``/``. Comparisons with numbers or other
    expressions (``<=``, ``>=``, ``==``) give :class:`~ratecons.expr.atom.Constraint` objects.
    Its exact value counts indicators (eq. 1); its surrogate is the ramp (eq. 3), majorized at an
    anchor by the lowerings (eq. 4).
    """

    curvature = "rate"
    kind = "rate"
    under_score_scale = "ramp"
    mergeable = True

    def __init__(
        self,
        terms: dict[tuple, tuple[Subset, float]],
        constant: float,
        name: str,
        recipe: Callable[[Rebind], RateExpr],
        atoms: tuple[RateExpr, ...] = (),
    ) -> None:
        self.terms = {k: v for k, v in terms.items() if v[1] != 0.0}
        self.constant = float(constant)
        self.name = name
        self._recipe = recipe
        self.atoms = atoms or (self,)

    # ---------------------------------------------------------------- arithmetic
    def _combine(self, other: Any, scale: float, op: str) -> RateExpr:
        if isinstance(other, RatioExpr):
            raise NotLinearError(
                f"cannot {op} a ratio metric ({other.name}) and a rate: ratios are not linear. "
                "Compare the ratio with a constant instead, e.g. rc.precision(D) >= 0.9."
            )
        if is_number(other):
            c = float(other) * scale
            sign = "+" if c >= 0 else "-"
            return RateExpr(self.terms, self.constant + c, f"{self.name} {sign} {fmt(abs(c))}",
                            _Shifted(self, c), self.atoms)
        if not isinstance(other, RateExpr):  # another term or a sum: a Sum of parts
            return as_sum(self)._plus(other, scale)
        terms = dict(self.terms)
        for key, (subset, coef) in other.terms.items():
            prev = terms.get(key, (subset, 0.0))[1]
            terms[key] = (subset, prev + scale * coef)
        sign = "+" if scale > 0 else "-"
        return RateExpr(
            terms, self.constant + scale * other.constant, f"{self.name} {sign} {other.name}",
            _Combined(self, other, scale),
            _unique_atoms(self.atoms + other.atoms),
        )

    def __add__(self, other: Any) -> RateExpr:
        return self._combine(other, 1.0, "add")

    __radd__ = __add__

    def __sub__(self, other: Any) -> RateExpr:
        return self._combine(other, -1.0, "subtract")

    def __rsub__(self, other: Any) -> RateExpr:
        return (-self)._combine(other, 1.0, "subtract")

    def __mul__(self, factor: Any) -> RateExpr:
        if isinstance(factor, (RateExpr, RatioExpr)):
            raise NotLinearError(
                f"cannot multiply two rate expressions ({self.name} and {factor.name}): only "
                "linear combinations of rates are supported."
            )
        if not is_number(factor) or not np.isfinite(float(factor)):
            raise NotLinearError(f"rates can be scaled by finite numbers only; got {factor!r}.")
        f = float(factor)
        terms = {k: (s, f * c) for k, (s, c) in self.terms.items()}
        return RateExpr(terms, f * self.constant, f"{fmt(f)}*({self.name})",
                        _Scaled(self, f), self.atoms)

    __rmul__ = __mul__

    def __truediv__(self, divisor: Any) -> RateExpr:
        if isinstance(divisor, RateExpr):
            raise NotLinearError(
                f"{self.name} / {divisor.name} is a ratio, not a rate: use "
                "rc.positive_rate_ratio / rc.precision / ... and compare it with a constant."
            )
        if not is_number(divisor) or float(divisor) == 0.0:
            raise NotLinearError(f"rates can be divided by nonzero numbers only; got {divisor!r}.")
        return self * (1.0 / float(divisor))

    def __neg__(self) -> RateExpr:
        return self * -1.0

    # ---------------------------------------------------------------- comparisons
    def __eq__(self, other: Any) -> list[Constraint]:  # type: ignore[override]
        if is_number(other):
            self._check_attainable(float(other))
        return [Constraint.build(self, "<=", other), Constraint.build(self, ">=", other)]

    __hash__ = None  # type: ignore[assignment]

    def _check_attainable(self, value: float) -> None:
        """Refuse ``self == value`` that no deterministic classifier meets: one rate over the
        n unweighted rows of a subset takes the values constant + coef k / n only (coverage
        == 0.2 on 673 rows asks for k = 134.6 positives); over weighted rows whose weights
        are integers or all equal, the values constant + coef k g / W, g their greatest common
        unit and W their total (other weights are not checked)."""
        if len(self.terms) != 1:
            return
        subset, coef = next(iter(self.terms.values()))
        if subset.n == 0:
            return
        weights, total = subset.data.weights, subset.size  # |D|: rows or total weight
        unit = 1.0 if weights is None else _weight_unit(weights[subset.index])
        if unit is None or total <= 0:
            return
        k = (value - self.constant) / coef * total / unit
        if abs(k - round(k)) * abs(coef) * unit / total <= FEASIBILITY_TOL:  # as reports judge
            return
        below, above = self.constant + coef * np.array([np.floor(k), np.ceil(k)]) * unit / total
        needs = (f"{k:.8g} of them predicted positive" if weights is None else
                 f"a weight of {k * unit:.8g} predicted positive, and their weights sum in "
                 f"steps of {unit:.8g}")
        raise InfeasibleError(
            f"constraint '{self.name} == {fmt(value)}' can never hold exactly: over the "
            f"{subset.n} rows of {subset.name} it needs {needs}. "
            f"Write a band instead, e.g. {self.name} >= {fmt(min(below, above))} and "
            f"<= {fmt(max(below, above))} (the nearest values it takes), or wider.")

    def __bool__(self) -> bool:
        raise SpecError(
            f"a rate expression ({self.name}) has no truth value; comparisons build constraints "
            "for rc.Problem(subject_to=[...]). Chained comparisons (a <= r <= b) are not "
            "supported: write two constraints."
        )

    # ---------------------------------------------------------------- facts and evaluation
    @property
    def range(self) -> tuple[float, float]:
        """Interval containing every achievable value (each s_p in [0, 1])."""
        coefs = np.array([c for _, c in self.terms.values()])
        return (self.constant + coefs[coefs < 0].sum(), self.constant + coefs[coefs > 0].sum())

    def rebind(self, rebind: Rebind) -> RateExpr:
        """The same definition on other data (``rebind`` maps each subset to its counterpart)."""
        return self._recipe(rebind)

    def value(self, scorer: Any, kind: str = "indicator") -> float:
        """The expression's value for a fitted scorer: ``indicator`` (eq. 1, deterministic
        predictions) or ``ramp`` (eq. 3: expected value under the randomized rule of App. A)."""
        scores: dict[int, np.ndarray] = {}
        total = self.constant
        for subset, coef in self.terms.values():
            key = id(subset.data)
            if key not in scores:
                scores[key] = ramp_scores(scorer, scorer.decision_function(subset.data.X))
            z = scores[key][subset.index]
            v = (z > 0).astype(np.float64) if kind == "indicator" else ramp(z)
            total += coef * float(subset.weights @ v)
        return self.settled(total)

    def settled(self, total: float) -> float:
        """``total``, a value of the expression however summed, or 0 where it is within
        rounding of the largest value the terms can take (|constant| + sum |coef|, each rate
        in [0, 1]): a value that cancels to zero (s_n = 1 - s_p: a count of losses with none)
        is left with rounding of that order, and a ratio over it is undefined, not huge."""
        magnitude = abs(self.constant) + sum(abs(coef) for _, coef in self.terms.values())
        return 0.0 if abs(total) <= ROUNDING_TOL * magnitude else total

    def surrogate_value(self, scorer: Any) -> float:
        """The ramp value (eq. 3)."""
        return self.value(scorer, "ramp")

    def evaluate(self, scorer: Any, kind: str, coef: float = 1.0) -> float:
        return self.value(scorer, "indicator" if kind == "exact" else "ramp")

    @property
    def datasets(self) -> list[Dataset]:
        seen: dict[int, Dataset] = {}
        for subset, _ in self.terms.values():
            seen.setdefault(id(subset.data), subset.data)
        return list(seen.values())

    def __repr__(self) -> str:
        return f"RateExpr({self.name})"


def _unique_atoms(atoms: tuple[RateExpr, ...]) -> tuple[RateExpr, ...]:
    out: dict[str, RateExpr] = {}
    for a in atoms:
        out.setdefault(a.name, a)
    return tuple(out.values())


# Recipes are small picklable objects (not closures), so that expressions, problems and results
# pickle: ``recipe(rebind)`` rebuilds the expression on the data ``rebind`` maps its subsets to.
class _AtomRecipe:
    """Rebuild a named rate from its builder on rebound subsets."""

    def __init__(self, name: str, builder: Callable[..., tuple[dict, float]],
                 subsets: tuple[Subset, ...]) -> None:
        self.name, self.builder, self.subsets = name, builder, subsets

    def __call__(self, rebind: Rebind) -> RateExpr:
        """The rate on the rebound subsets, each checked to have examples as the rate's
        constructor checked it (a rate is an average: on other data a group or label may be
        missing, and an average over no examples has no value)."""
        subsets = [rebind(s).require_nonempty(self.name) for s in self.subsets]
        return rate_atom(self.name, self.builder, *subsets)


class _Shifted:
    """``expr + c`` on rebound data."""

    def __init__(self, expr: RateExpr, c: float) -> None:
        self.expr, self.c = expr, c

    def __call__(self, rebind: Rebind) -> RateExpr:
        return self.expr.rebind(rebind) + self.c


class _Combined:
    """``a + b`` (``scale`` 1) or ``a - b`` (``scale`` -1) on rebound data, named as written."""

    def __init__(self, a: RateExpr, b: RateExpr, scale: float) -> None:
        self.a, self.b, self.scale = a, b, scale

    def __call__(self, rebind: Rebind) -> RateExpr:
        return self.a.rebind(rebind)._combine(self.b.rebind(rebind), self.scale, "add")


class _Scaled:
    """``f * expr`` on rebound data."""

    def __init__(self, expr: RateExpr, f: float) -> None:
        self.expr, self.f = expr, f

    def __call__(self, rebind: Rebind) -> RateExpr:
        return self.expr.rebind(rebind) * self.f


def rate_atom(
    name: str, builder: Callable[..., tuple[dict, float]], *subsets: Subset
) -> RateExpr:
    """A named rate built by ``builder(*subsets) -> (terms, constant)``; rebinds by rebuilding.

    ``builder`` must be a module-level function (or a ``functools.partial`` of one) for the
    expression to pickle.
    """
    terms, constant = builder(*subsets)
    label = f"{name}({', '.join(s.name for s in subsets)})"
    return RateExpr(terms, constant, label, _AtomRecipe(name, builder, subsets))


# ---------------------------------------------------------------------------- ratios
#: ratio metrics whose numerator counts a part of what the denominator counts: values in [0, 1]
FRACTION_RATIOS = ("precision", "f1_score", "win_change_ratio")


class RatioExpr(Term):
    """A ratio numerator / denominator of rate expressions (App. B), usable only in
    constraints against a constant, which are multiplied through by the denominator."""

    curvature = "ratio"
    kind = "ratio"
    under_score_scale = "ramp"
    combinable = False

    def __init__(
        self,
        numerator: RateExpr,
        denominator: RateExpr,
        name: str,
        recipe: Callable[[Rebind], RatioExpr] | None = None,
    ) -> None:
        self.numerator = numerator
        self.denominator = denominator
        self.name = name
        self._recipe = recipe

    def _compare(self, sense: str, other: Any) -> Constraint:
        if not is_number(other):
            raise NotLinearError(
                f"a ratio metric ({self.name}) can only be compared with a constant; got "
                f"{type(other).__name__}."
            )
        k = float(other)
        if not np.isfinite(k):
            raise SpecError(f"constraint bound must be finite; got {other!r} for {self.name}.")
        upper = 1.0 if self.metric in FRACTION_RATIOS else np.inf
        if (sense == ">=" and k > upper) or (sense == "<=" and k < 0.0):
            raise InfeasibleError(
                f"constraint '{self.name} {sense} {fmt(k)}' can never hold: {self.name} takes "
                f"values in [0, {fmt(upper)}]. Check the target."
            )
        expr = self.numerator - k * self.denominator
        expr.name = f"{self.numerator.name} - {fmt(k)}*({self.denominator.name})"
        return Constraint(expr, sense, 0.0, ratio=self, target=k)

    @property
    def metric(self) -> str:
        """The named metric (e.g. "precision"), or "" for a ratio built by hand."""
        return self._recipe.metric if self._recipe is not None else ""

    def __le__(self, other: Any) -> Constraint:
        return self._compare("<=", other)

    def __ge__(self, other: Any) -> Constraint:
        return self._compare(">=", other)

    def __eq__(self, other: Any) -> list[Constraint]:  # type: ignore[override]
        return [self._compare("<=", other), self._compare(">=", other)]

    __hash__ = None  # type: ignore[assignment]

    def refuse_combination(self, *_: Any) -> None:
        raise NotLinearError(
            f"{self.name} is a ratio metric: it cannot be combined arithmetically or be an "
            "objective (App. B). Optimize a linear rate and use the ratio in a constraint "
            f"against a constant, e.g. {self.name} >= 0.9."
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __neg__ = refuse_combination
    __truediv__ = refuse_combination

    def __bool__(self) -> bool:
        raise SpecError(f"a ratio metric ({self.name}) has no truth value.")

    @property
    def datasets(self) -> list[Dataset]:
        """The datasets of the numerator and the denominator, each once."""
        found = self.numerator.datasets + self.denominator.datasets
        return list({id(d): d for d in found}.values())

    def rebind(self, rebind: Rebind) -> RatioExpr:
        if self._recipe is not None:
            return self._recipe(rebind)
        return RatioExpr(self.numerator.rebind(rebind), self.denominator.rebind(rebind), self.name)

    def value(self, scorer: Any, kind: str = "indicator") -> float:
        den = self.denominator.value(scorer, kind)
        return float("nan") if den == 0 else self.numerator.value(scorer, kind) / den

    def surrogate_value(self, scorer: Any) -> float:
        """The ratio of the ramp values (eq. 3) of numerator and denominator."""
        return self.value(scorer, "ramp")

    def evaluate(self, scorer: Any, kind: str, coef: float = 1.0) -> float:
        return self.value(scorer, "indicator" if kind == "exact" else "ramp")

    def __repr__(self) -> str:
        return f"RatioExpr({self.name})"


def ratio_metric(metric: str, build: Callable[..., tuple[RateExpr, RateExpr]],
                 *args: Any) -> RatioExpr:
    """A named ratio metric over subsets, rebuilt from its definition on other data."""
    subsets = tuple(as_subset(a, metric) for a in args)
    numerator, denominator = build(*subsets)
    name = f"{metric}({', '.join(s.name for s in subsets)})"
    return RatioExpr(numerator, denominator, name, _RatioRecipe(metric, build, subsets))


class _RatioRecipe:
    """Rebuild a named ratio metric from its definition on rebound subsets (picklable)."""

    def __init__(self, metric: str, build: Callable[..., tuple[RateExpr, RateExpr]],
                 subsets: tuple[Subset, ...]) -> None:
        self.metric, self.build, self.subsets = metric, build, subsets

    def __call__(self, rebind: Rebind) -> RatioExpr:
        return ratio_metric(self.metric, self.build, *(rebind(s) for s in self.subsets))


def _weight_unit(weights: np.ndarray) -> float | None:
    """The largest g of which every weight is an integer multiple, for weights that are all
    equal or all integers (their greatest common divisor); None for other weights."""
    positive = weights[weights > 0]
    if positive.size == 0:
        return None
    if np.all(positive == positive[0]):
        return float(positive[0])
    if np.all(positive == np.round(positive)) and positive.max() < 2.0 ** 53:
        return float(np.gcd.reduce(positive.astype(np.int64)))
    return None
