"""The compiled pieces' passes of a structured Newton direction
(:func:`~ratecons.solvers.structured_kernels.pieces_transposed`, ``scattered_rhs``,
``recovered_pieces``, ``pulled_products``): each gives, to the last bit, the numbers of the
NumPy expressions it replaced (with no pieces, one piece, many pieces on one example, and
complementarity products tied at the corrector's box), and whole steps solved with them (an
Adult step, random steps with smooth losses, several rows, free variables and l1) are the
steps solved with those expressions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.solvers import structured as S
from ratecons.solvers import structured_correctors as SC
from ratecons.solvers import structured_newton as SN
from ratecons.solvers.structured_form import StructuredForm, WarmStart
from ratecons.solvers.structured_kernels import (
    pieces_transposed,
    pulled_products,
    recovered_pieces,
    scattered_rhs,
)
from ratecons.solvers.thin_products import column_and_coefficient
from tests.solvers.test_direction_kernels import _adult_step
from tests.solvers.test_structured import _random_form


def _vectors(rng: np.random.Generator, n: int, count: int) -> list[np.ndarray]:
    return [rng.normal(size=n) * 10.0 ** rng.uniform(-6, 3, n) for _ in range(count)]


def _index(rng: np.random.Generator, k: int, n: int, crowded: bool) -> np.ndarray:
    """Piece -> example; ``crowded``: every piece on one of the first two examples (many
    pieces summed into one entry)."""
    return rng.integers(0, min(n, 2) if crowded else n, size=k)


def _bits(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([0, 1, 2, 7, 300]),
       n=st.integers(1, 50), rows=st.integers(0, 3), crowded=st.booleans())
def test_the_pieces_transposed_are_the_numpy_expressions(seed, k, n, rows, crowded):
    """J^T y's pieces: 0 - bincount(y_A a) on the examples, y_A + y_B + U_u y_R on u."""
    rng = np.random.default_rng(seed)
    index = _index(rng, k, n, crowded)
    slope, y_a, y_b = _vectors(rng, k, 3)
    U_u, y_r = rng.normal(size=(k, rows)), rng.normal(size=rows)
    column, coef = column_and_coefficient(U_u if rows else None, y_r, k)
    on_z, on_u = pieces_transposed(index, slope, y_a, y_b, column, coef, n)
    expected_z = np.zeros(n)
    expected_z -= np.bincount(index, weights=y_a * slope, minlength=n)
    expected_u = y_a + y_b + ((U_u[:, 0] * y_r[0] if rows == 1 else U_u @ y_r) if rows else 0.0)
    np.testing.assert_array_equal(on_z, expected_z)
    _bits(on_u, expected_u)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([0, 1, 2, 7, 300]),
       n=st.integers(1, 50), rows=st.integers(0, 3), extra=st.booleans(),
       crowded=st.booleans())
def test_the_solves_pieces_are_the_numpy_expressions(seed, k, n, rows, extra, crowded):
    """Before the small solve: bincount(W_A a / Du r_u) and r_u / Du; after it: the pieces
    a dz_{i_k} + G d_v and d_u = (r_u + W_A pieces + C_R^T y) / Du."""
    rng = np.random.default_rng(seed)
    index = _index(rng, k, n, crowded)
    slope, r_u, W_a = _vectors(rng, k, 3)
    Du = np.abs(_vectors(rng, k, 1)[0]) + 1e-9
    scatter = W_a * slope / Du
    examples, per_du = scattered_rhs(index, scatter, r_u, Du, n)
    _bits(examples, np.bincount(index, weights=scatter * r_u, minlength=n)
          if k else np.zeros(n))
    _bits(per_du, r_u / Du)
    dz, y = rng.normal(size=n), rng.normal(size=rows)
    Cu = rng.normal(size=(rows, k))
    Gv = rng.normal(size=k) if extra else np.zeros(0)
    column, coef = column_and_coefficient(Cu.T, y, k)
    pieces, d_u = recovered_pieces(index, slope, dz, Gv, r_u, W_a, column, coef, Du)
    expected = slope * dz[index] + Gv if extra else slope * dz[index]
    rows_term = Cu[0] * y[0] if rows == 1 else Cu.T @ y
    _bits(pieces, expected)
    _bits(d_u, (r_u + W_a * expected + rows_term) / Du)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([0, 1, 5, 300]),
       trial=st.floats(0.0, 1.0), centring=st.floats(0.0, 2.0), ties=st.booleans(),
       special=st.booleans())
def test_the_pulled_products_are_the_numpy_expression(seed, n, trial, centring, ties, special):
    """Gondzio's pull into [target / 10, 10 target] (np.clip, np.maximum) with the target
    sigma mu omega formed entry by entry (``centring`` times the weights, as the NumPy
    expression formed it as a vector), with products tied at either end of the box, zero
    targets and NaN products."""
    rng = np.random.default_rng(seed)
    s, lam = rng.uniform(0.01, 3.0, n), rng.uniform(0.01, 3.0, n)
    ds, dlam, r_c = (rng.normal(size=n) for _ in range(3))
    weights = rng.uniform(0.0, 1.0, n)
    if ties and n:  # the products at the box's ends exactly: s = 1, lam = the bound
        ds[::2], dlam[::2], s[::2] = 0.0, 0.0, 1.0
        lam[::4] = 0.1 * (centring * weights[::4])
        lam[2::4] = 10.0 * (centring * weights[2::4])
        weights[1::5] = 0.0
    if special and n:
        s[::3], weights[1::7] = np.nan, np.nan
    target = centring * weights
    v = (s + trial * ds) * (lam + trial * dlam)
    low, high = 0.1 * target, 10.0 * target
    expected = r_c - np.maximum(np.clip(v, low, high) - v, -high)
    _bits(pulled_products(s, ds, lam, dlam, trial, centring, weights, r_c), expected)


def _numpy_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the NumPy expressions the compiled pieces' passes replaced back."""
    def transposed(index, slope, y_a, y_b, column, coef, n):
        on_z = np.zeros(n)
        on_z -= np.bincount(index, weights=y_a * slope, minlength=n)
        return on_z, y_a + y_b + column * coef

    def rhs(index, scatter, r_u, Du, n):
        return np.bincount(index, weights=scatter * r_u, minlength=n), r_u / Du

    def recovered(index, slope, dz, extra, r_u, W_a, column, coef, Du):
        pieces = slope * dz[index] + extra if extra.size else slope * dz[index]
        return pieces, (r_u + W_a * pieces + column * coef) / Du

    def pulled(s, ds, lam, dlam, trial, centring, weights, r_c):
        target = centring * weights
        v = (s + trial * ds) * (lam + trial * dlam)
        return r_c - np.maximum(np.clip(v, 0.1 * target, 10.0 * target) - v, -10.0 * target)

    monkeypatch.setattr(SN, "pieces_transposed", transposed)
    monkeypatch.setattr(SN, "scattered_rhs", rhs)
    monkeypatch.setattr(SN, "recovered_pieces", recovered)
    monkeypatch.setattr(SC, "pulled_products", pulled)


def _same_solves(form: StructuredForm, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cold solve of ``form`` and a warm one from its answer, with the compiled passes
    and then with the NumPy expressions: the same iterations and bitwise the same answers."""
    def both() -> list:
        cold = S.solve_structured(form)
        return [cold, S.solve_structured(form, warm=WarmStart(cold.w, cold.b, cold.duals,
                                                              cold.extra))]
    ours = both()
    with monkeypatch.context() as patched:
        _numpy_pieces(patched)
        reference = both()
    for a, b in zip(ours, reference, strict=True):
        assert a.status == b.status and a.iterations == b.iterations
        _bits(a.w, b.w)
        _bits(np.asarray(a.extra, dtype=float), np.asarray(b.extra, dtype=float))
        assert a.b == b.b and a.objective == b.objective


def test_a_real_step_is_the_numpy_step_to_the_last_bit(monkeypatch):
    """Adult, error rate + 80% rule (hinge pieces, one row)."""
    form = _adult_step()
    assert S.solve_structured(form).status == "optimal"
    _same_solves(form, monkeypatch)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(0, 3), l1=st.booleans(),
       extra=st.integers(0, 2))
def test_random_steps_are_the_numpy_steps_to_the_last_bit(seed, m, l1, extra):
    """Random forms with a logistic loss in every row (d c_R / dz used), zero to three rows
    (the rows' column and coefficient of every kind), free variables on the pieces and l1."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same_solves(_random_form(seed, 12, 3, m, l1, True, extra), monkeypatch)
