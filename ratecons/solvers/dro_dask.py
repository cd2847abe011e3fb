"""The robust loss's exact objective and gradient with the per-example vectors on the workers.

:func:`ratecons.solvers.dro_eval.evaluate` on Dask features would bring the margins to the
client, sort them there (the IM procedure of App. A.1 of Ghosh & Squillante) and send the
weights back: two N-vectors per evaluation. :class:`DaskPasses` keeps them with their
partitions instead. Per evaluation of F(theta) (eq. 2) and its gradient (6):

1. one pass over the features persists the margins m_n(theta) on the workers and returns their
   summary (largest loss and its count, moments, quantiles);
2. the IM procedure's dual (alpha*, lambda*) is found from per-partition sums at batches of
   candidate duals (:func:`ratecons.numerics.inner_max_dask_rule.worst_case_rule`), reading
   only the persisted margins;
3. one pass over the features forms P* = s / sum s on the workers and returns the gradient
   X^T (p l' y~) split by label, the divergence, the dual value and the sums that the
   certificate (:mod:`ratecons.solvers.dro_dask_bound`) reuses.

Only p-sized results and scalars travel; the signed labels are sent to the workers once per
solve (scattered, :func:`ratecons.scans.client_column`: not kept by the scheduler as data of a
graph), and again when a worker was lost with one of their blocks: an evaluation, a bound or a
kink scan that such a loss cancelled is made again (:meth:`DaskPasses.resending`). The answers
are the in-memory ones (``tests/data/test_dask_robust.py``: 1e-8 in w, b and F). Every phi with
the logistic, squared or hinge loss runs here (the hinge's kink-set phase and refitted
certificate bring only the rows nearest the kink): chi-square and KL by their one-dimensional
dual searches, a custom phi by the nested searches of
:mod:`ratecons.numerics.inner_max_dask_phi` (``tests/data/test_dask_phi.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np

from ..canonical.dro import DROProgram
from ..loss_functions import LOSS_CONJUGATES, margin_loss
from ..numerics.inner_max import InnerSolution, alpha_zero_divergence, dual_objective
from ..numerics.inner_max_dask import (
    LossSummary,
    WeightRule,
    computed,
    per_partition,
    signed_margins,
)
from ..numerics.inner_max_dask_rule import worst_case_rule
from ..scans import Outcome, client_column, kept_column, made_again
from .dro_hinge import nearest_kink
from .dro_point import Evaluation

__all__ = ["DaskEvaluation", "DaskPasses"]

#: columns of X^T C formed by the gradient pass (C below, per example)
GRAD_COLUMNS = 6
#: scalars returned by the gradient pass (:func:`_gradient_block`)
GRAD_SCALARS = 12


def _gradient_block(X: np.ndarray, m: np.ndarray, y: np.ndarray, loss: str,
                    rule: WeightRule) -> np.ndarray:
    """X^T C for C = [s v y~ 1{y~>0}, s v y~ 1{y~<0}, v y~ 1{y~>0}, v y~ 1{y~<0}, s, 1] (s the
    unnormalized weights, v = l'(m)) and the scalars sum s, s z, s v y~, s v over each label,
    v over each label, s^2, s (z - zmax), the conjugate sum (:meth:`WeightRule.conjugate_sum`),
    v y~ and (a custom phi) the divergence's sum (:meth:`PhiRule.divergence_sum`)."""
    z, v = margin_loss(loss, m)
    y = y.astype(np.float64)
    s = rule.weights(z)
    pos = y > 0
    svy, vy = s * v * y, v * y
    C = np.column_stack([np.where(pos, svy, 0.0), np.where(pos, 0.0, svy),
                         np.where(pos, vy, 0.0), np.where(pos, 0.0, vy), s, np.ones_like(s)])
    div = rule.divergence_sum(s) if rule.kind == "phi" else 0.0
    scalars = [s.sum(), s @ z, svy.sum(), (s * v)[pos].sum(), (s * v)[~pos].sum(),
               v[pos].sum(), v[~pos].sum(), s @ s, s @ (z - rule.zmax), rule.conjugate_sum(z),
               vy.sum(), div]
    return np.concatenate([(X.T @ C).ravel(), scalars])[None]


@dataclass
class DaskEvaluation(Evaluation):
    """An :class:`~ratecons.solvers.dro_eval.Evaluation` whose per-example vectors stay on the
    workers: ``margins`` (persisted while this is the current point, else recomputed from the
    features), ``slope`` and ``inner.p`` are lazy Dask arrays; ``rule`` forms P* there, and
    ``sums`` holds the gradient pass's results the certificate reuses; ``labels``: the signed
    labels on the workers they were formed from (:attr:`DaskPasses.y`)."""

    rule: WeightRule | None = None
    sums: dict[str, Any] = field(default_factory=dict)
    lazy_margins: Any = None
    labels: Any = None

    def margin_range(self) -> tuple[float, float]:
        return self.sums["mrange"]

    def release(self) -> None:
        """Let the workers drop the persisted margins (they are recomputed if needed)."""
        self.margins = self.lazy_margins


class DaskPasses:
    """The evaluations of one solve on Dask data (module docstring).

    Parameters
    ----------
    form : DROProgram
        With Dask features (persisted or streamed) and the signed labels on the client; the
        labels are sent to the workers once (:attr:`y`).
    """

    def __init__(self, form: DROProgram) -> None:
        self.form = form
        self.index = da.arange(form.n, chunks=(form.X.chunks[0],))  # global row numbers
        self.last: WeightRule | None = None  # the last rule, the next dual search's start
        self._labels: tuple[Any, list[Any]] | None = None  # (:attr:`y`, its block futures)

    @property
    def y(self) -> Any:
        """The signed labels on the workers, int8 with the features' row partitions
        (:func:`ratecons.scans.client_column`): sent once, and again when a block future is
        no longer ``finished`` (lost with a worker)."""
        self._labels = kept_column(self._labels, lambda: client_column(
            self.form.y, self.form.X.chunks[0], np.int8, near=self.form.X))
        return self._labels[0]

    def resending(self, attempt: Callable[[], Outcome], ev: DaskEvaluation | None = None
                  ) -> Outcome:
        """``attempt()``, made again when a worker lost with a block of the labels cancelled
        it (:func:`ratecons.scans.made_again`; the labels are sent again by :attr:`y`), the
        per-example vectors of the evaluation ``ev`` it reads formed again from the labels
        sent (lazily: recomputed from the features) when they were formed from others."""

        def once() -> Outcome:
            if ev is not None and ev.labels is not self.y:
                ev.margins = ev.lazy_margins = self.margins(ev.theta)
                ev.slope, ev.inner.p = self._vectors(ev.margins, ev.rule, ev.sums["total"])
                ev.labels = self.y
            return attempt()

        return made_again(once)

    def margins(self, theta: np.ndarray) -> Any:
        """The lazy margins m_n(theta), with the features' row partitions."""
        w, b = self.form.split(theta)
        return signed_margins(self.form.X, self.y, w, b)

    def evaluate(self, theta: np.ndarray) -> DaskEvaluation:
        """F(theta), its gradient (6) and P*(theta) (module docstring, steps 1-3; made again
        when a lost worker cancelled it, :meth:`resending`)."""
        theta = np.asarray(theta, dtype=np.float64)
        ev = self.resending(lambda: self._evaluated(theta))
        if ev.rule.kind in ("kl", "phi"):
            self.last = ev.rule
        return ev

    def _evaluated(self, theta: np.ndarray) -> DaskEvaluation:
        form = self.form
        lazy = self.margins(theta)
        state, rule, summ = worst_case_rule(lazy, form.loss, form.phi, form.rho, self.last)
        return self._finish(theta, state, lazy, rule, summ)

    def gradient_sums(self, state: Any, rule: WeightRule) -> np.ndarray:
        """The gradient pass (step 3) summed over the partitions."""
        width = self.form.d * GRAD_COLUMNS + GRAD_SCALARS
        return computed(per_partition(_gradient_block, width, self.form.X, state, self.y,
                                      loss=self.form.loss, rule=rule).sum(axis=0),
                        features=True)

    def _finish(self, theta: np.ndarray, state: Any, lazy: Any, rule: WeightRule,
                summ: LossSummary) -> DaskEvaluation:
        form, n, d = self.form, summ.n, self.form.d
        out = self.gradient_sums(state, rule)
        cols = out[: d * GRAD_COLUMNS].reshape(d, GRAD_COLUMNS)
        (total, sz, svy, sv_pos, sv_neg, v_pos, v_neg, ss, su, conj,
         vy, div) = out[d * GRAD_COLUMNS:]
        value = sz / total
        inner = self._inner(rule, summ, total, value, ss, su, conj, div)
        parts = cols[:, :2] / total
        grad = np.empty(form.dim)
        w, _ = form.split(theta)
        grad[:d] = parts.sum(axis=1) + form.l2 * w
        if form.fit_intercept:
            grad[d] = -svy / total
        slope, inner.p = self._vectors(state, rule, total)
        sums = {"total": total, "svy": svy, "sv_pos": sv_pos, "sv_neg": sv_neg,
                "v_pos": v_pos, "v_neg": v_neg, "vy": vy, "Q": cols[:, 2:4],
                "Xs": cols[:, 4], "X1": cols[:, 5], "n": n, "mrange": (summ.mlo, summ.mhi)}
        return DaskEvaluation(theta=theta.copy(), value=inner.value + form.regularizer(theta),
                              grad=grad, inner=inner, margins=state, slope=slope, parts=parts,
                              rule=rule, sums=sums, lazy_margins=lazy, labels=self.y)

    def _vectors(self, margins: Any, rule: WeightRule, total: float) -> tuple[Any, Any]:
        """The lazy slopes l'(m_n) and worst-case weights P*_n = s_n / ``total`` at
        ``margins``."""
        loss = self.form.loss
        return (margins.map_blocks(lambda m: margin_loss(loss, m)[1], dtype=np.float64),
                margins.map_blocks(lambda m: rule.weights(margin_loss(loss, m)[0]) / total,
                                   dtype=np.float64))

    def _inner(self, rule: WeightRule, summ: LossSummary, total: float, value: float,
               ss: float, su: float, conj: float, div: float) -> InnerSolution:
        """The InnerSolution of the IM procedure's case, from the gradient pass's sums (P*
        itself is set by the caller, lazily)."""
        n, zmax = summ.n, summ.zmax
        if rule.kind == "uniform":
            return InnerSolution(p=None, alpha=0.0, lam=zmax, value=summ.mean, dual_value=zmax,
                                 divergence=0.0, case="alpha=0")
        if rule.kind == "top":
            d0 = alpha_zero_divergence(self.form.phi, n, summ.mtop)
            return InnerSolution(p=None, alpha=0.0, lam=zmax, value=zmax, dual_value=zmax,
                                 divergence=float(d0), case="alpha=0")
        alpha, lam = rule.duals(total, n)
        dual = dual_objective(alpha, lam, self.form.rho, conj / n)
        if rule.kind == "kl":
            div = rule.beta * su / total + np.log(n) - np.log(total)
            case = "kl"
        elif rule.kind == "phi":  # as the in-memory bisection (_finish) reports it
            div, case = div / n, "bisection"
        else:
            div, case = n * ss / total ** 2 - 1.0, "chi2"
        return InnerSolution(p=None, alpha=float(alpha), lam=float(lam), value=value,
                             dual_value=dual, divergence=float(div), case=case)

    def nearest_kink(self, ev: DaskEvaluation, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each partition's :func:`~ratecons.solvers.dro_hinge.nearest_kink` (one pass over the
        margins; 2 k numbers per partition travel), concatenated for
        :func:`~ratecons.solvers.dro_hinge.kink_set` (made again when a lost worker cancelled
        it, :meth:`resending`)."""
        out = self.resending(lambda: computed(per_partition(
            _nearest_kink_block, 2 * k, ev.margins, self.index, loss=self.form.loss,
            rule=ev.rule, k=k)), ev)
        return out[:, :k].ravel(), out[:, k:].ravel()

    def conjugate_sum(self, ev: DaskEvaluation, mix: float, scale_pos: float,
                      scale_neg: float, shift: float) -> float:
        """sum_n p'_n l*(v'_n) for p' = (1 - mix) P* + mix / N and v'_n = scale_{y~_n} v_n -
        shift y~_n, one pass over the margins (the certificate's conjugate term)."""
        out = per_partition(_conjugate_block, 1, ev.margins, self.y, loss=self.form.loss,
                            rule=ev.rule, total=ev.sums["total"], mix=mix, n=ev.sums["n"],
                            scales=(scale_pos, scale_neg), shift=shift)
        return float(computed(out.sum(axis=0))[0])


def _conjugate_block(m: np.ndarray, y: np.ndarray, loss: str, rule: WeightRule, total: float,
                     mix: float, n: int, scales: tuple[float, float],
                     shift: float) -> np.ndarray:
    z, v = margin_loss(loss, m)
    y = y.astype(np.float64)
    p = rule.mixed(z, total, mix, n)
    v = np.where(y > 0, scales[0] * v, scales[1] * v) - shift * y
    conj, _ = LOSS_CONJUGATES[loss]
    return np.array([[float(p @ conj(v))]])


def _nearest_kink_block(m: np.ndarray, index: np.ndarray, loss: str, rule: WeightRule,
                        k: int) -> np.ndarray:
    """:func:`~ratecons.solvers.dro_hinge.nearest_kink` of one partition, padded to k."""
    z, _ = margin_loss(loss, m)
    dist, idx = nearest_kink(m, rule.weights(z) > 0, index, k)
    out = np.full((1, 2 * k), np.inf)
    out[0, : dist.size], out[0, k: k + idx.size] = dist, idx
    return out
