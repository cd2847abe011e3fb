"""The structured step on TPR@K steps whose optimum is degenerate (many negatives tied at the
threshold of the sum_largest row, positives at the hinge's kink), against CLARABEL.

Before the separate primal and dual steps and the gap in the form's units
(:func:`ratecons.solvers.structured_correctors.primal_dual_steps`,
:meth:`ratecons.solvers.structured._IPM.measures`), these steps ended ``numerical_error``
(usenet2: 59 iterations; the 5,000-row Adult sample of ``benchmarks.composition``: 55) and the
chain fell back to CLARABEL. Each must now be ``optimal`` with a certified gap <= 1e-6 and
agree with CLARABEL's step to 1e-6 in objective; the separate steps' prediction of the dual
residual is checked against the residual evaluated after the move.
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.solvers.structured import _IPM
from ratecons.solvers.structured_correctors import primal_dual_steps
from tests.shared_data import standardized
from tests.solvers.test_structured import _check_step, _random_form, _steps


def _adult_5000() -> rc.Dataset:
    """The 5,000-row sample of the Adult training split that ``benchmarks.composition`` takes
    (70% split with seed 0, then 5,000 rows by ``default_rng(0)``), groups by sex."""
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    return train.take(np.random.default_rng(0).choice(train.n, 5000, replace=False),
                      name="adult5000")


def _tpr_at_k(D: rc.Dataset, l2: float, constraints=()) -> rc.Problem:
    return rc.Problem(maximize=rc.tpr_at_top(D, k=max(1, D.n // 200)),
                      model=rc.LinearModel(l2=l2), subject_to=list(constraints))


def test_usenet2_tpr_at_k_step_matches_clarabel():
    ours, reference, _ = _steps(_tpr_at_k(standardized("usenet2"), 1e-2))
    _check_step(ours, reference)


def test_adult_tpr_at_k_step_matches_clarabel():
    """The lone TPR@K step of part B of benchmarks.composition, on 5,000 rows."""
    ours, reference, _ = _steps(_tpr_at_k(_adult_5000(), 1e-2))
    _check_step(ours, reference)


def test_adult_tpr_at_k_with_the_80_percent_rule_steps_and_chain():
    """TPR@K + 80% rule: the hinge relaxation's step and the step at the structured chain's
    anchor match CLARABEL, and the chain solves every step itself."""
    D = _adult_5000()
    women, men = D.group("sex", "Female"), D.group("sex", "Male")
    problem = _tpr_at_k(D, 1e-3, [rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])
    ours, reference, _ = _steps(problem)
    _check_step(ours, reference)
    chain = problem.solve(method="structured")
    assert chain.status == "optimal"
    assert chain.certificate.details["reference_steps"] == 0
    assert chain.report().all_satisfied
    ours, reference, _ = _steps(problem, chain)
    _check_step(ours, reference)


@pytest.mark.parametrize("seed", range(4))
def test_separate_steps_predict_the_dual_residual(seed):
    """On a step without smooth parts the dual residual after moving by (a_p, a_d) is
    (1 - a_d) r + (a_p - a_d) l2 dw (:func:`primal_dual_steps`): the prediction its guard
    rests on equals the residual evaluated at the moved iterate."""
    form = _random_form(seed, 30, 4, 2, l1=seed % 2 == 1, intercept=True, extra=1)
    form.smooth = []
    ipm = _IPM(form)
    assert ipm.separate
    x = ipm.start()
    ev = ipm.evaluate(x)
    system = ipm.factor(x, ev)
    d = ipm.direction(x, ev, system, {g: x.s[g] * x.lam[g] - 0.1 for g in x.s}, True)
    primal, dual = primal_dual_steps(ipm, x, d, ev, 0.99, np.inf)
    assert 0.0 < primal <= 1.0 and 0.0 < dual <= 1.0
    after = ipm.evaluate(x.moved(d, primal, dual).exact())
    predicted = (1.0 - dual) * ev["r_theta"]
    predicted[:ipm.p] += (primal - dual) * ipm.sc.l2 * d.theta[:ipm.p]
    scale = max(1.0, float(np.abs(ev["r_theta"]).max()))
    assert np.allclose(after["r_theta"], predicted, atol=1e-8 * scale, rtol=0)
    assert np.allclose(after["r_u"], (1.0 - dual) * ev["r_u"], atol=1e-8 * scale, rtol=0)
    # with no room for the dual residual to grow, a differing pair becomes the common step
    if primal != dual:
        step = min(primal, dual)
        assert primal_dual_steps(ipm, x, d, ev, 0.99, 0.0) == (step, step)
