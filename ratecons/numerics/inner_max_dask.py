"""The exact inner maximization (problem (4), App. A.1 of Ghosh & Squillante) by reductions.

On Dask data the margins m_n(theta) stay with their partitions (persisted on the workers; or
any per-example values, :data:`Values`, as a worst-case rate's, :mod:`ratecons.dask_worst_case`);
the IM procedure's one-dimensional dual is found from sums over the partitions evaluated at a
batch of candidate duals per pass, so that only those sums (and, for chi-square, the few losses
in the last bracket) travel:

- **chi-square**: P* = (z - eta)_+ / sum (z - eta)_+ for the threshold eta = lambda - 2 alpha,
  which solves G(eta) = N sum (z - eta)_+^2 / (sum (z - eta)_+)^2 = 1 + rho (steps 2(b)-(c)
  with the support {z > eta}; G is nondecreasing by Cauchy-Schwarz). A pass evaluates G at a
  batch of candidates (quantiles of the losses, from each partition's sorted losses and
  suffix sums), which brackets eta between two consecutive candidates; the losses inside the
  bracket (at most about N / :data:`CANDIDATES` of them; the ties at its lower end only
  counted) are fetched and the support is found by the same scan and closed forms as the
  in-memory kernel (:func:`ratecons.numerics.phi_kernels.chi2_inner`), starting from the sums
  above the bracket. The bracketing itself (:func:`bracket_root`) serves any root of a
  monotone function of such suffix sums (Pat&Mat's threshold,
  :meth:`ratecons.dask_metrics.WorkerScores.surrogate_quantile`);
- **KL**: P* = softmax(beta z) with beta = 1/alpha* solving KL(P*, U_N) = rho (lambda* in
  closed form); a pass evaluates the log-sum-exp moments at a batch of three betas (a Newton
  point and two around it) and the next Newton point is taken from the closest one, inside the
  bisection bracket (the in-memory :func:`ratecons.numerics.phi_kernels.kl_inverse_temperature`
  does the same one beta at a time), to the same tolerance |f - rho| <= 1e-13 rho.

The result is a :class:`WeightRule`: the few numbers from which every worker forms the
unnormalized weights s_n of its examples (P* = s / sum s) in the later passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np

from ..loss_functions import margin_loss
from ..scans import count_pass
from .inner_max import alpha_zero_divergence, conjugate_sum, dual_objective, inner_maximize
from .phi import CHI2, KL, Phi

__all__ = ["CANDIDATES", "BRACKET_CAP", "Bracket", "LossSummary", "Values", "WeightRule",
           "bracket_root", "computed", "dual_rule", "per_partition", "persisted_summary",
           "robust_value", "rule_on", "signed_margins", "summary_of", "trivial_rule",
           "values_of"]

#: candidate thresholds per chi-square bracketing pass (quantiles of the losses)
CANDIDATES = 1024
#: quantiles each partition reports per bracketing round (the candidates are chosen among them)
PARTITION_QUANTILES = 256
#: the losses in the final chi-square bracket are fetched when there are at most this many
#: (else the bracket is refined by another round of quantiles inside it)
BRACKET_CAP = 1 << 18
#: betas evaluated per KL pass
KL_BATCH = 3
#: KL stops when |f(beta) - rho| <= KL_TOL rho (the in-memory kernel's tolerance)
KL_TOL = 1e-13
#: the chi-square support scan's tolerance (the in-memory kernel's)
CHI2_SCAN_TOL = 1e-9
#: passes a dual search may take before it gives up (a bug, not data, would reach it)
MAX_DUAL_PASSES = 60


@dataclass(frozen=True)
class WeightRule:
    """How a worker forms the unnormalized worst-case weights s_n from its losses z_n.

    kind "uniform" (all losses tie: s = 1), "top" (case alpha* = 0: s = 1{z >= zmax}),
    "chi2" (s = max(0, 1 + c (z - lam)), c = 1/(2 alpha)) or "kl" (s = exp(beta (z - zmax))).
    """

    kind: str
    zmax: float
    c: float = 0.0
    lam: float = 0.0
    beta: float = 0.0

    def weights(self, z: np.ndarray) -> np.ndarray:
        if self.kind == "uniform":
            return np.ones_like(z)
        if self.kind == "top":
            return (z >= self.zmax).astype(np.float64)
        if self.kind == "chi2":
            return np.maximum(1.0 + self.c * (z - self.lam), 0.0)
        return np.exp(self.beta * (z - self.zmax))

    def duals(self, total: float, n: int) -> tuple[float, float]:
        """(alpha, lambda) of the dual (5) at this rule, for weights summing to ``total`` over
        ``n`` values: (0, max z) for ties and alpha* = 0, (1 / (2 c), lam) for chi-square,
        (1 / beta, max z + log(total / n) / beta) for KL."""
        if self.kind == "chi2":
            return 0.5 / self.c, self.lam
        if self.kind == "kl":
            alpha = 1.0 / self.beta
            return alpha, self.zmax + alpha * (math.log(total) - math.log(n))
        return 0.0, self.zmax

    def conjugate_sum(self, z: np.ndarray) -> float:
        """sum phi*((z - lambda) / alpha) over the values ``z`` of one partition, the dual
        value's term (:meth:`dual_value`); 0 where that term vanishes (ties, alpha* = 0, and
        KL at its lambda: there sum exp(t) = N)."""
        if self.kind != "chi2":
            return 0.0
        return conjugate_sum(CHI2, z, 0.5 / self.c, self.lam)

    def dual_value(self, n: int, total: float, conj: float, rho: float) -> float:
        """The inner maximization's dual value g(alpha, lambda) at this rule's duals (an upper
        bound of R; max z for ties and alpha* = 0, as the in-memory procedure gives it), from
        the sums over the ``n`` values of the weights (``total``) and of :meth:`conjugate_sum`
        (``conj``)."""
        if self.kind in ("uniform", "top"):
            return self.zmax
        alpha, lam = self.duals(total, n)
        return dual_objective(alpha, lam, rho, conj / n)

    def mixed(self, z: np.ndarray, total: float, mix: float, n: int) -> np.ndarray:
        """p' = (1 - mix) P* + mix / N (P* = s / ``total``): the certificate's pmf moved into
        the ball along the segment to U_N when rounding left it outside."""
        return (1.0 - mix) * self.weights(z) / total + mix / n


#: what the searches run over: a margin loss's name (the values l(m) of the persisted margins)
#: or a picklable callable mapping a persisted partition block to its values
Values = str | Callable[[np.ndarray], np.ndarray]


def values_of(m: np.ndarray, loss: Values) -> np.ndarray:
    """The values of one persisted partition block ``m`` a search runs over (:data:`Values`)."""
    if callable(loss):
        return np.asarray(loss(m), dtype=np.float64)
    return margin_loss(loss, m)[0]


def per_partition(fn: Any, width: int, *args: Any, **kwargs: Any) -> Any:
    """A lazy (partitions x width) Dask array: ``fn`` on each partition of the row-partitioned
    arrays ``args`` (2-D: all columns; 1-D: the partition's entries), one row per partition."""
    pairs = []
    for arr in args:
        pairs += [arr, "ij" if arr.ndim == 2 else "i"]
    return da.blockwise(fn, "ik", *pairs, new_axes={"k": width}, adjust_chunks={"i": 1},
                        concatenate=True, dtype=np.float64, meta=np.empty((0, 0)), **kwargs)


def computed(array: Any, features: bool = False) -> np.ndarray:
    """``array`` computed: one pass over the persisted margins (or over the features). A
    :func:`per_partition` array of a few numbers per partition is summed here, on the client
    (``computed(parts).sum(axis=0)``): a Dask ``.sum`` adds its tree of tasks to each pass
    (26 ms against 20 ms per pass over three partitions on a two-thread LocalCluster)."""
    count_pass(features)
    return np.asarray(array.compute())


# ------------------------------------------------------------------ work on one partition
def summary_width(quantiles: int) -> int:
    return 8 + quantiles


def margin_summary(m: np.ndarray, loss: Values, quantiles: int) -> np.ndarray:
    """Per partition: n, max z, #(z at that max), min z, mean z, sum of squared deviations,
    min and max margin, and ``quantiles`` evenly ranked losses (descending)."""
    z = values_of(m, loss)
    out = np.full((1, summary_width(quantiles)), np.nan)
    if z.size == 0:
        out[0, 0] = 0.0
        return out
    zmax, mean = float(z.max()), float(z.mean())
    out[0, :8] = [z.size, zmax, np.count_nonzero(z >= zmax), z.min(), mean,
                  float(np.sum((z - mean) ** 2)), m.min(), m.max()]
    if quantiles:
        ranks = np.linspace(0, z.size - 1, quantiles).round().astype(np.int64)
        out[0, 8:] = np.sort(z)[::-1][ranks]
    return out


def _suffix_sums(m: np.ndarray, loss: Values, cands: np.ndarray) -> np.ndarray:
    """Per candidate c: #(z > c), sum of z and of z^2 over z > c, and #(z >= c) (suffix sums
    of the sorted values; strictly above c, so that a candidate at a tied value, the largest
    say, sees sum (z - c)_+ = 0 exactly, not a rounding residue)."""
    z = np.sort(values_of(m, loss))
    suffix1 = np.concatenate([np.cumsum(z[::-1])[::-1], [0.0]])
    suffix2 = np.concatenate([np.cumsum((z * z)[::-1])[::-1], [0.0]])
    at = np.searchsorted(z, cands, side="left")
    over = np.searchsorted(z, cands, side="right")
    return np.column_stack([z.size - over, suffix1[over], suffix2[over],
                            z.size - at]).reshape(1, -1)


def _bracket_values(m: np.ndarray, loss: Values, lo: float, hi: float, shift: float,
                    size: int) -> np.ndarray:
    """Above the bracket (z >= hi): count, sum (z - shift), sum (z - shift)^2, min z; the
    largest z below lo; #(z = lo); then the values in (lo, hi) (padded with NaN to ``size``)."""
    z = values_of(m, loss)
    head = z[z >= hi] - shift
    below = z[z < lo]
    inside = z[(z > lo) & (z < hi)]
    out = np.full((1, 6 + size), np.nan)
    out[0, :6] = [head.size, head.sum(), np.dot(head, head),
                  head.min() + shift if head.size else np.inf,
                  below.max() if below.size else -np.inf, np.count_nonzero(z == lo)]
    out[0, 6:6 + inside.size] = inside
    return out


def _quantiles_inside(m: np.ndarray, loss: Values, lo: float, hi: float, k: int) -> np.ndarray:
    """Per partition: #(lo < z < hi) and ``k`` evenly ranked values among them (descending;
    the ties at lo are counted apart, by :func:`_bracket_values`)."""
    z = values_of(m, loss)
    inside = np.sort(z[(z > lo) & (z < hi)])[::-1]
    out = np.full((1, k + 1), np.nan)
    out[0, 0] = inside.size
    if inside.size:
        out[0, 1:] = inside[np.linspace(0, inside.size - 1, k).round().astype(np.int64)]
    return out


def _kl_sums(m: np.ndarray, loss: Values, zmax: float, betas: np.ndarray) -> np.ndarray:
    """Per beta: sum exp(beta u), sum exp(beta u) u, sum exp(beta u) u^2 with u = z - zmax."""
    z = values_of(m, loss)
    u = z - zmax
    e = np.exp(np.outer(betas, u))
    return np.column_stack([e.sum(axis=1), e @ u, e @ (u * u)]).reshape(1, -1)


# ------------------------------------------------------------------ the searches
@dataclass
class LossSummary:
    """The losses' global summary from the margin pass."""

    n: int
    zmax: float
    mtop: int
    zmin: float
    mean: float
    ss: float
    mlo: float
    mhi: float
    quantiles: np.ndarray  # (partitions, k) descending, NaN rows for empty partitions
    sizes: np.ndarray

    @classmethod
    def combine(cls, parts: np.ndarray) -> LossSummary:
        parts = parts[parts[:, 0] > 0]
        n = parts[:, 0]
        zmax = float(parts[:, 1].max())
        mean = float(n @ parts[:, 4] / n.sum())
        ss = float(parts[:, 5].sum() + n @ (parts[:, 4] - mean) ** 2)  # Chan's merge
        return cls(n=int(n.sum()), zmax=zmax, mtop=int(parts[parts[:, 1] >= zmax, 2].sum()),
                   zmin=float(parts[:, 3].min()), mean=mean, ss=ss,
                   mlo=float(parts[:, 6].min()), mhi=float(parts[:, 7].max()),
                   quantiles=parts[:, 8:], sizes=n)


def _choose_candidates(quantiles: np.ndarray, sizes: np.ndarray, extra: list[float]) -> np.ndarray:
    """About :data:`CANDIDATES` values at evenly spaced weighted ranks of the partitions'
    quantiles (each weighted by its partition's rows per quantile), plus ``extra``."""
    k = quantiles.shape[1]
    values = quantiles.ravel()
    weights = np.repeat(sizes / max(k, 1), k)
    keep = np.isfinite(values)
    values, weights = values[keep], weights[keep]
    order = np.argsort(values)
    values, cum = values[order], np.cumsum(weights[order])
    targets = np.linspace(0.0, cum[-1], CANDIDATES)
    picked = values[np.minimum(np.searchsorted(cum, targets), values.size - 1)]
    return np.unique(np.concatenate([picked, extra]))


def sizes_of(each: np.ndarray) -> np.ndarray:
    """Rows per partition: #(z >= c) at the smallest candidate (the smallest value)."""
    return each[:, 0, 3]


def _g_ratio(sums: np.ndarray, cands: np.ndarray, n: int) -> np.ndarray:
    """G(eta) = N sum (z - eta)_+^2 / (sum (z - eta)_+)^2 at each candidate."""
    s0, s1, s2 = sums[:, 0], sums[:, 1], sums[:, 2]
    a1 = s1 - s0 * cands
    a2 = s2 - 2.0 * cands * s1 + s0 * cands * cands
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a1 > 0, n * a2 / (a1 * a1), np.inf)


@dataclass
class Bracket:
    """The last bracket [lo, hi) of :func:`bracket_root`: the values' sums above it, the values
    inside it and the ties at its lower end.

    Attributes
    ----------
    head : ndarray
        Over z >= hi: count, sum (z - shift), sum (z - shift)^2 and min z.
    inside : ndarray
        The values in (lo, hi), descending.
    lo : float
    at_lo : int
        #(z = lo): one block of ties, never split by :meth:`supports`.
    below : float
        The largest value below lo (-inf when none).
    shift : float
        The shift of the sums (the mean of the values above the bracket), against rounding.
    """

    head: np.ndarray
    inside: np.ndarray
    lo: float
    at_lo: int
    below: float
    shift: float

    def supports(self) -> tuple[np.ndarray, ...]:
        """The candidate top sets, by size: {z >= hi} plus the top j values in (lo, hi)
        (j = 0..J), then plus the ties at lo. Returns their sizes k, shifted sums s1 and s2,
        their smallest value (last) and the largest value outside (next)."""
        ties = [self.lo] if self.at_lo else []
        vals = np.concatenate([self.inside, ties])
        mult = np.concatenate([np.ones(self.inside.size), [float(self.at_lo)] if ties else []])
        t = vals - self.shift
        k = self.head[0] + np.concatenate([[0.0], np.cumsum(mult)])
        s1 = self.head[1] + np.concatenate([[0.0], np.cumsum(mult * t)])
        s2 = self.head[2] + np.concatenate([[0.0], np.cumsum(mult * t * t)])
        last = np.concatenate([[self.head[3]], vals])
        nxt = np.concatenate([vals, [self.below]])
        ok = k > 0
        return k[ok], s1[ok], s2[ok], last[ok], nxt[ok]


def bracket_root(state: Any, loss: Values, below_root: Any, summ: LossSummary) -> Bracket:
    """The root of a monotone function of a threshold c that depends on the values z_n only
    through their suffix sums #(z >= c), sum_{z >= c} z and sum_{z >= c} z^2, by bracketing
    passes over the persisted ``state``.

    Each pass evaluates the suffix sums at about :data:`CANDIDATES` candidates (quantiles of
    the values: ``summ.quantiles`` first, then quantiles inside the bracket) and
    ``below_root(sums, cands)`` (sums: candidates x [#(z > c), sum z, sum z^2 over z > c])
    says which
    candidates lie below the root; the root is then bracketed in [lo, hi) between two
    consecutive candidates. When the values strictly inside, #(lo < z < hi), are at most
    :data:`BRACKET_CAP` over the partitions they are fetched with the sums above the bracket and
    the count of the ties at lo (any number of them: 12 bytes), else another round of
    quantiles inside narrows the bracket. The caller's exact scan over
    :meth:`Bracket.supports` finishes on the client.
    """
    lo, hi = -np.inf, np.inf
    quantiles, sizes = summ.quantiles, summ.sizes
    for _ in range(MAX_DUAL_PASSES):
        extra = [summ.zmin, summ.zmax] + [v for v in (lo, hi) if np.isfinite(v)]
        cands = _choose_candidates(quantiles, sizes, extra)
        cands = cands[(cands >= lo) & (cands <= hi)] if np.isfinite(lo + hi) else cands
        each = computed(per_partition(_suffix_sums, 4 * cands.size, state, loss=loss,
                                       cands=cands)).reshape(-1, cands.size, 4)
        sums = each.sum(axis=0)
        below = below_root(sums[:, :3], cands)
        j = int(np.flatnonzero(below)[-1]) if below.any() else -1
        lo = float(cands[j]) if j >= 0 else -np.inf
        hi = float(cands[j + 1]) if j + 1 < cands.size else np.inf
        above_lo = each[:, j, 0] if j >= 0 else sizes_of(each)
        widest = int(np.max(above_lo - (each[:, j + 1, 3] if j + 1 < cands.size else 0)))
        shift = summ.mean
        if j + 1 < cands.size and sums[j + 1, 3] > 0:  # the mean of the values >= hi
            shift = float((sums[j + 1, 1] + hi * (sums[j + 1, 3] - sums[j + 1, 0]))
                          / sums[j + 1, 3])
        if widest * each.shape[0] <= BRACKET_CAP:
            width = max(1, widest)
            parts = computed(per_partition(_bracket_values, 6 + width, state, loss=loss, lo=lo,
                                            hi=hi, shift=shift, size=width))
            head = np.array([parts[:, 0].sum(), parts[:, 1].sum(), parts[:, 2].sum(),
                             parts[:, 3].min()])
            inside = parts[:, 6:].ravel()
            return Bracket(head, np.sort(inside[np.isfinite(inside)])[::-1], lo,
                           int(parts[:, 5].sum()), float(parts[:, 4].max()), shift)
        parts = computed(per_partition(_quantiles_inside, PARTITION_QUANTILES + 1, state,
                                        loss=loss, lo=lo, hi=hi, k=PARTITION_QUANTILES))
        quantiles, sizes = parts[:, 1:], parts[:, 0]
    raise RuntimeError(f"the bracketing search did not end in {MAX_DUAL_PASSES} passes")


def _chi2_scan(bracket: Bracket, m: int, rho: float, scale: float
               ) -> tuple[float, float] | None:
    """The in-memory kernel's support scan over the bracket's supports
    (:meth:`Bracket.supports`); (c, lambda) of the first consistent one, with its mean and
    squared deviations polished from shifted sums, or None."""
    k, s1, s2, last, nxt = bracket.supports()
    shift = bracket.shift
    mean = shift + s1 / k
    ss = s2 - k * (mean - shift) ** 2
    rhs = m * rho - m + k - (m - k) ** 2 / k
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.sqrt(rhs / ss)
        lam = mean - (m - k) / (k * c)
        s_last = 1.0 + c * (last - lam)
        s_next = np.where(k == m, -np.inf, 1.0 + c * (nxt - lam))
    good = (rhs > 0) & (ss > 1e-300) & (s_last >= -CHI2_SCAN_TOL) \
        & (s_next <= CHI2_SCAN_TOL * scale)
    if not np.any(good):
        return None
    j = int(np.argmax(good))
    return float(c[j]), float(lam[j])


def _chi2_rule(state: Any, loss: Values, rho: float, summ: LossSummary) -> WeightRule | None:
    """The chi-square threshold by :func:`bracket_root` on G(eta) < 1 + rho (module
    docstring); None when rounding left no consistent support (the caller then solves in
    memory)."""
    bracket = bracket_root(state, loss, lambda sums, cands: _g_ratio(sums, cands, summ.n)
                           < 1.0 + rho, summ)
    found = _chi2_scan(bracket, summ.n, rho, max(1.0, summ.zmax - summ.zmin))
    return None if found is None else WeightRule("chi2", summ.zmax, c=found[0], lam=found[1])


def _kl_rule(state: Any, loss: Values, rho: float, summ: LossSummary,
             beta0: float | None) -> WeightRule:
    """beta* by batched safeguarded Newton passes (module docstring)."""
    logm = math.log(summ.n)
    lo, hi = 0.0, np.inf
    beta = beta0 if beta0 and np.isfinite(beta0) else math.sqrt(2.0 * rho / (summ.ss / summ.n))
    betas = np.array([beta])
    for _ in range(MAX_DUAL_PASSES):
        sums = computed(per_partition(_kl_sums, 3 * betas.size, state, loss=loss,
                                       zmax=summ.zmax, betas=betas)).sum(axis=0).reshape(-1, 3)
        mean = sums[:, 1] / sums[:, 0]
        var = np.maximum(sums[:, 2] / sums[:, 0] - mean * mean, 0.0)
        f = betas * mean - np.log(sums[:, 0]) + logm
        lo = max([lo] + list(betas[f <= rho]))
        hi = min([hi] + list(betas[f > rho]))
        best = int(np.argmin(np.abs(f - rho)))
        if abs(f[best] - rho) <= KL_TOL * rho:
            return WeightRule("kl", summ.zmax, beta=float(betas[best]))
        if np.isfinite(hi) and hi - lo <= 1e-15 * hi:
            return WeightRule("kl", summ.zmax, beta=0.5 * (lo + hi))
        b, slope = float(betas[best]), float(betas[best] * var[best])
        nxt = b - (f[best] - rho) / slope if slope > 0 else b
        if not (slope > 0 and lo < nxt < hi):
            nxt = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * b
        spread = min(0.5, abs(nxt - b) / nxt)
        betas = np.array([nxt, nxt * (1.0 - spread), nxt * (1.0 + spread)])[:KL_BATCH]
        inside = betas[(betas > lo) & (betas < hi)]
        betas = inside if inside.size else np.array([nxt])
    raise RuntimeError(f"the KL dual search did not end in {MAX_DUAL_PASSES} passes")


def trivial_rule(summ: LossSummary, phi: Phi, rho: float) -> WeightRule | None:
    """The IM procedure's first cases from the summary alone: all losses tie (P* = U_N), or
    alpha* = 0 (P* uniform on the largest losses, when it lies in the ball); else None."""
    if summ.zmax - summ.zmin <= 1e-12 * max(1.0, abs(summ.zmax)):
        return WeightRule("uniform", summ.zmax)
    if alpha_zero_divergence(phi, summ.n, summ.mtop) <= rho:
        return WeightRule("top", summ.zmax)
    return None


def dual_rule(state: Any, loss: Values, phi_name: str, rho: float, summ: LossSummary,
              beta0: float | None = None) -> WeightRule | None:
    """The worst-case weights' rule for the margins ``state`` (persisted Dask array): the
    IM procedure's cases in its order (ties, alpha* = 0, then the dual search); None when the
    chi-square scan found no consistent support."""
    trivial = trivial_rule(summ, KL if phi_name == "kl" else CHI2, rho)
    if trivial is not None:
        return trivial
    if phi_name == "kl":
        return _kl_rule(state, loss, rho, summ, beta0)
    return _chi2_rule(state, loss, rho, summ)


def persist_with(state: Any, small: Any) -> tuple[Any, np.ndarray]:
    """``state`` persisted on the workers and ``small`` (computed from it) brought back, in
    one submission."""
    state, small = dask.persist(state, small)
    return state, computed(small, features=True)


# ------------------------------------------------------------------ from margins to R
def _margins(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return y * (X @ w - b)


def signed_margins(X: Any, y: Any, w: np.ndarray, b: float) -> Any:
    """The lazy margins m_n = y~_n (<w, x_n> - b) of Dask features ``X`` and signed labels
    ``y`` (a Dask array with X's row partitions)."""
    return da.blockwise(_margins, "i", X, "ij", y, "i", dtype=np.float64, concatenate=True,
                        w=w, b=b)


def persisted_summary(margins: Any, loss: Values, quantiles: bool) -> tuple[Any, LossSummary]:
    """The margins persisted on the workers and their losses' :class:`LossSummary` (with
    :data:`PARTITION_QUANTILES` quantiles per partition when ``quantiles``, for
    :func:`bracket_root`), in one pass over the features."""
    quantiles = PARTITION_QUANTILES if quantiles else 0
    summary = per_partition(margin_summary, summary_width(quantiles), margins, loss=loss,
                            quantiles=quantiles)
    state, parts = persist_with(margins, summary)
    return state, LossSummary.combine(parts)


def summary_of(state: Any, loss: Values, quantiles: bool) -> LossSummary:
    """The values' :class:`LossSummary` (with :data:`PARTITION_QUANTILES` quantiles per
    partition when ``quantiles``, for :func:`bracket_root`): one pass over the persisted
    ``state``."""
    quantiles = PARTITION_QUANTILES if quantiles else 0
    return LossSummary.combine(computed(per_partition(
        margin_summary, summary_width(quantiles), state, loss=loss, quantiles=quantiles)))


def rule_on(state: Any, loss: Values, phi: Phi, rho: float, summ: LossSummary,
            beta0: float | None = None) -> WeightRule:
    """The chi-square or KL worst-case weights' rule for the persisted ``state``
    (:func:`dual_rule`). When rounding left the chi-square scan no consistent support (rare),
    the IM procedure runs in memory on the gathered values."""
    rule = dual_rule(state, loss, "kl" if phi is KL else "chi2", rho, summ, beta0)
    if rule is None:
        z = values_of(np.asarray(state.compute()), loss)
        sol = inner_maximize(z, phi, rho)
        rule = (WeightRule("top", float(z.max())) if sol.alpha == 0.0 else
                WeightRule("chi2", float(z.max()), c=0.5 / sol.alpha, lam=sol.lam))
    return rule


def _weighted_loss_sums(m: np.ndarray, loss: Values, rule: WeightRule) -> np.ndarray:
    z = values_of(m, loss)
    s = rule.weights(z)
    return np.array([[float(s @ z), float(s.sum())]])


def robust_value(state: Any, loss: Values, rule: WeightRule, summ: LossSummary) -> float:
    """R = sum_n P*_n l(m_n) at the persisted margins ``state``: from the summary when P* is
    uniform (all losses tie) or on the largest losses, else one pass over the margins."""
    if rule.kind == "uniform":
        return summ.mean
    if rule.kind == "top":
        return summ.zmax
    sums = computed(per_partition(_weighted_loss_sums, 2, state, loss=loss,
                                  rule=rule)).sum(axis=0)
    return float(sums[0] / sums[1])
