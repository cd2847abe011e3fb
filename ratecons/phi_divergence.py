"""Phi-divergence balls and the robust loss (spec layer of distributionally robust learning).

Ghosh & Squillante, "Unbiased Gradient Estimation for Distributionally Robust Learning"
(the DRO paper), section 1: the robust loss of a model theta on training data xi_1..xi_N is

    R(theta) = max_P  sum_n p_n l(theta, xi_n)
               s.t.   D_phi(P, U_N) = (1/N) sum_n phi(N p_n) <= rho,  sum_n p_n = 1,  p >= 0,

the worst expected loss over all reweightings P of the data within a phi-divergence ball of
radius rho around the uniform distribution U_N. ``rc.PhiDivergenceBall(data, phi, rho)`` describes
the ball; ``rc.robust_loss(ball, loss)`` is the objective R(theta) to minimize over a
``rc.LinearModel`` (its ``l2`` adds (l2/2)||w||^2)::

    U = rc.PhiDivergenceBall(train, phi="chi2", rho=0.1)
    result = rc.Problem(minimize=rc.robust_loss(U, loss="logistic"),
                        model=rc.LinearModel(l2=1e-3)).solve()

A phi is a convex function on s >= 0 with phi(1) = 0 and phi >= 0. The solvers need its
derivative phi' (eq. 9 inverts it) and its convex conjugate restricted to s >= 0,
phi*(t) = sup_{s >= 0} (s t - phi(s)) (the dual of problem (4)). Built in:

- ``"chi2"``: the modified chi-square phi(s) = (s - 1)^2, phi*(t) = -1 + max(0, t + 2)^2 / 4;
- ``"kl"``: Kullback-Leibler phi(s) = s log s - s + 1, phi*(t) = exp(t) - 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import Dataset, Subset
from .errors import DataError, SpecError, parameter_error
from .expr.atom import Term
from .loss_functions import MARGIN_LOSSES

__all__ = [
    "Phi",
    "CHI2",
    "KL",
    "as_phi",
    "assumption1_bound",
    "PhiDivergenceBall",
    "RobustLoss",
    "robust_loss",
]

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


class PhiDivergenceBall:
    """The set of reweightings P of ``data`` with D_phi(P, U_N) <= rho (eq. 1 with P_b = U_N).

    Parameters
    ----------
    data : Dataset
        Training examples with binary labels (0/1, -1/+1 or bool). Example weights are not
        supported: the base distribution is the uniform U_N.
    phi : {"chi2", "kl"} or Phi, default "chi2"
    rho : float, default 0.1
        Radius of the ball, rho > 0.
    strict : bool, default False
        With ``strict=True``, enforce the paper's Assumption 1 (Proposition 1):
        rho < rho_1(N, phi) (see :func:`assumption1_bound`; 1/(N-1) for chi2), which guarantees
        that the worst-case pmf P* puts positive mass on every example. The bound shrinks like
        1/N, so the radii of the paper's own experiments (rho = 0.1 with N ~ 10^4..10^6,
        section 4) violate it, and the default accepts them: P* may then put zero mass on
        low-loss examples; it is still unique whenever the losses are not all equal (phi
        strictly convex). Whether the assumption holds is recorded in ``assumption1_holds`` and
        shown by ``describe()``. In every case rho must stay below the degenerate limit
        (phi(N) + (N-1) phi(0)) / N at which the ball holds every pmf (an error).

    Attributes
    ----------
    n : int
    rho_bound : float
        rho_1(N, phi) of Assumption 1.
    """

    def __init__(
        self, data: Dataset | Subset, phi: str | Phi = "chi2", rho: float = 0.1,
        strict: bool = False
    ) -> None:
        if isinstance(data, Subset):
            #: the examples the ball reweights, as rows of the user's dataset
            self.support = data.require_nonempty("PhiDivergenceBall")
            data = data.data.take(data.index, name=data.name)
        elif isinstance(data, Dataset):
            self.support = data.all
        else:
            raise parameter_error("data", "PhiDivergenceBall", "an rc.Dataset or rc.Subset",
                                  type(data).__name__)
        if data.y is not None:  # unlabelled data are fine for worst-case coverage rates
            data.require_labels("PhiDivergenceBall (robust classification)", binary=True)
        if data.weights is not None:
            raise DataError(
                f"dataset {data.name!r} has example weights, but the phi-divergence ball is "
                "centred at the uniform distribution U_N (section 1); drop the weights or "
                "replicate examples instead."
            )
        self.data = data
        self.phi = as_phi(phi)
        try:
            rho_f = float(rho)
        except (TypeError, ValueError):
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho) from None
        if not np.isfinite(rho_f) or rho_f <= 0:
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho)
        if not isinstance(strict, (bool, np.bool_)):
            raise parameter_error("strict", "PhiDivergenceBall", "a bool", strict)
        self.rho = rho_f
        self.strict = bool(strict)
        self.rho_bound = assumption1_bound(data.n, self.phi)
        self.rho_degenerate = degenerate_bound(data.n, self.phi)
        self.assumption1_holds = rho_f < self.rho_bound
        if self.strict and not rho_f < self.rho_bound:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_bound:.6g}, the "
                f"bound rho_1 = (1 - 1/N) phi(N/(N-1)) + phi(0)/N of Assumption 1 "
                f"(Proposition 1) for N={data.n} and phi={self.phi.name!r}. Got {rho!r} "
                "instead. Use a smaller rho, or strict=False (the default) to allow worst-case "
                "weights of zero (as the paper's experiments with rho=0.1 do)."
            )
        if not rho_f < self.rho_degenerate:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_degenerate:.6g} "
                f"(for N={data.n}, phi={self.phi.name!r}): at or above it the ball contains "
                "every pmf on the data, the robust loss is the maximum loss and the problem is "
                f"degenerate. Got {rho!r} instead."
            )

    @property
    def n(self) -> int:
        return self.data.n

    def __repr__(self) -> str:
        return (f"PhiDivergenceBall({self.data.name!r}, phi={self.phi.name!r}, rho={self.rho:g}, "
                f"N={self.n})")


class RobustLoss(Term):
    """The objective R(theta) of eq. (2): the worst expected loss over a phi-divergence ball.

    Built by :func:`robust_loss`; a convex term (a supremum of convex functions): minimize it,
    bound it above, or add it to other terms.
    """

    curvature = "convex"
    kind = "loss"

    def __init__(self, ball: PhiDivergenceBall, loss: str = "logistic") -> None:
        if not isinstance(ball, PhiDivergenceBall):
            raise parameter_error("U", "robust_loss", "an rc.PhiDivergenceBall",
                                  type(ball).__name__)
        if loss not in MARGIN_LOSSES:
            raise parameter_error("loss", "robust_loss", f"one of {tuple(MARGIN_LOSSES)}", loss)
        ball.data.require_labels("rc.robust_loss (robust classification)", binary=True)
        self.ball = ball
        self.loss = loss

    @property
    def name(self) -> str:
        return (f"robust_loss({self.ball.support.name}, phi={self.ball.phi.name!r}, "
                f"rho={self.ball.rho:g}, loss={self.loss!r})")

    def datasets(self) -> list[Dataset]:
        return [self.ball.support.data]

    def losses(self, scorer: Any) -> np.ndarray:
        """l(m_n) for every example of the ball, m_n = y~_n f(x_n)."""
        support = self.ball.support
        scores = scorer.decision_function(support.data.X)[support.index]
        margins = (2.0 * support.y - 1.0) * scores
        return MARGIN_LOSSES[self.loss](margins)[0]

    def value(self, scorer: Any) -> float:
        """R(theta) by the exact inner maximization (App. A.1)."""
        from .solvers.dro import inner_maximize

        return inner_maximize(self.losses(scorer), self.ball.phi, self.ball.rho).value

    surrogate_value = value

    def rebind(self, rebind: Callable[[Subset], Subset]) -> RobustLoss:
        ball = self.ball
        return RobustLoss(PhiDivergenceBall(rebind(ball.support), ball.phi, ball.rho), self.loss)

    def __repr__(self) -> str:
        return f"robust_loss({self.ball!r}, loss={self.loss!r})"


def robust_loss(U: PhiDivergenceBall, loss: str = "logistic") -> RobustLoss:
    """R(theta) = max_{P in U} E_P[l(theta, xi)] (eq. 2), an objective to minimize.

    Parameters
    ----------
    U : PhiDivergenceBall
    loss : {"logistic", "hinge", "squared"}
        A loss of the margin m = y~ f(x) with y~ = 2y - 1 in {-1, +1} (labels 1 -> +1,
        0 -> -1) and f(x) = <w, x> - b: logistic log(1 + exp(-m)), hinge max(0, 1 - m),
        squared (1 - m)^2 = (y~ - f(x))^2 (least squares on the +-1 targets).
    """
    return RobustLoss(U, loss)
