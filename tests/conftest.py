"""Settings of the whole test run (``pytest -q -n 2 --dist loadfile`` on two cores).

- One BLAS thread per process: the two xdist workers already fill the two cores, and OpenBLAS's
  second thread in each only oversubscribes them (the library runs its interior-point solvers
  on one thread for the same reason, :data:`ratecons.solvers.interior.single_blas_thread`). The
  variables are set before NumPy loads, so the subprocesses the tests start (the benchmarks,
  the CLI, Dask's worker processes) inherit them; ``threadpool_limits`` covers a NumPy already
  loaded by a plugin.
- The files with tests marked ``slow`` are handed out first (most slow tests first; a file's
  tests stay together and in order): with ``--dist loadfile`` a long file collected last left
  one core idle while the other finished it.
- Hypothesis draws the same examples on every run (profile ``repeatable``: derandomized, the
  seed from each test's own code), so a run on a fresh machine tests what the last run here
  tested. ``pytest --hypothesis-profile explore`` draws new examples each run, to look for
  failures; a failure it finds becomes an ``@example`` of its test.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from hypothesis import settings  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402 - after the variables above

threadpool_limits(limits=1, user_api="blas")

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


def pytest_collection_modifyitems(items: list) -> None:
    """Files with more ``slow`` tests first, the others after them in collection order."""
    slow: dict = {}
    first: dict = {}
    for position, item in enumerate(items):
        first.setdefault(item.path, position)
        slow[item.path] = slow.get(item.path, 0) + (item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: (-slow[item.path], first[item.path]))
