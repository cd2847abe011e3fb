"""The start from a row sample for kernel models (issue 29, :mod:`ratecons.sample_start`).

A kernel model's feature map is drawn from the training rows (a Nystrom sample of them), so a
chain run on a row sample would draw another map and its w would be no start over the whole
data's psi. Both chains make the map once from all rows and solve the sample over it. Checked
here, on both chains: the sample's run and the run on all rows get the same map, the one
drawn from all rows; the sample's model is used; the answer meets the rule, is certified and
lies within 1e-3 (relative) of the run without a sample (MM's fixed points are local).
"""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import generic, structured_chain
from ratecons.reductions.kernelize import kernelize
from tests.sample_start_helpers import two_groups

ROWS, SAMPLE, POINTS = 3000, 600, 80


def _kernel_rule(D: rc.Dataset) -> rc.Problem:
    return rc.Problem(minimize=rc.logistic_loss(D),
                      model=rc.KernelModel(kernel="gaussian", l2=1e-3),
                      subject_to=[rc.positive_rate(D.group("g", "F"))
                                  >= 0.8 * rc.positive_rate(D.group("g", "M"))])


@pytest.mark.parametrize("method, module", [("structured", structured_chain),
                                            ("cvxpy", generic)])
def test_a_kernel_models_sample_is_solved_over_the_whole_datas_map(method, module,
                                                                   monkeypatch):
    D = two_groups(ROWS, seed=1)
    problem = _kernel_rule(D)
    runs: list[tuple[int, object]] = []
    original = module.solve_generic

    def spied(analysis, **kwargs):
        runs.append((sum(d.n for d in analysis.datasets), kwargs["feature_map"]))
        return original(analysis, **kwargs)

    monkeypatch.setattr(module, "solve_generic", spied)
    on = problem.solve(method, sample_start=SAMPLE, kernel_points=POINTS)
    monkeypatch.undo()

    assert [rows for rows, _ in runs] == [SAMPLE, ROWS]  # the sample's run, then all rows'
    (_, sample_map), (_, whole_map) = runs
    assert sample_map is whole_map
    drawn = kernelize(problem.model, [D], POINTS, 0)  # the map drawn from all rows
    np.testing.assert_array_equal(whole_map.points, drawn.points)
    np.testing.assert_array_equal(whole_map.transform_matrix, drawn.transform_matrix)

    used = on.certificate.details["sample_start"]
    assert used["rows"] == SAMPLE and used["used"].startswith(("as the anchor", "start"))
    assert on.status == "optimal" and on.report().all_satisfied
    off = problem.solve(method, sample_start=False, kernel_points=POINTS)
    assert off.status == "optimal"
    assert abs(on.objective - off.objective) <= 1e-3 * abs(off.objective)


def test_both_chains_from_a_kernel_sample_agree_on_adult():
    """The structured chain against its CVXPY reference, both from the sample over the one
    map, on 2,500 Adult rows (the 80% rule between the sexes): the same fixed point to 1e-6
    (measured 2e-9), no tied anchor on either path."""
    adult = rc.datasets.load_adult()
    D, _ = adult.split(2500 / adult.n, seed=3)
    problem = rc.Problem(minimize=rc.logistic_loss(D),
                         model=rc.KernelModel(kernel="gaussian", l2=1e-3),
                         subject_to=[rc.positive_rate(D.group("sex", "Female"))
                                     >= 0.8 * rc.positive_rate(D.group("sex", "Male"))])
    results = [problem.solve(method, sample_start=500, kernel_points=60)
               for method in ("structured", "cvxpy")]
    for result in results:
        assert result.status == "optimal" and result.report().all_satisfied
        assert result.certificate.details["sample_start"]["rows"] == 500
        assert result.certificate.details["tied_anchors"] == 0
    structured, reference = results
    assert abs(structured.objective - reference.objective) <= 1e-6 * abs(reference.objective)
