"""What the client holds per row while the structured chain solves on Dask data (issue 33).

The features stay on the workers, but the structured interior point keeps its per-example
state (scores, pieces' slacks and multipliers, curvature, the smooth rows' terms) as NumPy
vectors on the client (docs/cluster.md, "What keeping the structured chain's per-example
vectors on the workers needs"). This benchmark measures that state: the composition of
:mod:`benchmarks.dask_scale` (logistic loss + the 80% rule, ``method="structured"``) on its
synthetic Parquet data, with ``tracemalloc`` tracing the client's allocations. After every
pass over the features (:meth:`ratecons.scans.DaskRows._compute`) the traced memory is read;
at new highs (at most ``--snapshots`` of them) a snapshot is kept. The largest is printed by
allocation site (the innermost line of ratecons that allocated), in bytes per row, with the
number of live blocks there.

The floor is one N-vector of float64 (8 bytes per row: the scores alone); the ratio of the
peak to it is printed last.

Run: ``python -m benchmarks.dask_client_state --rows 2000000 --time-limit 300``.
"""

from __future__ import annotations

import argparse
import linecache
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.dask_scale import problems, write_parquet

#: bytes per row of the floor: one float64 per example
FLOOR_BYTES = 8.0


class Snapshots:
    """Wrap :meth:`ratecons.scans.DaskRows._compute`: after each pass, a snapshot of the
    client's traced allocations when their total reached a new high by ``grow``."""

    def __init__(self, most: int, grow: float = 1.05) -> None:
        from ratecons import scans

        self.most, self.grow = most, grow
        self.best: tuple[float, Any] = (0.0, None)
        self.passes = 0
        self._scans, self._original = scans.DaskRows, scans.DaskRows._compute
        self.taken = 0

    def __enter__(self) -> Snapshots:
        original = self._original

        def watched(rows: Any, result: Any) -> Any:
            out = original(rows, result)
            self.passes += 1
            current = float(tracemalloc.get_traced_memory()[0])
            if self.taken < self.most and current > self.grow * self.best[0]:
                self.best = (current, tracemalloc.take_snapshot())
                self.taken += 1
            return out

        self._scans._compute = watched
        return self

    def __exit__(self, *exc: object) -> None:
        self._scans._compute = self._original


def by_site(snapshot: Any, rows: int, top: int) -> list[tuple[float, int, str]]:
    """(bytes per row, live blocks, site) of the largest allocation sites in ratecons."""
    sites: dict[str, list[float]] = {}
    for stat in snapshot.statistics("traceback"):
        frame = next((f for f in reversed(stat.traceback) if "/ratecons/" in f.filename),
                     None)
        if frame is None:
            key = "(no ratecons frame: Dask's client, its comms, imports)"
        else:
            where = frame.filename.split("/ratecons/")[-1]
            line = linecache.getline(frame.filename, frame.lineno).strip()[:60]
            key = f"{where}:{frame.lineno}  {line}"
        entry = sites.setdefault(key, [0.0, 0])
        entry[0] += stat.size
        entry[1] += stat.count
    ranked = sorted(((size / rows, int(count), key) for key, (size, count) in sites.items()),
                    reverse=True)
    return ranked[:top]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--file-rows", type=int, default=250_000)
    parser.add_argument("--worker-memory", default="1GB")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--snapshots", type=int, default=8)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)

    import dask
    from distributed import Client, LocalCluster

    import ratecons as rc

    dask.config.set({"distributed.nanny.pre-spawn-environ.ARROW_DEFAULT_MEMORY_POOL": "system"})
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=args.worker_memory,
                         dashboard_address=None) as cluster, Client(cluster):
        folder = Path(tmp)
        write_parquet(folder, args.rows, args.file_rows)
        data = rc.Dataset.from_parquet(folder, label="label", groups=["group"])
        build, method, _ = problems(data)["logistic + 80% rule"]
        problem = build()
        tracemalloc.start(12)
        held = float(tracemalloc.get_traced_memory()[0])
        start = time.perf_counter()
        with Snapshots(args.snapshots) as watch:
            result = problem.solve(method=method, time_limit=args.time_limit)
        elapsed = time.perf_counter() - start
        peak = float(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        print(f"{args.rows:,} rows, logistic + 80% rule, {method}: {result.status} after "
              f"{elapsed:.0f} s and {watch.passes} passes over the features")
        print(f"peak of the client's memory allocated during the solve: "
              f"{(peak - held) / args.rows:.1f} bytes per row (the dataset's labels, groups and "
              f"index arrays, allocated before, not counted)")
        size, snapshot = watch.best
        print(f"largest snapshot: {size / args.rows:.1f} bytes per row live, by site:")
        print(f"{'bytes/row':>10} {'blocks':>7}  site")
        for per_row, count, key in by_site(snapshot, args.rows, args.top):
            print(f"{per_row:10.1f} {count:7d}  {key}")
        ratio = (peak - held) / args.rows / FLOOR_BYTES
        print(f"WORST peak / floor (one float64 N-vector): {ratio:.1f}x")


if __name__ == "__main__":
    main()
