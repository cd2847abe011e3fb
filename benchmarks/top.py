"""Benchmark: dual coordinate ascent (Alg 2) vs the CVXPY reference for ranking at the top.

    python -m benchmarks.top                     # linear n in {2k, 10k, 50k}, Gaussian {2k, 10k}
    python -m benchmarks.top --quick             # small smoke version
    python -m benchmarks.top --linear 2000 10000 --gaussian 2000    # some rows only
    python -m benchmarks.top --linear --gaussian 10000 --cvxpy-limit 600

Linear problems: TopPushK (hinge, lambda = 1e-3, K = 5% of the negatives, rounded) on Adult
(one-hot features standardized, rows scaled to unit norm), random subsamples of n examples
(n = 50k means all 48,842). With K = 5 the optimum of (6) on Adult is w = 0 from n ~ 10k on
(no direction puts the mean of the positives above the mean of the 5 largest negatives), so
K grows with n. Gaussian problems: TopPushK (K = 5, hinge, lambda = 1e-3, gamma = 1/d) on
letter_recognition, one-vs-rest (letter 0 positive), standardized features.

Dual coordinate ascent runs in this process to a relative duality gap of 1e-4 (``tol=1e-4``);
the numba loops are compiled before timing (a warm-up solve). CVXPY (Clarabel) solves the
primal (6) for linear models and the dual (7) for kernels in a child process that is stopped
at ``--cvxpy-limit`` seconds of wall time (reported as "> limit"). Both report the objective
(3) at their model; ``rel.diff`` is (objective - other method's) / other method's, ``gap`` the
certified relative duality gap of dual CA, ``ratio`` CVXPY time / dual CA time. ``|w|`` is the
norm of the model (RKHS norm for kernels) and ``TPR@K`` its training TPR at the top: both
nonzero means the solution is not the degenerate w = 0.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LAMBDA = 1e-3
TOL = 1e-4


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


def make_problem(kind: str, data: rc.Dataset) -> rc.Problem:
    if kind == "linear":
        k = max(1, round(0.05 * int(np.sum(data.y == 0))))
        return rc.Problem(maximize=rc.tpr_at_top(data, k=k), model=rc.LinearModel(l2=LAMBDA))
    return rc.Problem(maximize=rc.tpr_at_top(data, k=5), model=rc.KernelModel("gaussian",
                                                                                l2=LAMBDA))


def _model_facts(problem: rc.Problem, res: Any) -> dict[str, float]:
    """|w| (RKHS norm v^T K v for kernels) and the training TPR@K of a result."""
    primal = res.solution.primal
    if "w" in primal:
        norm = float(np.linalg.norm(primal["w"]))
    elif "scores" in primal:
        v = np.concatenate([primal["alpha"], primal["beta"]])
        norm = float(np.sqrt(max(v @ primal["scores"], 0.0)))
    else:
        return {"norm": np.nan, "tpr": np.nan}
    k = problem.objective.k
    return {"norm": norm, "tpr": res.report(problem.objective.data)[f"tpr@{k}"]}


def _solve(problem: rc.Problem, method: str, options: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        res = problem.solve(method, **options)
    out = {"time": time.perf_counter() - start, "objective": res.objective,
           "status": res.status,
           "gap": res.certificate.details.get("relative_gap", np.nan)}
    out.update(_model_facts(problem, res))
    return out


def _child(problem: rc.Problem, conn: Any) -> None:  # pragma: no cover - runs in a child
    try:
        conn.send(_solve(problem, "cvxpy", {}))
    except Exception as exc:  # the parent reports it in the table
        conn.send({"error": f"{type(exc).__name__}: {exc}"[:40]})
    conn.close()


def run_cvxpy(problem: rc.Problem, limit: float) -> dict[str, Any]:
    """The CVXPY reference in a forked child, stopped after ``limit`` seconds of wall time."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(problem, send))
    start = time.perf_counter()
    proc.start()
    send.close()
    got = recv.poll(limit)
    elapsed = time.perf_counter() - start
    out = None
    if got:
        try:
            out = recv.recv()
        except EOFError:  # the child died without an answer (e.g. out of memory)
            out = {"error": "CVXPY process died"}
    if proc.is_alive():
        proc.terminate()
    proc.join()
    if out is None:
        return {"time": elapsed, "objective": np.nan, "status": f"> {limit:g} s",
                "gap": np.nan, "norm": np.nan, "tpr": np.nan, "over": True}
    if "error" in out:
        return {"time": elapsed, "objective": np.nan, "status": out["error"], "gap": np.nan,
                "norm": np.nan, "tpr": np.nan}
    return out


def warm_up() -> None:
    """Compile the numba loops (cached on disk) so that no timed run pays for it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    data = rc.Dataset(X, (X[:, 0] > 0.5).astype(int))
    for model in (rc.LinearModel(l2=1e-2), rc.KernelModel(l2=1e-2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rc.ConvergenceWarning)
            rc.Problem(maximize=rc.tpr_at_top(data, k=3), model=model).solve(
                "dual_ca", tol=1e-3, max_epochs=5)


def run_one(kind: str, data: rc.Dataset, ca_limit: float, cvxpy_limit: float
            ) -> list[dict[str, Any]]:
    problem = make_problem(kind, data)
    form = problem.canonical()  # shared preprocessing, not timed
    base = {"problem": f"{kind} TopPushK", "n": data.n, "d": data.d, "K": int(form.K)}
    ca = _solve(problem, "dual_ca", {"tol": TOL, "max_epochs": 10**7, "time_limit": ca_limit})
    ref = run_cvxpy(problem, cvxpy_limit)
    rows = []
    for method, r, other in (("dual CA", ca, ref), ("CVXPY", ref, ca)):
        diff = ((r["objective"] - other["objective"]) / abs(other["objective"])
                if np.isfinite(r["objective"]) and np.isfinite(other["objective"]) else np.nan)
        ratio = ref["time"] / ca["time"] if method == "dual CA" else np.nan
        rows.append({**base, "method": method, **r, "rel_diff": diff, "ratio": ratio})
    return rows


def format_row(r: dict[str, Any]) -> str:
    ratio = r["ratio"]
    ratio_txt = "" if not np.isfinite(ratio) else (
        f"> {ratio:.1f}" if r.get("ratio_lower") else f"{ratio:.1f}")
    tpr = f"{r['tpr']:.3f}" if np.isfinite(r["tpr"]) else "-"
    gap = f"{r['gap']:.1e}" if np.isfinite(r["gap"]) else "-"
    diff = f"{r['rel_diff']:+.1e}" if np.isfinite(r["rel_diff"]) else "-"
    obj = f"{r['objective']:.6f}" if np.isfinite(r["objective"]) else "-"
    norm = f"{r['norm']:.3f}" if np.isfinite(r["norm"]) else "-"
    return (f"| {r['problem']} | {r['n']} | {r['d']} | {r['K']} | {r['method']} | "
            f"{r['time']:.2f} | {obj} | {diff} | {gap} | {r['status']} | {ratio_txt} | "
            f"{norm} | {tpr} |")


HEADER = ("| problem | n | d | K | method | wall time (s) | objective (3) | rel.diff | gap | "
          "status | ratio | abs(w) | TPR@K |\n" + "|---" * 13 + "|")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke version")
    parser.add_argument("--linear", type=int, nargs="*", default=[2000, 10000, 50000],
                        help="sizes of the linear problems (none: skip)")
    parser.add_argument("--gaussian", type=int, nargs="*", default=[2000, 10000],
                        help="sizes of the Gaussian-kernel problems (none: skip)")
    parser.add_argument("--ca-limit", type=float, default=1800.0,
                        help="wall-clock limit of dual coordinate ascent per problem (s)")
    parser.add_argument("--cvxpy-limit", type=float, default=900.0,
                        help="wall-clock limit of the CVXPY reference per problem (s)")
    args = parser.parse_args(argv)
    if args.quick:
        plan = [("linear", adult_linear(1000)), ("gaussian", letter_ovr(400))]
        ca_limit, cvx_limit = 120.0, 120.0
    else:
        plan = [("linear", adult_linear(n)) for n in args.linear]
        plan += [("gaussian", letter_ovr(n)) for n in args.gaussian]
        ca_limit, cvx_limit = args.ca_limit, args.cvxpy_limit
    warm_up()
    print(f"TopPushK, hinge, lambda={LAMBDA:g}, dual CA to relative gap {TOL:g}; "
          f"CVXPY (Clarabel) limit {cvx_limit:.0f} s", flush=True)
    print(HEADER, flush=True)
    rows = []
    for kind, data in plan:
        if kind == "gaussian" and not (DATA / "letter_recognition.csv").exists():
            print(f"gaussian TopPushK skipped: {DATA} not found")
            continue
        ca, ref = run_one(kind, data, ca_limit, cvx_limit)
        rows += [ca, ref]
        ca["ratio_lower"] = bool(ref.get("over"))
        print(format_row(ca), flush=True)
        print(format_row(ref), flush=True)
    return rows


if __name__ == "__main__":
    main()
