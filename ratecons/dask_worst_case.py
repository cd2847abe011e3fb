"""A worst-case rate's value (``rc.worst_case(r, U)``) at a fitted model, on Dask data.

In memory (:meth:`ratecons.expr.robust.WorstCaseRate.value_for`) the value is
c + sigma max_{q in U} sum_x q_x sigma g_x over the ball's support S, g_x = |B| a_x v_x with
v_x = 1(f(x) > 0) (indicator) or clip(1/2 + f(x), 0, 1) (ramp, eq. 3): the inner maximization
of Ghosh & Squillante (problem (4), App. A.1) over the per-example values sigma g_x, or, for a
rate conditional on a strict subset B of S, Dinkelbach's root of
F(lam) = max_q sum_B q_x (h_x - lam) (:func:`ratecons.expr.robust.conditional_extreme`), each
F one inner maximization over h_x - lam on B and 0 off B.

Here the values stay on the workers. :class:`RateValues` is what a worker computes from its
partition of [f(x), |B| a_x, code] (code 0 off S, 1 in S off B, 2 in B): the model's scores
persisted by :class:`ratecons.dask_metrics.WorkerScores`, the coefficients and codes sent once
(from the spec object's support-sized arrays, which the client holds). Each inner maximization
is the dual search of the robust loss over persisted values
(:func:`ratecons.numerics.inner_max_dask_rule.summarized_rule`; for chi-square the bracketing
passes keep any number of tied values, which indicator values are, in one block), then one
pass of sums.
Only scalars and each pass's per-partition sums travel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .numerics.inner_max_dask import WeightRule, computed, per_partition, robust_value
from .numerics.inner_max_dask_rule import summarized_rule
from .ramp import ramp, ramp_width

__all__ = ["worst_case_value"]

#: the code of an example of the ball's support inside the rate's denominator B (without a
#: table of codes)
IN_B = 2
#: the most distinct (coefficient, membership) pairs sent as one-byte codes (:class:`RateValues`)
CODE_TABLE = 255
#: support entries coded per chunk on the client (:func:`_sent`)
CODE_CHUNK = 1 << 18


@dataclass(frozen=True)
class RateValues:
    """Per partition block [score, code] (or [score, coefficient, code]): the values
    sigma g_x - lam over the ball's support (0 off B), in the support's order (module
    docstring). With a ``table`` (row k: the coefficient and the membership in B of the
    examples coded k + 1; code 0 off the support) the block carries one small code per
    example instead of its coefficient."""

    adversary: float
    kind: str
    lam: float = 0.0
    table: tuple[tuple[float, bool], ...] | None = None
    width: float = 1.0  # the ramp's (:func:`ratecons.ramp.ramp_width`)

    def parts(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """h = sigma |B| a_x v_x and the membership in B, over the block's support rows."""
        s, code = block[:, 0], block[:, -1]
        keep = code > 0
        if self.table is None:
            coef, inside = block[keep, 1], code[keep] == IN_B
        else:
            rows = np.asarray(self.table, dtype=np.float64)[code[keep].astype(np.int64) - 1]
            coef, inside = rows[:, 0], rows[:, 1] > 0
        v = (s[keep] > 0).astype(np.float64) if self.kind == "indicator" \
            else ramp(s[keep] / self.width)
        return self.adversary * coef * v, inside

    def shifted(self, lam: float) -> RateValues:
        return RateValues(self.adversary, self.kind, lam, self.table, self.width)

    def __call__(self, block: np.ndarray) -> np.ndarray:
        h, inside = self.parts(block)
        return np.where(inside, h - self.lam, 0.0)


def _start_sums(block: np.ndarray, values: RateValues) -> np.ndarray:
    """sum h and max h over B, |B| (Dinkelbach's start: the centre's ratio and the largest h)."""
    h, inside = values.parts(block)
    hb = h[inside]
    return np.array([[hb.sum(), hb.max() if hb.size else -np.inf, hb.size]])


def _step_sums(block: np.ndarray, values: RateValues, rule: WeightRule) -> np.ndarray:
    """sum s over B, sum s h over B, sum s, and the dual value's conjugate term
    (:meth:`~ratecons.numerics.inner_max_dask.WeightRule.conjugate_sum`) for the unnormalized
    worst-case weights s = rule(z)."""
    h, inside = values.parts(block)
    z = np.where(inside, h - values.lam, 0.0)
    s = rule.weights(z)
    return np.array([[s[inside].sum(), s[inside] @ h[inside], s.sum(), rule.conjugate_sum(z)]])


def _conditional(state: Any, part: Any, base: RateValues, tol: float = 1e-9,
                 max_evaluations: int = 200) -> float:
    """max_q sum_B q_x h_x / sum_B q_x by Dinkelbach's parameter, the steps of
    :func:`ratecons.expr.robust.conditional_extreme` with each inner maximization on the
    workers."""
    phi, rho = part.ball.phi, part.ball.rho
    total, top, size = computed(per_partition(
        _start_sums, 3, state, values=base), features=False).T
    lo, hi = float(total.sum() / size.sum()), float(top.max())
    evaluations = 0
    while hi - lo > tol and evaluations < max_evaluations:
        lam = lo + tol
        values = base.shifted(lam)
        rule, summ = summarized_rule(state, values, phi, rho)
        sums = computed(per_partition(_step_sums, 4, state, values=values,
                                      rule=rule)).sum(axis=0)
        evaluations += 1
        mass = sums[0] / sums[2]
        dual = rule.dual_value(summ.n, sums[2], sums[3], rho)  # F(lam) <= dual
        if dual <= 1e-12 * max(1.0, abs(lam)) or mass <= 0.0:
            hi = min(hi, lam)
            break
        ratio = float(sums[1] / sums[0])
        if ratio > lo:
            lo = ratio
        else:  # F > 0 only by rounding: lam is within rounding of lam*
            hi = min(hi, lam)
            break
    return lo


def _distinct(values: np.ndarray, most: int) -> np.ndarray | None:
    """The sorted distinct values, or None when there are more than ``most`` (found chunk by
    chunk, so that the client's temporaries stay O(:data:`CODE_CHUNK`))."""
    distinct = np.empty(0)
    for start in range(0, values.size, CODE_CHUNK):
        distinct = np.union1d(distinct, np.unique(values[start:start + CODE_CHUNK]))
        if distinct.size > most:
            return None
    return distinct


def worst_case_value(part: Any, workers: Any, adversary: float, kind: str) -> float:
    """c + sigma max_{q in U} (the rate's reweighted value) for the scores persisted by
    ``workers`` (:class:`ratecons.dask_metrics.WorkerScores` of the ball's dataset), as
    :meth:`ratecons.expr.robust.WorstCaseRate.value_for` computes it in memory (module
    docstring).

    Parameters
    ----------
    part : WorstCaseRate
    workers : WorkerScores
    adversary : float
        sigma: +1 for the max over U, -1 for the min.
    kind : str
        ``"indicator"`` (deterministic predictions) or ``"ramp"`` (eq. 3).
    """
    import dask.array as da

    state, base = _sent(part, workers, adversary, kind)
    state = da.stack([workers.s, *state], axis=1).rechunk({1: -1}).persist()
    if part.conditional:
        extreme = _conditional(state, part, base)
    else:
        rule, summ = summarized_rule(state, base, part.ball.phi, part.ball.rho)
        extreme = robust_value(state, base, rule, summ)
    return float(part.expr.constant + adversary * extreme)


def _sent(part: Any, workers: Any, adversary: float, kind: str) -> tuple[list[Any], RateValues]:
    """The per-example columns sent to the workers and the values' rule: one byte per example
    (a code into a table of (coefficient, membership in B) pairs) when the coefficients take
    at most :data:`CODE_TABLE` / 2 distinct values (a ball's data carry no example weights, so
    a rate's coefficients take one or a few), else the coefficients (8 bytes) and a
    membership code (1 byte); each sent once for the ``workers``' kept columns
    (:meth:`ratecons.dask_metrics.WorkerScores.sent_once`)."""
    index, coefficients = part.ball.support.index, part.coefficients
    width = ramp_width(workers.scorer)
    distinct = _distinct(coefficients, CODE_TABLE // 2)
    n = workers.data.n
    if distinct is not None:
        def codes() -> np.ndarray:
            code = np.zeros(n, dtype=np.uint8)
            for start in range(0, index.size, CODE_CHUNK):  # O(chunk) temporaries
                part_of = slice(start, start + CODE_CHUNK)
                code[index[part_of]] = (1 + 2 * np.searchsorted(distinct, coefficients[part_of])
                                        + part.inside[part_of])
            return code

        rows = tuple((float(c), b) for c in distinct for b in (False, True))
        return ([workers.sent_once(("worst-case codes", id(part)), (part,), codes)],
                RateValues(adversary, kind, table=rows, width=width))

    def coef() -> np.ndarray:
        out = np.zeros(n)
        out[index] = part.coefficients
        return out

    def membership() -> np.ndarray:
        code = np.zeros(n, dtype=np.uint8)
        code[index] = np.where(part.inside, IN_B, 1)
        return code

    return [workers.sent_once(("worst-case coefficients", id(part)), (part,), coef),
            workers.sent_once(("worst-case membership", id(part)), (part,), membership)], \
        RateValues(adversary, kind, width=width)
