"""Fixtures of the Dask tests (test_dask, test_dask_mrc, test_dask_robust, test_dask_hinge): a
LocalCluster of two workers, the tripwires that fail any gathering of Dask features (or of any
per-example vector) into one process, and a cluster of three worker processes that loses one
in the middle of a solve."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

#: a 2-D Dask array with more rows than this may not become a NumPy array in a solve
GATHER_ROWS = 100


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def no_gather(monkeypatch):
    """Refuse the conversion of Dask features to NumPy (more than GATHER_ROWS rows)."""
    da = pytest.importorskip("dask.array")
    original = da.Array.__array__

    def guarded(self, *args, **kwargs):
        if self.ndim == 2 and self.shape[0] > GATHER_ROWS:
            raise AssertionError(f"Dask features of shape {self.shape} were gathered")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(da.Array, "__array__", guarded)


#: seconds a solve may take after a worker was killed before the test calls it a hang
HANG_SECONDS = 120


@pytest.fixture
def lose_a_worker():
    """A LocalCluster of three worker processes with its Client, and ``run(solve)``: calls
    ``solve()`` in a thread, kills one worker process (SIGKILL) ``delay`` seconds after the
    solve's first pass over Dask data, and returns what the solve returned or raised; a solve
    still running :data:`HANG_SECONDS` later fails the test (a hang), and one that ended
    before the kill fails it too (nothing was tested)."""
    distributed = pytest.importorskip("distributed")
    from ratecons.scans import dask_passes

    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:

        def run(solve: Callable[[], Any], delay: float = 0.5) -> Any:
            start = dask_passes()
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                future = pool.submit(solve)
                while dask_passes() == start and not future.done():
                    time.sleep(0.005)
                time.sleep(delay)
                assert not future.done(), "the solve ended before a worker could be killed"
                victim = next(iter(client.run(os.getpid).values()))
                os.kill(victim, signal.SIGKILL)
                try:
                    return future.result(timeout=HANG_SECONDS)
                except concurrent.futures.TimeoutError:  # pragma: no cover - the failure
                    pytest.fail("the solve hung after a worker was killed")
                except Exception as exc:  # noqa: BLE001 - returned to the test to judge
                    return exc

        yield run


@pytest.fixture
def no_vectors(monkeypatch):
    """:func:`install_tripwire` for the whole test."""
    return install_tripwire(monkeypatch)


def install_tripwire(monkeypatch) -> list[int]:
    """Refuse any Dask array of more than GATHER_ROWS rows becoming NumPy, by np.asarray or
    .compute() (features or per-example vectors), and count the N-vectors sent to the
    workers, as data of a graph or scattered (the list returned)."""
    da = pytest.importorskip("dask.array")
    from ratecons import scans

    scattered = scans._scattered
    original, computed, split = da.Array.__array__, da.Array.compute, da.from_array
    sent = []

    def check(array):
        if array.shape and array.shape[0] > GATHER_ROWS:
            raise AssertionError(f"a Dask array of shape {array.shape} was gathered")

    def guarded(self, *args, **kwargs):
        check(self)
        return original(self, *args, **kwargs)

    def guarded_compute(self, *args, **kwargs):
        check(self)
        return computed(self, *args, **kwargs)

    def counted(x, *args, **kwargs):
        if np.ndim(x) == 1 and len(x) > GATHER_ROWS:
            sent.append(len(x))
        return split(x, *args, **kwargs)

    monkeypatch.setattr(da.Array, "__array__", guarded)
    monkeypatch.setattr(da.Array, "compute", guarded_compute)
    def counted_scatter(client, blocks, *args):
        rows = sum(len(block) for block in blocks.values())
        if all(np.ndim(block) == 1 for block in blocks.values()) and rows > GATHER_ROWS:
            sent.append(rows)
        return scattered(client, blocks, *args)

    monkeypatch.setattr(da, "from_array", counted)
    monkeypatch.setattr(scans, "_scattered", counted_scatter)
    return sent
