"""The centred warm start of the structured step (:mod:`ratecons.solvers.structured_warm`):
the first iterate of an MM step from the previous step's answer has every slack-multiplier
pair at a product of at least mu_0 and a relative gap near ``WARM_GAP``, and the warm-started
step reaches the same certified optimum as a cold start and as the CVXPY step at that anchor."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import pick_solver, solve_step
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers.structured import _IPM, solve_structured
from ratecons.solvers.structured_form import WarmStart
from ratecons.solvers.structured_warm import WARM_GAP


def _problem(constraint: str) -> rc.Problem:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    D = train.take(np.random.default_rng(0).choice(train.n, 2000, replace=False))
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    rows = {"recall": [rc.recall(D) >= 0.8],
            "80% rule": [rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)]}
    return rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-3),
                      subject_to=rows[constraint])


@pytest.fixture(scope="module", params=["recall", "80% rule"])
def second_step(request):
    """The first MM step (anchored at the hinge relaxation's answer) and a warm start from
    that answer."""
    analysis = _problem(request.param).analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    cache: dict = {}
    first = solve_structured(lower_structured(analysis, psi, None, bounds, cache))
    assert first.status == "optimal"
    anchor = {key: np.asarray(P @ first.w).ravel() - first.b for key, P in psi.items()}
    form = lower_structured(analysis, psi, anchor, bounds, cache)
    warm = WarmStart(first.w, first.b, first.duals, first.extra)
    return analysis, psi, anchor, bounds, form, warm


def test_the_warm_start_is_centred(second_step):
    *_, form, warm = second_step
    ipm = _IPM(form)
    x = ipm.start(warm)
    ev = ipm.evaluate(x)
    pairs = sum(x.s[g].size for g in x.s)
    mu0 = WARM_GAP * max(float(ipm.sc.kappa[0]), abs(ev["objective"])) / pairs
    for g in x.s:
        assert np.all(x.s[g] > 0) and np.all(x.lam[g] > 0)
        assert np.all(x.s[g] * x.lam[g] >= mu0 * ipm.weights[g] * (1 - 1e-9)), g
    rel_gap = ipm.measures(x, ev)[0]
    # the pairs at the floor give WARM_GAP; the pieces whose side changed add the rest (the
    # former start, every slack and multiplier shifted by 0.3, began at a relative gap above 1)
    assert WARM_GAP * 0.99 <= rel_gap < 3 * WARM_GAP


def test_the_warm_step_reaches_the_cold_and_the_cvxpy_optimum(second_step):
    analysis, psi, anchor, bounds, form, warm = second_step
    hot = solve_structured(form, warm=warm)
    cold = solve_structured(form)
    reference = solve_step(analysis, psi, anchor, bounds, pick_solver(analysis, None),
                           tight=True)
    assert hot.status == cold.status == "optimal" and hot.rel_gap <= 1e-8
    assert hot.objective == pytest.approx(cold.objective, rel=1e-7)
    assert hot.objective == pytest.approx(reference.objective, rel=1e-6)
