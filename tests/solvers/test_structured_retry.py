"""The cold retry of the structured step (:mod:`ratecons.solvers.structured_retry`) with the
adaptive corrector budget (:class:`ratecons.solvers.structured_correctors.CorrectorBudget`).

The step is the stalled second MM step of hinge + 80% rule on the benchmark's 200,000
synthetic rows (``benchmarks.composition``, seed 0: 305,769 pieces; there the cold run ended
``numerical_error`` at a gap of 3.4e-4), its examples subsampled to 50,000 (``numpy``'s
``default_rng(1).choice(200_000, 50_000, replace=False)``, every piece of a kept example, the
pieces' coefficients times 200,000 / 50,000 so that the rows stay averages). Its plain cold
runs end ``iteration_limit`` after 100 iterations at a relative gap of 5.1e-6 (1.2e-5 on the
first 100,000 rows, 1.25e-6 on another 30,000); the retry certifies it in 82 more. The stored
arrays hold which rows were kept (bits), the pieces, and CLARABEL's objective of this
form (:func:`tests.solvers.structured_reference.form_reference`, tolerances 1e-10: 0.11087995721,
187 s at load 5, too slow to repeat here; ours 0.11087995830).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.composition import synthetic
from ratecons import settings
from ratecons.solvers import structured
from ratecons.solvers.structured import solve_structured
from ratecons.solvers.structured_correctors import (
    CORRECTORS,
    CORRECTORS_BLOCKED,
    CORRECTORS_FULL,
    CorrectorBudget,
)
from ratecons.solvers.structured_form import StructuredForm, StructuredSolution
from ratecons.solvers.structured_retry import RETRY_ITERATIONS, cold_retry
from ratecons.solvers.structured_stop import EXTRA_ITERATIONS
from tests.solvers.structured_reference import assert_certified, stored_step

STEP = Path(__file__).parent / "data" / "synthetic200000_hinge_rule_step_sub50000.npz"
ROWS = 200_000


def _captured_step() -> tuple[StructuredForm, np.lib.npyio.NpzFile]:
    """The subsampled step (module docstring) and its stored arrays."""
    stored = np.load(STEP)
    kept = np.unpackbits(stored["kept"], count=ROWS).astype(bool)
    return stored_step(STEP, synthetic(ROWS).X[kept]), stored


def _matches_clarabel(form: StructuredForm, stored: np.lib.npyio.NpzFile,
                      answer: StructuredSolution) -> None:
    assert_certified(answer)
    assert answer.rel_gap <= 1e-6
    objective = float(stored["clarabel_objective"])
    assert abs(answer.objective - objective) <= 1e-6 * max(1.0, abs(objective))
    assert answer.max_violation <= 1e-6
    assert np.all(form.row_values(answer.w, answer.b)[1:] <= form.bounds + 1e-6)


def test_a_stalled_hinge_step_is_certified_by_the_retry_and_matches_clarabel(monkeypatch):
    """Without the extension of a converging run (:func:`.structured_stop.converging`), as
    when this step was captured: the plain run ends at its limit and the retry certifies."""
    monkeypatch.setattr(structured, "EXTRA_ITERATIONS", 0)
    form, stored = _captured_step()
    answer = solve_structured(form)
    # the plain cold runs ended uncertified: the answer is the retry's
    retried = "a cold retry with the adaptive corrector budget after "  # iteration_limit here
    assert answer.message.startswith(retried), answer.message
    assert answer.iterations <= 100 + RETRY_ITERATIONS  # 100 + 82 measured
    _matches_clarabel(form, stored, answer)


def test_the_stalled_hinge_step_converging_at_its_limit_goes_on_without_the_retry():
    """At its limit of 100 the plain run's merit had fallen from 2.5e-5 to 7.4e-6 in ten
    iterations: it goes on and is certified in 119 iterations (182 with the retry), 4e-10
    from CLARABEL's value (the retry's, 1e-8)."""
    form, stored = _captured_step()
    answer = solve_structured(form)
    assert not answer.message, answer.message
    assert answer.iterations <= 100 + EXTRA_ITERATIONS  # 119 measured
    _matches_clarabel(form, stored, answer)


def test_the_budget_adapts_to_blocked_and_full_steps():
    budget = CorrectorBudget()
    assert budget.next(1.0) == CORRECTORS_FULL  # no step taken yet: full
    budget.taken(0.3, 1.0)
    assert budget.next(0.1) == CORRECTORS_BLOCKED  # blocked step
    budget.taken(0.95, 1.0)
    assert budget.next(0.6) == CORRECTORS_BLOCKED  # mu fell by less than half
    assert budget.next(0.4) == CORRECTORS_FULL
    budget.taken(0.7, 1.0)
    assert budget.next(0.4) == CORRECTORS


def _answer(status: str, iterations: int, message: str = "") -> StructuredSolution:
    return StructuredSolution(status, 1.0, np.zeros(2), 0.0, np.zeros(1), np.zeros(0),
                              iterations, 1e-3, 0.0, 0.0, 0.0, 0.5, message)


@pytest.mark.parametrize("status", [settings.OPTIMAL, settings.INFEASIBLE,
                                    settings.TIME_LIMIT])
def test_only_uncertified_cold_calls_are_retried(status):
    def never():
        raise AssertionError("retried")

    first = _answer(status, 7)
    assert cold_retry(first, True, None, never) is first
    stalled = _answer(settings.NUMERICAL_ERROR, 7)
    assert cold_retry(stalled, False, None, never) is stalled  # warm: its caller goes cold
    assert cold_retry(stalled, True, 0.0, never) is stalled  # past the deadline


def test_a_retry_that_fails_too_keeps_the_first_answer_with_both_counts():
    first = _answer(settings.ITERATION_LIMIT, 100, "stopped with relative gap 1e-3")
    kept = cold_retry(first, True, None, lambda: _answer(settings.NUMERICAL_ERROR, 40, "stalled"))
    assert kept.status == settings.ITERATION_LIMIT and kept.rel_gap == first.rel_gap
    assert kept.iterations == 140 and kept.solve_time == 1.0
    assert kept.message.endswith("a cold retry with the adaptive corrector budget ended "
                                 "numerical_error (stalled)")
    certified = cold_retry(_answer(settings.ITERATION_LIMIT, 100), True, None,
                           lambda: _answer(settings.OPTIMAL, 80))
    assert certified.status == settings.OPTIMAL and certified.iterations == 180
