"""Subgradient methods for the fixed-marginals MRC (2.5): classic vs stochastic vs step rules.

Run ``python -m benchmarks.mrc_subgradient`` (add ``--quick`` for a smoke run). Data: adult
(binary, subsampled) and satellite (6 classes, subsampled) from ``../shared/data`` with
psi = [1, z-scored x] and lambda0 = 0.3 (``rc.MomentSet``). The reference R* is the CVXPY optimum
of (2.5) from the package's lowering (``solve_mrc_cvxpy(form, "HIGHS", "compact")``); the
subsample sizes are set by the time that
reference takes (satellite n = 2000 already costs CVXPY about two minutes on 2 cores).

Columns: wall time, iterations, the objective (exact value of (2.5) at the returned mu),
|R - R*|, the certified duality gap the solver reports, its status, and CVXPY time / method time.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import ratecons as rc
from ratecons.canonical.mrc import MRCForm
from ratecons.errors import ConvergenceWarning
from ratecons.reductions.to_cvxpy import solve_mrc_cvxpy
from ratecons.solvers.subgradient import fixed_marginals_subgradient

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

#: (label, options) of the configurations compared; the first of each method is its default
CONFIGS = [
    ("classic, constant_length (default)", {"method": "classic"}),
    ("classic, a/sqrt(k)", {"method": "classic", "step": "a/sqrt(k)"}),
    ("classic, constant", {"method": "classic", "step": "constant"}),
    ("stochastic, a/sqrt(k) (default)", {"method": "stochastic"}),
    ("stochastic, constant", {"method": "stochastic", "step": "constant"}),
    ("stochastic, a/(b+k)", {"method": "stochastic", "step": "a/(b+k)"}),
    ("stochastic, a/sqrt(k), batch 32", {"method": "stochastic", "batch_size": 32,
                                         "step_params": {"a": 2.0}}),
]


def _form(data: rc.Dataset) -> MRCForm:
    U = rc.MomentSet(data, lambda0=0.3)
    return MRCForm(U.psi, U.n_classes, U.y, U.tau, U.lam, fixed_marginals=True, name=data.name)


def _args(form: MRCForm) -> tuple:
    return form.psi, form.n_classes, form.y, form.tau, form.lam


def subsample(name: str, n: int, seed: int = 0) -> MRCForm:
    data = rc.datasets.load_csv(DATA / f"{name}.csv")
    idx = np.random.default_rng(seed).permutation(data.n)[: min(n, data.n)]
    return _form(data.take(idx, name=f"{name}{idx.size}"))


def _warm_up_form() -> MRCForm:
    rng = np.random.default_rng(0)
    y = np.arange(50) % 3
    return _form(rc.Dataset(rng.normal(size=(50, 2)) + y[:, None], y, name="warm"))


def run(quick: bool = False) -> list[dict]:
    sizes = {"adult": 1000, "satellite": 500} if quick else {"adult": 5000, "satellite": 2000}
    warm = _warm_up_form()  # compile the numba kernels before timing
    for method in ("classic", "stochastic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fixed_marginals_subgradient(*_args(warm), method=method, max_iterations=20)
    rows = []
    for name, n in sizes.items():
        inst = subsample(name, n)
        start = time.perf_counter()
        best = solve_mrc_cvxpy(inst, solver="HIGHS", formulation="compact").objective
        t_ref = time.perf_counter() - start
        rows.append({"data": name, "n": inst.psi.shape[0], "classes": inst.n_classes,
                     "p": inst.psi.shape[1], "method": "CVXPY + HiGHS (reference)",
                     "iterations": None, "time": t_ref, "objective": best, "error": 0.0,
                     "gap": 0.0, "status": "optimal", "ratio": 1.0})
        for label, options in CONFIGS:
            opts = dict(options)
            if quick:
                opts["max_iterations"] = 500 if opts["method"] == "classic" else \
                    20 * inst.psi.shape[0] // opts.get("batch_size", 1)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                sol = fixed_marginals_subgradient(*_args(inst), seed=0, **opts)
            elapsed = time.perf_counter() - start
            gap = sol.certificate.gap
            rows.append({"data": name, "n": inst.psi.shape[0], "classes": inst.n_classes,
                         "p": inst.psi.shape[1], "method": label,
                         "iterations": sol.certificate.details["iterations"], "time": elapsed,
                         "objective": sol.objective, "error": abs(sol.objective - best),
                         "gap": gap if gap is not None else float("nan"),
                         "status": sol.status, "ratio": t_ref / elapsed})
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'data':10s} {'n':>6s} {'|Y|':>4s} {'p':>4s}  {'method':36s} {'iters':>7s} "
            f"{'time s':>8s} {'objective':>10s} {'|R-R*|':>9s} {'cert gap':>9s} "
            f"{'status':15s} {'t_cvx/t':>8s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        iters = "" if r["iterations"] is None else str(r["iterations"])
        lines.append(
            f"{r['data']:10s} {r['n']:6d} {r['classes']:4d} {r['p']:4d}  {r['method']:36s} "
            f"{iters:>7s} {r['time']:8.2f} {r['objective']:10.5f} {r['error']:9.2e} "
            f"{r['gap']:9.2e} {r['status']:15s} {r['ratio']:8.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small subsamples, few iterations")
    args = parser.parse_args(argv)
    print(format_table(run(quick=args.quick)))


if __name__ == "__main__":
    main()
