"""Every example runs (in a reduced mode) and shows what it claims."""

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fairness_example_meets_the_rule_on_a_sample(capsys):
    out = load("fairness_80_percent_rule").main(sample=3000)
    assert out["status"] == "optimal"
    assert out["test_ratio"] >= 0.7  # 0.8 on train; held-out ratio is noisier at n = 900
    assert out["test_error"] < 0.2
    assert "report on adult[test]" in capsys.readouterr().out


def test_churn_recall_example_tracks_the_churn_target(capsys):
    rows = load("churn_recall").run(sizes=(600, 400, 500), targets=(0.1, 0.2))
    base, tight, loose = rows
    assert tight["status"] == loose["status"] == "optimal"
    # randomized churn on train meets each target (the constraint is on its expectation)
    for row in (tight, loose):
        assert row["train_churn_randomized"] <= row["target"] + 1e-6
        assert row["train_recall"] >= np.floor(100 * base["train_recall"]) / 100 - 0.15
    assert tight["train_churn"] < base["train_churn"]


def test_composition_example_solves_all_four_and_meets_them(capsys):
    out = load("composition").main(rows=300)
    assert set(out) == {"fair ranking at the top", "robust fair classification",
                        "kernel churn", "worst-case coverage"}
    for row in out.values():
        assert row["pattern"] == "composed (generic chain)"
        assert row["status"] == "optimal"
        assert row["train"].all_satisfied, str(row["train"])
    assert "report on adult[test]" in capsys.readouterr().out


def test_composition_benchmark_runs_both_paths(capsys):
    from benchmarks.composition import run

    # not error + 80% rule and error + churn: at 600 rows a few examples on the ramp's kinks
    # land on either side in the two chains and part their MM paths, 2.1e-3 and 2.9e-3 apart
    # (issue #29 open; docs/composition_log.md "Examples on the ramp's kinks"), nor the kernel
    # error row, whose CVXPY chain alone takes 10-40 s here
    only = ["logistic + 80% rule", "hinge + FPR parity", "robust chi2 + recall",
            "logistic + recall floor", "error + recall (l1)", "error + worst-case recall (KL)"]
    out = run(["600"], only=only)
    assert sorted(r["problem"] for r in out["grid"]) == sorted(only)
    assert all(r["status"] == r["ref_status"] == "optimal" for r in out["grid"])
    # the same chain with two step solvers: the same steps from the same start
    gaps = {r["problem"]: r["gap"] for r in out["grid"]}
    assert all(gap <= 1e-4 for gap in gaps.values()), gaps
    # a pattern's MM and the chain's may end at different local fixed points: timed only
    assert len(out["patterns"]) == 8  # six patterns and the two TPR@tau formulations
    methods = {r["problem"]: r["method"] for r in out["grid"]}
    assert methods["logistic + 80% rule"] == methods["hinge + FPR parity"] == "structured"
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3].startswith("worst ratio of auto's time to the logistic fit")
    assert lines[-2].startswith("worst speed-up of auto over the CVXPY chain")


def test_every_example_runs_from_a_plain_install_with_one_quick_switch():
    """No example reads data outside the package (the shared UCI folder only behind an
    explicit --data option) or an environment variable; each takes --quick."""
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        assert '"shared"' not in text and "environ" not in text, path.name
        assert '"--quick"' in text, path.name
