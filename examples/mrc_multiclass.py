"""Minimax risk classifiers on a multiclass dataset: worst-case error bound vs test error.

    python examples/mrc_multiclass.py            # satellite (6 classes), linear and RFF features
    RATECONS_EXAMPLE_QUICK=1 python examples/mrc_multiclass.py   # iris, a few seconds

For each feature map the MRC is learned with the full LP (HiGHS) and with constraint and column
generation (CCG); the table shows R* (the worst-case 0-1 error over the uncertainty set, an upper
bound on the error when the test distribution lies in it), the training and test errors of the
deterministic rule and the expected errors of the randomized rule h(y|x). With matplotlib, the
CCG's sequence R^k is plotted to examples/out/mrc_ccg.png.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OUT = Path(__file__).resolve().parent / "out"


def main(quick: bool = False) -> list[dict]:
    name = "iris" if quick else "satellite"
    data = rc.datasets.load_csv(DATA / f"{name}.csv")
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
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return rows
    OUT.mkdir(exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, R in histories.items():
        ax.plot(range(1, len(R) + 1), R, marker=".", label=label)
    ax.set_xlabel("CCG iteration k")
    ax.set_ylabel("R^k")
    ax.set_title(f"CCG on {name}: R^k increases to R*")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "mrc_ccg.png", dpi=120)
    plt.close(fig)
    return rows


if __name__ == "__main__":
    main(quick=os.environ.get("RATECONS_EXAMPLE_QUICK") == "1")
