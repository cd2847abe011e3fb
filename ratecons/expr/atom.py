"""The one expression algebra: terms over the one score model, their sums, and constraints.

Every quantity a user writes is a function of the score vector s = f(X) of one shared score
model (``f(x) = <w, psi(x)> - b``), and every one is a :class:`Term` -- rates and ratios
(:mod:`ratecons.expr.rate`), TPR at the top (:mod:`ratecons.ranking`), robust losses
(:mod:`ratecons.phi_divergence`), worst-case rates (:mod:`ratecons.expr.robust`), plain losses
(:mod:`ratecons.expr.mean_loss`), minimax risk (:mod:`ratecons.moments`). A term states

- its exact value for a fitted scorer and its surrogate value (:meth:`Term.evaluate`: what
  reports show and what the optimizer sees),
- its curvature (``"convex"``, ``"concave"``, ``"rate"`` for the ramps that are majorized at an
  anchor, ``"ratio"`` for ratios, which are only compared with constants),
- the datasets whose rows it scores, and how to rebuild it on other data (:meth:`Term.rebind`).

Terms combine with ``+``, ``-`` and scalar ``*`` into a :class:`Sum` (rates in one sum merge
into one linear rate expression, the TFCO lesson); comparing a term or a sum with a number or
another expression gives a :class:`Constraint`, the one constraint class. Whether a
composition may be minimized, maximized or bounded is checked once, by
:mod:`ratecons.expr.analysis`, before anything is solved. How each lowering (CVXPY, the matrix
LP/QP, the structured step solver) treats a term is a table entry in that lowering, keyed by the
term's type. This module never imports a solver.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import CurvatureError, InfeasibleError, NotLinearError, SpecError

__all__ = ["Composable", "Term", "Sum", "Constraint", "as_sum", "is_number", "fmt", "label_of"]


def is_number(x: Any) -> bool:
    """A finite-or-not real scalar that is not a bool."""
    return isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, bool)


def fmt(c: float) -> str:
    return f"{c:.6g}"


class Composable:
    """Arithmetic and comparisons shared by terms and sums (they build :class:`Sum` and
    :class:`Constraint` objects; nothing is evaluated)."""

    __array_priority__ = 100  # keep NumPy scalars from broadcasting over us
    #: a linear rate expression: merges with the other rates of a sum (TFCO's lesson)
    mergeable = False
    #: a function of the scores s = f(X) of the one score model (every term but minimax risk,
    #: a model of its own): only such expressions take a ``model=``, constraints and the
    #: composition analysis (:meth:`Term.refuse_composition` says why the others do not)
    scores_model = True

    def __add__(self, other: Any) -> Sum:
        return as_sum(self)._plus(other, 1.0)

    def __radd__(self, other: Any) -> Sum:
        return as_sum(self)._plus(other, 1.0)

    def __sub__(self, other: Any) -> Sum:
        return as_sum(self)._plus(other, -1.0)

    def __rsub__(self, other: Any) -> Sum:
        return as_sum(self).scaled(-1.0)._plus(other, 1.0)

    def __mul__(self, factor: Any) -> Sum:
        if not is_number(factor) or not np.isfinite(float(factor)):
            raise NotLinearError(
                f"{as_sum(self).name} can be scaled by finite numbers only; got "
                f"{getattr(factor, 'name', None) or repr(factor)}. Products of two terms are "
                "not supported."
            )
        return as_sum(self).scaled(float(factor))

    __rmul__ = __mul__

    def __truediv__(self, divisor: Any) -> Sum:
        if not is_number(divisor) or float(divisor) == 0.0:
            raise NotLinearError(
                f"{as_sum(self).name} can be divided by nonzero numbers only; got {divisor!r}."
            )
        return self * (1.0 / float(divisor))

    def __neg__(self) -> Sum:
        return as_sum(self).scaled(-1.0)

    def __le__(self, other: Any) -> Constraint:
        return Constraint.build(self, "<=", other)

    def __ge__(self, other: Any) -> Constraint:
        return Constraint.build(self, ">=", other)

    def __lt__(self, other: Any) -> Constraint:
        raise SpecError(
            f"strict inequality on {as_sum(self).name}: rates and losses are bounded with "
            "'<=' and '>=' (the optimum of a strict inequality need not exist). Write <= instead."
        )

    def __gt__(self, other: Any) -> Constraint:
        raise SpecError(
            f"strict inequality on {as_sum(self).name}: rates and losses are bounded with "
            "'<=' and '>=' (the optimum of a strict inequality need not exist). Write >= instead."
        )

    def __bool__(self) -> bool:
        raise SpecError(
            f"{as_sum(self).name} has no truth value; comparisons build constraints for "
            "rc.Problem(subject_to=[...]). Chained comparisons (a <= x <= b) are not supported: "
            "write two constraints."
        )


class Term(Composable):
    """Base class of every atom over the score model (see the module docstring).

    Subclasses set :attr:`curvature` and :attr:`kind` and implement ``name``,
    :attr:`datasets`, :meth:`value`, :meth:`surrogate_value` and :meth:`rebind`.
    """

    #: "convex", "concave", "rate" (a ramp, majorized at an anchor) or "ratio"
    curvature: str = "convex"
    #: the sense that makes sense for it, used in error messages ("minimized", "maximized")
    kind: str = "term"
    #: whether it may be added, scaled and compared with other expressions (a ratio and
    #: minimax risk may not: :meth:`refuse_combination` says why)
    combinable: bool = True
    #: the term as the user wrote it: set by every subclass (an attribute or a property)
    name: str
    #: how the term meets a model scaled with its ramp's width (f -> s f, width -> s width;
    #: :mod:`ratecons.reductions.score_scale`): "ramp" (its exact value and its surrogate, the
    #: ramp of eq. 2 alone, are unchanged: rates, ratios, worst-case rates), "loss" (a margin
    #: loss that takes a score scale: ``scaled(t)``), or None (neither: a surrogate with a
    #: margin of its own, such as a ranking's hinge)
    under_score_scale: str | None = None

    @property
    def label(self) -> str:
        """The term as the user wrote it (error messages and reports)."""
        return self.name

    @property
    def datasets(self) -> list[Any]:  # pragma: no cover - abstract
        """Every Dataset whose rows the term scores (the kernel expansion uses them all)."""
        raise NotImplementedError

    @property
    def range(self) -> tuple[float, float]:
        """An interval containing every value the term can take (unbounded unless known)."""
        return -np.inf, np.inf

    def value(self, scorer: Any) -> float:  # pragma: no cover - abstract
        """The exact value for a fitted scorer (indicator rates, exact thresholds)."""
        raise NotImplementedError

    def surrogate_value(self, scorer: Any) -> float:  # pragma: no cover - abstract
        """The value of the convex (or concave) surrogate the optimizer works with."""
        raise NotImplementedError

    def evaluate(self, scorer: Any, kind: str, coef: float = 1.0) -> float:
        """The exact (``kind="exact"``) or surrogate value of the term where it enters a
        canonical row with coefficient ``coef`` (a worst case takes the reweighting that hurts
        that row, so the sign of ``coef`` matters to it)."""
        return self.value(scorer) if kind == "exact" else self.surrogate_value(scorer)

    def rebind(self, rebind: Callable[[Any], Any]) -> Term:  # pragma: no cover - abstract
        """The same definition on other data (``rebind`` maps each training subset)."""
        raise NotImplementedError

    @property
    def reweighted_indicators(self) -> tuple[Any, np.ndarray] | None:
        """For a term whose indicators 1(f(x) > 0) are reweighted example by example (a
        worst-case rate, :mod:`ratecons.expr.robust`): the subset of examples and each one's
        indicator coefficient; None for the others (a rate expression gives its indicators
        by ``terms``)."""
        return None

    def refuse_combination(self) -> None:
        """Raise the error that says why this term cannot be combined (``combinable`` False)."""
        raise NotLinearError(f"{self.label} cannot be added to, scaled or compared with other "
                             "expressions.")

    def refuse_composition(self, what: str) -> None:
        """Raise the :class:`~ratecons.errors.CurvatureError` that says why a term that is not
        over the score model (``scores_model`` False) cannot take ``what`` (constraints or a
        ``model=``)."""
        raise CurvatureError(
            f"{self.label} cannot take {what}: it is not a score model (it is a model of its "
            "own, with its own classifier), so it composes with no other term. Minimize it "
            "alone: drop model= and subject_to=; what it must satisfy goes into its own "
            "definition (for minimax risk, the expectation constraints of rc.MomentSet(...)).")

    __hash__ = object.__hash__


class Sum(Composable):
    """``constant + sum_k coef_k * part_k`` with parts that are terms or rate expressions.

    Rate expressions in one sum are added into one linear rate expression (terms over the same
    subset merge), so a sum holds at most one rate part.
    """

    def __init__(self, parts: list[tuple[float, Any]], constant: float = 0.0,
                 name: str | None = None) -> None:
        self.parts = [(float(c), p) for c, p in parts if c != 0.0]
        self.constant = float(constant)
        self._name = name

    @property
    def name(self) -> str:
        if self._name is not None:
            return self._name
        text = ""
        for coef, part in self.parts:
            label = label_of(part)
            if coef == 1.0:
                piece = label
            elif coef == -1.0:
                piece = f"-{label}"
            else:
                piece = f"{fmt(coef)}*{label}"
            text = piece if not text else (
                f"{text} - {piece[1:]}" if piece.startswith("-") else f"{text} + {piece}")
        if self.constant:
            sign = "+" if self.constant > 0 else "-"
            text = f"{text} {sign} {fmt(abs(self.constant))}" if text else fmt(self.constant)
        return text or "0"

    def scaled(self, factor: float) -> Sum:
        return Sum([(factor * c, p) for c, p in self.parts], factor * self.constant)

    def _plus(self, other: Any, scale: float) -> Sum:
        if is_number(other):
            return Sum(self.parts, self.constant + scale * float(other))
        if not isinstance(other, Composable):
            raise NotLinearError(f"cannot add {self.name} and a {type(other).__name__}.")
        rhs = as_sum(other)
        parts = _merge_rates(list(self.parts) + [(scale * c, p) for c, p in rhs.parts])
        return Sum(parts, self.constant + scale * rhs.constant)

    def __repr__(self) -> str:
        return f"Sum({self.name})"

    def rebind(self, rebind: Callable[[Any], Any]) -> Sum:
        """The same sum on other data (its name is rebuilt from the rebound parts)."""
        return Sum([(c, p.rebind(rebind)) for c, p in self.parts], self.constant)

    @property
    def range(self) -> tuple[float, float]:
        """An interval containing every value (from the parts' ranges)."""
        lo = hi = self.constant
        for coef, part in self.parts:
            a, b = (coef * r for r in part.range)
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi


def label_of(part: Any) -> str:
    """A part of a sum as the user wrote it (terms have ``label``, rates ``name``)."""
    return getattr(part, "label", None) or part.name


def _merge_rates(parts: list[tuple[float, Any]]) -> list[tuple[float, Any]]:
    """Add every rate part into one rate expression, placed first (the TFCO lesson: terms over
    the same subset merge before a surrogate is applied)."""
    rate = None
    others: list[tuple[float, Any]] = []
    for coef, part in parts:
        if part.mergeable:
            scaled = part if coef == 1.0 else coef * part
            rate = scaled if rate is None else rate + scaled
        else:
            others.append((coef, part))
    return ([(1.0, rate)] if rate is not None else []) + others


def as_sum(x: Any) -> Sum:
    """Wrap a term as a one-part sum (a Sum is returned as it is)."""
    if isinstance(x, Sum):
        return x
    if isinstance(x, Term):
        if not x.combinable:
            x.refuse_combination()
        return Sum([(1.0, x)], 0.0, name=x.label)
    raise NotLinearError(
        f"a {type(x).__name__} is not an expression over the score model; build expressions "
        "from rates (rc.error_rate(D), ...), rc.tpr_at_top, rc.robust_loss, rc.mean_loss and "
        "rc.worst_case."
    )


class Constraint:
    """``expr <sense> bound`` with sense "<=" or ">=": the one constraint class.

    ``expr`` is a linear rate expression (:class:`~ratecons.expr.rate.RateExpr`) when the
    constraint is on rates alone, else a :class:`Sum`. ``ratio`` and ``target`` are set when the
    constraint came from a ratio metric, so reports can show the ratio itself next to its
    multiplied-through form; ``lhs`` and ``rhs`` are kept when two expressions were compared, so
    the constraint reads as written (and is rebuilt on other data by :meth:`rebind`). A bound
    outside the range of ``expr`` is an :class:`~ratecons.errors.InfeasibleError` at once.
    """

    def __init__(self, expr: Composable, sense: str, bound: float, prefix: str = "",
                 ratio: Term | None = None, target: float | None = None,
                 lhs: Composable | None = None, rhs: Composable | None = None) -> None:
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
            span = (f"at most {fmt(hi)}" if lo == -np.inf else f"at least {fmt(lo)}"
                    if hi == np.inf else f"in [{fmt(lo)}, {fmt(hi)}]")
            raise InfeasibleError(
                f"constraint '{self.name}' can never hold: {expr.name} takes values {span}. "
                "Check the target (rates lie in [0, 1]; losses are >= 0)."
            )

    @classmethod
    def build(cls, expr: Composable, sense: str, other: Any) -> Constraint:
        """``expr <sense> other`` for a number or another expression (``expr - other`` is then
        bounded by 0, named as written)."""
        if not expr.mergeable:
            expr = as_sum(expr)
        if is_number(other):
            return cls(expr, sense, float(other))
        if isinstance(other, Term) and not other.combinable:
            raise NotLinearError(
                f"cannot compare {expr.name} with {other.name}; compare ratios with constants "
                "only.")
        if not isinstance(other, Composable):
            raise SpecError(f"cannot compare {expr.name} with a {type(other).__name__}.")
        if not (expr.mergeable and other.mergeable):
            other = as_sum(other)
        return cls(expr - other, sense, 0.0, lhs=expr, rhs=other)

    @property
    def rates_only(self) -> bool:
        """Whether the constraint bounds a linear rate expression alone (Problem 1's rows)."""
        return self.expr.mergeable

    @property
    def name(self) -> str:
        if self.ratio is not None:
            text = f"{self.ratio.name} {self.sense} {fmt(self.target)}"
        elif self.lhs is not None and self.rhs is not None:
            text = f"{self.lhs.name} {self.sense} {self.rhs.name}"
        else:
            text = f"{self.expr.name} {self.sense} {fmt(self.bound)}"
        return self.prefix + text

    def slack(self, value: float) -> float:
        """Positive when satisfied: bound - value for <=, value - bound for >=."""
        return self.bound - value if self.sense == "<=" else value - self.bound

    def rebind(self, rebind: Callable[[Any], Any]) -> Constraint:
        """The same constraint on other data."""
        again = [None if x is None else x.rebind(rebind)
                 for x in (self.ratio, self.lhs, self.rhs)]
        return Constraint(self.expr.rebind(rebind), self.sense, self.bound, self.prefix,
                          again[0], self.target, again[1], again[2])

    def __bool__(self) -> bool:
        raise SpecError(
            f"the constraint '{self.name}' has no truth value. Chained comparisons "
            "(a <= x <= b) are not supported: write two constraints."
        )

    def __repr__(self) -> str:
        return f"Constraint({self.name})"
