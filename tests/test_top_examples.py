"""The ranking-at-the-top example runs in its reduced mode and prints the Table 6 layout."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ranking_at_top_example_reduced(capsys):
    if not (ROOT.parent / "shared" / "data" / "optdigits.csv").exists():
        pytest.skip("the shared data folder is not mounted")
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


def test_benchmark_rows_and_cvxpy_time_limit():
    """benchmarks.top: one problem's two rows (same objective within the 1e-4 gap, ratio on
    the dual CA row), and a CVXPY run stopped at its wall-clock limit is reported as such."""
    import numpy as np

    import ratecons as rc
    from benchmarks import top as bench

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    data = rc.Dataset(X, (X[:, 0] + 0.5 * rng.normal(size=300) > 0.7).astype(int))
    ca, ref = bench.run_one("linear", data, ca_limit=60.0, cvxpy_limit=60.0)
    assert (ca["method"], ref["method"]) == ("dual CA", "CVXPY")
    assert ca["status"] == ref["status"] == "optimal"
    assert abs(ca["rel_diff"]) <= 1e-4 and ca["gap"] <= 1e-4
    assert ca["ratio"] == pytest.approx(ref["time"] / ca["time"])
    assert ca["norm"] > 0 and 0 < ca["tpr"] <= 1
    over = bench.run_cvxpy(bench.make_problem("linear", data), limit=1e-3)
    assert over["status"] == "> 0.001 s" and over.get("over")
    assert "|" in bench.format_row({**ca, "ratio_lower": True})
