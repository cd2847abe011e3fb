"""The chain reports the ties of eq. (4) on its MM path (issue #29).

Where the structured chain and the CVXPY chain part on logistic loss + churn + 80% rule
(2,000 Adult rows: fixed points 0.654 and 1.385, both ``optimal``), the first difference that
enters a step is at examples pinned at the switch point of one of their bounds (a u+ bound from
churn, a u- bound from the 80% rule), placed 1e-11 on one side of it by one step solver and
3e-9 on the other by the other (docs/composition_log.md, "where the two chains part"). The
chains count such anchors (``tied_anchors``) and the tied examples at the returned point
(``tied_examples``); on the 2,000-row grid of benchmarks.composition every row whose two chains
part has ties. A problem whose examples each have bounds of one side has none, and there the
two chains agree.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from benchmarks.composition import adult, grid
from ratecons.canonical.rate_program import TIE_TOL

ROWS = 1000


@pytest.fixture(scope="module")
def data():
    return adult(ROWS)


def _solve(problem, method: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.solve(method, verbose=False)


def _tied_by_hand(result, data, upper: np.ndarray, lower: np.ndarray) -> int:
    z = result.decision_function(data.X)
    return int(np.sum((upper & (np.abs(z - 0.5) <= TIE_TOL))
                      | (lower & (np.abs(z + 0.5) <= TIE_TOL))))


def test_churn_and_the_80_percent_rule_tie_on_the_path_and_at_the_point(data):
    result = _solve(grid()["logistic + churn + 80%"][0](data), "structured")
    details = result.certificate.details
    assert result.status == "optimal"
    assert details["tied_anchors"] >= 1
    # churn: u+ where the baseline is 0, u- where it is 1; the 80% rule: u- in a, u+ in b
    group, base = np.asarray(data.groups["g"]), np.asarray(data.baseline)
    upper, lower = (group == "b") | (base == 0), (group == "a") | (base == 1)
    assert details["tied_examples"] == _tied_by_hand(result, data, upper, lower) > 0


def test_a_worst_case_rate_beside_the_error_rate_ties(data):
    a, b = data.group("g", "a"), data.group("g", "b")
    problem = rc.Problem(minimize=rc.error_rate(data), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.worst_case(rc.positive_rate(a), rc.PhiDivergenceBall(
                             a, phi="chi2", rho=0.1)) >= 0.8 * rc.positive_rate(b)])
    result = _solve(problem, "structured")
    details = result.certificate.details
    assert details["tied_anchors"] >= 1
    # the error rate: u+ on the negatives, u- on the positives; the worst-case positive rate
    # of a (a floor): u- in a; 0.8 times the positive rate of b: u+ in b
    group, y = np.asarray(data.groups["g"]), np.asarray(data.y)
    upper, lower = (y == 0) | (group == "b"), (y == 1) | (group == "a")
    assert details["tied_examples"] == _tied_by_hand(result, data, upper, lower) > 0


def test_one_direction_per_example_has_no_tie_and_the_chains_agree(data):
    problem = grid()["logistic + 80% rule"][0](data)
    structured, reference = _solve(problem, "structured"), _solve(problem, "cvxpy")
    for result in (structured, reference):
        assert result.status == "optimal"
        assert result.certificate.details["tied_anchors"] == 0
        assert result.certificate.details["tied_examples"] == 0
    assert abs(structured.objective - reference.objective) <= 1e-6 * max(
        1.0, abs(reference.objective))
