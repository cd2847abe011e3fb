"""Passes over the examples: the one place that walks the rows of a feature matrix.

A solver that works over a score model z = psi(X) w - b needs, per iteration, a handful of sums
over the examples: the scores themselves, products P^T V of per-example vectors (gradients,
Jacobian rows), and the weighted Gram product P^T diag(c) P of a Newton system. :class:`Rows`
offers exactly these over row blocks of a dense (NumPy) or sparse (SciPy CSR) matrix, so that
the memory a pass needs beyond the data is one block, never an N x p copy, and so that another
engine (for example Dask partitions) can stand behind the same methods without a solver
changing.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from functools import cache
from typing import Any, NamedTuple, TypeVar

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk, ssyrk

from .blas_threads import gram_threads
from .dask_types import is_dask

__all__ = ["Rows", "DaskRows", "ScoreSummary", "BLOCK_ROWS", "weighted_gram",
           "sparse_weighted_gram", "client_column", "count_pass", "dask_passes",
           "dask_state_passes", "kept_column", "made_again", "persisted", "stack_rows",
           "take_rows"]

#: rows per block of a pass (a dense block of 16,384 x 100 float64 is 13 MB)
BLOCK_ROWS = 16_384
#: bytes of one dense block of :meth:`Rows.gram`: its scaled copy diag(sqrt(c)) A is made
#: and read by syrk while it is still in the cache. With 500 Nystrom features on the whole
#: Adult split (34,189 rows, one BLAS thread, load 4) a product took 189 ms by blocks of
#: 16,384 rows (65 MB), 167 ms by 4,096 (16 MB), 165 ms by 2,048 and 1,024 (8 and 4 MB),
#: 211 ms by 512
GRAM_BLOCK_BYTES = 8 * 2**20
#: a sparse matrix with p columns and at most SPARSE_GRAM_FILL * sqrt(SPARSE_GRAM_COLUMNS / p)
#: of its cells filled (never more than SPARSE_GRAM_MAX_FILL) gets its weighted Gram product
#: from a compiled pass over each row's nonzeros (:func:`sparse_weighted_gram`); a denser one
#: from BLAS syrk on dense row blocks (a dense copy kept when it takes at most
#: :data:`DENSE_MAX_BYTES`, else each block densified per product). The pass costs about
#: (fill p)^2 / 2 scattered updates per row, syrk p^2 / 2 cached ones, and a scattered update
#: costs more as the p x p result outgrows the caches: on uniform random matrices (one BLAS
#: thread) the pass took 0.23x syrk's time at p = 108 and 10% filled, 0.69x at 20%, 0.30x at
#: p = 300 and 10%, 0.97x at p = 1,000 and 10% (and 0.05x at 2%); on the Adult training
#: split (34,189 x 108, 13% filled) 4.8 ms against 16.3 ms. The rule keeps the pass where it
#: took at most about 0.4x syrk's time.
SPARSE_GRAM_FILL = 0.15
SPARSE_GRAM_COLUMNS = 108
SPARSE_GRAM_MAX_FILL = 0.25
DENSE_MAX_BYTES = 256 * 2**20
#: a syrk of at least GRAM_THREADED_COLUMNS columns and GRAM_THREADED_FROM multiply-adds runs
#: on :func:`ratecons.blas_threads.gram_threads` BLAS threads. One product over dense rows, one
#: thread -> two (2-core machine, medians of 20-30): 34,189 x 500 (500 Nystrom features on the
#: whole Adult split, blocks of :data:`GRAM_BLOCK_BYTES`) 205 -> 157 ms, 5,000 x 500 0.62x,
#: 600 x 500 0.83x, 10,000 x 300 0.85x, 2,000 x 300 0.91x, 1,000 x 300 1.02x, 10,000 x 200
#: 0.98x; and slower with about 100 columns, where OpenBLAS splits syrk poorly: 10,000 x 100
#: 1.6x, 34,189 x 108 1.3x, 5,000 x 100 1.6x. The sparse pass (:func:`sparse_weighted_gram`)
#: stays on one thread: split over two threads by row ranges, the Adult split's product took
#: 2.1 ms against 3.8 ms back to back, but 3.9 ms (median of 110) inside the interior point,
#: whose other work between two products leaves the second thread idle
GRAM_THREADED_COLUMNS = 300
GRAM_THREADED_FROM = 50_000_000
#: Dask features are persisted on the workers (read once per solve, not once per pass) when
#: they take at most this fraction of the workers' total memory limit (of this machine's
#: memory under the local scheduler); larger ones are streamed from their source every pass
PERSIST_MEMORY_FRACTION = 0.4
#: submissions of a persist that the scheduler cancelled (lost dependencies) before giving up
PERSIST_ATTEMPTS = 3


def weighted_gram(A: np.ndarray, c: np.ndarray, *, threaded: bool = True) -> np.ndarray:
    """A^T diag(c) A for rows A (N x p) and weights c >= 0 (rounding below 0 is clipped).

    One symmetric rank-N update (BLAS syrk, half the work of a general product), called on
    whichever of B = diag(sqrt(c)) A and B^T is Fortran-ordered so that BLAS gets it without a
    copy; the result is symmetrized. ``threaded``: whether a large product may take
    :func:`gram_threads_for` BLAS threads (a Dask partition's product does not: its worker
    runs as many partitions side by side as it has threads, :func:`_gram_block`).
    """
    return _symmetric(_gram_upper(A * np.sqrt(np.maximum(c, 0.0))[:, None], threaded))


def _gram_upper(B: np.ndarray, threaded: bool = True) -> np.ndarray:
    """The upper triangle of B^T B by BLAS syrk (single precision for a float32 B), on
    whichever of B and B^T is Fortran-ordered (no copy), with :func:`gram_threads_for` BLAS
    threads if ``threaded`` (else BLAS's own setting, untouched; SciPy's syrk holds the GIL:
    threads of ours would not run it side by side)."""
    syrk = ssyrk if B.dtype == np.float32 else dsyrk
    threads = gram_threads_for(*B.shape) if threaded else 1
    with nullcontext() if threads == 1 else _blas_controller().limit(limits=threads,
                                                                     user_api="blas"):
        if B.flags.f_contiguous:
            return syrk(1.0, B, trans=1, lower=0)
        return syrk(1.0, B.T, trans=0, lower=0)


@cache
def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries, made once (7 us a limit, against
    milliseconds to look the libraries up again)."""
    from threadpoolctl import ThreadpoolController  # (64 ms to import: not at import ratecons)

    return ThreadpoolController()


def _symmetric(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle is that of ``upper``."""
    return np.triu(upper) + np.triu(upper, 1).T


def _gram_by_rows(P: sp.csr_matrix) -> bool:
    """Whether the compiled pass over nonzeros beats syrk (:data:`SPARSE_GRAM_FILL`)."""
    cells = P.shape[0] * P.shape[1]
    fill = min(SPARSE_GRAM_MAX_FILL,
               SPARSE_GRAM_FILL * np.sqrt(SPARSE_GRAM_COLUMNS / max(1, P.shape[1])))
    return P.nnz <= fill * cells


def _fits_dense(P: sp.csr_matrix) -> bool:
    return P.shape[0] * P.shape[1] * 8 <= DENSE_MAX_BYTES


def sparse_weighted_gram(P: sp.csr_matrix, c: np.ndarray) -> np.ndarray:
    """P^T diag(c) P for a CSR matrix P in canonical form (sorted column indices, no
    duplicates) and weights c >= 0 (rounding below 0 counts as 0): one compiled pass over
    each row's nonzeros, on one thread (:data:`GRAM_THREADED_FROM`)."""
    from .numerics.row_kernels import sparse_weighted_gram_upper

    upper = np.zeros((P.shape[1], P.shape[1]))
    sparse_weighted_gram_upper(P.indptr, P.indices, P.data,
                               np.ascontiguousarray(c, dtype=np.float64), upper)
    return _symmetric(upper)


def gram_threads_for(rows: int, columns: int) -> int:
    """The BLAS threads of a syrk over ``rows`` x ``columns``: one below
    :data:`GRAM_THREADED_COLUMNS` columns or :data:`GRAM_THREADED_FROM` multiply-adds, else
    :func:`ratecons.blas_threads.gram_threads`."""
    if columns < GRAM_THREADED_COLUMNS or rows * columns**2 / 2 < GRAM_THREADED_FROM:
        return 1
    return gram_threads()


class ScoreSummary(NamedTuple):
    """The range, mean and mean absolute value of a model's scores over some rows."""

    low: float
    high: float
    mean: float
    mean_abs: float

    @classmethod
    def of(cls, z: np.ndarray) -> ScoreSummary:
        """The summary of the scores ``z`` (at least one)."""
        return cls(float(z.min()), float(z.max()), float(z.mean()), float(np.abs(z).mean()))

    @classmethod
    def pooled(cls, parts: list[tuple[ScoreSummary, int]]) -> ScoreSummary:
        """The summary of the union of row sets given as (summary, number of rows)."""
        rows = sum(n for _, n in parts)
        return cls(min(s.low for s, _ in parts), max(s.high for s, _ in parts),
                   sum(s.mean * n for s, n in parts) / rows,
                   sum(s.mean_abs * n for s, n in parts) / rows)

    @property
    def spread(self) -> float:
        return self.high - self.low


class Rows:
    """A feature matrix P (N x p) seen as row blocks (a :class:`DaskRows` for a Dask array).

    Parameters
    ----------
    P : ndarray or sparse matrix, shape (N, p)
        Converted once to C-ordered float64 (dense) or CSR float64 (sparse; with a dense copy
        for :meth:`gram` when it is small and dense enough, :data:`DENSE_MAX_BYTES`).
    block_rows : int
        Rows per block of :meth:`gram`.
    """

    #: whether every pass is a round trip over partitions (:class:`DaskRows`): then a solver
    #: forms what it can in one pass even when some of it may go unused
    #: (:func:`ratecons.solvers.structured._evaluated`)
    remote = False

    def __new__(cls, P: Any, block_rows: int = BLOCK_ROWS) -> Rows:
        return super().__new__(DaskRows if is_dask(P) else cls)

    def __getnewargs__(self) -> tuple[Any]:
        """Pickling passes P back to :meth:`__new__` (which picks the class from it)."""
        return (self.P,)

    def __init__(self, P: Any, block_rows: int = BLOCK_ROWS) -> None:
        if sp.issparse(P):
            self.P = sp.csr_matrix(P, dtype=np.float64)
            if not self.P.has_canonical_format:  # sorted, no duplicates (the compiled Gram)
                self.P = self.P.copy()
                self.P.sum_duplicates()
            self.by_rows = _gram_by_rows(self.P)
            self.dense = (np.ascontiguousarray(self.P.toarray())
                          if not self.by_rows and _fits_dense(self.P) else None)
        else:
            self.P = np.ascontiguousarray(np.asarray(P, dtype=np.float64))
            self.dense, self.by_rows = self.P, False
        if self.P.ndim != 2:
            raise ValueError(f"Rows needs a 2-D feature matrix; got shape {self.P.shape}.")
        #: P^T, made once: a sparse P's transpose is a new CSC object (no copy of the data),
        #: whose construction cost 0.13-0.18 ms of every product P^T v on the whole Adult split
        #: (about 5% of a structured chain's time there)
        self.T = self.P.T
        self.block_rows = int(block_rows)
        self.single: np.ndarray | None = None  # float32 copy of the dense rows (gram_and_products)

    @property
    def n(self) -> int:
        return int(self.P.shape[0])

    @property
    def p(self) -> int:
        return int(self.P.shape[1])

    def scores(self, w: np.ndarray, b: float = 0.0) -> np.ndarray:
        """z = P w - b, shape (N,)."""
        return np.asarray(self.P @ w).ravel() - b

    def score_summary(self, w: np.ndarray, b: float = 0.0) -> ScoreSummary:
        """The least, largest, mean and mean absolute score of z = P w - b, the scores not
        kept."""
        return ScoreSummary.of(self.scores(w, b))

    def apply(self, W: np.ndarray) -> np.ndarray:
        """P W for a (p,) vector or (p, r) matrix."""
        return np.asarray(self.P @ W)

    def transpose_apply(self, V: np.ndarray) -> np.ndarray:
        """P^T V for per-example values V of shape (N,) or (N, r)."""
        return np.asarray(self.T @ V)

    def squared_norms(self) -> np.ndarray:
        """||P_i||^2 per row, shape (N,)."""
        if sp.issparse(self.P):
            return np.asarray(self.P.multiply(self.P).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.P, self.P)

    def gram(self, c: np.ndarray) -> np.ndarray:
        """P^T diag(c) P (dense p x p) for weights c >= 0: one compiled pass over the sparse
        rows, or syrk over dense row blocks (:data:`SPARSE_GRAM_FILL`)."""
        if self.by_rows:
            return sparse_weighted_gram(self.P, c)
        return self._dense_gram(c, False, self.dense)[0]

    def gram_and_column(self, c: np.ndarray, *, column: bool = True, single: bool = False
                        ) -> tuple[np.ndarray, np.ndarray | None]:
        """(P^T diag(c) P, P^T c) for weights c >= 0 (the column only if ``column``):
        :meth:`gram_and_products` without further columns."""
        return self.gram_and_products(c, None, column=column, single=single)[:2]

    def gram_and_products(self, c: np.ndarray, V: np.ndarray | None, *, column: bool = True,
                          single: bool = False
                          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(P^T diag(c) P, P^T c, P^T V) for weights c >= 0 (the column only if ``column``)
        and per-example columns V (N,) or (N, q), or a list of such blocks side by side (the
        third None when V is None; with a list, of shape (p, q)): in memory
        over dense blocks, the first two in one pass (each scaled block B = diag(sqrt(c)) A
        gives B^T B and B^T sqrt(c) while in the cache), else :meth:`gram` and
        :meth:`transpose_apply`, and P^T V by :meth:`transpose_apply` (over the nonzeros of
        the Adult split, P^T V formed in the compiled Gram pass cost more than SciPy's
        product beside it: 6.4 against 5.6 ms for three columns); a :class:`DaskRows` forms
        all three in one pass over its partitions.

        ``single``: from a float32 copy of the dense rows (made once), each block's products
        in single precision and their sum in double -- about half the time of syrk in double,
        for Newton systems that need no more than about six digits
        (:data:`ratecons.solvers.structured.SINGLE_GRAM_ABOVE`). Ignored without dense rows.
        """
        if isinstance(V, list):
            V = np.column_stack(V)
        products = None if V is None else self.transpose_apply(V)
        if self.by_rows or self.dense is None and not sp.issparse(self.P):
            return self.gram(c), (self.transpose_apply(c) if column else None), products
        if single and self.dense is not None:
            if self.single is None:
                self.single = self.dense.astype(np.float32)
            return (*self._dense_gram(c, column, self.single), products)
        return (*self._dense_gram(c, column, self.dense), products)

    def _dense_gram(self, c: np.ndarray, column: bool, dense: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
        """syrk over row blocks of ``dense`` (None: of the sparse P, densified) of
        :data:`GRAM_BLOCK_BYTES` (the upper triangles summed in double, symmetrized once),
        and (``column``) P^T c from the same scaled blocks."""
        upper, col = np.zeros((self.p, self.p)), np.zeros(self.p)
        root = np.sqrt(np.maximum(np.asarray(c, dtype=np.float64), 0.0))
        if dense is not None:
            root = root.astype(dense.dtype, copy=False)
        rows = max(1, GRAM_BLOCK_BYTES // (8 * max(1, self.p)))
        for start in range(0, self.n, rows):
            stop = min(start + rows, self.n)
            block = dense[start:stop] if dense is not None else self.P[start:stop].toarray()
            B = block * root[start:stop, None]
            upper += _gram_upper(B)
            if column:
                col += root[start:stop] @ B
        return _symmetric(upper), (col if column else None)


# ---------------------------------------------------------------------- Dask partitions
#: passes over Dask features since import (each scan computes one; :func:`dask_passes`)
_PASSES = [0]
#: passes over per-example state persisted on the workers (the robust loss's margins), which
#: read no features (:func:`dask_state_passes`)
_STATE_PASSES = [0]
#: the last persisted feature array, by its Dask name (kept so that the next step's scans,
#: which build the same graph, find its partitions still in worker memory)
_PERSISTED: dict[str, Any] = {}


def dask_passes() -> int:
    """How many passes over Dask-backed features the scans have made (benchmarks)."""
    return _PASSES[0]


def dask_state_passes() -> int:
    """How many passes over per-example state persisted on the workers (no features read)
    have been made (benchmarks)."""
    return _STATE_PASSES[0]


def count_pass(features: bool = True) -> None:
    """Count one pass over Dask-backed data made outside :class:`DaskRows` (the MRC
    reductions of :mod:`ratecons.dask_moments`, the robust loss's
    :mod:`ratecons.solvers.dro_dask`): over the features, or (``features=False``) over
    per-example state on the workers only."""
    (_PASSES if features else _STATE_PASSES)[0] += 1


def _client() -> Any:
    """The active ``distributed`` Client, or None (the local scheduler; also when a
    ``dask.config`` scheduler other than a Client is set)."""
    try:
        import dask
        from distributed import default_client

        if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
            return None
        return default_client()
    except (ImportError, ValueError):
        return None


def client_column(values: np.ndarray, chunks: tuple[int, ...], dtype: Any = None,
                  near: Any = None) -> tuple[Any, list[Any]]:
    """A per-example client vector (or N x r matrix) as a Dask array cut into the row
    partitions ``chunks``, and the futures of its blocks (empty without a Client).

    The blocks are row views of ``values`` (``da.from_array`` copies the whole array first,
    one more N-sized copy on the client). On a ``distributed`` Client they are sent to the
    workers directly (``scatter``): as data in a graph they went through the scheduler, which
    kept them as long as the array lived -- on a ``LocalCluster`` another copy in the client's
    process (57 bytes per row of the 2,000,000-row composition of docs/cluster.md), and a
    warning from ``distributed`` for every graph above 10 MB (at 20,000,000 rows, 153 MiB per
    column of the chain's rows). Scattered blocks cannot be recomputed: a caller that keeps
    the array checks the futures (lost with a worker) before using it again.

    ``near``: a Dask array persisted with the same row partitions (the features, psi); each
    block is then sent to a worker that holds its partition, so that a pass reading both
    moves neither (left to ``scatter``'s round robin, half of MRC's label blocks were on the
    other of two workers, and a pass over psi at 2,000,000 rows took 0.22 s against 0.19 s).
    """
    from dask.array.core import Array

    values = np.asarray(values, dtype=dtype)
    stops = np.cumsum(chunks)
    blocks: list[Any] = [values[start:stop] for start, stop in
                         zip(np.concatenate([[0], stops[:-1]]), stops)]
    name = f"client-columns-{uuid.uuid4().hex}"
    keys = [(name, k, *(0,) * (values.ndim - 1)) for k in range(len(blocks))]
    client = _client()
    futures: list[Any] = []
    if client is not None:
        blocks = futures = _scattered(client, dict(zip(keys, blocks, strict=True)),
                                      _holders(client, near, chunks))
    return Array(dict(zip(keys, blocks, strict=True)), name,
                 (tuple(chunks), *((size,) for size in values.shape[1:])), dtype=values.dtype,
                 meta=np.empty((0,) * values.ndim, dtype=values.dtype)), futures


def kept_column(kept: tuple[Any, list[Any]] | None,
                send: Callable[[], tuple[Any, list[Any]]]) -> tuple[Any, list[Any]]:
    """``kept`` (a :func:`client_column`'s array and block futures) while every block is on
    the workers, else ``send()``: sent once, and again when a worker was lost with a block
    (its future no longer ``finished``), which the scheduler cannot rebuild."""
    if kept is None or any(future.status != "finished" for future in kept[1]):
        return send()
    return kept


Outcome = TypeVar("Outcome")


def made_again(attempt: Callable[[], Outcome]) -> Outcome:
    """``attempt()``; made again (at most :data:`PERSIST_ATTEMPTS` times) when the scheduler
    cancels it: a worker lost with a block of a scattered column (:func:`client_column`),
    which cannot be recomputed. ``attempt`` builds its graph anew each time, from columns
    sent again (a caller that keeps a column sends it again when a block future is no longer
    ``finished``)."""
    from concurrent.futures import CancelledError

    for _ in range(PERSIST_ATTEMPTS - 1):
        try:
            return attempt()
        except CancelledError:
            continue
    return attempt()


def _holders(client: Any, near: Any, chunks: tuple[int, ...]) -> list[str] | None:
    """The address of a worker that holds each row partition of the persisted array ``near``
    (None without ``near``, when its row partitions are not ``chunks``, or when a partition is
    not held in memory)."""
    if near is None or tuple(near.chunks[0]) != tuple(chunks):
        return None
    from distributed import futures_of

    by_key = {future.key: future for future in futures_of(near)}
    keys = [row[0] if isinstance(row, list) else row for row in near.__dask_keys__()]
    if not keys or any(key not in by_key for key in keys):
        return None
    who = client.who_has([by_key[key] for key in keys])
    if any(not who.get(key) for key in keys):
        return None
    return [sorted(who[key])[0] for key in keys]


def _scattered(client: Any, blocks: dict[Any, np.ndarray], holders: list[str] | None = None
               ) -> list[Any]:
    """``client.scatter(blocks)`` to the workers directly, under the blocks' keys (the array's
    own: a pass then reads them with no task in between; under keys of their own, each block
    was one more task per pass, 0.35 s against 0.21 s per pass over MRC's psi at 2,000,000
    rows), each block to its worker of ``holders`` when given; made again (at most
    :data:`PERSIST_ATTEMPTS` times, after 0.5 s, then 1 s) when a worker it chose is gone (the
    connection refused or reset: the scheduler has not yet removed a worker that died), the
    last time to the workers ``scatter`` chooses."""
    for attempt in range(PERSIST_ATTEMPTS - 1):
        try:
            return _scatter_to(client, blocks, holders)
        except OSError:  # distributed's CommClosedError too
            time.sleep(0.5 * 2 ** attempt)
    return _scatter_to(client, blocks, None)


def _scatter_to(client: Any, blocks: dict[Any, np.ndarray], holders: list[str] | None
                ) -> list[Any]:
    """The futures of the blocks in order: one ``scatter``, or one per holding worker."""
    if holders is None:
        sent = client.scatter(blocks, direct=True)
    else:
        sent = {}
        for worker in sorted(set(holders)):
            sent.update(client.scatter(
                {key: block for (key, block), holder in zip(blocks.items(), holders,
                                                            strict=True) if holder == worker},
                workers=[worker], direct=True))
    return [sent[key] for key in blocks]


def _memory_budget(client: Any) -> float:
    """Bytes of features worth persisting: a fraction of the Client's workers' memory limits,
    or of this machine's memory under the local scheduler."""
    if client is not None:
        workers = client.scheduler_info()["workers"].values()
        total = float(sum(w.get("memory_limit") or 0 for w in workers))
    else:
        total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return PERSIST_MEMORY_FRACTION * total


def _persist_complete(P: Any, client: Any) -> Any:
    """P.persist(), waited for on a Client; submitted again (at most
    :data:`PERSIST_ATTEMPTS` times) when the scheduler cancels it for lost dependencies (a
    worker lost, or partitions of the same graph released by a finished computation while
    this one was being submitted: seen on Parquet-backed features)."""
    if client is None:
        return P.persist()
    from concurrent.futures import CancelledError

    from distributed import wait

    for attempt in range(PERSIST_ATTEMPTS):
        done = P.persist()
        try:
            wait(done)
            return done
        except CancelledError:
            if attempt + 1 == PERSIST_ATTEMPTS:
                raise
    return done


def persisted(P: Any) -> Any:
    """P persisted on the workers when it fits (:data:`PERSIST_MEMORY_FRACTION`), else P.

    The last persisted array is kept (by name and scheduler), so that the scans of the next
    step or evaluation, which build the same graph, find it in memory; it is released when
    another one has been persisted (after that one is complete: it may be computed from it).
    """
    client = _client()
    key = f"{P.name}@{'local' if client is None else client.id}"
    if key in _PERSISTED:
        return _PERSISTED[key]
    if P.nbytes > _memory_budget(client):
        return P
    done = _persist_complete(P, client)
    _PERSISTED.clear()  # the previous solve's features leave the workers' memory
    _PERSISTED[key] = done
    _PASSES[0] += 1
    return done


#: per-partition results of a Dask pass (P^T V, Gram products) summed on the client up to this
#: many bytes, else in a tree on the workers (two more layers of tasks: P^T v over 583 x 10 rows
#: in 3 partitions, two threads, 45 ms by ``P.T @ v``, 34 ms in a tree, 27 ms on the client)
CLIENT_SUM_BYTES = 64 * 2**20


def _product_block(block: np.ndarray, W: np.ndarray) -> np.ndarray:
    """A W of one partition A: its scores (W a p-vector) or products (W p x r)."""
    return block @ W


def _summary_block(block: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    """The :class:`ScoreSummary` of one partition's scores and their count, (1, 5)."""
    z = block @ w - b
    return np.array([[*ScoreSummary.of(z), z.size] if z.size else [0.0] * 5])


def _transposed_product_block(block: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """A^T C of one partition A and its rows C (N_A x r) of per-example columns: (1, p, r)."""
    return (block.T @ columns)[None]


def _gram_block(block: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A^T diag(c) A of one partition A, shape (1, p, p), on the BLAS threads its worker
    gives each task (one under a ``distributed`` nanny): the worker runs as many partitions
    side by side as it has threads, and :data:`ratecons.settings.GRAM_THREADS` (every core)
    on each would ask for threads times cores (threadpoolctl's limit is process-wide, so
    tasks side by side would also reset each other's)."""
    return weighted_gram(block, c.ravel(), threaded=False)[None]


def _gram_and_products_block(block: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """[A^T diag(c) A | A^T C] of one partition A and its columns C (N_A, 1 + q), the first
    the weights c: shape (1, p, p + 1 + q); the Gram product as in :func:`_gram_block`."""
    return np.concatenate([weighted_gram(block, columns[:, 0], threaded=False),
                           block.T @ columns], axis=1)[None]


class DaskRows(Rows):
    """A Dask array P (N x p, row partitions, one chunk of columns) seen as its partitions.

    Every method is one pass, one task per partition, on the active ``distributed`` Client (the
    local scheduler without one): :meth:`gram` (with P^T c and P^T V beside it,
    :meth:`gram_and_products`) and :meth:`transpose_apply` sum the partitions' products
    (:data:`CLIENT_SUM_BYTES`); :meth:`scores` and :meth:`apply` return the per-example results
    to the caller. Per-example vectors (scores, weights) thus travel between the client and the
    workers, O(N) memory on the client (the current limit); the features never leave the workers.
    """

    remote = True

    def __init__(self, P: Any, block_rows: int = BLOCK_ROWS) -> None:
        if P.ndim != 2:
            raise ValueError(f"Rows needs a 2-D feature matrix; got shape {P.shape}.")
        P = P.astype(np.float64)
        self.P = persisted(P.rechunk({1: -1}) if len(P.chunks[1]) > 1 else P)
        self.dense, self.by_rows = None, False
        self.block_rows = int(block_rows)

    @property
    def partitions(self) -> int:
        return len(self.P.chunks[0])

    def _split(self, V: np.ndarray) -> Any:
        """V cut into the partitions of P and sent (:func:`client_column`). V must not change
        until the pass has run; a pass that loses a block with a worker is made again
        (:meth:`_passed`)."""
        return client_column(V, self.P.chunks[0], np.float64)[0]

    def _compute(self, result: Any) -> np.ndarray:
        _PASSES[0] += 1
        return np.asarray(result.compute())

    def _passed(self, build: Callable[[], Any]) -> np.ndarray:
        """``self._compute(build())``, built and computed again when the scheduler cancels it
        (:func:`made_again`: a worker lost with a block of the client's columns, which were
        scattered, :meth:`_split`)."""
        return made_again(lambda: self._compute(build()))

    def _products(self, W: np.ndarray) -> np.ndarray:
        """P W, one task per partition (``P @ W`` adds a layer of tasks: 40 ms, not 19 ms,
        over 583 x 10 rows in 3 partitions on a LocalCluster of two threads)."""
        W = np.asarray(W, dtype=np.float64)
        columns = W.reshape(self.p, -1)
        return self._compute(self.P.map_blocks(_product_block, columns, chunks=(
            self.P.chunks[0], columns.shape[1:]), meta=np.empty((0, 0)))).reshape(
            (self.n,) + W.shape[1:])

    def _summed(self, block: Callable[..., np.ndarray], columns: np.ndarray,
                shape: tuple[int, ...]) -> np.ndarray:
        """The sum over the partitions A of ``block(A, C)`` (shape ``shape``), C the rows of
        ``columns`` (N x r) of A: sent to the workers (:meth:`_split`), each partition's result
        summed on the client (:data:`CLIENT_SUM_BYTES`) or in a tree on the workers."""
        import dask.array as da

        def build() -> Any:
            stack = da.map_blocks(block, self.P, self._split(columns), new_axis=2,
                                  chunks=((1,) * self.partitions, (shape[0],), (shape[1],)),
                                  meta=np.empty((0, 0, 0)))
            small = self.partitions * np.prod(shape) * 8 <= CLIENT_SUM_BYTES
            return stack if small else stack.sum(axis=0)[None]

        return self._passed(build).sum(axis=0)

    def scores(self, w: np.ndarray, b: float = 0.0) -> np.ndarray:
        return self._products(w).ravel() - b

    def score_summary(self, w: np.ndarray, b: float = 0.0) -> ScoreSummary:
        """One task per partition: its summary travels, not the scores (``P @ w - b`` gave
        its key another task each pass: Dask's "different run_spec" warning)."""
        parts = self._compute(self.P.map_blocks(
            _summary_block, np.asarray(w, dtype=np.float64), float(b),
            chunks=((1,) * self.partitions, (5,)), meta=np.empty((0, 0))))
        return ScoreSummary.pooled([(ScoreSummary(*part[:4]), int(part[4])) for part in parts
                                    if part[4] > 0])

    def apply(self, W: np.ndarray) -> np.ndarray:
        return self._products(W)

    def transpose_apply(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        columns = V.reshape(self.n, -1)
        product = self._summed(_transposed_product_block, columns, (self.p, columns.shape[1]))
        return product.reshape((self.p,) + V.shape[1:])

    def squared_norms(self) -> np.ndarray:
        return self._compute((self.P * self.P).sum(axis=1))

    def gram(self, c: np.ndarray) -> np.ndarray:
        return self._summed(_gram_block, np.asarray(c)[:, None], (self.p, self.p))

    def gram_and_products(self, c: np.ndarray, V: np.ndarray | None, *, column: bool = True,
                          single: bool = False
                          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(P^T diag(c) P, P^T c, P^T V) in one pass: each partition sends its p x p product
        and its products with c and the columns of V side by side (``single`` is ignored: the
        partitions' products are in double precision). The columns sent, [c | V], are one
        array written once (V's blocks, when a list, go into it without a stacked copy, and
        the list is emptied: blocks the caller no longer holds are let go during the pass)."""
        if V is None and not column:
            return self.gram(c), None, None
        p = self.p
        blocks = [c] + ([] if V is None else V if isinstance(V, list) else [V])
        widths = [int(np.prod(np.shape(b)[1:])) for b in blocks]
        given = np.empty((self.n, sum(widths)))
        start = 0
        for block, width in zip(blocks, widths, strict=True):
            given[:, start:start + width] = np.reshape(block, (self.n, width))
            start += width
        del blocks, block
        shape = (p, given.shape[1] - 1) if isinstance(V, list) else (p,) + np.shape(V)[1:]
        if isinstance(V, list):
            V.clear()
        both = self._summed(_gram_and_products_block, given, (p, p + given.shape[1]))
        return (both[:, :p], both[:, p] if column else None,
                None if V is None else both[:, p + 1:].reshape(shape))


def stack_rows(blocks: list[Any]) -> Any:
    """The row blocks of one or more feature matrices stacked: dense, CSR, or Dask (lazy)."""
    if any(is_dask(block) for block in blocks):
        import dask.array as da

        return blocks[0] if len(blocks) == 1 else da.concatenate(blocks, axis=0)
    if any(sp.issparse(block) for block in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.vstack([np.asarray(b) for b in blocks])


def take_rows(P: Any, rows: np.ndarray) -> Any:
    """P[rows]; all the rows of a Dask array in order are P itself (no gather, no shuffle)."""
    if is_dask(P) and rows.size == P.shape[0] and np.array_equal(rows, np.arange(rows.size)):
        return P
    return P[rows]
