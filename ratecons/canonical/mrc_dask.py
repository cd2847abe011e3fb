"""The MRC learning problem when psi lives in Dask partitions (issue 33).

:class:`DaskMRCForm` is :class:`~ratecons.canonical.mrc.MRCForm` with ``psi`` a
:class:`~ratecons.dask_moments.PartitionedPsi`: the values it computes over all training
instances are reductions over the partitions, so that only p-sized results travel:

- :meth:`DaskMRCForm.varphi_aggregate`: the max (LP (4), varphi(mu) of (2.3)) or the mean
  (2.5) of varphi(mu, x_i) of Alg. 2, one number per partition; hence the objective (2.2) at
  any mu, the upper bound of CCG's certificate;
- :func:`separation_block`: CCG's CONSTR scan of one partition (Alg. 2 per instance, then the
  most violated rows), used by :class:`ratecons.solvers.mrc_dask.DaskCCG`.

The per-instance scores (:meth:`DaskMRCForm.scores` without ``psi``) are gathered only for
comparisons of two solutions (``rc.verify``).
"""

from __future__ import annotations

import numpy as np

from ..numerics.moment_scores import label_scores
from .mrc import MRCForm, max_subset_value

__all__ = ["DaskMRCForm", "separation_block"]


def _scores_block(psi: np.ndarray, y: np.ndarray, start: int, mu: np.ndarray, n_classes: int,
                  label_map: np.ndarray | None) -> np.ndarray:
    return label_scores(psi, mu, n_classes, label_map)


def _varphi_block(psi: np.ndarray, y: np.ndarray, start: int, mu: np.ndarray, n_classes: int,
                  label_map: np.ndarray | None) -> tuple[float, float]:
    """(max, sum) of varphi(mu, x_i) over the partition's instances (Alg. 2)."""
    phi = max_subset_value(label_scores(psi, mu, n_classes, label_map))[0]
    return float(phi.max(initial=-np.inf)), float(phi.sum())


def separation_block(psi: np.ndarray, y: np.ndarray, start: int, mu: np.ndarray, nu: float,
                     n_classes: int, label_map: np.ndarray | None, threshold: float,
                     top: int) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CONSTR (Alg. 1) on one partition of rows starting at global row ``start``.

    For every instance the most violated label subset by Alg. 2, violation
    1 + varphi(mu, x_i) - nu (the row F_i mu - nu - b_i of LP (4) for that subset); of those at
    least ``threshold``, the ``top`` most violated (an O(n) partition).

    Returns
    -------
    (largest violation of the partition, global row indices in increasing order, their
    violations, subset masks and rows of psi)
    """
    phi, masks = max_subset_value(label_scores(psi, mu, n_classes, label_map))
    violation = 1.0 + phi - nu
    cand = np.flatnonzero(violation >= threshold)
    if cand.size > top:
        cand = np.sort(cand[np.argpartition(-violation[cand], top - 1)[:top]])
    return (float(violation.max(initial=-np.inf)), cand + start, violation[cand], masks[cand],
            np.asarray(psi[cand]))


class DaskMRCForm(MRCForm):
    """:class:`MRCForm` over a :class:`~ratecons.dask_moments.PartitionedPsi` (module
    docstring). Its ``y`` (label codes) is on the client, as the Dataset's labels are."""

    def scores(self, mu: np.ndarray, psi: np.ndarray | None = None) -> np.ndarray:
        """Phi(x, y)^T mu for rows ``psi`` (in memory), or for every training instance (one
        pass; an (n, n_classes) array on the client: for comparisons only)."""
        if psi is not None:
            return super().scores(mu, psi)
        return np.vstack(self.psi.reduce(_scores_block, np.asarray(mu, dtype=np.float64),
                                         self.n_classes, self.label_map))

    def varphi_aggregate(self, mu: np.ndarray) -> float:
        parts = self.psi.reduce(_varphi_block, np.asarray(mu, dtype=np.float64),
                                self.n_classes, self.label_map)
        if self.fixed_marginals:
            return float(sum(total for _, total in parts) / self.n)
        return float(max(largest for largest, _ in parts))
