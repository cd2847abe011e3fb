"""The closed-form U_t of Alg 2 for one multiplier against the HiGHS LP it replaces."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.backends.highs import solve_lp
from ratecons.canonical.matrix_lp import MatrixLP
from ratecons.solvers.cut_max_1d import max_of_cuts_1d


def _highs(g: np.ndarray, c: np.ndarray, box: float):
    """max z s.t. z <= c_s + g_s v, 0 <= v <= box, by HiGHS: (v, U, row duals)."""
    A = sp.csr_matrix(np.column_stack([-g, np.ones(g.size)]))
    lp = MatrixLP(np.array([0.0, 1.0]), A, np.full(g.size, -np.inf), c,
                  np.array([0.0, -np.inf]), np.array([box, np.inf]), maximize=True)
    res = solve_lp(lp, budgeted=False)
    assert res.status == "optimal"
    return float(res.x[0]), float(res.objective), res.row_dual


def _dual_value(g, c, box, mu):
    """The dual objective of the weights mu: sum mu c + box max(0, sum mu g) (>= U_t)."""
    return float(mu @ c + box * max(0.0, float(mu @ g)))


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 100_000), k=st.integers(1, 12), box=st.sampled_from([1.0, 4.0, 100.0]),
       repeat=st.booleans())
def test_closed_form_matches_highs_and_is_a_dual_certificate(seed, k, box, repeat):
    rng = np.random.default_rng(seed)
    g, c = rng.normal(size=k) * 10.0 ** rng.integers(-4, 1, size=k), rng.normal(size=k)
    if repeat:  # Alg 2 repeats a cut when Alg 3 returns the previous (w, b)
        g, c = np.append(g, g[-1]), np.append(c, c[-1])
    v, top, mu = max_of_cuts_1d(g, c, box)
    hv, htop, _ = _highs(g, c, box)
    # the maximum: HiGHS's to its tolerances, the closed form's exactly
    assert top == pytest.approx(htop, rel=1e-7, abs=1e-7)
    assert 0.0 <= v <= box
    assert top == np.min(c + g * v)
    grid = np.linspace(0.0, box, 2001)
    assert np.max(np.min(np.outer(grid, g) + c, axis=1)) <= top + 1e-12 * max(1.0, abs(top))
    # mu: a probability vector on the cuts active at v whose dual value certifies U_t
    assert np.all(mu >= 0.0) and mu.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all((mu == 0.0) | np.isclose(c + g * v, top, rtol=0, atol=1e-9))
    assert _dual_value(g, c, box, mu) == pytest.approx(top, rel=1e-9, abs=1e-12)
    if 0.0 < v < box:  # interior: the weighted slopes cancel
        assert mu @ g == pytest.approx(0.0, abs=1e-12 * np.abs(g).max())


def test_interior_two_cuts_by_hand():
    # h(v) = min(1 + v, 3 - v) on [0, 4]: peak at v = 1, value 2, weights 1/2 each
    v, top, mu = max_of_cuts_1d(np.array([1.0, -1.0]), np.array([1.0, 3.0]), 4.0)
    assert (v, top) == (1.0, 2.0)
    np.testing.assert_array_equal(mu, [0.5, 0.5])
    # steeper rise: min(2v, 3 - v) peaks at v = 1 with weights 1/3, 2/3
    v, top, mu = max_of_cuts_1d(np.array([2.0, -1.0]), np.array([0.0, 3.0]), 4.0)
    assert v == pytest.approx(1.0) and top == pytest.approx(2.0)
    np.testing.assert_allclose(mu, [1 / 3, 2 / 3])


def test_ends_of_the_box():
    # every cut rises: the maximum at the box's end, on the lowest cut there
    v, top, mu = max_of_cuts_1d(np.array([1.0, 0.5]), np.array([0.0, 0.4]), 2.0)
    assert (v, top) == (2.0, 1.4)
    np.testing.assert_array_equal(mu, [0.0, 1.0])
    # every cut falls: at 0, on the lowest intercept
    v, top, mu = max_of_cuts_1d(np.array([-1.0, -0.5]), np.array([0.3, 0.2]), 2.0)
    assert (v, top) == (0.0, 0.2)
    np.testing.assert_array_equal(mu, [0.0, 1.0])
    # a repeated cut: the weight goes to the newest copy
    v, top, mu = max_of_cuts_1d(np.array([1.0, 1.0]), np.array([0.5, 0.5]), 3.0)
    np.testing.assert_array_equal(mu, [0.0, 1.0])


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="k >= 1 cuts"):
        max_of_cuts_1d(np.zeros(0), np.zeros(0), 1.0)
    with pytest.raises(ValueError, match="one slope and one offset"):
        max_of_cuts_1d(np.zeros(2), np.zeros(3), 1.0)
