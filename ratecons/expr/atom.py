"""Terms over the one score model, their sums, and constraints on them.

Every quantity a user writes is a function of the score vector s = f(X) of one shared score
model (``f(x) = <w, psi(x)> - b``). Rates (:class:`ratecons.rates.RateExpr`) are their own
linear algebra (terms over the same subset merge, the TFCO lesson); every other atom -- TPR at
the top, robust losses, worst-case rates, plain losses -- is a :class:`Term` that states

- its exact value for a fitted scorer (:meth:`Term.value`, what reports show),
- its surrogate value (:meth:`Term.surrogate_value`, what the optimizer sees), and
- its curvature (``"convex"`` or ``"concave"`` in the model parameters, through its surrogate).

Terms and rates combine with ``+``, ``-`` and scalar ``*`` into a :class:`Sum`; comparing a sum
or a term with a number gives a :class:`TermConstraint`. Whether a composition may be minimized,
maximized or bounded is checked once, by :mod:`ratecons.expr.analysis`, before anything is
solved. This module never imports a solver.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import NotLinearError, SpecError

__all__ = ["Composable", "Term", "Sum", "TermConstraint", "as_sum", "is_number", "fmt", "label_of"]

CURVATURES = ("convex", "concave")


def is_number(x: Any) -> bool:
    """A finite-or-not real scalar that is not a bool."""
    return isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, bool)


def fmt(c: float) -> str:
    return f"{c:.6g}"


class Composable:
    """Arithmetic and comparisons shared by terms and sums (they build :class:`Sum` and
    :class:`TermConstraint` objects; nothing is evaluated)."""

    __array_priority__ = 100  # keep NumPy scalars from broadcasting over us

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
                f"{factor!r}. Products of two terms are not supported."
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

    def __le__(self, other: Any) -> TermConstraint:
        return TermConstraint.build(as_sum(self), "<=", other)

    def __ge__(self, other: Any) -> TermConstraint:
        return TermConstraint.build(as_sum(self), ">=", other)

    def __lt__(self, other: Any) -> TermConstraint:
        raise SpecError(
            f"strict inequality on {as_sum(self).name}: rates and losses are bounded with "
            "'<=' and '>=' (the optimum of a strict inequality need not exist). Write <= instead."
        )

    def __gt__(self, other: Any) -> TermConstraint:
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
    """Base class of every non-rate atom over the score model (see the module docstring).

    Subclasses set :attr:`curvature` and implement :attr:`name`, :meth:`datasets`,
    :meth:`value`, :meth:`surrogate_value` and :meth:`rebind`.
    """

    #: "convex" or "concave": the curvature of the surrogate in the model parameters
    curvature: str = "convex"
    #: the sense that makes sense for it, used in error messages ("minimized", "maximized")
    kind: str = "term"

    @property
    def name(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def label(self) -> str:
        """The term as the user wrote it (error messages and reports)."""
        return self.name

    def datasets(self) -> list[Any]:  # pragma: no cover - abstract
        """Every Dataset whose rows the term scores (the kernel expansion uses them all)."""
        raise NotImplementedError

    def value(self, scorer: Any) -> float:  # pragma: no cover - abstract
        """The exact value for a fitted scorer (indicator rates, exact thresholds)."""
        raise NotImplementedError

    def surrogate_value(self, scorer: Any) -> float:  # pragma: no cover - abstract
        """The value of the convex (or concave) surrogate the optimizer works with."""
        raise NotImplementedError

    def rebind(self, rebind: Callable[[Any], Any]) -> Term:  # pragma: no cover - abstract
        """The same definition on other data (``rebind`` maps each training subset)."""
        raise NotImplementedError

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
        from ..rates import RatioExpr

        if isinstance(other, RatioExpr):
            raise NotLinearError(
                f"cannot add the ratio metric {other.name} to {self.name}: ratios are not "
                "linear. Compare the ratio with a constant instead, e.g. rc.precision(D) >= 0.9."
            )
        if is_number(other):
            return Sum(self.parts, self.constant + scale * float(other))
        if not isinstance(other, (Composable,)) and not _is_rate(other):
            raise NotLinearError(f"cannot add {self.name} and a {type(other).__name__}.")
        rhs = as_sum(other)
        parts = _merge_rates(list(self.parts) + [(scale * c, p) for c, p in rhs.parts])
        return Sum(parts, self.constant + scale * rhs.constant)

    def __repr__(self) -> str:
        return f"Sum({self.name})"

    def rebind(self, rebind: Callable[[Any], Any]) -> Sum:
        """The same sum on other data (its name is rebuilt from the rebound parts)."""
        return Sum([(c, p.rebind(rebind)) for c, p in self.parts], self.constant)


def label_of(part: Any) -> str:
    """A part of a sum as the user wrote it (terms have ``label``, rates ``name``)."""
    return getattr(part, "label", None) or part.name


def _is_rate(x: Any) -> bool:
    from ..rates import RateExpr

    return isinstance(x, RateExpr)


def _merge_rates(parts: list[tuple[float, Any]]) -> list[tuple[float, Any]]:
    """Add every rate part into one rate expression, placed first (the TFCO lesson: terms over
    the same subset merge before a surrogate is applied)."""
    rate = None
    others: list[tuple[float, Any]] = []
    for coef, part in parts:
        if _is_rate(part):
            scaled = part if coef == 1.0 else coef * part
            rate = scaled if rate is None else rate + scaled
        else:
            others.append((coef, part))
    return ([(1.0, rate)] if rate is not None else []) + others


def as_sum(x: Any) -> Sum:
    """Wrap a term or a rate expression as a one-part sum (a Sum is returned as it is)."""
    if isinstance(x, Sum):
        return x
    if _is_rate(x):
        return Sum([(1.0, x)], 0.0, name=x.name)
    if isinstance(x, Term):
        return Sum([(1.0, x)], 0.0, name=x.label)
    raise NotLinearError(
        f"a {type(x).__name__} is not an expression over the score model; build expressions "
        "from rates (rc.error_rate(D), ...), rc.tpr_at_top, rc.robust_loss, rc.mean_loss and "
        "rc.worst_case."
    )


class TermConstraint:
    """``expr <sense> bound`` where ``expr`` is a :class:`Sum` holding at least one term.

    (Constraints on rate expressions alone are :class:`ratecons.rates.Constraint`.)
    """

    def __init__(self, expr: Sum, sense: str, bound: float, prefix: str = "",
                 sides: tuple[Sum, Sum] | None = None) -> None:
        if sense not in ("<=", ">="):
            raise SpecError(f"constraint sense must be '<=' or '>='; got {sense!r}.")
        if not np.isfinite(bound):
            raise SpecError(f"constraint bound must be finite; got {bound!r}.")
        self.expr, self.sense, self.bound, self.prefix = expr, sense, float(bound), prefix
        #: (left, right) when two expressions were compared, so the name reads as written
        self.sides = sides

    @classmethod
    def build(cls, expr: Sum, sense: str, other: Any) -> TermConstraint:
        if is_number(other):
            return cls(expr, sense, float(other))
        if isinstance(other, Composable) or _is_rate(other):
            return _difference(expr, sense, other)
        raise SpecError(f"cannot compare {expr.name} with a {type(other).__name__}.")

    @property
    def name(self) -> str:
        if self.sides is not None:
            return f"{self.prefix}{self.sides[0].name} {self.sense} {self.sides[1].name}"
        return f"{self.prefix}{self.expr.name} {self.sense} {fmt(self.bound)}"

    def slack(self, value: float) -> float:
        """Positive when satisfied: bound - value for <=, value - bound for >=."""
        return self.bound - value if self.sense == "<=" else value - self.bound

    def rebind(self, rebind: Callable[[Any], Any]) -> TermConstraint:
        sides = None if self.sides is None else tuple(s.rebind(rebind) for s in self.sides)
        return TermConstraint(self.expr.rebind(rebind), self.sense, self.bound, self.prefix,
                              sides)

    def __bool__(self) -> bool:
        raise SpecError(
            f"the constraint '{self.name}' has no truth value. Chained comparisons "
            "(a <= x <= b) are not supported: write two constraints."
        )

    def __repr__(self) -> str:
        return f"TermConstraint({self.name})"


def _difference(expr: Sum, sense: str, other: Any) -> TermConstraint:
    """``expr <sense> other`` for an expression ``other``: ``expr - other <sense> 0``, named as
    written."""
    return TermConstraint(expr._plus(other, -1.0), sense, 0.0, sides=(expr, as_sum(other)))
