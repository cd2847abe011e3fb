"""The 80% rule on Adult: minimize error subject to s_p(women) >= 0.8 s_p(men).

The user's view of ratecons end to end (see also ``ratecons demo``): load the data, declare the
goal, look at the plan, solve, read the report on held-out data, and check the specialized
solver against the CVXPY reference.

Run: ``python examples/fairness_80_percent_rule.py`` (``--sample N`` for a subsample,
``--quick`` for 3,000 rows).
"""

from __future__ import annotations

import argparse

import numpy as np

import ratecons as rc


def main(sample: int | None = None, method: str = "auto", verify: bool = False) -> dict:
    adult = rc.datasets.load_adult()
    if sample is not None:
        adult = adult.take(np.random.default_rng(0).choice(adult.n, sample, replace=False))
    train, test = adult.split(0.7, seed=0)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")

    problem = rc.Problem(
        minimize=rc.error_rate(train),
        subject_to=[rc.positive_rate_ratio(women, men) >= 0.8],  # multiplied through: linear
        model=rc.LinearModel(l2=1e-3),
    )
    print(problem.plan())
    result = problem.solve(method=method)
    print(result)
    print(result.report(test))
    if verify:
        print(rc.verify(problem))
    ratio_on_test = rc.positive_rate_ratio(test.group("sex", "Female"), test.group("sex", "Male"))
    return {"status": result.status, "test_ratio": ratio_on_test.value(result.scorer),
            "test_error": rc.error_rate(test).value(result.scorer)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=None, help="use N random rows of Adult")
    parser.add_argument("--method", default="auto")
    parser.add_argument("--verify", action="store_true", help="also compare with CVXPY")
    parser.add_argument("--quick", action="store_true", help="3,000 random rows of Adult")
    args = parser.parse_args()
    print(main(3000 if args.quick else args.sample, args.method, args.verify))
