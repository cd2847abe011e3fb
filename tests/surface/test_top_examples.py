"""The ranking-at-the-top example runs in its reduced mode and prints the Table 6 layout."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ranking_at_top_example_reduced(capsys):
    spec = importlib.util.spec_from_file_location("ranking_at_top",
                                                  ROOT / "examples" / "ranking_at_top.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tables = module.main(quick=True)
    out = capsys.readouterr().out
    assert "TopPushK (5)" in out and "TPR@0.05" in out
    for table in tables.values():
        assert set(table) == set(module.FORMULATIONS)
        for row in table.values():
            assert all(0.0 <= v <= 100.0 for v in row.values())
            assert row["AUC"] > 90.0  # one-vs-rest problems that a Gaussian kernel separates


def test_benchmark_tiny_grid_and_cvxpy_time_limit(capsys):
    """benchmarks.top on its tiny grid: auto, dual CA and CVXPY rows per instance with equal
    objectives, the worst-ratio line last; a CVXPY run stopped at its limit says so."""
    from benchmarks import top as bench

    rows = bench.main(["--tiny"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("WORST ratio auto vs CVXPY reference over 3 instances")
    autos = [r for r in rows if "ratio" in r]
    assert len(autos) == 3
    assert {r["method"] for r in autos} == {"primal_ipm", "dual_ca"}
    for r in rows:
        assert r["status"] == "optimal", r
        assert abs(r["rel_diff"]) <= bench.OBJ_RTOL
    for r in autos:
        assert r["equal"] and r["gap"] <= 1e-6
        ref = next(x for x in rows if x["instance"] == r["instance"] and x["label"].startswith(
            "cvxpy"))
        assert r["ratio"] == pytest.approx(ref["time"] / r["time"])
    worst = min(r["ratio"] for r in autos)
    assert f"{worst:.1f}x" in lines[-1]
    over = bench.run_cvxpy(bench.tiny_grid()[0].problem(), limit=1e-3)
    assert over["status"] == "> 0.001 s" and over.get("over")
