"""``Rows.transpose_apply`` multiplies by P^T made once (``Rows.T``, a view sharing the
data of P, no copy) and agrees with the plain product, dense and sparse, for vectors and
blocks of per-example values."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ratecons.scans import Rows


@pytest.mark.parametrize("sparse", [False, True])
def test_transpose_apply_is_the_plain_product_through_one_transpose(sparse):
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(500, 12)) * (rng.random((500, 12)) < 0.3)
    rows = Rows(sp.csr_matrix(dense) if sparse else dense)
    transpose = rows.T
    for V in (rng.normal(size=500), rng.normal(size=(500, 3))):
        np.testing.assert_allclose(rows.transpose_apply(V), dense.T @ V, rtol=1e-12,
                                   atol=1e-12)
    assert rows.T is transpose  # made once, not per product
    if sparse:
        assert np.shares_memory(rows.T.data, rows.P.data)
    else:
        assert np.shares_memory(rows.T, rows.P)
