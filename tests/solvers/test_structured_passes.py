"""The passes of the structured step: the Gram product and its column in one blocked pass
(:meth:`ratecons.scans.Rows.gram_and_column`), on every storage a step may hold."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons import scans
from ratecons.scans import Rows


def _expected(A, c):
    dense = A.toarray() if sp.issparse(A) else A
    clipped = np.maximum(c, 0.0)
    return dense.T @ (dense * clipped[:, None]), dense.T @ clipped


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), p=st.integers(1, 9), block_bytes=st.integers(8, 2_000),
       seed=st.integers(0, 2**32 - 1), storage=st.sampled_from(["dense", "csr", "csr-blocked"]))
def test_gram_and_column_match_the_plain_products_on_any_block_size(
        n, p, block_bytes, seed, storage):
    """Blocks of one row up to the whole matrix, dense or sparse (with and without the dense
    copy), weights with rounding below zero (clipped as in the Gram product)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    if storage != "dense":
        A = sp.csr_matrix(A * (rng.random((n, p)) < 0.6))
    c = rng.random(n) * (rng.random(n) > 0.3) - 1e-17 * (rng.random(n) < 0.1)
    with_budget = {"GRAM_BLOCK_BYTES": block_bytes,
                   "DENSE_MAX_BYTES": 0 if storage == "csr-blocked" else scans.DENSE_MAX_BYTES,
                   "SPARSE_GRAM_MAX_FILL": -1.0}  # sparse: syrk on blocks, never the pass
    old = {k: getattr(scans, k) for k in with_budget}
    try:
        for k, v in with_budget.items():
            setattr(scans, k, v)
        R = Rows(A)
        assert not R.by_rows
        assert (R.dense is None) == (storage == "csr-blocked")
        G, col = R.gram_and_column(c)
        only = R.gram(c)
    finally:
        for k, v in old.items():
            setattr(scans, k, v)
    G_ref, col_ref = _expected(A, c)
    scale = 1.0 + np.abs(G_ref).max()
    np.testing.assert_allclose(G, G_ref, atol=1e-12 * scale)
    np.testing.assert_allclose(col, col_ref, atol=1e-12 * scale)
    np.testing.assert_array_equal(G, G.T)
    np.testing.assert_array_equal(only, G)


def test_gram_and_column_on_the_compiled_sparse_pass():
    """Sparse rows that take the compiled pass give the same pair (the column by P^T c)."""
    rng = np.random.default_rng(3)
    A = sp.random(300, 40, density=0.05, format="csr", random_state=rng)
    c = rng.random(300)
    R = Rows(A)
    assert R.by_rows
    G, col = R.gram_and_column(c)
    G_ref, col_ref = _expected(A, c)
    np.testing.assert_allclose(G, G_ref, atol=1e-12)
    np.testing.assert_allclose(col, col_ref, atol=1e-12)


def test_gram_blocks_fit_the_cache_budget(monkeypatch):
    """The dense product walks blocks of at most GRAM_BLOCK_BYTES (a spy on the syrk calls),
    so the scaled copy of a block is read by syrk while still in the cache."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(1_000, 50))
    seen = []
    real = scans._gram_upper

    def spy(B):
        seen.append(B.shape[0])
        return real(B)

    monkeypatch.setattr(scans, "_gram_upper", spy)
    monkeypatch.setattr(scans, "GRAM_BLOCK_BYTES", 50 * 8 * 128)
    G, _ = Rows(A).gram_and_column(np.ones(1_000))
    assert seen == [128] * 7 + [104]
    np.testing.assert_allclose(G, A.T @ A, atol=1e-9)
