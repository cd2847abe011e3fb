"""The pieces shared by the interior-point solvers: the weighted Gram product (one syrk on
either memory layout) and the step to the boundary."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons import scans
from ratecons.scans import SPARSE_GRAM_MAX_FILL, Rows, sparse_weighted_gram, weighted_gram
from ratecons.solvers.interior import step_past_blockers, step_to_boundary


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), p=st.integers(1, 12), seed=st.integers(0, 2**32 - 1),
       fortran=st.booleans())
def test_weighted_gram_matches_the_plain_product(n, p, seed, fortran):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    if fortran:
        A = np.asfortranarray(A)
    c = rng.random(n) * (rng.random(n) > 0.3)
    G = weighted_gram(A, c)
    np.testing.assert_allclose(G, A.T @ (A * c[:, None]), atol=1e-10 * (1 + np.abs(A).max()**2))
    np.testing.assert_array_equal(G, G.T)


def test_weighted_gram_clips_rounding_below_zero():
    A = np.arange(6.0).reshape(3, 2)
    G = weighted_gram(A, np.array([1.0, -1e-18, 2.0]))
    np.testing.assert_allclose(G, A[[0, 2]].T @ (A[[0, 2]] * np.array([[1.0], [2.0]])))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), p=st.integers(1, 12), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**32 - 1))
def test_sparse_weighted_gram_matches_the_plain_product(n, p, density, seed):
    rng = np.random.default_rng(seed)
    A = sp.random(n, p, density=density, format="csr", random_state=rng)
    c = rng.random(n) * (rng.random(n) > 0.3)
    c[0] = -1e-18  # rounding below 0 counts as 0
    dense = A.toarray()
    expected = dense.T @ (dense * np.maximum(c, 0.0)[:, None])
    G = sparse_weighted_gram(A, c)
    np.testing.assert_allclose(G, expected, atol=1e-12)
    np.testing.assert_array_equal(G, G.T)
    np.testing.assert_allclose(Rows(A).gram(c), expected, atol=1e-12)


def test_rows_gram_sums_duplicate_and_unsorted_entries():
    # COO with a repeated (row, column) and CSR built from it without summing: Rows makes it
    # canonical (a row's repeated column would otherwise miss its cross term)
    rows, cols = np.array([0, 0, 0, 1, 1]), np.array([2, 0, 2, 1, 0])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    A = sp.csr_matrix((vals, cols, np.array([0, 3, 5])), shape=(2, 20))
    assert not A.has_canonical_format
    dense = sp.coo_matrix((vals, (rows, cols)), shape=(2, 20)).toarray()
    c = np.array([0.5, 2.0])
    R = Rows(A)
    assert R.by_rows  # 4 of 40 cells filled: the compiled pass
    np.testing.assert_allclose(R.gram(c), dense.T @ (dense * c[:, None]))


def test_gram_rule_picks_the_compiled_pass_for_sparse_rows_and_syrk_for_dense_ones(
        monkeypatch):
    rng = np.random.default_rng(0)
    thin = sp.random(500, 40, density=0.1, format="csr", random_state=rng)
    thick = sp.random(500, 40, density=2 * SPARSE_GRAM_MAX_FILL, format="csr",
                      random_state=rng)
    wide = sp.random(500, 1200, density=0.1, format="csr", random_state=rng)
    assert Rows(thin).by_rows and Rows(thin).dense is None
    assert not Rows(thick).by_rows and Rows(thick).dense is not None
    assert not Rows(wide).by_rows  # 10% of 1,200 columns: syrk (the pass loses its cache)
    c = rng.random(500)
    expected = {id(A): (A.T @ sp.diags(c) @ A).toarray() for A in (thin, thick, wide)}
    for A in (thin, thick, wide):
        np.testing.assert_allclose(Rows(A).gram(c), expected[id(A)], atol=1e-10)
    # no dense copy fits: syrk on each densified row block
    monkeypatch.setattr(scans, "DENSE_MAX_BYTES", 0)
    blocked = Rows(thick, block_rows=64)
    assert blocked.dense is None and not blocked.by_rows
    np.testing.assert_allclose(blocked.gram(c), expected[id(thick)], atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(0, 8), min_size=1,
                                                      max_size=4))
def test_step_to_boundary_is_the_longest_feasible_step(seed, sizes):
    rng = np.random.default_rng(seed)
    pairs = [(rng.random(k) + 1e-3, rng.normal(size=k) * 3) for k in sizes]
    a = step_to_boundary(*pairs)
    assert 0 < a <= 1
    for x, dx in pairs:
        assert np.all(x + a * dx >= -1e-12)
    if a < 1:  # some component hits zero exactly: no longer step is feasible
        assert min(float(np.min(x + a * dx, initial=np.inf)) for x, dx in pairs) <= 1e-12


def test_step_to_boundary_is_one_without_decreasing_components():
    assert step_to_boundary((np.ones(3), np.array([0.0, 1.0, 2.0])), (np.ones(0), np.ones(0))) == 1


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(0, 30), min_size=1,
                                                      max_size=4),
       blockers=st.integers(0, 12), tied=st.booleans())
def test_step_past_blockers_is_the_partitioned_ratio(seed, sizes, blockers, tied):
    """The (blockers + 1)-th smallest ratio -x / dx over dx < 0, as the concatenated ratios'
    np.partition gives it (1 with no more than ``blockers`` of them), at most 1."""
    rng = np.random.default_rng(seed)
    pairs = [(rng.random(k) + 1e-3, rng.normal(size=k)) for k in sizes]
    if tied:  # equal ratios across and within the pairs
        pairs = [(np.full(x.size, 0.5), np.where(dx < 0, -2.0, dx)) for x, dx in pairs]
    ratios = np.concatenate([-x[dx < 0] / dx[dx < 0] for x, dx in pairs])
    expected = (1.0 if ratios.size <= blockers
                else min(1.0, float(np.partition(ratios, blockers)[blockers])))
    assert step_past_blockers(blockers, *pairs) == expected
    assert step_past_blockers(0, *pairs) == step_to_boundary(*pairs)
