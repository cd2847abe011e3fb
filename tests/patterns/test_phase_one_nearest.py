"""Phase one returns a step that met the rows when its search left it (issue 29).

On 6,000 Adult rows (logistic loss, churn <= 0.05, the 80% rule, the structured chain from a
2,000-row sample) one machine's phase one met every surrogate row without the chain's margin
at a penalty step, went on towards the margin, stalled in stage 2 at a total violation of
2e-3 and said ``infeasible`` with "stopped at 0 > 0": a feasible start was found and dropped.
The search is scripted here (the seams of :func:`ratecons.phase_one.run_phase_one`: its
elastic steps and the rows they reach), so the path is the same on every machine."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import phase_one, settings
from ratecons.reductions.to_cvxpy import ConvexStep

BOUNDS = np.array([0.05, 0.0])
MARGIN = 0.01


def _analysis() -> object:
    rng = np.random.default_rng(0)
    D = rc.Dataset(rng.normal(size=(40, 2)), (rng.random(40) < 0.5).astype(int))
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.5],
                         model=rc.LinearModel(l2=1e-3))
    return problem.analysis


def _scripted(monkeypatch, excess: list[float]) -> list[ConvexStep]:
    """Step t of phase one reaches rows = BOUNDS + excess[t] (the last value from then on)."""
    steps: list[ConvexStep] = []

    def solve(psi, anchor, target, penalty):
        steps.append(ConvexStep(settings.OPTIMAL, 1.0, np.full(2, float(len(steps))), 0.0,
                                solver="scripted"))
        return steps[-1]

    def rows(analysis, table):
        return BOUNDS + excess[min(int(table.w[0]), len(excess) - 1)]

    class Table:
        def __init__(self, step):
            self.w = step.w

    monkeypatch.setattr(phase_one, "step_scores", lambda psi, step: {})
    monkeypatch.setattr(phase_one, "score_table", lambda a, f, s, step, kept: Table(step))
    monkeypatch.setattr(phase_one, "surrogate_rows", rows)
    monkeypatch.setattr(phase_one, "_merit", lambda a, table, w, violation, penalty: violation)
    return steps, phase_one.ElasticSolver(solve, margin=MARGIN)


def test_a_step_that_met_the_rows_is_the_start_when_the_search_stalls_past_it(monkeypatch):
    # 0: far; 1: meets the rows, not the margin (-0.004 each); then stalls 1e-3 outside
    steps, elastic = _scripted(monkeypatch, [0.05, -0.004, 0.001])
    found, step = phase_one.run_phase_one(_analysis(), None, {}, elastic, BOUNDS, 30, None)
    assert found.status == settings.OPTIMAL and step is steps[1]
    assert found.certificate.details["phase1_iterations"] == 1
    assert found.certificate.max_violation == 0.0
    assert len(steps) > 3  # the search went on past it before it stalled


@pytest.mark.parametrize("excess", [[0.05, 0.003, 0.002], [0.05, 0.002]])
def test_a_search_that_never_met_the_rows_claims_no_proof_and_gives_its_least_violation(
        monkeypatch, excess):
    _, elastic = _scripted(monkeypatch, excess)
    found, step = phase_one.run_phase_one(_analysis(), None, {}, elastic, BOUNDS, 30, None)
    assert step is None and found.status == settings.INFEASIBLE_INACCURATE
    smallest = found.certificate.details["smallest_violation"]
    assert smallest == pytest.approx(2 * min(excess))
    assert f"stopped at {smallest:.4g} > 0" in found.certificate.details["message"]
