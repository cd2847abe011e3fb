"""``auto`` on rate problems against every rate method, on sparse and dense frames (issue 31).

    python -m benchmarks.auto_grid            # the grid of docs/mm.md, "When auto picks mm"
    python -m benchmarks.auto_grid --quick    # a few small instances (seconds)
    python -m benchmarks.auto_grid --counts   # rows in counts (ratios multiplied through)

Every instance minimizes the training error rate of a linear model subject to one to three rate
constraints, added in this order: the 80% rule s_p(group a) >= 0.8 s_p(group b); a recall floor
(the floor model's recall + 0.05, at most 0.95); an FPR cap, FPR(g) <= FPR(h) + 0.05 with g the
group the floor model gives the higher FPR. With ``--counts`` the constraints are rows in counts
instead (App. B's ratios multiplied through, Table 2's counts; docs/mm.md, "Rows in counts"):
a precision floor (the floor model's precision + 0.05, at most 0.95), then the 80% rule, then a
cap on the false positives (#FP <= 0.8 the floor model's). Frames: Adult's sparse one-hot
features (14 of 108 entries nonzero per row) from 500 rows to the whole training split
(34,189 rows), the same rows densified, and synthetic dense frames
(``ratecons.testing.synthetic_groups``) including the issue's 3,000 x 100. Every instance
is solved by each rate method side by side in one run:
``mm``, ``cvxpy``, ``structured`` (Alg 1 with every bound solved by the structured interior
point) and ``highs`` (the generic chain on the matrix form; ``hinge`` is left out: it solves the
hinge relaxation, another problem), each with ``time_limit`` seconds (``highs`` with
at most ``HIGHS_CAP`` times the faster of the other two); the floor is
scikit-learn's LogisticRegression (C = 1 / (n l2)) on the same rows. The table gives the
quantities ``auto`` reads (example-terms n, features d, density nnz / (n d), their product the
nonzero terms, constraints m, l2 x the largest dataset), its choice, every method's time,
status and objective (the ramp objective of the returned model) and the ratio of auto's time
(its chosen method's, from the same run) to the best method's. The LAST line is the worst of
these ratios (target <= 1.2).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import ratecons as rc
from ratecons import settings
from ratecons.patterns.rate_auto import RateSize, rate_size
from ratecons.testing import synthetic_groups

#: the rate methods timed side by side (``hinge`` solves another problem)
STRUCTURED = settings.STRUCTURED_METHOD
METHODS = ("mm", "cvxpy", STRUCTURED, "highs")
#: (name, training rows) of Adult's sparse frame; 0 = the whole training split
ADULT_ROWS = (500, 2000, 8000, 0)
#: training rows of the densified Adult frame
DENSE_ADULT_ROWS = (2000,)
#: (rows, features) of the synthetic dense frames
SYNTHETIC = ((1000, 20), (3000, 100), (10000, 50))
#: --quick: Adult's sparse frame and a synthetic dense one, one instance each
QUICK_ROWS, QUICK_SYNTHETIC = (800,), ((800, 100),)
#: ``highs`` is stopped at this multiple of the faster of mm and cvxpy (it is not the best
#: method then, which is all the ratio needs); it was 5-30x slower on the first grids
HIGHS_CAP = 1.0


@dataclass
class Instance:
    """One rate problem of the grid and its floor fit."""

    frame: str
    data: rc.Dataset
    m: int
    l2: float
    floor_seconds: float = 0.0


def frames(quick: bool) -> Iterator[tuple[str, rc.Dataset]]:
    """(label, training data with a two-valued group "g") of every frame of the grid."""
    adult, _ = rc.datasets.load_adult().split(0.7, seed=0)
    sex = adult.groups["sex"]
    adult = rc.Dataset(adult.X, adult.y, groups={"g": np.where(sex == "Female", "a", "b")},
                       name="adult")
    rng = np.random.default_rng(0)
    for n in (QUICK_ROWS if quick else ADULT_ROWS):
        rows = adult if not n or n >= adult.n else adult.take(
            np.sort(rng.choice(adult.n, n, replace=False)), "adult")
        yield f"adult sparse {rows.n}", rows
        if n in DENSE_ADULT_ROWS and not quick:
            yield f"adult dense {rows.n}", rc.Dataset(rows.X.toarray(), rows.y,
                                                      groups=dict(rows.groups), name="dense")
    for n, d in (QUICK_SYNTHETIC if quick else SYNTHETIC):
        yield f"synthetic {n}x{d}", synthetic_groups(n=n, d=d, seed=1)


def floor_fit(data: rc.Dataset, l2: float) -> tuple[Any, float]:
    """scikit-learn's LogisticRegression on the same rows: its predictions and time."""
    from sklearn.linear_model import LogisticRegression

    start = time.perf_counter()
    fit = LogisticRegression(C=1.0 / (data.n * l2), max_iter=1000).fit(data.X, data.y)
    return fit.predict(data.X), time.perf_counter() - start


def constraints(data: rc.Dataset, m: int, floor: np.ndarray) -> list[Any]:
    """The first ``m`` constraints of the module docstring."""
    a, b = data.group("g", "a"), data.group("g", "b")
    recall = float(np.mean(floor[data.y == 1] == 1))
    fpr = {s: float(np.mean(floor[(data.y == 0) & (data.groups["g"] == s)]))
           for s in ("a", "b")}
    high, low = (a, b) if fpr["a"] >= fpr["b"] else (b, a)
    made = [rc.positive_rate_ratio(a, b) >= 0.8, rc.recall(data) >= min(recall + 0.05, 0.95),
            rc.false_positive_rate(high) <= rc.false_positive_rate(low) + 0.05]
    return made[:m]


def count_constraints(data: rc.Dataset, m: int, floor: np.ndarray) -> list[Any]:
    """The first ``m`` constraints of ``--counts`` (module docstring)."""
    a, b = data.group("g", "a"), data.group("g", "b")
    y = np.asarray(data.y)
    precision = float(np.mean(y[floor == 1] == 1)) if np.any(floor == 1) else 0.5
    false_positives = float(np.sum((floor == 1) & (y == 0)))
    made = [rc.precision(data) >= min(precision + 0.05, 0.95),
            rc.positive_rate_ratio(a, b) >= 0.8,
            rc.false_positives(data) <= 0.8 * false_positives]
    return made[:m]


def grid(quick: bool) -> Iterator[Instance]:
    """Every instance: each frame with 1-3 constraints at l2 = 1e-3, l2 = 1e-4 with one,
    and l2 = 1e-2 with one and two (quick: one constraint at l2 = 1e-3)."""
    for label, data in frames(quick):
        for m, l2 in (((1, 1e-3),) if quick else ((1, 1e-4), (1, 1e-3), (2, 1e-3),
                                                  (3, 1e-3), (1, 1e-2), (2, 1e-2))):
            yield Instance(label, data, m, l2)


def run_instance(inst: Instance, limit: float, counts: bool = False) -> dict[str, Any]:
    """Auto's plan and every method's (time, status, objective) on one instance (with the
    constraints of ``--counts`` when ``counts``)."""
    floor, inst.floor_seconds = floor_fit(inst.data, inst.l2)
    made = (count_constraints if counts else constraints)(inst.data, inst.m, floor)
    problem = rc.Problem(minimize=rc.error_rate(inst.data), subject_to=made,
                         model=rc.LinearModel(l2=inst.l2))
    form = problem.canonical()  # compiled once, outside the timed solves
    plan = problem.plan()
    rows: dict[str, tuple[float, str, float]] = {}
    for method in METHODS:
        done = [t for t, status, _ in rows.values() if status in settings.SOLVED_STATUSES]
        budget = min(limit, HIGHS_CAP * min(done)) if method == "highs" and done else limit
        start = time.perf_counter()
        try:
            result = problem.solve(method=method, verbose=False, time_limit=budget)
            rows[method] = (time.perf_counter() - start, result.status, result.objective)
        except rc.RateconsError as exc:  # a method that does not apply to this instance
            rows[method] = (float("nan"), f"n/a: {type(exc).__name__}", float("nan"))
    return {"plan": plan, "rows": rows, "size": rate_size(form)}


def warm_up(limit: float) -> None:
    """Solve the quick grid's frames (three constraints) by every method once, untimed, so
    that no timed row includes loading the numba kernels its methods use, importing a solver
    or the first scikit-learn fit (the first structured solve of a process took 1.3 s on
    1,000 rows whose next solves take 0.1-0.3 s)."""
    for label, data in frames(quick=True):
        run_instance(Instance(label, data, 3, 1e-3), min(limit, 30.0))


def fit_cost_model(records: list[tuple[RateSize, float]], one_constraint: bool = False
                   ) -> np.ndarray:
    """Least squares of log10(time(mm) / time(other)) on (1, log10 nnz, log10 l2n, [m > 1]):
    the coefficients of ``settings.MM_COST_MODEL`` (other = cvxpy); with ``one_constraint``,
    on (1, log10 nnz, log10 l2n) over the one-constraint records only: (K0, K1, K2) of
    ``settings.MM_STRUCTURED_COST_MODEL`` (other = structured), which has no constraint term:
    with two or more constraints ``auto`` takes the structured chain by a rule, checked on the
    several-constraint records' range (:func:`several_constraints_range`)."""
    if one_constraint:
        records = [(z, ratio) for z, ratio in records if z.m == 1]
    A = np.array([[1.0, np.log10(z.nnz), np.log10(z.l2n)]
                  + ([] if one_constraint else [float(z.m > 1)]) for z, _ in records])
    y = np.log10([ratio for _, ratio in records])
    return np.linalg.lstsq(A, y, rcond=None)[0]


def several_constraints_range(records: list[tuple[RateSize, float]]) -> tuple[float, float, int]:
    """(least, largest, count) of time(mm) / time(structured) over the records with two or
    more constraints: ``auto``'s rule for them (the structured chain,
    :meth:`ratecons.patterns.rate_constraints.RatePattern.choose`) holds while the least is
    above 1 (``mm`` slower on every one)."""
    ratios = [ratio for z, ratio in records if z.m > 1]
    return (min(ratios, default=float("nan")), max(ratios, default=float("nan")), len(ratios))


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few small instances")
    parser.add_argument("--counts", action="store_true",
                        help="constraint rows in counts (precision, #FP) instead of rates")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip the untimed first solves (a smoke run: its first rows then "
                             "include loading numba kernels and solvers)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds per method solve (default 120, quick 30)")
    args = parser.parse_args(argv)
    limit = args.time_limit or (30.0 if args.quick else 120.0)
    print(f"{'frame':>22s} {'m':>2s} {'l2':>6s} {'n':>7s} {'d':>4s} {'dens':>5s} {'nnz':>9s} "
          f"{'l2n':>7s} {'auto':>6s} | " + " | ".join(f"{m:>30s}" for m in METHODS)
          + f" | {'floor s':>7s} {'auto/best':>9s}")
    if not args.no_warm_up:
        warm_up(limit)
    worst, where = 0.0, ""
    # the worst of auto's time against the reference (cvxpy) and against the floor fit, with
    # auto's objective gap to the reference's (relative) and the reference's status there
    against: dict[str, tuple[float, str]] = {"reference": (0.0, ""), "floor": (0.0, "")}
    records: dict[str, list[tuple[RateSize, float]]] = {"cvxpy": [], STRUCTURED: []}
    for inst in grid(args.quick):
        out = run_instance(inst, limit, args.counts)
        choice, z = out["plan"].method, out["size"]
        times = {m: t for m, (t, status, _) in out["rows"].items()
                 if status in settings.SOLVED_STATUSES}
        best = min(times.values())
        ratio = out["rows"][choice][0] / best
        for other, found in records.items():
            if "mm" in times and other in times:
                found.append((z, times["mm"] / times[other]))
        cells = " | ".join(f"{t:8.2f} s {status[:12]:>12s} {obj:7.4f}"
                           for t, status, obj in out["rows"].values())
        print(f"{inst.frame:>22s} {z.m:2d} {inst.l2:6.0e} {z.n:7d} {z.d:4d} {z.density:5.2f} "
              f"{z.nnz:9.3g} {z.l2n:7.3g} {choice:>6s} | {cells} | {inst.floor_seconds:7.3f} "
              f"{ratio:9.2f}", flush=True)
        label = f"{inst.frame}, m = {inst.m}, l2 = {inst.l2:g}"
        if ratio > worst:
            worst, where = ratio, label
        t_auto, _, obj_auto = out["rows"][choice]
        t_ref, ref_status, obj_ref = out["rows"]["cvxpy"]
        gap = abs(obj_auto - obj_ref) / max(1.0, abs(obj_ref))
        for key, seconds, what in (
                ("reference", t_ref, f"cvxpy {ref_status}, objective gap {gap:.1e}"),
                ("floor", inst.floor_seconds, "LogisticRegression on the same rows")):
            if t_auto / seconds > against[key][0]:
                against[key] = (t_auto / seconds, f"{label}; {what}")
    for other, name in (("cvxpy", "MM_COST_MODEL"), (STRUCTURED, "MM_STRUCTURED_COST_MODEL")):
        one = other == STRUCTURED
        fitted_on = [r for r in records[other] if r[0].m == 1] if one else records[other]
        if len(fitted_on) >= 4:
            fitted = ", ".join(f"{c:.3g}" for c in fit_cost_model(fitted_on, one))
            print(f"cost model fitted on this run: {name} = ({fitted}"
                  f"{', one constraint' if one else ''}); in use: {getattr(settings, name)}")
    least, largest, count = several_constraints_range(records[STRUCTURED])
    if count:
        print(f"two or more constraints: time(mm) / time(structured) {least:.2f}-{largest:.2f} "
              f"on {count} instances (auto's rule, the structured chain, holds while above 1)")
    for key, (value, at) in against.items():
        print(f"worst time(auto) / time({key}) = {value:.2f} ({at})")
    print(f"WORST time(auto) / time(best method) = {worst:.2f} ({where}); target <= 1.2: "
          f"{'yes' if worst <= 1.2 else 'NO'}")
    return worst


if __name__ == "__main__":
    main()
