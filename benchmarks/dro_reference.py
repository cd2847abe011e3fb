"""The robust-loss CVXPY reference side by side: its cone program now and the former one.

    python -m benchmarks.dro --reference-forms              # KL, N = 1e5 (minutes per solve)
    python -m benchmarks.dro --reference-forms --n 20000    # the same at N = 2e4
    python -m benchmarks.dro --reference-forms --phi chi2   # the chi-square ball
    python -m benchmarks.dro --reference-forms --n 10000 --seeds 0,1,2,3  # current form, 4 seeds

The instance is part B's ``synthetic9`` (robust logistic loss, d = 20, rho = 0.1, no intercept,
l2 = 0). Two cone programs of the same problem are built in one process:

- ``current``: what ``problem.solve("cvxpy")`` solves (``reductions.to_cvxpy.lower_step``):
  score variables z = X w, an epigraph ell >= l(y z), and the support function of the ball
  (KL: exponential cones with the mean of v as a scalar epigraph; chi-square: a second-order
  cone);
- ``former``: the graph of the former ``lowering/dro_cvxpy.py`` (removed in 3116ad5), written
  out here for the comparison: X w inside the loss, the KL mean as 1/N coefficients in the
  objective, the chi-square excess >= l(y X w) - eta directly.

Each is solved once with CLARABEL at the reference's tight tolerances (``tight``) and with
``max_step_fraction=0.95`` on top (``tight+0.95``, the first retry of the reference's ladder),
and with 0.9 (``tight+0.9``, its next rung) when a ladder needs it; each solve is capped at
``--time-limit`` seconds. Per solve: status, iterations, compile and solve seconds, seconds per
iteration, and the exact objective at the returned w against ``lbfgs`` (the certified optimum).
The floor is SciPy's L-BFGS-B on the exact objective (``dro.scipy_lbfgs``). Per form, the
reference's ladder from ``tight`` and from ``tight+0.95`` (compile once, then the rungs until one
answers: iterations and seconds, from the measured solves). ``--seeds 0,1,2`` runs the current
form on several instances ``synthetic(N, 20, seed)`` (the stall rates of docs/robust.md). Then
where the reference's ladder starts at this N (``patterns.dro.REFERENCE_SHORT_STEPS_MIN_N``) and,
LAST, the worst ratio: the ladder from ``tight`` over the one from ``tight+0.95`` (current form,
summed over the instances), in iterations (the same KKT system per iteration, so the measure
the machine's load does not move) and in seconds.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from typing import Any

import numpy as np

#: CLARABEL's raw statuses that carry an answer the reference accepts
ANSWERED = ("Solved", "AlmostSolved")


def former_program(inst: Any) -> tuple[Any, Any]:
    """The former DRO lowering's cone program of ``inst`` (module docstring); (problem, w)."""
    import cvxpy as cp

    X = np.asarray(inst.data.X, dtype=np.float64)
    ys = 2.0 * np.asarray(inst.data.y, dtype=np.float64) - 1.0
    n, d = X.shape
    w = cp.Variable(d)
    losses = cp.logistic(-cp.multiply(ys, X @ w))
    if inst.phi == "chi2":
        eta, excess = cp.Variable(), cp.Variable(n, nonneg=True)
        objective = eta + np.sqrt((1.0 + inst.rho) / n) * cp.norm(excess, 2)
        return cp.Problem(cp.Minimize(objective), [excess >= losses - eta]), w
    alpha, lam = cp.Variable(nonneg=True), cp.Variable()
    ell, v = cp.Variable(n), cp.Variable(n)
    constraints = [ell >= losses, cp.constraints.ExpCone(ell - lam, alpha * np.ones(n), v)]
    objective = alpha * inst.rho + lam - alpha + cp.sum(v) / n
    return cp.Problem(cp.Minimize(objective), constraints), w


def current_program(inst: Any) -> tuple[Any, Any]:
    """The cone program the reference solves (``lower_step`` at no anchor); (problem, w)."""
    from ratecons.reductions.to_cvxpy import lower_step

    analysis = inst.problem().analysis
    psi = {id(data): data.X for data in analysis.datasets}
    problem, w, _, _ = lower_step(analysis, psi, None, np.zeros(0))
    return problem, w


def solve_once(problem: Any, w: Any, options: dict[str, Any],
               exact: Any) -> dict[str, Any]:
    """One CLARABEL solve of ``problem`` with ``options``: CLARABEL's own status and
    iteration count (also when it fails, which ``problem.solve`` would hide behind an
    error), times, and the exact objective at the returned w (nan without an answer)."""
    import cvxpy as cp
    from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import CLARABEL

    start = time.perf_counter()
    data, chain, inverse = problem.get_problem_data(cp.CLARABEL)
    compile_s = time.perf_counter() - start
    solver = CLARABEL()
    start = time.perf_counter()
    raw = solver.solve_via_data(data, False, False, dict(options))
    solve_s = time.perf_counter() - start
    status = str(raw.status)
    value = float("nan")
    if status in ANSWERED:
        for step in inverse:  # the data were compiled without solver options
            if getattr(step, "solver_options", "") is None:
                step.solver_options = {}
        with warnings.catch_warnings():  # "may be inaccurate": the status column says it
            warnings.simplefilter("ignore")
            problem.unpack_results(raw, chain, inverse)
        value = exact(np.asarray(w.value, dtype=np.float64))
    return {"status": status, "iterations": int(raw.iterations), "compile": compile_s,
            "solve": solve_s, "per_iteration": solve_s / max(int(raw.iterations), 1),
            "objective": value}


#: the rungs of the reference's ladder measured here, in its order (``to_cvxpy._attempts``)
RUNGS = {"tight": {}, "tight+0.95": {"max_step_fraction": 0.95},
         "tight+0.9": {"max_step_fraction": 0.9}}


def ladder(start: str, measured: dict[str, dict[str, Any]], solve: Any) -> tuple[float, float]:
    """(iterations, seconds) of the reference's ladder from rung ``start``: compile once, then
    the rungs in turn until one answers, an answer at reduced accuracy included (as the
    reference keeps it above ``patterns.dro.REFERENCE_RETRY_MAX_N`` examples; a rung not yet in
    ``measured`` is solved by ``solve(rung)``); (nan, nan) when none of :data:`RUNGS` answers."""
    names = list(RUNGS)[list(RUNGS).index(start):]
    iterations, seconds = 0.0, measured[start]["compile"]
    for name in names:
        if name not in measured:
            measured[name] = solve(name)
        iterations += measured[name]["iterations"]
        seconds += measured[name]["solve"]
        if measured[name]["status"] in ANSWERED:
            return iterations, seconds
    return float("nan"), float("nan")


def solve_rung(inst: Any, name: str, rung: str, time_limit: float, best: float,
               rows: list[dict]) -> dict[str, Any]:
    """Form ``name`` of ``inst`` solved once at ``rung`` (:data:`RUNGS` on the tight
    tolerances), printed and appended to ``rows``; ``best`` is lbfgs' objective."""
    from ratecons.reductions.to_cvxpy import TIGHT_CLARABEL
    from ratecons.solvers.dro import evaluate

    form = inst.problem().canonical()
    problem, w = {"current": current_program, "former": former_program}[name](inst)
    options = {**TIGHT_CLARABEL, **RUNGS[rung], "time_limit": time_limit}
    r = solve_once(problem, w, options, lambda theta: evaluate(form, theta).value)
    r.update(form=name, instance=inst.label, setting=rung,
             vs_lbfgs=(r["objective"] - best) / max(1.0, abs(best)))
    rows.append(r)
    print(f"  {name:>8} {rung:>10} {r['status']:>20} {r['iterations']:4d} it  compile "
          f"{r['compile']:6.1f}s  solve {r['solve']:7.1f}s  {r['per_iteration']:6.3f} s/it  "
          f"F-lbfgs {r['vs_lbfgs']:+.1e}", flush=True)
    return r


def run_reference_forms(n: int = 100000, phi: str = "kl", time_limit: float = 300.0,
                        seeds: tuple[int, ...] = (9,)) -> list[dict]:
    """Build and solve the cone programs side by side (module docstring) on
    ``synthetic(n, 20, seed)``: both forms for one seed, the current form alone for several;
    print the table and the ladders' costs, the worst ratio last. Returns the rows."""
    from benchmarks.dro_instances import Instance, scipy_lbfgs, synthetic
    from ratecons.patterns.dro import REFERENCE_SHORT_STEPS_MIN_N

    forms = ("current", "former") if len(seeds) == 1 else ("current",)
    rows: list[dict] = []
    totals = {"tight": np.zeros(2), "tight+0.95": np.zeros(2)}  # iterations, seconds
    for seed in seeds:
        inst = Instance(synthetic(n, 20, seed), phi, 0.1, 0.0, intercept=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            ref = inst.problem().solve("lbfgs")
            t_lbfgs = time.perf_counter() - start
        f_scipy, t_scipy = scipy_lbfgs(inst)
        print(f"{inst.label}\n  lbfgs {t_lbfgs:.2f}s {ref.status} F={ref.objective:.10f} | "
              f"floor: SciPy L-BFGS-B on F {t_scipy:.2f}s F={f_scipy:.10f}", flush=True)
        for name in forms:
            solve = partial(solve_rung, inst, name, time_limit=time_limit,
                            best=ref.objective, rows=rows)
            measured = {rung: solve(rung) for rung in ("tight", "tight+0.95")}
            for start_rung, total in totals.items():
                cost = ladder(start_rung, measured, solve)
                print(f"  {name:>8} ladder from {start_rung:>10}: {cost[0]:4.0f} it "
                      f"{cost[1]:8.1f}s")
                if name == "current":
                    total += cost
    short = phi == "kl" and n > REFERENCE_SHORT_STEPS_MIN_N
    print(f"reference ladder at N = {n}: starts at {'tight+0.95' if short else 'tight'} "
          f"(REFERENCE_SHORT_STEPS_MIN_N = {REFERENCE_SHORT_STEPS_MIN_N}, KL only)")
    (it_tight, s_tight), (it_short, s_short) = totals.values()
    print(f"WORST ratio ladder from tight / from tight+0.95 (current form, {len(seeds)} "
          f"instance(s)): {it_tight / it_short:.2f}x in iterations ({it_tight:.0f} / "
          f"{it_short:.0f}), {s_tight / s_short:.2f}x in seconds")
    return rows
