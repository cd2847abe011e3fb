"""Moment sets of minimax risk classifiers on Dask-backed data: psi where the data are.

A :class:`~ratecons.moments.MomentSet` built on a Dataset whose features live in Dask
(:mod:`ratecons.dask_data`) keeps psi(x_i) as a Dask array with the features' row partitions
(:class:`DaskFeatures`: the z-scoring statistics are one reduction, the feature map is applied
per partition) and wraps it in :class:`PartitionedPsi`, persisted on the workers with the label
codes beside it (scattered in the smallest integer type that holds them,
:func:`ratecons.scans.client_column`; sent again, and the pass made again, when a worker was
lost with one of their blocks). Everything the MRC solvers need from the N training instances
is then a reduction over partitions (:meth:`PartitionedPsi.reduce`): the moment estimates tau
and lambda (Bondugula et al., eq. 2; two passes: sums, then squared deviations), the class sums
of the centroid start (eq. 13), the CCG separation scan of Alg. 2 (only the most violated rows
of each partition travel, :mod:`ratecons.solvers.mrc_dask`) and the worst-case value varphi(mu)
of (2.3). The rows of psi that enter the restricted LP are kept on the client
(:meth:`PartitionedPsi.remember`); they are the only N-indexed data that travel.

Only feature maps whose fitted state does not depend on the examples run here (``linear``,
``RandomFourier``, ``RandomReLU``: their random weights depend on the width d and the seed);
others are refused by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import numpy as np

from .errors import SpecError
from .features import FeatureMap, FittedFeatures, Linear, RandomFourier, RandomReLU
from .moment_sums import moment_pass
from .scans import client_column, count_pass, kept_column, made_again, persisted

__all__ = ["DaskFeatures", "PartitionedPsi"]

#: feature maps whose ``_fit`` reads only the width of the inputs (not the examples)
DATA_FREE_MAPS = (Linear, RandomFourier, RandomReLU)


class DaskFeatures(FittedFeatures):
    """:class:`~ratecons.features.FittedFeatures` on a Dask array of inputs: the mean and
    (population) deviation are one reduction, ``train_psi`` is a lazy Dask array with the
    inputs' row partitions; psi of new in-memory inputs as in memory.

    Parameters
    ----------
    feature_map : FeatureMap
        One of :data:`DATA_FREE_MAPS`.
    X : dask.array.Array, shape (n, d)
    standardize : bool
    """

    def __init__(self, feature_map: FeatureMap, X: Any, standardize: bool = True) -> None:
        if not isinstance(feature_map, DATA_FREE_MAPS):
            raise SpecError(
                f"a MomentSet on Dask data takes the feature maps "
                f"{[m.__name__ for m in DATA_FREE_MAPS]} (their state does not depend on the "
                f"examples); got {feature_map.name!r}. Use one of them, or gather the data "
                "(rc.Dataset(X.compute(), ...)) if it fits in memory.")
        fitted = object.__new__(FittedFeatures)  # what the workers get: no graph inside
        fitted.feature_map, fitted.d, fitted.standardize = feature_map, int(X.shape[1]), standardize
        if standardize:
            mean, std = dask.compute(X.mean(axis=0), X.std(axis=0))
            count_pass()
            fitted.mean, fitted.scale = mean, np.where(std > 0, std, 1.0)
        fitted.state = feature_map._fit(np.empty((0, fitted.d)))
        fitted.p = feature_map.n_features(fitted.d)
        self.__dict__.update(fitted.__dict__)
        self.train_psi = X.map_blocks(fitted._apply, chunks=(X.chunks[0], (fitted.p,)),
                                      dtype=np.float64)


#: integer types the label codes are sent in, the first that holds them (1 byte per row up
#: to 128 classes: 16 MB fewer per 2,000,000 rows than int64)
CODE_TYPES = (np.int8, np.int16, np.int32, np.int64)


def code_type(largest: int) -> np.dtype:
    """The first of :data:`CODE_TYPES` that holds the label codes 0..``largest``."""
    return next(np.dtype(t) for t in CODE_TYPES if largest <= np.iinfo(t).max)


def _with_offsets(blocks: list[Any], chunks: tuple[int, ...]) -> list[tuple[Any, int]]:
    starts = np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(int).tolist()
    return list(zip(blocks, starts, strict=True))


def _moment_block(P: np.ndarray, y: np.ndarray, start: int, n_classes: int,
                  label_map: np.ndarray | None, tau_blocks: np.ndarray | None) -> np.ndarray:
    return moment_pass(P, y, n_classes, label_map, tau_blocks)


def _block_product(block: np.ndarray, At: np.ndarray) -> np.ndarray:
    """A @ block for the block's columns of A, sent as rows of A^T (C-ordered again: the
    product of main's A[:, rows] @ block)."""
    return np.ascontiguousarray(At.T) @ block


class PartitionedPsi:
    """psi of the training instances as Dask partitions (persisted on the workers when they
    fit, :func:`ratecons.scans.persisted`), with the label codes partitioned alike
    (:attr:`labels`).

    It stands where the MRC solvers hold psi in memory: ``shape``, rows by index
    (``psi[rows]``: the rows already sent by a scan are served from the client,
    :meth:`remember`, the others fetched), products ``A @ psi`` (one reduction), and
    :meth:`reduce`, one pass of a function over the partitions.
    """

    #: NumPy defers ``ndarray @ psi`` to :meth:`__rmatmul__`
    __array_ufunc__ = None
    partitioned = True

    def __init__(self, psi: Any, y: np.ndarray) -> None:
        self.array = persisted(psi)
        self.codes = np.asarray(y)  # the label codes on the client
        self._labels: tuple[Any, list[Any]] | None = None  # (:attr:`labels`, block futures)
        self._rows: dict[int, np.ndarray] = {}

    @property
    def labels(self) -> Any:
        """The label codes on the workers, with psi's row partitions, in the smallest integer
        type that holds them (:func:`code_type`; :func:`ratecons.scans.client_column`): sent
        once, and again when a block future is no longer ``finished`` (lost with a worker)."""
        self._labels = kept_column(self._labels, lambda: client_column(
            self.codes, self.array.chunks[0], code_type(int(self.codes.max(initial=0))),
            near=self.array))
        return self._labels[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.array.shape[0]), int(self.array.shape[1]))

    @property
    def ndim(self) -> int:
        return 2

    @property
    def partitions(self) -> int:
        return len(self.array.chunks[0])

    def reduce(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``fn(psi_block, y_block, offset, *args)`` on every partition (one pass); the list
        of the partitions' results, in row order."""

        def tasks() -> list[Any]:
            blocks = _with_offsets(list(zip(self.array.to_delayed().ravel(),
                                            self.labels.to_delayed().ravel(), strict=True)),
                                   self.array.chunks[0])
            return [dask.delayed(fn)(P, y, start, *args) for (P, y), start in blocks]

        return self._computed(tasks)

    def _computed(self, tasks: Callable[[], list[Any]]) -> list[Any]:
        """The partitions' ``tasks()`` computed (one pass); built and computed again when a
        worker lost with a block of a column sent to the workers cancelled them
        (:func:`ratecons.scans.made_again`; :attr:`labels` sends the labels again)."""

        def attempt() -> list[Any]:
            built = tasks()
            count_pass()
            return list(dask.compute(*built))

        return made_again(attempt)

    def remember(self, index: np.ndarray, rows: np.ndarray) -> None:
        """Keep rows of psi a scan brought back (they may enter the restricted LP)."""
        for i, row in zip(np.asarray(index).tolist(), rows, strict=True):
            self._rows[i] = row

    def __getitem__(self, index: Any) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64).ravel()
        missing = np.unique([i for i in index.tolist() if i not in self._rows])
        if missing.size:
            count_pass()
            self.remember(missing, np.asarray(self.array[missing].compute()))
        out = np.empty((index.size, self.shape[1]))
        for k, i in enumerate(index.tolist()):
            out[k] = self._rows[i]
        return out

    def moment_sums(self, n_classes: int, label_map: np.ndarray | None,
                    tau_blocks: np.ndarray | None = None) -> np.ndarray:
        """:func:`ratecons.moment_sums.moment_pass` summed over the partitions (one pass)."""
        return np.sum(self.reduce(_moment_block, n_classes, label_map, tau_blocks), axis=0)

    def __rmatmul__(self, A: np.ndarray) -> np.ndarray:
        """A @ psi for a (r, N) matrix A, summed over the partitions (A^T cut alike and sent,
        :func:`ratecons.scans.client_column`)."""
        A = np.asarray(A, dtype=np.float64)
        sent: list[Any] = []  # the futures of A^T's blocks, held until the pass has run

        def tasks() -> list[Any]:
            columns, sent[:] = client_column(A.T, self.array.chunks[0], near=self.array)
            return [dask.delayed(_block_product)(P, At) for P, At in
                    zip(self.array.to_delayed().ravel(), columns.to_delayed().ravel(),
                        strict=True)]

        return np.sum(self._computed(tasks), axis=0)
