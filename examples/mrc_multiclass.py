"""Minimax risk classifiers on a multiclass dataset: worst-case error bound vs test error.

    python examples/mrc_multiclass.py            # digits 0-5 (6 classes), linear and RFF features
    python examples/mrc_multiclass.py --quick    # iris, a few seconds
    python examples/mrc_multiclass.py --data ../shared/data   # UCI satellite (6 classes)

The data come with scikit-learn (``sklearn.datasets``: the 8x8 handwritten digits 0 to 5,
1,083 images in six classes, and iris), so the example runs from a plain install;
``--data DIR`` reads the UCI satellite CSV (six classes, 6,435 rows; tidy layout, see
:func:`ratecons.datasets.load_csv`) from ``DIR`` instead. The MRC's LP has a constraint per
example and nonempty subset of classes, 2^k - 1 of them, so the ten digits (1,023 subsets)
would make it 16 times larger than six.

For each feature map the MRC is learned with the full LP (HiGHS) and with constraint and column
generation (CCG); the table shows R* (the worst-case 0-1 error over the uncertainty set, an upper
bound on the error when the test distribution lies in it), the training and test errors of the
deterministic rule and the expected errors of the randomized rule h(y|x). With matplotlib, the
CCG's sequence R^k is plotted to examples/out/mrc_ccg.png (``mrc_ccg_quick.png`` with
``--quick``; ``--out DIR`` for another folder).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sklearn import datasets

import ratecons as rc

#: the digits 0 .. DIGITS - 1 of scikit-learn's 8x8 images (six classes, as UCI satellite)
DIGITS = 6


def load(quick: bool, data_dir: Path | None) -> rc.Dataset:
    """iris (quick), the UCI satellite CSV under ``data_dir``, or scikit-learn's digits."""
    if data_dir is not None and not quick:
        return rc.datasets.load_csv(data_dir / "satellite.csv")
    if quick:
        X, y = datasets.load_iris(return_X_y=True)
        return rc.Dataset(X, y, name="iris")
    X, y = datasets.load_digits(return_X_y=True)
    keep = y < DIGITS
    return rc.Dataset(X[keep], y[keep], name=f"digits 0-{DIGITS - 1}")


def main(quick: bool = False, data_dir: Path | None = None, figure: Path | None = None
         ) -> list[dict]:
    """The table's rows; ``figure``: where to save the plot of R^k (None: no plot)."""
    data = load(quick, data_dir)
    name = data.name
    train, test = data.split(0.7, seed=0)
    feature_maps = {
        "linear": "linear",
        "RFF(50)" if quick else "RFF(200)": rc.features.RandomFourier(50 if quick else 200,
                                                                     seed=0),
    }
    rows, histories = [], {}
    for label, features in feature_maps.items():
        U = rc.MomentSet(train, features=features, lambda0=0.3)
        problem = rc.Problem(minimize=rc.minimax_risk(U))
        methods = ["ccg"] if not quick and label != "linear" else ["lp", "ccg"]
        for method in methods:
            start = time.perf_counter()
            result = problem.solve(method)
            elapsed = time.perf_counter() - start
            rows.append({
                "features": label, "method": method, "status": result.status,
                "R*": result.objective, "train err": result.error(train),
                "test err": result.error(test),
                "test err h(y|x)": result.error(test, randomized=True), "time (s)": elapsed,
            })
            if method == "ccg":
                histories[label] = [h["lower"] for h in result.history]
    print(f"{name}: n_train={train.n}, n_test={test.n}, classes={U.n_classes}")
    keys = list(rows[0])
    print(" | ".join(f"{k:>15s}" for k in keys))
    for r in rows:
        print(" | ".join(f"{r[k]:>15.4f}" if isinstance(r[k], float) else f"{r[k]:>15s}"
                         for k in keys))
    if figure is None:
        return rows
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return rows
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, R in histories.items():
        ax.plot(range(1, len(R) + 1), R, marker=".", label=label)
    ax.set_xlabel("CCG iteration k")
    ax.set_ylabel("R^k")
    ax.set_title(f"CCG on {name}: R^k increases to R*")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figure, dpi=120)
    print(f"figure: {figure}")
    plt.close(fig)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="iris, a few seconds")
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="folder with the UCI satellite.csv (default: sklearn's digits 0-5)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out",
                        metavar="DIR", help="folder of the figure (default: examples/out)")
    args = parser.parse_args()
    main(args.quick, args.data, args.out / f"mrc_ccg{'_quick' if args.quick else ''}.png")
