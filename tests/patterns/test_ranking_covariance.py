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


@pytest.mark.parametrize(("k", "among"), [(40, None), (None, "negatives"), (None, "all")])
def test_primal_ipm_on_sparse_rows_matches_cvxpy(k, among):
    """``primal_ipm`` keeps sparse features sparse (its rows a :class:`ratecons.scans.Rows`,
    the Gram product the compiled pass over the nonzeros): on 2,000 one-hot Adult rows, TPR@K
    and TPR@tau by Pat&Mat and Pat&Mat-NP agree with the CVXPY reference and with the same
    solver on the dense copy, each with a certified gap."""
    from tests.solvers.test_top_primal import _check_against_reference

    data = adult(2000)
    assert sp.issparse(data.X)
    dense = rc.Dataset(data.X.toarray(), data.y)

    def problem(D):
        objective = (rc.tpr_at_top(D, k=k) if k else
                     rc.tpr_at_quantile(D, tau=0.05, among=among, formulation="pat&mat"))
        return rc.Problem(maximize=objective, model=rc.LinearModel(l2=1e-3))

    sparse_result, w_ref = _check_against_reference(problem(data), tol=1e-7)
    dense_result = problem(dense).solve("primal_ipm", tol=1e-7)
    assert np.linalg.norm(w_ref) > 1e-3  # a nontrivial model
    np.testing.assert_allclose(sparse_result.w, w_ref, atol=1e-3 * np.linalg.norm(w_ref))
    assert abs(sparse_result.objective - dense_result.objective) <= 1e-6
