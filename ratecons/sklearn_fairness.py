"""The ready fairness constraints of the scikit-learn estimators (:mod:`ratecons.sklearn`):
callables of the training :class:`ratecons.Dataset` that return one constraint per pair of
levels of a group attribute, so that a rule holds between every two groups.

They are estimators themselves, so their bound is a nested parameter:
``GridSearchCV(clf, {"constraints__bound": [0.7, 0.9]})``. A
:class:`~ratecons.sklearn.RateConstrainedClassifier` also takes any function of the training
Dataset that returns constraints (:func:`constraints_on` checks and calls them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from . import rates
from .data import Dataset
from .errors import parameter_error

__all__ = ["SENSITIVE", "DemographicParityDifference", "DemographicParityRatio",
           "EqualOpportunityDifference", "EqualOpportunityRatio", "EqualizedOdds",
           "as_makers", "constraints_on"]

SENSITIVE = "sensitive"


class _GroupConstraint(BaseEstimator):
    """A fairness constraint over the levels of a group attribute of the training Dataset.
    Called on it, it returns the constraints: one per ordered pair of levels (ratios) or per
    unordered pair (differences), so it holds between every two groups."""

    def __init__(self, bound: float = 0.8, feature: str = SENSITIVE) -> None:
        self.bound = bound
        self.feature = feature

    def _levels(self, data: Dataset, positives_only: bool = False) -> list[Any]:
        if self.feature not in data.groups:
            raise ValueError(
                f"{type(self).__name__} constrains the group attribute {self.feature!r}, which "
                f"the training data does not have (it has {sorted(data.groups) or 'none'}); "
                "pass fit(X, y, sensitive_features=A) or groups={...}.")
        values = data.groups[self.feature]
        if positives_only:
            values = values[data.require_labels(type(self).__name__, binary=True) == 1]
        levels = np.unique(values).tolist()  # plain values: the message reads them
        if len(levels) < 2:
            among = " among the positive examples" if positives_only else ""
            raise ValueError(
                f"{type(self).__name__} holds between every two groups of {self.feature!r}, "
                f"which has {len(levels)} level(s){among} in the training data ({levels}): it "
                "would constrain nothing. Pass the sensitive feature with at least two groups, "
                "or drop the constraint.")
        return levels

    def _pairs(self, data: Dataset, ordered: bool, positives_only: bool = False) -> list:
        levels = self._levels(data, positives_only)
        return [(a, b) for i, a in enumerate(levels) for j, b in enumerate(levels)
                if (i != j if ordered else i < j)]

    def __call__(self, data: Dataset) -> list[Any]:
        raise NotImplementedError

    def _ratio_bound(self) -> float:
        """The bound of a ratio that holds both ways between every two groups: in [0, 1]
        (above 1, rate(A) >= bound rate(B) and rate(B) >= bound rate(A) leave only the rates
        0 = 0, a classifier with no positive in any group; below 0 it constrains nothing)."""
        return self._bound("a float in [0, 1] (the ratio holds both ways between every two "
                           "groups)")

    def _difference_bound(self) -> float:
        """The bound of |rate(A) - rate(B)|: in [0, 1] (a user's -0.1 was refused naming the
        internal 'max_difference' of rc.demographic_parity, not this 'bound')."""
        return self._bound("a float in [0, 1] (the largest difference of two rates)")

    def _bound(self, expected: str) -> float:
        try:
            value = float(self.bound)
        except (TypeError, ValueError):
            value = float("nan")  # refused below, naming the parameter
        if not 0.0 <= value <= 1.0:
            raise parameter_error("bound", type(self).__name__, expected, self.bound)
        return value


class DemographicParityRatio(_GroupConstraint):
    """s_p(A) >= bound * s_p(B) for every two groups A, B (the 80% rule at ``bound=0.8``;
    ratio constraints are multiplied through by the denominator, App. B of Goh et al.)."""

    def __call__(self, data: Dataset) -> list[Any]:
        g, bound = self.feature, self._ratio_bound()
        return [rates.positive_rate_ratio(data.group(g, a), data.group(g, b)) >= bound
                for a, b in self._pairs(data, ordered=True)]


class EqualOpportunityRatio(_GroupConstraint):
    """TPR(A) >= bound * TPR(B) for every two groups (Table 2 of Goh et al.)."""

    def __call__(self, data: Dataset) -> list[Any]:
        g, bound = self.feature, self._ratio_bound()
        return [rates.equal_opportunity_ratio(data.group(g, a), data.group(g, b)) >= bound
                for a, b in self._pairs(data, ordered=True, positives_only=True)]


class DemographicParityDifference(_GroupConstraint):
    """|s_p(A) - s_p(B)| <= bound for every two groups."""

    def __init__(self, bound: float = 0.1, feature: str = SENSITIVE) -> None:
        super().__init__(bound, feature)

    def __call__(self, data: Dataset) -> list[Any]:
        g = self.feature
        return [c for a, b in self._pairs(data, ordered=False)
                for c in rates.demographic_parity(data.group(g, a), data.group(g, b),
                                                  self._difference_bound())]


class EqualOpportunityDifference(DemographicParityDifference):
    """|TPR(A) - TPR(B)| <= bound for every two groups (Hardt et al.'s equal opportunity)."""

    def __call__(self, data: Dataset) -> list[Any]:
        g = self.feature
        return [c for a, b in self._pairs(data, ordered=False, positives_only=True)
                for c in rates.equal_opportunity(data.group(g, a), data.group(g, b),
                                                 self._difference_bound())]


class EqualizedOdds(DemographicParityDifference):
    """|TPR(A) - TPR(B)| <= bound and |FPR(A) - FPR(B)| <= bound for every two groups."""

    def __call__(self, data: Dataset) -> list[Any]:  # TPRs where both levels have positives,
        g, levels = self.feature, self._levels(data)  # FPRs where both have negatives
        y, groups = data.require_labels("EqualizedOdds", binary=True), data.groups[g]
        has = {a: [r for r, label in (("tpr", 1), ("fpr", 0))
                   if np.any((groups == a) & (y == label))] for a in levels}
        rows = [c for i, a in enumerate(levels) for b in levels[i + 1:]
                if (both := tuple(r for r in has[a] if r in has[b]))
                for c in rates.equalized_odds(data.group(g, a), data.group(g, b),
                                              self._difference_bound(),
                                              rates=both)]
        if not rows:
            raise ValueError(f"EqualizedOdds: no two levels of {g!r} share a class ({has}).")
        return rows


def as_makers(makers: Any) -> list[Any]:
    """A ``constraints`` parameter as a list: a function of the training Dataset, a list of
    them, or None (none)."""
    if makers is None:
        return []
    return list(makers) if isinstance(makers, (list, tuple)) else [makers]


def constraints_on(makers: Any, data: Dataset) -> list[Any]:
    """The constraints that ``makers`` (:func:`as_makers`) return on ``data``; anything else
    is refused naming what is expected."""
    out: list[Any] = []
    for make in as_makers(makers):
        if not callable(make):
            raise parameter_error(
                "constraints", "RateConstrainedClassifier", "a function of the training "
                "rc.Dataset that returns constraints (e.g. DemographicParityRatio(0.8), or "
                "lambda D: [rc.recall(D) >= 0.8]), or a list of such functions", make)
        made = make(data)
        out += list(made) if isinstance(made, (list, tuple)) else [made]
    return out
