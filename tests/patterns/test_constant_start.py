"""MM again from the best feasible constant when the answer is worse than it
(:mod:`ratecons.constant_start`).

Adult, error rate with exact demographic parity between the sexes: MM's fixed point from the
hinge relaxation was the all-positive model (error 0.7605 on 2,000 rows) and the solve said
``optimal`` with a warning that the all-negative model (0.2395) meets both rows. Started from
that constant, Alg 1 cannot end worse (it decreases from any point meeting its rows), and the
better of the two answers is returned.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons.constant_start import constant_to_try


def _parity(rows: int, model: rc.LinearModel | None = None,
            objective=rc.error_rate) -> rc.Problem:
    adult = rc.datasets.load_adult()
    train, _ = adult.split(rows / adult.n, seed=0)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    return rc.Problem(minimize=objective(train),
                      subject_to=rc.positive_rate(women) - rc.positive_rate(men) == 0,
                      model=model or rc.LinearModel(l2=1e-3))


def _solve(problem: rc.Problem, method: str, **options) -> tuple[rc.Result, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method=method, verbose=False, **options)
    return result, [str(w.message) for w in caught]


def test_the_structured_chain_returns_the_better_answer_from_the_constant():
    problem = _parity(2000)
    result, messages = _solve(problem, "auto")
    record = result.certificate.details["constant_restart"]
    assert result.method == "structured" and result.status == "optimal"
    assert record["first_objective"] == pytest.approx(0.7605)
    assert record["constant"] == "all-negative" and record["kept"]
    exact = result.report().rows[0].indicator
    assert exact == pytest.approx(0.2395) == record["restart_objective"]
    assert result.report().all_satisfied
    assert not any("WORSE" in m for m in messages)
    # the answer now stands level with the constant: nothing to restart from
    assert constant_to_try(problem.analysis, result.scorer) is None


def test_the_rate_pattern_restarts_from_the_constants_model():
    """``mm`` (SDCA bounds; it refuses an exact equality) on 500 rows with parity to within
    1e-4, in a 3 s budget: its answer at the limit is the all-positive model (0.76); the
    restart from the constant's (w, b) = (0, 1) keeps the constant (0.24), the status still
    the limit's."""
    adult = rc.datasets.load_adult()
    train, _ = adult.split(500 / adult.n, seed=0)
    gap = (rc.positive_rate(train.group("sex", "Female"))
           - rc.positive_rate(train.group("sex", "Male")))
    problem = rc.Problem(minimize=rc.error_rate(train), subject_to=[gap <= 1e-4, gap >= -1e-4],
                         model=rc.LinearModel(l2=1e-3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method="mm", verbose=False, time_limit=3.0)
    record = result.certificate.details["constant_restart"]
    assert record["first_objective"] == pytest.approx(0.76) and record["kept"]
    assert result.report().rows[0].indicator == pytest.approx(0.24)
    np.testing.assert_array_equal(result.predict(problem.analysis.datasets[0].X), 0)
    # only the kept run's limit warning: the discarded run's (a multiplier at V_max, and its
    # own time limit after its first bound) spoke of a model the user does not get
    limits = [str(w.message) for w in caught if issubclass(w.category, rc.ConvergenceWarning)]
    assert len(limits) == 1 and "after 0 iterations" in limits[0], limits


def test_no_restart_where_the_answer_beats_the_constant_or_a_part_is_not_a_rate():
    loosened = _parity(500)
    adult = loosened.analysis.datasets[0]
    better = rc.Problem(minimize=rc.error_rate(adult), model=rc.LinearModel(l2=1e-3))
    result, _ = _solve(better, "structured")
    assert "constant_restart" not in result.certificate.details
    logistic = _parity(500, objective=rc.logistic_loss)
    result, _ = _solve(logistic, "structured")
    assert constant_to_try(logistic.analysis, result.scorer) is None
    assert "constant_restart" not in result.certificate.details
