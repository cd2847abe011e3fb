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

import numpy as np

from .data import Dataset, Subset
from .errors import SpecError, parameter_error
from .expr.ranking import (
    FORMULATIONS,
    PATMAT_FAMILY,
    TOPPUSHK_FAMILY,
    RankingObjective,
    TPRAtQuantile,
    TPRAtTop,
)
from .loss_functions import check_surrogate
from .thresholds import check_among, check_k, check_tau

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


def _check_theta(theta: object, owner: str) -> float:
    try:
        value = float(theta)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise parameter_error("theta", owner, "a positive float", theta) from None
    if not (np.isfinite(value) and value > 0):
        raise parameter_error("theta", owner, "a positive float", theta)
    return value


def _checked(data: object, among: str, surrogate: str, owner: str) -> Dataset:
    """The checks both ranking objectives make: ``among``, ``surrogate``, and the data as a
    Dataset (:func:`_as_dataset`)."""
    data = _as_dataset(data, owner)
    check_among(among, owner)
    check_surrogate(surrogate, owner)
    return data


def _check_formulation(formulation: object, allowed: tuple[str, ...], owner: str,
                       more: str = "") -> None:
    if formulation not in allowed:
        raise parameter_error("formulation", owner, f"one of {allowed}{more}", formulation)


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
    data = _checked(data, among, surrogate, owner)
    k = check_k(k, owner)
    if formulation is None:
        formulation = "topmeank" if among == "all" else ("toppush" if k == 1 else "toppushk")
    _check_formulation(formulation, ("toppush", "toppushk", "topmeank"), owner, " or None")
    if formulation == "topmeank" and among != "all":
        raise SpecError("formulation 'topmeank' computes the threshold from all examples; "
                        "pass among='all' (or choose 'toppushk').")
    if formulation in ("toppush", "toppushk") and among != "negatives":
        raise SpecError(f"formulation {formulation!r} computes the threshold from the "
                        "negatives; pass among='negatives' (or choose 'topmeank').")
    if formulation == "toppush" and k != 1:
        raise parameter_error("k", "tpr_at_top with formulation='toppush'", "1", k)
    obj = TPRAtTop(data, k, among, formulation, surrogate)
    obj._check_data(owner)  # labels, positives, and k <= the examples the threshold is among
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
    data = _checked(data, among, surrogate, owner)
    tau = check_tau(tau, owner)
    theta = _check_theta(theta, owner)
    _check_formulation(formulation, ("tau-fpl", "pat&mat", "pat&mat-np"), owner)
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
