"""benchmarks.auto_grid runs as users run it (--quick: one sparse and one dense frame): every
rate method (mm, cvxpy, structured, highs) timed on each instance, auto's choice printed with
the quantities it read, and the worst ratio of auto's time to the best method's on its last
line (no timing asserted; --no-warm-up, a smoke run)."""

import re

import pytest

from tests.benchmarks.test_benchmarks_run import run_benchmark


@pytest.mark.slow
def test_auto_grid_prints_every_method_and_the_worst_ratio_last():
    lines = run_benchmark("benchmarks.auto_grid", "--quick", "--no-warm-up")
    rows = [line for line in lines if line.count(" | ") == 5 and not line.startswith("frame")]
    assert [r.split()[0:2] for r in rows] == [["adult", "sparse"], ["synthetic", "800x100"]]
    for row in rows:
        cells = row.split(" | ")
        assert cells[0].split()[-1] in ("mm", "cvxpy", "structured")  # auto's choice
        # mm, cvxpy and the structured chain each solve it
        assert "optimal" in cells[1] and "optimal" in cells[2] and "optimal" in cells[3]
    dense = rows[1].split(" | ")[0].split()
    assert dense[6] == "1.00"  # the synthetic frame's density, read by auto
    assert re.match(r"WORST time\(auto\) / time\(best method\) = [\d.]+ \(.+\); target <= 1\.2: "
                    r"(yes|NO)$", lines[-1]), lines[-1]


@pytest.mark.slow
def test_auto_grid_runs_the_rows_in_counts():
    """--counts: a precision floor on the same frames (docs/mm.md, "Rows in counts"); mm,
    cvxpy and the structured chain each solve it."""
    lines = run_benchmark("benchmarks.auto_grid", "--quick", "--counts", "--no-warm-up")
    rows = [line for line in lines if line.count(" | ") == 5 and not line.startswith("frame")]
    assert len(rows) == 2
    for row in rows:
        cells = row.split(" | ")
        assert "optimal" in cells[1] and "optimal" in cells[2] and "optimal" in cells[3]
    assert lines[-1].startswith("WORST time(auto) / time(best method) = ")


def test_the_structured_model_is_fitted_on_one_constraint_and_checked_on_the_rest():
    """fit_cost_model(one_constraint=True) recovers (K0, K1, K2) from one-constraint records
    only; several_constraints_range reports the others' ratios, which auto's rule for two or
    more constraints (the structured chain) needs above 1."""
    import numpy as np

    from benchmarks.auto_grid import fit_cost_model, several_constraints_range
    from ratecons.patterns.rate_auto import RateSize

    truth = (0.9, -0.1, -0.45)
    records = []
    for nnz in (1e4, 1e5, 1e6):
        for l2n in (0.1, 3.0, 100.0):
            z = RateSize(1000, 10, 1.0, nnz, 1, l2n)
            records.append((z, 10.0 ** (truth[0] + truth[1] * np.log10(nnz)
                                        + truth[2] * np.log10(l2n))))
    several = [(RateSize(1000, 10, 1.0, 1e5, 2, 1.0), 1.5), (RateSize(1000, 10, 1.0, 1e6, 3,
                                                                      260.0), 37.0)]
    fitted = fit_cost_model(records + several, one_constraint=True)
    assert fitted == pytest.approx(truth, abs=1e-9)  # the several-constraint records ignored
    assert len(fit_cost_model(records + several)) == 4  # the cvxpy model keeps its indicator
    assert several_constraints_range(records + several) == (1.5, 37.0, 2)
    assert several_constraints_range(records)[2] == 0
