"""Metrics and thresholds of classification at the top against brute-force definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons import metrics
from ratecons.loss_functions import surrogate
from ratecons.thresholds import quantile_count, surrogate_quantile, top_k_mean, top_quantile

# scores on a coarse grid so that ties are frequent
scores_labels = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-5, 5), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
).filter(lambda sl: 0 < sum(sl[1]) < len(sl[1]))


def _brute_auc(s, y):
    pos = [a for a, b in zip(s, y, strict=True) if b]
    neg = [a for a, b in zip(s, y, strict=True) if not b]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def _brute_tpr(s, y, t):
    # a positive tied with a threshold of the negatives is not above it
    pos = [a for a, b in zip(s, y, strict=True) if b]
    return sum(p > t + 1e-12 * max(1.0, abs(t)) for p in pos) / len(pos)


@settings(max_examples=200, deadline=None)
@given(scores_labels)
def test_auc_matches_pairwise_definition(sl):
    s, y = sl
    assert metrics.auc(s, y) == pytest.approx(_brute_auc(s, y), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(scores_labels, st.integers(1, 5))
def test_tpr_at_top_matches_definition(sl, k):
    s, y = sl
    neg = sorted((a for a, b in zip(s, y, strict=True) if not b), reverse=True)
    if k > len(neg):
        with pytest.raises(rc.EmptySubsetError):
            metrics.tpr_at_top(s, y, k)
        return
    t = sum(neg[:k]) / k
    assert metrics.tpr_at_top(s, y, k) == pytest.approx(_brute_tpr(s, y, t), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(scores_labels, st.floats(0.01, 0.99))
def test_tpr_at_quantile_matches_definition(sl, tau):
    s, y = sl
    neg = [a for a, b in zip(s, y, strict=True) if not b]
    # t = max{t : (1/n_-) #{s_j >= t} >= tau}, searched over the candidate values
    t = max(c for c in neg if sum(q >= c for q in neg) / len(neg) >= tau)
    assert metrics.tpr_at_quantile(s, y, tau) == pytest.approx(_brute_tpr(s, y, t), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=30), st.floats(0.01, 0.99))
def test_top_quantile_is_the_largest_feasible_threshold(s, tau):
    t = top_quantile(s, tau)
    arr = np.asarray(s)
    assert np.mean(arr >= t) >= tau - 1e-12
    above = arr[arr > t]
    if above.size:  # any larger candidate fails the condition
        assert np.mean(arr >= above.min()) < tau
    # it is the ceil(tau n)-th largest score
    assert t == sorted(s, reverse=True)[quantile_count(arr.size, tau) - 1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=30), st.integers(1, 30))
def test_top_k_mean(s, k):
    if k > len(s):
        with pytest.raises(rc.EmptySubsetError):
            top_k_mean(s, k)
    else:
        assert top_k_mean(s, k) == pytest.approx(np.mean(sorted(s)[-k:]), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=40), st.floats(0.01, 0.9),
       st.floats(0.1, 10.0), st.sampled_from(["hinge", "quadratic_hinge"]))
def test_surrogate_quantile_solves_the_threshold_equation(s, tau, theta, name):
    t = surrogate_quantile(s, tau, theta, name)
    lhs = np.mean(surrogate(name, theta * (np.asarray(s) - t)))
    assert lhs == pytest.approx(tau, rel=1e-9, abs=1e-12)


def test_metric_input_errors():
    with pytest.raises(rc.LabelError):
        metrics.auc([0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(rc.DataError, match="same length"):
        metrics.tpr_at_top([0.1, 0.2], [0, 1, 1])
    with pytest.raises(rc.SpecError, match="The 'k' parameter of tpr_at_top must be an int"):
        metrics.tpr_at_top([0.1, 0.2], [0, 1], k=0)
    with pytest.raises(rc.SpecError, match="'tau' parameter of tpr_at_quantile"):
        metrics.tpr_at_quantile([0.1, 0.2], [0, 1], tau=1.5)
    with pytest.raises(rc.DataError, match="NaN"):
        metrics.auc([np.nan, 0.2], [0, 1])


def test_metrics_with_among_all_and_signed_labels():
    s = np.array([3.0, 2.0, 1.0, 0.0])
    y = np.array([1, -1, 1, -1])
    assert metrics.tpr_at_top(s, y, k=1, among="all") == 0.5  # t = 3
    assert metrics.tpr_at_top(s, y, k=1) == 0.5  # t = 2 (largest negative)
    assert metrics.auc(s, y) == 0.75


def test_a_constant_scorer_ranks_no_positive_above_the_negatives():
    # Section 4.4 counts s_i >= t: a constant score (w = 0) tied every positive with the
    # threshold and got TPR 1; a tie with a negatives' threshold is not above it
    y = np.array([1, 0, 1, 0, 1, 0, 0, 0])
    for scores in (np.zeros(8), np.full(8, -0.1234567)):
        assert metrics.tpr_at_top(scores, y, k=1) == 0.0
        assert metrics.tpr_at_top(scores, y, k=3) == 0.0  # t the mean of three equal scores
        assert metrics.tpr_at_quantile(scores, y, tau=0.05) == 0.0
    # one positive tied with the top negative, one above it
    s = np.array([2.0, 1.0, 1.0, 0.0])
    assert metrics.tpr_at_top(s, np.array([1, 1, 0, 0]), k=1) == 0.5
    # among all scores the top positive can be the threshold itself, and counts when no
    # negative ties with it; a constant scorer ties the negatives too, and gets 0
    assert metrics.tpr_at_top(np.zeros(8), y, k=1, among="all") == 0.0
    assert metrics.tpr_at_quantile(np.zeros(8), y, tau=0.2, among="all") == 0.0
    assert metrics.tpr_at_top(np.array([3.0, 1.0, 2.0, 0.0, 1.0, 0, 0, 0]), y, k=1,
                              among="all") == pytest.approx(1 / 3)  # t = 3, the top positive


def _brute_tpr_all(s, y, t):
    """The fraction of positives s_i >= t among all scores, a tie counted only where no
    negative ties with t."""
    close = [abs(a - t) <= 1e-12 * max(1.0, abs(t)) for a in s]
    negative_tie = any(c and not b for c, b in zip(close, y, strict=True))
    pos = [(a, c) for a, b, c in zip(s, y, close, strict=True) if b]
    return sum(a > t + 1e-12 * max(1.0, abs(t)) or (c and not negative_tie)
               for a, c in pos) / len(pos)


@settings(max_examples=200, deadline=None)
@given(scores_labels, st.integers(1, 5))
def test_tpr_at_top_among_all_matches_definition(sl, k):
    s, y = sl
    if k > len(s):
        return
    t = sum(sorted(s, reverse=True)[:k]) / k
    assert metrics.tpr_at_top(s, y, k, among="all") == pytest.approx(
        _brute_tpr_all(s, y, t), abs=1e-12)


def test_the_reports_exact_tpr_of_a_constant_scorer_is_zero():
    # the atom's exact value (what result.report and result.metrics show) counts ties as
    # the metrics do: the degenerate w = 0 of a TPR@K solve reads 0, not 1
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(40, 3)), (rng.random(40) < 0.4).astype(int)
    D = rc.Dataset(X, y)

    class Constant:
        def decision_function(self, X):
            return np.full(X.shape[0], 0.3)

    assert rc.tpr_at_top(D, k=5).value(Constant()) == 0.0
    assert rc.tpr_at_quantile(D, tau=0.1).value(Constant()) == 0.0
    assert rc.tpr_at_top(D, k=5, among="all").value(Constant()) == 0.0


def test_the_report_says_what_a_ranking_objectives_expected_column_holds():
    """The report's 'expected (random.)' column holds a TPR@tau objective's surrogate (the
    solver's 1 - mean ranking loss, -0.49 on this sample), which is no TPR: the objective
    row's note says so; a rate objective's row has no such note."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    D = rc.Dataset(X, (X[:, 0] + rng.normal(size=300) > 0).astype(int), name="s")
    ranked = rc.Problem(maximize=rc.tpr_at_quantile(D, tau=0.1, formulation="pat&mat"),
                        model=rc.LinearModel(l2=1e-2)).solve()
    row = ranked.report().rows[0]
    assert row.kind == "objective" and row.ramp < 0 <= row.indicator <= 1
    assert "not a TPR of the randomized rule" in row.note
    assert "not a TPR" in str(ranked.report())
    rate = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-2)).solve()
    assert rate.report().rows[0].note == ""


def test_auc_refuses_weights_that_leave_a_class_without_weight():
    s, y = np.array([0.3, 0.1, 0.7, 0.2]), np.array([1, 0, 1, 0])
    with pytest.raises(rc.DataError, match="nonnegative"):
        metrics.auc(s, y, sample_weight=[1, -1, 1, 1])
    with pytest.raises(rc.EmptySubsetError, match="positive total weight on each class"):
        metrics.auc(s, y, sample_weight=[1, 0, 1, 0])
    assert metrics.auc(s, y, sample_weight=[2, 1, 1, 1]) == pytest.approx(1.0)
