"""Benchmark: MPS export sizes and times, and ``method="highs"`` against ``method="generic"``.

Part A exports the hinge relaxation of "minimize the error rate subject to the 80% rule between
women and men and a recall floor" (two rate constraints, l1 penalty: an LP) on the Adult
training split, and its l2 twin (a QP): rows, columns, nonzeros, file size and wall time of the
lowering and of the streamed write. Part B solves a grid of LP/QP-representable problems on a
subsample of the split with the generic chain on CVXPY (the reference) and on HiGHS
(``method="highs"``, the matrix form) side by side, with the objective gap; its last line is
the WORST ratio of the HiGHS chain's time over the reference's.

Run: ``python -m benchmarks.export [--rows N]`` (rows of part B; default 3000). Run it under
``flock /tmp/bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import ratecons as rc
from ratecons.matrix_chain import matrix_step


def fairness(train: rc.Dataset, model: rc.LinearModel) -> rc.Problem:
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    return rc.Problem(minimize=rc.error_rate(train),
                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men),
                                  rc.recall(train) >= 0.6], model=model)


def grid(train: rc.Dataset) -> dict[str, rc.Problem]:
    k = max(1, int(0.01 * train.negatives.n))
    l1, l2 = rc.LinearModel(l2=0.0, l1=1e-4), rc.LinearModel(l2=1e-3)
    return {
        "rates + 80% rule, l1 (LP)": fairness(train, l1),
        "rates + 80% rule, l2 (QP)": fairness(train, l2),
        "hinge + precision, l1 (LP)": rc.Problem(minimize=rc.hinge_loss(train),
                                                 subject_to=[rc.precision(train) >= 0.6],
                                                 model=l1),
        "TopPushK, l1 (LP)": rc.Problem(maximize=rc.tpr_at_top(train, k=k), model=l1),
        "TopPushK, l2 (QP)": rc.Problem(maximize=rc.tpr_at_top(train, k=k), model=l2),
        "TPR@tau 0.05, l1 (LP)": rc.Problem(maximize=rc.tpr_at_quantile(train, tau=0.05),
                                            model=l1),
    }


def part_a(train: rc.Dataset) -> None:
    print(f"A. export of the Adult training split ({train.n} rows, two rate constraints)")
    print(f"{'model':<10} {'kind':<4} {'rows':>7} {'cols':>7} {'nonzeros':>9} {'MB':>6} "
          f"{'lower s':>8} {'export s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, model in (("l1=1e-4", rc.LinearModel(l2=0.0, l1=1e-4)),
                             ("l2=1e-3", rc.LinearModel(l2=1e-3))):
            problem = fairness(train, model)
            start = time.perf_counter()
            step, _ = matrix_step(problem)
            lower = time.perf_counter() - start
            path = os.path.join(tmp, "adult.mps")
            start = time.perf_counter()
            info = rc.export_mps(problem, path)
            total = time.perf_counter() - start
            print(f"{label:<10} {info['kind']:<4} {info['rows']:>7} {info['cols']:>7} "
                  f"{info['nonzeros']:>9} {os.path.getsize(path) / 1e6:>6.1f} {lower:>8.2f} "
                  f"{total:>9.2f}")
            assert step.lp.n_rows == info["rows"]


def part_b(train: rc.Dataset) -> None:
    print(f"\nB. method='highs' vs method='generic' (CVXPY) on {train.n} Adult rows")
    print(f"{'problem':<28} {'generic s':>9} {'highs s':>8} {'ratio':>6} {'objective':>12} "
          f"{'rel gap':>9} {'status':>8}")
    worst = 0.0
    for name, problem in grid(train).items():
        start = time.perf_counter()
        ref = problem.solve(method="generic")
        t_ref = time.perf_counter() - start
        start = time.perf_counter()
        res = problem.solve(method="highs")
        t_res = time.perf_counter() - start
        gap = abs(res.objective - ref.objective) / max(1.0, abs(ref.objective))
        ratio = t_res / t_ref
        worst = max(worst, ratio)
        print(f"{name:<28} {t_ref:>9.2f} {t_res:>8.2f} {ratio:>6.2f} {res.objective:>12.6g} "
              f"{gap:>9.1e} {res.status:>8}")
    print(f"\nworst ratio highs / generic time: {worst:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    adult = rc.datasets.load_adult()
    train, _ = adult.split(0.7, seed=0)
    part_a(train)
    small, _ = train.split(args.rows / train.n, seed=0) if args.rows < train.n else (train, None)
    part_b(small)


if __name__ == "__main__":
    main()
