"""Benchmark: the cost of one structured interior-point iteration, two trees compared on the
same steps.

Every call of :func:`ratecons.solvers.structured.solve_structured` that a row of
:mod:`benchmarks.composition` makes on the whole Adult training split (hinge + 80% rule,
hinge + FPR parity, TPR@K + 80% rule, logistic + 80% rule, TPR@tau + 80% rule, TPR@tau NP +
recall + parity by ``auto``; part B's error rate + 80% rule by ``method="structured"``) is
recorded with its warm start. Each row's calls are
then solved by this tree's ratecons and by another tree's (``--old``: a directory holding a
``ratecons`` package, imported under another name), alternating in one process, ``--repeats``
times; the table gives each tree's interior-point iterations and Newton directions, the
medians of the CPU time of the process (wall times under load are a multiple of it) per
iteration and in all, the wall medians, and whether both trees took the same iterations to
bitwise the same answers. ``--calls`` reads calls recorded before (a pickle of the list
:func:`recorded_calls` returns; extra keys of a call are ignored) instead of recording them.

Run: ``python -m benchmarks.structured_iteration --old /path/to/other/tree [--repeats 3]
[--only NAME,NAME] [--calls calls.pkl]``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import pickle
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import ratecons.structured_fallback as fallback
import ratecons.structured_phase_one as phase_one
from benchmarks import composition as bench
from ratecons.solvers import structured

ROWS = ["hinge + 80% rule", "hinge + FPR parity", "TPR@K + 80% rule", "logistic + 80% rule",
        "TPR@tau + 80% rule", "TPR@tau NP + recall + parity"]
PART_B = "B: error rate + 80% rule"
#: the options of a recorded call passed on to ``solve_structured``
OPTIONS = ("tol", "max_iterations", "warm")


def recorded_calls(only: list[str] | None) -> list[tuple[str, list[dict]]]:
    """Every solve_structured call of the rows (its form, options and warm start)."""
    calls: list[tuple[str, list[dict]]] = []
    solve = structured.solve_structured

    def record(form: Any, **options: Any) -> Any:
        options.pop("deadline", None)
        calls[-1][1].append({"form": form, **options})
        return solve(form, **options)

    data = bench.adult(None)
    grid = bench.grid()
    problems = {name: grid[name][0](data) for name in ROWS}
    problems[PART_B] = bench.pattern_problems(data)["error rate + 80% rule"]
    fallback.solve_structured = phase_one.solve_structured = record
    try:
        for name, problem in problems.items():
            if only and name not in only:
                continue
            calls.append((name, []))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem.solve("structured" if name == PART_B else "auto", verbose=False)
    finally:
        fallback.solve_structured = phase_one.solve_structured = solve
    return calls


def other_tree(path: str) -> Any:
    """The ``structured`` module of the ratecons package under ``path``, imported as
    ``ratecons_old`` (a copy in a temporary directory; its imports inside are relative)."""
    target = Path(tempfile.mkdtemp()) / "ratecons_old"
    shutil.copytree(Path(path) / "ratecons", target,
                    ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(target.parent))
    return importlib.import_module("ratecons_old.solvers.structured")


class _Renamed(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module.split(".")[0] == "ratecons":
            module = "ratecons_old" + module[len("ratecons"):]
        return super().find_class(module, name)


def _timed(module: Any, calls: list[dict]) -> tuple[float, float, list[int], list, int]:
    """(CPU s, wall s, iterations per call, answers, Newton directions) of solving calls."""
    count = [0]
    direction = module._IPM.direction

    def counted(self: Any, *args: Any) -> Any:
        count[0] += 1
        return direction(self, *args)

    module._IPM.direction = counted
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        answers = [module.solve_structured(c["form"], **{k: v for k, v in c.items()
                                                          if k in OPTIONS}) for c in calls]
    finally:
        module._IPM.direction = direction
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    values = [np.concatenate([[a.objective, a.b], a.w, np.ravel(a.duals), np.ravel(a.extra)])
              for a in answers]
    return cpu, wall, [a.iterations for a in answers], values, count[0]


def run(old: str, repeats: int, only: list[str] | None, stored: str | None = None) -> None:
    if stored:  # calls recorded before (a pickle of the list recorded_calls returns)
        with open(stored, "rb") as handle:
            calls = [(name, row) for name, row in pickle.load(handle)
                     if not only or name in only]
    else:
        calls = recorded_calls(only)
    raw = pickle.dumps(calls)
    old_module = other_tree(old)
    old_calls = _Renamed(io.BytesIO(raw)).load()
    print(f"{'row':26s} {'its old':>7s} {'new':>4s} {'dirs old':>8s} {'new':>5s} {'same':>5s} "
          f"{'ms/it old':>9s} {'new':>6s} {'cpu old (s)':>11s} {'new':>6s} {'cpu old/new':>11s} "
          f"{'wall old (s)':>12s} {'new':>6s}")
    for (name, new), (_, old_row) in zip(calls, old_calls, strict=True):
        _timed(structured, new[:1]), _timed(old_module, old_row[:1])  # compile, warm caches
        runs: dict[str, list] = {"old": [], "new": []}
        for r in range(repeats):
            order = [("old", old_module, old_row), ("new", structured, new)]
            for key, module, row in order if r % 2 == 0 else order[::-1]:
                runs[key].append(_timed(module, row))
        a, b = runs["old"][0], runs["new"][0]
        same = a[2] == b[2] and all(np.array_equal(x, y) for x, y in zip(a[3], b[3],
                                                                          strict=True))
        its = {"old": sum(a[2]), "new": sum(b[2])}
        cpu = {k: statistics.median(t[0] for t in v) for k, v in runs.items()}
        wall = {k: statistics.median(t[1] for t in v) for k, v in runs.items()}
        print(f"{name:26s} {its['old']:7d} {its['new']:4d} {a[4]:8d} {b[4]:5d} {str(same):>5s} "
              f"{1e3 * cpu['old'] / its['old']:9.1f} {1e3 * cpu['new'] / its['new']:6.1f} "
              f"{cpu['old']:11.2f} {cpu['new']:6.2f} {cpu['old'] / cpu['new']:11.2f} "
              f"{wall['old']:12.2f} {wall['new']:6.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="a directory holding another ratecons")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated row names")
    parser.add_argument("--calls", default=None,
                        help="a pickle of calls recorded before (else recorded now)")
    args = parser.parse_args()
    run(args.old, args.repeats,
        [s.strip() for s in args.only.split(",") if s.strip()] or None, args.calls)
