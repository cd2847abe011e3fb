"""Benchmark: how long ``import ratecons`` takes, and what it loads.

    python -m benchmarks.import_time             # 7 fresh interpreters
    python -m benchmarks.import_time --runs 15

Each run starts a fresh interpreter with ``python -X importtime -c "import ratecons"`` and reads
the cumulative microseconds of ``ratecons`` (and of its heaviest dependencies) from the log;
the table gives the median and the worst run. The target of issue 17 is 0.5 s. The last lines
list the modules that ``import ratecons`` must not load (they are imported on first use) and
whether any was loaded, and the WORST run against the target.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

TARGET_SECONDS = 0.5
#: modules ``import ratecons`` must leave unloaded (see ratecons/__init__.py)
LAZY = ("cvxpy", "scipy.stats", "numba", "sklearn", "highspy", "matplotlib", "tqdm",
        "ratecons.datasets", "ratecons.solvers", "ratecons.patterns", "ratecons.sklearn",
        "ratecons.plot")
SHOWN = ("numpy", "scipy.sparse", "ratecons")


def one_run() -> dict[str, float]:
    """Cumulative import seconds of the modules in SHOWN, from one fresh interpreter."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ratecons"],
                          capture_output=True, text=True, check=True)
    out: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] in SHOWN and parts[2] not in out:
            out[parts[2]] = int(parts[1]) / 1e6
    return out


def loaded_lazy_modules() -> list[str]:
    """Which of LAZY a fresh ``import ratecons`` loads (should be none)."""
    code = ("import sys, ratecons; print(' '.join(m for m in sys.argv[1:] if m in sys.modules "
            "or any(k.startswith(m + '.') for k in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code, *LAZY], capture_output=True, text=True,
                          check=True)
    return proc.stdout.split()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    runs = [one_run() for _ in range(args.runs)]
    print(f"import ratecons, {args.runs} fresh interpreters (cumulative seconds)")
    print(f"{'module':14s}{'median':>10s}{'worst':>10s}")
    for name in SHOWN:
        times = [r.get(name, 0.0) for r in runs]
        print(f"{name:14s}{statistics.median(times):10.3f}{max(times):10.3f}")
    loaded = loaded_lazy_modules()
    print(f"lazy modules loaded by import ratecons: {', '.join(loaded) or 'none'}")
    worst = max(r["ratecons"] for r in runs)
    print(f"WORST import ratecons: {worst:.3f} s, target {TARGET_SECONDS} s, "
          f"ratio {worst / TARGET_SECONDS:.2f}")


if __name__ == "__main__":
    main()
