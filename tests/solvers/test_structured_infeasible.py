"""The structured step's infeasibility certificate (:mod:`ratecons.solvers.structured_infeasible`)
against CLARABEL's status: hinge relaxations of a recall floor beside a positive-rate cap on the
diabetes data (768 rows), the chain's first step, over a grid of bounds that CLARABEL finds
mostly infeasible. Before, every infeasible one ended ``numerical_error`` after 37-80
interior-point iterations (the plain run, then the weighted one); now an infeasible step ends
``infeasible`` with a Farkas ray of its rows: from the growing multipliers of the plain run
(6-13 iterations), or, when those stall short of a proof (recall >= 0.8 with positive rate
<= 0.5 here; the whole Adult split's logistic + churn + 80% rule), from the certified violation
step. Each ray is checked here by CLARABEL: the rows combined with its multipliers have a
positive minimum, so no model meets them all.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import ratecons as rc
from ratecons import settings
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers.structured import solve_structured
from ratecons.solvers.structured_form import StructuredForm
from tests.shared_data import standardized
from tests.solvers.structured_reference import form_reference

RECALLS = (0.5, 0.8, 0.999)
RATES = (0.01, 0.3, 0.5)


@pytest.fixture(scope="module")
def diabetes() -> rc.Dataset:
    return standardized("diabetes")


def _relaxation(D: rc.Dataset, recall: float, rate: float) -> StructuredForm:
    """The hinge relaxation (the chain's first step) of hinge loss with recall >= ``recall``
    and positive rate <= ``rate``."""
    problem = rc.Problem(minimize=rc.hinge_loss(D),
                         subject_to=[rc.recall(D) >= recall, rc.positive_rate(D) <= rate],
                         model=rc.LinearModel(l2=1e-3))
    problem.plan()
    _, psi = kernelized(problem.analysis)
    bounds = np.array([row.bound for row in problem.analysis.constraints])
    return lower_structured(problem.analysis, psi, None, bounds)


def _combined_minimum(form: StructuredForm, rows: np.ndarray) -> float:
    """min over (w, b) of sum_j rows_j (row_j(w, b) - bound_j), by CLARABEL: positive when the
    row multipliers ``rows`` >= 0 prove that no model meets every row (a feasible model makes
    every term, so the sum, <= 0)."""
    combined = replace(form, l2=0.0, hinge_coef=(rows @ form.hinge_coef[1:])[None, :],
                       constant=np.array([rows @ (form.constant[1:] - form.bounds)]),
                       bounds=np.zeros(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status, value, _ = form_reference(combined)
    assert status == "optimal", status
    return value


def test_infeasible_relaxations_are_certified_as_clarabel_finds_them(diabetes):
    found = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    for recall in RECALLS:
        for rate in RATES:
            form = _relaxation(diabetes, recall, rate)
            answer = solve_structured(form)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                status, objective, _ = form_reference(form)
            infeasible = status == "infeasible"
            ours = answer.status == settings.INFEASIBLE
            found[("t" if ours == infeasible else "f") + ("p" if ours else "n")] += 1
            if ours:
                assert answer.iterations <= 60, (recall, rate, answer.iterations)
                assert np.all(answer.duals >= 0) and answer.duals.sum() == pytest.approx(1.0)
                assert "Farkas" in answer.message
                assert _combined_minimum(form, answer.duals) > 1e-3
            elif status == "optimal":
                assert answer.status == settings.OPTIMAL
                assert abs(answer.objective - objective) <= 1e-6 * max(1.0, abs(objective))
    assert found["fp"] == 0  # a ray never proves a feasible step infeasible
    assert found["tp"] >= 0.9 * (found["tp"] + found["fn"]) and found["tp"] >= 5, found
    assert found["tn"] >= 2, found  # the grid holds feasible steps too


def test_a_warm_step_proved_infeasible_is_not_solved_again_cold(diabetes, monkeypatch):
    """``warm_then_cold`` returns a warm run's Farkas ray: it proves the rows infeasible
    whatever the start (before, the step was solved again from the cold start: 37 + 9
    iterations to a second ray). Recall >= 0.999 with positive rate <= 0.01, warm from the
    certified step of recall >= 0.5 with positive rate <= 0.5."""
    from ratecons import structured_fallback
    from ratecons.solvers.structured_form import WarmStart

    start = solve_structured(_relaxation(diabetes, 0.5, 0.5))
    assert start.status == settings.OPTIMAL
    form = _relaxation(diabetes, 0.999, 0.01)
    calls: list[bool] = []  # warm or cold, by call

    def counted(form, **options):
        calls.append(options.get("warm") is not None)
        return solve_structured(form, **options)

    monkeypatch.setattr(structured_fallback, "solve_structured", counted)
    answer = structured_fallback.warm_then_cold(form, 1e-8, None, WarmStart(
        start.w, start.b, start.duals, start.extra))
    assert calls == [True]
    assert answer.status == settings.INFEASIBLE and "Farkas" in answer.message
    assert np.all(answer.duals >= 0) and answer.duals.sum() == pytest.approx(1.0)
    assert _combined_minimum(form, answer.duals) > 1e-3  # CLARABEL: no model meets both rows
