"""The weighted central path (solvers/structured_centre.py) on real data.

An Adult sample (4,000 rows of the training split, 108 features): the hinge loss with the
bound of eq. 4 of Goh et al. (the hinge relaxation) on the women's positive rate in a row of
its own, the bound 0.05 above its value at the unconstrained optimum, so that the row is
inactive (the shape of the whole-split hinge + 80% rule steps whose row goes inactive). With
the threshold of pieces lowered to the row's size, a warm start whose row multiplier is 0
runs the step on the weighted path (checked: the interior point is built with the row
flagged), which ends ``optimal`` with a certified gap <= 1e-6 and agrees with the CLARABEL
step on the same problem (lowered by the CVXPY chain at the same anchor and bounds) to 1e-6
relative in objective; so does the plain path from a cold start.
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import solve_step
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers import structured, structured_centre
from ratecons.solvers.structured import CERTIFIED_TOL, solve_structured
from ratecons.solvers.structured_form import WarmStart

STEP_RTOL = 1e-6


@pytest.fixture(scope="module")
def step() -> tuple:
    """(analysis, psi, bounds, the row's pieces) of the hinge + women's rate step."""
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    adult = train.take(np.random.default_rng(1).choice(train.n, 4000, replace=False))
    women = adult.group("sex", "Female")
    problem = rc.Problem(minimize=rc.hinge_loss(adult), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(women) <= 1.0])
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    loose = lower_structured(analysis, psi, None, np.array([1e6]))
    free = solve_structured(loose)
    assert free.status == "optimal", free.message
    bounds = np.array([loose.row_values(free.w, free.b)[1] + 0.05])
    return analysis, psi, bounds, women.n, free


def test_inactive_real_row_runs_on_the_weighted_path_and_matches_clarabel(step, monkeypatch):
    analysis, psi, bounds, pieces, free = step
    monkeypatch.setattr(structured_centre, "WEIGHTED_START_FROM", pieces)
    flagged: list[bool] = []
    plain_ipm = structured._IPM

    class Spy(plain_ipm):
        def __init__(self, form, weighted=None):
            flagged.append(weighted is not None and bool(np.any(weighted)))
            super().__init__(form, weighted)

    monkeypatch.setattr(structured, "_IPM", Spy)
    form = lower_structured(analysis, psi, None, bounds)
    reference = solve_step(analysis, psi, None, bounds, "CLARABEL", tight=True)
    assert reference.status == "optimal"
    cold = solve_structured(form)
    assert flagged == [False]  # no warm start: the plain path
    weighted = solve_structured(form, warm=WarmStart(0.9 * free.w, free.b, np.zeros(1),
                                                     np.zeros(form.extra)))
    assert flagged[1] is True  # the warm start marks the row inactive: the weighted path
    assert len(flagged) == 2  # ... and it answered (no plain run after it)
    for answer in (cold, weighted):
        assert answer.status == "optimal", answer.message
        assert max(answer.rel_gap, answer.primal_residual, answer.dual_residual) <= CERTIFIED_TOL
        gap = abs(answer.objective - reference.objective) / max(1.0, abs(reference.objective))
        assert gap <= STEP_RTOL, (answer.objective, reference.objective)
        assert answer.max_violation <= 1e-8
    assert weighted.duals[0] <= 1e-6  # the row is inactive at the optimum
    assert reference.duals[0] <= 1e-6
