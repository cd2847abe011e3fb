"""Metrics and report values of a fitted score model on Dask data, by reductions over partitions.

``result.metrics(data)`` and ``result.report(data)`` on a Dask-backed dataset evaluate the model
where the examples are: :class:`WorkerScores` persists the scores f(x_n) with the features'
partitions (8 bytes per row on the workers, one pass over the features) and every metric is a
reduction over them, so that no N-sized vector of scores reaches the client:

* error, accuracy and the positive rate: one pass returning four sums per partition;
* the AUC, exactly (mid-ranks, ties count one half; :func:`ratecons.metrics.auc`): the scores
  and labels are sorted by Dask's distributed sort (``DataFrame.sort_values``, which sends
  every value to the partition its divisions assign it, so equal scores share a partition);
  each sorted partition returns its size, its positives and the sum of their mid-ranks within
  it, and the client adds the partitions' offsets;
* TPR@K (Section 4.4 of the ranking paper): the threshold, the mean of the K largest reference
  scores, from each partition's K largest merged on the client (K numbers per partition), then
  one counting pass; TPR@tau's threshold, the ceil(tau n)-th largest reference score, is read
  from the one sorted partition that holds it;
* rates (eq. 1 and the ramp of eq. 3) and mean losses: weighted sums over the partitions with
  the rows' coefficients (each subset's example weights, summed by example on the client from
  its index arrays, which the client already holds) sent once; the robust loss by
  :mod:`ratecons.dask_robust`.

The surrogate (convex) threshold of TPR@tau (Pat&Mat) in a report's "expected" column is
found by bracketing passes over the persisted scores (:meth:`WorkerScores.surrogate_quantile`)
and a worst-case rate's value by the inner maximization's dual search over its per-example
values on the workers (:mod:`ratecons.dask_worst_case`). The report's
tables by group level are one more reduction (:meth:`WorkerScores.level_sums`).

The chain checks its rows at every iterate by the same reductions
(:func:`ratecons.chain_points.score_table`), from the iterate's scores already on the workers
(``WorkerScores(..., scores=...)``) and with the columns the rows need sent once per run
(``kept``, :meth:`WorkerScores.sent_once`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .loss_functions import margin_loss, surrogate
from .numerics.inner_max_dask import bracket_root, computed, per_partition, summary_of
from .ramp import ramp, ramp_width
from .scans import client_column, count_pass, kept_column
from .thresholds import above_threshold, quantile_count, tied, top_k_mean

__all__ = ["WorkerEvaluation", "WorkerScores"]

#: the columns of the sorted frame's per-partition rank sums (:func:`_rank_sums`): size,
#: positives, the positives' and the negatives' weight, and the weighted pairs within
RANK_COLUMNS = ("n", "positives", "w_pos", "w_neg", "pairs")


def _block_scores(block: np.ndarray, scorer: Any) -> np.ndarray:
    return np.asarray(scorer.decision_function(block), dtype=np.float64).ravel()


def lazy_scores(scorer: Any, X: Any) -> Any:
    """f(x_n) for Dask features ``X`` (lazy, with X's row partitions): the scorer's own
    ``decision_function`` on every partition, so any score model (linear, kernel, feature map)
    scores each row as it does in memory."""
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X.map_blocks(_block_scores, scorer=scorer, drop_axis=1, dtype=np.float64,
                        meta=np.empty(0))


# ------------------------------------------------------------------ work on one partition
def _classification_sums(s: np.ndarray, y: np.ndarray, *weights: np.ndarray) -> np.ndarray:
    """sum w 1[pred != y], sum w 1[pred], sum w, #positives; pred = 1[s > 0] (w = 1 when no
    weights are given)."""
    pred = s > 0
    w = weights[0] if weights else np.ones(s.size)
    return np.array([[float(w @ (pred != (y > 0))), float(w @ pred), float(w.sum()),
                      float(np.count_nonzero(y))]])


def _top_scores(s: np.ndarray, y: np.ndarray, k: int, negatives: bool) -> np.ndarray:
    """The partition's k largest reference scores (descending), NaN-padded to k."""
    ref = s[y == 0] if negatives else s
    out = np.full((1, k), np.nan)
    take = min(k, ref.size)
    if take:
        out[0, :take] = -np.sort(-np.partition(ref, ref.size - take)[ref.size - take:])
    return out


def _positives_above(s: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    """The partition's positives strictly above t, its positives and negatives tied with t,
    and its positives (:func:`ratecons.thresholds.above_threshold` counts the tied positives
    only where no negative of any partition ties)."""
    pos = y > 0
    at = tied(s, t)
    return np.array([[float(np.count_nonzero(above_threshold(s[pos], t))),
                      float(np.count_nonzero(at & pos)), float(np.count_nonzero(at & ~pos)),
                      float(np.count_nonzero(pos))]])


def _rate_values(s: np.ndarray, C: np.ndarray, unit: float = 1.0) -> np.ndarray:
    """C^T [1[s > 0], clip(1/2 + s / unit, 0, 1)] (indicator and ramp rates, the ramp of
    width ``unit``: :func:`ratecons.ramp.ramp_width`), one row."""
    return np.concatenate([C.T @ (s > 0), C.T @ ramp(s / unit)])[None]


def _loss_values(s: np.ndarray, y: np.ndarray, C: np.ndarray, loss: str,
                 scale: float = 1.0) -> np.ndarray:
    """C^T l(t y~ s) for a margin loss at score scale t = ``scale``, one row."""
    values, _ = margin_loss(loss, scale * (2.0 * y - 1.0) * s)
    return (C.T @ values)[None]


@dataclass(frozen=True)
class BreakPoints:
    """Per partition block [score, label]: the breakpoints b = s + 1/theta of the Pat&Mat
    threshold equation over the reference scores (the negatives, or all)."""

    theta: float
    negatives: bool

    def __call__(self, block: np.ndarray) -> np.ndarray:
        s = block[:, 0]
        return (s[block[:, 1] < 0.5] if self.negatives else s) + 1.0 / self.theta


def _surrogate_sums(s: np.ndarray, y: np.ndarray, t: float, which: str) -> np.ndarray:
    pos = y > 0
    return np.array([[float(surrogate(which, t - s[pos]).sum()), float(np.count_nonzero(pos))]])


def _rank_sums(frame: Any) -> Any:
    """:data:`RANK_COLUMNS` of one sorted partition: the pairs are sum over its positives i
    of w_i (the weight of its negatives below s_i + half that of those tied with it)."""
    import pandas as pd

    s, pos, w = (frame["s"].to_numpy(), frame["y"].to_numpy() > 0.5,
                 frame["w"].to_numpy())
    pairs = 0.0
    if s.size:
        values, at = np.unique(s, return_inverse=True)
        negative = np.bincount(at, weights=np.where(pos, 0.0, w), minlength=values.size)
        below = np.cumsum(negative) - negative
        pairs = float(w[pos] @ (below[at[pos]] + 0.5 * negative[at[pos]]))
    return pd.DataFrame([[float(s.size), float(np.count_nonzero(pos)), float(w[pos].sum()),
                          float(w[~pos].sum()), pairs]], columns=list(RANK_COLUMNS))


def _kth_largest(frame: Any, r: int, negatives: bool) -> Any:
    """The r-th largest reference score of one sorted partition (ascending by score)."""
    import pandas as pd

    s = frame["s"].to_numpy()
    ref = s[frame["y"].to_numpy() < 0.5] if negatives else s
    return pd.Series([float(ref[ref.size - r])] if ref.size >= r > 0 else [], dtype=float)


class WorkerScores:
    """A fitted model's scores on a Dask dataset, persisted with its partitions, and the
    reductions over them (module docstring).

    Parameters
    ----------
    scorer : LinearScorer, KernelScorer or FeatureScorer
        Anything with ``decision_function`` on a NumPy block of rows.
    data : Dataset
        Dask-backed; its labels, weights and subsets' index arrays are the client's.
    scores : dask.array.Array, optional
        The scores already persisted on the workers (a Dask vector with the features' row
        partitions; the chain's iterates, :func:`ratecons.chain_points.step_scores`): used as
        they are, no pass; else ``scorer``'s, persisted by one pass over the features.
    kept : dict, optional
        Where the columns sent to the workers (labels, example weights, the rows'
        coefficients) are kept, persisted, for every other :class:`WorkerScores` of the same
        dataset given the same dict (the chain checks its rows at every iterate: each check
        then sends nothing N-sized); else this object's own.
    """

    def __init__(self, scorer: Any, data: Any, scores: Any = None,
                 kept: dict[Any, Any] | None = None) -> None:
        self.scorer, self.data = scorer, data
        if scores is None:
            scores = lazy_scores(scorer, data.X).persist()
            count_pass()
        self.s = scores
        self.chunks = self.s.chunks[0]
        self.kept = {} if kept is None else kept
        self._sorted: tuple[Any, Any] | None = None

    def column(self, values: np.ndarray) -> Any:
        """A per-example client vector (or N x r matrix) cut into the scores' partitions and
        sent to the workers (:func:`ratecons.scans.client_column`)."""
        return client_column(values, self.chunks)[0]

    def sent_once(self, key: Any, owners: tuple[Any, ...], make: Any) -> Any:
        """The column ``make()`` (a client vector or N x r matrix) on the workers, kept under
        ``key`` in :attr:`kept`, made for the objects ``owners`` (kept with it, so that a key
        of their ids never names another object's column); sent again when a worker was lost
        with one of its blocks since."""
        found = self.kept.get(key)
        same = found is not None and len(found[0]) == len(owners) and all(
            a is b for a, b in zip(found[0], owners, strict=True))
        column = kept_column(found[1:] if same else None,
                             lambda: client_column(make(), self.chunks))
        self.kept[key] = (owners, *column)
        return column[0]

    def weight_column(self) -> list[Any]:
        """The example weights on the workers (sent once), or nothing when they are all 1."""
        if self.data.weights is None:
            return []
        return [self.sent_once("weights", (), lambda: np.asarray(self.data.weights,
                                                                  dtype=np.float64))]

    @property
    def labels(self) -> Any:
        """The 0/1 labels on the workers (one byte per row, sent once)."""
        return self.sent_once("labels", (), lambda: self.data.require_labels(
            "metrics", binary=True).astype(bool).astype(np.int8))

    # ------------------------------------------------------------------ the metrics
    def classification(self) -> dict[str, float]:
        """``error``, ``accuracy`` and ``positive_rate`` of the predictions 1[f(x) > 0],
        weighted by the dataset's example weights (one pass)."""
        sums = computed(per_partition(_classification_sums, 4, self.s, self.labels,
                                      *self.weight_column())).sum(axis=0)
        error = float(sums[0] / sums[2])
        return {"error": error, "accuracy": 1.0 - error,
                "positive_rate": float(sums[1] / sums[2]), "positives": float(sums[3])}

    def sorted_ranks(self) -> tuple[Any, np.ndarray]:
        """The (score, label) frame sorted by score by Dask's distributed sort (persisted),
        and each sorted partition's :data:`RANK_COLUMNS` (one row each, in order)."""
        if self._sorted is None:
            import dask.array as da
            import dask.dataframe as dd

            weights = self.weight_column() or [da.ones_like(self.s)]
            pairs = da.stack([self.s, self.labels.astype(np.float64), *weights], axis=1)
            frame = dd.from_dask_array(pairs, columns=["s", "y", "w"]).sort_values(
                "s").persist()
            meta = {name: np.float64 for name in RANK_COLUMNS}
            sums = frame.map_partitions(_rank_sums, meta=meta).compute()
            count_pass(features=False)
            self._sorted = frame, sums[list(RANK_COLUMNS)].to_numpy(dtype=np.float64)
        return self._sorted

    def auc(self) -> float:
        """P(s_+ > s_-) + P(s_+ = s_-)/2 over pairs weighted w_i w_j by the example weights,
        as in memory (:func:`ratecons.metrics.auc`): each sorted partition's pairs, plus its
        positives' weight times the negatives' weight of the partitions before it."""
        _, sums = self.sorted_ranks()
        _, _, w_pos, w_neg, pairs = sums.T
        before = np.concatenate([[0.0], np.cumsum(w_neg)[:-1]])
        return float((pairs.sum() + w_pos @ before) / (w_pos.sum() * w_neg.sum()))

    def top_k_threshold(self, k: int, negatives: bool) -> float:
        """The mean of the K largest reference scores: each partition's K largest, merged."""
        tops = computed(per_partition(_top_scores, k, self.s, self.labels, k=k,
                                      negatives=negatives), features=False)
        return top_k_mean(tops[np.isfinite(tops)], k)

    def quantile_threshold(self, tau: float, negatives: bool) -> float:
        """The ceil(tau n)-th largest reference score (:func:`ratecons.thresholds.top_quantile`),
        read from the one sorted partition that holds it."""
        frame, sums = self.sorted_ranks()
        n, positives = sums.T[:2]
        counts = n - positives if negatives else n
        m = quantile_count(int(counts.sum()), tau)
        above = np.concatenate([np.cumsum(counts[::-1])[::-1][1:], [0.0]])  # after each one
        part = int(np.flatnonzero((above < m) & (above + counts >= m))[-1])
        value = frame.partitions[part].map_partitions(
            _kth_largest, int(m - above[part]), negatives, meta=(None, np.float64)).compute()
        count_pass(features=False)
        return float(value.iloc[0])

    def tpr_above(self, t: float, among: str = "negatives") -> float:
        """(1/n_+) #{positives scored above t} (one pass; a tie as
        :func:`ratecons.thresholds.above_threshold` counts it for ``among``)."""
        above, tied_pos, tied_neg, total = computed(per_partition(
            _positives_above, 4, self.s, self.labels, t=t), features=False).sum(axis=0)
        hits = above + (tied_pos if among == "all" and tied_neg == 0 else 0.0)
        return float(hits / total)

    def tpr_at_top(self, part: Any) -> float:
        """The exact TPR above the threshold of a TPR@K or TPR@tau objective."""
        negatives = part.among != "all"
        t = (self.top_k_threshold(int(part.k), negatives) if part.tau is None
             else self.quantile_threshold(part.tau, negatives))
        return self.tpr_above(t, part.among)

    def surrogate_quantile(self, part: Any) -> float:
        """Pat&Mat's threshold (:func:`ratecons.thresholds.surrogate_quantile`): the root t of
        (1/n) sum_j l(theta (s_j - t)) = tau over the reference scores, which depends on them
        only through the suffix sums of the breakpoints b_j = s_j + 1/theta above t:
        theta sum_{b > t} (b - t) (hinge) or theta^2 sum_{b > t} (b - t)^2 (quadratic hinge).
        :func:`ratecons.numerics.inner_max_dask.bracket_root` brackets t between two
        candidate breakpoints per pass; the exact scan of the in-memory function then runs
        over the top sets of the few breakpoints in the bracket."""
        import dask.array as da

        spec = part.threshold
        theta, hinge = float(spec.theta), spec.surrogate == "hinge"
        values = BreakPoints(theta, part.among != "all")
        state = da.stack([self.s, self.labels.astype(np.float64)], axis=1).rechunk({1: -1})
        summ = summary_of(state, values, quantiles=True)
        target = spec.tau * summ.n

        def below_root(sums: np.ndarray, cands: np.ndarray) -> np.ndarray:
            s0, s1, s2 = sums.T
            f = (theta * (s1 - s0 * cands) if hinge
                 else theta**2 * (s2 - 2.0 * cands * s1 + s0 * cands * cands))
            return f > target

        bracket = bracket_root(state, values, below_root, summ)
        k, s1, s2, _, nxt = bracket.supports()
        if hinge:
            t = bracket.shift + (s1 - target / theta) / k
        else:
            disc = np.maximum(s1 * s1 - k * (s2 - target / theta**2), 0.0)
            t = bracket.shift + (s1 - np.sqrt(disc)) / k
        with np.errstate(invalid="ignore"):
            ok = t >= nxt - 1e-12 * np.maximum(1.0, np.abs(nxt))
        return float(t[int(np.argmax(ok))] if ok.any() else t[-1])

    def tpr_surrogate(self, part: Any) -> float:
        """The concave lower bound 1 - (1/n_+) sum_{I_+} l(t - s_i) of a TPR@K or TPR@tau
        objective (:meth:`ratecons.expr.ranking.RankingObjective.surrogate_value`), its
        threshold the mean of the K largest (TopPushK family) or Pat&Mat's surrogate quantile
        (:meth:`surrogate_quantile`)."""
        t = (self.top_k_threshold(int(part.k), part.among != "all")
             if part.family == "toppushk" else self.surrogate_quantile(part))
        total, positives = computed(per_partition(_surrogate_sums, 2, self.s, self.labels,
                                                  t=t, which=part.surrogate),
                                    features=False).sum(axis=0)
        return 1.0 - float(total / positives)

    # ------------------------------------------------------------------ rows of a report
    def coefficients(self, subsets: list[tuple[Any, float]]) -> np.ndarray:
        """sum_j coef_j (subset_j's example weights, scattered to its examples): the per-example
        coefficients of a linear combination of subset averages."""
        c = np.zeros(self.data.n)
        for subset, coef in subsets:
            np.add.at(c, subset.index, coef * np.asarray(subset.weights, dtype=np.float64))
        return c

    def rate_values(self, exprs: list[Any]) -> np.ndarray:
        """[indicator (eq. 1), ramp (eq. 3)] of each linear rate expression, shape (r, 2), in
        one pass."""
        C = self.sent_once(("rates", *map(id, exprs)), tuple(exprs), lambda: np.column_stack(
            [self.coefficients(list(e.terms.values())) for e in exprs]))
        sums = computed(per_partition(_rate_values, 2 * len(exprs), self.s, C,
                                      unit=ramp_width(self.scorer)),
                        features=False).sum(axis=0)
        constants = np.array([e.constant for e in exprs])
        return np.column_stack([constants + sums[: len(exprs)], constants + sums[len(exprs):]])

    def mean_loss(self, part: Any) -> float:
        """The weighted mean margin loss of a :class:`ratecons.expr.mean_loss.MeanLoss`."""
        # keyed by the subset (its coefficients), not the term: a loss at another score scale
        # (:mod:`ratecons.chain_scale`) has the same column
        C = self.sent_once(("loss", id(part.subset)), (part.subset,),
                           lambda: self.coefficients([(part.subset, 1.0)])[:, None])
        return float(computed(per_partition(_loss_values, 1, self.s, self.labels, C,
                                            loss=part.loss, scale=part.scale),
                              features=False).sum(axis=0)[0])

    def evaluation(self) -> WorkerEvaluation:
        """A :class:`WorkerEvaluation` of rows and rates that starts from these scores."""
        return WorkerEvaluation(self.scorer, self)

    def level_sums(self, fn: Any, codes: np.ndarray, y: np.ndarray, levels: int) -> np.ndarray:
        """``fn(pred, y, w, codes, levels)`` (the sums by group level of
        :func:`ratecons.report.level_sums`, shape (8, levels)) on every partition, summed: the
        group codes and the coded labels ``y`` sent (the example weights once, if any)."""
        parts = per_partition(_level_block, 8 * levels, self.s, self.column(y),
                              self.column(np.asarray(codes, dtype=np.int64)),
                              *self.weight_column(), sums=fn, levels=levels)
        return computed(parts, features=False).sum(axis=0).reshape(8, levels)


def _level_block(s: np.ndarray, y: np.ndarray, codes: np.ndarray, *weights: np.ndarray,
                 sums: Any, levels: int) -> np.ndarray:
    w = weights[0] if weights else np.ones(s.size)
    return sums((s > 0).astype(np.int8), y, w, codes, levels).reshape(1, -1)


def _datasets(part: Any) -> list[Any]:
    """A part's datasets: a method of terms, an attribute of rate expressions."""
    return part.datasets() if callable(part.datasets) else part.datasets


class WorkerEvaluation:
    """Values of report rows and rate expressions for a scorer, each part over a Dask dataset
    by the reductions of that dataset's :class:`WorkerScores` (made once per dataset); parts
    over data in memory or over several datasets by their own in-memory evaluation; ``scores``:
    the :class:`WorkerScores` already made for some of the datasets."""

    def __init__(self, scorer: Any, *scores: WorkerScores) -> None:
        self.scorer = scorer
        self.by_data: dict[int, WorkerScores] = {id(each.data): each for each in scores}
        self._rates: dict[int, np.ndarray] = {}

    def scores_for(self, part: Any) -> WorkerScores | None:
        """The scores on the workers of the part's one Dask dataset, or None."""
        datasets = _datasets(part)
        if len(datasets) != 1 or not datasets[0].in_dask:
            return None
        return self.scores_on(datasets[0])

    def scores_on(self, data: Any) -> WorkerScores:
        """The scores on the workers of the Dask dataset ``data`` (computed once)."""
        if id(data) not in self.by_data:
            self.by_data[id(data)] = WorkerScores(self.scorer, data)
        return self.by_data[id(data)]

    def rate(self, expr: Any, kind: str) -> float:
        """A rate expression's ``indicator`` or ``ramp`` value (a ratio: of its numerator and
        denominator, NaN when the denominator is 0); both kinds from one pass."""
        if hasattr(expr, "numerator"):
            den = self.rate(expr.denominator, kind)
            return float("nan") if den == 0 else self.rate(expr.numerator, kind) / den
        workers = self.scores_for(expr)
        if workers is None:
            return float(expr.value(self.scorer, kind))
        if id(expr) not in self._rates:
            self._rates[id(expr)] = workers.rate_values([expr])[0]
        return expr.settled(float(self._rates[id(expr)][0 if kind == "indicator" else 1]))

    def part_value(self, part: Any, kind: str, coef: float) -> float:
        """A row part's value (``kind`` "exact" or "surrogate", as
        :meth:`ratecons.expr.analysis.Row.value`), told apart by what the part declares."""
        workers = self.scores_for(part)
        if workers is None:
            return float(part.evaluate(self.scorer, kind, coef))
        if getattr(part, "curvature", "") == "concave":
            return workers.tpr_at_top(part) if kind == "exact" else workers.tpr_surrogate(part)
        if getattr(part, "kind", "") == "rate" and hasattr(part, "ball"):
            from .dask_worst_case import worst_case_value

            return worst_case_value(part, workers, 1.0 if coef > 0 else -1.0,
                                    "indicator" if kind == "exact" else "ramp")
        if getattr(part, "mergeable", False):
            return self.rate(part, "indicator" if kind == "exact" else "ramp")
        if getattr(part, "kind", "") == "loss" and hasattr(part, "ball"):
            return float(part.value(self.scorer))
        if getattr(part, "kind", "") == "loss" and hasattr(part, "subset"):
            return workers.mean_loss(part)
        return float(part.evaluate(self.scorer, kind, coef))

    def row_value(self, row: Any, kind: str) -> float:
        """A canonical row's value (:meth:`ratecons.expr.analysis.Row.value`)."""
        return row.constant + sum(c * self.part_value(p, kind, c) for c, p in row.parts)
