"""Benchmark of the MRC solvers: full LP (HiGHS), CCG, CVXPY and subgradient, side by side.

    python -m benchmarks.mrc            # (c) the grid (GRID below), CCG's worst ratio last
    python -m benchmarks.mrc --quick    # small smoke version of the grid (seconds)
    python -m benchmarks.mrc --part all # (a) binary n in {5k, 20k, 50k}, 400 random Fourier
                                        #     features; (b) satellite, optdigits, letter (CCG)
    python -m benchmarks.mrc --part a --sizes 20000 --datasets synthetic   # one piece

(c) The grid: binary and multiclass, linear, random Fourier and random ReLU features, n from 1k
to 50k, synthetic data and seeded subsamples of shared data. On each instance the full LP (the
dual (6)) by HiGHS interior point and by dual simplex, and CCG; the gap of each certificate;
the ratio of the best certified full-LP time to CCG's time, and CCG's profile (rounds,
restricted-LP time and pivots, scan time). The last line is the worst ratio.

(a) Binary problems (adult subsamples and two Gaussian classes in 10 dimensions) with
Phi = e_y kron [1, RFF(400)]: wall time of each method, its R and |R - R*|, and the speed-up of
CCG over the full LP. The full LP is solved the fastest way measured at n = 5000 (HiGHS interior
point with crossover on the dual (6); ``--lp-solver``/``--lp-formulation`` change it). When
pieces run with other LP settings share a ``--results`` file, the speed-up column lists every
full-LP setting of the instance side by side (e.g. the paper's LP (4) by HiGHS' default dual
simplex next to the fastest). R* is the
value of the best certified solve of the same instance, named in the column "R* from": the full
LP when it finished, else CCG with eps1 = 0 (whose certificate is the gap between the objective
of (2.2) at its mu and the restricted LP's value, a lower bound by Theorem 1). Each method has its
own time limit; a method that hits it is reported with status time_limit and "> limit" speed-ups
are lower bounds. CVXPY (which cannot be interrupted) and the subgradient method run only up to
``--cvxpy-max`` / ``--subgradient-max`` instances. (b) Multiclass data where the full LP has
2^|Y| - 1 rows per instance: CCG time and R*.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import ratecons as rc
from ratecons import settings
from ratecons.canonical.mrc import MRCForm
from ratecons.reductions.to_cvxpy import solve_mrc_cvxpy
from ratecons.solvers.ccg import CCG
from ratecons.solvers.mrc_lp import solve_mrc_lp
from ratecons.solvers.subgradient import constrained_subgradient

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _adult(n: int, seed: int) -> rc.Dataset:
    """A seeded subsample of adult (all 48,842 rows, shuffled, when n is larger)."""
    data = rc.datasets.load_csv(DATA / "adult.csv")
    idx = np.random.default_rng(seed).permutation(data.n)[:n]
    return data.take(idx, name=f"adult{idx.size}")


def _synthetic(n: int, seed: int) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 10)) + 0.8 * (2 * y[:, None] - 1) * np.linspace(1, 0.1, 10)
    return rc.Dataset(X, y, name=f"synthetic{n}")


def _form(data: rc.Dataset, features) -> MRCForm:
    U = rc.MomentSet(data, features=features)
    return rc.Problem(minimize=rc.minimax_risk(U)).canonical()


HEADER = " | ".join(("part", "data", "n", "|Y|", "m", "full rows", "method", "status",
                     "time (s)", "R", "|R - R*|", "full LP time / time", "R* from"))


def _format(r: tuple) -> str:
    return " | ".join([r[0], r[1], str(r[2]), str(r[3]), str(r[4]), str(r[5]), r[6], r[7],
                       f"{r[8]:.2f}", f"{r[9]:.6f}", f"{r[10]:.1e}", r[11], r[12]])


def _progress(method: str, n: int, result: tuple) -> None:
    print(f"  done: {method} n={n} status={result[0]} R={result[1]:.6f} time={result[2]:.1f}s",
          flush=True)


def _timed(fn):
    start = time.perf_counter()
    try:
        sol = fn()
        return sol.status, sol.objective, time.perf_counter() - start
    except Exception as exc:  # report and go on: one failing method must not hide the others
        print(f"  error: {type(exc).__name__}: {exc}", flush=True)
        return f"error: {type(exc).__name__}", float("nan"), time.perf_counter() - start


class Store:
    """Results of earlier pieces of part (a), in a JSON file (``--results``), so that a run of
    one method can use the full LP's R* and time measured by another run on the same instance
    (the instances are seeded)."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self.data = json.loads(self.path.read_text()) if self.path and self.path.exists() else {}

    def merge(self, name: str, n: int, components: int, results: dict) -> set[str]:
        """Add this run's ``results`` (saved) and the stored ones it lacks (returned names of
        this run's methods)."""
        key = f"{name}/{n}/{components}"
        fresh = set(results)
        if self.path is not None:
            entry = self.data.setdefault(key, {})
            entry.update({m: list(r) for m, r in results.items()})
            self.path.write_text(json.dumps(self.data, indent=1))
            for method, r in entry.items():
                results.setdefault(method, tuple(r))
        return fresh


def _speedups(results: dict, lp_keys: list[str], method: str, t: float) -> str:
    """Time of each full-LP setting measured on the instance over ``t``, side by side
    ("lp (ipm, dual) 3.5x; lp (simplex, primal) >14.2x"); ">" marks an LP that hit its limit
    (the ratio is a lower bound), "failed" one that stopped with an error (no ratio)."""
    if method.startswith("lp") or not lp_keys:
        return "-"
    parts = []
    for key in lp_keys:
        lp_status, _, lp_t = results[key]
        label = f"{key} " if len(lp_keys) > 1 else ""
        if lp_status.startswith("error"):
            parts.append(f"{label}failed")
            continue
        bound = "" if lp_status == "optimal" else ">"
        parts.append(f"{label}{bound}{lp_t / t:.1f}x")
    return "; ".join(parts)


def run_binary(datasets, sizes, components, limits, lp_settings, ccg_options, cvxpy_max,
               sub_max, sub_iterations, methods, rows, store):
    """Part (a). ``limits``: seconds per method; ``lp_settings``: the (solver, formulation)
    pairs of the full LP, each run; ``methods``: which of lp, ccg, ccg_eps, cvxpy,
    subgradient to run; ``store``: a :class:`Store` of earlier pieces."""
    makers = {"adult": _adult, "synthetic": _synthetic}
    for name in datasets:
        make = makers[name]
        for n in sizes:
            form = _form(make(n, 0), rc.features.RandomFourier(components, seed=0))
            size = form.full_lp_size()
            results = {}
            for lp_solver, lp_formulation in lp_settings if "lp" in methods else ():
                results[f"lp ({lp_solver}, {lp_formulation})"] = _timed(
                    lambda form=form, s=lp_solver, f=lp_formulation: solve_mrc_lp(
                        form, solver=s, formulation=f, time_limit=limits["lp"]))
            if "ccg" in methods:
                results["ccg"] = _timed(lambda form=form: CCG(
                    form, time_limit=limits["ccg"], **ccg_options).run())
            if "ccg_centroids" in methods:
                results["ccg (start=centroids)"] = _timed(lambda form=form: CCG(
                    form, start="centroids", time_limit=limits["ccg"], **ccg_options).run())
            if "ccg_eps" in methods:
                results["ccg (eps1=1e-4)"] = _timed(lambda form=form: CCG(
                    form, eps1=1e-4, time_limit=limits["ccg"], **ccg_options).run())
            if "cvxpy" in methods and n <= cvxpy_max:
                results["cvxpy"] = _timed(lambda form=form: solve_mrc_cvxpy(form))
            if "subgradient" in methods and n <= sub_max:
                results["subgradient"] = _timed(lambda form=form: constrained_subgradient(
                    form.psi, form.n_classes, form.y, form.tau, form.lam,
                    max_iterations=sub_iterations))
            for method, result in results.items():
                _progress(method, n, result)
            stored = store.merge(name, n, components, results)
            lp_keys = [k for k in results if k.startswith("lp")]
            solved = [k for k in lp_keys if results[k][0] == "optimal"]
            if solved:
                ref_key, source = solved[0], "full LP"
            elif results.get("ccg", ("",))[0] == "optimal":
                ref_key, source = "ccg", "ccg (certified)"
            else:  # nothing certified within the limits: R* unknown
                ref_key, source = None, "none"
            R_star = results[ref_key][1] if ref_key else float("nan")
            if ref_key and ref_key not in stored:
                source += " (earlier run)"
            for method, (status, R, t) in results.items():
                if method not in stored:
                    continue  # only a stored result: used for R* and the ratio, not repeated
                speed = _speedups(results, lp_keys, method, t)
                rows.append(("a", name, form.n, form.n_classes, form.m, size["rows"], method,
                             status, t, R, abs(R - R_star), speed, source))
                print(_format(rows[-1]), flush=True)


def run_multiclass(names, features, time_limit, subsample, rows):
    for name in names:
        data = rc.datasets.load_csv(DATA / f"{name}.csv")
        if subsample:
            idx = np.random.default_rng(0).permutation(data.n)[:subsample]
            data = data.take(idx, name=f"{name}{subsample}")
        form = _form(data, features)
        status, R, t = _timed(lambda form=form: CCG(form, time_limit=time_limit).run())
        rows.append(("b", name, form.n, form.n_classes, form.m, form.full_lp_size()["rows"],
                     "ccg", status, t, R, float("nan"), "-", "ccg (certified)"))
        print(_format(rows[-1]), flush=True)


def _multiclass_synthetic(n: int, seed: int, n_classes: int = 4) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    means = rng.normal(scale=1.2, size=(n_classes, 8))
    return rc.Dataset(means[y] + rng.normal(size=(n, 8)), y, name=f"synthetic{n_classes}c{n}")


def _real(name: str, n: int, seed: int) -> rc.Dataset:
    """A seeded subsample of shared data (all rows when n is larger)."""
    data = rc.datasets.load_csv(DATA / f"{name}.csv")
    idx = np.random.default_rng(seed).permutation(data.n)[:n]
    return data.take(idx, name=f"{name}{idx.size}")


def _feature_map(spec: str):
    kind, _, k = spec.partition(":")
    if kind == "linear":
        return "linear"
    maker = {"rff": rc.features.RandomFourier, "relu": rc.features.RandomReLU}[kind]
    return maker(int(k), seed=0)


#: part (c): (data, n, features); real data are seeded subsamples, "adult" at 48,842 is all of it
GRID = [
    ("synthetic", 1000, "linear"), ("synthetic", 5000, "linear"), ("synthetic", 20000, "linear"),
    ("synthetic", 50000, "linear"), ("synthetic", 1000, "rff:100"), ("synthetic", 5000, "rff:100"),
    ("synthetic", 1000, "relu:100"), ("synthetic", 5000, "relu:100"),
    ("synthetic", 20000, "rff:400"),
    ("adult", 5000, "linear"), ("adult", 48842, "linear"), ("adult", 5000, "rff:100"),
    ("adult", 2000, "relu:100"),
    ("synthetic4", 1000, "linear"), ("synthetic4", 5000, "linear"), ("synthetic4", 2000, "rff:50"),
    ("synthetic4", 2000, "relu:50"),
    ("satellite", 1000, "linear"), ("segment", 1000, "linear"), ("segment", 1000, "rff:50"),
    # small real data, where auto once chose the full LP (under 20,000 rows)
    ("haberman", 306, "linear"), ("haberman", 306, "rff:50"), ("credit", 690, "linear"),
    ("credit", 690, "rff:50"), ("diabetes", 768, "linear"), ("mammographic", 830, "linear"),
    ("indian_liver", 583, "linear"), ("glass", 214, "linear"), ("glass", 214, "rff:50"),
]
QUICK_GRID = [("synthetic", 300, "linear"), ("synthetic", 300, "rff:20"),
              ("synthetic", 300, "relu:20"), ("synthetic4", 200, "linear"),
              ("haberman", 306, "linear")]
GRID_HEADER = " | ".join(("data", "n", "|Y|", "features", "m", "full rows", "method", "status",
                          "time (s)", "R", "gap", "best full LP time / time"))


def _grid_data(name: str, n: int) -> rc.Dataset:
    if name == "synthetic":
        return _synthetic(n, 0)
    if name == "synthetic4":
        return _multiclass_synthetic(n, 0)
    if name == "adult":
        return _adult(n, 0)
    return _real(name, n, 0)


#: part (c): calls faster than this are repeated (up to SHORT_REPEATS times in all) and the
#: shortest time is kept, as timeit does: one run of a few milliseconds is mostly noise
SHORT_CALL = 1.0
SHORT_REPEATS = 7


def _certified(fn):
    """(status, objective, time, gap) of a solver call; gap = upper - lower of its certificate.
    For CCG, where its time went: rounds, restricted-LP time and pivots, CONSTR scan time."""
    start = time.perf_counter()
    sol = fn()
    t = time.perf_counter() - start
    spent, repeats = t, 1
    while spent < SHORT_CALL and repeats < SHORT_REPEATS:
        start = time.perf_counter()
        fn()
        again = time.perf_counter() - start
        t, spent, repeats = min(t, again), spent + again, repeats + 1
    cert = sol.certificate
    gap = cert.gap if cert is not None and cert.gap is not None else float("nan")
    if sol.history and "lp_time" in sol.history[0]:
        h = sol.history
        print(f"  ccg profile: {len(h)} rounds, restricted LPs {sum(r['lp_time'] for r in h):.1f}"
              f" s ({sum(r['lp_iterations'] for r in h)} pivots or interior-point iterations), "
              f"CONSTR scans "
              f"{sum(r['constr_time'] for r in h):.1f} s, final rows {h[-1]['rows']}",
              flush=True)
    return sol.status, sol.objective, t, gap


def run_grid(grid, time_limit: float) -> tuple[list[tuple], tuple]:
    """Part (c): on every instance the full LP (dual (6)) by HiGHS IPM and by dual simplex --
    simplex limited to the IPM's time, since past it it cannot be the best -- and CCG. The
    ratio is the best certified full-LP time over CCG's time. Returns the rows and the worst
    (ratio, row)."""
    rows, worst = [], (float("inf"), None)
    for name, n, feats in grid:
        form = _form(_grid_data(name, n), _feature_map(feats))
        size = form.full_lp_size()
        runs = {"full LP (ipm, dual)": _certified(lambda form=form: solve_mrc_lp(
            form, solver="ipm", formulation="dual", time_limit=time_limit))}
        ipm_t = runs["full LP (ipm, dual)"][2]
        cap = min(time_limit, 1.05 * ipm_t + 1.0)
        runs["full LP (simplex, dual)"] = _certified(lambda form=form, cap=cap: solve_mrc_lp(
            form, solver="simplex", formulation="dual", time_limit=cap))
        runs["ccg"] = _certified(lambda form=form: CCG(form, time_limit=time_limit).run())
        lp_times = [t for key, (st, _, t, _) in runs.items()
                    if key.startswith("full") and st == settings.OPTIMAL]
        best_lp = min(lp_times) if lp_times else float("nan")
        for method, (status, R, t, gap) in runs.items():
            ratio = best_lp / t if method == "ccg" else float("nan")
            row = (form.name, form.n, form.n_classes, feats, form.m, size["rows"], method,
                   status, t, R, gap, ratio)
            rows.append(row)
            print(_format_grid(row), flush=True)
            if method == "ccg" and (ratio < worst[0] or not np.isfinite(ratio)):
                worst = (ratio, row)
    return rows, worst


def _format_grid(r: tuple) -> str:
    ratio = "-" if not np.isfinite(r[11]) else f"{r[11]:.1f}x"
    return " | ".join([r[0], str(r[1]), str(r[2]), r[3], str(r[4]), str(r[5]), r[6], r[7],
                       f"{r[8]:.3f}", f"{r[9]:.6f}", f"{r[10]:.1e}", ratio])


METHODS = ("lp", "ccg", "ccg_centroids", "ccg_eps", "cvxpy", "subgradient")


def main(argv: list[str] | None = None) -> list[tuple]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke version")
    parser.add_argument("--sizes", type=str, default=None, help="binary sizes, e.g. 5000,20000")
    parser.add_argument("--components", type=int, default=None, help="random Fourier features")
    parser.add_argument("--time-limit", type=float, default=1200.0,
                        help="seconds for CCG and the multiclass part")
    parser.add_argument("--lp-time-limit", type=float, default=1500.0,
                        help="seconds for the full LP")
    parser.add_argument("--lp-solver", type=str, default="ipm",
                        help="full-LP HiGHS algorithms, comma-separated, each run: "
                        "ipm, simplex, choose (e.g. ipm,simplex: the best of both)")
    parser.add_argument("--lp-formulation", choices=("primal", "dual"), default="dual")
    parser.add_argument("--methods", type=str, default="lp,ccg,cvxpy,subgradient",
                        help="part (a) methods among " + ",".join(METHODS))
    parser.add_argument("--cvxpy-max", type=int, default=5000, help="largest n for CVXPY")
    parser.add_argument("--subgradient-max", type=int, default=5000,
                        help="largest n for the subgradient method")
    parser.add_argument("--results", type=str, default=None,
                        help="JSON file collecting part (a) results across runs (pieces)")
    parser.add_argument("--exclude", type=str, default="",
                        help="part (c): skip grid instances NAME/N/FEATURES, comma-separated "
                        "(e.g. synthetic/20000/rff:400)")
    parser.add_argument("--only", type=str, default="",
                        help="part (c): run only these grid instances NAME/N/FEATURES, "
                        "comma-separated")
    parser.add_argument("--part", choices=("a", "b", "c", "all"), default="c",
                        help="c (default): the grid ending with CCG's worst ratio")
    parser.add_argument("--datasets", type=str, default="adult,synthetic",
                        help="binary datasets of part (a)")
    parser.add_argument("--multiclass", type=str, default=None,
                        help="part (b) datasets, e.g. satellite,optdigits")
    parser.add_argument("--multiclass-features", choices=("linear", "rff"), default="linear")
    args = parser.parse_args(argv)
    cvxpy_max, sub_max = args.cvxpy_max, args.subgradient_max
    if args.quick:
        sizes, components, cvxpy_max, sub_max, sub_it = [300, 600], 30, 10**9, 10**9, 2000
        multiclass, subsample = ["satellite", "ecoli"], 300
    else:
        sizes, components, sub_it = [5000, 20000, 50000], 400, 20000
        multiclass, subsample = ["satellite", "optdigits", "letter_recognition"], None
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    if args.components:
        components = args.components
    if args.multiclass:
        multiclass = args.multiclass.split(",")
    lp_solvers = args.lp_solver.split(",")
    if not set(lp_solvers) <= {"simplex", "ipm", "choose"}:
        parser.error("--lp-solver: choose among simplex,ipm,choose")
    methods = set(args.methods.split(","))
    if not methods <= set(METHODS):
        parser.error(f"--methods: choose among {','.join(METHODS)}")
    mfeat = ("linear" if args.multiclass_features == "linear"
             else rc.features.RandomFourier(components, seed=0))
    limits = {"lp": args.lp_time_limit, "ccg": args.time_limit}
    if args.part == "c":
        print(GRID_HEADER, flush=True)
        skip = set(filter(None, args.exclude.split(",")))
        only = set(filter(None, args.only.split(",")))
        grid = [g for g in (QUICK_GRID if args.quick else GRID)
                if f"{g[0]}/{g[1]}/{g[2]}" not in skip
                and (not only or f"{g[0]}/{g[1]}/{g[2]}" in only)]
        grid_rows, (ratio, row) = run_grid(grid, args.time_limit)
        print("final table")
        print(GRID_HEADER)
        for r in grid_rows:
            print(_format_grid(r))
        where = "-" if row is None else f"{row[0]}, n={row[1]}, |Y|={row[2]}, {row[3]}"
        print(f"worst ratio of CCG against the best full LP: {ratio:.2f}x ({where})")
        return grid_rows
    rows: list[tuple] = []
    print(HEADER, flush=True)
    if args.part in ("a", "all"):
        run_binary(args.datasets.split(","), sizes, components, limits,
                   [(s, args.lp_formulation) for s in lp_solvers], {}, cvxpy_max, sub_max, sub_it,
                   methods, rows, Store(args.results))
    if args.part in ("b", "all"):
        run_multiclass(multiclass, mfeat, args.time_limit, subsample, rows)
    print("final table")
    print(HEADER)
    for r in rows:
        print(_format(r))
    if any(r[11].startswith(">") for r in rows):
        print("> : the full LP did not finish within its limit; the speed-up is a lower bound")
    return rows


if __name__ == "__main__":
    main()
