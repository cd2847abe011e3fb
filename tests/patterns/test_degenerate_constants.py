"""The degenerate check's 1-D search over constant scores (ratecons/degenerate.py) evaluates
each row at a constant score from the parts' values by sign and the mean losses' closed form;
these must be the rows' exact values at that constant, on real data (Pima diabetes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.degenerate import ConstantScore, _RowsAtConstants, comparison_value
from tests.shared_data import standardized
from tests.shared_phi import HELLINGER


def _diabetes(weighted: bool) -> rc.Dataset:
    data = standardized("diabetes")
    weights = np.random.default_rng(0).uniform(0.2, 3.0, data.n) if weighted else None
    return rc.Dataset(data.X, data.y, groups={"g": (np.arange(data.n) % 3 == 0).astype(int)},
                      weights=weights)


#: unweighted (a phi-divergence ball takes no example weights)
_PLAIN = _diabetes(weighted=False)


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    """Pima diabetes with a group column and uneven example weights."""
    return _diabetes(weighted=True)


@settings(max_examples=60, deadline=None)
@given(loss=st.sampled_from(["logistic", "hinge", "squared"]),
       score=st.floats(-50.0, 50.0, allow_nan=False))
def test_a_mean_loss_at_a_constant_score_is_its_closed_form(diabetes, loss, score):
    """W+ l(c) + W- l(-c) equals the loss's mean over the (weighted) examples scored c."""
    for data in (diabetes, diabetes.group("g", 1)):
        term = rc.mean_loss(data, loss)
        exact = term.value(ConstantScore(score))
        assert term.value_at_constant(score) == pytest.approx(exact, rel=1e-12, abs=1e-15)


def _problems(D: rc.Dataset) -> list[rc.Problem]:
    a, b = D.group("g", 1), D.group("g", 0)
    ball = rc.PhiDivergenceBall(D.positives, phi="chi2", rho=0.1)
    return [
        rc.Problem(minimize=rc.logistic_loss(D), subject_to=[
            rc.recall(D) >= 0.6, rc.positive_rate(a) >= 0.8 * rc.positive_rate(b),
            rc.worst_case(rc.recall(D), ball) >= 0.5, rc.hinge_loss(D) <= 0.9]),
        rc.Problem(maximize=rc.tpr_at_top(D, k=5), subject_to=[rc.positive_rate(D) <= 0.3]),
        rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="kl", rho=0.1)),
                   subject_to=[rc.false_positive_rate(a) - rc.false_positive_rate(b) <= 0.02,
                               rc.mean_loss(a, "squared") <= 1.5]),
        rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.precision(D) >= 0.5]),
    ]


@pytest.mark.parametrize("which", range(4))
def test_rows_at_constant_scores_are_their_exact_values(which):
    """Every row (objective and constraints) of four compositions -- rates, a ratio, a
    worst-case rate, mean and robust losses, TPR@K's surrogate -- at constant scores on both
    sides of 0, including the smallest ones the search tries."""
    analysis = _problems(_PLAIN)[which].analysis
    at = _RowsAtConstants(analysis)
    for c in (-50.0, -3.2, -1e-9, 0.0, 1e-9, 0.37, 12.0, 50.0):
        for row in analysis.rows:
            assert at.value(row, c) == pytest.approx(
                comparison_value(row, ConstantScore(c)), rel=1e-12, abs=1e-12), (row.name, c)


@settings(max_examples=40, deadline=None)
@given(phi=st.sampled_from(["chi2", "kl", HELLINGER]),
       rho=st.sampled_from([0.005, 0.1, 0.5, 1.5]),
       loss=st.sampled_from(["logistic", "hinge"]),
       score=st.floats(-50.0, 50.0, allow_nan=False))
def test_a_robust_loss_at_a_constant_score_is_its_two_class_worst_case(phi, rho, loss, score):
    """The worst case over the ball of a loss that takes one value per class (one weight per
    class, a 1-D root) equals the inner maximization over every example's weight, for
    chi-square, KL and the squared Hellinger distance, up to the ball's radius where every
    weight moves to one class."""
    term = rc.robust_loss(rc.PhiDivergenceBall(_PLAIN, phi=phi, rho=rho), loss=loss)
    exact = term.value(ConstantScore(score))
    assert term.value_at_constant(score) == pytest.approx(exact, rel=1e-10, abs=1e-12)
