"""Benchmark of the MRC solvers: full LP (HiGHS), CCG, CVXPY and subgradient, side by side.

    python -m benchmarks.mrc            # (a) binary n in {5k, 20k, 50k}, 400 random Fourier
                                        #     features; (b) satellite, optdigits, letter (CCG)
    python -m benchmarks.mrc --quick    # small smoke version (seconds)

(a) Binary problems (adult subsamples and two Gaussian classes in 10 dimensions) with
Phi = e_y kron [1, RFF(400)]: wall time of each method, its R and |R - R*|, with R* from the full
LP when it finished (else from CCG, which certifies its own gap; marked "*"), and the speed-up of
each method over the full LP. (b) Multiclass data where the full LP has 2^|Y| - 1 rows per
instance: CCG time and R*. Every method gets ``--time-limit`` seconds; a method that hits it is
reported with its status.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np

import ratecons as rc
from ratecons.canonical.mrc import MRCForm
from ratecons.lowering.mrc_cvxpy import solve_mrc_cvxpy
from ratecons.solvers.ccg import CCG
from ratecons.solvers.mrc_lp import solve_mrc_lp

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _adult(n: int, seed: int) -> rc.Dataset:
    data = rc.datasets.load_csv(DATA / "adult.csv")
    idx = np.random.default_rng(seed).permutation(data.n)[:n]
    return data.take(idx, name=f"adult{n}")


def _synthetic(n: int, seed: int) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 10)) + 0.8 * (2 * y[:, None] - 1) * np.linspace(1, 0.1, 10)
    return rc.Dataset(X, y, name=f"synthetic{n}")


def _form(data: rc.Dataset, features) -> MRCForm:
    U = rc.MomentSet(data, features=features)
    return rc.Problem(minimize=rc.minimax_risk(U)).canonical()


HEADER = " | ".join(("part", "data", "n", "|Y|", "m", "full rows", "method", "status",
                     "time (s)", "R", "|R - R*|", "vs LP"))


def _format(r: tuple) -> str:
    return " | ".join([r[0], r[1], str(r[2]), str(r[3]), str(r[4]), str(r[5]), r[6], r[7],
                       f"{r[8]:.2f}", f"{r[9]:.6f}", f"{r[10]:.1e}", r[11]])


def _progress(method: str, n: int, result: tuple) -> None:
    print(f"  done: {method} n={n} status={result[0]} R={result[1]:.6f} time={result[2]:.1f}s",
          flush=True)


def _timed(fn):
    start = time.perf_counter()
    try:
        sol = fn()
        return sol.status, sol.objective, time.perf_counter() - start
    except Exception as exc:  # report and go on: one failing method must not hide the others
        return f"error: {type(exc).__name__}", float("nan"), time.perf_counter() - start


def run_binary(datasets, sizes, components, time_limit, cvxpy_max, sub_max, sub_iterations,
               rows):
    sub = importlib.util.find_spec("ratecons.solvers.subgradient") is not None
    makers = {"adult": _adult, "synthetic": _synthetic}
    for name in datasets:
        make = makers[name]
        for n in sizes:
            form = _form(make(n, 0), rc.features.RandomFourier(components, seed=0))
            size = form.full_lp_size()
            results = {}
            results["lp"] = _timed(lambda form=form: solve_mrc_lp(form, time_limit=time_limit))
            _progress("lp", n, results["lp"])
            results["ccg"] = _timed(lambda form=form: CCG(form, time_limit=time_limit).run())
            _progress("ccg", n, results["ccg"])
            if n <= cvxpy_max:
                results["cvxpy"] = _timed(lambda form=form: solve_mrc_cvxpy(form))
                _progress("cvxpy", n, results["cvxpy"])
            if sub and n <= sub_max:
                from ratecons.solvers.subgradient import constrained_subgradient

                results["subgradient"] = _timed(lambda form=form: constrained_subgradient(
                    form.psi, form.n_classes, form.y, form.tau, form.lam,
                    max_iterations=sub_iterations))
                _progress("subgradient", n, results["subgradient"])
            lp_status, lp_R, lp_t = results["lp"]
            exact = lp_status == "optimal"
            if exact:
                R_star = lp_R
            elif results["ccg"][0] == "optimal":
                R_star = results["ccg"][1]
            else:  # neither certified within the time limit: R* unknown
                R_star = float("nan")
            for method, (status, R, t) in results.items():
                if exact:
                    speed = f"{lp_t / t:.1f}x"
                else:
                    speed = f">{lp_t / t:.1f}x" if method != "lp" else "-"
                rows.append(("a", name, n, form.n_classes, form.m, size["rows"], method, status,
                             t, R, abs(R - R_star), speed + ("" if exact else " *")))
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
                     "ccg", status, t, R, float("nan"), "-"))
        print(_format(rows[-1]), flush=True)


def main(argv: list[str] | None = None) -> list[tuple]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke version")
    parser.add_argument("--sizes", type=str, default=None, help="binary sizes, e.g. 5000,20000")
    parser.add_argument("--components", type=int, default=None, help="random Fourier features")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per method")
    parser.add_argument("--part", choices=("a", "b", "all"), default="all")
    parser.add_argument("--datasets", type=str, default="adult,synthetic",
                        help="binary datasets of part (a)")
    parser.add_argument("--multiclass-features", choices=("linear", "rff"), default="linear")
    args = parser.parse_args(argv)
    if args.quick:
        sizes, components, cvxpy_max, sub_max, sub_it = [300, 600], 30, 10**9, 10**9, 2000
        multiclass, subsample = ["satellite", "ecoli"], 300
    else:
        sizes, components, cvxpy_max, sub_max, sub_it = [5000, 20000, 50000], 400, 5000, 5000, \
            20000
        multiclass, subsample = ["satellite", "optdigits", "letter_recognition"], None
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    if args.components:
        components = args.components
    mfeat = ("linear" if args.multiclass_features == "linear"
             else rc.features.RandomFourier(components, seed=0))
    rows: list[tuple] = []
    print(HEADER, flush=True)
    if args.part in ("a", "all"):
        run_binary(args.datasets.split(","), sizes, components, args.time_limit, cvxpy_max,
                   sub_max, sub_it, rows)
    if args.part in ("b", "all"):
        run_multiclass(multiclass, mfeat, args.time_limit, subsample, rows)
    print("final table")
    print(HEADER)
    for r in rows:
        print(_format(r))
    if any(r[11].endswith("*") for r in rows):
        print("* the full LP did not finish: R* is CCG's certified value (nan when CCG did not "
              "finish either) and speed-ups are lower bounds")
    return rows


if __name__ == "__main__":
    main()
