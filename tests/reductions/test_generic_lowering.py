"""The generic lowering's scores: every part reads a dataset's scores in one form (score
variables z = psi(X) w - b, or psi(X) w - b written in directly), so the feature matrix enters
a step once."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import ratecons as rc
from ratecons.reductions import to_cvxpy
from ratecons.reductions.kernelize import kernelized
from ratecons.testing import small_composition_data


def _feature_rows(problem, d: int) -> list[int]:
    """The row counts of the (rows x d) constants of the constraints: the feature matrix's
    slices written into the problem."""
    return [c.shape[0] for constraint in problem.constraints for c in constraint.constants()
            if len(c.shape) == 2 and c.shape[1] == d]


def _step(problem: rc.Problem, anchored: bool) -> tuple:
    """A step's inputs: the hinge relaxation's, or an anchor at the hinge relaxation's
    solution."""
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    anchor = None
    if anchored:
        hinge = to_cvxpy.solve_step(analysis, psi, None, bounds, "CLARABEL")
        anchor = {key: np.asarray(P @ hinge.w).ravel() - hinge.b for key, P in psi.items()}
    return analysis, psi, anchor, bounds


@pytest.mark.parametrize("anchored", [False, True])
def test_rates_beside_a_worst_case_rate_read_the_score_variables(anchored):
    """A folded error rate and a worst-case rate on the same dataset: the folded epigraph rows
    select rows of the score variables the worst-case part uses, so psi(X) enters once (the
    equalities tying z to it), not once more in the folded rows."""
    D = small_composition_data(120)
    women = D.group("g", "a")
    problem = rc.Problem(
        minimize=rc.error_rate(D),
        subject_to=[rc.worst_case(rc.positive_rate(women),
                                  rc.PhiDivergenceBall(women, phi="chi2", rho=0.1)) >= 0.2],
        model=rc.LinearModel(l2=1e-2))
    analysis, psi, anchor, bounds = _step(problem, anchored)
    lowered, *_ = to_cvxpy.lower_step(analysis, psi, anchor, bounds)
    assert _feature_rows(lowered, D.X.shape[1]) == [D.n]


def test_rate_only_steps_write_the_features_in_directly():
    """With rate parts only, no score variables: the folded rows write X w - b directly."""
    D = small_composition_data(120)
    problem = rc.Problem(minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
                         model=rc.LinearModel(l2=1e-2))
    analysis, psi, anchor, bounds = _step(problem, anchored=True)
    lowered, *_ = to_cvxpy.lower_step(analysis, psi, anchor, bounds)
    assert not any(isinstance(c, cp.constraints.Equality) for c in lowered.constraints)
    assert _feature_rows(lowered, D.X.shape[1])


@pytest.mark.parametrize("variables", ["none", "first", "second", "both"])
def test_every_choice_of_score_form_gives_the_same_step(monkeypatch, variables):
    """Rates on two datasets, a worst-case rate on the first: the step's optimal value does not
    depend on which datasets' scores are variables (the folded design mixes both sources, read
    from each in its form)."""
    D1, D2 = small_composition_data(120, seed=3), small_composition_data(90, seed=5)
    positives = D1.positives
    problem = rc.Problem(
        minimize=rc.error_rate(D1),
        subject_to=[rc.recall(D2) >= 0.7,
                    rc.worst_case(rc.recall(D1),
                                  rc.PhiDivergenceBall(positives, phi="chi2", rho=0.1)) >= 0.6],
        model=rc.LinearModel(l2=1e-2))
    analysis, psi, anchor, bounds = _step(problem, anchored=True)
    chosen = {"none": set(), "first": {id(D1)}, "second": {id(D2)},
              "both": {id(D1), id(D2)}}[variables]
    expected = to_cvxpy.solve_step(analysis, psi, anchor, bounds, "CLARABEL", tight=True)
    assert to_cvxpy.CvxpyBuilder.variable_datasets(analysis) == {id(D1)}
    monkeypatch.setattr(to_cvxpy.CvxpyBuilder, "variable_datasets", staticmethod(lambda _: chosen))
    step = to_cvxpy.solve_step(analysis, psi, anchor, bounds, "CLARABEL", tight=True)
    assert expected.status == step.status == "optimal"
    assert step.objective == pytest.approx(expected.objective, rel=1e-6, abs=1e-8)
