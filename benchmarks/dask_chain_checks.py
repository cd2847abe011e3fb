"""The chain's row checks at a point on Dask data (issue 33): gathered against on the workers.

At every point the chain evaluates its surrogate objective, the surrogate value of every
constraint row and what the deterministic model misses (:mod:`ratecons.chain_points`).
On synthetic Parquet data with its features persisted on two workers
(:func:`benchmarks.dask_persisted.persisted_parquet`), at a fixed linear model, the three
checks run ``--points`` times (the chain checks a new point at every MM step; the first sends
the columns the checks need), side by side:

- ``gathered``: the scores of every example brought to the client and the rows evaluated
  there (what the chain did before; ``on_client`` then the in-memory evaluation);
- ``workers``: the scores persisted on the workers and each row a reduction over them
  (:class:`ratecons.dask_metrics.WorkerEvaluation`, the columns kept over the points).

Each line gives the wall time, the passes over the features and over persisted state, the
peak of the memory the client allocated during the checks (``tracemalloc``) per row, the time
over the floor (one plain Dask reduction, column sums, over the persisted features) and the
largest difference from the gathered values. The worst ratios of ``workers`` to ``gathered``
(time, and client memory over the points after the first) are printed last.

Run: ``python -m benchmarks.dask_chain_checks --rows 200000``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

import numpy as np

from benchmarks.dask_persisted import persisted_parquet


def _problems(data: Any) -> dict[str, Any]:
    import ratecons as rc

    women, men = data.group("group", 1), data.group("group", 0)
    ball = rc.PhiDivergenceBall(data.positives, phi="chi2", rho=0.1)
    return {
        "logistic + 80% rule": rc.Problem(
            minimize=rc.logistic_loss(data), model=rc.LinearModel(l2=1e-4),
            subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)]),
        "hinge + worst-case recall (chi2 0.1)": rc.Problem(
            minimize=rc.hinge_loss(data), model=rc.LinearModel(l2=1e-4),
            subject_to=[rc.worst_case(rc.recall(data), ball) >= 0.7]),
    }


def _checks(problem: Any, step: Any, gathered: bool, kept: dict[int, Any]
            ) -> tuple[np.ndarray, float, int, int, float]:
    """(objective and rows, seconds, passes, state passes, client peak in bytes) of one
    point's checks; ``kept``: the worker columns over the points, as a run of the chain
    holds them."""
    from ratecons.chain_points import (
        missed_rows,
        on_client,
        score_table,
        step_scores,
        surrogate_objective,
        surrogate_rows,
    )
    from ratecons.reductions.kernelize import kernelized
    from ratecons.scans import dask_passes, dask_state_passes

    analysis = problem.analysis
    fmap, psi = kernelized(analysis)
    passes, state = dask_passes(), dask_state_passes()
    tracemalloc.start()
    start = time.perf_counter()
    scores = step_scores(psi, step)
    table = score_table(analysis, fmap, on_client(scores) if gathered else scores, step,
                        kept)
    values = np.concatenate([[surrogate_objective(analysis, table, step.w)],
                             surrogate_rows(analysis, table), missed_rows(analysis, table)])
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return values, seconds, dask_passes() - passes, dask_state_passes() - state, float(peak)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--file-rows", type=int, default=50_000)
    parser.add_argument("--worker-memory", default="1GB")
    parser.add_argument("--points", type=int, default=3)
    args = parser.parse_args(argv)

    from ratecons.reductions.to_cvxpy import ConvexStep

    with persisted_parquet(args.rows, args.file_rows, args.worker_memory) as (data, floor):
        truth = np.random.default_rng(0).normal(size=data.d)
        step = ConvexStep("optimal", 0.0, 0.3 * truth, 0.2)
        print(f"{args.rows:,} rows in {data.X.numblocks[0]} partitions, floor {floor:.2f} s")
        print(f"{'problem':38s} {'method':9s} {'point':>5s} {'time':>7s} {'passes':>6s} "
              f"{'state':>5s} {'client B/row':>12s} {'/ floor':>8s} {'|diff|':>8s}")
        worst_time, worst_memory = (0.0, ""), (0.0, "")
        for name, problem in _problems(data).items():
            problem.plan()
            runs = {}
            for method in ("gathered", "workers"):
                kept: dict[int, Any] = {}
                runs[method] = [_checks(problem, step, method == "gathered", kept)
                                for _ in range(args.points)]
            for method, points in runs.items():
                for k, (values, seconds, passes, state, peak) in enumerate(points):
                    diff = float(np.max(np.abs(values - runs["gathered"][k][0])))
                    print(f"{name:38s} {method:9s} {k:5d} {seconds:7.2f} {passes:6d} "
                          f"{state:5d} {peak / args.rows:12.1f} {seconds / floor:8.1f} "
                          f"{diff:8.1e}")
            time_ratio = (sum(p[1] for p in runs["workers"])
                          / sum(p[1] for p in runs["gathered"]))
            later = slice(1, None) if args.points > 1 else slice(None)
            memory_ratio = (max(p[4] for p in runs["workers"][later])
                            / max(p[4] for p in runs["gathered"][later]))
            worst_time = max(worst_time, (time_ratio, name))
            worst_memory = max(worst_memory, (memory_ratio, name))
        print(f"worst client memory ratio, workers / gathered (points after the first): "
              f"{worst_memory[0]:.3f} ({worst_memory[1]})")
        print(f"worst time ratio, workers / gathered: {worst_time[0]:.2f} ({worst_time[1]})")


if __name__ == "__main__":
    main()
