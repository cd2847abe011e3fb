"""Benchmark: dual coordinate ascent (Alg 2) vs the CVXPY reference for ranking at the top.

    python -m benchmarks.top            # linear TopPushK n in {2k, 10k, 50k}, Gaussian {2k, 10k}
    python -m benchmarks.top --quick    # small smoke version
    python -m benchmarks.top --linear 10000 --gaussian   # one row

Linear problems: TopPushK (K=5, hinge, lambda=1e-3) on Adult (one-hot features standardized,
rows scaled to unit norm), random subsamples of n examples (n = 50k means all 48,842).
Gaussian problems: TopPushK (K=5, hinge, lambda=1e-3, gamma = 1/d) on letter_recognition,
one-vs-rest (letter 0 positive), standardized features. Dual coordinate ascent runs to a
relative duality gap of 1e-4 (``tol=1e-4``); CVXPY (Clarabel) solves the primal (6) for linear
models and the dual (7) for kernels, each with a wall-clock limit. Both report the objective
(3) at their model; ``rel.diff`` is (dual CA - CVXPY) / CVXPY.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def adult_linear(n: int, seed: int = 0) -> rc.Dataset:
    adult = rc.datasets.load_adult()
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(adult.n, min(n, adult.n), replace=False))
    X = adult.X[idx]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    X /= np.linalg.norm(X, axis=1, keepdims=True) + 1e-12
    return rc.Dataset(X, adult.y[idx], name=f"adult[{idx.size}]")


def letter_ovr(n: int, seed: int = 0) -> rc.Dataset:
    data = rc.datasets.load_csv(DATA / "letter_recognition.csv")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(data.n, min(n, data.n), replace=False))
    X = np.asarray(data.X[idx], dtype=np.float64)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return rc.Dataset(X, (data.y[idx] == 0).astype(int), name=f"letter[{idx.size}]")


def run_one(kind: str, data: rc.Dataset, cvxpy_limit: float, cvxpy_max_n: int,
            ca_limit: float) -> dict:
    model = rc.LinearModel(l2=1e-3) if kind == "linear" else rc.KernelModel("gaussian", l2=1e-3)
    problem = rc.Problem(maximize=rc.tpr_at_top(data, k=5), model=model)
    row = {"problem": f"{kind} TopPushK", "n": data.n, "d": data.d}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        res = problem.solve("dual_ca", tol=1e-4, max_epochs=10**7, time_limit=ca_limit)
    row.update(ca_time=time.perf_counter() - start, ca_obj=res.objective,
               ca_gap=res.certificate.details["relative_gap"], ca_status=res.status,
               ca_kernel=res.certificate.details["kernel_matrix"])
    if data.n > cvxpy_max_n:
        row.update(cvx_time=np.nan, cvx_obj=np.nan, cvx_status="skipped (size)")
        return row
    start = time.perf_counter()
    try:
        ref = problem.solve("cvxpy", solver_options={"time_limit": cvxpy_limit})
        row.update(cvx_time=time.perf_counter() - start, cvx_obj=ref.objective,
                   cvx_status=ref.status)
    except rc.SolverError as exc:  # pragma: no cover - depends on the machine
        row.update(cvx_time=time.perf_counter() - start, cvx_obj=np.nan,
                   cvx_status=f"error: {exc}"[:30])
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke version")
    parser.add_argument("--linear", type=int, nargs="*", default=[2000, 10000, 50000],
                        help="sizes of the linear problems")
    parser.add_argument("--gaussian", type=int, nargs="*", default=[2000, 10000],
                        help="sizes of the Gaussian-kernel problems")
    parser.add_argument("--time-limit", type=float, default=1800.0,
                        help="wall-clock limit of each method on each problem (s)")
    parser.add_argument("--cvxpy-max-n", type=int, default=10000,
                        help="skip the CVXPY reference above this size")
    args = parser.parse_args(argv)
    if args.quick:
        plan = [("linear", adult_linear(1000)), ("gaussian", letter_ovr(400))]
        limit, max_n = 120.0, 10**9
    else:
        plan = [("linear", adult_linear(n)) for n in args.linear]
        plan += [("gaussian", letter_ovr(n)) for n in args.gaussian]
        limit, max_n = args.time_limit, args.cvxpy_max_n
    head = (f"{'problem':18s}{'n':>7s}{'d':>5s} | {'dual CA (s)':>11s}{'objective':>12s}"
            f"{'rel.gap':>9s} | {'CVXPY (s)':>10s}{'objective':>12s}{'status':>16s} | "
            f"{'speedup':>8s}{'rel.diff':>10s}")
    print(head)
    print("-" * len(head))
    rows = []
    for kind, data in plan:
        if kind == "gaussian" and not (DATA / "letter_recognition.csv").exists():
            print(f"{'gaussian TopPushK':18s} skipped: {DATA} not found")
            continue
        r = run_one(kind, data, limit, max_n, limit)
        rows.append(r)
        speed = r["cvx_time"] / r["ca_time"] if np.isfinite(r["cvx_time"]) else np.nan
        diff = (r["ca_obj"] - r["cvx_obj"]) / r["cvx_obj"] if np.isfinite(r["cvx_obj"]) else np.nan
        print(f"{r['problem']:18s}{r['n']:>7d}{r['d']:>5d} | {r['ca_time']:>11.2f}"
              f"{r['ca_obj']:>12.6f}{r['ca_gap']:>9.1e} | {r['cvx_time']:>10.2f}"
              f"{r['cvx_obj']:>12.6f}{r['cvx_status']:>16s} | {speed:>8.1f}{diff:>10.1e}",
              flush=True)
    return rows


if __name__ == "__main__":
    main()
