"""The full-Adult demo's constrained solve (``ratecons demo``) is a certified fixed point
(issue 32, item 3): its exact bias repair used to move the bias of the MM fixed point and keep
``optimal``; now the run continues from the repaired model to a fixed point whose own
deterministic model meets the 80% rule, and one more MM step at the result (Problem 3 under the
bounds in force, solved by the specialized solver to a certified gap of 1e-7: its dual bound)
improves on the result by at most tol.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import ratecons as rc
from ratecons import settings
from ratecons.solvers.rate_bound import solve_bound_specialized


@pytest.mark.slow
def test_the_demo_problem_ends_at_a_certified_fixed_point():
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    problem = rc.Problem(minimize=rc.error_rate(train),
                         subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
                         model=rc.LinearModel(l2=1e-3))
    result = problem.solve(verbose=False)
    details = result.certificate.details
    det = details["deterministic"]
    assert result.method == "mm" and result.status == settings.OPTIMAL
    assert det["bias_repairs"] >= 1 and not det["bias_moved"]  # repaired, then continued
    assert details["last_relative_decrease"] <= settings.MM_RELATIVE_TOL
    assert result.report().all_satisfied
    program = problem.canonical()
    in_force = replace(program, gamma=program.gamma - det["tightening_margin"])
    step = solve_bound_specialized(in_force, in_force.bound_masks(result.w, result.b),
                                   epsilon=1e-7)
    value = in_force.objective(result.w, result.b, "ramp")
    assert value - step.certificate.lower_bound <= settings.MM_RELATIVE_TOL * max(1.0, value)
