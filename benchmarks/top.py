"""Benchmark grid: ``auto`` (and every other method) vs the CVXPY reference, ranking at the top.

    python -m benchmarks.top               # the full grid (about 15 minutes)
    python -m benchmarks.top --tiny        # three small instances (the test runs this)
    python -m benchmarks.top --only adult  # instances whose name contains "adult"

Instances (``grid()``): synthetic linear problems (positives shifted by 3.5 along a random
direction in N(0, I_d), so that w = 0 is not optimal) over n in 2k-49k, d in 10-108, 5-40%
positives, K from 5 to 1% of the negatives, l2 in 1e-4..1e-2, hinge and quadratic hinge,
tau-FPL, Pat&Mat-NP and an l1 penalty; the two synthetic instances of issue 14 (n=10000,
d=50, 38% positives, K=5; n=2000, d=10, 5%); real data: Adult (one-hot, standardized, rows
scaled to unit norm; K=5 and K=76 on 10,000 rows and K=5 on all 48,842 rows have the trivial
optimum w = 0, K=76 on 2000 rows and K=1% do not), letter (one-vs-rest, all 20,000 rows),
optdigits, satellite; Gaussian-kernel problems on letter, optdigits and synthetic data
(n = 2000-3000).

Every method runs to relative gap 1e-6 (its default). ``auto`` is what ``problem.solve()``
picks; ``dual_ca`` also runs on linear instances (with ``--ca-limit`` seconds) to show where
the dual is the wrong space. The reference (the generic chain: the primal (6)/(9) by CVXPY and
Clarabel, kernel models kernelized exactly over every training point) runs in a child process
stopped at ``--cvxpy-limit`` seconds (CVXPY imported before the clock starts). The numba
loops are compiled before timing. Columns: wall time, objective (3) at the returned model,
its relative difference to the reference's, the certified relative gap, the status and, for
auto, the speed ratio (reference time / auto time) and the floor: an unconstrained scikit-learn
LogisticRegression fit on the same rows (the least of three), with auto's time over it. The
last two lines are the worst ratio of auto to the floor and the worst ratio over the grid,
counted only where auto's objective is within 1e-5 (relative) of the reference's or
below it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ratecons as rc
from benchmarks.composition import logistic_floor

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: objective agreement under which a speed ratio counts (issue 14)
OBJ_RTOL = 1e-5
#: allowance for starting the reference's child process (imports) on top of its limit
SPAWN_SECONDS = 20.0


@dataclass
class Instance:
    """One grid instance: a data builder and the objective/model to put on it."""

    name: str
    data: Any  # () -> rc.Dataset
    k: int | float | None = 5  # int K, float = fraction of negatives, None for tau objectives
    l2: float = 1e-3
    l1: float = 0.0
    kernel: bool = False
    surrogate: str = "hinge"
    formulation: str = "toppushk"
    tau: float = 0.05
    options: dict[str, Any] = field(default_factory=dict)
    shared: bool = False  # the data builder reads /work/shared/data

    def problem(self, data: rc.Dataset | None = None) -> rc.Problem:
        data = self.data() if data is None else data
        if self.formulation in ("toppushk", "toppush"):
            negatives = int(np.sum(data.y == 0))
            k = self.k if isinstance(self.k, int) else max(1, round(self.k * negatives))
            obj = rc.tpr_at_top(data, k=k, surrogate=self.surrogate)
        else:
            obj = rc.tpr_at_quantile(data, self.tau, formulation=self.formulation,
                                     surrogate=self.surrogate, theta=0.5)
        model = (rc.KernelModel("gaussian", l2=self.l2) if self.kernel
                 else rc.LinearModel(l2=self.l2, l1=self.l1))
        return rc.Problem(maximize=obj, model=model)


# ------------------------------------------------------------------------------ data
def synthetic(n: int, d: int, positives: float, seed: int = 0, shift: float = 3.5
              ) -> rc.Dataset:
    """N(0, I_d) rows; a fraction ``positives`` of them shifted by ``shift`` along a random
    unit vector."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    y = (rng.random(n) < positives).astype(int)
    X[y == 1] += shift * u
    return rc.Dataset(X, y, name=f"synthetic[{n}x{d}, {positives:.0%}]")


def adult(n: int | None, seed: int = 0) -> rc.Dataset:
    """Adult, one-hot features standardized and rows scaled to unit norm (n rows sampled)."""
    full = rc.datasets.load_adult()
    rng = np.random.default_rng(seed)
    idx = np.arange(full.n) if n is None else np.sort(rng.choice(full.n, n, replace=False))
    X = full.X[idx]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    X /= np.linalg.norm(X, axis=1, keepdims=True) + 1e-12
    return rc.Dataset(X, full.y[idx], name=f"adult[{idx.size}]")


def uci_ovr(name: str, positive: int, n: int | None = None, seed: int = 0) -> rc.Dataset:
    """A /work/shared/data set, one class against the rest, standardized features."""
    data = rc.datasets.load_csv(DATA / f"{name}.csv")
    rng = np.random.default_rng(seed)
    idx = np.arange(data.n) if n is None else np.sort(rng.choice(data.n, n, replace=False))
    X = np.asarray(data.X[idx], dtype=np.float64)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return rc.Dataset(X, (data.y[idx] == positive).astype(int), name=f"{name}[{idx.size}]")


def grid() -> list[Instance]:
    """The full grid (see the module docstring)."""
    s = synthetic
    return [
        Instance("issue: synthetic 10000x50 38% K=5", lambda: s(10000, 50, 0.38)),
        Instance("issue: synthetic 2000x10 5% K=5", lambda: s(2000, 10, 0.05)),
        Instance("synthetic 2000x50 40% K=1% l2=1e-2", lambda: s(2000, 50, 0.40, 1), 0.01,
                 l2=1e-2),
        Instance("synthetic 5000x20 20% K=5 l2=1e-4", lambda: s(5000, 20, 0.20, 2), l2=1e-4),
        Instance("synthetic 5000x30 10% K=1% l2=1e-3", lambda: s(5000, 30, 0.10, 3), 0.01),
        Instance("synthetic 10000x10 40% K=1% l2=1e-4", lambda: s(10000, 10, 0.40, 4), 0.01,
                 l2=1e-4),
        Instance("synthetic 10000x100 5% K=5 l2=1e-2", lambda: s(10000, 100, 0.05, 5),
                 l2=1e-2),
        Instance("synthetic 20000x50 20% K=1% l2=1e-3", lambda: s(20000, 50, 0.20, 6), 0.01),
        Instance("synthetic 30000x100 10% K=1% l2=1e-3", lambda: s(30000, 100, 0.10, 7),
                 0.01),
        Instance("synthetic 5000x20 20% K=5 quadratic hinge", lambda: s(5000, 20, 0.20, 8),
                 surrogate="quadratic_hinge"),
        Instance("synthetic 5000x20 20% tau-FPL tau=0.05", lambda: s(5000, 20, 0.20, 9), None,
                 formulation="tau-fpl"),
        Instance("synthetic 5000x20 20% Pat&Mat-NP tau=0.05", lambda: s(5000, 20, 0.20, 10),
                 None, formulation="pat&mat-np"),
        Instance("synthetic 5000x20 20% K=5 l1=1e-3 l2=0", lambda: s(5000, 20, 0.20, 11),
                 l2=0.0, l1=1e-3),
        Instance("issue: adult 10000 K=5 (w = 0)", lambda: adult(10000)),
        Instance("issue: adult 10000 K=76 (w = 0)", lambda: adult(10000), 76),
        Instance("adult 2000 K=76", lambda: adult(2000), 76),
        Instance("adult 10000 K=1% l2=1e-4", lambda: adult(10000), 0.01, l2=1e-4),
        Instance("adult 48842 (paper scale) K=5", lambda: adult(None)),
        Instance("adult 48842 (paper scale) K=1% l2=1e-4", lambda: adult(None), 0.01,
                 l2=1e-4),
        Instance("letter 20000 (A vs rest) K=1%", lambda: uci_ovr("letter_recognition", 0),
                 0.01, shared=True),
        Instance("optdigits 5620 (3 vs rest) K=5", lambda: uci_ovr("optdigits", 3), shared=True),
        Instance("satellite 6435 (class 0 vs rest) K=1%", lambda: uci_ovr("satellite", 0),
                 0.01, shared=True),
        Instance("gaussian letter 2000 K=5", lambda: uci_ovr("letter_recognition", 0, 2000),
                 kernel=True, shared=True),
        Instance("gaussian optdigits 2000 K=5", lambda: uci_ovr("optdigits", 3, 2000),
                 kernel=True, shared=True),
        Instance("gaussian synthetic 3000x10 20% K=1%", lambda: s(3000, 10, 0.20, 12, 1.5),
                 0.01, kernel=True),
    ]


def tiny_grid() -> list[Instance]:
    """Three small instances (linear, l1, kernel) for the test of this module."""
    return [
        Instance("tiny synthetic 300x5 20% K=3", lambda: synthetic(300, 5, 0.2), 3),
        Instance("tiny synthetic 300x5 l1", lambda: synthetic(300, 5, 0.2, 1), 3, l2=0.0,
                 l1=1e-2),
        Instance("tiny gaussian 200x4 K=3", lambda: synthetic(200, 4, 0.2, 2, 1.5), 3,
                 kernel=True),
    ]


# ------------------------------------------------------------------------------ runs
def _solve(problem: rc.Problem, method: str, options: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = problem.solve(method, **options)
    cert = res.certificate
    gap = cert.details.get("relative_gap", np.nan)
    # the table is in the solvers' terms, (3) minimized (result.objective is 1 - (3))
    return {"time": time.perf_counter() - start,
            "objective": cert.details.get("eq3_value", np.nan),
            "status": res.status, "gap": gap, "method": res.method,
            "trivial": "degenerate" in cert.details}


def _child(problem: rc.Problem, conn: Any) -> None:  # pragma: no cover - runs in a child
    import cvxpy  # noqa: F401 - a one-off import (0.5 s), not part of the reference's time

    try:
        conn.send(_solve(problem, "cvxpy", {}))
    except Exception as exc:  # the parent reports it in the table
        conn.send({"error": f"{type(exc).__name__}: {exc}"[:40]})
    conn.close()


def run_cvxpy(problem: rc.Problem, limit: float) -> dict[str, Any]:
    """The CVXPY reference in a child process (spawned: a forked child can deadlock in the
    BLAS thread pool of its parent), stopped after ``limit`` seconds of wall time; the time
    reported is the child's own solve time."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(problem, send))
    start = time.perf_counter()
    proc.start()
    send.close()
    got = recv.poll(limit + SPAWN_SECONDS)
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
    empty = {"objective": np.nan, "gap": np.nan, "method": "cvxpy", "trivial": False}
    if out is None or ("time" in out and out["time"] > limit):
        return {**empty, "time": limit, "status": f"> {limit:g} s", "over": True}
    if "error" in out:
        return {**empty, "time": elapsed, "status": out["error"]}
    return out


def warm_up() -> None:
    """Compile the numba loops (cached on disk) so that no timed run pays for it."""
    for inst in tiny_grid():
        problem = inst.problem()
        for method in ("auto", "dual_ca"):
            if method == "dual_ca" and inst.l1 > 0:
                continue
            _solve(problem, method, {})


def run_instance(inst: Instance, cvxpy_limit: float, ca_limit: float
                 ) -> list[dict[str, Any]]:
    """Rows of one instance: auto, dual CA (linear models, when auto is not it), CVXPY; the
    auto row carries the floor (an unconstrained logistic fit on the same rows)."""
    data = inst.data()
    problem = inst.problem(data)
    form = problem.canonical()  # shared preprocessing, not timed
    base = {"instance": inst.name, "n": form.n_pos + (form.n_tilde if form.formulation
                                                       in ("toppush", "toppushk", "tau-fpl",
                                                           "pat&mat-np") else 0),
            "d": form.d, "K": form.K if form.K is not None else f"tau={inst.tau:g}"}
    auto = _solve(problem, "auto", inst.options)
    rows = [{**base, "label": f"auto ({auto['method']})", **auto}]
    if auto["method"] != "dual_ca" and form.lam > 0 and form.l1 == 0:
        ca = _solve(problem, "dual_ca", {"time_limit": ca_limit})
        rows.append({**base, "label": "dual_ca", **ca})
    ref = run_cvxpy(problem, cvxpy_limit)
    rows.append({**base, "label": "cvxpy (reference)", **ref})
    for r in rows:
        r["rel_diff"] = ((r["objective"] - ref["objective"]) / abs(ref["objective"])
                         if np.isfinite(r["objective"]) and np.isfinite(ref["objective"])
                         else np.nan)
    rows[0]["ratio"] = ref["time"] / auto["time"]
    rows[0]["floor"] = logistic_floor(data)
    rows[0]["ratio_lower"] = bool(ref.get("over"))
    rows[0]["equal"] = (bool(ref.get("over")) or (np.isfinite(rows[0]["rel_diff"])
                                                 and rows[0]["rel_diff"] <= OBJ_RTOL))
    return rows


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if np.isfinite(x) else "-"


def format_row(r: dict[str, Any]) -> str:
    ratio, floor = "", ""
    if "ratio" in r:
        ratio = ("> " if r["ratio_lower"] else "") + f"{r['ratio']:.1f}x"
        floor = f"{r['floor']:.3f} ({r['time'] / r['floor']:.1f}x)"
    note = " (w = 0 optimal)" if r.get("trivial") else ""
    return (f"| {r['instance']} | {r['n']} | {r['d']} | {r['K']} | {r['label']} | "
            f"{r['time']:.3f} | {_fmt(r['objective'], '.8f')} | {_fmt(r['rel_diff'], '+.1e')} | "
            f"{_fmt(r['gap'], '.1e')} | {r['status']}{note} | {ratio} | {floor} |")


HEADER = ("| instance | n | d | K | method | wall time (s) | objective (3) | rel.diff | gap | "
          "status | ratio | floor (s) (auto / floor) |\n" + "|---" * 12 + "|")


def worst_line(rows: list[dict[str, Any]]) -> str:
    """The last lines: the worst ratio of auto's time to the floor (a scikit-learn logistic
    fit on the same rows), then the worst speed ratio of auto over the reference (at equal
    objective)."""
    autos = [r for r in rows if "ratio" in r]
    unequal = [r["instance"] for r in autos if not r["equal"]]
    worst = min(autos, key=lambda r: r["ratio"])
    lower = "> " if worst["ratio_lower"] else ""
    slowest = max(autos, key=lambda r: r["time"] / r["floor"])
    line = (f"worst ratio of auto's time to the logistic fit (floor): "
            f"{slowest['time'] / slowest['floor']:.1f}x ({slowest['instance']})\n"
            f"WORST ratio auto vs CVXPY reference over {len(autos)} instances: "
            f"{lower}{worst['ratio']:.1f}x ({worst['instance']})")
    if unequal:
        line += f"; objective differs by > {OBJ_RTOL:g} on: {', '.join(unequal)}"
    else:
        line += f"; auto's objective within {OBJ_RTOL:g} of (or below) the reference everywhere"
    return line


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="three small instances")
    parser.add_argument("--only", default=None, help="instances whose name contains this")
    parser.add_argument("--cvxpy-limit", type=float, default=200.0,
                        help="wall-clock limit of the CVXPY reference per instance (s)")
    parser.add_argument("--ca-limit", type=float, default=10.0,
                        help="wall-clock limit of dual CA on linear instances (s)")
    args = parser.parse_args(argv)
    instances = tiny_grid() if args.tiny else grid()
    if args.only:
        instances = [i for i in instances if args.only in i.name]
    if not DATA.exists():
        print(f"real data skipped: {DATA} not found")
        instances = [i for i in instances if not i.shared]
    warm_up()
    print(f"ranking at the top: every method to relative gap 1e-6; CVXPY (Clarabel) limit "
          f"{args.cvxpy_limit:g} s, dual CA limit {args.ca_limit:g} s", flush=True)
    print(HEADER, flush=True)
    rows: list[dict[str, Any]] = []
    for inst in instances:
        for r in run_instance(inst, args.cvxpy_limit, args.ca_limit):
            rows.append(r)
            print(format_row(r), flush=True)
    print(worst_line(rows), flush=True)
    return rows


if __name__ == "__main__":
    main()
