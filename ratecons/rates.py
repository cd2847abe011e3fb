"""Rates over datasets, their linear combinations, ratio metrics, and constraints.

Everything here is a linear combination of the positive prediction rate

    s_p(D; w, b) = sum_{x in D} weight_x 1(<w, x> - b > 0)     (Goh et al. 2016, eq. 1)

on subsets D (weights 1/|D| for unweighted data), plus a constant; the negative rate is
s_n(D) = 1 - s_p(D). Table 2 and Table 4 of the paper list how coverage, TPR, error rate,
churn, wins, fairness and the rest are written this way; the helpers below build them.

Each expression keeps two things (the TFCO lesson): its linear form (terms over the same subset
merge, which gives tighter relaxations) and a *recipe* that rebuilds it on other data, so a rate
defined on the training set is reported on a held-out set with that set's own proportions.

Ratio metrics (precision, F1, win/loss, win/change, rate ratios such as the 80% rule) are not
linear. They may only be compared with a constant, and the comparison is multiplied through by
the (nonnegative) denominator, as in Appendix B: ``precision(D) >= 0.9`` becomes
``#TP - 0.9 (#TP + #FP) >= 0``. Caveat (App. B): under the ramp relaxation / randomized rule this
constrains the ratio of expectations, not the expectation of the ratio, and when the denominator
is zero the multiplied-through constraint holds trivially.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .data import Dataset, Subset, as_subset
from .errors import InfeasibleError, NotLinearError, SpecError
from .expr.atom import Composable, TermConstraint, as_sum

__all__ = [
    "RateExpr", "RatioExpr", "Constraint", "rate_atom",
    "positive_rate", "negative_rate", "coverage", "true_positive_rate", "recall",
    "false_positive_rate", "true_negative_rate", "false_negative_rate", "error_rate", "accuracy",
    "true_positives", "false_positives", "true_negatives", "false_negatives", "errors",
    "churn_rate", "changes", "wins", "losses", "precision", "f1_score", "win_loss_ratio",
    "win_change_ratio", "positive_rate_ratio", "demographic_parity", "demographic_parity_ratio",
    "equal_opportunity", "equal_opportunity_ratio", "equalized_odds", "egregious_examples",
]

Rebind = Callable[[Subset], Subset]
_SCALAR = (numbers.Real, np.floating, np.integer)


def _is_scalar(x: Any) -> bool:
    return isinstance(x, _SCALAR) and not isinstance(x, bool)


def _fmt(c: float) -> str:
    return f"{c:.6g}"


class RateExpr:
    """A linear combination ``constant + sum_D coef_D * s_p(D)`` of positive rates.

    Build them with the rate helpers (``rc.positive_rate(D)``, ``rc.error_rate(D)``, ...) and
    combine with ``+``, ``-``, scalar ``*`` and ``/``. Comparisons with numbers or other rate
    expressions (``<=``, ``>=``, ``==``) give :class:`Constraint` objects.
    """

    __array_priority__ = 100  # keep NumPy scalars from broadcasting over us

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
        if _is_scalar(other):
            c = float(other) * scale
            sign = "+" if c >= 0 else "-"
            return RateExpr(self.terms, self.constant + c, f"{self.name} {sign} {_fmt(abs(c))}",
                            _Shifted(self, c), self.atoms)
        if isinstance(other, Composable):  # a term or a sum of terms: the compiler's algebra
            return as_sum(self)._plus(other, scale)
        if not isinstance(other, RateExpr):
            raise NotLinearError(f"cannot {op} a rate expression and a {type(other).__name__}.")
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

    def __lt__(self, other: Any) -> Constraint:
        raise SpecError(
            f"strict inequality on {self.name}: rates are bounded with '<=' and '>=' (a strict "
            "bound on an average of indicators is a non-strict one on a shifted target). "
            "Write <= instead.")

    def __gt__(self, other: Any) -> Constraint:
        raise SpecError(
            f"strict inequality on {self.name}: rates are bounded with '<=' and '>=' (a strict "
            "bound on an average of indicators is a non-strict one on a shifted target). "
            "Write >= instead.")

    def __mul__(self, factor: Any) -> RateExpr:
        if isinstance(factor, (RateExpr, RatioExpr)):
            raise NotLinearError(
                f"cannot multiply two rate expressions ({self.name} and {factor.name}): only "
                "linear combinations of rates are supported."
            )
        if not _is_scalar(factor) or not np.isfinite(float(factor)):
            raise NotLinearError(f"rates can be scaled by finite numbers only; got {factor!r}.")
        f = float(factor)
        terms = {k: (s, f * c) for k, (s, c) in self.terms.items()}
        return RateExpr(terms, f * self.constant, f"{_fmt(f)}*({self.name})",
                        _Scaled(self, f), self.atoms)

    __rmul__ = __mul__

    def __truediv__(self, divisor: Any) -> RateExpr:
        if isinstance(divisor, RateExpr):
            raise NotLinearError(
                f"{self.name} / {divisor.name} is a ratio, not a rate: use "
                "rc.positive_rate_ratio / rc.precision / ... and compare it with a constant."
            )
        if not _is_scalar(divisor) or float(divisor) == 0.0:
            raise NotLinearError(f"rates can be divided by nonzero numbers only; got {divisor!r}.")
        return self * (1.0 / float(divisor))

    def __neg__(self) -> RateExpr:
        return self * -1.0

    # ---------------------------------------------------------------- comparisons
    def __le__(self, other: Any) -> Constraint:
        return Constraint.build(self, "<=", other)

    def __ge__(self, other: Any) -> Constraint:
        return Constraint.build(self, ">=", other)

    def __eq__(self, other: Any) -> list[Constraint]:  # type: ignore[override]
        return [Constraint.build(self, "<=", other), Constraint.build(self, ">=", other)]

    __hash__ = None  # type: ignore[assignment]

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
                scores[key] = scorer.decision_function(subset.data.X)
            z = scores[key][subset.index]
            v = (z > 0).astype(np.float64) if kind == "indicator" else np.clip(0.5 + z, 0, 1)
            total += coef * float(subset.weights @ v)
        return total

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
        return rate_atom(self.name, self.builder, *(rebind(s) for s in self.subsets))


class _Shifted:
    """``expr + c`` on rebound data."""

    def __init__(self, expr: RateExpr, c: float) -> None:
        self.expr, self.c = expr, c

    def __call__(self, rebind: Rebind) -> RateExpr:
        return self.expr.rebind(rebind) + self.c


class _Combined:
    """``a + scale * b`` on rebound data."""

    def __init__(self, a: RateExpr, b: RateExpr, scale: float) -> None:
        self.a, self.b, self.scale = a, b, scale

    def __call__(self, rebind: Rebind) -> RateExpr:
        return self.a.rebind(rebind) + self.scale * self.b.rebind(rebind)


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


def _sp(subset: Subset, coef: float = 1.0) -> dict:
    return {subset.key: (subset, coef)}


def _merge(*parts: dict) -> dict:
    out: dict = {}
    for part in parts:
        for key, (subset, coef) in part.items():
            out[key] = (subset, out.get(key, (subset, 0.0))[1] + coef)
    return out


def _sp_terms(s: Subset, coef: float, const: float) -> tuple[dict, float]:
    """coef * s_p(s) + const."""
    return _sp(s, coef), const


_POSITIVE = partial(_sp_terms, coef=1.0, const=0.0)


def _nonempty_sp(subset: Subset, coef: float) -> dict:
    """Term coef * s_p(subset), dropped when the subset is empty (its count weight is zero)."""
    return _sp(subset, coef) if subset.n else {}


# ---------------------------------------------------------------------------- basic rates
def _labelled(data: Dataset | Subset, what: str) -> Subset:
    subset = as_subset(data, what)
    subset.data.require_labels(what, binary=True)
    return subset.require_nonempty(what)


def positive_rate(data: Dataset | Subset) -> RateExpr:
    """s_p(D): fraction of D predicted positive (coverage). Needs no labels."""
    subset = as_subset(data, "positive_rate").require_nonempty("positive_rate")
    return rate_atom("positive_rate", _POSITIVE, subset)


def negative_rate(data: Dataset | Subset) -> RateExpr:
    """s_n(D) = 1 - s_p(D): fraction of D predicted negative. Needs no labels."""
    subset = as_subset(data, "negative_rate").require_nonempty("negative_rate")
    return rate_atom("negative_rate", partial(_sp_terms, coef=-1.0, const=1.0), subset)


coverage = positive_rate


def _on_class(name: str, label: int, negative: bool):
    def rate(data: Dataset | Subset) -> RateExpr:
        subset = _labelled(data, name)
        part = subset.positives if label == 1 else subset.negatives
        part.require_nonempty(f"{name} (over the {'positive' if label else 'negative'} examples)")
        coef, const = (-1.0, 1.0) if negative else (1.0, 0.0)
        return rate_atom(name, partial(_sp_terms, coef=coef, const=const), part)

    return rate


true_positive_rate = _on_class("true_positive_rate", 1, negative=False)
true_positive_rate.__doc__ = "TPR = s_p(D^+) (= recall). Needs binary labels."
false_negative_rate = _on_class("false_negative_rate", 1, negative=True)
false_negative_rate.__doc__ = "FNR = s_n(D^+). Needs binary labels."
false_positive_rate = _on_class("false_positive_rate", 0, negative=False)
false_positive_rate.__doc__ = "FPR = s_p(D^-). Needs binary labels."
true_negative_rate = _on_class("true_negative_rate", 0, negative=True)
true_negative_rate.__doc__ = "TNR = s_n(D^-). Needs binary labels."


def recall(data: Dataset | Subset) -> RateExpr:
    """Recall = #TP / |D^+| = s_p(D^+) (Table 2). Needs binary labels."""
    subset = _labelled(data, "recall")
    return rate_atom("recall", _POSITIVE, subset.positives.require_nonempty("recall"))


def _error_terms(s: Subset) -> tuple[dict, float]:
    pos, neg = s.positives, s.negatives
    total = s.size
    terms = _merge(_nonempty_sp(pos, -pos.size / total), _nonempty_sp(neg, neg.size / total))
    return terms, pos.size / total


def error_rate(data: Dataset | Subset) -> RateExpr:
    """(#FP + #FN) / |D| = (|D^+| s_n(D^+) + |D^-| s_p(D^-)) / |D| (Table 2). Needs labels."""
    return rate_atom("error_rate", _error_terms, _labelled(data, "error_rate"))


def _accuracy_terms(s: Subset) -> tuple[dict, float]:
    terms, const = _error_terms(s)
    return {k: (sub, -c) for k, (sub, c) in terms.items()}, 1.0 - const


def accuracy(data: Dataset | Subset) -> RateExpr:
    """1 - error rate. Needs binary labels."""
    return rate_atom("accuracy", _accuracy_terms, _labelled(data, "accuracy"))


# ---------------------------------------------------------------------------- counts
def _count_terms(s: Subset, label: int, predicted: int) -> tuple[dict, float]:
    part = s.positives if label == 1 else s.negatives
    if part.n == 0:
        return {}, 0.0
    if predicted == 1:
        return _sp(part, part.size), 0.0
    return _sp(part, -part.size), part.size


def _count(name: str, label: int, predicted: int):
    def count(data: Dataset | Subset) -> RateExpr:
        subset = _labelled(data, name)
        return rate_atom(name, partial(_count_terms, label=label, predicted=predicted), subset)

    count.__doc__ = (
        f"#{name[:-1].replace('_', ' ')}: |D^{'+' if label else '-'}| "
        f"s_{'p' if predicted else 'n'}(D^{'+' if label else '-'}) (Table 2; total weight for "
        "weighted data). Needs binary labels."
    )
    return count


true_positives = _count("true_positives", 1, 1)
false_negatives = _count("false_negatives", 1, 0)
false_positives = _count("false_positives", 0, 1)
true_negatives = _count("true_negatives", 0, 0)


def errors(data: Dataset | Subset) -> RateExpr:
    """#Errors = #FP + #FN (Table 2). Needs binary labels."""
    subset = _labelled(data, "errors")
    return rate_atom("errors", _errors_terms, subset)


def _scaled(parts: tuple[dict, float], factor: float) -> tuple[dict, float]:
    terms, const = parts
    return {k: (s, factor * c) for k, (s, c) in terms.items()}, factor * const


def _errors_terms(s: Subset) -> tuple[dict, float]:
    return _scaled(_error_terms(s), s.size)


# ---------------------------------------------------------------------------- churn
def _changes_terms(s: Subset) -> tuple[dict, float]:
    s.data.require_baseline("churn")
    bpos, bneg = s.baseline_predicts(1), s.baseline_predicts(0)
    return _merge(_nonempty_sp(bpos, -bpos.size), _nonempty_sp(bneg, bneg.size)), bpos.size


def _churn_terms(s: Subset) -> tuple[dict, float]:
    return _scaled(_changes_terms(s), 1.0 / s.size)


def changes(data: Dataset | Subset) -> RateExpr:
    """#Changes: examples whose prediction differs from the deployed baseline's,
    |D^{.+}| s_n(D^{.+}) + |D^{.-}| s_p(D^{.-}) (Table 2, without the labels it does not need)."""
    subset = as_subset(data, "changes").require_nonempty("changes")
    subset.data.require_baseline("changes")
    return rate_atom("changes", _changes_terms, subset)


def churn_rate(data: Dataset | Subset) -> RateExpr:
    """Churn rate = #Changes / |D| against the dataset's baseline predictions. Needs no labels."""
    subset = as_subset(data, "churn_rate").require_nonempty("churn_rate")
    subset.data.require_baseline("churn_rate")
    return rate_atom("churn_rate", _churn_terms, subset)


def _win_terms(s: Subset) -> tuple[dict, float]:
    pn, np_ = s.baseline_cell(1, 0), s.baseline_cell(0, 1)
    return _merge(_nonempty_sp(pn, pn.size), _nonempty_sp(np_, -np_.size)), np_.size


def _loss_terms(s: Subset) -> tuple[dict, float]:
    pp, nn = s.baseline_cell(1, 1), s.baseline_cell(0, 0)
    return _merge(_nonempty_sp(pp, -pp.size), _nonempty_sp(nn, nn.size)), pp.size


def _baseline_labelled(data: Dataset | Subset, what: str) -> Subset:
    subset = _labelled(data, what)
    subset.data.require_baseline(what)
    return subset


def wins(data: Dataset | Subset) -> RateExpr:
    """#Wins = |D^{+-}| s_p(D^{+-}) + |D^{-+}| s_n(D^{-+}): the new model is right where the
    baseline was wrong (Table 4). Needs labels and a baseline."""
    return rate_atom("wins", _win_terms, _baseline_labelled(data, "wins"))


def losses(data: Dataset | Subset) -> RateExpr:
    """#Losses = |D^{++}| s_n(D^{++}) + |D^{--}| s_p(D^{--}): the new model is wrong where the
    baseline was right (Table 4). Needs labels and a baseline."""
    return rate_atom("losses", _loss_terms, _baseline_labelled(data, "losses"))


# ---------------------------------------------------------------------------- ratios
#: ratio metrics whose numerator counts a part of what the denominator counts: values in [0, 1]
FRACTION_RATIOS = ("precision", "f1_score", "win_change_ratio")

class RatioExpr:
    """A ratio numerator / denominator of rate expressions (App. B), usable only in
    constraints against a constant, which are multiplied through by the denominator."""

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
        if not _is_scalar(other):
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
                f"constraint '{self.name} {sense} {_fmt(k)}' can never hold: {self.name} takes "
                f"values in [0, {_fmt(upper)}]. Check the target."
            )
        expr = self.numerator - k * self.denominator
        expr.name = f"{self.numerator.name} - {_fmt(k)}*({self.denominator.name})"
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

    def _not_linear(self, *_: Any) -> None:
        raise NotLinearError(
            f"{self.name} is a ratio metric: it cannot be combined arithmetically or used as an "
            "objective (App. B). Use it in a constraint against a constant, e.g. "
            f"{self.name} >= 0.9."
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __neg__ = _not_linear

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

    def __repr__(self) -> str:
        return f"RatioExpr({self.name})"


def _ratio(metric: str, build: Callable[..., tuple[RateExpr, RateExpr]], *args: Any) -> RatioExpr:
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
        return _ratio(self.metric, self.build, *(rebind(s) for s in self.subsets))


def _precision_parts(s: Subset) -> tuple[RateExpr, RateExpr]:
    tp = true_positives(s)
    return tp, tp + false_positives(s)


def _f1_parts(s: Subset) -> tuple[RateExpr, RateExpr]:
    tp = true_positives(s)
    return 2.0 * tp, 2.0 * tp + false_negatives(s) + false_positives(s)


def _win_loss_parts(s: Subset) -> tuple[RateExpr, RateExpr]:
    return wins(s), losses(s)


def _win_change_parts(s: Subset) -> tuple[RateExpr, RateExpr]:
    return wins(s), changes(s)


def _positive_rate_parts(a: Subset, b: Subset) -> tuple[RateExpr, RateExpr]:
    return positive_rate(a), positive_rate(b)


def _tpr_parts(a: Subset, b: Subset) -> tuple[RateExpr, RateExpr]:
    return true_positive_rate(a), true_positive_rate(b)


def precision(data: Dataset | Subset) -> RatioExpr:
    """Precision = #TP / (#TP + #FP) (Table 4); constraints only, multiplied through (App. B)."""
    return _ratio("precision", _precision_parts, data)


def f1_score(data: Dataset | Subset) -> RatioExpr:
    """F1 = 2 #TP / (2 #TP + #FN + #FP) (Table 4); constraints only (App. B)."""
    return _ratio("f1_score", _f1_parts, data)


def win_loss_ratio(data: Dataset | Subset) -> RatioExpr:
    """#Wins / #Losses against the baseline (Table 4); constraints only (App. B)."""
    return _ratio("win_loss_ratio", _win_loss_parts, data)


def win_change_ratio(data: Dataset | Subset) -> RatioExpr:
    """#Wins / #Changes against the baseline (Table 4); constraints only (App. B)."""
    return _ratio("win_change_ratio", _win_change_parts, data)


def positive_rate_ratio(a: Dataset | Subset, b: Dataset | Subset) -> RatioExpr:
    """s_p(A) / s_p(B), e.g. the fairness ratio of the 80% rule: ``>= 0.8`` gives
    s_p(A) >= 0.8 s_p(B) (Table 2, fairness constraint with kappa = 0.8)."""
    return _ratio("positive_rate_ratio", _positive_rate_parts, a, b)


demographic_parity_ratio = positive_rate_ratio


def equal_opportunity_ratio(a: Dataset | Subset, b: Dataset | Subset) -> RatioExpr:
    """TPR(A) / TPR(B) (Table 2, equal opportunity with kappa)."""
    return _ratio("equal_opportunity_ratio", _tpr_parts, a, b)


def _difference_bound(name: str, diff: RateExpr, max_difference: float) -> list[Constraint]:
    c = float(max_difference)
    if not np.isfinite(c) or c < 0:
        raise SpecError(
            f"The 'max_difference' parameter of {name} must be a nonnegative float. "
            f"Got {max_difference!r} instead."
        )
    return [Constraint(diff, "<=", c, prefix=f"{name}: "),
            Constraint(diff, ">=", -c, prefix=f"{name}: ")]


def demographic_parity(
    a: Dataset | Subset, b: Dataset | Subset, max_difference: float = 0.0
) -> list[Constraint]:
    """|s_p(A) - s_p(B)| <= max_difference, as two linear constraints."""
    return _difference_bound("demographic_parity", positive_rate(a) - positive_rate(b),
                             max_difference)


def equal_opportunity(
    a: Dataset | Subset, b: Dataset | Subset, max_difference: float = 0.0
) -> list[Constraint]:
    """|TPR(A) - TPR(B)| <= max_difference (Hardt et al.'s equal opportunity)."""
    return _difference_bound("equal_opportunity",
                             true_positive_rate(a) - true_positive_rate(b), max_difference)


def equalized_odds(
    a: Dataset | Subset, b: Dataset | Subset, max_difference: float = 0.0
) -> list[Constraint]:
    """|TPR(A) - TPR(B)| <= c and |FPR(A) - FPR(B)| <= c (equalized odds)."""
    return equal_opportunity(a, b, max_difference) + _difference_bound(
        "equalized_odds", false_positive_rate(a) - false_positive_rate(b), max_difference
    )


def egregious_examples(data: Dataset | Subset, min_accuracy: float = 1.0) -> Constraint:
    """At least ``min_accuracy`` of a set of egregious examples is classified correctly
    (Table 2: s_p(D^+) >= kappa on positive ones, s_n(D^-) >= kappa on negative ones). Use with
    care: such constraints easily make a problem infeasible."""
    k = float(min_accuracy)
    if not 0.0 <= k <= 1.0:
        raise SpecError(
            "The 'min_accuracy' parameter of egregious_examples must be in [0, 1]. "
            f"Got {min_accuracy!r} instead."
        )
    return Constraint(accuracy(data), ">=", k, prefix="egregious examples: ")


# ---------------------------------------------------------------------------- constraints
class Constraint:
    """``expr <sense> bound`` with sense "<=" or ">=" (from comparing rate expressions).

    ``ratio`` and ``target`` are set when the constraint came from a ratio metric, so reports
    can show the ratio itself next to its multiplied-through form. ``rhs`` is kept when a rate
    was compared with another rate, so the constraint reads as written (and is rebuilt on other
    data by :meth:`rebind`).
    """

    def __init__(
        self,
        expr: RateExpr,
        sense: str,
        bound: float,
        prefix: str = "",
        ratio: RatioExpr | None = None,
        target: float | None = None,
        lhs: RateExpr | None = None,
        rhs: RateExpr | None = None,
    ) -> None:
        if sense not in ("<=", ">="):
            raise SpecError(f"constraint sense must be '<=' or '>='; got {sense!r}.")
        if not np.isfinite(bound):
            raise SpecError(f"constraint bound must be finite; got {bound!r}.")
        self.expr, self.sense, self.bound = expr, sense, float(bound)
        self.prefix, self.ratio, self.target = prefix, ratio, target
        self.lhs, self.rhs = lhs, rhs
        lo, hi = expr.range
        tol = 1e-12
        if (sense == "<=" and self.bound < lo - tol) or (sense == ">=" and self.bound > hi + tol):
            raise InfeasibleError(
                f"constraint '{self.name}' can never hold: {expr.name} takes values in "
                f"[{_fmt(lo)}, {_fmt(hi)}]. Check the target (rates lie in [0, 1])."
            )

    @property
    def name(self) -> str:
        if self.ratio is not None:
            text = f"{self.ratio.name} {self.sense} {_fmt(self.target)}"
        elif self.lhs is not None and self.rhs is not None:
            text = f"{self.lhs.name} {self.sense} {self.rhs.name}"
        else:
            text = f"{self.expr.name} {self.sense} {_fmt(self.bound)}"
        return self.prefix + text

    @classmethod
    def build(cls, expr: RateExpr, sense: str, other: Any) -> Constraint | TermConstraint:
        if _is_scalar(other):
            return cls(expr, sense, float(other))
        if isinstance(other, Composable):
            return TermConstraint.build(as_sum(expr), sense, other)
        if isinstance(other, RateExpr):
            return cls(expr - other, sense, 0.0, rhs=other, lhs=expr)
        if isinstance(other, RatioExpr):
            raise NotLinearError(
                f"cannot compare {expr.name} with the ratio {other.name}; compare ratios with "
                "constants only."
            )
        raise SpecError(f"cannot compare a rate expression with {type(other).__name__}.")

    def __bool__(self) -> bool:
        raise SpecError(
            f"the constraint '{self.name}' has no truth value. Chained comparisons "
            "(a <= rate <= b) are not supported: write two constraints."
        )

    def rebind(self, rebind: Rebind) -> Constraint:
        ratio = None if self.ratio is None else self.ratio.rebind(rebind)
        lhs = None if self.lhs is None else self.lhs.rebind(rebind)
        rhs = None if self.rhs is None else self.rhs.rebind(rebind)
        return Constraint(self.expr.rebind(rebind), self.sense, self.bound, self.prefix, ratio,
                          self.target, lhs, rhs)

    def slack(self, value: float) -> float:
        """Positive when satisfied: bound - value for <=, value - bound for >=."""
        return self.bound - value if self.sense == "<=" else value - self.bound

    def __repr__(self) -> str:
        return f"Constraint({self.name})"
