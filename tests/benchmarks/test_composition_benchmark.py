"""benchmarks.composition at CI size: the grid runs on two synthetic sizes, both chains agree,
and the growth table compares the time's growth with the rows'."""

import re

import numpy as np

from benchmarks import composition as bench


def test_growth_table_divides_time_growth_by_row_growth(capsys):
    rows = [{"problem": "p", "n": 1000, "auto": 0.5}, {"problem": "p", "n": 4000, "auto": 4.0},
            {"problem": "q", "n": 1000, "auto": 1.0}, {"problem": "q", "n": 4000, "auto": 2.0},
            {"problem": "alone", "n": 1000, "auto": 9.0}]
    for r in rows:
        r["degenerate"] = r["problem"] == "q" and r["n"] == 1000
    bench._print_growth(rows)
    out = capsys.readouterr().out
    # p: 8x the time for 4x the rows (2.00); q: 2x for 4x (0.50), a constant score optimal at
    # 1000 rows (its time there measures a trivial instance); "alone" has one size
    assert re.search(r"^p\s+1000\s+4000\s+8\.00\s+4\.00\s+2\.00$", out, re.M)
    assert re.search(r"^q\s+1000\s+4000\s+2\.00\s+4\.00\s+0\.50 \(degenerate at one size\)$",
                     out, re.M)
    assert "alone" not in out
    assert out.strip().splitlines()[-1].startswith(
        "worst growth of auto's time against the rows' (1 = linear): 2.00 (p, n = 1000 -> 4000)")


def test_grid_rows_on_two_synthetic_sizes_agree_with_the_cvxpy_chain(capsys):
    out = bench.run(["synthetic300", "synthetic600"], only=["logistic + recall floor"],
                    cvxpy_max_rows=1000, skip_b=True)
    rows = out["grid"]
    assert [r["n"] for r in rows] == [300, 600]
    for r in rows:
        assert r["status"] == "optimal" and r["ref_status"] == "optimal"
        assert r["gap"] <= 1e-4 and np.isfinite(r["speedup"]) and not r["degenerate"]
    printed = capsys.readouterr().out
    assert "worst growth of auto's time against the rows'" in printed
    assert "worst speed-up of auto over the CVXPY chain" in printed
