"""The proof behind ``infeasible`` for rate rows (:mod:`ratecons.prediction_lp`): no predictions
in [0, 1] meet the rows.

Properties, on random weighted data with two groups and random rows (rates, a fairness ratio,
an error rate), bounds drawn around the values of a random set of predictions p0:
- sound: when a proof is given, every set of deterministic predictions (the p0 and random
  others) misses some row by at least the certified violation;
- no false proof: when p0 meets every row, no proof is given;
and proofs are given (the property is not vacuous).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.prediction_lp import unreachable_rows

#: the certified violation is exact arithmetic on the LP's multipliers, checked to rounding
ROUNDING = 1e-9


def _rows(D: rc.Dataset, kind: int) -> list:
    a, b = D.group("g", "a"), D.group("g", "b")
    return [rc.recall(D), rc.false_positive_rate(a),
            rc.positive_rate(a) - 0.8 * rc.positive_rate(b), rc.error_rate(b),
            rc.positive_rate(D), rc.true_positive_rate(b)][kind::2]


class _Predicts:
    """A scorer whose deterministic predictions on the problem's one dataset are ``p``."""

    ramp_width = 1.0

    def __init__(self, p: np.ndarray) -> None:
        self.z = 2.0 * p - 1.0

    def decision_function(self, X) -> np.ndarray:
        return self.z


def _case(seed: int, n: int, kind: int, weighted: bool, slack: float, band: bool):
    """(analysis, proof, p0, rng): the rows of ``kind`` at p0's values moved by ``slack`` (< 0:
    p0 misses them), each bounded above or below at random (``band``: the first on both sides),
    within the values each row can take."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    g = np.where(rng.random(n) < 0.5, "a", "b")
    g[[0, 1]], g[[2, 3]] = "a", "b"
    y[:4] = (0, 1, 0, 1)  # each group has both labels
    weights = rng.integers(1, 4, n).astype(float) if weighted else None
    p0 = rng.integers(0, 2, n).astype(float)
    D = rc.Dataset(np.zeros((n, 1)), y, groups={"g": g}, weights=weights, name="d")
    exprs = _rows(D, kind)
    values = [e.value(_Predicts(p0)) for e in exprs]
    signs = list(rng.choice([-1.0, 1.0], len(exprs)))
    if band:
        exprs, values, signs = [exprs[0], *exprs], [values[0], *values], [-signs[0], *signs]
    constraints = [e <= float(np.clip(v + slack, *e.range)) if s > 0
                   else e >= float(np.clip(v - slack, *e.range))
                   for e, v, s in zip(exprs, values, signs)]
    analysis = rc.Problem(minimize=rc.error_rate(D), subject_to=constraints).analysis
    return analysis, unreachable_rows(analysis), p0, rng


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 60), kind=st.integers(0, 1),
       weighted=st.booleans(), slack=st.floats(-0.3, 0.05), band=st.booleans())
def test_a_proof_holds_for_every_prediction_and_none_is_given_when_p0_meets_the_rows(
        seed, n, kind, weighted, slack, band):
    analysis, proof, p0, rng = _case(seed, n, kind, weighted, slack, band)
    if _missed(analysis, p0) <= 0:
        assert proof is None  # p0 meets every row
        return
    if proof is None:
        return
    assert proof.violation > 0 and abs(sum(proof.multipliers.values()) - 1.0) <= 1e-9
    for p in [p0, *rng.integers(0, 2, (30, n)).astype(float)]:
        assert _missed(analysis, p) >= proof.violation - ROUNDING


def test_both_answers_occur_on_the_cases_above():
    """The property above is not vacuous: on 40 cases with p0 missing its rows, some are
    proved unreachable and some are not (other predictions meet them)."""
    proofs = [_case(seed, 40, seed % 2, seed % 3 == 0, -0.15, seed % 4 == 0)[1]
              for seed in range(40)]
    assert 5 <= sum(p is not None for p in proofs) <= 35


def _missed(analysis, p: np.ndarray) -> float:
    """The largest amount by which the predictions ``p`` miss a row (<= 0: all met)."""
    return max(row.value(_Predicts(p), "exact") - row.bound for row in analysis.constraints)


def _shifted(n: int = 400, seed: int = 0) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return rc.Dataset(X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int), name="data")


def test_every_method_and_model_ends_at_the_proof_before_solving():
    """A user's check: recall >= 0.95 with a positive rate <= 0.3 (44% positives) under a
    gaussian kernel model ended ``iteration_limit`` with a model missing both rows under
    'auto', 'generic' and 'cvxpy' (the kernel chain had no phase one). The proof is asked
    before any method runs: ``infeasible``, no model, the same certificate everywhere."""
    D = _shifted()
    share = float(np.mean(D.y))
    for model in (rc.LinearModel(l2=1e-3), rc.KernelModel(kernel="gaussian", l2=1e-3)):
        problem = rc.Problem(minimize=rc.logistic_loss(D), model=model,
                             subject_to=[rc.recall(D) >= 0.95, rc.positive_rate(D) <= 0.3])
        for method in ("auto", "generic", "cvxpy", "structured"):
            result = problem.solve(method)
            assert result.status == "infeasible" and not result.has_model, (model, method)
            assert result.certificate.details["unreachable"]["violation"] == pytest.approx(
                (0.95 * share - 0.3) / (1 + share), rel=1e-9)
            assert "before the method ran" in result.reasons[-1]
    with pytest.raises(rc.SolverError, match="'infeasible'. No classifier meets 'recall"):
        result.predict(D.X)  # the proof's account, not a generic hint


def test_the_same_rows_in_two_datasets_are_one_set_of_predictions():
    """A user's check: churn <= 0.05 against a baseline (``D.with_baseline``, a new Dataset
    of the same rows) with a positive rate on ``D`` at least 0.15 above the baseline's: the
    LP took the two datasets' rows as different examples, found predictions meeting both and
    the stalled search said so. Datasets of equal features and weights are one set of rows:
    ``infeasible`` by a least violation of (0.15 - 0.05) / 2."""
    D = _shifted()
    base = (np.asarray(D.X)[:, 1] > 0.4).astype(int)
    churn = rc.churn_rate(D.with_baseline(base)) <= 0.05
    proof = unreachable_rows(rc.Problem(minimize=rc.error_rate(D), subject_to=[
        churn, rc.positive_rate(D) >= base.mean() + 0.15]).analysis)
    assert proof is not None and proof.violation == pytest.approx(0.05, rel=1e-9)
    other = rc.Dataset(np.asarray(D.X) + 1.0, D.y, name="other")  # other rows: no proof
    assert unreachable_rows(rc.Problem(minimize=rc.error_rate(D), subject_to=[
        rc.positive_rate(D) >= 0.6, rc.positive_rate(other) <= 0.2]).analysis) is None


@pytest.mark.parametrize("subsets", [3, 62, 70, 130])
def test_cells_are_the_distinct_memberships(subsets):
    """The cells of the LP: each example's membership in the rows' subsets, packed in
    integers of 62 bits (one word or several), read back as it was."""
    from ratecons.prediction_lp import _cells

    rng = np.random.default_rng(subsets)
    n = 500
    truth = rng.random((n, subsets)) < rng.random(subsets)
    member, cell_of = _cells([np.flatnonzero(truth[:, j]) for j in range(subsets)], n)
    np.testing.assert_array_equal(member[cell_of], truth)
    assert len(member) == len(np.unique(truth, axis=0))


def _reference_least_violation(analysis) -> float:
    """The least violation by the CVXPY reference: one variable per example (not per cell),
    every row written from its rates' subsets and weights."""
    import cvxpy as cp

    (data,) = analysis.datasets
    p, t = cp.Variable(data.n), cp.Variable()
    rows = []
    for row in analysis.constraints:
        value = row.constant
        for coef, part in row.parts:
            value = value + coef * (part.constant + sum(
                c * (subset.weights @ p[subset.index]) for subset, c in part.terms.values()))
        rows.append(value - row.bound <= t)
    problem = cp.Problem(cp.Minimize(t), [*rows, p >= 0, p <= 1])
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return float(t.value)


@pytest.mark.parametrize("case", ["adult", "diabetes", "adult feasible"])
def test_the_proof_has_the_cvxpy_references_least_violation_on_real_data(case):
    """Real data (1,500 Adult rows by sex; Pima diabetes): the certified violation equals the
    optimum of the per-example LP in CVXPY (CLARABEL) to 1e-6; where the reference's optimum
    is <= 0 (the targets within reach of some predictions), no proof is given."""
    from tests.shared_data import standardized

    if case == "diabetes":
        D = standardized("diabetes")
        rows = [rc.recall(D) >= 0.95, rc.positive_rate(D) <= 0.3]
    else:
        adult, _ = rc.datasets.load_adult().split(1500 / 48842, seed=5)
        sex = np.asarray(adult.groups["sex"])
        D = rc.Dataset(adult.X, adult.y, groups={"g": np.where(sex == "Female", "f", "m")})
        f, m = D.group("g", "f"), D.group("g", "m")
        loose = case == "adult feasible"
        rows = [rc.recall(D) >= 0.9, rc.false_positive_rate(f) <= (0.5 if loose else 0.05),
                rc.positive_rate(f) >= 0.8 * rc.positive_rate(m),
                rc.positive_rate(D) <= (0.5 if loose else 0.25)]
    analysis = rc.Problem(minimize=rc.error_rate(D), subject_to=rows).analysis
    reference = _reference_least_violation(analysis)
    proof = unreachable_rows(analysis)
    if case == "adult feasible":
        assert reference <= 1e-7 and proof is None
    else:
        assert proof is not None
        assert proof.violation == pytest.approx(reference, rel=1e-6, abs=1e-8)
