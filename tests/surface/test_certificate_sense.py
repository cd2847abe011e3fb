"""The certificate reads in the user's sense, as the objective, for every method.

A user maximizing TPR@5 on 1,000 Adult rows got lower = upper = -0.03626 from `structured`
and upper = -0.03626 from `generic` next to the objective 0.03626, and maximizing accuracy
under the 80% rule got upper bounds of -0.8602 (structured), 0.1398 (cvxpy: the error rate)
and 0.1394 (mm): three conventions, none the objective's. Every result's bounds now bracket
its objective in the user's sense: ``lower_bound <= objective <= upper_bound`` where given.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ratecons as rc


@pytest.fixture(scope="module")
def adult():
    data = rc.datasets.load_adult()
    return data.take(np.random.default_rng(3).choice(data.n, 600, replace=False))


def _rule(D: rc.Dataset):
    return rc.positive_rate(D.group("sex", "Female")) >= 0.8 * rc.positive_rate(
        D.group("sex", "Male"))


CASES = [
    ("top", "maximize", ("primal_ipm", "dual_ca", "cvxpy", "generic", "structured")),
    ("accuracy", "maximize", ("structured", "cvxpy", "mm")),
    ("error", "minimize", ("structured", "cvxpy", "mm")),
]


@pytest.mark.parametrize("kind, sense, methods", CASES)
def test_bounds_bracket_the_objective_in_its_sense(adult, kind, sense, methods):
    if kind == "top":
        problem = rc.Problem(maximize=rc.tpr_at_top(adult, k=5), model=rc.LinearModel(l2=1e-2))
    else:
        objective = rc.accuracy(adult) if kind == "accuracy" else rc.error_rate(adult)
        problem = rc.Problem(**{sense: objective}, subject_to=[_rule(adult)],
                             model=rc.LinearModel(l2=1e-3))
    for method in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = problem.solve(method)
        assert result.status == "optimal", method
        cert = result.certificate
        assert cert.lower_bound is not None or cert.upper_bound is not None, method
        slack = 1e-7 * max(1.0, abs(result.objective))
        if cert.lower_bound is not None:
            assert cert.lower_bound <= result.objective + slack, (method, cert)
        if cert.upper_bound is not None:
            assert result.objective <= cert.upper_bound + slack, (method, cert)
        # the model's own value is the bound on the side an attained point gives
        attained = cert.lower_bound if sense == "maximize" else cert.upper_bound
        assert attained == pytest.approx(result.objective, rel=1e-6, abs=1e-9), method


@pytest.mark.parametrize("method", ["structured", "cvxpy", "mm"])
def test_the_history_reads_in_the_objectives_sense(adult, method):
    """Maximize recall under a positive-rate cap: the history read [-0.724, -0.755] next to
    the objective 0.755 (structured), and 1 - accuracy under mm; it reads as the objective
    now: its last MM record is within the fixed point's tolerance of it."""
    problem = rc.Problem(maximize=rc.recall(adult), subject_to=[rc.positive_rate(adult) <= 0.3],
                         model=rc.LinearModel(l2=1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method)
    values = [h["objective"] for h in result.history if h.get("objective") is not None]
    assert values and all(v > 0 for v in values), values[:3]
    assert min(abs(v - result.objective) for v in values) <= 1e-3 * abs(result.objective)


@pytest.mark.parametrize("method", ["primal_ipm", "dual_ca"])
def test_the_ranking_methods_history_reads_as_the_objective(adult, method):
    """TPR@5, the ranking pattern's own methods: the history held (3), 0.895 next to the
    objective 0.105, its bounds swapped, and plot.convergence drew a falling curve for a
    maximized objective. It holds 1 - (3) now, its last bounds bracketing the objective as
    the certificate's do; result.solution.history keeps the solver's (3)."""
    problem = rc.Problem(maximize=rc.tpr_at_top(adult, k=5), model=rc.LinearModel(l2=1e-2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = problem.solve(method)
    last = result.history[-1]
    slack = 1e-6 * max(1.0, abs(result.objective))
    if last.get("objective") is not None:
        assert last["objective"] == pytest.approx(result.objective, abs=1e-6)
    assert last["lower"] <= result.objective + slack <= last["upper"] + 2 * slack
    raw = result.solution.history[-1]
    assert raw["lower"] == pytest.approx(1.0 - last["upper"], abs=1e-12)
