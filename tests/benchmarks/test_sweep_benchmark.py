"""benchmarks.sweep runs as users run it (smoke size, one job): a monotone frontier and the
sweep's cost in cold solves on its last line (no timing asserted)."""

import re

from tests.benchmarks.test_benchmarks_run import run_benchmark


def test_sweep_benchmark_prints_a_monotone_frontier_and_its_cost():
    lines = run_benchmark("benchmarks.sweep", "--quick", "--jobs", "1")
    assert any(line.endswith("frontier monotone in kappa (training error and ratio "
                             "nondecreasing): yes") for line in lines), lines
    assert re.match(r"sweep of 4 targets \+ the unconstrained model with 1 job\(s\): "
                    r"[\d.]+ s = [\d.]+ cold solves", lines[-1]), lines[-1]
