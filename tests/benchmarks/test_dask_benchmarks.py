"""The Dask report and client-state benchmarks run as users run them (``python -m
benchmarks.NAME`` at a smoke size), exit 0 and end with their worst-ratio line; the report
values computed on the workers agree with the gathered ones (no timing is asserted)."""

from __future__ import annotations

import pytest

from tests.benchmarks.test_benchmarks_run import run_benchmark

pytest.importorskip("distributed")


@pytest.mark.slow
def test_dask_reports_benchmark_agrees_with_the_gathered_values():
    lines = run_benchmark("benchmarks.dask_reports", "--rows", "8000", "--file-rows", "2000")
    rows = [line for line in lines if line.split()[-1].endswith(tuple("0123456789"))
            and (" gathered " in line or " workers " in line)]
    assert len(rows) == 8, "\n".join(lines)
    assert all(float(line.split()[-1]) <= 1e-10 for line in rows), "\n".join(rows)
    assert lines[-1].startswith("worst ratio of workers to the floor"), lines[-1]


@pytest.mark.slow
def test_dask_client_state_benchmark_prints_its_sites():
    lines = run_benchmark("benchmarks.dask_client_state", "--rows", "4000", "--file-rows",
                          "1000", "--time-limit", "2")
    assert any(line.startswith("bytes/row") for line in lines), "\n".join(lines)
    assert lines[-1].startswith("WORST peak / floor"), lines[-1]
