"""The MRC example and benchmark run in their reduced modes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.shared_data import DATA

ROOT = Path(__file__).resolve().parents[2]


def test_example_quick_mode_prints_a_consistent_table(capsys, tmp_path):
    spec = importlib.util.spec_from_file_location("mrc_example", ROOT / "examples" /
                                                  "mrc_multiclass.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(quick=True, figure=tmp_path / "ccg.png")
    assert "iris" in capsys.readouterr().out and (tmp_path / "ccg.png").stat().st_size > 0
    by = {(r["features"], r["method"]): r for r in rows}
    for features in ("linear", "RFF(50)"):
        assert abs(by[features, "lp"]["R*"] - by[features, "ccg"]["R*"]) <= 1e-6
        assert 0 < by[features, "lp"]["R*"] < 1


@pytest.mark.skipif(not (DATA / "adult.csv").exists(), reason="shared data not found")
def test_benchmark_quick_binary_part_runs_and_agrees():
    from benchmarks import mrc

    rows = mrc.main(["--quick", "--part", "a", "--sizes", "300",
                     "--methods", "lp,ccg,ccg_eps,cvxpy,subgradient"])
    methods = {r[6] for r in rows}
    assert methods >= {"lp (ipm, dual)", "ccg", "ccg (eps1=1e-4)", "cvxpy", "subgradient"}
    assert {r[12] for r in rows} == {"full LP"}  # R* from the full LP, which finished
    for r in rows:
        if r[6] == "subgradient":  # first-order: documented accuracy ~1e-2 at these budgets
            assert r[7] in ("optimal", "iteration_limit") and r[10] <= 5e-2
        elif r[6] == "ccg (eps1=1e-4)":  # Theorem 1: R* - eps1 <= R^k <= R*
            assert r[7] in ("optimal", "iteration_limit") and r[10] <= 1e-4
        else:
            assert r[7] == "optimal" and r[10] <= 1e-6


@pytest.mark.skipif(not (DATA / "adult.csv").exists(), reason="shared data not found")
def test_benchmark_pieces_share_the_full_lp_reference(tmp_path):
    """A CCG-only piece measures |R - R*| against the full LP stored by an earlier piece."""
    from benchmarks import mrc

    store = str(tmp_path / "results.json")
    common = ["--quick", "--part", "a", "--sizes", "300", "--datasets", "synthetic",
              "--results", store]
    first = mrc.main(common + ["--methods", "lp"])
    assert [r[6] for r in first] == ["lp (ipm, dual)"] and first[0][7] == "optimal"
    second = mrc.main(common + ["--methods", "ccg"])
    assert [r[6] for r in second] == ["ccg"]
    (row,) = second
    assert row[12] == "full LP (earlier run)" and row[10] <= 1e-6
    assert row[11].endswith("x") and not row[11].startswith(">")


@pytest.mark.skipif(not (DATA / "adult.csv").exists(), reason="shared data not found")
def test_benchmark_lists_every_full_lp_setting_side_by_side(tmp_path):
    """Pieces with two full-LP settings: CCG's speed-up column names both, with their ratios."""
    from benchmarks import mrc

    store = str(tmp_path / "results.json")
    common = ["--quick", "--part", "a", "--sizes", "300", "--datasets", "synthetic",
              "--results", store]
    mrc.main(common + ["--methods", "lp"])
    mrc.main(common + ["--methods", "lp", "--lp-solver", "simplex", "--lp-formulation",
                       "primal"])
    (row,) = mrc.main(common + ["--methods", "ccg"])
    entries = row[11].split("; ")
    assert [e.rsplit(" ", 1)[0] for e in entries] == ["lp (ipm, dual)", "lp (simplex, primal)"]
    stored = json.loads(Path(store).read_text())["synthetic/300/30"]
    for entry in entries:
        key, ratio = entry.rsplit(" ", 1)
        assert ratio == f"{stored[key][2] / stored['ccg'][2]:.1f}x"


@pytest.mark.skipif(not (DATA / "haberman.csv").exists(), reason="shared data not found")
def test_benchmark_grid_quick_agrees_and_ends_with_the_worst_ratio(capsys):
    """Part (c): every instance's three solves agree and certify; the last line is the worst
    CCG ratio against the best full LP, computed from the rows."""
    from benchmarks import mrc

    rows = mrc.main(["--quick"])
    lines = capsys.readouterr().out.strip().splitlines()
    by_instance: dict = {}
    for r in rows:
        by_instance.setdefault((r[0], r[3]), []).append(r)
        assert r[7] == "optimal" and r[10] <= 1e-6
    ratios = []
    for runs in by_instance.values():
        assert [r[6] for r in runs] == ["full LP (ipm, dual)", "full LP (simplex, dual)", "ccg"]
        assert max(r[9] for r in runs) - min(r[9] for r in runs) <= 1e-6
        ratios.append(min(runs[0][8], runs[1][8]) / runs[2][8])
    assert lines[-1].startswith("worst ratio of CCG against the best full LP: ")
    assert lines[-1].split(": ")[1].startswith(f"{min(ratios):.2f}x")
    assert {r[2] for r in rows} >= {2, 4}
