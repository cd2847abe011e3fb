"""Benchmark: composed problems by ``auto`` (the structured chain where it applies) against the
CVXPY chain and against an unconstrained scikit-learn fit, on a grid of instances.

Part A is the grid: compositions (objectives error rate, hinge, logistic, chi-square and KL
robust logistic losses, a chi-square robust hinge loss, TPR@K, TPR@tau by Pat&Mat (tau = 0.05,
among all examples) and Pat&Mat-NP (among the negatives); constraints the 80% rule, a
recall floor, FPR parity, churn against a deployed model, worst-case rates (a chi-square and
a KL worst-case recall, the 80% rule under every chi-square reweighting of a group); linear models
and a gaussian kernel with 500 Nystrom features) on three kinds of data: a 2,000-row Adult
sample, the whole Adult training split (34,189 rows, sparse one-hot features) and a dense
synthetic set of 200,000 rows. Every row prints the time of ``auto`` (the method it picked), the
time of the reference chain (``method="generic"``, CVXPY steps; skipped above
``--cvxpy-max-rows``, and stopped at ``--cvxpy-time-limit``, then shown as a lower bound), the
time of a scikit-learn ``LogisticRegression`` fit on the same rows in the same run (the floor:
what an unconstrained model costs; the least of three fits), ``auto``'s objective (the user's
sense), the objective gap between the two chains, the ramp's width of ``auto``'s model
(``result.ramp_width``: below 1 where the chain solved at its loss's scale,
:mod:`ratecons.chain_scale`) and both statuses. The last lines are the worst ratio of
``auto``'s time to the logistic fit and the worst speed-up of ``auto`` over the CVXPY chain.
``mm`` and ``ipm`` are the chain's MM steps (repairs included) and, for the structured steps,
the interior-point iterations over the whole run.

Part B times the structures a pattern accepts (error rate + 80% rule and + recall floor;
TPR@K at k = n/200, l2 = 1e-2, where w = 0 is optimal on Adult, and at k = n/50, l2 = 1e-3;
TPR@tau at tau = 0.05 by Pat&Mat and Pat&Mat-NP, l2 = 1e-3; the chi-square robust logistic
loss and the KL robust hinge loss) by the pattern's ``auto`` method and by the chain with the
structured steps where it applies (``method="structured"``, else the CVXPY chain): a pattern
should earn its place by a measured margin.

Where a problem ran on several sizes, a table gives its time's growth against the rows' growth
from the smallest size to the largest (``--sizes synthetic34189,200000`` compares the same
generator at the whole Adult split's row count and at 200,000 rows).

From 30,000 rows the chains start from a solve on a row sample (:mod:`ratecons.sample_start`);
``--no-sample-start`` runs part A without it, for the comparison.

A status marked ``*`` is a degenerate answer (``certificate.details["degenerate"]``: a constant
score is optimal, :class:`~ratecons.errors.TrivialOptimumWarning`): its time measures a trivial
instance, and the growth table marks a row degenerate at either size.

``--sizes shared:NAME`` runs the grid on a data set of ../shared/data instead (say
``shared:satellite``; :func:`shared`).

Run: ``python -m benchmarks.composition [--sizes 2000,adult,200000] [--only NAME,NAME]
[--cvxpy-max-rows N] [--cvxpy-time-limit S] [--skip-b] [--no-sample-start]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

import ratecons as rc
from ratecons import dispatch
from ratecons.errors import NotLinearError
from ratecons.expr.ranking import TPRAtQuantile

#: Problem builders of the grid: name -> (data -> Problem)
Builder = Callable[[rc.Dataset], rc.Problem]


def _linear(l2: float = 1e-3) -> rc.LinearModel:
    return rc.LinearModel(l2=l2)


def _pat_mat(D: rc.Dataset, among: str = "negatives") -> TPRAtQuantile:
    """The TPR@tau rows' objective: tau = 0.05 by Pat&Mat (``among="all"``) or Pat&Mat-NP."""
    return rc.tpr_at_quantile(D, tau=0.05, among=among, formulation="pat&mat")


def _kernel() -> rc.KernelModel:
    return rc.KernelModel(kernel="gaussian", l2=1e-3)


def grid() -> dict[str, tuple[Builder, bool]]:
    """The compositions: name -> (builder, kernel?)."""
    def rule(D: rc.Dataset):
        a, b = D.group("g", "a"), D.group("g", "b")
        return rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)

    def parity(D: rc.Dataset):
        a, b = D.group("g", "a"), D.group("g", "b")
        return rc.false_positive_rate(a) - rc.false_positive_rate(b) <= 0.02

    def worst_recall(D: rc.Dataset):
        return rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(D.positives, phi="chi2",
                                                                rho=0.1)) >= 0.6

    def worst_rule(D: rc.Dataset):
        # the 80% rule for every chi-square reweighting of group a within rho = 0.1
        a, b = D.group("g", "a"), D.group("g", "b")
        return rc.worst_case(rc.positive_rate(a), rc.PhiDivergenceBall(
            a, phi="chi2", rho=0.1)) >= 0.8 * rc.positive_rate(b)

    def problem(objective, constraints, model=None, maximize=False):
        def build(D: rc.Dataset) -> rc.Problem:
            sense = "maximize" if maximize else "minimize"
            return rc.Problem(**{sense: objective(D)}, subject_to=constraints(D),
                              model=model() if model else _linear())
        return build

    return {
        "error + 80% rule": (problem(rc.error_rate, lambda D: [rule(D)]), False),
        "hinge + 80% rule": (problem(rc.hinge_loss, lambda D: [rule(D)]), False),
        "logistic + 80% rule": (problem(rc.logistic_loss, lambda D: [rule(D)]), False),
        "logistic + recall floor": (problem(rc.logistic_loss,
                                            lambda D: [rc.recall(D) >= 0.7]), False),
        "hinge + FPR parity": (problem(rc.hinge_loss, lambda D: [parity(D)]), False),
        "error + churn": (problem(rc.error_rate, lambda D: [rc.churn_rate(D) <= 0.05]), False),
        "logistic + churn + 80%": (problem(rc.logistic_loss, lambda D: [
            rc.churn_rate(D) <= 0.05, rule(D)]), False),
        "error + recall (l1)": (problem(rc.error_rate, lambda D: [rc.recall(D) >= 0.7],
                                       lambda: rc.LinearModel(l2=1e-4, l1=1e-4)), False),
        "robust chi2 + recall": (problem(lambda D: rc.robust_loss(rc.PhiDivergenceBall(
            D, phi="chi2", rho=0.1)), lambda D: [rc.recall(D) >= 0.7]), False),
        "robust KL + 80% rule": (problem(lambda D: rc.robust_loss(rc.PhiDivergenceBall(
            D, phi="kl", rho=0.1)), lambda D: [rule(D)]), False),
        "robust chi2 hinge + 80% rule": (problem(lambda D: rc.robust_loss(
            rc.PhiDivergenceBall(D, phi="chi2", rho=0.1), loss="hinge"),
            lambda D: [rule(D)]), False),
        "TPR@K + 80% rule": (problem(lambda D: rc.tpr_at_top(D, k=max(1, D.n // 200)),
                                     lambda D: [rule(D)], maximize=True), False),
        "TPR@tau + 80% rule": (problem(lambda D: _pat_mat(D, "all"), lambda D: [rule(D)],
                                       maximize=True), False),
        "TPR@tau NP + recall + parity": (problem(_pat_mat, lambda D: [
            rc.recall(D) >= 0.7, parity(D)], maximize=True), False),
        "logistic + worst-case recall": (problem(rc.logistic_loss,
                                                 lambda D: [worst_recall(D)]), False),
        "error + worst-case recall (KL)": (problem(rc.error_rate, lambda D: [
            rc.worst_case(rc.recall(D), rc.PhiDivergenceBall(D.positives, phi="kl",
                                                             rho=0.1)) >= 0.6]), False),
        "logistic + worst-case 80% rule": (problem(rc.logistic_loss,
                                                   lambda D: [worst_rule(D)]), False),
        "kernel error + 80% rule": (problem(rc.error_rate, lambda D: [rule(D)], _kernel),
                                    True),
        "kernel logistic + FPR parity": (problem(rc.logistic_loss, lambda D: [parity(D)],
                                                 _kernel), True),
    }


def _with_baseline(D: rc.Dataset) -> rc.Dataset:
    """D with the predictions of a deployed model (an unconstrained logistic fit on half the
    rows) as its baseline, for the churn rows."""
    from sklearn.linear_model import LogisticRegression

    half = np.arange(D.n) % 2 == 0
    fit = LogisticRegression(max_iter=500).fit(D.X[half], D.y[half])
    return D.with_baseline(fit.predict(D.X).astype(int))


def adult(rows: int | None) -> rc.Dataset:
    """The Adult training split (70%, seed 0), sampled to ``rows``, with group "g" = sex."""
    data = rc.datasets.load_adult()
    train, _ = data.split(0.7, seed=0)
    if rows:
        train = train.take(np.random.default_rng(0).choice(train.n, rows, replace=False),
                           name="adult")
    sex = np.asarray(train.groups["sex"])
    return _with_baseline(rc.Dataset(train.X, train.y, groups={"g": np.where(
        sex == "Female", "a", "b")}, name=f"adult{train.n}"))


def synthetic(rows: int, d: int = 20, seed: int = 0) -> rc.Dataset:
    """Dense synthetic data: labels from a noisy linear rule, group "a" shifted."""
    rng = np.random.default_rng(seed)
    group = rng.random(rows) < 0.4
    X = rng.normal(size=(rows, d))
    X[:, 0] -= np.where(group, 1.0, 0.0)
    y = (X @ rng.normal(size=d) + 0.5 * rng.normal(size=rows) > 0).astype(int)
    return _with_baseline(rc.Dataset(X, y, groups={"g": np.where(group, "a", "b")},
                                     name=f"synthetic{rows}"))


def shared(name: str) -> rc.Dataset:
    """A data set of ../shared/data (standardized; class 0 against the rest when it has more
    than two, or the classes above the median class against the others when class 0 holds
    under a tenth of the rows), with group "a" the rows above the median of the first feature
    that splits them into two groups of at least a fifth each (else of the feature that
    splits them most evenly): instances the grid was not tuned on."""
    from benchmarks.dro_instances import DATA, real

    data = real(name)
    if data is None:
        raise FileNotFoundError(f"{DATA / name}.csv is missing (the shared data folder)")
    y = np.asarray(data.y)
    if min(y.mean(), 1.0 - y.mean()) < 0.1:
        classes = np.asarray(rc.datasets.load_csv(DATA / f"{name}.csv").y)
        y = (classes > np.median(classes)).astype(int)
    X = np.asarray(data.X)
    sides = [X[:, j] > np.median(X[:, j]) for j in range(X.shape[1])]
    balance = [min(side.mean(), 1.0 - side.mean()) for side in sides]
    above = next((side for side, least in zip(sides, balance) if least >= 0.2),
                 sides[int(np.argmax(balance))])  # else the most even split
    return _with_baseline(rc.Dataset(X, y, groups={"g": np.where(above, "a", "b")},
                                     name=name))


def datasets(sizes: list[str]) -> list[rc.Dataset]:
    out = []
    for size in sizes:
        if size == "adult":
            out.append(adult(None))
        elif size.startswith("shared:"):
            out.append(shared(size.removeprefix("shared:")))
        elif size.startswith("synthetic") or int(size) > 40_000:
            out.append(synthetic(int(size.removeprefix("synthetic") or 200_000)))
        else:
            out.append(adult(int(size)))
    return out


def logistic_floor(D: rc.Dataset, repeats: int = 3) -> float:
    """Seconds of an unconstrained scikit-learn LogisticRegression fit on D's rows: the least
    of ``repeats`` fits. One fit of the whole Adult split took 0.11 to 1.9 s within one run on
    the shared 2-core machine (its BLAS threads contend with the load), which made the ratio
    to it mostly noise; the least is the stable floor, and the hardest to be near."""
    from sklearn.linear_model import LogisticRegression

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        LogisticRegression(max_iter=1000).fit(D.X, D.y)
        times.append(time.perf_counter() - start)
    return min(times)


def _solve(problem: rc.Problem, method: str, **options) -> tuple[rc.Result | None, float, str]:
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = problem.solve(method, verbose=False, **options)
    except NotLinearError as exc:
        return None, time.perf_counter() - start, f"refused: {exc}"
    return result, time.perf_counter() - start, result.status


def _compile(D: rc.Dataset, only: list[str] | None) -> None:
    """Solve every problem of the grid once on 400 rows of D, untimed, by ``auto`` and by the
    method ``auto`` plans for D itself (on 400 rows it may pick another: the CVXPY chain, so
    that the structured step's numba kernels were loaded inside a timed row), so that no
    row's time includes compiling the numba kernels its methods use (or the first
    scikit-learn fit)."""
    sample = D.take(np.random.default_rng(1).choice(D.n, min(D.n, 400), replace=False),
                    name="warm-up")
    logistic_floor(sample, repeats=1)
    for name, (build, kernel) in grid().items():
        if not only or name in only:
            options = {"kernel_points": 100} if kernel else {}
            for method in dict.fromkeys(["auto", build(D).plan().method]):
                _solve(build(sample), method, time_limit=60.0, **options)


def part_a(data: list[rc.Dataset], only: list[str] | None, cvxpy_max_rows: int,
           cvxpy_time_limit: float, sample_start: bool | None = None) -> list[dict]:
    head = (f"{'problem':30s} {'n':>7s} {'auto method':>16s} {'auto (s)':>9s} "
            f"{'cvxpy (s)':>10s} {'logreg (s)':>10s} {'auto/logreg':>11s} {'cvxpy/auto':>10s} "
            f"{'objective':>10s} {'obj gap':>9s} {'width':>6s} {'auto status':>12s} "
            f"{'cvxpy status':>13s} {'mm':>4s} {'ipm':>5s}")
    _compile(data[0], only)
    print("A. the grid: auto against the CVXPY chain and an unconstrained logistic fit")
    print(head)
    rows = []
    for D in data:
        for name, (build, kernel) in grid().items():
            if only and name not in only:
                continue
            problem = build(D)
            options = {"kernel_points": 500} if kernel else {}
            floor = logistic_floor(D)
            chosen = {"sample_start": sample_start} if sample_start is not None and (
                "sample_start" in dispatch.resolve(problem, "auto")[0].options) else {}
            ours, t_ours, status = _solve(problem, "auto", time_limit=cvxpy_time_limit,
                                          **options, **chosen)
            method = "-" if ours is None else (
                ours.method if problem.pattern.name.startswith("composed")
                else f"{problem.pattern.name.split()[0]}:{ours.method}")
            ref, t_ref, ref_status = None, float("nan"), "skipped"
            if method == "cvxpy":  # auto picked the reference chain itself
                ref, t_ref, ref_status = ours, t_ours, status
            elif D.n <= cvxpy_max_rows:
                ref, t_ref, ref_status = _solve(problem, "generic",
                                                time_limit=cvxpy_time_limit, **options)
            gap = (abs(ours.objective - ref.objective) / max(1.0, abs(ref.objective))
                   if ours is not None and ref is not None and ours.has_model and ref.has_model
                   else float("nan"))
            details = {} if ours is None else ours.certificate.details
            steps = (f"{details.get('mm_iterations', '-'):>4} "
                     f"{details.get('interior_iterations', '-'):>5}")
            bound = ">" if ref_status == "time_limit" else " "
            speedup = t_ref / t_ours
            degenerate = "degenerate" in details
            rows.append({"problem": name, "n": D.n, "method": method, "auto": t_ours,
                         "objective": ours.objective if ours is not None else float("nan"),
                         "cvxpy": t_ref, "floor": floor, "speedup": speedup,
                         "to_floor": t_ours / floor, "gap": gap, "status": status,
                         "ref_status": ref_status, "degenerate": degenerate})
            shown = status + ("*" if degenerate else "")
            objective, width = ((ours.objective, ours.ramp_width) if ours is not None
                                and ours.has_model else (float("nan"), float("nan")))
            print(f"{name:30s} {D.n:7d} {method:>16s} {t_ours:9.2f} {bound}{t_ref:9.2f} "
                  f"{floor:10.2f} {t_ours / floor:11.1f} {bound}{speedup:9.1f} "
                  f"{objective:10.6f} {gap:9.1e} {width:6.3f} {shown:>12s} {ref_status:>13s} "
                  f"{steps}", flush=True)
    if any(r["degenerate"] for r in rows):
        print("* degenerate: a constant score is the optimum (TrivialOptimumWarning); the "
              "time measures a trivial instance")
    return rows


def pattern_problems(D: rc.Dataset) -> dict[str, rc.Problem]:
    """Part B's problems on D: structures a pattern accepts."""
    a, b = D.group("g", "a"), D.group("g", "b")
    return {
        "error rate + 80% rule": rc.Problem(
            minimize=rc.error_rate(D), model=_linear(),
            subject_to=[rc.positive_rate(a) >= 0.8 * rc.positive_rate(b)]),
        "error rate + recall floor": rc.Problem(
            minimize=rc.error_rate(D), model=_linear(), subject_to=[rc.recall(D) >= 0.8]),
        "TPR@K": rc.Problem(maximize=rc.tpr_at_top(D, k=max(1, D.n // 200)),
                            model=_linear(1e-2)),
        "TPR@K (k = n/50)": rc.Problem(maximize=rc.tpr_at_top(D, k=max(1, D.n // 50)),
                                       model=_linear(1e-3)),
        "TPR@tau (Pat&Mat)": rc.Problem(maximize=_pat_mat(D, "all"), model=_linear()),
        "TPR@tau (Pat&Mat-NP)": rc.Problem(maximize=_pat_mat(D), model=_linear()),
        "robust loss (chi2)": rc.Problem(
            minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="chi2", rho=0.1)),
            model=_linear()),
        "robust hinge (KL)": rc.Problem(
            minimize=rc.robust_loss(rc.PhiDivergenceBall(D, phi="kl", rho=0.1), loss="hinge"),
            model=_linear()),
    }


def part_b(D: rc.Dataset) -> list[dict]:
    sample = D.take(np.random.default_rng(1).choice(D.n, min(D.n, 400), replace=False),
                    name="warm-up")
    for problem in pattern_problems(sample).values():  # compile every method's kernels
        _solve(problem, "auto")
        _solve(problem, "structured")
    problems = pattern_problems(D)
    print(f"\nB. patterns against the chain (n = {D.n})")
    print(f"{'problem':24s} {'pattern method':>16s} {'pattern (s)':>11s} {'chain method':>12s} "
          f"{'chain (s)':>9s} {'chain/pattern':>13s} {'obj gap':>9s}")
    rows = []
    for name, problem in problems.items():
        ours, t_pattern, _ = _solve(problem, "auto")
        chain, t_chain, status = _solve(problem, "structured")
        if chain is None:
            chain, t_chain, status = _solve(problem, "cvxpy")
        gap = abs(ours.objective - chain.objective) / max(1.0, abs(chain.objective))
        rows.append({"problem": name, "ratio": t_chain / t_pattern, "gap": gap})
        print(f"{name:24s} {ours.method:>16s} {t_pattern:11.2f} {chain.method:>12s} "
              f"{t_chain:9.2f} {t_chain / t_pattern:13.2f} {gap:9.1e}", flush=True)
    return rows


def _print_growth(rows: list[dict]) -> None:
    """For problems timed on several sizes: the time's growth against the rows' growth from the
    smallest to the largest size (at most linear: a ratio <= 1). Only sizes of one kind of data
    compare cleanly (``--sizes synthetic34189,200000``: the same generator at the whole Adult
    split's row count and at 200,000 rows)."""
    by_problem: dict[str, list[dict]] = {}
    for r in rows:
        by_problem.setdefault(r["problem"], []).append(r)
    growth = []
    for name, timed in by_problem.items():
        if len(timed) < 2:
            continue
        small, large = min(timed, key=lambda r: r["n"]), max(timed, key=lambda r: r["n"])
        time_growth = large["auto"] / small["auto"]
        rows_growth = large["n"] / small["n"]
        note = " (degenerate at one size)" if small["degenerate"] or large["degenerate"] else ""
        growth.append((time_growth / rows_growth, name, small["n"], large["n"],
                       time_growth, rows_growth, note))
    if not growth:
        return
    print(f"\n{'problem':30s} {'from n':>7s} {'to n':>7s} {'time x':>7s} {'rows x':>7s} "
          f"{'time x / rows x':>15s}")
    for ratio, name, n_small, n_large, time_growth, rows_growth, note in growth:
        print(f"{name:30s} {n_small:7d} {n_large:7d} {time_growth:7.2f} {rows_growth:7.2f} "
              f"{ratio:15.2f}{note}")
    worst = max(growth)
    print(f"worst growth of auto's time against the rows' (1 = linear): {worst[0]:.2f} "
          f"({worst[1]}, n = {worst[2]} -> {worst[3]}){worst[6]}")


def run(sizes: list[str], only: list[str] | None = None, cvxpy_max_rows: int = 40_000,
        cvxpy_time_limit: float = 600.0, skip_b: bool = False,
        sample_start: bool | None = None) -> dict[str, list[dict]]:
    data = datasets(sizes)
    rows = part_a(data, only, cvxpy_max_rows, cvxpy_time_limit, sample_start)
    b_rows = [] if skip_b else part_b(data[0])
    if b_rows:
        worst = max(b_rows, key=lambda r: r["ratio"])
        print(f"worst chain/pattern time ratio: {worst['ratio']:.2f} ({worst['problem']})")
    if rows:
        _print_growth(rows)
        worst = max(rows, key=lambda r: r["to_floor"])
        print(f"\nworst ratio of auto's time to the logistic fit: {worst['to_floor']:.1f}x "
              f"({worst['problem']}, n={worst['n']}, {worst['method']})")
        measured = [r for r in rows if np.isfinite(r["speedup"]) and r["method"] != "cvxpy"]
        if measured:
            worst = min(measured, key=lambda r: r["speedup"])
            print(f"worst speed-up of auto over the CVXPY chain: {worst['speedup']:.1f}x "
                  f"({worst['problem']}, n={worst['n']}, {worst['method']})")
        print("compositions auto sends to the CVXPY chain (no structured lowering yet): "
              + (", ".join(sorted({r['problem'] for r in rows if r['method'] == 'cvxpy'}))
                 or "none"))
    return {"grid": rows, "patterns": b_rows}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,adult,200000",
                        help="comma-separated: a row count of Adult, 'adult' for the whole "
                             "training split, a count above 40,000 for synthetic data, "
                             "or shared:NAME for a data set of ../shared/data")
    parser.add_argument("--only", default="", help="comma-separated problem names to run")
    parser.add_argument("--cvxpy-max-rows", type=int, default=40_000)
    parser.add_argument("--cvxpy-time-limit", type=float, default=600.0)
    parser.add_argument("--skip-b", action="store_true", help="skip part B")
    parser.add_argument("--no-sample-start", action="store_true",
                        help="part A's chains without the start from a row sample "
                             "(sample_start=False; by default they sample from "
                             "30,000 rows)")
    args = parser.parse_args()
    run([s.strip() for s in args.sizes.split(",") if s.strip()],
        [s.strip() for s in args.only.split(",") if s.strip()] or None,
        args.cvxpy_max_rows, args.cvxpy_time_limit, args.skip_b,
        False if args.no_sample_start else None)
