"""The compiled per-example passes of the structured interior point's directions
(:mod:`ratecons.solvers.structured_kernels`), its products with the rows' few multipliers
(:mod:`ratecons.solvers.thin_products`) and the branchless step to the boundary
(:func:`ratecons.solvers.interior.step_to_boundary`): each gives the numbers of the NumPy
expression it replaced, and a whole structured step solved with them is the step solved with
those expressions, to the last bit."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.reductions.kernelize import kernelized
from ratecons.reductions.to_structured import lower_structured
from ratecons.solvers import interior
from ratecons.solvers import structured as S
from ratecons.solvers import structured_newton as SN
from ratecons.solvers.structured_form import StructuredForm, WarmStart
from ratecons.solvers.structured_kernels import newton_rhs, recovered_pairs, scatter_product
from ratecons.solvers.thin_products import FreeColumns, columns_times, rows_transpose_times


def _vectors(seed: int, n: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=n) * 10.0 ** rng.uniform(-6, 3, n) for _ in range(count)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300))
def test_direction_passes_equal_the_numpy_expressions(seed, n):
    W, c, jd, r = _vectors(seed, n, 4)
    s = np.abs(_vectors(seed + 1, n, 1)[0]) + 1e-12
    np.testing.assert_array_equal(newton_rhs(W, c, s, r), W * (c - s) + r / s)
    ds, dlam = recovered_pairs(W, jd, c, s, r)
    np.testing.assert_array_equal(ds, jd + c - s)
    np.testing.assert_array_equal(dlam, -W * (jd + c - s) - r / s)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 300), n=st.integers(1, 120))
def test_scatter_product_is_bincount_of_the_product(seed, k, n):
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=k)
    a, b = _vectors(seed, k, 2)
    np.testing.assert_array_equal(scatter_product(index, a, b, n),
                                  np.bincount(index, weights=a * b, minlength=n))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 200), m=st.integers(1, 4),
       r=st.integers(0, 3), k=st.integers(1, 3))
def test_thin_products_equal_matmul(seed, n, m, r, k):
    rng = np.random.default_rng(seed)
    A, B, y = rng.normal(size=(n, m)), rng.normal(size=(m, n)), rng.normal(size=m)
    if m == 1:  # the scaled column: the same single product in every entry
        np.testing.assert_array_equal(columns_times(A, y), A @ y)
        np.testing.assert_array_equal(rows_transpose_times(B, y), B.T @ y)
    np.testing.assert_allclose(columns_times(A, y), A @ y, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(rows_transpose_times(B, y), B.T @ y, rtol=1e-13, atol=1e-13)
    # the pieces' coefficients on the free variables, some columns all zeros (the robust
    # pieces' (eta, lam)): G v, G^T a and G^T diag(e) G, the numbers of the sparse products
    dense = rng.normal(size=(n, r)) * (rng.random((n, r)) < 0.5)
    dense[:, rng.random(r) < 0.3] = 0.0
    G = sp.csr_matrix(dense)
    free = FreeColumns(G)
    assert free.nonzero.size == int(np.sum(np.any(dense != 0, axis=0)))
    for a in (rng.normal(size=n), rng.normal(size=(n, k))):
        got, expected = free.transpose_times(a), G.T @ a
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    for v in (rng.normal(size=r), rng.normal(size=(r, k))):
        got, expected = free.times(v), G @ v
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    e = rng.random(n)
    np.testing.assert_array_equal(free.weighted_gram(e),
                                  (G.T @ G.multiply(e[:, None])).toarray())


@numba.njit
def _branching_step(x, dx, step):
    """The step to the boundary as it was before the branchless pass."""
    for i in range(x.size):
        if dx[i] < 0.0:
            ratio = -x[i] / dx[i]
            if ratio < step:
                step = ratio
    return step


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 400),
       special=st.sampled_from(["none", "zeros", "nan", "tiny"]))
def test_branchless_step_to_the_boundary_matches_the_branching_loop(seed, n, special):
    rng = np.random.default_rng(seed)
    x = rng.random(n) * 10.0 ** rng.uniform(-9, 2, n)
    dx = rng.normal(size=n) * 10.0 ** rng.uniform(-9, 2, n)
    if special == "zeros":
        dx[::3], x[::5] = 0.0, 0.0
        dx[1::7] = -0.0
    elif special == "nan":
        dx[::4], x[1::6] = np.nan, np.nan
    elif special == "tiny":  # below the floor: a step as short or shorter, still inside
        dx[::3] = -1e-305
    expected = _branching_step(x, dx, 1.0)
    got = interior.step_to_boundary((x, dx))
    if special == "tiny":
        assert got <= expected
        moved = x + got * dx  # the blocking entry lands on 0 up to one rounding of x
        finite = np.isfinite(moved)
        assert np.all(moved[finite] >= -4 * np.finfo(float).eps * x[finite])
    else:
        assert got == expected


def _adult_step(n: int = 1500) -> StructuredForm:
    """The hinge relaxation of error rate + 80% rule on an Adult sample (one row, m = 1)."""
    adult = rc.datasets.load_adult()
    D, _ = adult.split(n / adult.n, seed=5)
    a, b = D.group("sex", "Female"), D.group("sex", "Male")
    problem = rc.Problem(minimize=rc.error_rate(D), model=rc.LinearModel(l2=1e-3),
                         subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)])
    problem.plan()
    analysis = problem.analysis
    _, psi = kernelized(analysis)
    bounds = np.array([row.bound for row in analysis.constraints])
    return lower_structured(analysis, psi, None, bounds)


def _numpy_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the NumPy expressions the compiled passes replaced back into the solver."""
    monkeypatch.setattr(SN, "newton_rhs", lambda W, c, s, r: W * (c - s) + r / s)
    monkeypatch.setattr(SN, "recovered_pairs", lambda W, jd, c, s, r: (
        lambda ds: (ds, -W * ds - r / s))(jd + c - s))
    for module in (S, SN):
        monkeypatch.setattr(module, "scatter_product",
                            lambda i, a, b, n: np.bincount(i, weights=a * b, minlength=n))
    monkeypatch.setattr(SN, "columns_times", lambda A, y: A @ y)
    monkeypatch.setattr(S, "rows_transpose_times", lambda B, y: B.T @ y)
    monkeypatch.setattr(interior, "_step_to_boundary_one", _branching_step)


def test_a_real_step_is_the_same_to_the_last_bit(monkeypatch):
    """Adult, error rate + 80% rule: the cold step and a warm step from its answer."""
    form = _adult_step()
    cold = S.solve_structured(form)
    warm = S.solve_structured(form, warm=WarmStart(cold.w, cold.b, cold.duals, cold.extra))
    assert cold.status == warm.status == "optimal"
    _numpy_passes(monkeypatch)
    cold_ref = S.solve_structured(form)
    warm_ref = S.solve_structured(form, warm=WarmStart(cold_ref.w, cold_ref.b,
                                                         cold_ref.duals, cold_ref.extra))
    for ours, ref in ((cold, cold_ref), (warm, warm_ref)):
        assert ours.iterations == ref.iterations
        np.testing.assert_array_equal(ours.w, ref.w)
        assert ours.b == ref.b and ours.objective == ref.objective
        np.testing.assert_array_equal(ours.duals, ref.duals)
