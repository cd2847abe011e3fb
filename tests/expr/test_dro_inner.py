"""Exact inner maximization (IM procedure, appendix A.1 of the DRO paper) against CVXPY."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.errors import SpecError
from ratecons.numerics.inner_max import inner_maximize
from ratecons.numerics.phi import CHI2, KL, Phi, assumption1_bound

OBJ_RTOL = 1e-6  # objective, relative to max(1, |value|)
W_ATOL = 1e-5  # worst-case weights, absolute


TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "tol_ktratio": 1e-8}


def solve_inner_cvxpy(z: np.ndarray, phi: Phi, rho: float) -> tuple[float, np.ndarray]:
    """Problem (4) in primal form, written here from the paper, independent of the package:
    max_p p.z s.t. sum_m phi(M p_m) <= M rho, sum p = 1, p >= 0 (chi2: a sum of squares;
    KL: sum_m p_m log p_m <= rho - log M)."""
    import cvxpy as cp

    m = z.size
    p = cp.Variable(m, nonneg=True)
    if phi is CHI2:
        ball = cp.sum_squares(m * p - 1.0) <= m * rho
    else:
        ball = -cp.sum(cp.entr(p)) <= rho - np.log(m)
    prob = cp.Problem(cp.Maximize(z @ p), [cp.sum(p) == 1.0, ball])
    prob.solve(solver="CLARABEL", **TIGHT)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status  # 1e-10 asked
    return float(prob.value), np.asarray(p.value, dtype=np.float64)


def _instances(seed: int):
    """Random losses of several sizes, with ties (rounded values, repeated maxima)."""
    rng = np.random.default_rng(seed)
    for m in (2, 3, 7, 40, 250):
        z = np.log1p(np.exp(rng.normal(size=m)))
        yield m, z
        yield m, np.round(z, 1)  # many ties
        tied = z.copy()
        tied[: max(1, m // 5)] = z.max()  # tied maxima
        yield m, tied


@pytest.mark.parametrize("phi", [CHI2, KL], ids=["chi2", "kl"])
@pytest.mark.parametrize("seed", [0, 1])
def test_inner_matches_cvxpy(phi, seed):
    cases = 0
    for m, z in _instances(seed):
        bound = assumption1_bound(m, phi)
        for rho in (0.999 * bound, 0.5 * bound, 0.05, 0.5, 2.0):
            sol = inner_maximize(z, phi, rho)
            value, p = solve_inner_cvxpy(z, phi, rho)
            assert abs(sol.value - value) <= OBJ_RTOL * max(1.0, abs(value)), (m, rho, sol.case)
            # P* is unique unless the alpha* = 0 case holds with tied maxima
            if sol.case != "alpha=0" or np.sum(z >= z.max()) == 1:
                assert np.max(np.abs(sol.p - p)) <= W_ATOL, (m, rho, sol.case)
            assert abs(sol.p.sum() - 1.0) < 1e-12 and np.all(sol.p >= 0)
            assert sol.divergence <= rho * (1 + 1e-9) + 1e-12
            cases += 1
    assert cases == 5 * 3 * 5  # sizes x variants x radii


def test_alpha_zero_case_and_singleton():
    z = np.array([1.0, 3.0, 3.0, 0.5])
    sol = inner_maximize(z, CHI2, 10.0)
    assert sol.case == "alpha=0" and sol.alpha == 0.0
    np.testing.assert_allclose(sol.p, [0.0, 0.5, 0.5, 0.0])
    one = inner_maximize(np.array([2.5]), KL, 0.1)
    assert one.value == 2.5 and one.p.tolist() == [1.0]
    flat = inner_maximize(np.full(5, 0.7), CHI2, 0.1)  # all losses equal: uniform, D = 0
    np.testing.assert_allclose(flat.p, 0.2)


def test_rho_near_bound_keeps_every_weight_positive():
    rng = np.random.default_rng(3)
    z = rng.exponential(size=300)
    for phi in (CHI2, KL):
        sol = inner_maximize(z, phi, 0.999 * assumption1_bound(z.size, phi))
        assert np.all(sol.p > 0)  # Assumption 1: every support point keeps mass
    above = inner_maximize(z, CHI2, 2.0)  # far above 1/(N-1): low losses get weight 0
    assert np.any(above.p == 0)


def _custom_chi2() -> Phi:
    return Phi(lambda s: (s - 1.0) ** 2, lambda s: 2.0 * (s - 1.0),
               lambda t: -1.0 + 0.25 * np.maximum(t + 2.0, 0.0) ** 2, name="my-chi2")


@settings(max_examples=40, deadline=None)
@given(
    z=st.lists(st.floats(0.0, 5.0, allow_nan=False), min_size=2, max_size=30),
    rho=st.floats(0.001, 3.0),
    kl=st.booleans(),
)
def test_strong_duality_and_feasibility(z, rho, kl):
    """Identities of (4)-(5): value = dual value, sum p = 1, D(P*) = rho when alpha* > 0."""
    phi = KL if kl else CHI2
    z = np.asarray(z)
    sol = inner_maximize(z, phi, rho)
    scale = max(1.0, float(np.max(np.abs(z))))
    assert abs(sol.dual_value - sol.value) <= 1e-8 * scale
    assert abs(sol.p.sum() - 1.0) <= 1e-12 and np.all(sol.p >= 0)
    assert z.min() - 1e-12 <= sol.value <= z.max() + 1e-12
    if sol.alpha > 0:
        assert abs(sol.divergence - rho) <= 1e-7 * max(1.0, rho)


@settings(max_examples=25, deadline=None)
@given(z=st.lists(st.floats(0.0, 5.0, allow_nan=False), min_size=2, max_size=25),
       rho=st.floats(0.01, 2.0))
def test_bisection_path_matches_closed_form(z, rho):
    """A user Phi (nested bisection on lambda and alpha) agrees with the chi2 support scan."""
    z = np.asarray(z)
    exact = inner_maximize(z, CHI2, rho)
    generic = inner_maximize(z, _custom_chi2(), rho)
    assert abs(exact.value - generic.value) <= 1e-9 * max(1.0, float(np.max(np.abs(z))))


def test_custom_phi_validation():
    with pytest.raises(SpecError, match=r"phi\(1\) must be 0"):
        Phi(lambda s: s ** 2, lambda s: 2 * s, lambda t: t ** 2 / 4)
    with pytest.raises(SpecError, match="finite differences"):
        Phi(lambda s: (s - 1.0) ** 2, lambda s: 3.0 * (s - 1.0),
            lambda t: -1.0 + 0.25 * np.maximum(t + 2.0, 0.0) ** 2)
    with pytest.raises(SpecError, match="Fenchel-Young"):
        Phi(lambda s: (s - 1.0) ** 2, lambda s: 2.0 * (s - 1.0), lambda t: t)
    with pytest.raises(SpecError, match="nonempty"):
        inner_maximize(np.array([]), CHI2, 0.1)
