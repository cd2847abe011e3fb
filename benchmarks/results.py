"""What the end of every solve costs: the degenerate-answer check against the solve itself.

Every solve ends with :func:`ratecons.degenerate.check_degenerate` (the model against the best
constant model that meets the same constraints; for losses a 1-D search over the constant
score). This benchmark solves one problem per family on real data and times, in the same run,
the solve (``auto``), the check alone on its result, and a scikit-learn LogisticRegression fit
on the same rows (the floor every solve is compared with). Columns: rows, family, method, solve
time, check time, check / solve, check / logistic fit, and whether the check called the answer
degenerate. The last line is the worst ratio of the check's time to the solve's.

Run: ``python -m benchmarks.results [--sizes diabetes,2000,adult] [--repeat 3]``; ``adult`` is
the whole training split (34,189 rows, minutes on a loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import ratecons as rc
from ratecons.degenerate import check_degenerate


def _eighty_percent_rule(D: rc.Dataset) -> Any:
    """The 80% rule between the two values of the data's group column (Adult: sex; diabetes:
    age above its median)."""
    column = next(iter(D.groups))
    first, second = np.unique(D.groups[column])[:2]
    return rc.positive_rate(D.group(column, first)) >= 0.8 * rc.positive_rate(
        D.group(column, second))


#: the families timed: a name and the problem on a Dataset
FAMILIES: dict[str, Callable[[rc.Dataset], rc.Problem]] = {
    "error rate + recall >= 0.7": lambda D: rc.Problem(
        minimize=rc.error_rate(D), subject_to=[rc.recall(D) >= 0.7],
        model=rc.LinearModel(l2=1e-3)),
    "logistic + recall >= 0.7": lambda D: rc.Problem(
        minimize=rc.logistic_loss(D), subject_to=[rc.recall(D) >= 0.7],
        model=rc.LinearModel(l2=1e-3)),
    "hinge + 80% rule": lambda D: rc.Problem(
        minimize=rc.hinge_loss(D), subject_to=[_eighty_percent_rule(D)],
        model=rc.LinearModel(l2=1e-3)),
    "robust chi2 logistic": lambda D: rc.Problem(
        minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="chi2", rho=0.1, strict=False)),
        model=rc.LinearModel(l2=1e-3)),
    "TPR@1% negatives": lambda D: rc.Problem(
        maximize=rc.tpr_at_top(D, k=max(1, int(0.01 * np.sum(D.y == 0)))),
        model=rc.LinearModel(l2=1e-3)),
    "minimax risk (MRC)": lambda D: rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(D))),
}


def _data(size: str) -> rc.Dataset:
    if size == "diabetes":
        from ratecons.datasets import load_csv

        from .mrc import DATA

        raw = load_csv(DATA / "diabetes.csv")
        X = np.asarray(raw.X, dtype=float)
        age = np.where(X[:, 7] > np.median(X[:, 7]), "older", "younger")  # x7: age (Pima)
        return rc.Dataset((X - X.mean(0)) / X.std(0), raw.y, groups={"age": age},
                          name="diabetes")
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    if size == "adult":
        return train
    rows = np.random.default_rng(0).choice(train.n, int(size), replace=False)
    return train.take(rows, f"adult{size}")


def _best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def _logistic_fit(data: rc.Dataset, repeat: int) -> float:
    from sklearn.linear_model import LogisticRegression

    return _best_of(repeat, lambda: LogisticRegression(max_iter=1000).fit(data.X, data.y))[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="diabetes,2000",
                        help="comma-separated: diabetes, a row count of Adult, adult (all)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many check runs")
    args = parser.parse_args(argv)
    header = (f"{'rows':>6} {'family':<28} {'method':<11} {'solve s':>8} {'check s':>8} "
              f"{'chk/solve':>9} {'chk/logreg':>10} degenerate")
    print(header)
    worst = (0.0, "")
    for size in args.sizes.split(","):
        data = _data(size)
        floor = _logistic_fit(data, args.repeat)
        for family, build in FAMILIES.items():
            if family.startswith("minimax") and data.n > 5000:
                continue  # CCG on the whole split takes minutes; the check is O(n) there
            problem = build(data)
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                start = time.perf_counter()
                result = problem.solve(verbose=False)
                solved = time.perf_counter() - start
                result.certificate.details.pop("degenerate", None)
                checked, record = _best_of(
                    args.repeat, lambda p=problem, r=result: check_degenerate(p, r))
            ratio = checked / solved
            worst = max(worst, (ratio, f"{family} on {data.n} rows"))
            print(f"{data.n:>6} {family:<28} {result.method:<11} {solved:>8.3f} "
                  f"{checked:>8.4f} {ratio:>9.3f} {checked / floor:>10.2f} "
                  f"{'yes' if record else 'no'}")
    print(f"WORST check/solve time ratio: {worst[0]:.3f} ({worst[1]})")


if __name__ == "__main__":
    main()
