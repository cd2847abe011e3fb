"""Robust learning benchmark: FSG, PSSG, GSSG and SGD against a reference optimum.

    python -m benchmarks.dro            # N in {1e4, 1e5, 1e6}, d = 50 (about 400 MB at 1e6)
    python -m benchmarks.dro --quick    # N = 2000 only, one step size, short budgets

Synthetic dense data (x ~ N(0, I_50), logistic labels), chi-square ball with rho = 0.1 (the
radius of section 4; strict=False since it exceeds the Assumption 1 bound), logistic loss,
l2 = 1e-3. For every N the reference optimum F* is CVXPY/CLARABEL where N <= --cvxpy-max, and
otherwise L-BFGS on the exact objective (the IM procedure gives R and its gradient on all N
examples); both are printed where both run. Each method runs from theta = 0 until its exact
objective (checked at checkpoints, not timed) is within 1% of F*, or its time budget ends.
The step size gamma_0 of each method is picked once, at the smallest N, from a small grid (the
fastest to the target), and reused for larger N; gamma_t = gamma_0 a / (a + t) with a = 100.
Reported: solver seconds and cumulative examples touched to reach the target, iterations, and
the time ratio to FSG. Last, the time of one exact inner maximization at the largest N.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.optimize import minimize

import ratecons as rc
from ratecons.phi_divergence import CHI2, KL
from ratecons.solvers.dro import full_objective, inner_maximize

D = 50
RHO = 0.1
L2 = 1e-3
TARGET = 0.01  # relative distance to F*
METHODS = ("fsg", "pssg", "gssg", "sgd")
OPTIONS = {"fsg": {}, "pssg": {}, "gssg": {"draws": 8}, "sgd": {"batch": 32}}
STEP_GRID = (0.3, 1.0, 3.0)


def make_problem(n: int, seed: int = 0) -> rc.Problem:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    w = 3.0 * rng.standard_normal(D) / np.sqrt(D)
    y = (X @ w + rng.logistic(size=n) > 0).astype(np.int8)
    ball = rc.PhiDivergenceBall(rc.Dataset(X, y, name=f"synthetic{n}"), phi="chi2", rho=RHO,
                                strict=False)
    return rc.Problem(minimize=rc.robust_loss(ball, loss="logistic"),
                      model=rc.LinearModel(l2=L2))


def lbfgs_optimum(problem: rc.Problem) -> tuple[float, np.ndarray, float]:
    form = problem.canonical()
    start = time.perf_counter()
    res = minimize(lambda th: full_objective(form, th)[:2], np.zeros(form.dim), jac=True,
                   method="L-BFGS-B", options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-9})
    return float(res.fun), res.x, time.perf_counter() - start


def run(problem: rc.Problem, method: str, target: float, step: float, budget: float,
        seed: int = 0) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        res = problem.solve(method, seed=seed, step=step, a=100.0, target=target,
                            time_limit=budget, max_iter=10 ** 7, **OPTIONS[method])
    hit = [h for h in res.history if h["objective"] <= target]
    first = hit[0] if hit else res.history[-1]
    return {"method": method, "reached": bool(hit), "time": first["time"],
            "samples": first["samples"], "iterations": first["iteration"],
            "objective": res.objective, "step": step}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 2000 only, short budgets")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--budget", type=float, default=None, help="seconds per method run")
    parser.add_argument("--cvxpy-max", type=int, default=10 ** 4)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([2000] if args.quick else [10 ** 4, 10 ** 5, 10 ** 6])
    budget = args.budget or (5.0 if args.quick else 120.0)
    grid = (1.0,) if args.quick else STEP_GRID
    steps: dict[str, float] = {}
    rows = []
    last_problem, last_theta = None, None
    for n in sizes:
        t0 = time.perf_counter()
        problem = make_problem(n)
        build = time.perf_counter() - t0
        f_star, theta_star, t_lbfgs = lbfgs_optimum(problem)
        ref_line = f"N={n}: data {build:.1f}s; L-BFGS on exact F: {f_star:.8f} ({t_lbfgs:.1f}s)"
        if n <= args.cvxpy_max:
            ref = problem.solve("cvxpy")
            ref_line += (f"; CVXPY/CLARABEL: {ref.objective:.8f} ({ref.solve_time:.1f}s, "
                         f"rel. diff {abs(ref.objective - f_star) / f_star:.1e})")
            f_star = min(f_star, ref.objective)
        print(ref_line, flush=True)
        target = (1.0 + TARGET) * f_star
        for method in METHODS:
            if method not in steps:  # pick gamma_0 at the smallest N
                trials = [run(problem, method, target, s, budget) for s in grid]
                best = min(trials, key=lambda r: (not r["reached"], r["time"]))
                steps[method] = best["step"]
                rows.append(dict(best, n=n, f_star=f_star))
            else:
                rows.append(dict(run(problem, method, target, steps[method], budget), n=n,
                                 f_star=f_star))
            r = rows[-1]
            print(f"  {method}: {'reached' if r['reached'] else 'NOT reached'} in "
                  f"{r['time']:.2f}s", flush=True)
        last_problem, last_theta = problem, theta_star
    print()
    head = (f"{'N':>8} {'method':>6} {'step':>5} {'reached':>7} {'seconds':>9} {'samples':>12} "
            f"{'iters':>8} {'objective':>11} {'gap to F*':>10} {'time/FSG':>9}")
    print(head)
    print("-" * len(head))
    for n in sizes:
        fsg = next(r for r in rows if r["n"] == n and r["method"] == "fsg")
        for r in (r for r in rows if r["n"] == n):
            ratio = r["time"] / fsg["time"] if fsg["reached"] and fsg["time"] > 0 else np.nan
            gap = (r["objective"] - r["f_star"]) / r["f_star"]
            print(f"{n:>8} {r['method']:>6} {r['step']:>5g} {str(r['reached']):>7} "
                  f"{r['time']:>9.3f} {r['samples']:>12,d} {r['iterations']:>8d} "
                  f"{r['objective']:>11.6f} {gap:>10.2e} {ratio:>9.3f}")
    # one exact inner maximization (IM procedure) on all N losses at the optimum
    form = last_problem.canonical()
    z, _ = form.losses(last_theta)
    print()
    for phi in (CHI2, KL):
        inner_maximize(z[:100], phi, RHO)
        start = time.perf_counter()
        sol = inner_maximize(z, phi, RHO)
        print(f"exact inner maximization, N={form.n}, phi={phi.name}: "
              f"{time.perf_counter() - start:.3f}s (case {sol.case}, dual gap "
              f"{sol.dual_value - sol.value:.1e})")


if __name__ == "__main__":
    main()
