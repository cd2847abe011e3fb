"""The robust-loss CVXPY reference side by side: its cone program now and the former one.

    python -m benchmarks.dro --reference-forms              # KL, N = 1e5 (minutes per solve)
    python -m benchmarks.dro --reference-forms --n 20000    # the same at N = 2e4
    python -m benchmarks.dro --reference-forms --phi chi2   # the chi-square ball

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
each solve capped at ``--time-limit`` seconds. Per solve: status, iterations, compile and solve
seconds, seconds per iteration, and the exact objective at the returned w against ``lbfgs`` (the
certified optimum). The floor is SciPy's L-BFGS-B on the exact objective (``dro.scipy_lbfgs``).
Then the reference's ladder at this N (whether it starts at ``tight+0.95``,
``patterns.dro.REFERENCE_SHORT_STEPS_MIN_N``) and, from the measured solves, what the ladder costs
starting at ``tight`` (a failed first try, then the retry) and starting at ``tight+0.95``. The
LAST line is the worst ratio: the cost of the ladder that starts at ``tight`` over the one that
starts at ``tight+0.95``.
"""

from __future__ import annotations

import time
import warnings
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
        problem.unpack_results(raw, chain, inverse)
        value = exact(np.asarray(w.value, dtype=np.float64))
    return {"status": status, "iterations": int(raw.iterations), "compile": compile_s,
            "solve": solve_s, "per_iteration": solve_s / max(int(raw.iterations), 1),
            "objective": value}


def ladder_costs(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per form, the seconds of the reference's ladder (compile once, then the solves until
    one answers) starting at ``tight`` and starting at ``tight+0.95``, from the measured
    solves; nan when the measured tries do not answer."""
    out = {}
    for form in dict.fromkeys(r["form"] for r in rows):
        tries = {r["setting"]: r for r in rows if r["form"] == form}
        tight, short = tries.get("tight"), tries.get("tight+0.95")
        if tight is None or short is None:
            continue
        answered = [r["status"] in ANSWERED for r in (tight, short)]
        from_tight = tight["compile"] + (tight["solve"] if answered[0] else
                                         tight["solve"] + short["solve"] if answered[1]
                                         else float("nan"))
        out[f"{form} from tight"] = from_tight
        out[f"{form} from tight+0.95"] = (short["compile"] + short["solve"] if answered[1]
                                          else float("nan"))
    return out


def run_reference_forms(n: int = 100000, phi: str = "kl", time_limit: float = 300.0,
                        forms: tuple[str, ...] = ("current", "former")) -> list[dict]:
    """Build and solve the two cone programs side by side (module docstring); print the table
    and the ladder's costs, the worst ratio last. Returns the rows."""
    from benchmarks.dro import Instance, scipy_lbfgs, synthetic
    from ratecons.patterns.dro import REFERENCE_SHORT_STEPS_MIN_N
    from ratecons.reductions.to_cvxpy import TIGHT_CLARABEL
    from ratecons.solvers.dro import evaluate

    inst = Instance(synthetic(n, 20, 9), phi, 0.1, 0.0, intercept=False)
    form = inst.problem().canonical()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        ref = inst.problem().solve("lbfgs")
        t_lbfgs = time.perf_counter() - start
    f_scipy, t_scipy = scipy_lbfgs(inst)
    print(f"{inst.label}\n  lbfgs {t_lbfgs:.2f}s {ref.status} F={ref.objective:.10f} | floor: "
          f"SciPy L-BFGS-B on F {t_scipy:.2f}s F={f_scipy:.10f}", flush=True)
    builders = {"current": current_program, "former": former_program}
    settings = {"tight": TIGHT_CLARABEL,
                "tight+0.95": {**TIGHT_CLARABEL, "max_step_fraction": 0.95}}
    rows = []
    for name in forms:
        for setting, options in settings.items():
            problem, w = builders[name](inst)
            r = solve_once(problem, w, {**options, "time_limit": time_limit},
                           lambda theta: evaluate(form, theta).value)
            r.update(form=name, setting=setting,
                     vs_lbfgs=(r["objective"] - ref.objective) / max(1.0, abs(ref.objective)))
            rows.append(r)
            print(f"  {name:>8} {setting:>10} {r['status']:>20} {r['iterations']:4d} it  "
                  f"compile {r['compile']:6.1f}s  solve {r['solve']:7.1f}s  "
                  f"{r['per_iteration']:6.3f} s/it  F-lbfgs {r['vs_lbfgs']:+.1e}", flush=True)
    short = phi == "kl" and n > REFERENCE_SHORT_STEPS_MIN_N
    print(f"reference ladder at N = {n}: starts at {'tight+0.95' if short else 'tight'} "
          f"(REFERENCE_SHORT_STEPS_MIN_N = {REFERENCE_SHORT_STEPS_MIN_N}, KL only)")
    costs = ladder_costs(rows)
    for label, seconds in costs.items():
        print(f"  ladder {label:>26}: {seconds:8.1f}s")
    if "current from tight" in costs:
        print(f"WORST ratio ladder from tight / from tight+0.95 (current form): "
              f"{costs['current from tight'] / costs['current from tight+0.95']:.2f}x")
    return rows
