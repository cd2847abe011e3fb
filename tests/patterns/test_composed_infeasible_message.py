"""The message of an infeasible composition says what is wrong for that problem.

A composition whose constraints are losses only is convex: when its one step is infeasible no
model meets the rows, and the message names them without speaking of rates or of a hinge
relaxation (before, it said "every rate replaced by its hinge upper bound" for such problems
too). A problem with rate constraints keeps the relaxation's message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from tests.shared_data import standardized


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


def _solve(problem: rc.Problem, method: str) -> rc.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.solve(method, verbose=False)


@pytest.mark.parametrize("method", ["structured", "generic"])
def test_an_infeasible_loss_constraint_is_named_without_rates(diabetes, method):
    problem = rc.Problem(minimize=rc.logistic_loss(diabetes),
                         subject_to=[rc.hinge_loss(diabetes) <= 0.1],
                         model=rc.LinearModel(l2=1e-3))
    result = _solve(problem, method)
    message = result.certificate.details["message"]
    assert result.status == settings.INFEASIBLE and not result.has_model
    assert "hinge" in message and "<= 0.1" in message and "exact" in message
    assert "rate" not in message and "relaxation" not in message


@pytest.mark.parametrize("method", ["structured", "generic"])
def test_a_stalled_search_keeps_the_relaxation_message_and_claims_no_proof(diabetes, method):
    """Recall >= 0.5 with a hinge loss <= 0.1: the rate row alone is within reach of some
    predictions, so nothing proves the pair infeasible. Both chains end
    ``infeasible_inaccurate`` (phase one finds no point; 0.1-1.1 s each on diabetes), with the
    relaxation's message (before: ``infeasible``, which reads as a proof)."""
    problem = rc.Problem(minimize=rc.logistic_loss(diabetes),
                         subject_to=[rc.recall(diabetes) >= 0.5, rc.hinge_loss(diabetes) <= 0.1],
                         model=rc.LinearModel(l2=1e-3))
    result = _solve(problem, method)
    assert result.status == settings.INFEASIBLE_INACCURATE and not result.has_model
    message = result.certificate.details["message"]
    assert "hinge relaxation" in message and "no point satisfying the constraints" in message
    assert "none is proved absent" in message and "unreachable" not in result.certificate.details


@pytest.mark.parametrize("method", ["structured", "generic", "mm", "cvxpy"])
def test_rate_targets_no_predictions_meet_are_proved_infeasible(diabetes, method):
    """Recall >= 0.999 with a positive rate <= 0.01 (diabetes: 35% positives): no predictions
    at all meet both, and every method says ``infeasible`` with the certificate (the rows'
    multipliers, the least violation), without a search."""
    problem = rc.Problem(minimize=rc.logistic_loss(diabetes) if method in (
        "structured", "generic") else rc.error_rate(diabetes),
        subject_to=[rc.recall(diabetes) >= 0.999, rc.positive_rate(diabetes) <= 0.01],
        model=rc.LinearModel(l2=1e-3))
    result = _solve(problem, method)
    assert result.status == settings.INFEASIBLE and not result.has_model
    proof = result.certificate.details["unreachable"]
    share = float(np.mean(diabetes.y == 1))
    # recall >= 0.999 needs a positive rate >= 0.999 share: y = (share, 1) / (1 + share) weighs
    # the two rows to the least violation (0.999 share - 0.01) / (1 + share)
    assert proof["violation"] == pytest.approx((0.999 * share - 0.01) / (1 + share), rel=1e-6)
    assert sorted(proof["multipliers"].values()) == pytest.approx(
        sorted([share / (1 + share), 1 / (1 + share)]), rel=1e-6)
    assert "no classifier meets" in result.certificate.details["message"]


def test_a_tpr_floor_beyond_its_surrogate_does_not_claim_exactness():
    """A user's instance (1,026 Adult rows): logistic loss with TPR@0.1 >= 0.3. The TPR row is
    held through its concave lower bound, which no model lifts to 0.3, while the unconstrained
    model's exact TPR@0.1 is 0.77: the message said "none is replaced by a surrogate, so this
    is exact". It now says the row is held by its lower bound and that models meeting the
    exact target may exist."""
    adult = rc.datasets.load_adult()
    data, _ = adult.split(0.03, seed=11)
    train, _ = data.split(0.7, seed=0)
    free = _solve(rc.Problem(minimize=rc.logistic_loss(train), model=rc.LinearModel(l2=1e-3)),
                  "auto")
    exact = rc.metrics.tpr_at_quantile(free.decision_function(train), train.y, 0.1)
    assert exact > 0.7
    _says_the_tpr_row_is_held_by_its_bound(
        rc.Problem(minimize=rc.logistic_loss(train),
                   subject_to=[rc.tpr_at_quantile(train, tau=0.1) >= 0.3],
                   model=rc.LinearModel(l2=1e-3)), "none is replaced")


def _says_the_tpr_row_is_held_by_its_bound(problem: rc.Problem, former: str) -> None:
    message = _solve(problem, "structured").certificate.details["message"]
    assert "concave lower bound" in message and "may exist" in message
    assert former not in message and "exact:" not in message


def test_a_tpr_floor_under_a_rate_objective_says_the_same(diabetes):
    """With an error-rate objective the same floor goes through phase one, whose message said
    "the targets are likely out of reach" (a user's check: 500 Pima rows, TPR@5 >= 0.05,
    which a logistic regression reaches exactly)."""
    D = diabetes.take(np.arange(500), name="train")
    _says_the_tpr_row_is_held_by_its_bound(
        rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.tpr_at_top(D, k=5) >= 0.05],
                   model=rc.LinearModel(l2=1e-3)), "likely out of reach")


def test_a_phase_one_that_finds_no_point_says_it_is_no_proof():
    """Raw Pima features, logistic loss with recall >= 0.85 and positive rate <= 0.5: phase
    one stalls (total ramp violation 0.0087) and the status is infeasible_inaccurate, though the
    standardized data (the same linear models) solve optimal with 'structured'. The message
    said the targets were "likely out of reach"; it says the status is no proof now, and what
    to try."""
    from tests.shared_data import load

    raw = load("diabetes")
    problem = rc.Problem(minimize=rc.logistic_loss(raw), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.recall(raw) >= 0.85, rc.positive_rate(raw) <= 0.5])
    result = _solve(problem, "structured")
    assert result.status == settings.INFEASIBLE_INACCURATE
    message = result.certificate.details["message"]
    assert "none is proved absent" in message and "Standardized features" in message
