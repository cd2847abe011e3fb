"""Robust learning over a chi-square ball: FSG, PSSG, GSSG and SGD, and L2-regularized ERM.

The layout of Figures 1-2 of the DRO paper: test misclassification against cumulative samples
for the four methods, on Adult (the package's embedded copy, 70/30 split) and on a large
synthetic problem; then Table 1's comparison with logistic ERM whose l2 penalty is tuned by
5-fold cross-validation. Prints tables; saves ``examples/out/robust_learning.png`` when
matplotlib is installed (``robust_learning_quick.png`` in the reduced mode; ``--out DIR`` for
another folder).

    python examples/robust_learning.py            # full size (about 4 minutes on 2 cores)
    python examples/robust_learning.py --quick    # seconds (used by tests)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

try:
    import ratecons as rc
except ImportError:  # running from a source checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import ratecons as rc

RHO = 0.1  # section 4
METHODS = ("fsg", "pssg", "gssg", "sgd")
OPTIONS = {"fsg": {}, "pssg": {}, "gssg": {"draws": 8}, "sgd": {"batch": 32}}


def synthetic(n: int, d: int = 50, seed: int = 0) -> rc.Dataset:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = 3.0 * rng.standard_normal(d) / np.sqrt(d)
    y = (X @ w + rng.logistic(size=n) > 0).astype(np.int8)
    return rc.Dataset(X, y, name=f"synthetic{n}")


def curves(train: rc.Dataset, test: rc.Dataset, budget: float, seed: int = 0) -> dict:
    """Test error at every checkpoint of every method: {method: (samples, errors, result)}."""
    ball = rc.PhiDivergenceBall(train, phi="chi2", rho=RHO, strict=False)
    problem = rc.Problem(minimize=rc.robust_loss(ball), model=rc.LinearModel(l2=1e-4))
    out = {}
    for method in METHODS:
        points: list[tuple[int, float]] = []

        def record(event: dict, points=points) -> None:
            w, b = problem.canonical().split(event["theta"])
            pred = (np.asarray(test.X @ w).ravel() - b > 0).astype(np.int8)
            points.append((event["samples"], float(np.mean(pred != test.y))))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rc.ConvergenceWarning)
            res = problem.solve(method, seed=seed, callback=record, time_limit=budget,
                                max_iterations=10 ** 7, step=1.0, a=100.0, **OPTIONS[method])
        samples, errors = (np.array(v) for v in zip(*points, strict=True))
        out[method] = (samples, errors, res)
    return out


def erm_cv(train: rc.Dataset, test: rc.Dataset, folds: int = 5, grid: np.ndarray | None = None,
           seed: int = 0) -> dict:
    """Logistic ERM + (lam/2)||w||^2 with lam chosen by k-fold CV on the training set."""
    X, y = train.X, 2.0 * train.y - 1.0
    rng = np.random.default_rng(seed)
    fold = rng.permutation(train.n) % folds

    def fit(Xf, yf, lam):
        def f(th):
            m = yf * (np.asarray(Xf @ th[:-1]).ravel() - th[-1])
            s = -0.5 * (1 - np.tanh(0.5 * m)) * yf / yf.size
            g = np.append(np.asarray(Xf.T @ s).ravel() + lam * th[:-1], -s.sum())
            return np.mean(np.logaddexp(0, -m)) + 0.5 * lam * th[:-1] @ th[:-1], g
        return minimize(f, np.zeros(Xf.shape[1] + 1), jac=True, method="L-BFGS-B").x

    def err(th, Xe, ye):
        return float(np.mean(((np.asarray(Xe @ th[:-1]).ravel() - th[-1]) > 0) != (ye > 0)))

    start = time.perf_counter()
    grid = 10.0 ** np.arange(-6, 1) if grid is None else grid
    cv = [np.mean([err(fit(X[fold != k], y[fold != k], lam), X[fold == k], y[fold == k])
                   for k in range(folds)]) for lam in grid]
    lam = float(grid[int(np.argmin(cv))])
    th = fit(X, y, lam)
    return {"lam": lam, "error": err(th, test.X, 2.0 * test.y - 1.0),
            "seconds": time.perf_counter() - start, "fits": folds * grid.size + 1}


def main(quick: bool = False, figure: Path | None = None) -> dict:
    """Each data set's runs and ERM; ``figure``: where to save the plot (None: no plot)."""
    adult = rc.datasets.load_adult()
    if quick:
        adult = adult.take(np.random.default_rng(0).choice(adult.n, 1500, replace=False))
    big = synthetic(3000 if quick else 200_000)
    budget = 0.4 if quick else 20.0
    results = {}
    for name, data in (("adult", adult), (big.name, big)):
        train, test = data.split(0.7, seed=0)
        runs = curves(train, test, budget)
        erm = erm_cv(train, test, folds=3, grid=10.0 ** np.arange(-4, 0)) if quick else \
            erm_cv(train, test)
        results[name] = (runs, erm)
        marks = [10 ** k for k in range(2, 8) if 10 ** k <= max(r[0][-1] for r in runs.values())]
        print(f"\n{name}: N_train={train.n}, d={train.d}, chi2 ball rho={RHO}")
        print(f"{'method':>8} {'final objective':>16} {'seconds':>8} "
              + "".join(f"{'err@' + format(m, '.0e'):>10}" for m in marks))
        for method, (samples, errors, res) in runs.items():
            cells = []
            for m in marks:
                idx = np.flatnonzero(samples <= m)
                cells.append(f"{errors[idx[-1]]:>10.4f}" if idx.size else f"{'-':>10}")
            print(f"{method:>8} {res.objective:>16.6f} {res.solve_time:>8.2f} " + "".join(cells))
        best = min(runs.values(), key=lambda r: r[2].objective)[2]
        print(f"{'DRO':>8} test error {best.metrics(test)['error']:.4f} (method {best.method})")
        print(f"{'ERM':>8} test error {erm['error']:.4f} (l2={erm['lam']:g} by k-fold CV, "
              f"{erm['fits']} fits, {erm['seconds']:.1f}s)")
    if figure is None:
        return results
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return results
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"pssg": "green", "fsg": "red", "gssg": "black", "sgd": "blue"}
    for ax, (name, (runs, erm)) in zip(axes, results.items(), strict=True):
        for method, (samples, errors, _) in runs.items():
            ax.plot(np.maximum(samples, 1), errors, color=colors[method], label=method.upper())
        ax.axhline(erm["error"], color="gray", ls="--", label="ERM (CV)")
        ax.set_xscale("log")
        ax.set(title=name, xlabel="cumulative samples", ylabel="test misclassification")
        ax.legend()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=120, bbox_inches="tight")
    print(f"figure: {figure}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="Adult subsample, small synthetic problem (seconds)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out",
                        metavar="DIR", help="folder of the figure (default: examples/out)")
    args = parser.parse_args()
    main(args.quick, args.out / f"robust_learning{'_quick' if args.quick else ''}.png")
