"""The structured step on wide models (kernel features, p >= 256): the early iterations' Gram
products in single precision (:data:`ratecons.solvers.structured.SINGLE_GRAM_ABOVE`) and the
wide warm start (:data:`ratecons.solvers.structured_warm.WARM_SHIFT_WIDE`) keep the step
equal to CLARABEL's at the same anchor, with its certificate from the exact residuals."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons import scans
from ratecons.scans import Rows
from ratecons.solvers import structured
from ratecons.solvers.structured_warm import WARM_SHIFT_WIDE, WIDE_COLUMNS, warm_shift
from tests.solvers.test_structured import _check_step, _rel, _steps


def _adult_kernel(n: int) -> rc.Problem:
    adult = rc.datasets.load_adult()
    sample, _ = adult.split(n / adult.n, seed=5)
    women, men = sample.group("sex", "Female"), sample.group("sex", "Male")
    return rc.Problem(minimize=rc.error_rate(sample),
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
                      model=rc.KernelModel(kernel="gaussian", l2=1e-3))


def test_single_precision_gram_is_close_to_the_double_one():
    """Products from the float32 copy, summed in double: within 1e-6 of the double product
    (relative to its largest entry), the column too; the float32 copy is made once."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3_000, 300))
    c = rng.random(3_000) * 10.0
    R = Rows(A)
    G, col = R.gram_and_column(c)
    G1, col1 = R.gram_and_column(c, single=True)
    copy = R.single
    assert G1.dtype == col1.dtype == np.float64 and copy.dtype == np.float32
    assert 0 < np.abs(G1 - G).max() <= 1e-6 * np.abs(G).max()
    assert np.abs(col1 - col).max() <= 1e-6 * np.abs(col).max()
    R.gram_and_column(c, single=True)
    assert R.single is copy
    G2, none = R.gram_and_column(c, column=False)
    np.testing.assert_array_equal(G2, G)
    assert none is None


def test_warm_shift_depends_on_the_width():
    assert warm_shift(WIDE_COLUMNS) == WARM_SHIFT_WIDE
    assert warm_shift(WIDE_COLUMNS - 1) > WARM_SHIFT_WIDE


@pytest.mark.slow
def test_wide_kernel_steps_match_clarabel_with_single_precision_grams(monkeypatch):
    """Adult (600 rows, the exact gaussian kernel: 600 features), error rate + 80% rule: the
    hinge relaxation and the MM step at the structured chain's anchor agree with CLARABEL to
    1e-6 with a certified gap, and some of their Gram products were in single precision."""
    calls = {True: 0, False: 0}
    real = scans.Rows.gram_and_products

    def spy(self, c, V, *, column=True, single=False):
        calls[single] += 1
        return real(self, c, V, column=column, single=single)

    monkeypatch.setattr(scans.Rows, "gram_and_products", spy)
    problem = _adult_kernel(600)
    ours, reference, form = _steps(problem)
    assert form.rows.p >= structured.SINGLE_GRAM_COLUMNS
    _check_step(ours, reference)
    assert calls[True] > 0 and calls[False] > 0
    chain = problem.solve(method="structured")
    assert chain.status == "optimal"
    assert chain.certificate.details["reference_steps"] == 0
    ours, reference, _ = _steps(problem, chain)
    _check_step(ours, reference)
    assert _rel(ours.objective, reference.objective) <= 1e-6
