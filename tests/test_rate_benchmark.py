"""benchmarks.rate_constraints --quick: both methods side by side, the two ratios."""

import numpy as np
import pytest

from benchmarks import rate_constraints as bench


def test_reach_time_is_the_first_iterate_at_or_below_the_target():
    history = [(0, 0.30, 1.0, 1.0), (1, 0.21, 1.5, 0.5), (2, 0.2001, 2.0, 0.5),
               (3, 0.1999, 2.6, 0.6)]
    assert bench.reach_time(history, 0.2001) == (2, 2.0)
    assert bench.reach_time(history, 0.1) is None


def test_quick_benchmark_runs_both_methods_and_prints_both_ratios(capsys):
    out = bench.main(quick=True)
    text = capsys.readouterr().out
    assert "(A) total wall time, cvxpy / mm" in text and "(B)" in text
    assert len(out) == 2
    for entry in out:
        mm, ref = entry["mm"], entry["cvxpy"]
        assert mm["method"] == "mm" and ref["method"] == "cvxpy"
        assert mm["status"] in ("optimal", "iteration_limit")
        # same Algorithm 1 with the same T: the MM paths may differ slightly (inexact bounds)
        assert mm["objective"] == pytest.approx(ref["objective"], rel=1e-2)
        assert float(np.max(mm["ramp_rows"])) <= 1e-4
        stamps = [h[2] for h in mm["history"]]
        assert np.all(np.diff(stamps) >= 0) and stamps[-1] <= mm["wall"] + 1e-6
        assert entry["total_ratio"] == pytest.approx(ref["wall"] / mm["wall"])
        if entry["reach_ratio"] is not None:
            assert entry["reach_ratio"] >= entry["total_ratio"] - 1e-9
