"""Report values on Dask data that once gathered the scores (issue 33): worst-case rates and
Pat&Mat's surrogate threshold of TPR@tau.

Synthetic data (d = 20 standard normal features, a linear label with noise, a binary group)
is written as Parquet files (:func:`benchmarks.dask_scale.write_parquet`), read with
:meth:`ratecons.Dataset.from_parquet` on a ``LocalCluster`` of two worker processes, and its
features persisted. At a fixed linear model (the generating weights, scaled) each value is
computed twice, side by side:

- ``gathered``: the in-memory evaluation the Dask path used before (the scores f(x) of every
  example computed and brought to the client, then the inner maximization or the threshold's
  scan there);
- ``workers``: :mod:`ratecons.dask_worst_case` and
  :meth:`ratecons.dask_metrics.WorkerScores.surrogate_quantile` (the scores persisted on the
  workers, only sums travel).

Each line gives the wall time, the passes over the features and over persisted state
(:func:`ratecons.scans.dask_passes`, :func:`ratecons.scans.dask_state_passes`), the peak of
the memory the client allocated during the call (``tracemalloc``), the time over the floor
(one plain Dask reduction, column sums, over the persisted features) and the difference
between the two values. The worst ratio of ``workers`` to the floor is printed last.

Run: ``python -m benchmarks.dask_reports --rows 2000000``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

import numpy as np

from benchmarks.dask_persisted import persisted_parquet


def _values(data: Any) -> dict[str, tuple[Any, str, float]]:
    """Name -> (the report part, its kind, the row's coefficient sign)."""
    import ratecons as rc

    women = data.group("group", 1)
    return {
        "worst-case recall, chi2 0.1 over the positives": (
            rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data.positives, phi="chi2",
                                                                rho=0.1)), "exact", -1.0),
        "worst-case positive rate of women, KL 0.05": (
            rc.worst_case(rc.positive_rate(women), rc.PhiDivergenceBall(women, phi="kl",
                                                                        rho=0.05)),
            "surrogate", 1.0),
        "worst-case recall, chi2 0.1 over all (conditional)": (
            rc.worst_case(rc.recall(data), rc.PhiDivergenceBall(data, phi="chi2", rho=0.1)),
            "exact", -1.0),
        "Pat&Mat TPR@0.05 surrogate (hinge)": (
            rc.tpr_at_quantile(data, tau=0.05, formulation="pat&mat-np"), "surrogate", 1.0),
    }


def _timed(fn: Any, *args: Any) -> tuple[float, float, int, int, float]:
    """(value, seconds, passes over the features, over state, the client's peak of memory
    allocated during the call in MiB, by ``tracemalloc``: what the client holds)."""
    from ratecons.scans import dask_passes, dask_state_passes

    passes, state = dask_passes(), dask_state_passes()
    tracemalloc.start()
    start = time.perf_counter()
    value = float(fn(*args))
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (value, seconds, dask_passes() - passes, dask_state_passes() - state, peak / 2**20)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--file-rows", type=int, default=250_000)
    parser.add_argument("--worker-memory", default="1GB")
    args = parser.parse_args(argv)

    from ratecons.dask_metrics import WorkerEvaluation
    from ratecons.result import LinearScorer

    with persisted_parquet(args.rows, args.file_rows, args.worker_memory) as (data, floor):
        truth = np.random.default_rng(0).normal(size=data.d)
        scorer = LinearScorer(0.3 * truth, 0.2)
        print(f"{args.rows:,} rows in {data.X.numblocks[0]} partitions, floor {floor:.2f} s")
        print(f"{'value':52s} {'method':9s} {'time':>8s} {'passes':>7s} {'state':>6s} "
              f"{'client':>9s} {'/ floor':>8s} {'|diff|':>9s}")
        worst = (0.0, "")
        for name, (part, kind, coef) in _values(data).items():
            old = _timed(part.evaluate, scorer, kind, coef)
            new = _timed(WorkerEvaluation(scorer).part_value, part, kind, coef)
            for method, (value, seconds, passes, state, growth) in (("gathered", old),
                                                                     ("workers", new)):
                print(f"{name:52s} {method:9s} {seconds:8.2f} {passes:7d} {state:6d} "
                      f"{growth:7.0f} MiB {seconds / floor:8.1f} {abs(value - old[0]):9.1e}")
            if new[1] / floor > worst[0]:
                worst = (new[1] / floor, name)
        print(f"worst ratio of workers to the floor: {worst[0]:.1f} ({worst[1]})")


if __name__ == "__main__":
    main()
