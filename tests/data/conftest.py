"""Fixtures of the Dask tests (test_dask, test_dask_mrc): a LocalCluster of two workers, and
the tripwire that fails any gathering of Dask features into one process."""

from __future__ import annotations

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
