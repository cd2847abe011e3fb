"""Composed problems on Adult: four declarations no single family could express before.

1. **Fair ranking at the top**: maximize TPR@K (K = 1% of the negatives) while the shortlist
   (the examples the model flags, at most 30% of the people) meets the 80% rule between women
   and men. TPR@K does not depend on the intercept b, so b is the shortlist's threshold, set by
   the constraints; the rule alone would be met by flagging everyone, hence the cap.
2. **Robust fair classification**: minimize the worst-case logistic loss over a chi-square ball
   (rho = 0.1) under the 80% rule.
3. **Kernel churn**: a Gaussian-kernel model minimizing the error rate whose predictions differ
   from a deployed linear model's on at most 5% of the people.
4. **Worst-case coverage**: minimize the error rate while at least 20% of women are predicted
   positive under every reweighting of the women inside a chi-square ball (rho = 0.1).

Each is solved by the generic chain (``problem.plan()`` says why no pattern takes it); the
report shows every part with its target, exact value on the training and test data, and slack.

Run: ``python examples/composition.py [--rows N]`` (N training rows sampled from the Adult
training split; default 2000, ``--rows 0`` for all 34,189; ``--quick``: 300 rows).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import ratecons as rc


def adult_split(rows: int | None, seed: int = 0) -> tuple[rc.Dataset, rc.Dataset]:
    """Adult's 70% training split (sampled to ``rows`` when given) and its 30% test split."""
    adult = rc.datasets.load_adult()
    train, test = adult.split(0.7, seed=seed)
    if rows:
        train = train.take(np.random.default_rng(seed).choice(train.n, rows, replace=False),
                           name="adult[train]")
    return train, test


def deployed_linear_baseline(train: rc.Dataset, test: rc.Dataset) -> tuple[rc.Dataset, ...]:
    """Both splits with the predictions of a deployed linear model (the unconstrained
    hinge-loss fit on the training split) as their baseline."""
    fit = rc.Problem(minimize=rc.hinge_loss(train), model=rc.LinearModel(l2=1e-3)).solve()
    return (train.with_baseline(fit.predict(train.X)), test.with_baseline(fit.predict(test.X)))


def problems(train: rc.Dataset) -> dict[str, rc.Problem]:
    """The four composed problems of the module docstring on ``train``."""
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    rule = rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)
    k = max(1, int(0.01 * train.negatives.n))
    coverage = rc.worst_case(rc.positive_rate(women),
                             rc.PhiDivergenceBall(women, phi="chi2", rho=0.1)) >= 0.2
    return {
        "fair ranking at the top": rc.Problem(
            maximize=rc.tpr_at_top(train, k=k),
            subject_to=[rule, rc.positive_rate(train) <= 0.3],
            model=rc.LinearModel(l2=1e-3)),
        "robust fair classification": rc.Problem(
            minimize=rc.robust_loss(rc.PhiDivergenceBall(train, phi="chi2", rho=0.1)),
            subject_to=[rule], model=rc.LinearModel(l2=1e-3)),
        "kernel churn": rc.Problem(
            minimize=rc.error_rate(train), subject_to=[rc.churn_rate(train) <= 0.05],
            model=rc.KernelModel(kernel="gaussian", l2=1e-3)),
        "worst-case coverage": rc.Problem(
            minimize=rc.error_rate(train), subject_to=[coverage],
            model=rc.LinearModel(l2=1e-3)),
    }


def main(rows: int | None = 2000, verbose: bool = True) -> dict[str, dict[str, Any]]:
    train, test = adult_split(rows)
    train, test = deployed_linear_baseline(train, test)
    out: dict[str, dict[str, Any]] = {}
    for name, problem in problems(train).items():
        start = time.perf_counter()
        result = problem.solve()
        elapsed = time.perf_counter() - start
        on_train, on_test = result.report(), result.report(test)
        out[name] = {"status": result.status, "time": elapsed, "pattern": problem.pattern.name,
                     "train": on_train, "test": on_test}
        if verbose:
            print(f"== {name}: {problem.pattern.name}, status {result.status}, "
                  f"{elapsed:.1f} s")
            print(on_train)
            print(on_test)
            print()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="300 training rows (seconds)")
    args = parser.parse_args()
    main(300 if args.quick else (args.rows or None))
