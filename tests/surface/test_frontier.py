"""rc.sweep: the frontier of a constraint's targets against the unconstrained model, its
numbers equal to the reports of the same solves, parallel equal to sequential, the Pareto
front non-dominated, the table and its displays."""

import numpy as np
import pytest

import ratecons as rc
from ratecons.frontier import COLUMNS, Frontier
from ratecons.testing import synthetic_groups


@pytest.fixture(scope="module")
def setup():
    train, test = synthetic_groups(n=300, seed=8).split(0.6, seed=0)
    a, b = train.group("g", "a"), train.group("g", "b")
    base = rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-2))
    frontier = rc.sweep(base, lambda k: rc.positive_rate_ratio(a, b) >= k,
                        [0.7, 0.85, 1.0], test=test, method="cvxpy")
    return train, test, base, (a, b), frontier


def test_points_are_the_reports_of_the_same_solves(setup):
    train, test, _, (a, b), frontier = setup
    assert isinstance(frontier, Frontier) and frontier.higher_is_better
    assert frontier.unconstrained.target is None
    for p in [*frontier.points, frontier.unconstrained]:
        assert p.status == "optimal" and p.method == "cvxpy"
        rep, held = p.result.report(), p.result.report(test)
        assert p.train_objective == rep.rows[0].indicator
        assert p.test_objective == held.rows[0].indicator
        ratio = rc.positive_rate_ratio(a, b)
        assert p.train_fairness == pytest.approx(ratio.value(p.result.scorer))
        test_ratio = rc.positive_rate_ratio(test.group("g", "a"), test.group("g", "b"))
        assert p.test_fairness == pytest.approx(test_ratio.value(p.result.scorer))
    for p in frontier.points:  # each solve carries its own constraint, or says whose it is
        source = p.target if not p.model_from else float(p.model_from.split()[-1])
        assert [c.target for c in p.result.problem.constraints] == [source]
        assert p.train_fairness >= p.target - 1e-9  # its model meets its own target


def test_pareto_front_is_not_dominated(setup):
    *_, frontier = setup
    front = frontier.pareto()
    solved = [*frontier.points, frontier.unconstrained]
    for p in front:
        for q in solved:
            assert not (q.test_objective < p.test_objective
                        and q.test_fairness > p.test_fairness)
    xs = [p.test_fairness for p in front]
    assert xs == sorted(xs)


def test_pareto_front_of_a_maximized_objective():
    """A user's sweep (1,025 Adult rows): maximize recall with FPR <= c for four targets. The
    front took every objective as minimized and kept only the worst recall (c = 0.02); with
    recall maximized and FPR lower-is-fairer, no point beats another, and all are kept."""
    adult = rc.datasets.load_adult()
    data, _ = adult.split(0.03, seed=11)
    train, test = data.split(0.7, seed=0)
    base = rc.Problem(maximize=rc.recall(train), subject_to=[rc.positive_rate(train) <= 0.5],
                      model=rc.LinearModel(l2=1e-3))
    frontier = rc.sweep(base, lambda c: rc.false_positive_rate(train) <= c,
                        [0.02, 0.05, 0.1, 0.2], test=test)
    assert frontier.maximized and not frontier.higher_is_better
    solved = [p for p in [*frontier.points, frontier.unconstrained]
              if np.isfinite(p.test_objective) and np.isfinite(p.test_fairness)]
    front = frontier.pareto()
    for p in solved:  # on the front exactly when no point beats it both ways
        beaten = any(q.test_objective >= p.test_objective and q.test_fairness <= p.test_fairness
                     and (q.test_objective > p.test_objective
                          or q.test_fairness < p.test_fairness) for q in solved)
        assert (p in front) != beaten
    assert len(front) >= 4


@pytest.mark.parametrize("written", ["A >= kB", "kB <= A", "A - kB >= 0"])
def test_the_80_percent_rule_written_out_is_measured_as_its_ratio(setup, written):
    """``positive_rate(a) >= k * positive_rate(b)`` (the README's form), and the same written
    other ways, were measured by one side (group a's positive rate alone, or the first
    target's expression), labelled "higher is fairer": they are measured by the ratio, as
    ``positive_rate_ratio(a, b) >= k`` is, with a zero or a single target too."""
    train, _, base, (a, b), _ = setup
    A, B = rc.positive_rate(a), rc.positive_rate(b)
    build = {"A >= kB": lambda k: A >= k * B, "kB <= A": lambda k: k * B <= A,
             "A - kB >= 0": lambda k: A - k * B >= 0}[written]
    ratio = rc.positive_rate_ratio(a, b)
    for targets in ([0.7, 1.0], [0.0, 0.7], [0.7]):
        frontier = rc.sweep(base, build, targets, method="cvxpy")
        assert frontier.fairness == f"{A.name} / {B.name}" and frontier.higher_is_better
        for p in [*frontier.points, frontier.unconstrained]:
            assert p.train_fairness == pytest.approx(ratio.value(p.result.scorer))


def test_a_ratio_bounded_above_and_other_forms(setup):
    """FPR(a) <= k FPR(b) is the ratio FPR(a) / FPR(b), lower is fairer; an expression the
    target does not scale keeps its left-hand side."""
    train, _, base, (a, b), _ = setup
    bounded = rc.sweep(base, lambda k: rc.false_positive_rate(a)
                       <= k * rc.false_positive_rate(b), [0.7, 1.0], method="cvxpy")
    fpr = rc.RatioExpr(rc.false_positive_rate(a), rc.false_positive_rate(b), "fpr ratio")
    assert not bounded.higher_is_better and " / " in bounded.fairness
    for p in bounded.points:
        assert p.train_fairness == pytest.approx(fpr.value(p.result.scorer))
    shifted = rc.sweep(base, lambda c: rc.positive_rate(a) >= rc.positive_rate(b) - c,
                       [0.1, 0.2], method="cvxpy")
    assert shifted.fairness == rc.positive_rate(a).name


def monotone(frontier: Frontier) -> bool:
    points = sorted(frontier.points, key=lambda p: p.target)
    return bool(np.all(np.diff([p.train_objective for p in points]) >= 0)
                and np.all(np.diff([p.train_fairness for p in points]) >= 0))


def test_parallel_stretches_are_monotone_and_feasible(setup):
    train, test, base, (a, b), frontier = setup
    again = rc.sweep(base, lambda k: rc.positive_rate_ratio(a, b) >= k, [0.7, 0.85, 1.0],
                     test=test, method="cvxpy", n_jobs=2)
    for front in (frontier, again):
        assert monotone(front)
        assert all(p.status == "optimal" and p.train_fairness >= p.target - 1e-9
                   for p in front.points)


def test_path_warm_starts_from_the_tighter_neighbour(setup):
    *_, frontier = setup
    own = {p.target: p.result for p in frontier.points if not p.model_from}
    tightest = own.pop(max(own))
    assert "warm_start" not in tightest.certificate.details  # the path starts cold
    for result in own.values():  # every other solve starts at a tighter target's model
        start = result.certificate.details["warm_start"]
        assert not start["cold_fallback"]
        assert start["anchor_feasible"] == (start["anchor_violation"] <= 1e-6)


def test_a_path_warm_starts_where_its_method_can(setup, monkeypatch):
    """Under ``auto`` on 10,000 Adult rows the constrained points go to ``mm`` (warm starts)
    and the unconstrained end to ``structured`` (none): the sweep then warm-started nothing,
    all or none. Each solve now starts warm where its own method takes a warm start."""
    from ratecons import frontier as module

    train, test, base, (a, b), _ = setup
    takes = module._takes_warm_start
    monkeypatch.setattr(module, "_takes_warm_start",
                        lambda problem, method: bool(problem.constraints)
                        and takes(problem, method))
    front = rc.sweep(base, lambda k: rc.positive_rate_ratio(a, b) >= k, [0.7, 0.85, 1.0],
                     test=test, method="cvxpy")
    own = {p.target: p.result for p in front.points if not p.model_from}
    own.pop(max(own))  # the tightest starts cold
    assert own and all("warm_start" in r.certificate.details for r in own.values())


def test_sweep_on_adult_is_monotone_and_reuses_honestly():
    train, _ = rc.datasets.load_adult().split(0.7, seed=0)
    train = train.take(np.sort(np.random.default_rng(1).choice(train.n, 1500, replace=False)),
                       "adult[train]")
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    base = rc.Problem(minimize=rc.error_rate(train), model=rc.LinearModel(l2=1e-2))
    frontier = rc.sweep(base, lambda k: rc.positive_rate_ratio(women, men) >= k,
                        [0.4, 0.6, 0.8, 0.9, 1.0], method="mm", seed=0)
    assert monotone(frontier)
    assert frontier.unconstrained.train_objective <= min(p.train_objective
                                                         for p in frontier.points)
    for p in frontier.points:
        ratio = rc.positive_rate_ratio(women, men).value(p.result.scorer)
        assert p.train_fairness == ratio >= p.target - 1e-9  # measured on the model it shows
        assert p.model_from or p.result.problem.constraints[0].target == p.target


def test_table_and_displays(setup):
    *_, frontier = setup
    records = frontier.to_records()
    assert len(records) == 4 and list(records[0]) == list(COLUMNS)
    assert records[-1]["target"] is None
    assert frontier.to_frame().shape == (4, len(COLUMNS))
    text = str(frontier)
    assert text.count("\n") == 1 + 4 and "none" in text and "own solve" in text
    assert len(repr(frontier)) < 300 and repr(frontier).startswith("Frontier(3 targets")
    html = frontier._repr_html_()
    assert "<table" in html and "unconstrained" in html


def test_other_fairness_quantities_and_bad_input(setup):
    train, test, base, (a, b), _ = setup
    gap = rc.true_positive_rate(a.positives) - rc.true_positive_rate(b.positives)
    frontier = rc.sweep(base, lambda t: [gap <= t, gap >= -t], [0.2], method="cvxpy",
                        fairness=gap)
    point = frontier.points[0]
    assert not frontier.higher_is_better
    assert point.train_fairness == pytest.approx(gap.value(point.result.scorer))
    assert np.isnan(point.test_fairness)
    with pytest.raises(rc.SpecError, match="at least one target"):
        rc.sweep(base, lambda t: gap <= t, [])
    with pytest.raises(rc.SpecError, match="returned no constraint"):
        rc.sweep(base, lambda t: [], [0.1])
