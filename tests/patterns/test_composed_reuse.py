"""A structured step whose lowered problem is the last one's is not solved again
(:meth:`StructuredForm.digest`): the answer it reuses is that problem's certified optimum."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_structured import lower_structured


def _problem() -> rc.Problem:
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    D = train.take(np.random.default_rng(0).choice(train.n, 2000, replace=False))
    return rc.Problem(minimize=rc.logistic_loss(D), model=rc.LinearModel(l2=1e-3),
                      subject_to=[rc.recall(D) >= 0.7])


@pytest.fixture(scope="module")
def solved():
    problem = _problem()
    return problem, problem.solve(method="structured")


def test_the_reused_step_is_the_certified_optimum_of_the_step_at_the_point(solved):
    problem, result = solved
    details = result.certificate.details
    assert result.status == "optimal" and details["reused_steps"] == 1
    assert details["last_relative_decrease"] <= 1e-6
    last = result.last_step
    again = problem.solve(method="structured", only_step=last)  # solved, not reused
    reference = problem.solve(method="cvxpy", only_step=last)
    assert again.last_step.bound_objective == pytest.approx(last.bound_objective, rel=1e-7)
    assert reference.last_step.bound_objective == pytest.approx(last.bound_objective,
                                                                rel=1e-6)


def _same(a, b) -> bool:
    return a.digest() == b.digest()


def test_the_digest_tells_equal_steps_from_changed_ones(solved):
    problem, result = solved
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    last = result.last_step
    cache: dict = {}
    form = lower_structured(analysis, psi, last.anchor, last.bounds, cache)
    assert _same(form, lower_structured(analysis, psi, last.anchor, last.bounds, cache))
    assert not _same(form, lower_structured(analysis, psi, last.anchor, last.bounds - 1e-3,
                                            cache))
    moved = {key: z + 0.3 for key, z in last.anchor.items()}  # examples cross a ramp's end
    assert not _same(form, lower_structured(analysis, psi, moved, last.bounds, cache))
    assert not _same(form, lower_structured(analysis, psi, None, last.bounds, cache))
