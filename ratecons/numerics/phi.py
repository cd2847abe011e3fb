"""Phi-divergence generators: phi, its derivative, conjugate and inverse derivative.

Ghosh & Squillante, "Unbiased Gradient Estimation for Distributionally Robust Learning"
(the DRO paper), section 1: D_phi(P, U_N) = (1/N) sum_n phi(N p_n). A phi is a convex function
on s >= 0 with phi(1) = 0 and phi >= 0. The solvers need its derivative phi' (eq. 9 inverts it)
and its convex conjugate restricted to s >= 0, phi*(t) = sup_{s >= 0} (s t - phi(s)) (the dual
of problem (4)). Built in:

- ``CHI2``: the modified chi-square phi(s) = (s - 1)^2, phi*(t) = -1 + max(0, t + 2)^2 / 4;
- ``KL``: Kullback-Leibler phi(s) = s log s - s + 1, phi*(t) = exp(t) - 1.

This module sits below the spec objects, the canonical forms and the solvers, which all
import it (numerics never import any of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError, parameter_error

__all__ = ["Phi", "CHI2", "KL", "as_phi", "assumption1_bound", "degenerate_bound"]

ArrayFn = Callable[[np.ndarray], np.ndarray]


def _bisect_inverse(derivative: ArrayFn, t: np.ndarray) -> np.ndarray:
    """s >= 0 with phi'(s) = t, elementwise by bisection (phi' is nondecreasing)."""
    t = np.asarray(t, dtype=np.float64)
    lo = np.zeros_like(t)
    hi = np.ones_like(t)
    for _ in range(200):  # grow the bracket until phi'(hi) >= t everywhere
        low = derivative(hi) < t
        if not np.any(low):
            break
        hi = np.where(low, 2.0 * hi, hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        up = derivative(mid) < t
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
        if np.all(hi - lo <= 1e-15 * np.maximum(1.0, hi)):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Phi:
    """A phi-divergence generator with what the solvers need.

    Parameters
    ----------
    phi : callable
        Vectorized phi(s) for s >= 0: convex, nonnegative, phi(1) = 0.
    derivative : callable
        Vectorized phi'(s) for s >= 0 (may return -inf at 0, as for KL).
    conjugate : callable
        Vectorized phi*(t) = sup_{s >= 0} (s t - phi(s)), the conjugate on s >= 0.
    inverse_derivative : callable, optional
        Vectorized (phi')^{-1}(t) for t > phi'(0) (eq. 9). Computed by bisection on
        ``derivative`` when omitted.
    name : str
        Used in reports.

    Notes
    -----
    The constructor checks phi(1) = 0, phi >= 0, the derivative against finite differences and
    the Fenchel-Young equality phi(s) + phi*(phi'(s)) = s phi'(s) at a few points, so a wrong
    formula fails here rather than inside a solver.
    """

    phi: ArrayFn
    derivative: ArrayFn
    conjugate: ArrayFn
    inverse_derivative: ArrayFn | None = None
    name: str = "custom"

    def __post_init__(self) -> None:
        for attr in ("phi", "derivative", "conjugate"):
            if not callable(getattr(self, attr)):
                raise parameter_error(attr, "Phi", "a vectorized callable", getattr(self, attr))
        if self.inverse_derivative is not None and not callable(self.inverse_derivative):
            raise parameter_error(
                "inverse_derivative", "Phi", "a vectorized callable or None",
                self.inverse_derivative,
            )
        s = np.array([0.25, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0])
        with np.errstate(all="ignore"):
            try:
                vals = np.asarray(self.phi(s), dtype=np.float64)
                ders = np.asarray(self.derivative(s), dtype=np.float64)
                h = 1e-6
                fd = (np.asarray(self.phi(s + h)) - np.asarray(self.phi(s - h))) / (2 * h)
                fy = vals + np.asarray(self.conjugate(ders), dtype=np.float64) - s * ders
            except Exception as exc:  # noqa: BLE001 - report any failure of user code clearly
                raise SpecError(f"Phi {self.name!r}: evaluating phi, derivative or conjugate on "
                                f"an array failed ({exc}); they must be vectorized.") from None
        if vals.shape != s.shape or ders.shape != s.shape:
            raise SpecError(f"Phi {self.name!r}: phi and derivative must map an array to an "
                            "array of the same shape (vectorized).")
        if abs(vals[3]) > 1e-10:
            raise SpecError(f"Phi {self.name!r}: phi(1) must be 0; got {vals[3]:g}.")
        if np.any(vals < -1e-12) or not np.all(np.isfinite(vals)):
            raise SpecError(f"Phi {self.name!r}: phi must be finite and nonnegative on s > 0.")
        if not np.allclose(ders, fd, rtol=1e-4, atol=1e-6):
            raise SpecError(f"Phi {self.name!r}: derivative does not match finite differences "
                            f"of phi (at s={s.tolist()}: {ders.tolist()} vs {fd.tolist()}).")
        if not np.allclose(fy, 0.0, atol=1e-8 * max(1.0, float(np.max(np.abs(vals))))):
            raise SpecError(f"Phi {self.name!r}: conjugate fails the Fenchel-Young equality "
                            "phi(s) + phi*(phi'(s)) = s phi'(s); it must be the conjugate on "
                            "s >= 0.")
        if self.inverse_derivative is not None:
            back = np.asarray(self.inverse_derivative(ders), dtype=np.float64)
            if not np.allclose(back, s, rtol=1e-8):
                raise SpecError(f"Phi {self.name!r}: inverse_derivative(derivative(s)) != s.")

    @property
    def derivative_at_zero(self) -> float:
        """phi'(0), possibly -inf (then no weight is ever 0 in eq. (9))."""
        with np.errstate(all="ignore"):
            v = float(np.asarray(self.derivative(np.zeros(1)))[0])
        return -np.inf if np.isnan(v) else v

    @property
    def at_zero(self) -> float:
        """phi(0) (the divergence contribution of a zero weight)."""
        with np.errstate(all="ignore"):
            v = float(np.asarray(self.phi(np.zeros(1)))[0])
        if np.isnan(v):  # 0 log 0 style: take the limit from the right
            v = float(np.asarray(self.phi(np.full(1, 1e-300)))[0])
        return v

    def weights_from_dual(self, t: np.ndarray) -> np.ndarray:
        """s = (phi*)'(t): (phi')^{-1}(t) where t > phi'(0), else 0 (eq. 9 with s = M p)."""
        t = np.asarray(t, dtype=np.float64)
        out = np.zeros_like(t)
        pos = t > self.derivative_at_zero
        if np.any(pos):
            inv = self.inverse_derivative or (lambda u: _bisect_inverse(self.derivative, u))
            out[pos] = np.maximum(np.asarray(inv(t[pos]), dtype=np.float64), 0.0)
        return out

    def divergence(self, p: np.ndarray) -> float:
        """D_phi(P, U_M) = (1/M) sum_m phi(M p_m) for a pmf ``p`` of length M."""
        p = np.asarray(p, dtype=np.float64)
        s = p.size * p
        with np.errstate(all="ignore"):
            vals = np.where(s > 0, np.asarray(self.phi(np.maximum(s, 1e-300))), self.at_zero)
        return float(np.mean(vals))

    def __repr__(self) -> str:
        return f"Phi({self.name!r})"


def _chi2(s: np.ndarray) -> np.ndarray:
    return (np.asarray(s, dtype=np.float64) - 1.0) ** 2


def _chi2_der(s: np.ndarray) -> np.ndarray:
    return 2.0 * (np.asarray(s, dtype=np.float64) - 1.0)


def _chi2_conj(t: np.ndarray) -> np.ndarray:
    return -1.0 + 0.25 * np.maximum(np.asarray(t, dtype=np.float64) + 2.0, 0.0) ** 2


def _chi2_inv(t: np.ndarray) -> np.ndarray:
    return 1.0 + 0.5 * np.asarray(t, dtype=np.float64)


def _kl(s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogx = np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0)
    return xlogx - s + 1.0


def _kl_der(s: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(s, dtype=np.float64))


def _kl_conj(t: np.ndarray) -> np.ndarray:
    return np.expm1(np.asarray(t, dtype=np.float64))


def _kl_inv(t: np.ndarray) -> np.ndarray:
    return np.exp(np.asarray(t, dtype=np.float64))


#: the modified chi-square divergence phi(s) = (s - 1)^2 (section 1)
CHI2 = Phi(_chi2, _chi2_der, _chi2_conj, _chi2_inv, name="chi2")
#: the Kullback-Leibler divergence phi(s) = s log s - s + 1 (section 1)
KL = Phi(_kl, _kl_der, _kl_conj, _kl_inv, name="kl")
_BUILTIN = {"chi2": CHI2, "kl": KL}


def as_phi(phi: Any, owner: str = "PhiDivergenceBall") -> Phi:
    """``"chi2"``, ``"kl"`` or a :class:`Phi` -> a :class:`Phi`."""
    if isinstance(phi, Phi):
        return phi
    if isinstance(phi, str) and phi.lower() in _BUILTIN:
        return _BUILTIN[phi.lower()]
    raise parameter_error("phi", owner, "'chi2', 'kl' or an rc.Phi(...)", phi)


def assumption1_bound(n: int, phi: Phi | str) -> float:
    """The paper's bound rho_1 = (1 - 1/N) phi(N/(N-1)) + phi(0)/N (Assumption 1, Prop. 1).

    rho < rho_1 keeps every feasible pmf strictly positive on all N support points (it is the
    divergence of the pmf uniform on N - 1 points). For chi2 it equals 1/(N - 1); for KL,
    log(N / (N - 1)). For N = 1 the ball is the single pmf (1), and the bound is +inf.
    """
    phi = as_phi(phi)
    if n <= 1:
        return float("inf")
    s = n / (n - 1.0)
    return float((1.0 - 1.0 / n) * float(np.asarray(phi.phi(np.array([s])))[0])
                 + phi.at_zero / n)


def degenerate_bound(n: int, phi: Phi | str) -> float:
    """D_phi of a vertex of the simplex, (phi(N) + (N-1) phi(0)) / N: at or above it the ball
    holds every pmf of the support, R(theta) = max_n l(theta, xi_n) and the robust problem is
    degenerate (case alpha* = 0 of the IM procedure at every theta)."""
    phi = as_phi(phi)
    if n <= 1:
        return float("inf")
    return float((float(np.asarray(phi.phi(np.array([float(n)])))[0]) + (n - 1) * phi.at_zero)
                 / n)
