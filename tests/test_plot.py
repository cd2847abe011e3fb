"""Plots render to PNG (Agg) with labels and legends; skipped without matplotlib."""

import numpy as np
import pytest

import ratecons as rc

pytest.importorskip("matplotlib")
from ratecons import plot  # noqa: E402
from ratecons.testing import synthetic_groups  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    data = synthetic_groups(n=200, seed=3)
    train, test = data.split(0.6, seed=0)

    def build(kappa):
        return rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-2),
                          subject_to=[rc.positive_rate(train.group("g", "a"))
                                      >= kappa * rc.positive_rate(train.group("g", "b"))])

    return train, test, build


def _png(fig, tmp_path, name):
    path = tmp_path / name
    fig.savefig(path, dpi=100)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def test_tradeoff_group_rates_and_convergence(setup, tmp_path):
    train, test, build = setup
    records = plot.sweep(build, [0.6, 0.8, 0.95], test=test, verbose=False)
    assert [r["target"] for r in records] == [0.6, 0.8, 0.95]
    assert all(np.isfinite(r["train"]) and np.isfinite(r["test"]) for r in records)
    ax = plot.tradeoff(records, xlabel="kappa", ylabel="error rate")
    assert ax.get_xlabel() == "kappa" and ax.get_legend() is not None
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["train", "test"]
    _png(ax.figure, tmp_path, "tradeoff.png")
    result = records[1]["result"]
    ax = plot.group_rates(result, test, "g", ratio=0.8)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    _png(ax.figure, tmp_path, "groups.png")
    ax = plot.convergence(result)
    assert ax.get_xlabel() == "iteration" and len(ax.lines) >= 1
    _png(ax.figure, tmp_path, "convergence.png")
    fig = plot.demo_figure({"constrained": result, "unconstrained": records[0]["result"]},
                           test, "g", 0.8, path=str(tmp_path / "demo.png"), records=records)
    assert len(fig.axes) >= 4 and (tmp_path / "demo.png").exists()


def test_convergence_with_bounds_and_gap(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] > 0).astype(int)
    result = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y)))).solve(
        "ccg", verbose=False)
    ax = plot.convergence(result)
    _png(ax.figure, tmp_path, "mrc.png")
    with pytest.raises(rc.SpecError, match="no group"):
        plot.group_rates(result, rc.Dataset(X, y), "g")
