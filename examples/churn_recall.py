"""Churn with a recall floor: the setting of section 4.2 of Goh et al. (2016) on generated data.

Three datasets from one seed: D1 (labelled, actively sampled near the boundary), D2 (labelled,
i.i.d.) and D3 (unlabelled, i.i.d.); a deployed model whose predictions are attached to D2 and
D3. We minimize the errors on D1 plus the false positives on D2, subject to

    recall(D2) >= recall of the deployed model on D2     (Neyman-Pearson on D2)
    churn(D3)  <= target                                 (agreement with the deployed model)

for a range of churn targets, and compare with the paper's baseline: an unconstrained model on
D1 u D2, thresholded (bias shifted) to meet the recall floor, which makes no effort on churn.
Each dataset is split 80/20 into train and test.

Run: ``python examples/churn_recall.py`` (``--quick`` for a small version). The figure goes to
``examples/out/churn_recall.png`` (``churn_recall_quick.png`` in the small version; ``--out DIR``
for another folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import ratecons as rc
from ratecons.testing import churn_recall_datasets


def thresholded_baseline(d1, d2, recall_floor: float, l2: float, method: str):
    """Unconstrained model on D1 u D2, bias shifted so recall(D2) meets the floor."""
    both = rc.Dataset(np.vstack([d1.X, d2.X]), np.r_[d1.y, d2.y])
    result = rc.Problem(minimize=rc.error_rate(both), model=rc.LinearModel(l2=l2)).solve(
        method=method)
    scores = result.decision_function(d2.positives.X)
    # smallest shift making the fraction of positives with score > shift at least the floor
    shift = np.quantile(scores, 1.0 - recall_floor) - 1e-9
    return rc.result.LinearScorer(result.w, result.b + shift)


def run(sizes=(3000, 1500, 2000), targets=(0.02, 0.05, 0.1, 0.15), l2: float = 1e-3,
        method: str = "auto", seed: int = 0, verbose: bool = True,
        figure: Path | None = None) -> list[dict]:
    """The table's rows (the baseline, then one per target); ``figure``: where to save the
    plot (None: no plot)."""
    d1, d2, d3, _ = churn_recall_datasets(sizes, seed=seed)
    (d1_tr, d1_te), (d2_tr, d2_te), (d3_tr, d3_te) = (d.split(0.8, seed) for d in (d1, d2, d3))
    deployed_recall = float(np.mean(d2_tr.baseline_prediction[d2_tr.y == 1]))
    objective = (rc.errors(d1_tr) + rc.false_positives(d2_tr)) / (d1_tr.n + d2_tr.n)
    test_map = {d1_tr: d1_te, d2_tr: d2_te, d3_tr: d3_te}

    def measures(scorer) -> dict:
        out = {}
        for split, (a, b, c) in (("train", (d1_tr, d2_tr, d3_tr)), ("test", (d1_te, d2_te, d3_te))):
            both_err = (rc.errors(a).value(scorer) + rc.errors(b).value(scorer)) / (a.n + b.n)
            out[f"{split}_error"] = both_err
            out[f"{split}_churn"] = rc.churn_rate(c).value(scorer)
            out[f"{split}_churn_randomized"] = rc.churn_rate(c).value(scorer, "ramp")
            out[f"{split}_recall"] = rc.recall(b).value(scorer)
        return out

    rows = []
    base = thresholded_baseline(d1_tr, d2_tr, deployed_recall, l2, method)
    rows.append({"model": "thresholded", "target": float("nan"), "status": "-",
                 **measures(base)})
    for target in targets:
        problem = rc.Problem(
            minimize=objective,
            subject_to=[rc.recall(d2_tr) >= deployed_recall, rc.churn_rate(d3_tr) <= target],
            model=rc.LinearModel(l2=l2),
        )
        result = problem.solve(method=method)
        row = {"model": "constrained", "target": target, "status": result.status,
               **measures(result.scorer)}
        rows.append(row)
        if verbose and target == targets[-1]:
            print(result.report(test_map))
            print()
    if verbose:
        print(f"deployed model's recall on D2 (the floor): {deployed_recall:.3f}")
        print(f"{'model':12s}{'target':>8s}{'status':>16s}{'train churn':>12s}"
              f"{'test churn':>11s}{'(random.)':>10s}{'train err':>10s}{'test err':>9s}"
              f"{'test recall':>12s}")
        for r in rows:
            print(f"{r['model']:12s}{r['target']:8.3f}{r['status']:>16s}{r['train_churn']:12.4f}"
                  f"{r['test_churn']:11.4f}{r['test_churn_randomized']:10.4f}"
                  f"{r['train_error']:10.4f}{r['test_error']:9.4f}{r['test_recall']:12.3f}")
    if figure is not None:
        _plot(rows, figure)
    return rows


def _plot(rows: list[dict], figure: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(install the 'plot' extra for figures)")
        return
    cons = [r for r in rows if r["model"] == "constrained"]
    base = rows[0]
    t = [r["target"] for r in cons]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, label in ((axes[0], "churn", "churn"), (axes[1], "error", "error")):
        for split, style in (("train", "o-"), ("test", "s--")):
            ax.plot(t, [r[f"{split}_{key}"] for r in cons], style, label=f"constrained {split}")
            ax.axhline(base[f"{split}_{key}"], color="green", ls=":" if split == "test" else "-",
                       label=f"thresholded {split}")
        ax.set_xlabel("churn target")
        ax.set_ylabel(label)
    axes[0].plot(t, t, color="gray", lw=0.5)
    axes[0].legend(fontsize=7)
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(figure, dpi=120)
    print(f"figure: {figure}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small datasets, two targets")
    parser.add_argument("--method", default="auto")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out",
                        metavar="DIR", help="folder of the figure (default: examples/out)")
    args = parser.parse_args()
    figure = args.out / f"churn_recall{'_quick' if args.quick else ''}.png"
    if args.quick:
        run(sizes=(600, 400, 500), targets=(0.05, 0.15), method=args.method, figure=figure)
    else:
        run(method=args.method, figure=figure)
