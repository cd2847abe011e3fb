"""The 80% rule's trade-off on Adult: ``rc.sweep`` over 10 targets, against cold solves and
fairlearn's mitigators.

    python -m benchmarks.sweep                 # 10 targets on 10,000 training rows, 2 jobs
    python -m benchmarks.sweep --rows 0        # the whole training split (34,189 rows)
    python -m benchmarks.sweep --quick         # 2,000 rows, 4 targets (seconds)
    python -m benchmarks.sweep --plot docs/img/tradeoff_adult.png

Minimizes the error rate of a linear model subject to s_p(women) >= kappa s_p(men) for
kappa = 0.3, ..., 1.0 (``rc.sweep`` with ``n_jobs``), on a sample of the Adult training split
(70/30, seed 0), every point measured on the whole test split. Prints the frontier, whether
it is monotone (training error and training ratio nondecreasing in kappa), and the sweep's
wall time in units of one cold solve (the kappa = 0.8 problem solved alone, after one untimed
solve that compiles numba's loops), beside the cold path: every target and the unconstrained
model solved cold one after another (what ``rc.sweep`` did before warm starts). With
fairlearn installed (``pip install fairlearn``), ExponentiatedGradient and ThresholdOptimizer
(demographic parity, over scikit-learn's LogisticRegression on the same features) are fitted
on the same rows and their held-out error and ratio printed and drawn beside the frontier.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import ratecons as rc

KAPPA_COLD = 0.8


def fairlearn_points(train: rc.Dataset, test: rc.Dataset) -> dict[str, tuple[float, float]]:
    """(held-out ratio women / men, held-out error) of fairlearn's two mitigators, or {}."""
    try:
        from fairlearn.postprocessing import ThresholdOptimizer
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient
    except ImportError:
        print("fairlearn is not installed (pip install fairlearn): no comparison points")
        return {}
    from sklearn.linear_model import LogisticRegression

    A, A_test = train.groups["sex"], test.groups["sex"]
    X, X_test = train.X.toarray(), test.X.toarray()  # fairlearn takes dense features
    mitigators: dict[str, Any] = {
        "ExponentiatedGradient": ExponentiatedGradient(
            LogisticRegression(max_iter=2000), DemographicParity()),
        "ThresholdOptimizer": ThresholdOptimizer(
            estimator=LogisticRegression(max_iter=2000), constraints="demographic_parity",
            predict_method="predict_proba"),
    }
    out = {}
    for name, mitigator in mitigators.items():
        start = time.perf_counter()
        mitigator.fit(X, train.y, sensitive_features=A)
        kwargs = {"random_state": 0}
        if name == "ThresholdOptimizer":
            kwargs["sensitive_features"] = A_test
        pred = np.asarray(mitigator.predict(X_test, **kwargs))
        ratio = pred[A_test == "Female"].mean() / pred[A_test == "Male"].mean()
        out[name] = (float(ratio), float(np.mean(pred != test.y)))
        print(f"{name:24s} test error {out[name][1]:.4f}  test ratio {out[name][0]:.4f}  "
              f"({time.perf_counter() - start:.1f} s)")
    return out


def monotone(points: list[Any]) -> bool:
    """Training error and training ratio nondecreasing in kappa over the optimal points."""
    solved = sorted((p for p in points if p.status == "optimal"), key=lambda p: p.target)
    return bool(np.all(np.diff([p.train_objective for p in solved]) >= -1e-9)
                and np.all(np.diff([p.train_fairness for p in solved]) >= -1e-9))


def cold_path(base: rc.Problem, rule: Any, targets: np.ndarray) -> tuple[float, list[Any]]:
    """Every target and the unconstrained problem solved cold, one after another (the sweep
    before warm starts): wall time and the points."""
    start = time.perf_counter()
    points = []
    for kappa in targets:
        result = rc.Problem(minimize=base.objective, subject_to=[rule(kappa)],
                            model=base.model).solve(verbose=False)
        points.append(rc.frontier.FrontierPoint(float(kappa), result.status, result.method,
                                                rc.Result.report(result).rows[0].indicator,
                                                np.nan, float(rule(kappa).ratio.value(
                                                    result.scorer)), np.nan, 0.0, result))
    base.solve(verbose=False)
    return time.perf_counter() - start, points


def main(argv: list[str] | None = None) -> rc.frontier.Frontier:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000,
                        help="training rows sampled from the split (0: all)")
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 4 targets")
    parser.add_argument("--jobs", type=int, default=2, help="joblib jobs (default 2)")
    parser.add_argument("--no-cold-path", action="store_true",
                        help="skip the comparison with every target solved cold")
    parser.add_argument("--plot", metavar="FILE.png", help="write the trade-off figure")
    args = parser.parse_args(argv)
    rows = 2000 if args.quick else args.rows
    targets = np.round(np.linspace(0.3, 1.0, 4 if args.quick else 10), 4)

    adult = rc.datasets.load_adult()
    train, test = adult.split(0.7, seed=0)
    if rows and rows < train.n:
        pick = np.sort(np.random.default_rng(0).choice(train.n, rows, replace=False))
        train = train.take(pick, "adult[train]")
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    base = rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-3))

    def rule(kappa: float) -> Any:
        return rc.positive_rate_ratio(women, men) >= kappa

    print(f"Adult: {train.n:,} training rows, {test.n:,} test rows; targets {targets.tolist()}")
    cold_problem = rc.Problem(minimize=base.objective, subject_to=[rule(KAPPA_COLD)],
                              model=base.model)
    cold_problem.solve(verbose=False)  # compiles numba's loops and fills caches: not timed
    start = time.perf_counter()
    cold_problem.solve(verbose=False)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    frontier = rc.sweep(base, rule, targets, test=test, n_jobs=args.jobs)
    wall = time.perf_counter() - start
    print(frontier)
    solved = [p for p in frontier.points if p.status == "optimal"]
    reused = sum(bool(p.model_from) for p in [*frontier.points, frontier.unconstrained])
    print(f"optimal {len(solved)}/{len(frontier.points)}; {frontier.resolves} re-solve(s), "
          f"{reused} point(s) re-using another solve's model; frontier monotone in kappa "
          f"(training error and ratio nondecreasing): "
          f"{'yes' if monotone(frontier.points) else 'NO'}")
    if not args.no_cold_path:
        seconds, points = cold_path(base, rule, targets)
        print(f"cold path (every target and the unconstrained model solved cold, one job): "
              f"{seconds:.1f} s = {seconds / cold:.1f} cold solves; monotone: "
              f"{'yes' if monotone(points) else 'NO'}; warm sweep / cold path = "
              f"{wall / seconds:.2f}")
    others = fairlearn_points(train, test)
    if args.plot:
        from ratecons import plot

        ax = plot.tradeoff(frontier, others=others, xlabel="ratio women / men (test)",
                           ylabel="error rate (test)")
        ax.figure.savefig(args.plot, dpi=200)
        print(f"figure: {args.plot}")
    print(f"sweep of {len(targets)} targets + the unconstrained model with {args.jobs} job(s): "
          f"{wall:.1f} s = {wall / cold:.1f} cold solves (one cold solve {cold:.1f} s)")
    return frontier


if __name__ == "__main__":
    main()
