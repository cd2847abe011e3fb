"""Every benchmark without a test of its own runs as users run it (``python -m benchmarks.NAME``
at its smoke size), exits 0, certifies what it claims and ends with its worst-ratio line.

The grids' numbers are quoted in the docs from full runs; these runs only guard against a
benchmark that no longer runs after a change elsewhere (no timing is asserted).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(*args: str) -> list[str]:
    """The benchmark's output lines (stripped, non-empty); fails with its stderr if it fails."""
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_dro_benchmark_certifies_auto_on_every_instance():
    lines = run_benchmark("benchmarks.dro", "--quick", "--no-large", "--no-stochastic")
    summary = next(line for line in lines if "auto certified optimal on" in line)
    found = re.match(r"(\d+) instances; auto certified optimal on (\d+);", summary)
    assert found and found[1] == found[2], summary
    assert lines[-2].startswith("worst time(auto)/time(floor"), lines[-2]
    assert lines[-1].startswith("WORST time(cvxpy)/time(auto)"), lines[-1]
    assert lines[-1].endswith("yes"), lines[-1]


def test_export_benchmark_solves_every_export_on_both_paths():
    lines = run_benchmark("benchmarks.export", "--rows", "300")
    rows = [line for line in lines if line.endswith((
        "optimal", "infeasible", "_inaccurate", "iteration_limit", "time_limit",
        "numerical_error"))]
    assert rows and all(line.endswith("optimal") for line in rows), "\n".join(rows)
    assert lines[-1].startswith("worst ratio"), lines[-1]


def test_mrc_benchmark_smoke_grid_is_optimal_everywhere():
    if not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("the benchmark's quick grid reads ../shared/data, which is missing")
    lines = run_benchmark("benchmarks.mrc", "--quick")
    rows = [line.split(" | ") for line in lines if line.count(" | ") >= 8]
    statuses = {cells[7] for cells in rows if cells[0] != "data"}  # not the header
    assert statuses == {"optimal"}, statuses
    assert lines[-1].startswith("worst ratio of CCG"), lines[-1]


@pytest.mark.slow
def test_mrc_subgradient_benchmark_reports_its_gaps():
    if not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("the benchmark reads ../shared/data, which is missing")
    lines = run_benchmark("benchmarks.mrc_subgradient", "--quick")
    rows = [line for line in lines if "iteration_limit" in line or " optimal " in line]
    references = [line for line in rows if "(reference)" in line]
    methods = [line for line in rows if "(reference)" not in line]
    assert references and all(" optimal " in line for line in references), "\n".join(rows)
    # no subgradient run at the smoke budget claims optimality: its certified gaps are wide
    assert methods and all("iteration_limit" in line for line in methods), "\n".join(rows)
