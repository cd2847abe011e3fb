"""The "Adding a term" walkthrough of docs/architecture.md, executed (issue 30).

The walkthrough's blocks define a class-weighted hinge loss (the term) and register it in the
three lowering tables (CVXPY, the matrix LP/QP, the structured step solver); nothing else in the
package learns about it. This test runs those blocks as they are written and checks that

- at unit cost the term is the hinge loss (same values, same optimum as ``rc.hinge_loss``),
- the three lowerings write the same convex step (the hinge relaxation and an MM step at an
  anchor, with a rate constraint; linear and kernel models): CLARABEL at tight tolerances,
  HiGHS on the matrix form and the structured interior point agree to 1e-6,
- whole problems solved by ``cvxpy``, ``highs`` and ``structured`` agree (real data: the
  embedded Adult sample), and the MPS export reproduces the objective,
- a term type without an entry is refused by name by every lowering (no fall-through).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ratecons as rc
from ratecons.backends.mps import solve_mps
from ratecons.errors import NotLinearError
from ratecons.matrix_chain import highs_step
from ratecons.reductions import cvxpy_canon, to_matrix, to_structured
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_cvxpy import solve_step
from ratecons.reductions.to_matrix import anchor_of, check_representable
from ratecons.reductions.to_structured import lower_structured, structured_support
from ratecons.solvers.structured import solve_structured
from ratecons.testing import small_composition_data

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
STEP_RTOL = 1e-6
CHAIN_RTOL = 1e-5


def _walkthrough_blocks() -> list[str]:
    """The Python blocks of the 'Adding a term' section, in order."""
    text = DOC.read_text()
    section = text[text.index("## Adding a term"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def walkthrough():
    """The namespace after the term and its registration (blocks 1 and 2); the table entries
    are removed again afterwards."""
    blocks = _walkthrough_blocks()
    assert len(blocks) == 3, "the walkthrough has the term, its registration and its use"
    namespace: dict = {"__name__": "walkthrough"}
    for k, code in enumerate(blocks[:2]):
        exec(compile(code, f"architecture.md[adding a term, block {k}]", "exec"), namespace)
    term = namespace["ClassWeightedHinge"]
    yield namespace
    for table in (cvxpy_canon.LOWERINGS, to_matrix.LOWERINGS, to_structured.LOWERINGS):
        table.pop(term, None)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def data() -> rc.Dataset:
    return small_composition_data(150, baseline=False)


def test_the_walkthrough_registers_one_entry_per_lowering(walkthrough):
    term = walkthrough["ClassWeightedHinge"]
    for table in (cvxpy_canon.LOWERINGS, to_matrix.LOWERINGS, to_structured.LOWERINGS):
        assert term in table


def test_at_unit_cost_the_term_is_the_hinge_loss(walkthrough, data):
    weighted = walkthrough["class_weighted_hinge"]
    mine = rc.Problem(minimize=weighted(data, positive_cost=1.0),
                      model=rc.LinearModel(l2=1e-2)).solve(method="cvxpy")
    hinge = rc.Problem(minimize=rc.hinge_loss(data),
                       model=rc.LinearModel(l2=1e-2)).solve(method="cvxpy")
    assert _rel(mine.objective, hinge.objective) <= STEP_RTOL
    for scorer in (mine.scorer, hinge.scorer):
        assert weighted(data, 1.0).value(scorer) == pytest.approx(
            rc.hinge_loss(data).value(scorer), rel=1e-12)
    # a cost on the positives changes the loss: the positives' hinges count three times
    z = hinge.scorer.decision_function(data.X)
    margins = np.maximum(0.0, 1.0 - (2.0 * data.y - 1.0) * z)
    expected = np.mean(np.where(data.y == 1, 3.0, 1.0) * margins)
    assert weighted(data, 3.0).value(hinge.scorer) == pytest.approx(expected, rel=1e-12)


MODELS = {
    "linear_l1": lambda: rc.LinearModel(l1=1e-2, l2=0.0),
    "linear_l2": lambda: rc.LinearModel(l2=1e-2),
    "kernel": lambda: rc.KernelModel(kernel="gaussian", l2=1e-2),
}


@pytest.mark.parametrize("at_anchor", [False, True], ids=["hinge_relaxation", "mm_step"])
@pytest.mark.parametrize("model", list(MODELS))
def test_the_three_lowerings_write_the_same_step(walkthrough, data, model, at_anchor):
    weighted = walkthrough["class_weighted_hinge"]
    problem = rc.Problem(minimize=weighted(data, positive_cost=3.0),
                         subject_to=[rc.false_positive_rate(data) <= 0.2,
                                     rc.recall(data) >= 0.5],
                         model=MODELS[model]())
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    anchor = (anchor_of(analysis, problem.solve(method="cvxpy")) if at_anchor else None)
    reference = solve_step(analysis, psi, anchor, bounds, "CLARABEL", tight=True)
    assert reference.status == "optimal"
    structured = solve_structured(lower_structured(analysis, psi, anchor, bounds))
    assert structured.status == "optimal", structured.message
    assert _rel(structured.objective, reference.objective) <= STEP_RTOL
    if model != "kernel":  # HiGHS' active-set QP stops at its iteration limit on the kernel
        # step (150 psi columns; the cycling matrix_chain.highs_step guards against)
        matrix = highs_step(analysis)(psi, anchor, bounds)
        assert matrix.status == "optimal", matrix.message
        assert _rel(matrix.objective, reference.objective) <= STEP_RTOL
    assert structured.max_violation <= 1e-6


def test_whole_problems_agree_on_real_data_and_the_export(walkthrough, tmp_path):
    weighted = walkthrough["class_weighted_hinge"]
    adult = rc.datasets.load_adult()
    train, _ = adult.split(0.02, seed=0)
    problem = rc.Problem(minimize=weighted(train, positive_cost=3.0),
                         subject_to=[rc.false_positive_rate(train) <= 0.1],
                         model=rc.LinearModel(l1=1e-3, l2=0.0))
    results = {m: problem.solve(method=m) for m in ("cvxpy", "highs", "structured")}
    reference = results["cvxpy"].objective
    for method, result in results.items():
        assert result.status == "optimal", (method, result.status)
        assert _rel(result.objective, reference) <= CHAIN_RTOL, (method, result.objective)
    # the exported hinge relaxation, solved by HiGHS from the file, is the CVXPY step's value
    info = rc.export_mps(problem, tmp_path / "weighted.mps")
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    step = solve_step(analysis, psi, None, bounds, "CLARABEL", tight=True)
    assert _rel(info["sign"] * solve_mps(tmp_path / "weighted.mps").objective,
                step.objective) <= STEP_RTOL


def test_a_term_without_an_entry_is_refused_by_name(walkthrough, data):
    class Unregistered(walkthrough["ClassWeightedHinge"]):
        """The walkthrough's term under another type: no lowering has an entry for it."""

    term = Unregistered(data.all, 2.0)
    problem = rc.Problem(minimize=term, subject_to=[rc.recall(data) >= 0.5])
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    with pytest.raises(NotLinearError, match=r"CVXPY lowering has no entry for "
                                             r"class_weighted_hinge.*\(Unregistered\)"):
        solve_step(analysis, psi, None, bounds, "CLARABEL")
    with pytest.raises(NotLinearError, match=r"matrix LP/QP lowering has no entry for "
                                             r"class_weighted_hinge.*\(Unregistered\)"):
        check_representable(analysis)
    assert "Unregistered" in structured_support(analysis)
    with pytest.raises(NotLinearError, match="Unregistered"):
        problem.solve(method="structured")
