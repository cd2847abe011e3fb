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
