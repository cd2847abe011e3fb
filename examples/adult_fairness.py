"""Adult fairness (Goh et al. 2016, section 4.1 / Figure 2): error vs achieved fairness ratio.

For several kappa in (0, 1] train

    minimize error_rate(train)  subject to  s_p(women) >= kappa s_p(men)

(the paper's s_p(D^M) <= s_p(D^F) / kappa) with ``method="mm"`` (Alg 1 over the ramp problem,
Problem 3 solved by cutting planes over v and b around SDCA), and compare on held-out data,
with deterministic (threshold at 0) and randomized (App. A) predictions, against

* the unconstrained classifier (same model, no constraint), and
* the covariance constraint of Zafar et al. (2015) (App. D): the hinge-loss SVM subject to
  |<w, xbar>| <= c, xbar the difference of the group means (eq. 8), over a range of c.

The fairness ratio reported is s_p(women) / s_p(men) on the test set (1 = parity). Prints a
table; saves ``examples/out/adult_fairness.png`` when matplotlib is installed
(``adult_fairness_quick.png`` in the reduced mode; ``--out DIR`` for another folder).

Every solve stops after T MM steps (``max_iterations``: 5, the paper's budget; 3 with
``--quick``), so a row's status reads ``iteration_limit`` where MM had not certified a fixed
point within them: the model is the last iterate, its constraints checked as any other's.

Run: ``python examples/adult_fairness.py`` (``--quick`` for a subsample, fewer kappas and 3
MM steps).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import ratecons as rc
from ratecons.result import LinearScorer


def covariance_constrained_svm(X, y: np.ndarray, l2: float, xbar: np.ndarray | None,
                               c: float) -> tuple[str, np.ndarray, float]:
    """The baseline of Zafar et al. (2015) as in App. D of Goh et al. (2016), by CVXPY.

    The hinge relaxation of the error rate (margins +-1/2 as in eq. 4),
    (1/n) sum_{y=1} max(0, 1/2 - z) + (1/n) sum_{y=0} max(0, 1/2 + z) + (l2/2)||w||^2,
    subject to -c <= <w, xbar> <= c (eq. 8: xbar = mean of group M minus mean of group F), the
    linear approximation of s_p(M) - s_p(F). ``xbar=None`` drops the constraint (plain SVM).
    Returns (CVXPY status, w, b).
    """
    import cvxpy as cp

    n = X.shape[0]
    pos = (np.asarray(y) == 1).astype(float) / n
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    z = X @ w - b
    hinges = (1.0 / n - pos) @ cp.pos(0.5 + z) + pos @ cp.pos(0.5 - z)
    cons = [] if xbar is None else [cp.abs(np.asarray(xbar) @ w) <= c]
    prob = cp.Problem(cp.Minimize(hinges + 0.5 * l2 * cp.sum_squares(w)), cons)
    prob.solve(solver="CLARABEL")
    if w.value is None:
        return prob.status, np.zeros(X.shape[1]), 0.0
    return prob.status, np.asarray(w.value), float(b.value)


def _metrics(scorer, train, test) -> dict:
    out = {}
    for name, data in (("train", train), ("test", test)):
        ratio = rc.positive_rate_ratio(data.group("sex", "Female"), data.group("sex", "Male"))
        err = rc.error_rate(data)
        out[f"{name}_error"] = err.value(scorer)
        out[f"{name}_ratio"] = ratio.value(scorer)
        out[f"{name}_error_randomized"] = err.value(scorer, "ramp")
        out[f"{name}_ratio_randomized"] = ratio.value(scorer, "ramp")
    return out


def run(rows: int | None = None, kappas=(0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        zafar_fractions=(1.0, 0.5, 0.25, 0.1, 0.03, 0.0), l2: float = 1e-3, T: int = 5,
        seed: int = 0, verbose: bool = True) -> list[dict]:
    """Train every model and return one row of metrics per model (see the module docstring).

    ``rows`` subsamples Adult first (reduced mode); Zafar's c runs over ``zafar_fractions``
    times |<w, xbar>| of the unconstrained SVM.
    """
    adult = rc.datasets.load_adult()
    if rows is not None:
        adult = adult.take(np.random.default_rng(seed).choice(adult.n, rows, replace=False))
    train, test = adult.split(2 / 3, seed=seed)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    model = rc.LinearModel(l2=l2)
    out = []

    free = rc.Problem(minimize=rc.error_rate(train), model=model).solve(max_iterations=T)
    out.append({"model": "unconstrained", "param": float("nan"), "status": free.status,
                **_metrics(free.scorer, train, test)})
    for kappa in kappas:
        problem = rc.Problem(minimize=rc.error_rate(train),
                             subject_to=[rc.positive_rate(women) >= kappa * rc.positive_rate(men)],
                             model=model)
        result = problem.solve(method="mm", max_iterations=T, seed=seed)
        out.append({"model": "constrained (mm)", "param": kappa, "status": result.status,
                    **_metrics(result.scorer, train, test)})

    X = train.X
    xbar = (np.asarray(men.X.mean(axis=0)).ravel()
            - np.asarray(women.X.mean(axis=0)).ravel())  # eq. 8
    _, w_svm, _ = covariance_constrained_svm(X, train.y, l2, None, 0.0)
    c0 = abs(float(xbar @ w_svm))
    for frac in zafar_fractions:
        status, w, b = covariance_constrained_svm(X, train.y, l2, xbar, frac * c0)
        out.append({"model": "Zafar et al.", "param": frac * c0, "status": status,
                    **_metrics(LinearScorer(w, b), train, test)})
    if verbose:
        _print(out, train, test)
    return out


def _print(out: list[dict], train, test) -> None:
    sparse = "sparse" if sp.issparse(train.X) else "dense"
    print(f"Adult: {train.n} training / {test.n} test rows, {train.X.shape[1]} {sparse} features")
    print(f"{'model':18s}{'kappa / c':>10s}{'status':>17s}{'test err':>10s}{'test ratio':>11s}"
          f"{'rand err':>10s}{'rand ratio':>11s}{'train ratio (rand)':>19s}")
    for r in out:
        print(f"{r['model']:18s}{r['param']:10.4g}{r['status']:>17s}{r['test_error']:10.4f}"
              f"{r['test_ratio']:11.3f}{r['test_error_randomized']:10.4f}"
              f"{r['test_ratio_randomized']:11.3f}{r['train_ratio_randomized']:19.3f}")


def plot(out: list[dict], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ours = [r for r in out if r["model"].startswith("constrained")]
    zafar = [r for r in out if r["model"].startswith("Zafar")]
    free = [r for r in out if r["model"] == "unconstrained"][0]
    ax = axes[0]
    ax.plot([r["test_ratio"] for r in ours], [r["test_error"] for r in ours], "o",
            color="tab:blue", label="ours, deterministic")
    ax.plot([r["test_ratio_randomized"] for r in ours],
            [r["test_error_randomized"] for r in ours], "o", color="tab:red",
            label="ours, randomized")
    ax.plot([r["test_ratio"] for r in zafar], [r["test_error"] for r in zafar], "o",
            color="tab:green", label="Zafar et al.")
    ax.axhline(free["test_error"], color="tab:green", label="unconstrained")
    ax.set_xlabel("test fairness ratio s_p(women) / s_p(men)")
    ax.set_ylabel("test error")
    ax.legend()
    ax = axes[1]
    kappas = [r["param"] for r in ours]
    ax.plot(kappas, [r["test_ratio"] for r in ours], "o-", color="tab:blue",
            label="deterministic")
    ax.plot(kappas, [r["test_ratio_randomized"] for r in ours], "o-", color="tab:red",
            label="randomized")
    ax.plot([0, 1], [0, 1], ":", color="gray")
    ax.set_xlabel("kappa (target ratio)")
    ax.set_ylabel("achieved test ratio")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(quick: bool = False, figure: Path | None = None) -> list[dict]:
    """The table's rows; ``figure``: where to save the plot (None: no plot)."""
    if quick:
        out = run(rows=4000, kappas=(0.6, 0.8, 1.0), zafar_fractions=(1.0, 0.3, 0.0), T=3)
    else:
        out = run()
    saved = plot(out, figure) if figure is not None else None
    if saved:
        print(f"figure: {saved}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="subsample, fewer kappas, 3 MM steps a solve (status "
                             "iteration_limit where no fixed point is certified by then)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out",
                        metavar="DIR", help="folder of the figure (default: examples/out)")
    args = parser.parse_args()
    main(args.quick, args.out / f"adult_fairness{'_quick' if args.quick else ''}.png")
