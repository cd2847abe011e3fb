"""A KL robust loss whose optimum is the constant model, solved by the structured step.

On letter_recognition with balanced labels (letters 0-12 against 13-25, standardized
features) a KL ball of radius 0.2 makes the constant score optimal: every logistic loss is
log 2, the dual's lam* is 0 and the support function is the largest loss. Full Newton steps
drove the ball's lam from 0.1 to 1e-3 and then to 1e-5, where t / lam reached the exponent cap
and the gradient 1e264; the step ended ``numerical_error`` (25 iterations, objective 0.699 on
1,000 rows, 0.701 on all 20,000) where CLARABEL reaches ``optimal``. The step now cuts every KL
lam's step to lose at most half of it (``structured_robust.halved_lams``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from tests.shared_data import load
from tests.solvers.test_structured import _check_step, _steps


def _balanced_letters(n: int, seed: int) -> rc.Dataset:
    raw = load("letter_recognition")
    X = np.asarray(raw.X, dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    rows = np.random.default_rng(seed).choice(X.shape[0], n, replace=False)
    return rc.Dataset(X[rows], (np.asarray(raw.y)[rows] < 13).astype(int),
                      name=f"letters{n}")


@pytest.mark.parametrize(("n", "seed"), [(1000, 0), (1500, 1)])
def test_kl_robust_loss_at_the_constant_model_matches_clarabel(n, seed):
    D = _balanced_letters(n, seed)
    problem = rc.Problem(minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="kl", rho=0.2)),
                         model=rc.LinearModel(l2=1e-3))
    ours, reference, _ = _steps(problem)
    if reference.status == "optimal_inaccurate":  # CLARABEL's exponential cones at lam* = 0
        reference.status = "optimal"
    _check_step(ours, reference)
    # the constant model is (nearly) optimal: the objective is log 2 up to what l2 lets w gain
    assert ours.objective <= np.log(2.0) + 1e-8
    assert ours.objective >= np.log(2.0) - 1e-3
    assert ours.iterations <= 40, ours.iterations
