"""The rate pattern's ``auto`` where ``mm`` does not apply (an l1 term): with QP bounds (l1 and
l2) it runs Alg 1 by the structured chain at every size, which reaches the fixed point of the
rate pattern's CVXPY reference (the same Problem-3 bounds); for LP bounds (no l2) it keeps
``cvxpy``."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings


def _adult(rows: int) -> rc.Dataset:
    adult = rc.datasets.load_adult()
    sample, _ = adult.split(rows / adult.n, seed=11)
    return sample


def _recall_floor(D: rc.Dataset, l2: float, l1: float) -> rc.Problem:
    return rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
                      model=rc.LinearModel(l2=l2, l1=l1))


def test_auto_runs_the_structured_chain_for_l1_and_agrees_with_cvxpy():
    D = _adult(2400)
    problem = _recall_floor(D, 1e-4, 1e-4)
    plan = problem.plan()
    assert plan.method == settings.STRUCTURED_METHOD
    assert any("QP bounds" in r and "structured" in r for r in plan.reasons)
    auto = problem.solve("auto")
    reference = problem.solve("cvxpy")
    assert auto.method == settings.STRUCTURED_METHOD and reference.method == "cvxpy"
    assert auto.status == "optimal" and reference.status == "optimal"
    # MM fixed points are local; the same Alg 1 over the same bounds lands on the same one here
    assert abs(auto.objective - reference.objective) <= 1e-4 * max(1.0, abs(reference.objective))
    assert auto.certificate.max_violation <= 1e-9  # the recall floor, on the training data
    recall = rc.recall(D).value(auto)
    assert recall >= 0.7 - 1e-12
    assert np.count_nonzero(np.abs(auto.w) > 1e-8) < auto.w.size  # l1 leaves zeros


@pytest.mark.parametrize(("rows", "l2", "method"), [
    (150, 1e-4, settings.STRUCTURED_METHOD),  # QP bounds at any size
    (2400, 0.0, "cvxpy"),  # LP bounds (no l2): HiGHS through cvxpy
])
def test_auto_picks_structured_for_qp_bounds_and_cvxpy_for_lp_bounds(rows, l2, method):
    problem = _recall_floor(_adult(rows), l2, 1e-4)
    assert problem.plan().method == method
