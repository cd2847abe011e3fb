"""The inner maximization (problem (4), App. A.1 of Ghosh & Squillante) for any phi, by
reductions over the persisted margins.

For a phi other than chi-square and KL the IM procedure has no closed form: in memory
(:func:`ratecons.numerics.inner_max._inner_bisection`) it finds, for each alpha, the lambda
with (1/N) sum_n s_n = 1, s_n = (phi*)'(t_n), t_n = (z_n - lambda) / alpha (eq. 9, steps
2(a)-(b)), and then alpha* with D_phi(s / sum s, U_N) = rho (step 2(c)), both by bisection:
hundreds of passes over the losses. On Dask data the losses z_n stay with their partitions,
and (alpha*, lambda*) is found instead as the minimizer of the dual of (4),

    g(alpha, lambda) = alpha rho + lambda + (alpha / N) sum_n phi*(t_n),

whose optimality conditions are those two equations: dg/dlambda = 1 - (1/N) sum s_n and
dg/dalpha = rho - (1/N) sum phi(s_n) (Fenchel-Young: phi*(t) - t s = -phi(s) at s =
(phi*)'(t)), and whose Hessian is (1/(alpha N)) sum_n s'_n [1, t_n; t_n, t_n^2] with
s'_n = (phi*)''(t_n), taken by central differences of s on the workers (phi'' is not part
of :class:`~ratecons.numerics.phi.Phi`). A damped Newton method runs one iteration per
pass: the pass evaluates, at a batch of :data:`STEPS` points along the last Newton direction
(step lengths 1, 1/2, 1/4, ...), the six sums sum phi*(t), sum s, sum phi(s), sum s',
sum s' t and sum s' t^2, so that only 6 x STEPS numbers per partition travel; the longest step
with sufficient decrease (Armijo) is taken, and its sums give the next direction. From the
start lambda = max z (every t <= 0, where phi* is finite for every phi) it ends, quadratically,
when both conditions hold to the in-memory search's tolerances.

The result is a :class:`PhiRule`, from which every worker forms s_n (and P* = s / sum s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .inner_max import conjugate_sum, conjugate_total, dual_objective
from .inner_max_dask import (
    LossSummary,
    Values,
    WeightRule,
    computed,
    per_partition,
    trivial_rule,
    values_of,
)
from .phi import Phi

__all__ = ["PhiRule", "phi_rule"]

#: points evaluated per pass along the Newton direction (step lengths 1, 1/2, ...); the first
#: pass evaluates as many starting alphas instead
STEPS = 8
#: the starting alphas: these multiples of the losses' spread, with lambda = max z
START_ALPHAS = np.logspace(-3, 2, STEPS)
#: the search stops when |(1/N) sum s - 1| and |(1/N) sum phi(s) - rho| / rho are below this
#: (or when no step decreases g: rounding)
CONDITION_TOL = 1e-14
#: relative step of the central differences of s(t)
DIFFERENCE_STEP = 1e-6
#: Armijo's sufficient decrease
ARMIJO = 1e-4
#: passes the search may take before it gives up (a phi whose dual has no minimizer)
MAX_PASSES = 80


@dataclass(frozen=True)
class PhiRule(WeightRule):
    """s_n = (phi*)'((z_n - lam) / alpha) (eq. 9), ``scale`` = N / sum s at the search's end
    (the divergence of P* = s / sum s is (1/N) sum phi(scale s))."""

    phi: Phi | None = None
    alpha: float = 1.0
    scale: float = 1.0

    def weights(self, z: np.ndarray) -> np.ndarray:
        return self.phi.weights_from_dual((z - self.lam) / self.alpha)

    def duals(self, total: float, n: int) -> tuple[float, float]:
        return self.alpha, self.lam

    def conjugate_sum(self, z: np.ndarray) -> float:
        return conjugate_sum(self.phi, z, self.alpha, self.lam)

    def divergence_sum(self, s: np.ndarray) -> float:
        """sum phi(scale s) over one partition's weights ``s``: N times the divergence of
        P* = s / sum s."""
        return float(_phi_values(self.phi, self.scale * s).sum())


def _phi_values(phi: Phi, s: np.ndarray) -> np.ndarray:
    """phi(s), with phi(0) where s = 0 (:meth:`ratecons.numerics.phi.Phi.divergence`)."""
    with np.errstate(all="ignore"):
        return np.where(s > 0, np.asarray(phi.phi(np.maximum(s, 1e-300))), phi.at_zero)


def _candidate_sums(m: np.ndarray, loss: Values, phi: Phi, points: np.ndarray) -> np.ndarray:
    """At each (alpha, lambda) of ``points``: sum phi*(t), sum s, sum phi(s), sum s',
    sum s' t and sum s' t^2 over one partition (module docstring), as one row."""
    z = values_of(m, loss)
    out = np.zeros((points.shape[0], 6))
    with np.errstate(all="ignore"):
        for i, (alpha, lam) in enumerate(points):
            t = (z - lam) / alpha
            s = phi.weights_from_dual(t)
            h = DIFFERENCE_STEP * np.maximum(1.0, np.abs(t))
            ds = (phi.weights_from_dual(t + h) - phi.weights_from_dual(t - h)) / (2.0 * h)
            out[i] = [conjugate_total(phi, t), s.sum(), _phi_values(phi, s).sum(),
                      ds.sum(), ds @ t, ds @ (t * t)]
    return out.reshape(1, -1)


@dataclass
class _Point:
    """(alpha, lambda) with g, its gradient and Hessian from the six sums."""

    x: np.ndarray
    g: float
    grad: np.ndarray
    hess: np.ndarray
    total: float

    @classmethod
    def of(cls, x: np.ndarray, sums: np.ndarray, n: int, rho: float) -> _Point:
        conj, total, phis, d0, d1, d2 = sums
        alpha, lam = x
        g = dual_objective(alpha, lam, rho, conj / n)
        grad = np.array([rho - phis / n, 1.0 - total / n])
        hess = np.array([[d2, d1], [d1, d0]]) / (alpha * n)
        return cls(x, float(g) if np.isfinite(g) else np.inf, grad, hess, float(total))

    def residual(self, rho: float) -> float:
        """The larger of the two conditions' residuals, the divergence's relative to rho."""
        return max(abs(self.grad[1]), abs(self.grad[0]) / max(rho, 1e-300))

    def done(self, rho: float) -> bool:
        return self.residual(rho) <= CONDITION_TOL

    def direction(self) -> np.ndarray:
        """The Newton direction (a scaled gradient step when the Hessian is not usable)."""
        H = self.hess + 1e-300 * np.eye(2)
        if np.all(np.isfinite(H)):
            try:
                d = -np.linalg.solve(H, self.grad)
                if np.all(np.isfinite(d)) and d @ self.grad < 0:
                    return d
            except np.linalg.LinAlgError:
                pass
        return -self.grad * max(self.x[0], 1e-12)


class _Search:
    """The damped Newton search on the dual over one persisted margin array."""

    def __init__(self, state: Any, loss: Values, phi: Phi, rho: float, summ: LossSummary,
                 start: tuple[float, float] | None) -> None:
        self.state, self.loss, self.phi, self.rho, self.n = state, loss, phi, rho, summ.n
        self.summ, self.start = summ, start

    def points(self, xs: np.ndarray) -> list[_Point]:
        """The six sums at every point: one pass over the margins."""
        out = computed(per_partition(_candidate_sums, 6 * xs.shape[0], self.state,
                                     loss=self.loss, phi=self.phi, points=xs)).sum(axis=0)
        return [_Point.of(x, row, self.n, self.rho) for x, row in zip(xs, out.reshape(-1, 6))]

    def run(self) -> PhiRule:
        spread = self.summ.zmax - self.summ.zmin
        starts = np.column_stack([spread * START_ALPHAS, np.full(STEPS, self.summ.zmax)])
        if self.start is not None:  # the last evaluation's duals, and its alpha at max z
            starts[[0, -1]] = [self.start, (self.start[0], self.summ.zmax)]
        now = min(self.points(starts), key=lambda p: p.g)
        steps = 0.5 ** np.arange(STEPS)
        for _ in range(MAX_PASSES):
            if now.done(self.rho):
                break
            d = now.direction()
            xs = now.x[None, :] + steps[:, None] * d[None, :]
            tried = [p for p in self.points(xs[xs[:, 0] > 0]) if np.isfinite(p.g)]
            slope = float(now.grad @ d)
            good = [p for p, gamma in zip(tried, steps)
                    if p.g <= now.g + ARMIJO * gamma * slope]
            better = good[:1] or [p for p in tried if p.g < now.g]
            if not better:
                # g is flat to its rounding here (it falls by the residual squared): go on
                # while a step at least halves the conditions' residual, as Newton's steps do
                # near the optimum (chi-square as a custom phi, rho = 0.3: stopped at a
                # divergence 5.6e-8 relative above rho on one machine); a slower fall is the
                # rounding's floor, and ends the search rather than spending MAX_PASSES
                better = [p for p in tried
                          if p.residual(self.rho) <= 0.5 * now.residual(self.rho)]
                if not better:
                    break
                now = better[0]
                continue
            now = min(better, key=lambda p: (p not in good, p.g)) if not good else better[0]
        else:
            raise RuntimeError(f"the dual search for phi {self.phi.name!r} did not end in "
                               f"{MAX_PASSES} passes")
        alpha, lam = now.x
        return PhiRule("phi", self.summ.zmax, lam=float(lam), phi=self.phi, alpha=float(alpha),
                       scale=self.n / now.total)


def phi_rule(state: Any, loss: Values, phi: Phi, rho: float, summ: LossSummary,
             start: tuple[float, float] | None = None) -> WeightRule:
    """The worst-case weights' rule for the persisted ``state``: the IM procedure's cases in
    its order (ties, alpha* = 0, then the dual search of the module docstring, which also
    starts from ``start``, the duals (alpha, lambda) of a nearby point, when given)."""
    return trivial_rule(summ, phi, rho) or _Search(state, loss, phi, rho, summ, start).run()
