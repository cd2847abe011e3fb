"""Benchmark: ``method="mm"`` (specialized solver) vs ``method="cvxpy"`` (CLARABEL) on rate
problems (Goh et al. 2016, issue 3 item 6).

Instances:

1. Adult, the training part (32,561 rows; categorical columns one-hot encoded, sparse), error
   rate subject to one fairness constraint s_p(women) >= 0.8 s_p(men);
2. a synthetic problem with 200,000 rows and three constraints (80% rule between two groups,
   recall >= 0.7, false positive rate <= 0.25).

Both methods run the same Algorithm 1 (hinge relaxation, then majorization-minimization with the
same T; T <= 3 on the 200k-row problem to bound the reference's run time). The table shows each
bound's solve time, the totals, the final ramp objective, the largest ramp constraint value
minus its bound, and the ratio of wall times.

Run: ``python -m benchmarks.rate_constraints`` (``--quick`` for a small smoke version).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ratecons as rc
from ratecons.testing import synthetic_groups


def adult_problem(rows: int | None, l2: float) -> rc.Problem:
    adult = rc.datasets.load_adult()
    train, _ = adult.split(32561 / adult.n, seed=0)
    if rows is not None:
        train = train.take(np.random.default_rng(0).choice(train.n, rows, replace=False))
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    return rc.Problem(minimize=rc.error_rate(train),
                      subject_to=[rc.positive_rate_ratio(women, men) >= 0.8],
                      model=rc.LinearModel(l2=l2))


def synthetic_problem(rows: int, l2: float) -> rc.Problem:
    data = synthetic_groups(n=rows, d=20, seed=0)
    a, b = data.group("g", "a"), data.group("g", "b")
    return rc.Problem(minimize=rc.error_rate(data),
                      subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b),
                                  rc.recall(data) >= 0.7,
                                  rc.false_positive_rate(data) <= 0.25],
                      model=rc.LinearModel(l2=l2))


def run(problem: rc.Problem, method: str, T: int) -> dict:
    start = time.perf_counter()
    result = problem.solve(method=method, max_iterations=T)
    wall = time.perf_counter() - start
    program = problem.canonical()
    iters = [h["subproblem_time"] for h in result.history if h.get("subproblem_time")]
    return {"method": method, "status": result.status, "wall": wall, "iter_times": iters,
            "objective": result.objective,
            "ramp_rows": program.row_values(result.w, result.b, "ramp")[1:] - program.gamma,
            "history": [h["objective"] for h in result.history]}


def table(name: str, problem: rc.Problem, T: int) -> list[dict]:
    form = problem.canonical()
    print(f"\n== {name}: {form.summary()}")
    runs = [run(problem, "mm", T), run(problem, "cvxpy", T)]
    print(f"{'method':8s}{'status':>10s}{'wall (s)':>10s}{'objective':>13s}"
          f"{'max(row - gamma)':>18s}{'MM iters':>9s}  per-bound times (s: hinge, then Alg 1)")
    for r in runs:
        times = " ".join(f"{t:.2f}" for t in r["iter_times"])
        print(f"{r['method']:8s}{r['status']:>10s}{r['wall']:10.2f}{r['objective']:13.7f}"
              f"{float(np.max(r['ramp_rows'])):18.2e}{len(r['history']) - 1:9d}  {times}")
    mm, ref = runs
    rel = abs(mm["objective"] - ref["objective"]) / max(1.0, abs(ref["objective"]))
    print(f"cvxpy / mm wall-time ratio: {ref['wall'] / mm['wall']:.2f}x; "
          f"objective relative difference {rel:.2e}")
    return runs


def main(quick: bool = False, T: int = 5) -> list[dict]:
    if quick:
        out = table("Adult subsample (2,000 rows), one fairness constraint",
                    adult_problem(2000, 1e-3), T=3)
        out += table("synthetic (5,000 rows), three constraints", synthetic_problem(5000, 1e-3),
                     T=3)
        return out
    out = table("Adult training set, one fairness constraint", adult_problem(None, 1e-4), T)
    out += table("synthetic (200,000 rows), three constraints",
                 synthetic_problem(200_000, 1e-4), min(T, 3))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke version")
    parser.add_argument("--T", type=int, default=5, help="MM iterations (Algorithm 1)")
    args = parser.parse_args()
    main(args.quick, args.T)
