"""The setting of the Dask benchmarks that compare evaluations at a fixed model: synthetic
Parquet data (:func:`benchmarks.dask_scale.write_parquet`) read with
:meth:`ratecons.Dataset.from_parquet` on a ``LocalCluster`` of two worker processes, its
features persisted, and the floor: one plain Dask reduction (column sums) over them."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.dask_scale import write_parquet


@contextmanager
def persisted_parquet(rows: int, file_rows: int, worker_memory: str
                      ) -> Iterator[tuple[Any, float]]:
    """(the Dataset, the floor in seconds) while the cluster runs (module docstring); the
    workers use the system allocator for pyarrow (:mod:`benchmarks.dask_scale`)."""
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import ratecons as rc

    dask.config.set({"distributed.nanny.pre-spawn-environ.ARROW_DEFAULT_MEMORY_POOL": "system"})
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=worker_memory,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        folder = Path(tmp)
        write_parquet(folder, rows, file_rows)
        data = rc.Dataset.from_parquet(folder, label="label", groups=["group"])
        data.X = client.persist(data.X)
        wait(data.X)
        start = time.perf_counter()
        da.sum(data.X, axis=0).compute()
        yield data, time.perf_counter() - start
