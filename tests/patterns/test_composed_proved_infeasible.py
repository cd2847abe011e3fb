"""A structured step proved infeasible goes straight on (issue 29, review of the last stop).

The structured interior point ends a step whose rows no model meets ``infeasible`` with a Farkas
ray (:mod:`ratecons.solvers.structured_infeasible`). The structured chain then still solved the
step by way of its elastic step at two exact penalties
(:func:`ratecons.structured_phase_one.step_by_elastic`), which on such a step can only keep a
slack and end ``infeasible`` too, before phase one (a repair's tightened step) or the final
``infeasible`` (a problem without ramp parts) took over. Now the proved step goes on at once:
the same answer, two solves fewer. The numbers pinned below are the ones the chain gave before
(diabetes, 768 rows).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc
from ratecons import generic, settings, structured_phase_one
from tests.shared_data import standardized


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


@pytest.fixture
def solves(monkeypatch):
    """Counts the elastic solves of ``step_by_elastic`` and records the message of every step
    phase one restarts from."""
    seen = {"elastic": 0, "restarted_from": []}
    real_solve, real_restart = structured_phase_one.solve_structured, generic._ChainRun.restart

    def counted(*args, **kwargs):
        seen["elastic"] += 1
        return real_solve(*args, **kwargs)

    def restart(self, anchor, failed):
        seen["restarted_from"].append(failed.message)
        return real_restart(self, anchor, failed)

    monkeypatch.setattr(structured_phase_one, "solve_structured", counted)
    monkeypatch.setattr(generic._ChainRun, "restart", restart)
    return seen


def _solve(problem: rc.Problem, method: str = "structured") -> rc.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.solve(method=method)


def test_a_repairs_proved_infeasible_step_goes_to_phase_one_without_elastic_solves(
        diabetes, solves, monkeypatch):
    """Logistic loss, recall >= 0.85, positive rate <= 0.5: the first repair's tightened step
    is proved infeasible and phase one restarts from it. Before: two elastic solves on it
    first, 909 interior-point iterations in all; the answer below is the one it gave. (The
    chain's first round at the paper's ramp width: the rounds at the loss's scale that follow
    it are tests/patterns/test_chain_scale.py's.)"""
    monkeypatch.setattr(settings, "SCALE_ROUNDS", 0)
    problem = rc.Problem(minimize=rc.logistic_loss(diabetes),
                         subject_to=[rc.recall(diabetes) >= 0.85,
                                     rc.positive_rate(diabetes) <= 0.5],
                         model=rc.LinearModel(l2=1e-3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = problem.solve(method="structured")
    details = result.certificate.details
    # the warning does not say a limit was reached where the message says none was
    limit = [str(w.message) for w in caught if issubclass(w.category, rc.ConvergenceWarning)]
    assert len(limit) == 1 and "ended without a certified fixed point" in limit[0]
    assert "reached" not in limit[0].split(";")[0]
    assert details["stopped_by"] == "stalled"  # not a limit: the repair's miss
    assert len(solves["restarted_from"]) == details["phase1_restarts"] == 1
    assert "Farkas" in solves["restarted_from"][0]
    assert solves["elastic"] == 0
    assert details["interior_iterations"] < 909
    assert result.status == settings.ITERATION_LIMIT
    # the answer before, to 1e-7: the steps are certified at 1e-8, and refining the
    # directions after any iteration whose dual residual grew moved it by 4.9e-9
    assert result.objective == pytest.approx(2.4417925888159973, rel=1e-7)
    assert details["message"] == ("the deterministic model misses 'positive_rate("
                                  "diabetes[all]) <= 0.5' by 0.0013 on the training data "
                                  "after 1 repair round(s); no time or iteration limit "
                                  "was reached, so a larger max_iterations changes nothing")


@pytest.mark.parametrize("bound", [0.05, 0.2])
def test_a_convex_problem_proved_infeasible_ends_without_elastic_solves(diabetes, solves,
                                                                         bound):
    """Logistic loss with each class's mean hinge loss <= ``bound``: convex rows no model
    meets. The structured chain ends ``infeasible`` with the CVXPY chain's message, from the
    proved step alone (before: two elastic solves more, 45-46 interior-point iterations)."""
    problem = rc.Problem(minimize=rc.logistic_loss(diabetes),
                         subject_to=[rc.hinge_loss(diabetes.positives) <= bound,
                                     rc.hinge_loss(diabetes.negatives) <= bound],
                         model=rc.LinearModel(l2=1e-3))
    result = _solve(problem)
    reference = _solve(problem, "cvxpy")
    assert result.status == reference.status == settings.INFEASIBLE
    assert result.certificate.details["message"] == reference.certificate.details["message"]
    assert solves["elastic"] == 0 and not solves["restarted_from"]
    assert result.certificate.details["interior_iterations"] <= 20
    assert np.isnan(result.objective)
