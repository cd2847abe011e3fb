"""One ladder for a structured step that fails: warm start, cold start, the CVXPY step
(:mod:`ratecons.structured_fallback`), used by the chain's MM steps and phase one's elastic
steps alike (before, each had its own copy, and the failed warm attempt's iterations were not
counted)."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from ratecons import settings, structured_fallback
from ratecons.testing import tight_churn_recall_problem


def test_every_failed_warm_start_is_solved_cold_and_counted(monkeypatch):
    problem = tight_churn_recall_problem(l2=1e-3)
    plain = problem.solve(method="structured")
    assert plain.status == settings.OPTIMAL
    real = structured_fallback.solve_structured
    callers: list[str] = []
    spent = {"iterations": 0}  # by every attempt of the ladder, warm and cold

    def warm_fails(form, *, tol, deadline, warm=None):
        answer = real(form, tol=tol, deadline=deadline, warm=warm)
        spent["iterations"] += answer.iterations
        if warm is None:
            return answer
        callers.append(sys._getframe(2).f_code.co_filename.rsplit("/", 1)[-1])
        return replace(answer, status=settings.NUMERICAL_ERROR, message="stalled (test)")

    monkeypatch.setattr(structured_fallback, "solve_structured", warm_fails)
    result = problem.solve(method="structured")
    details = result.certificate.details
    # both kinds of step went through the one ladder, and each warm failure was solved cold
    assert {"structured_chain.py", "structured_phase_one.py"} <= set(callers)
    assert result.status == settings.OPTIMAL
    assert details["reference_steps"] == 0 and details["phase1_reference_steps"] == 0
    assert result.objective == pytest.approx(plain.objective, rel=1e-4)
    # the failed warm attempts' iterations are counted with the cold ones
    assert details["interior_iterations"] >= spent["iterations"]


@pytest.mark.parametrize("gap, inexact", [(2e-2, True), (0.5, False)])
def test_a_stalled_elastic_step_near_its_optimum_is_phase_one_s_anchor(monkeypatch, gap,
                                                                       inexact):
    """The first elastic step of phase one stalls (fault injected: its answer's status set
    to ``numerical_error`` at the given gap): near its optimum its iterate is the next anchor
    (no CLARABEL solve; on the whole Adult split such a solve took 75-200 s), far from it the
    CVXPY elastic step solves it again. Both runs end at a certified fixed point."""
    problem = tight_churn_recall_problem(l2=1e-3)
    real = structured_fallback.solve_structured
    stalled: list[int] = []

    def first_elastic_stalls(form, *, tol, deadline, warm=None):
        answer = real(form, tol=tol, deadline=deadline, warm=warm)
        caller = sys._getframe(2).f_code.co_filename
        if caller.endswith("structured_phase_one.py") and not stalled:
            stalled.append(answer.iterations)
            return replace(answer, status=settings.NUMERICAL_ERROR, rel_gap=gap,
                           message="stalled (test)")
        return answer

    monkeypatch.setattr(structured_fallback, "solve_structured", first_elastic_stalls)
    result = problem.solve(method="structured")
    details = result.certificate.details
    assert stalled and result.status == settings.OPTIMAL and result.report().all_satisfied
    assert details["phase1_inexact_steps"] == (1 if inexact else 0)
    assert details["phase1_reference_steps"] == (0 if inexact else 1)
