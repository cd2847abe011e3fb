"""``python -m benchmarks.results`` runs as users run it (diabetes only), times every family's
degenerate check next to its solve and ends with its worst-ratio line (no timing asserted)."""

from __future__ import annotations

import pytest

from tests.benchmarks.test_benchmarks_run import run_benchmark
from tests.shared_data import DATA


def test_results_benchmark_times_the_check_of_every_family():
    if not DATA.is_dir():
        pytest.skip("the benchmark reads ../shared/data, which is missing")
    lines = run_benchmark("benchmarks.results", "--sizes", "diabetes", "--repeat", "1")
    rows = [line for line in lines if line.startswith("768 ")]
    assert len(rows) == 6, "\n".join(lines)
    # diabetes: TPR@K with K = 5 and the MRC over the raw features are degenerate answers
    said = {line.rsplit(" ", 1)[1] for line in rows}
    assert said == {"yes", "no"}
    assert lines[-1].startswith("WORST check/solve time ratio"), lines[-1]
