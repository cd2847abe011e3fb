"""One place for each formula (issue 30, "second copies"): the kernel function, the objective
gap every pattern's ``compare`` reports, and HiGHS behind its one backend."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from ratecons.comparison import objective_rel_gap
from ratecons.kernels import KernelSpec, kernel_block, kernel_diagonal, kernel_from_dot
from ratecons.patterns import mrc, ranking
from ratecons.solvers.top_dual_kernels import kernel_column

SPECS = [KernelSpec("linear"), KernelSpec("gaussian", gamma=0.3),
         KernelSpec("polynomial", gamma=0.5, degree=3, coef0=1.0)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_kernel_block_the_diagonal_and_the_compiled_columns_agree(spec):
    rng = np.random.default_rng(1)
    P = rng.normal(size=(7, 3))
    G = P @ P.T
    sq = np.diag(G)
    by_hand = {"linear": G,
               "gaussian": np.exp(-0.3 * (sq[:, None] + sq[None, :] - 2 * G)),
               "polynomial": (0.5 * G + 1.0) ** 3}[spec.name]
    block = kernel_block(spec, P, P)
    np.testing.assert_allclose(block, by_hand, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel_diagonal(spec, P), np.diag(by_hand), rtol=1e-12)
    signs = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0])
    idx = np.arange(7)
    for k in range(7):
        out = np.empty(7)
        kernel_column(k, idx, np.zeros((1, 1)), False, P, sq, signs, spec.code, spec.gamma,
                spec.degree, spec.coef0, out)
        np.testing.assert_allclose(out, signs[k] * signs * block[k], rtol=1e-12, atol=1e-12)
    assert kernel_from_dot(spec.code, 2.0, 1.0, 1.0, spec.gamma, spec.degree,
                           spec.coef0) == pytest.approx(float(kernel_from_dot(
                               spec.code, np.array([2.0]), 1.0, 1.0, spec.gamma, spec.degree,
                               spec.coef0)[0]))


def test_objective_rel_gap_is_one_function_for_every_pattern():
    assert objective_rel_gap(1.5, 1.0) == pytest.approx(0.5)
    assert objective_rel_gap(0.3, 0.1) == pytest.approx(0.2)  # relative to max(1, |ref|)
    assert objective_rel_gap(-20.0, -10.0) == pytest.approx(1.0)
    assert objective_rel_gap(math.nan, 1.0) is None and objective_rel_gap(1.0, math.inf) is None
    for module in (mrc, ranking):
        source = inspect.getsource(module)
        assert "objective_rel_gap(" in source and "max(1.0, abs(" not in source
