"""Thresholds that are functions of the scores (ranking paper, Table 1).

A threshold t = G(s, y) is computed from the scores of a subset of a dataset (its negatives, or
all examples): the mean of its K largest scores (TopPush for K = 1, TopPushK, TopMeanK, tau-FPL),
its exact top tau-quantile (the threshold of the TPR@tau metric, Section 4.4) or the surrogate
quantile of Pat&Mat, the root t of (1 / n~) sum_j l(theta (s_j - t)) = tau (Table 1, eq. (9)).

The pure functions (:func:`top_k_mean`, :func:`top_quantile`, :func:`surrogate_quantile`) work on
score arrays and are shared by the metrics and the solvers; the classes are the spec objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .data import Dataset, Subset
from .errors import EmptySubsetError, parameter_error
from .loss_functions import check_surrogate, surrogate

__all__ = [
    "AMONG",
    "TopKMean",
    "TopQuantile",
    "SurrogateQuantile",
    "top_k_mean",
    "top_quantile",
    "quantile_count",
    "above_threshold",
    "tied",
    "TIE_TOL",
    "surrogate_quantile",
    "check_among",
    "check_k",
    "check_tau",
    "subset_among",
]

AMONG = ("negatives", "all")


def check_among(among: str, owner: str) -> str:
    if among not in AMONG:
        raise parameter_error("among", owner, f"one of {AMONG}", among)
    return among


def check_k(k: object, owner: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise parameter_error("k", owner, "an int >= 1", k)
    return int(k)


def check_tau(tau: object, owner: str) -> float:
    try:
        value = float(tau)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise parameter_error("tau", owner, "a float in (0, 1)", tau) from None
    if isinstance(tau, (bool, np.bool_)) or not 0.0 < value < 1.0:
        raise parameter_error("tau", owner, "a float in (0, 1)", tau)
    return value


def subset_among(data: Dataset, among: str, what: str) -> Subset:
    """The examples a threshold is computed from: D^- or all of D (binary labels required)."""
    data.require_labels(what, binary=True)
    sub = data.negatives if among == "negatives" else data.all
    return sub.require_nonempty(what)


def top_k_mean(scores: np.ndarray, k: int) -> float:
    """(1/K) sum_{j<=K} s_[j]: the mean of the K largest scores (eq. 6c)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if not 1 <= k <= s.size:
        raise EmptySubsetError(f"the mean of the {k} largest scores needs at least {k} scores; "
                               f"got {s.size}.")
    return float(np.partition(s, s.size - k)[s.size - k:].mean())


#: a score within TIE_TOL * max(1, |t|) of a threshold t counts as tied with it
#: (:func:`above_threshold`): the mean of K equal scores can differ from them in the last bit
TIE_TOL = 1e-12


def above_threshold(scores: np.ndarray, t: float, among: str = "negatives",
                    negative_ties: bool = True) -> np.ndarray:
    """Whether each positive's score counts as above the threshold t of TPR@K or TPR@tau.

    Section 4.4 of the ranking paper counts 1[s_i >= t]; with continuous scores a positive tied
    with a threshold has probability zero. Where it does not (a model that scores examples
    alike: w = 0, or duplicated feature rows), ties counted as hits gave a constant scorer,
    which ranks nothing, TPR@K = 1. A positive tied with t (within :data:`TIE_TOL`,
    :func:`tied`) is therefore not above it where a negative ties with t too
    (``negative_ties``): a random order of the tied examples puts it below that negative as
    often as above, and a constant scorer gets 0. With ``among="negatives"`` (the paper's
    experiments) t is a statistic of the negatives, so a tie is always with one. With
    ``among="all"`` t can be the positives' own (the top one is t for K = 1): a tie that no
    negative shares is >= t, as the paper counts.
    """
    s = np.asarray(scores)
    above = s > t + TIE_TOL * max(1.0, abs(float(t)))
    if among == "all" and not negative_ties:
        return above | tied(s, t)
    return above


def tied(scores: np.ndarray, t: float) -> np.ndarray:
    """Whether each score equals the threshold t to within :data:`TIE_TOL` (relative)."""
    return np.abs(np.asarray(scores) - t) <= TIE_TOL * max(1.0, abs(float(t)))


def quantile_count(n: int, tau: float) -> int:
    """ceil(tau n) (at least 1): how many scores lie at or above the top tau-quantile."""
    return max(1, min(n, math.ceil(tau * n - 1e-9)))


def top_quantile(scores: np.ndarray, tau: float) -> float:
    """max{t : (1/n) sum_j 1[s_j >= t] >= tau}, the threshold of TPR@tau (Section 4.4).

    It is the ceil(tau n)-th largest score.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise EmptySubsetError("the top quantile of an empty set of scores is undefined.")
    m = quantile_count(s.size, tau)
    return float(np.partition(s, s.size - m)[s.size - m])


def surrogate_quantile(scores: np.ndarray, tau: float, theta: float, name: str) -> float:
    """The Pat&Mat threshold: the root t of (1/n) sum_j l(theta (s_j - t)) = tau (Table 1).

    The left side is continuous and decreasing in t where positive, so the root is unique; it is
    found exactly on the piecewise linear (hinge) or piecewise quadratic (quadratic hinge) pieces
    delimited by the sorted breakpoints t = s_j + 1/theta.
    """
    s = np.sort(np.asarray(scores, dtype=np.float64).ravel())[::-1]
    n = s.size
    target = tau * n
    # with t between breakpoints b_{m+1} <= t < b_m (b_j = s_j + 1/theta, sorted decreasingly),
    # the active set is the m largest scores: u_j = 1 + theta (s_j - t) > 0 for j <= m.
    b = s + 1.0 / theta
    sb, sq = np.cumsum(b), np.cumsum(b * b)  # over the m largest, m = 1..n
    m = np.arange(1, n + 1, dtype=np.float64)
    if name == "hinge":
        # theta * sum_{j<=m} (b_j - t) = target
        t = (sb - target / theta) / m
    else:
        # theta^2 sum (b_j - t)^2 = target, root with t <= b_m
        a1, a0 = -2.0 * sb, sq - target / theta**2
        t = (-a1 - np.sqrt(np.maximum(a1 * a1 - 4.0 * m * a0, 0.0))) / (2.0 * m)
    lo = np.append(b[1:], -np.inf)  # t must lie at or above b_{m+1}
    found = np.flatnonzero(t >= lo - 1e-12 * np.maximum(1.0, np.abs(lo)))
    return float(t[found[0]] if found.size else t[-1])


@dataclass(frozen=True)
class TopKMean:
    """t = mean of the ``k`` largest scores of ``among`` (negatives or all examples), eq. (6c)."""

    k: int
    among: str = "negatives"

    def __post_init__(self) -> None:
        check_k(self.k, "TopKMean")
        check_among(self.among, "TopKMean")

    def value(self, scores: np.ndarray) -> float:
        return top_k_mean(scores, self.k)

    def describe(self) -> str:
        return f"mean of the {self.k} largest scores of the {self.among}"


@dataclass(frozen=True)
class TopQuantile:
    """The exact top ``tau``-quantile of the scores of ``among`` (the TPR@tau threshold)."""

    tau: float
    among: str = "negatives"

    def __post_init__(self) -> None:
        check_tau(self.tau, "TopQuantile")
        check_among(self.among, "TopQuantile")

    def value(self, scores: np.ndarray) -> float:
        return top_quantile(scores, self.tau)

    def k_for(self, n: int) -> int:
        """K = ceil(tau n): the top-K mean that tau-FPL and TopMeanK use as a convex surrogate."""
        return quantile_count(n, self.tau)

    def describe(self) -> str:
        return f"top {self.tau:g}-quantile of the scores of the {self.among}"


@dataclass(frozen=True)
class SurrogateQuantile:
    """Pat&Mat's surrogate quantile: root of (1/n) sum l(theta (s_j - t)) = tau (Table 1)."""

    tau: float
    theta: float = 1.0
    surrogate: str = "hinge"
    among: str = "negatives"

    def __post_init__(self) -> None:
        check_tau(self.tau, "SurrogateQuantile")
        if not (np.isfinite(self.theta) and self.theta > 0):
            raise parameter_error("theta", "SurrogateQuantile", "a positive float", self.theta)
        check_surrogate(self.surrogate, "SurrogateQuantile")
        check_among(self.among, "SurrogateQuantile")

    def value(self, scores: np.ndarray) -> float:
        return surrogate_quantile(scores, self.tau, self.theta, self.surrogate)

    def residual(self, scores: np.ndarray, t: float) -> float:
        """(1/n) sum l(theta (s - t)) - tau: zero at the threshold."""
        return float(np.mean(surrogate(self.surrogate, self.theta * (scores - t))) - self.tau)

    def describe(self) -> str:
        return (f"surrogate top {self.tau:g}-quantile ({self.surrogate}, theta={self.theta:g}) "
                f"of the scores of the {self.among}")
