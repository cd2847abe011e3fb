"""The exact DRO objective and its gradient (Ghosh & Squillante, eqs. 2, 4 and 6; appendix A.1).

F(theta) = R(theta) + (l2/2)||w||^2, with R the worst case over the phi-divergence ball (eq. 2)
of the mean margin loss. :func:`evaluate` computes F and grad F exactly on all N examples: one
pass for the margins, the IM procedure of appendix A.1 for the worst-case pmf P*
(:func:`ratecons.numerics.inner_max.inner_maximize`, O(N log N)) and one pass for the gradient
(6); :func:`subset_gradient` solves (4) on a subset, as the sampled methods do. Every DRO method
reads F and its bound (:mod:`ratecons.solvers.dro_certificate`) from here.
"""

from __future__ import annotations

import numpy as np

from ..canonical.dro import DROProgram
from ..dask_types import is_dask
from ..loss_functions import margin_loss
from ..numerics.inner_max import InnerSolution, inner_maximize
from .dro_point import Evaluation

__all__ = ["class_parts", "equal_margins", "evaluate", "full_objective",
           "on_workers", "subset_gradient"]


def subset_gradient(
    form: DROProgram, theta: np.ndarray, index: np.ndarray | None, rho: float
) -> tuple[InnerSolution, np.ndarray]:
    """Solve (4) on the rows ``index`` (all rows if None) and return (P*, gradient (6))."""
    z, slope = form.losses(theta, index)
    sol = inner_maximize(z, form.phi, rho)
    return sol, form.weighted_gradient(sol.p, slope, index)


def full_objective(
    form: DROProgram, theta: np.ndarray
) -> tuple[float, np.ndarray, InnerSolution]:
    """F(theta) = R(theta) + (l2/2)||w||^2 exactly on all N examples, its gradient, and P*
    (on Dask data with the per-example vectors on the workers when :func:`on_workers`; P* is
    then a lazy Dask array)."""
    if on_workers(form):
        from .dro_dask import DaskPasses

        ev = DaskPasses(form).evaluate(theta)
        return ev.value, ev.grad, ev.inner
    ev = evaluate(form, theta)
    return ev.value, ev.grad, ev.inner


def on_workers(form: DROProgram) -> bool:
    """Whether F is evaluated with the per-example vectors on the Dask workers
    (:mod:`ratecons.solvers.dro_dask`): Dask features, any ball and margin loss (the hinge's
    kink rows travel, :mod:`ratecons.solvers.dro_hinge`)."""
    return is_dask(form.X)


def evaluate(form: DROProgram, theta: np.ndarray) -> Evaluation:
    """Evaluate F exactly at theta: one pass for the margins, the IM procedure for P* (App.
    A.1), one pass (two columns, split by label) for the gradient (6)."""
    theta = np.asarray(theta, dtype=np.float64)
    margins = form.margins(theta)
    z, slope = margin_loss(form.loss, margins)
    inner = inner_maximize(z, form.phi, form.rho)
    parts = class_parts(form, inner.p * slope * form.y)
    grad_w = parts.sum(axis=1)
    w, _ = form.split(theta)
    grad = np.empty(form.dim)
    grad[: form.d] = grad_w + form.l2 * w
    if form.fit_intercept:
        grad[form.d] = -float(np.dot(inner.p * slope, form.y))
    return Evaluation(theta=theta.copy(), value=inner.value + form.regularizer(theta), grad=grad,
                      inner=inner, margins=margins, slope=slope, parts=parts)


def class_parts(form: DROProgram, c: np.ndarray) -> np.ndarray:
    """X^T [c * 1{y~ = +1}, c * 1{y~ = -1}] in one pass over X."""
    pos = form.y > 0
    cols = np.zeros((form.n, 2))
    cols[pos, 0] = c[pos]
    cols[~pos, 1] = c[~pos]
    return np.asarray(form.X.T @ cols)


def equal_margins(ev: Evaluation) -> bool:
    """Whether all margins tie (theta = 0, say): then P*(theta) is not unique."""
    lo, hi = ev.margin_range()
    return hi - lo <= 1e-12 * max(1.0, abs(lo), abs(hi))

