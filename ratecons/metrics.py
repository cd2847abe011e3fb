"""Metrics of classification at the top (ranking paper, Section 4.4) and the AUC.

All metrics take scores and binary labels (0/1, -1/+1 or bool) of the same examples:

* ``tpr_at_top(scores, y, k)``: TPR@K = (1/n_+) sum_{i in I_+} 1[s_i >= t] with t the mean of
  the K largest negative scores;
* ``tpr_at_quantile(scores, y, tau)``: the same rate with t = max{t : (1/n_-) sum_{I_-}
  1[s_i >= t] >= tau}, the top tau-quantile of the negative scores;

  in both a positive tied with a threshold of the negatives counts as not above it
  (:func:`ratecons.thresholds.above_threshold`: a constant scorer gets 0, not 1);
* ``auc(scores, y, sample_weight=None)``: P(s_+ > s_-) + P(s_+ = s_-)/2 over all
  positive-negative pairs (ties count one half; weighted pairs with example weights), in
  O(n log n).

``among="all"`` computes the thresholds from all scores instead of the negatives.
"""

from __future__ import annotations

import numpy as np

from .data_columns import binary_codes as _binary_codes
from .errors import DataError, EmptySubsetError, LabelError
from .thresholds import (
    above_threshold,
    check_among,
    check_k,
    check_tau,
    tied,
    top_k_mean,
    top_quantile,
)

__all__ = ["tpr_at_top", "tpr_at_quantile", "auc"]


def _scores_labels(scores: object, y: object, owner: str) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(y).ravel()
    if s.shape != labels.shape:
        raise DataError(f"{owner}: scores and y must have the same length; got {s.size} "
                        f"scores and {labels.size} labels.")
    if not np.all(np.isfinite(s)):
        raise DataError(f"{owner}: scores contain NaN or infinite values.")
    codes = _binary_codes(labels, "labels")
    if codes is None:
        raise LabelError(f"{owner} needs binary labels (0/1, -1/+1 or bool); got values "
                         f"{np.unique(labels)[:10].tolist()}. Binarize them first, e.g. y == k.")
    if not np.any(codes == 1):
        raise EmptySubsetError(f"{owner} needs at least one positive example.")
    return s, codes.astype(bool)


def _reference_scores(s: np.ndarray, pos: np.ndarray, among: str, owner: str) -> np.ndarray:
    ref = s[~pos] if among == "negatives" else s
    if ref.size == 0:
        raise EmptySubsetError(f"{owner} with among='negatives' needs at least one negative.")
    return ref


def tpr_at_top(scores: object, y: object, k: int = 1, among: str = "negatives") -> float:
    """TPR@K: fraction of positives scored above the mean of the K largest negative scores
    (a tie with a negatives' threshold is not above it, :func:`~ratecons.thresholds.
    above_threshold`)."""
    owner = "tpr_at_top"
    k = check_k(k, owner)
    check_among(among, owner)
    s, pos = _scores_labels(scores, y, owner)
    ref = _reference_scores(s, pos, among, owner)
    if k > ref.size:
        raise EmptySubsetError(f"{owner}: k={k} exceeds the {ref.size} {among} scores.")
    return _tpr_above(s, pos, top_k_mean(ref, k), among)


def tpr_at_quantile(scores: object, y: object, tau: float = 0.05,
                    among: str = "negatives") -> float:
    """TPR@tau: fraction of positives scored above the top tau-quantile of the negative scores
    (a tie with a negatives' threshold is not above it, :func:`~ratecons.thresholds.
    above_threshold`)."""
    owner = "tpr_at_quantile"
    tau = check_tau(tau, owner)
    check_among(among, owner)
    s, pos = _scores_labels(scores, y, owner)
    ref = _reference_scores(s, pos, among, owner)
    return _tpr_above(s, pos, top_quantile(ref, tau), among)


def _tpr_above(s: np.ndarray, pos: np.ndarray, t: float, among: str) -> float:
    """The fraction of positives above t (:func:`~ratecons.thresholds.above_threshold`)."""
    return float(np.mean(above_threshold(s[pos], t, among,
                                         negative_ties=bool(np.any(tied(s[~pos], t))))))


def auc(scores: object, y: object, sample_weight: object = None) -> float:
    """Area under the ROC curve; tied positive-negative pairs count one half. With
    ``sample_weight``, each pair counts w_i w_j (a weighted dataset is the dataset with each
    row repeated w times): scikit-learn's ``roc_auc_score``."""
    from sklearn.metrics import roc_auc_score  # imported here: it takes ~0.5 s to load

    s, pos = _scores_labels(scores, y, "auc")
    if not np.any(~pos):
        raise EmptySubsetError("auc needs at least one negative example.")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64).ravel()
        if sample_weight.shape != s.shape:
            raise DataError(f"auc: sample_weight must have one weight per score; got "
                            f"{sample_weight.size} for {s.size}.")
        if not np.all(np.isfinite(sample_weight)) or np.any(sample_weight < 0):
            raise DataError("auc: sample_weight must be finite and nonnegative.")
        if not (sample_weight[pos].sum() > 0 and sample_weight[~pos].sum() > 0):
            raise EmptySubsetError("auc needs a positive total weight on each class.")
    return float(roc_auc_score(pos, s, sample_weight=sample_weight))
