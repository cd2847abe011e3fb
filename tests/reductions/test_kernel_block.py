"""kernels.kernel_block on sparse features: the sparse-by-dense product (the points made
dense, ``DENSE_FACTOR_MAX_BYTES``) and the sparse-by-sparse one give the dense values."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ratecons as rc
from ratecons import kernels
from ratecons.kernels import KernelSpec, kernel_block


def _adult_rows() -> sp.csr_matrix:
    X = sp.csr_matrix(rc.datasets.load_adult().X)
    return X[np.random.default_rng(1).choice(X.shape[0], 1500, replace=False)]


@pytest.mark.parametrize("name", ["gaussian", "polynomial", "linear"])
@pytest.mark.parametrize("dense_points", [True, False])
def test_sparse_kernel_blocks_equal_the_dense_ones(monkeypatch, name, dense_points):
    if not dense_points:  # the sparse-by-sparse product
        monkeypatch.setattr(kernels, "DENSE_FACTOR_MAX_BYTES", 0)
    X = _adult_rows()
    points = X[:200]
    spec = KernelSpec(name, gamma=1.0 / X.shape[1], degree=2, coef0=1.0)
    block = kernel_block(spec, X, points)
    assert isinstance(block, np.ndarray) and block.shape == (1500, 200)
    expected = kernel_block(spec, X.toarray(), points.toarray())
    np.testing.assert_allclose(block, expected, rtol=1e-12, atol=1e-12)


def test_dense_features_against_sparse_points():
    X = np.random.default_rng(0).normal(size=(300, 12))
    points = sp.random(40, 12, density=0.3, random_state=0, format="csr")
    spec = KernelSpec("gaussian", gamma=0.1)
    np.testing.assert_allclose(kernel_block(spec, X, points),
                               kernel_block(spec, X, points.toarray()), rtol=1e-12)
