"""CCG (Alg. 1 of Bondugula et al.) on an MRC whose psi lives in Dask partitions (issue 33).

:class:`DaskCCG` is :class:`~ratecons.solvers.ccg.CCG` on a
:class:`~ratecons.canonical.mrc_dask.DaskMRCForm`. The restricted LP, its HiGHS model and the
certificate are CCG's own; what changes is where the scans over the N training instances run:

- CONSTR: every partition runs Alg. 2 on its instances and sends back its largest violation
  and its ``n_max + |I|`` most violated rows (index, violation, subset, psi row:
  :func:`~ratecons.canonical.mrc_dask.separation_block`); the client keeps the ``n_max`` most
  violated fresh rows among them, which are the rows the in-memory scan picks (the global top
  rows are among each partition's top rows). Their psi rows are remembered on the client, so
  adding them to the LP reads no partition;
- the centroid start (eq. 13) needs the class sums of psi, one reduction;
- the upper bound (2.2) at mu needs varphi(mu) = max_i varphi(mu, x_i), one reduction.

The interior-point start (``start="ipm"``) solves the full LP (4) in memory and is refused;
``start="auto"`` means the centroids here. Each iteration is one pass over the partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..canonical.mrc_dask import separation_block
from ..errors import SpecError
from .ccg import CCG

__all__ = ["DaskCCG"]


@dataclass
class DaskCCG(CCG):
    """:class:`~ratecons.solvers.ccg.CCG` with its scans as reductions over the Dask
    partitions of ``form.psi`` (module docstring); same parameters."""

    def __post_init__(self) -> None:
        if self.start == "ipm":
            raise SpecError(
                "CCG's start='ipm' solves the full LP (4) in memory; on Dask data CCG starts "
                "from the class centroids (start='centroids' or 'auto').")
        self.start = "centroids"
        super().__post_init__()

    def _scan(self, mu: np.ndarray, nu: float):
        """CONSTR at (mu, nu) as one reduction (module docstring); the same return values as
        :meth:`CCG._scan`."""
        f = self.form
        threshold = max(self.eps1, self.tol)
        top = self.n_max + self._rows.keys.size
        parts = f.psi.reduce(separation_block, np.asarray(mu, dtype=np.float64), float(nu),
                             f.n_classes, f.label_map, threshold, top)
        largest = max(part[0] for part in parts)
        value = f.objective_given(mu, largest + nu - 1.0)
        inst = np.concatenate([part[1] for part in parts])
        violation = np.concatenate([part[2] for part in parts])
        masks = np.vstack([part[3] for part in parts])
        rows = np.vstack([part[4] for part in parts])
        new, new_masks, keys = self._fresh_rows(inst, violation, masks)
        f.psi.remember(new, rows[np.searchsorted(inst, new)])
        return new, new_masks, keys, max(largest, 0.0), value
