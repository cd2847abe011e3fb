"""The w = 0 test of TPR@K (``ranking._zero_looks_optimal``) on sparse features without a dense
copy: its covariance of the sparse rows equals ``np.cov`` of the dense ones, and the test
decides the same on the sparse matrix and on its dense copy."""

import numpy as np
import pytest
import scipy.sparse as sp

import ratecons as rc
from benchmarks.composition import adult
from ratecons.patterns.ranking import _covariance, _zero_looks_optimal


@pytest.mark.parametrize("d", [1, 7, 40])
def test_sparse_covariance_is_numpys(d):
    X = sp.random(900, d, density=0.2, random_state=d, format="csr") * 3.0 + sp.eye(900, d) * 5.0
    dense = X.toarray()
    expected = np.atleast_2d(np.cov(dense, rowvar=False))
    got = _covariance(sp.csr_matrix(X), dense.mean(axis=0))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(_covariance(dense, dense.mean(axis=0)), expected)


@pytest.mark.parametrize(("rows", "k", "trivial"), [(10000, 5, True), (2000, 76, False)])
def test_the_w0_test_decides_alike_on_sparse_and_dense_features(rows, k, trivial):
    data = adult(rows)
    assert sp.issparse(data.X)
    dense = rc.Dataset(data.X.toarray(), data.y)
    decisions = [_zero_looks_optimal(rc.Problem(
        maximize=rc.tpr_at_top(D, k=k), model=rc.LinearModel(l2=1e-3)).canonical())
        for D in (data, dense)]
    assert decisions == [trivial, trivial]
