"""Solves on Dask-backed data (issue 33): time, passes, worker memory, and the floor.

Synthetic data (d = 20 standard normal features, a linear label with noise, a binary group)
is written as Parquet files of ``--file-rows`` rows each to a temporary directory and read back
with :meth:`ratecons.Dataset.from_parquet` on a ``LocalCluster`` whose workers have
``--worker-memory`` each. Four problems are solved:

- composition: logistic loss + the 80% rule (``method="structured"``, the generic chain);
- robust loss: chi-square ball, logistic loss (``method="lbfgs"``);
- hinge: chi-square ball, hinge loss (``method="lbfgs"``; its kink-set phase and refitted
  certificate bring only the rows nearest the kink to the client);
- mrc: a binary minimax risk classifier, LP (4) by CCG (``method="ccg"``; the moment set is
  built inside the timed solve: its estimates are passes too).

For each it prints the wall time, the passes over the data (:func:`ratecons.scans.dask_passes`
plus the Dask results converted to NumPy, :class:`CountConversions`), the passes over
per-example state persisted on the workers that read no features (``state``: the robust
loss's dual search, :func:`ratecons.scans.dask_state_passes`; the time per pass is the wall
time over the passes over the data, these included in it),
the peak memory of each worker (the largest process memory its nanny reported while solving;
the workers use the system allocator for pyarrow, ``--arrow-pool``: pyarrow's default pool
kept freed Parquet buffers as unmanaged memory, which paused 600 MB workers 22 times in two
evaluations at 2M rows and kept 1 GB workers paused at 20M rows)
and the client's memory growth during the solve (per-example vectors held by the client),
the time per pass divided by the floor: one plain Dask reduction (column sums) over the same
Parquet files, and (unless ``--no-memory``) the time of the same solve in memory and the gap
between the two objectives. The worst ratio is printed last. ``--sample-start off,default``
solves the composition twice in the same cluster, without and with the start from a row
sample (:mod:`ratecons.sample_start`), and prints how the sample was used.

Run: ``python -m benchmarks.dask_scale --rows 2000000`` (``--rows 20000000`` and
``50000000`` need the disk space: 3.4 GB and 8.5 GB of float64 before compression).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

D = 20


def write_parquet(folder: Path, rows: int, file_rows: int, seed: int = 0) -> float:
    """Write the synthetic data in files of ``file_rows`` rows; return its size in bytes as
    float64 (features, label and group)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    truth = rng.normal(size=D)
    for k, start in enumerate(range(0, rows, file_rows)):
        m = min(file_rows, rows - start)
        X = rng.normal(size=(m, D))
        frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(D)])
        frame["label"] = (X @ truth + rng.normal(size=m) > 0).astype(np.int8)
        frame["group"] = (rng.random(m) < 0.4).astype(np.int8)
        frame.to_parquet(folder / f"part-{k:05d}.parquet", index=False)
    return rows * (D + 2) * 8.0


class CountConversions:
    """Count Dask results turned into NumPy arrays (``np.asarray(X @ w)`` and the like): the
    passes of a solver whose products go through Dask arrays directly (the robust loss's
    DROProgram) rather than through the scans, which count their own."""

    def __init__(self) -> None:
        import dask.array as da

        self.count, self._array = 0, da.Array
        self._original = da.Array.__array__

    def __enter__(self) -> CountConversions:
        original = self._original

        def counted(array, *args, **kwargs):
            self.count += 1
            return original(array, *args, **kwargs)

        self._array.__array__ = counted
        return self

    def __exit__(self, *exc: object) -> None:
        self._array.__array__ = self._original


class PeakMemory:
    """Poll each worker's process memory (as its nanny reports it) and this (the client's)
    process memory in a thread; ``client_growth`` is the client's peak over its memory at the
    start (the solve's per-example vectors and results)."""

    def __init__(self, client, every: float = 0.2) -> None:
        import psutil

        self.client, self.every = client, every
        self.peak: dict[str, float] = {}
        self._process = psutil.Process()
        self._client_start = float(self._process.memory_info().rss)
        self.client_growth = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for address, info in self.client.scheduler_info()["workers"].items():
                used = float(info.get("metrics", {}).get("memory", 0.0))
                self.peak[address] = max(self.peak.get(address, 0.0), used)
            growth = float(self._process.memory_info().rss) - self._client_start
            self.client_growth = max(self.client_growth, growth)
            self._stop.wait(self.every)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def floor_seconds(folder: Path, repeats: int = 3) -> float:
    """One plain Dask reduction over the Parquet files (best of ``repeats``)."""
    import dask.dataframe as dd

    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        dd.read_parquet(folder).sum().compute()
        best = min(best, time.perf_counter() - start)
    return best


def load_in_memory(folder: Path):
    """The same rows as an in-memory Dataset (pandas reads the Parquet files)."""
    import pandas as pd

    import ratecons as rc

    frame = pd.read_parquet(folder)
    return rc.Dataset.from_pandas(frame, label="label", groups=["group"])


def distributed_off():
    """The in-memory solve's own process only (nothing is submitted to the cluster)."""
    import dask

    return dask.config.set(scheduler="sync")


def problems(data):
    """Label -> (a function building the problem, method, the --only name)."""
    import ratecons as rc

    def composition():
        women, men = data.group("group", 1), data.group("group", 0)
        return rc.Problem(minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-4),
                          subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)])

    def robust():
        ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)
        return rc.Problem(minimize=rc.robust_loss(ball, loss="logistic"),
                          model=rc.LinearModel(l2=1e-4))

    def hinge():
        ball = rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)
        return rc.Problem(minimize=rc.robust_loss(ball, loss="hinge"),
                          model=rc.LinearModel(l2=1e-4))

    def mrc():
        return rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(data)))

    return {"logistic + 80% rule": (composition, "structured", "composition"),
            "robust chi2 logistic": (robust, "lbfgs", "robust"),
            "robust chi2 hinge": (hinge, "lbfgs", "hinge"),
            "binary MRC": (mrc, "ccg", "mrc")}


def metrics_line(client, result, data) -> str:
    """``result.metrics(data)`` timed, with its passes and the client's memory growth."""
    from ratecons.scans import dask_passes, dask_state_passes

    start, passes, state = time.perf_counter(), dask_passes(), dask_state_passes()
    with PeakMemory(client) as peak, CountConversions() as conversions:
        found = result.metrics(data)
    return (f"  metrics(data): {time.perf_counter() - start:.1f} s, "
            f"{dask_passes() - passes + conversions.count} passes over the features, "
            f"{dask_state_passes() - state} over state, client +"
            f"{peak.client_growth / 2**20:.0f} MiB, worker peak "
            f"{max(peak.peak.values(), default=0.0) / 2**20:.0f} MiB; "
            + ", ".join(f"{k} {v:.6f}" for k, v in found.items()))


def _sample_start(value: str) -> bool | int | None:
    """``--sample-start``'s value as the solve's option."""
    if value == "default":
        return None
    return False if value == "off" else int(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--file-rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="1GB")
    parser.add_argument("--only", choices=["composition", "robust", "hinge", "mrc"], default=None)
    parser.add_argument("--floor-repeats", type=int, default=3,
                        help="plain reductions timed for the floor (the best is kept)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds per Dask solve (it then ends at its best point so far)")
    parser.add_argument("--stream", action="store_true",
                        help="never persist: every pass reads the Parquet files (out of core)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the in-memory solves of the same problems (the comparison)")
    parser.add_argument("--arrow-pool", default="system",
                        help="ARROW_DEFAULT_MEMORY_POOL of the workers ('default' keeps "
                             "pyarrow's own, which holds on to freed Parquet buffers)")
    parser.add_argument("--sample-start", default="default",
                        help="comma-separated sample_start values of the composition's solves, "
                             "run in turn in the same cluster: 'default' (the chain's own "
                             "threshold), 'off', or a sample's rows (e.g. 'off,default')")
    parser.add_argument("--metrics", action="store_true",
                        help="after each solve, time result.metrics(data) and measure the "
                             "client's memory growth during it")
    args = parser.parse_args(argv)

    import dask
    import distributed

    import ratecons as rc
    from ratecons import scans
    from ratecons.scans import dask_passes, dask_state_passes

    if args.stream:
        scans.PERSIST_MEMORY_FRACTION = 0.0
    if args.arrow_pool != "default":  # set in each worker process before it starts
        dask.config.set({"distributed.nanny.pre-spawn-environ.ARROW_DEFAULT_MEMORY_POOL":
                         args.arrow_pool})

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        size = write_parquet(folder, args.rows, args.file_rows)
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, memory_limit=args.worker_memory,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            limit = sum(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
            streamed = args.stream or args.rows * D * 8 > scans.PERSIST_MEMORY_FRACTION * limit
            print(f"rows {args.rows:,}, d = {D}: {size / 2**20:.0f} MiB as float64 in "
                  f"{-(-args.rows // args.file_rows)} Parquet files; {args.workers} workers, "
                  f"{limit / 2**20:.0f} MiB of worker memory in total "
                  f"({'below' if limit < size else 'above'} the data's size); features "
                  f"{'streamed from Parquet every pass' if streamed else 'persisted'}")
            floor = floor_seconds(folder, args.floor_repeats)
            print(f"floor: one plain Dask reduction over the Parquet files: {floor:.2f} s")
            data = rc.Dataset.from_parquet(folder, label="label", groups=["group"])
            in_memory = None if args.no_memory else problems(load_in_memory(folder))
            header = (f"{'problem':<22} {'method':<10} {'status':<16} {'time s':>8} "
                      f"{'passes':>6} {'state':>6} {'s/pass':>7} {'/floor':>7} "
                      f"{'peak MiB/worker':>16} "
                      f"{'client MiB':>10} "
                      f"{'objective':>12} {'memory s':>9} {'obj gap':>8}")
            print(header)
            ratios = []
            runs = [(label, build, method, {})
                    for label, (build, method, name) in problems(data).items()
                    if not args.only or args.only == name]
            runs = [(f"{label} [{value}]" if method == "structured" else label, build, method,
                     {"sample_start": _sample_start(value)} if method == "structured" else {})
                    for label, build, method, _ in runs
                    for value in (args.sample_start.split(",") if method == "structured"
                                  else ["-"])]
            for label, build, method, options in runs:
                start, passes = time.perf_counter(), dask_passes()
                state = dask_state_passes()
                with PeakMemory(client) as peak, CountConversions() as conversions:
                    result = build().solve(method=method, time_limit=args.time_limit,
                                           **options)
                elapsed = time.perf_counter() - start
                passes = dask_passes() - passes + conversions.count
                state = dask_state_passes() - state
                worst_worker = max(peak.peak.values(), default=0.0) / 2**20
                per_pass = elapsed / max(passes, 1)
                ratios.append((per_pass / floor, label))
                compared = f"{'-':>9} {'-':>8}"
                if in_memory is not None:
                    start = time.perf_counter()
                    with distributed_off():
                        reference = in_memory[label.split(" [")[0]][0]().solve(
                            method=method, **options)
                    gap = abs(reference.objective - result.objective)
                    compared = f"{time.perf_counter() - start:>9.1f} {gap:>8.1e}"
                print(f"{label:<22} {method:<10} {result.status:<16} {elapsed:>8.1f} "
                      f"{passes:>6} {state:>6} {per_pass:>7.3f} {per_pass / floor:>7.2f} "
                      f"{worst_worker:>16.0f} {peak.client_growth / 2**20:>10.0f} "
                      f"{result.objective:>12.6f} {compared}")
                used = result.certificate.details.get("sample_start")
                if used:
                    print(f"  sample start: {used.get('rows')} rows, "
                          f"{used.get('seconds', 0.0):.1f} s, {used.get('used')}; "
                          f"MM steps on all rows {result.certificate.details['mm_iterations']}, "
                          "interior-point iterations "
                          f"{result.certificate.details['interior_iterations']}")
                if args.metrics and result.has_model:
                    print(metrics_line(client, result, data))
    if ratios:
        ratio, label = max(ratios)
        print(f"WORST time per pass / floor: {ratio:.2f} ({label})")


if __name__ == "__main__":
    main()
