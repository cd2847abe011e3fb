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

    base = rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-2))
    a, b = train.group("g", "a"), train.group("g", "b")
    return train, test, base, lambda kappa: rc.positive_rate_ratio(a, b) >= kappa


def _png(fig, tmp_path, name):
    path = tmp_path / name
    fig.savefig(path, dpi=100)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def test_tradeoff_group_rates_and_convergence(setup, tmp_path):
    train, test, base, rule = setup
    frontier = rc.sweep(base, rule, [0.6, 0.8, 0.95], test=test)
    assert [p.target for p in frontier.points] == [0.6, 0.8, 0.95]
    ax = plot.tradeoff(frontier, others={"elsewhere": (0.9, 0.3)}, ylabel="error rate")
    assert ax.get_ylabel() == "error rate" and "(held-out)" in ax.get_xlabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["Pareto front", "constrained", "unconstrained", "elsewhere"]
    assert [t.get_text() for t in ax.texts] == ["0.6", "0.8", "0.95"]
    front = ax.lines[0]
    assert len(front.get_xdata()) == len(frontier.pareto())
    _png(ax.figure, tmp_path, "tradeoff.png")
    with pytest.raises(rc.SpecError, match="test= to rc.sweep"):
        plot.tradeoff(rc.sweep(base, rule, [0.8]))
    result = frontier.points[1].result
    ax = plot.group_rates(result, test, "g", ratio=0.8)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    _png(ax.figure, tmp_path, "groups.png")
    ax = plot.convergence(result)
    assert ax.get_xlabel() == "iteration" and len(ax.lines) >= 1
    _png(ax.figure, tmp_path, "convergence.png")
    fig = plot.demo_figure({"constrained": result,
                            "unconstrained": frontier.unconstrained.result},
                           test, "g", 0.8, path=str(tmp_path / "demo.png"), frontier=frontier)
    assert len(fig.axes) >= 4 and (tmp_path / "demo.png").exists()
    assert fig.axes[0].get_ylim() == fig.axes[1].get_ylim()  # the models on one scale


def test_convergence_with_bounds_and_gap(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] > 0).astype(int)
    result = rc.Problem(minimize=rc.minimax_risk(rc.MomentSet(rc.Dataset(X, y)))).solve(
        "ccg", verbose=False)
    ax = plot.convergence(result)  # constraint generation records its restricted LP's value
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["lower"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [h["lower"] for h in result.history])
    _png(ax.figure, tmp_path, "mrc.png")
    with pytest.raises(rc.SpecError, match="no group"):
        plot.group_rates(result, rc.Dataset(X, y), "g")


class _Solved:
    """What convergence reads from a result: method, status, history."""

    def __init__(self, history):
        self.method, self.status, self.history = "made up", "optimal", history


def test_convergence_reads_each_methods_names_and_skips_missing_values():
    # the shared names; a lower bound far below the optimum at first; the gap is
    # infinite until both bounds exist
    history = [{"iteration": k, "upper": 1 + 2.0 ** -k, "lower": 1 - 50 * 2.0 ** -k,
                "gap": np.inf if k == 0 else 2.0 ** -k} for k in range(8)]
    history[3].pop("lower")
    ax = plot.convergence(_Solved(history))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["upper", "lower", "gap (right)"]
    upper, lower = ax.lines[:2]
    np.testing.assert_array_equal(upper.get_xdata(), np.arange(8))
    np.testing.assert_array_equal(lower.get_xdata(), [0, 1, 2, 4, 5, 6, 7])
    assert ax.get_ylim()[0] > -10  # the first lower bounds do not flatten the curves
    [right] = [a for a in ax.figure.axes if a is not ax]
    assert right.get_yscale() == "log" and len(right.lines[0].get_xdata()) == 7  # no inf
    with pytest.raises(rc.SpecError, match="nothing to draw"):
        plot.convergence(_Solved([{"iteration": 1, "time": 0.1}]))
    with pytest.raises(rc.SpecError, match="nothing to draw"):
        plot.convergence(_Solved([]))


def test_convergence_draws_a_second_run_after_the_first():
    """``ratecons demo --plot``: the history's second run (iterations 0..3 after 0..14) was
    joined back to iteration 0; it follows the first now, a dotted line where it starts."""
    history = [{"iteration": k, "objective": 1.0 / (k + 1)} for k in range(15)]
    history += [{"iteration": k, "objective": 0.06 - 0.001 * k} for k in range(4)]
    ax = plot.convergence(_Solved(history))
    np.testing.assert_array_equal(ax.lines[-1].get_xdata(), np.arange(19))
    assert [line.get_xdata()[0] for line in ax.lines[:-1]] == [14.5]  # the run's start
    assert "one after another" in ax.get_xlabel()
    plain = plot.convergence(_Solved(history[:15]))
    assert plain.get_xlabel() == "iteration" and len(plain.lines) == 1


def test_every_drawing_is_in_the_paper_style():
    """tradeoff, roc, group_rates and convergence draw with the paper's font sizes
    (convergence had lost its style to a helper written between it and its decorator)."""
    for draw in (plot.tradeoff, plot.roc, plot.group_rates, plot.convergence):
        assert hasattr(draw, "__wrapped__"), draw.__name__
    history = [{"iteration": k, "objective": 1.0 / (k + 1)} for k in range(5)]
    ax = plot.convergence(_Solved(history))
    assert ax.xaxis.label.get_fontsize() == 8 and ax.title.get_fontsize() == 8


def test_roc_with_log_fpr_and_tpr_at_k_marks(tmp_path):
    from ratecons import metrics

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0.8).astype(int)
    data = rc.Dataset(X, y, name="toy")
    top = rc.Problem(maximize=rc.tpr_at_top(data, k=5)).solve(verbose=False)
    assert np.linalg.norm(top.w) > 0.1  # a model, not the trivial w = 0
    noise = rng.normal(size=300)
    ax = plot.roc({"TopPushK": top, "noise": noise}, data, ks=(1, 5))
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] == pytest.approx(0.5 / (y == 0).sum())
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == f"TopPushK (AUC {metrics.auc(top.decision_function(data), y):.3f})"
    marks = ax.lines[1]
    n_neg = int((y == 0).sum())
    np.testing.assert_allclose(marks.get_xdata(), [1 / n_neg, 5 / n_neg])
    np.testing.assert_allclose(marks.get_ydata(),
                               [metrics.tpr_at_top(top.decision_function(data), y, k)
                                for k in (1, 5)])
    assert all(ax.lines[0].get_xdata() > 0)  # FPR = 0 is left out of the log axis
    _png(ax.figure, tmp_path, "roc.png")
    linear = plot.roc({"noise": noise}, data, log_fpr=False)
    assert linear.get_xscale() == "linear"
