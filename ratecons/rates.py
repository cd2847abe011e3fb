"""The named rates, counts, ratio metrics and fairness constraints: thin constructors.

Each helper here builds its quantity from the one primitive of :mod:`ratecons.expr.rate` (as
TFCO's ``binary_rates`` builds every rate from one): :func:`~ratecons.expr.rate.rate_atom`
with a *builder* that writes the rate as a linear combination of positive prediction rates
s_p(D) on subsets plus a constant (Goh et al. 2016, Table 2 and Table 4 list how coverage, TPR,
error rate, churn, wins, fairness and the rest are written this way), or
:func:`~ratecons.expr.rate.ratio_metric` with the numerator and denominator of a ratio
(precision, F1, win/loss, win/change, rate ratios such as the 80% rule; compared with
constants only and multiplied through by the denominator, App. B). Builders are module-level
functions so that expressions pickle and are rebuilt on other data (held-out reports).

:class:`RateExpr`, :class:`RatioExpr` and :class:`Constraint` are the expression algebra's own
classes (:mod:`ratecons.expr`), named here for the users who import them from this module.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .data import Dataset, Subset, as_subset
from .errors import SpecError
from .expr.atom import Constraint
from .expr.rate import RateExpr, RatioExpr, rate_atom, ratio_metric

__all__ = [
    "RateExpr", "RatioExpr", "Constraint", "rate_atom",
    "positive_rate", "negative_rate", "coverage", "true_positive_rate", "recall",
    "false_positive_rate", "true_negative_rate", "false_negative_rate", "error_rate", "accuracy",
    "true_positives", "false_positives", "true_negatives", "false_negatives", "errors",
    "churn_rate", "changes", "wins", "losses", "precision", "f1_score", "win_loss_ratio",
    "win_change_ratio", "positive_rate_ratio", "demographic_parity", "demographic_parity_ratio",
    "equal_opportunity", "equal_opportunity_ratio", "equalized_odds", "egregious_examples",
]


# ---------------------------------------------------------------------------- builder pieces
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


def _scaled(parts: tuple[dict, float], factor: float) -> tuple[dict, float]:
    terms, const = parts
    return {k: (s, factor * c) for k, (s, c) in terms.items()}, factor * const


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
    return ratio_metric("precision", _precision_parts, data)


def f1_score(data: Dataset | Subset) -> RatioExpr:
    """F1 = 2 #TP / (2 #TP + #FN + #FP) (Table 4); constraints only (App. B)."""
    return ratio_metric("f1_score", _f1_parts, data)


def win_loss_ratio(data: Dataset | Subset) -> RatioExpr:
    """#Wins / #Losses against the baseline (Table 4); constraints only (App. B)."""
    return ratio_metric("win_loss_ratio", _win_loss_parts, data)


def win_change_ratio(data: Dataset | Subset) -> RatioExpr:
    """#Wins / #Changes against the baseline (Table 4); constraints only (App. B)."""
    return ratio_metric("win_change_ratio", _win_change_parts, data)


def positive_rate_ratio(a: Dataset | Subset, b: Dataset | Subset) -> RatioExpr:
    """s_p(A) / s_p(B), e.g. the fairness ratio of the 80% rule: ``>= 0.8`` gives
    s_p(A) >= 0.8 s_p(B) (Table 2, fairness constraint with kappa = 0.8)."""
    return ratio_metric("positive_rate_ratio", _positive_rate_parts, a, b)


demographic_parity_ratio = positive_rate_ratio


def equal_opportunity_ratio(a: Dataset | Subset, b: Dataset | Subset) -> RatioExpr:
    """TPR(A) / TPR(B) (Table 2, equal opportunity with kappa)."""
    return ratio_metric("equal_opportunity_ratio", _tpr_parts, a, b)


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
    a: Dataset | Subset, b: Dataset | Subset, max_difference: float = 0.0,
    rates: tuple[str, ...] = ("tpr", "fpr"),
) -> list[Constraint]:
    """|TPR(A) - TPR(B)| <= c and |FPR(A) - FPR(B)| <= c (equalized odds), its rows named
    ``equalized_odds``; ``rates`` keeps one half ("tpr" or "fpr") where the other has no
    examples (two groups of which one has no positives still have their FPRs to match)."""
    unknown = set(rates) - {"tpr", "fpr"}
    if unknown or not rates:
        raise SpecError(f"equalized_odds(rates=...) takes 'tpr' and/or 'fpr'; got {rates!r}.")
    pairs = {"tpr": (true_positive_rate, a, b), "fpr": (false_positive_rate, a, b)}
    return [row for name in ("tpr", "fpr") if name in rates
            for rate, x, z in [pairs[name]]
            for row in _difference_bound("equalized_odds", rate(x) - rate(z), max_difference)]


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
