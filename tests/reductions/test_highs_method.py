"""``method="highs"`` on QP steps (issue 30): auto never picks it, plan() and solve() say why.

HiGHS solves QP steps (an l2 term, a kernel model, a squared loss) by its active-set QP solver,
which stalled on the chain's hinge relaxation of 977 Adult rows (``matrix_chain.QP_STALL``,
measured: no answer in 30 s where the whole chain took 1.9 s with ``generic``). So ``auto``
never resolves to ``highs``, ``plan(method="highs")`` names the measured reason for a QP, and
``solve(method="highs")`` raises a :class:`~ratecons.SlowMethodWarning` with it; LP steps
(l1 or no regularizer) keep ``highs`` quiet.
"""

from __future__ import annotations

import warnings

import pytest

import ratecons as rc
from ratecons.matrix_chain import QP_STALL, qp_stall_note
from ratecons.testing import small_composition_data

L1 = rc.LinearModel(l2=0.0, l1=1e-2)
L2 = rc.LinearModel(l2=1e-2)


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(120, group="sex", values=("Female", "Male"),
                                  feature_names=["age", "hours per week", "education"])


def _fair(D: rc.Dataset, objective, model) -> rc.Problem:
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    return rc.Problem(minimize=objective,
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
                      model=model)


def test_auto_never_picks_highs(data):
    adult = rc.datasets.load_adult()
    train, _ = adult.split(0.02, seed=0)  # the 977 rows of the measurement
    problems = [_fair(D, rc.hinge_loss(D), model) for D in (data, train) for model in (L1, L2)]
    problems += [_fair(train, rc.mean_loss(train, "squared"), L2),
                 _fair(data, rc.error_rate(data) + rc.hinge_loss(data), L2),
                 rc.Problem(maximize=rc.tpr_at_top(train, k=5) - 0.1 * rc.error_rate(train),
                            model=L2)]
    for problem in problems:
        plan = problem.plan()
        assert plan.method != "highs", str(plan)


def test_plan_names_the_measured_reason_for_qp_steps_only(data):
    qp, lp = _fair(data, rc.hinge_loss(data), L2), _fair(data, rc.hinge_loss(data), L1)
    reasons = "\n".join(qp.plan(method="highs").reasons)
    assert "method 'highs' is slow here" in reasons and "977 Adult rows" in reasons
    assert "method='structured'" in reasons and "auto never picks 'highs'" in reasons
    assert qp_stall_note(qp.analysis) == f"method 'highs' is slow here: {QP_STALL}"
    assert qp_stall_note(lp.analysis) is None
    assert "slow here" not in "\n".join(lp.plan(method="highs").reasons)


def test_solve_warns_on_qp_steps_and_still_agrees(data):
    qp = _fair(data, rc.error_rate(data), L2)
    with pytest.warns(rc.SlowMethodWarning, match="active-set QP solver; that solver can stall"):
        result = qp.solve(method="highs")
    reference = qp.solve(method="generic")
    assert result.status == reference.status == "optimal"
    assert abs(result.objective - reference.objective) <= 1e-5 * max(1.0, abs(reference.objective))
    lp = _fair(data, rc.hinge_loss(data), L1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lp.solve(method="highs").status == "optimal"
    assert not [w for w in caught if issubclass(w.category, rc.SlowMethodWarning)]
