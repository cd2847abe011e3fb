"""Ranking at the top with a Gaussian kernel: the layout of Table 6 of Macha, Adam and Smidl.

Two problems, from the data that come with scikit-learn so that the example runs from a plain
install: the 8x8 handwritten digits (digit 1 positive, one vs rest; scikit-learn's copy of
UCI optdigits' test part) and the breast cancer data (malignant positive). With
``--data DIR`` (a folder holding the UCI CSVs in the tidy layout of
:func:`ratecons.datasets.load_csv`), the paper's optdigits (digit 1 positive) and
letter_recognition (letter 0 positive) instead. Standardized features, Gaussian kernel with
the paper's default width gamma = 1/d.
Every formulation is trained by dual coordinate ascent (Alg 2) with lambda = 1e-3 (no
validation search; the paper tunes lambda) and evaluated on a held-out half by TPR@1, TPR@5,
TPR@10 (threshold: mean of the K largest negative scores), TPR@0.01, TPR@0.05 (threshold: top
quantile of the negative scores) and AUC; the standard SVM (C-SVC with C = 1/(lambda n)) is
the baseline. Numbers are medians over seeds of the random subsample and split, in percent.

    python examples/ranking_at_top.py          # up to 1500 rows per dataset, 3 seeds
    python examples/ranking_at_top.py --quick  # up to 300 rows, one seed (tests)

A dataset with fewer rows than asked for is used whole: breast cancer has 569 rows, so its
table is on 569 (284 for training, 285 for testing); the printed n is the number of rows
actually used.
    python examples/ranking_at_top.py --data ../shared/data   # the paper's UCI data
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from sklearn import datasets

import ratecons as rc
from ratecons import metrics
from ratecons.kernels import KernelSpec, kernel_block

LAMBDA = 1e-3
#: (dataset, positive class) of each problem: scikit-learn's copies, or the paper's UCI CSVs
BUNDLED = (("digits", 1), ("breast_cancer", 0))
UCI = (("optdigits", 1), ("letter_recognition", 0))
FORMULATIONS = {
    "SVM": None,
    "TopPush": lambda d: rc.tpr_at_top(d, k=1),
    "TopPushK (5)": lambda d: rc.tpr_at_top(d, k=5),
    "TopPushK (10)": lambda d: rc.tpr_at_top(d, k=10),
    "tau-FPL (0.01)": lambda d: rc.tpr_at_quantile(d, tau=0.01),
    "tau-FPL (0.05)": lambda d: rc.tpr_at_quantile(d, tau=0.05),
    "Pat&Mat-NP (0.01)": lambda d: rc.tpr_at_quantile(d, 0.01, formulation="pat&mat"),
    "Pat&Mat-NP (0.05)": lambda d: rc.tpr_at_quantile(d, 0.05, formulation="pat&mat"),
}
METRICS = ("TPR@1", "TPR@5", "TPR@10", "TPR@0.01", "TPR@0.05", "AUC")


def load(name: str, positive: int, n: int, seed: int,
         data_dir: Path | None = None) -> tuple[rc.Dataset, rc.Dataset]:
    """A standardized subsample of ``n`` rows, one vs rest, split in halves."""
    if data_dir is None:
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        data = rc.Dataset(X, y, name=name)
    else:
        data = rc.datasets.load_csv(data_dir / f"{name}.csv")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(data.n, min(n, data.n), replace=False))
    X = np.asarray(data.X[idx], dtype=np.float64)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    sub = rc.Dataset(X, (data.y[idx] == positive).astype(int), name=name)
    return sub.split(0.5, seed=seed)


def svm_dual_coefficients(Kmat: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """The C-SVC baseline of Section 4.1, by CVXPY: the dual (24),

        maximize  sum_i alpha_i - (1/2) sum_ij alpha_i alpha_j y_i y_j k(x_i, x_j)
        s.t.      sum_i alpha_i y_i = 0,  0 <= alpha_i <= C,

    with the kernel matrix k(X, X) and labels y in {0, 1} (as y in {-1, +1}); the quadratic
    term as ||L^T alpha||^2 with L L^T = diag(y) K diag(y) (eigenvalues below a relative 1e-12
    dropped). Returns a_i = alpha_i y_i, so that the scores are k(x, X) a up to the bias (which
    no ranking metric depends on)."""
    import cvxpy as cp

    ys = np.where(np.asarray(y) > 0, 1.0, -1.0)
    signed = Kmat * np.outer(ys, ys)
    vals, vecs = np.linalg.eigh(0.5 * (signed + signed.T))
    keep = vals > 1e-12 * max(1.0, float(vals.max(initial=0.0)))
    L = vecs[:, keep] * np.sqrt(vals[keep])
    alpha = cp.Variable(ys.size)
    prob = cp.Problem(cp.Maximize(-0.5 * cp.sum_squares(L.T @ alpha) + cp.sum(alpha)),
                      [ys @ alpha == 0, alpha >= 0, alpha <= C])
    prob.solve(solver="CLARABEL")
    if alpha.value is None:
        raise RuntimeError(f"the SVM baseline failed to solve (CVXPY status {prob.status}).")
    return np.asarray(alpha.value) * ys


def evaluate(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    return {
        "TPR@1": metrics.tpr_at_top(scores, y, 1),
        "TPR@5": metrics.tpr_at_top(scores, y, 5),
        "TPR@10": metrics.tpr_at_top(scores, y, 10),
        "TPR@0.01": metrics.tpr_at_quantile(scores, y, 0.01),
        "TPR@0.05": metrics.tpr_at_quantile(scores, y, 0.05),
        "AUC": metrics.auc(scores, y),
    }


def fit_scores(name: str, train: rc.Dataset, test: rc.Dataset, max_epochs: int) -> np.ndarray:
    if FORMULATIONS[name] is None:
        spec = KernelSpec("gaussian", gamma=1.0 / train.d)
        coef = svm_dual_coefficients(kernel_block(spec, train.X, train.X), train.y,
                                     C=1.0 / (LAMBDA * train.n))
        return kernel_block(spec, test.X, train.X) @ coef
    problem = rc.Problem(maximize=FORMULATIONS[name](train),
                         model=rc.KernelModel("gaussian", l2=LAMBDA))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rc.ConvergenceWarning)
        result = problem.solve("dual_ca", tol=1e-4, max_epochs=max_epochs, seed=0)
    return result.decision_function(test)


def main(quick: bool = False, data_dir: Path | None = None
         ) -> dict[str, dict[str, dict[str, float]]]:
    n, seeds, max_epochs = (300, [0], 300) if quick else (1500, [0, 1, 2], 20000)
    tables: dict[str, dict[str, dict[str, float]]] = {}
    for dataset, positive in (BUNDLED if data_dir is None else UCI):
        runs: dict[str, list[dict[str, float]]] = {f: [] for f in FORMULATIONS}
        for seed in seeds:
            train, test = load(dataset, positive, n, seed, data_dir)
            used = train.n + test.n  # min(n, rows of the dataset)
            for name in FORMULATIONS:
                scores = fit_scores(name, train, test, max_epochs)
                runs[name].append(evaluate(scores, test.y))
        table = {name: {m: 100 * float(np.median([r[m] for r in rows])) for m in METRICS}
                 for name, rows in runs.items()}
        tables[dataset] = table
        print(f"\n{dataset}: one-vs-rest (positive class {positive}), n={used} "
              f"(half for testing), medians over {len(seeds)} seed(s), percent")
        print(f"{'formulation':20s}" + "".join(f"{m:>10s}" for m in METRICS))
        for name, row in table.items():
            best = {m: max(t[m] for t in table.values()) for m in METRICS}
            cells = "".join(f"{row[m]:>9.2f}{'*' if row[m] == best[m] else ' '}"
                            for m in METRICS)
            print(f"{name:20s}{cells}")
    print("\n* best value of the column")
    return tables


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="up to 300 rows, one seed (seconds)")
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="folder with the UCI optdigits.csv and letter_recognition.csv "
                             "(default: scikit-learn's digits and breast cancer)")
    args = parser.parse_args()
    main(quick=args.quick, data_dir=args.data)
