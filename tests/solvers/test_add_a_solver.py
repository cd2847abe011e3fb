"""The "Adding a solver" walkthrough of docs/architecture.md, executed (issue 30).

The walkthrough's block is a complete solver built on the tracker: gradient descent for the
l2-regularized logistic loss without intercept, certified by strong convexity. This test runs
the block as it is written and checks that

- it agrees with the CVXPY reference (the same problem as an ``rc.Problem`` with
  ``rc.logistic_loss`` and ``LinearModel(fit_intercept=False)``, ``method="generic"``) in
  objective and solution, on real data (diabetes) and synthetic data,
- its certificate is honest: the lower bound is below the reference optimum, the gap meets
  ``tol`` when the status is ``optimal``,
- ``max_iterations`` and ``time_limit`` end it with the shared status words, a
  ``ConvergenceWarning`` and the best point so far; progress events use the shared keys.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ratecons as rc
from ratecons.solvers.tracker import EVENT_KEYS
from ratecons.testing import small_composition_data
from tests.shared_data import standardized

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
L2 = 1e-2


@pytest.fixture(scope="module")
def solver():
    text = DOC.read_text()
    section = text[text.index("## Adding a solver"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the walkthrough is one block: the solver"
    namespace: dict = {"__name__": "walkthrough"}
    exec(compile(blocks[0], "architecture.md[adding a solver]", "exec"), namespace)
    return namespace["logistic_gradient_descent"]


def _datasets() -> list[rc.Dataset]:
    synthetic = small_composition_data(300, group="sex", values=("Female", "Male"),
                                       feature_names=["age", "hours per week", "education"])
    return [standardized("diabetes"), synthetic]


@pytest.mark.parametrize("index", [0, 1], ids=["diabetes", "synthetic"])
def test_the_walkthrough_solver_matches_the_cvxpy_reference(solver, index):
    data = _datasets()[index]
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X, dtype=float)
    sol = solver(X, data.y, L2, tol=1e-10)
    reference = rc.Problem(minimize=rc.logistic_loss(data),
                           model=rc.LinearModel(l2=L2, fit_intercept=False)).solve(
        method="generic")
    assert sol.status == "optimal" and reference.status == "optimal"
    cert = sol.certificate
    assert cert.gap <= 1e-10 * abs(cert.upper_bound)
    assert cert.lower_bound <= reference.objective + 1e-8
    assert abs(sol.objective - reference.objective) <= 1e-6 * abs(reference.objective)
    w_ref = np.asarray(reference.w, dtype=float)
    assert np.linalg.norm(sol.primal["w"] - w_ref) <= 1e-3 * max(1.0, np.linalg.norm(w_ref))
    event = sol.history[-1]
    assert set(event) <= set(EVENT_KEYS) and {"iteration", "objective", "gap"} <= set(event)


def test_limits_end_the_walkthrough_solver_with_the_shared_status_words(solver):
    data = _datasets()[1]
    X, y = np.asarray(data.X, dtype=float), data.y
    events: list[dict] = []
    with pytest.warns(rc.ConvergenceWarning, match="reached max_iterations=3"):
        capped = solver(X, y, L2, max_iterations=3, callback=events.append)
    assert capped.status == "iteration_limit" and len(events) == 3
    assert capped.certificate.details["stopped_by"] == "iteration_limit"
    assert capped.objective == min(e["objective"] for e in events)
    with pytest.warns(rc.ConvergenceWarning, match="time_limit"):
        timed = solver(X, y, L2, time_limit=1e-9, tol=1e-14)
    assert timed.status == "time_limit" and np.all(np.isfinite(timed.primal["w"]))
    with pytest.raises(rc.SpecError, match="'max_iterations' parameter"):
        solver(X, y, L2, max_iterations=0)
