"""The certified lower bound of :func:`ratecons.solvers.dro_certificate.lower_bound` from
per-partition sums, at a :class:`~ratecons.solvers.dro_dask.DaskEvaluation`.

The bound is the same (weak duality of eq. 2 with the Fenchel dual of the weighted ERM at the
worst-case weights P*(theta), mixed with U_N when rounding left D_phi(P*, U_N) above rho): with
l2 > 0 the closed form, its intercept condition restored by scaling v on one label (logistic)
or by the shift v - (sum p v y~) y~ (squared); with l2 = 0 the Newton-corrected dual of
:func:`~ratecons.solvers.dro_certificate.newton_dual_value`. Every sum over the examples is a
reduction over the partitions: the gradient pass already returned X^T of the label-split
columns, so the l2 > 0 bound costs one pass over the persisted margins (the conjugate term),
and the l2 = 0 bound two passes over the features (the weighted Gram product, then the
corrected v with its constraint check). The hinge loss's refitted dual
(:func:`~ratecons.solvers.dro_hinge.hinge_refit_bound`) counts the examples at the kink in one
pass over the margins and brings those rows (at most :data:`KINK_ROWS_CAP`) to the client in
one pass over the features. The balancing pmfs at tied losses (rare: a start that
nothing beats) use the in-memory procedure on the gathered vectors.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ..loss_functions import LOSS_CONJUGATES, margin_loss
from ..numerics.inner_max_dask import WeightRule, computed, per_partition
from ..scans import weighted_gram
from .dro_certificate import CONSTRAINT_RTOL, LOSS_HESSIANS, lower_bound
from .dro_dask import DaskEvaluation, DaskPasses
from .dro_eval import equal_margins
from .dro_hinge import (
    HINGE_REFIT_WIDTHS,
    HingeSums,
    KinkRows,
    hinge_dual_from_sums,
    hinge_refit_bound,
    intercept_scales,
    kink_rows,
)
from .dro_point import Evaluation

__all__ = ["KINK_ROWS_CAP", "dask_lower_bound"]

#: the hinge bound's refit on Dask data brings at most this many kink rows to the client (the
#: widest width of HINGE_REFIT_WIDTHS within it is used)
KINK_ROWS_CAP = 1 << 14


def dask_lower_bound(passes: DaskPasses, ev: DaskEvaluation, balance: bool = False,
                     refit: bool = True) -> float:
    """:func:`~ratecons.solvers.dro_certificate.lower_bound` at ``ev`` by reductions (module
    docstring); ``refit``: the hinge loss's dual refitted at the kink as well. Made again
    when a worker lost with a block of the labels cancelled it
    (:meth:`~ratecons.solvers.dro_dask.DaskPasses.resending`)."""
    return passes.resending(lambda: _lower_bound(passes, ev, balance, refit), ev)


def _lower_bound(passes: DaskPasses, ev: DaskEvaluation, balance: bool, refit: bool) -> float:
    form, sums = passes.form, ev.sums
    if form.l2 <= 0 and form.loss not in LOSS_HESSIANS:
        return -np.inf  # the hinge loss without l2: no bound, as in memory
    n, total = sums["n"], sums["total"]
    excess = ev.inner.divergence - form.rho
    mix = excess / ev.inner.divergence if excess > 0 else 0.0
    parts = (1.0 - mix) * ev.parts + (mix / n) * sums["Q"] if mix else ev.parts

    def mixed(weighted: float, plain: float) -> float:  # sum p' f = (1-mix) sum p f + mix/N ...
        return (1.0 - mix) * weighted / total + mix / n * plain

    classes = HingeSums(parts, mixed(sums["sv_pos"], sums["v_pos"]),
                        mixed(sums["sv_neg"], sums["v_neg"]))
    if form.l2 <= 0:
        best = _newton_bound(passes, ev, mix, parts, mixed(sums["svy"], sums["vy"]))
    elif form.loss == "hinge":  # l*(v) = v: the class sums determine the dual
        best = hinge_dual_from_sums(classes, form.l2, form.fit_intercept)
    else:
        scales, shift = (1.0, 1.0), 0.0
        if form.fit_intercept and form.loss == "squared":
            shift = mixed(sums["svy"], sums["vy"])
            u = parts.sum(axis=1) - shift * mixed(sums["Xs"], sums["X1"])
        elif form.fit_intercept:
            scales = intercept_scales(classes.pv_pos, classes.pv_neg)
            u = scales[0] * parts[:, 0] + scales[1] * parts[:, 1]
        else:
            u = parts.sum(axis=1)
        conj = passes.conjugate_sum(ev, mix, scales[0], scales[1], shift)
        best = -conj - float(u @ u) / (2.0 * form.l2)
    if form.loss == "hinge" and refit:
        best = max(best, _hinge_kink_bound(passes, ev, mix, classes))
    if balance and equal_margins(ev):
        best = max(best, lower_bound(form, _gathered(ev), balance=True))
    return best if np.isfinite(best) else -np.inf


def _hinge_kink_bound(passes: DaskPasses, ev: DaskEvaluation, mix: float,
                      classes: HingeSums) -> float:
    """The refitted hinge bound over the widths of
    :data:`~ratecons.solvers.dro_hinge.HINGE_REFIT_WIDTHS` whose kink rows number at most
    :data:`KINK_ROWS_CAP`: their count per partition (one pass over the margins), then the rows
    at the widest such width (one pass over the features; only those rows travel), finished
    by :func:`~ratecons.solvers.dro_hinge.hinge_refit_bound` on the client."""
    form, d = passes.form, passes.form.d
    common = dict(loss=form.loss, rule=ev.rule, total=ev.sums["total"], mix=mix,
                  n=ev.sums["n"])
    counts = computed(per_partition(_kink_counts, len(HINGE_REFIT_WIDTHS), ev.margins,
                                    **common))
    fits = [j for j, t in enumerate(counts.sum(axis=0)) if 0 < t <= KINK_ROWS_CAP]
    if not fits:
        return -np.inf
    width, cap = HINGE_REFIT_WIDTHS[fits[0]], int(counts[:, fits[0]].max())
    out = computed(per_partition(_kink_rows_block, 1 + cap * (d + 4), form.X, ev.margins,
                                 passes.y, **common, kink_width=width, cap=cap), features=True)
    blocks = [out[i, 1: 1 + int(out[i, 0]) * (d + 4)].reshape(-1, d + 4)
              for i in range(out.shape[0])]
    packed = np.concatenate(blocks)
    rows = KinkRows(packed[:, :d], *packed[:, d:].T)
    w, _ = form.split(ev.theta)
    return max(hinge_refit_bound(rows, classes, w, form.l2, form.fit_intercept, each)
               for each in HINGE_REFIT_WIDTHS[fits[0]:])


def _kink_counts(m: np.ndarray, loss: str, rule: WeightRule, total: float, mix: float,
                 n: int) -> np.ndarray:
    """#(|m - 1| <= width, p' > 0) for each width of HINGE_REFIT_WIDTHS."""
    z, _ = margin_loss(loss, m)
    dist = np.abs(m[rule.mixed(z, total, mix, n) > 0] - 1.0)
    return np.array([[np.count_nonzero(dist <= width) for width in HINGE_REFIT_WIDTHS]],
                    dtype=np.float64)


def _kink_rows_block(X: np.ndarray, m: np.ndarray, y: np.ndarray, loss: str, rule: WeightRule,
                     total: float, mix: float, n: int, kink_width: float, cap: int
                     ) -> np.ndarray:
    """:func:`~ratecons.solvers.dro_hinge.kink_rows` of one partition, packed: the count, then
    per row x, y~, p', v and |m - 1| (padded to ``cap`` rows)."""
    z, v = margin_loss(loss, m)
    rows = kink_rows(X, m, y, rule.mixed(z, total, mix, n), v, kink_width)
    out = np.full((1, 1 + cap * (X.shape[1] + 4)), np.nan)
    packed = np.column_stack([rows.X, rows.y, rows.p, rows.v, rows.dist]).ravel()
    out[0, 0], out[0, 1: 1 + packed.size] = rows.y.size, packed
    return out


def _gathered(ev: DaskEvaluation) -> Evaluation:
    """``ev`` with its vectors brought to the client (the balancing bound only)."""
    inner = type(ev.inner)(**{**vars(ev.inner), "p": np.asarray(ev.inner.p.compute())})
    return Evaluation(theta=ev.theta, value=ev.value, grad=ev.grad, inner=inner,
                      margins=np.asarray(ev.margins.compute()),
                      slope=np.asarray(ev.slope.compute()), parts=ev.parts)


def _curvature_block(X: np.ndarray, m: np.ndarray, y: np.ndarray, loss: str,
                     rule: WeightRule, total: float, mix: float, n: int) -> np.ndarray:
    """X^T diag(c) X, X^T c and sum c for c = p' l''(m) (the Gram product on the worker's
    own BLAS threads, as :func:`ratecons.scans._gram_block`)."""
    z, v = margin_loss(loss, m)
    c = rule.mixed(z, total, mix, n) * LOSS_HESSIANS[loss](v)
    return np.concatenate([weighted_gram(X, c, threaded=False).ravel(), X.T @ c,
                           [c.sum()]])[None]


def _corrected_block(X: np.ndarray, m: np.ndarray, y: np.ndarray, loss: str,
                     rule: WeightRule, total: float, mix: float, n: int, step_w: np.ndarray,
                     step_b: float, fit_intercept: bool) -> np.ndarray:
    """With v' = v + l''(m) y~ (x . s_w - s_b) on the examples with p' > 0: the count of v'
    outside the domain of l*, X^T u and sum u (u = p' v' y~), sum |u| |(x, -1)| and
    sum p' l*(v')."""
    z, v = margin_loss(loss, m)
    y = y.astype(np.float64)
    p = rule.mixed(z, total, mix, n)
    live = p > 0
    dv = LOSS_HESSIANS[loss](v) * y * (X @ step_w - step_b)
    v_new = np.where(live, v + dv, v)
    conj, (lo, hi) = LOSS_CONJUGATES[loss]
    outside = np.count_nonzero((v_new < lo) | (v_new > hi))
    u = p * v_new * y
    norms = np.sqrt(np.einsum("ij,ij->i", X, X) + fit_intercept)
    return np.concatenate([X.T @ u, [u.sum(), np.abs(u) @ norms, p @ conj(v_new),
                                     outside]])[None]


def _newton_bound(passes: DaskPasses, ev: DaskEvaluation, mix: float, parts: np.ndarray,
                  pvy: float) -> float:
    """:func:`~ratecons.solvers.dro_certificate.newton_dual_value` by two passes over the
    features: the Hessian H of the weighted ERM, then the corrected v and its check."""
    form, d, sums = passes.form, passes.form.d, ev.sums
    common = dict(loss=form.loss, rule=ev.rule, total=sums["total"], mix=mix, n=sums["n"])
    out = computed(per_partition(_curvature_block, d * d + d + 1, form.X, ev.margins,
                                 passes.y, **common).sum(axis=0), features=True)
    H, xc, csum = out[: d * d].reshape(d, d), -out[d * d: d * d + d], out[-1]
    r = parts.sum(axis=1)
    if form.fit_intercept:  # the Gram matrix of (x_n, -1)
        H = np.block([[H, xc[:, None]], [xc[None, :], np.full((1, 1), csum)]])
        r = np.append(r, -pvy)
    try:
        step = -cho_solve(cho_factor(H), r)
    except LinAlgError:  # singular (collinear features): r is in the range of H
        step = -np.linalg.lstsq(H, r, rcond=1e-13)[0]
    out = computed(per_partition(
        _corrected_block, d + 4, form.X, ev.margins, passes.y, **common, step_w=step[:d],
        step_b=float(step[d]) if form.fit_intercept else 0.0,
        fit_intercept=form.fit_intercept).sum(axis=0), features=True)
    left, usum, scale, value, outside = out[:d], out[d], out[d + 1], out[d + 2], out[d + 3]
    if outside > 0:
        return -np.inf
    if form.fit_intercept:
        left = np.append(left, -usum)
    if not float(np.linalg.norm(left)) <= CONSTRAINT_RTOL * max(scale, 1e-300):
        return -np.inf
    return -float(value)
