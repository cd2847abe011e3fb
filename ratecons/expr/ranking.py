"""Ranking at the top as terms: TPR above a score-dependent threshold (Macha et al., Table 1).

:class:`TPRAtTop` (TPR@K: the threshold is the mean of the K largest scores of the negatives or
of all examples; TopPush, TopPushK, TopMeanK) and :class:`TPRAtQuantile` (TPR@tau: the top
tau-quantile, by the mean of the ceil(tau n~) largest scores (tau-FPL) or the surrogate
quantile (Pat&Mat)) are concave terms: the exact TPR is bounded below by the concave surrogate
1 - (1/n_+) sum_{i in I_+} l(t - s_i) of problem (3), with t = G(s, y) the convex threshold of
the formulation. Users build them with ``rc.tpr_at_top`` and ``rc.tpr_at_quantile``
(:mod:`ratecons.ranking`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data import Dataset
from ..errors import DataError, parameter_error
from ..loss_functions import surrogate
from ..metrics import tpr_at_quantile, tpr_at_top
from ..thresholds import (
    SurrogateQuantile,
    TopKMean,
    TopQuantile,
    quantile_count,
    subset_among,
    top_k_mean,
)
from .atom import Term

__all__ = [
    "FORMULATIONS",
    "PATMAT_FAMILY",
    "TOPPUSHK_FAMILY",
    "RankingObjective",
    "TPRAtQuantile",
    "TPRAtTop",
]

TOPPUSHK_FAMILY = ("toppush", "toppushk", "topmeank", "tau-fpl")
PATMAT_FAMILY = ("pat&mat", "pat&mat-np")
FORMULATIONS = TOPPUSHK_FAMILY + PATMAT_FAMILY
_DISPLAY = {"toppush": "TopPush", "toppushk": "TopPushK", "topmeank": "TopMeanK",
            "tau-fpl": "tau-FPL", "pat&mat": "Pat&Mat", "pat&mat-np": "Pat&Mat-NP"}


@dataclass(eq=False)
class RankingObjective(Term):
    """Base of the objectives of the ranking-at-the-top family (spec only; never solves).

    As a term it is concave: the exact TPR is bounded below by the concave surrogate
    1 - (1/n_+) sum_{i in I_+} l(t - s_i) (l >= 1 on [0, inf), Notation 2.2), so it may be
    maximized or bounded below (``rc.tpr_at_top(D, k=5) >= 0.5``), never minimized.

    Attributes
    ----------
    data : Dataset
        Training data with binary labels.
    formulation : str
        One of :data:`FORMULATIONS` (resolved from the user's arguments).
    among : str
        ``"negatives"`` or ``"all"``: the examples the threshold is computed from.
    surrogate : str
        ``"hinge"`` or ``"quadratic_hinge"`` (Notation 2.2).
    theta : float
        Scale of the surrogate inside the Pat&Mat threshold equation (Table 1); unused by the
        TopPushK family.
    """

    data: Dataset
    formulation: str
    among: str
    surrogate: str = "hinge"
    theta: float = 1.0
    threshold: object = field(default=None, repr=False)

    curvature = "concave"
    kind = "rate"

    @property
    def name(self) -> str:
        return _DISPLAY[self.formulation]

    @property
    def label(self) -> str:
        """The objective as written: ``tpr_at_top(train, k=5)``, ``tpr_at_quantile(...)``."""
        if self.tau is not None:
            return f"tpr_at_quantile({self.data.name}, tau={self.tau:g})"
        return f"tpr_at_top({self.data.name}, k={self.k})"

    @property
    def datasets(self) -> list[Dataset]:
        return [self.data]

    @property
    def range(self) -> tuple[float, float]:
        """The TPR lies in [0, 1]; its concave surrogate, which the chain holds, is at most 1
        and unbounded below: a target above 1 can never be met (refused when the constraint
        is built), one at or below 0 always is by the exact TPR."""
        return -np.inf, 1.0

    def threshold_value(self, scores: np.ndarray) -> float:
        """The convex threshold t = G(s, y) of the surrogate problem (3) for the scores of every
        example: the mean of the K largest (TopPushK family; tau-FPL with K = ceil(n~ tau)) or
        the surrogate quantile (Pat&Mat), Table 1."""
        among = scores if self.among == "all" else scores[self.data.y == 0]
        if self.family == "toppushk":
            return top_k_mean(among, int(self.k))
        return float(self.threshold.value(among))

    def value(self, scorer: object) -> float:
        """The exact TPR above the threshold (Section 4.4): the share of positives scored above
        the top tau-quantile (TPR@tau) or the mean of the K largest (TPR@K) of the scores the
        threshold is among, a tie with a negatives' threshold counting as not above: the
        metric of :mod:`ratecons.metrics` on the model's scores."""
        s = scorer.decision_function(self.data.X)
        if self.tau is not None:
            return tpr_at_quantile(s, self.data.y, self.tau, self.among)
        return tpr_at_top(s, self.data.y, self.k, self.among)

    def surrogate_value(self, scorer: object) -> float:
        """1 - (1/n_+) sum_{i in I_+} l(t - s_i), the concave lower bound on the TPR."""
        s = scorer.decision_function(self.data.X)
        t = self.threshold_value(s)
        return 1.0 - float(np.mean(surrogate(self.surrogate, t - s[self.data.y == 1])))

    def rebind(self, rebind: object) -> RankingObjective:
        """The same objective on the rows ``rebind`` maps the data to, checked as the
        constructors check it."""
        obj = self._on(rebind(self.data.all).data)
        obj._check_data(f"tpr_at_{'quantile' if self.tau is not None else 'top'}")
        return obj

    def _on(self, data: Dataset) -> RankingObjective:
        """The same objective over ``data`` (unchecked)."""
        raise NotImplementedError

    @property
    def family(self) -> str:
        """``"toppushk"`` or ``"patmat"``: which dual (7) or (10) the formulation has."""
        return "toppushk" if self.formulation in TOPPUSHK_FAMILY else "patmat"

    @property
    def n_tilde(self) -> int:
        """Size of the subset the threshold is computed from (n_- or n)."""
        return int(subset_among(self.data, self.among, self.name).n)

    @property
    def k(self) -> int | None:
        """K of the TopPushK family (None for Pat&Mat)."""
        raise NotImplementedError

    @property
    def tau(self) -> float | None:
        return None

    def describe(self) -> str:
        return (f"maximize TPR above the {self.threshold.describe()} on {self.data.name!r} "
                f"({self.name}, {self.surrogate} surrogate)")

    def _check_data(self, owner: str) -> None:
        y = self.data.require_labels(owner, binary=True)
        if self.data.weights is not None:
            raise DataError(
                f"dataset {self.data.name!r} has example weights, but {owner} counts examples "
                "(its threshold is the mean of the K largest scores, its rate a fraction of "
                "the positives); drop the weights, or repeat each example k times for an integer "
                "weight k.")
        n_pos = int(np.sum(y == 1))
        if n_pos == 0:
            raise DataError(f"{owner} needs positive examples; dataset {self.data.name!r} has "
                            "none (labels are all 0).")
        subset_among(self.data, self.among, owner)


class TPRAtTop(RankingObjective):
    """TPR above the mean of the K largest scores of the negatives (or of all examples)."""

    def __init__(self, data: Dataset, k: int, among: str, formulation: str,
                 surrogate: str) -> None:
        super().__init__(data, formulation, among, surrogate, 1.0, TopKMean(k, among))
        self._k = k

    @property
    def k(self) -> int:
        return self._k

    def _on(self, data: Dataset) -> TPRAtTop:
        return TPRAtTop(data, self._k, self.among, self.formulation, self.surrogate)

    def with_k(self, k: int) -> TPRAtTop:
        """The same objective with another K (checked: at most the examples it is among)."""
        out = TPRAtTop(self.data, k, self.among, self.formulation, self.surrogate)
        out._check_data("tpr_at_top")
        return out

    def _check_data(self, owner: str) -> None:
        super()._check_data(owner)
        if self._k > self.n_tilde:
            raise parameter_error("k", owner, f"an int <= the number of {self.among} "
                                  f"({self.n_tilde})", self._k)


class TPRAtQuantile(RankingObjective):
    """TPR above the top tau-quantile of the scores of the negatives (or of all examples)."""

    def __init__(self, data: Dataset, tau: float, among: str, formulation: str,
                 surrogate: str, theta: float) -> None:
        if formulation in PATMAT_FAMILY:
            threshold: object = SurrogateQuantile(tau, theta, surrogate, among)
        else:
            threshold = TopQuantile(tau, among)
        super().__init__(data, formulation, among, surrogate, theta, threshold)
        self._tau = tau

    @property
    def tau(self) -> float:
        return self._tau

    def _on(self, data: Dataset) -> TPRAtQuantile:
        return TPRAtQuantile(data, self._tau, self.among, self.formulation, self.surrogate,
                             self.theta)

    @property
    def k(self) -> int | None:
        if self.formulation in PATMAT_FAMILY:
            return None
        return quantile_count(self.n_tilde, self._tau)
