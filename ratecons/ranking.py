"""Objectives of classification at the top: TPR above a score-dependent threshold (Table 1).

``rc.tpr_at_top(data, k)`` and ``rc.tpr_at_quantile(data, tau)`` are objectives to *maximize*.
They are solved through the convex surrogate problem (3) of Macha, Adam and Smidl,

    minimize_w  (lambda / 2) ||w||^2 + (1 / n_+) sum_{i in I_+} l(t - w^T x_i),
    t = G(s, y),

with the threshold G of the chosen formulation of Table 1:

=============  =================================  ===========  ==================
formulation    threshold t                        among        K
=============  =================================  ===========  ==================
toppush        largest negative score             negatives    1
toppushk       mean of the K largest negatives    negatives    k
topmeank       mean of the K largest scores       all          k (or ceil(n tau))
tau-fpl        mean of the K largest negatives    negatives    ceil(n_- tau)
pat&mat        surrogate quantile (all)           all          --
pat&mat-np     surrogate quantile (negatives)     negatives    --
=============  =================================  ===========  ==================

The regularization lambda is the model's ``l2``; the dual forms (7) and (10) use the constant
C = 1 / (lambda n_+) (Section 4.2), and the problem in the C form (6)/(9) is the problem above
divided by lambda. ``result.objective`` is the objective above (the form (3)), the same number
for every method.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .data import Dataset, Subset
from .errors import DataError, SpecError, parameter_error
from .expr.atom import Term
from .loss_functions import check_surrogate, surrogate
from .thresholds import (
    SurrogateQuantile,
    TopKMean,
    TopQuantile,
    check_among,
    check_k,
    check_tau,
    quantile_count,
    subset_among,
    top_k_mean,
)

__all__ = [
    "FORMULATIONS",
    "TOPPUSHK_FAMILY",
    "PATMAT_FAMILY",
    "RankingObjective",
    "TPRAtTop",
    "TPRAtQuantile",
    "tpr_at_top",
    "tpr_at_quantile",
]

TOPPUSHK_FAMILY = ("toppush", "toppushk", "topmeank", "tau-fpl")
PATMAT_FAMILY = ("pat&mat", "pat&mat-np")
FORMULATIONS = TOPPUSHK_FAMILY + PATMAT_FAMILY
_DISPLAY = {"toppush": "TopPush", "toppushk": "TopPushK", "topmeank": "TopMeanK",
            "tau-fpl": "tau-FPL", "pat&mat": "Pat&Mat", "pat&mat-np": "Pat&Mat-NP"}


def _check_theta(theta: object, owner: str) -> float:
    try:
        value = float(theta)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise parameter_error("theta", owner, "a positive float", theta) from None
    if not (np.isfinite(value) and value > 0):
        raise parameter_error("theta", owner, "a positive float", theta)
    return value


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

    def threshold_value(self, scores: np.ndarray) -> float:
        """The convex threshold t = G(s, y) of the surrogate problem (3) for the scores of every
        example: the mean of the K largest (TopPushK family; tau-FPL with K = ceil(n~ tau)) or
        the surrogate quantile (Pat&Mat), Table 1."""
        among = scores if self.among == "all" else scores[self.data.y == 0]
        if self.family == "toppushk":
            return top_k_mean(among, int(self.k))
        return float(self.threshold.value(among))

    def value(self, scorer: object) -> float:
        """The exact TPR above the threshold (Section 4.4 metrics)."""
        from .metrics import tpr_at_quantile as metric_quantile
        from .metrics import tpr_at_top as metric_top

        s = scorer.decision_function(self.data.X)
        if self.tau is not None:
            return metric_quantile(s, self.data.y, self.tau, among=self.among)
        return metric_top(s, self.data.y, self.k, among=self.among)

    def surrogate_value(self, scorer: object) -> float:
        """1 - (1/n_+) sum_{i in I_+} l(t - s_i), the concave lower bound on the TPR."""
        s = scorer.decision_function(self.data.X)
        t = self.threshold_value(s)
        return 1.0 - float(np.mean(surrogate(self.surrogate, t - s[self.data.y == 1])))

    def rebind(self, rebind: object) -> RankingObjective:
        data = rebind(self.data.all).data
        if self.tau is not None:
            return tpr_at_quantile(data, self.tau, self.among,
                                   "pat&mat" if self.family == "patmat" else "tau-fpl",
                                   self.surrogate, self.theta)
        return tpr_at_top(data, self.k, self.among, self.formulation, self.surrogate)

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

    @property
    def k(self) -> int | None:
        if self.formulation in PATMAT_FAMILY:
            return None
        return quantile_count(self.n_tilde, self._tau)


def _as_dataset(data: object, owner: str) -> Dataset:
    """A Dataset, or the rows of a Subset as a Dataset of their own (the ranking is among
    them, as rates over a subset are averages over it)."""
    if isinstance(data, Subset):
        data.require_nonempty(owner)
        return data.data.take(data.index, name=data.name)
    if not isinstance(data, Dataset):
        raise SpecError(f"{owner} needs an rc.Dataset or rc.Subset with binary labels; got "
                        f"{type(data).__name__}. Build one with rc.Dataset(X, y).")
    return data


def tpr_at_top(data: Dataset, k: int = 5, among: str = "negatives",
               formulation: str | None = None, surrogate: str = "hinge") -> TPRAtTop:
    """TPR@K: the true-positive rate above the mean of the K largest scores, to maximize.

    Parameters
    ----------
    data : Dataset
        Training data with binary labels.
    k : int, default 5
        K of Table 1. ``k=1`` with the negatives is TopPush.
    among : {"negatives", "all"}
        Threshold from the negatives (TopPush, TopPushK) or from all examples (TopMeanK).
    formulation : {"toppush", "toppushk", "topmeank"}, optional
        Inferred from ``k`` and ``among`` when omitted; given, it must agree with them.
    surrogate : {"hinge", "quadratic_hinge"}

    Examples
    --------
    >>> problem = rc.Problem(maximize=rc.tpr_at_top(train, k=5), model=rc.LinearModel(l2=1e-3))
    """
    owner = "tpr_at_top"
    data = _as_dataset(data, owner)
    k = check_k(k, owner)
    check_among(among, owner)
    check_surrogate(surrogate, owner)
    inferred = "topmeank" if among == "all" else ("toppush" if k == 1 else "toppushk")
    if formulation is None:
        formulation = inferred
    allowed = ("toppush", "toppushk", "topmeank")
    if formulation not in allowed:
        raise parameter_error("formulation", owner, f"one of {allowed} or None", formulation)
    if formulation == "topmeank" and among != "all":
        raise SpecError("formulation 'topmeank' computes the threshold from all examples; "
                        "pass among='all' (or choose 'toppushk').")
    if formulation in ("toppush", "toppushk") and among != "negatives":
        raise SpecError(f"formulation {formulation!r} computes the threshold from the "
                        "negatives; pass among='negatives' (or choose 'topmeank').")
    if formulation == "toppush" and k != 1:
        raise parameter_error("k", "tpr_at_top with formulation='toppush'", "1", k)
    obj = TPRAtTop(data, k, among, formulation, surrogate)
    obj._check_data(owner)
    if k > obj.n_tilde:
        raise parameter_error("k", owner, f"an int <= the number of {among} ({obj.n_tilde})",
                              k)
    return obj


def tpr_at_quantile(data: Dataset, tau: float = 0.05, among: str = "negatives",
                    formulation: str = "tau-fpl", surrogate: str = "hinge",
                    theta: float = 1.0) -> TPRAtQuantile:
    """TPR@tau: the true-positive rate above the top tau-quantile of the scores, to maximize.

    Parameters
    ----------
    data : Dataset
        Training data with binary labels.
    tau : float in (0, 1), default 0.05
    among : {"negatives", "all"}
    formulation : {"tau-fpl", "pat&mat", "pat&mat-np"}
        ``"tau-fpl"``: the quantile is replaced by the mean of the ceil(tau n~) largest scores
        (tau-FPL on the negatives, TopMeanK on all examples). ``"pat&mat"``: the surrogate
        quantile of Table 1 (Pat&Mat on all examples, Pat&Mat-NP on the negatives).
    surrogate : {"hinge", "quadratic_hinge"}
    theta : float, default 1
        Scale of the surrogate in the Pat&Mat threshold equation.
    """
    owner = "tpr_at_quantile"
    data = _as_dataset(data, owner)
    tau = check_tau(tau, owner)
    check_among(among, owner)
    check_surrogate(surrogate, owner)
    theta = _check_theta(theta, owner)
    allowed = ("tau-fpl", "pat&mat", "pat&mat-np")
    if formulation not in allowed:
        raise parameter_error("formulation", owner, f"one of {allowed}", formulation)
    if formulation == "pat&mat-np" and among != "negatives":
        raise SpecError("formulation 'pat&mat-np' computes the threshold from the negatives; "
                        "pass among='negatives' or formulation='pat&mat'.")
    if formulation == "tau-fpl":
        resolved = "tau-fpl" if among == "negatives" else "topmeank"
    else:
        resolved = "pat&mat-np" if among == "negatives" else "pat&mat"
    obj = TPRAtQuantile(data, tau, among, resolved, surrogate, theta)
    obj._check_data(owner)
    return obj
