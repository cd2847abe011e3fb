"""Benchmark: composed problems by the generic chain, and patterns against the generic chain.

Part A times the four composed problems of ``examples/composition.py`` (fair ranking at the
top, robust fair classification, kernel churn, worst-case coverage) on the Adult training split
by the generic chain, the only path that takes them; its last column says whether the model
scores every training example alike (``details["trivial_optimum"]``: w = 0 is optimal). Part
B times the structures a pattern accepts (error rate + 80% rule; TPR@K alone; the chi-square
robust loss alone) by the pattern's ``auto`` method and by ``method="generic"`` side by side,
with the objective gap; its last line is the worst ratio of the generic chain's time over the
pattern's (how much a pattern buys).

Run: ``python -m benchmarks.composition [--rows N] [--only NAME,NAME]`` (N training rows;
default 5000, 0 for the whole split of 34,189 rows; ``--only`` picks problems by name).
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import ratecons as rc

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "composition.py"


def _example():
    spec = importlib.util.spec_from_file_location("composition_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pattern_problems(train: rc.Dataset) -> dict[str, rc.Problem]:
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    k = max(1, int(0.01 * train.negatives.n))
    return {
        "error rate + 80% rule": rc.Problem(
            minimize=rc.error_rate(train),
            subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
            model=rc.LinearModel(l2=1e-3)),
        "TPR@K": rc.Problem(maximize=rc.tpr_at_top(train, k=k), model=rc.LinearModel(l2=1e-2)),
        "robust loss (chi2)": rc.Problem(
            minimize=rc.robust_loss(rc.PhiDivergenceBall(train, phi="chi2", rho=0.1)),
            model=rc.LinearModel(l2=1e-3)),
    }


def _timed(problem: rc.Problem, method: str) -> tuple[rc.Result, float]:
    start = time.perf_counter()
    result = problem.solve(method)
    return result, time.perf_counter() - start


def run(rows: int | None, only: list[str] | None = None) -> dict[str, list[dict]]:
    example = _example()
    train, _ = example.adult_split(rows)
    train, _ = example.deployed_linear_baseline(train, _)
    n = train.n
    print(f"Adult training rows: {n}")
    print("\nA. composed problems (generic chain only)")
    print(f"{'problem':30s} {'n':>7s} {'status':>16s} {'time (s)':>9s} {'objective':>11s} "
          f"{'constraints met':>16s} {'trivial (w = 0)':>16s}")
    part_a = []
    for name, problem in example.problems(train).items():
        if only and name not in only:
            continue
        result, elapsed = _timed(problem, "auto")
        met = result.report().all_satisfied if result.has_model else False
        trivial = bool(result.certificate.details.get("trivial_optimum", False))
        part_a.append({"problem": name, "time": elapsed, "status": result.status, "met": met,
                       "trivial": trivial})
        print(f"{name:30s} {n:7d} {result.status:>16s} {elapsed:9.2f} "
              f"{result.objective:11.6g} {str(met):>16s} {str(trivial):>16s}")
    print("\nB. patterns against the generic chain (same problem, both paths)")
    print(f"{'problem':24s} {'pattern method':>16s} {'time (s)':>9s} {'generic (s)':>11s} "
          f"{'generic/pattern':>15s} {'objective gap':>13s}")
    part_b = []
    for name, problem in pattern_problems(train).items():
        if only and name not in only:
            continue
        ours, t_pattern = _timed(problem, "auto")
        generic, t_generic = _timed(problem, "generic")
        gap = abs(ours.objective - generic.objective) / max(1.0, abs(generic.objective))
        ratio = t_generic / t_pattern
        part_b.append({"problem": name, "ratio": ratio, "gap": gap})
        print(f"{name:24s} {ours.method:>16s} {t_pattern:9.2f} {t_generic:11.2f} "
              f"{ratio:15.2f} {gap:13.2e}")
    if part_b:
        worst = min(part_b, key=lambda r: r["ratio"])
        print(f"\nworst generic/pattern time ratio: {worst['ratio']:.2f} ({worst['problem']}); "
              f"largest objective gap {max(r['gap'] for r in part_b):.2e}")
    return {"composed": part_a, "patterns": part_b}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--only", default="", help="comma-separated problem names to run")
    args = parser.parse_args()
    run(args.rows or None, [s.strip() for s in args.only.split(",") if s.strip()] or None)
