"""The pieces shared by the interior-point solvers: the weighted Gram product (one syrk on
either memory layout) and the step to the boundary."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.scans import weighted_gram
from ratecons.solvers.interior import step_to_boundary


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
