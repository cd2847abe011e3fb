"""The ``ratecons`` command line: demo, solve, verify, export.

``ratecons demo`` trains the Adult fairness example (minimize error subject to the 80% rule
between women and men) and prints its reports next to the unconstrained model's.
``ratecons solve SPEC.py`` runs a Python file that defines a variable ``problem`` and solves it;
``ratecons verify SPEC.py`` compares the specialized method with the CVXPY reference;
``ratecons export SPEC.py -o model.mps [--at solve|SOLUTION]`` writes an LP/QP-representable
problem to MPS; ``ratecons export SPEC.py --read SOLUTION`` maps a solver's answer back.
``python -m ratecons`` is the same command.

Exit codes, in every mode (``--json`` included):

* 0: solved (status ``optimal``; for ``verify``, the method agrees with the reference);
* 1: an error (bad arguments, a missing or malformed spec file, an exception in it);
* 2: infeasible, or not solved to tolerance (any other status; for ``verify``, disagreement);
* 130: interrupted by Ctrl-C (SIGINT), within a second even inside a native solver call.

With ``--json`` standard output holds one JSON document and nothing else (the spec file's own
prints and solver banners go to standard error); an error is ``{"error": "..."}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .interrupts import INTERRUPTED_EXIT_CODE

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_NOT_SOLVED", "EXIT_SOLVED", "main",
           "run_demo"]

EXIT_SOLVED, EXIT_ERROR, EXIT_NOT_SOLVED = 0, 1, 2
EXIT_INTERRUPTED = INTERRUPTED_EXIT_CODE


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; here 2 means 'not solved', so usage errors exit 1
    (with ``--json`` among the arguments, after the documented JSON error on stdout)."""

    #: whether the command line being parsed asks for JSON (set by :func:`main`)
    json_errors = False

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        if _Parser.json_errors:
            print(json.dumps({"error": message, "type": "UsageError"}))
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """In --json mode, keep everything but the JSON document off standard output."""
    if not active:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _load_problem(path: str) -> Any:
    from .errors import RateconsError, SpecError
    from .problem import Problem

    file = Path(path)
    if not file.exists():
        raise SpecError(f"no such spec file: {path}")
    if file.is_dir() or file.suffix != ".py":
        raise SpecError(f"{path} is not a Python file: a spec is a .py file that defines a "
                        "variable 'problem' (an rc.Problem built from your data, e.g. with "
                        "rc.datasets.load_csv), not the data itself.")
    try:
        namespace = runpy.run_path(str(file))
    except SystemExit as exc:  # the spec's own exit: an error of the spec (exit 1), not ours
        raise SpecError(f"{path} called sys.exit({exc.code!r}) before defining 'problem'."
                        ) from exc
    except RateconsError:
        raise  # ours: its message says what to fix
    except Exception as exc:  # the spec's own code failed: say where (-v: the traceback)
        where = next((f"line {frame.lineno}" for frame in reversed(
            traceback.extract_tb(exc.__traceback__)) if Path(frame.filename) == file), "")
        raise SpecError(f"{path} {where} raised {type(exc).__name__}: {exc} (-v shows the "
                        "traceback)".replace("  ", " ")) from exc
    problem = namespace.get("problem")
    if not isinstance(problem, Problem):
        raise SpecError(
            f"{path} must define a variable named 'problem' holding an rc.Problem; "
            f"found {type(problem).__name__ if problem is not None else 'nothing'}."
        )
    return problem


def _progress(event: dict[str, Any]) -> None:
    stage = event.get("stage", "")
    parts = [f"[{stage}]"] if stage else []
    for key in ("iteration", "objective", "max_violation", "gap", "lower", "upper"):
        if key in event and event[key] is not None:
            value = event[key]
            parts.append(f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}")
    print("  " + " ".join(parts), file=sys.stderr, flush=True)


def _demo_table(rows: list[tuple[str, str, str]]) -> list[str]:
    """The demo's closing table: one column per model, one line per quantity (< 80 columns)."""
    lines = [f"{'':34s}{'unconstrained':>15s}{'constrained':>15s}"]
    lines += [f"{name:34s}{free:>15s}{fair:>15s}" for name, free, fair in rows]
    return lines


def _check_figure_path(plot: str) -> None:
    """Refuse a figure path before anything is solved: no matplotlib, no folder, or a file
    type matplotlib cannot write (``demo --plot x.txt`` failed after both solves)."""
    from .errors import SpecError
    from .plot import require_matplotlib

    require_matplotlib()  # (says how to install it: before matplotlib is imported)
    from matplotlib.backend_bases import FigureCanvasBase

    if not Path(plot).resolve().parent.is_dir():
        raise SpecError(f"--plot {plot}: the folder {Path(plot).parent} does not exist.")
    kinds = FigureCanvasBase.get_supported_filetypes()
    if Path(plot).suffix.lower().lstrip(".") not in kinds:
        raise SpecError(f"--plot {plot}: matplotlib writes {', '.join(sorted(kinds))} files; "
                        "end the name with one of them (e.g. demo.png).")


def run_demo(method: str = "auto", kappa: float = 0.8, l2: float = 1e-3, seed: int = 0,
             quiet: bool = False, plot: str | None = None, trace: bool = False,
             verbose: bool | None = None) -> dict[str, Any]:
    """The Adult fairness demo; returns the numbers it prints (used by the tests).

    Prints fewer than 40 lines, none wider than 80 columns, ending with the unconstrained and
    the constrained model side by side. ``plot`` is a figure path (:func:`ratecons.plot.
    demo_figure`: per-group positive rates on the test split and the constrained solve's
    convergence), checked before anything is solved. ``trace`` prints every progress record to
    standard error; ``verbose`` is the progress bar switch of ``solve`` (None: on a terminal).
    """
    import textwrap

    import ratecons as rc

    from .settings import FEASIBILITY_TOL

    if plot is not None:
        _check_figure_path(plot)
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    out: dict[str, Any] = {}
    adult = rc.datasets.load_adult()
    train, test = adult.split(0.7, seed=seed)
    women, men = train.group("sex", "Female"), train.group("sex", "Male")
    model = rc.LinearModel(l2=l2)
    rule = rc.positive_rate(women) >= kappa * rc.positive_rate(men)
    fair = rc.Problem(minimize=rc.error_rate(train), subject_to=[rule], model=model)
    free = rc.Problem(minimize=rc.error_rate(train), model=model)
    plan = fair.plan(method)  # an unknown method is refused before anything is printed
    say(f"Adult census income: {train.n:,} training and {test.n:,} test examples, "
        f"{adult.d} features.")
    say(f"Goal: minimize the error rate subject to the {kappa:.0%} rule,")
    say(f"      s_p(women) >= {kappa:g} s_p(men)  (s_p: the positive rate).")
    say(f"\nplan: {plan.pattern}, method {plan.method}, because")
    for reason in plan.reasons[:3]:
        say(textwrap.fill(reason, 79, initial_indent="  - ", subsequent_indent="    "))
    relaxes = getattr(fair.pattern.methods().get(plan.method), "relaxes", "")
    if relaxes:  # (--method hinge --kappa 0.9: a ratio of 2.03 on train, error 0.198)
        say(textwrap.fill(f"note: method {plan.method!r} solves {relaxes}, not the ramp "
                          "problem: its model meets the rule with the bound's slack, at a "
                          "higher error", 79))
    say("\nsolving the constrained and the unconstrained model ...")
    ratio = rc.positive_rate_ratio(women, men)
    test_ratio = ratio.rebind(lambda s: s.on(test))
    test_rule = rule.rebind(lambda s: s.on(test))
    results = {}
    for label, problem in (("constrained", fair), ("unconstrained", free)):
        start = time.perf_counter()
        result = problem.solve(method=method, callback=_progress if trace else None,
                               verbose=False if quiet else verbose)
        elapsed = time.perf_counter() - start
        results[label] = result
        out[label] = {
            "status": result.status, "method": result.method, "seconds": elapsed,
            "train_error": rc.error_rate(train).value(result.scorer),
            "test_error": rc.error_rate(test).value(result.scorer),
            "train_ratio": ratio.value(result.scorer),
            "test_ratio": test_ratio.value(result.scorer),
            "test_ratio_randomized": test_ratio.value(result.scorer, "ramp"),
            # the rule for deterministic predictions, with the reports' tolerance
            "train_rule_met": rule.slack(rule.expr.value(result.scorer)) >= -FEASIBILITY_TOL,
            "test_rule_met": test_rule.slack(test_rule.expr.value(result.scorer))
            >= -FEASIBILITY_TOL,
            "train_report_satisfied": result.report().all_satisfied,
        }
        for part, data in (("train", train), ("test", test)):
            for who, level in (("women", "Female"), ("men", "Male")):
                out[label][f"{part}_rate_{who}"] = rc.positive_rate(
                    data.group("sex", level)).value(result.scorer)
    if plot is not None:
        from .plot import demo_figure

        demo_figure(results, test, "sex", kappa, path=plot)
        say(f"figure: {plot} (positive rates per group on test, convergence)")
    say("every rate on any split: result.report(test); the full plan: problem.plan()")
    say("\nside by side (deterministic predictions; ratio = s_p(women) / s_p(men)):")

    def row(name: str, cell: Callable[[dict[str, Any]], str]) -> tuple[str, str, str]:
        return name, cell(out["unconstrained"]), cell(out["constrained"])

    rows = [row("method, status", lambda e: f"{e['method']}, {e['status']}"),
            row("solve time (s)", lambda e: f"{e['seconds']:.2f}")]
    for part in ("train", "test"):
        rows += [row(f"{part}: {name}", lambda e, key=f"{part}_{key}": f"{e[key]:.4f}")
                 for name, key in (("error rate", "error"), ("positive rate, women", "rate_women"),
                                   ("positive rate, men", "rate_men"),
                                   ("ratio women / men", "ratio"))]
        rows.append(row(f"{part}: {kappa:.0%} rule met",
                        lambda e, key=f"{part}_rule_met": "yes" if e[key] else "NO"))
    for line in _demo_table(rows):
        say(line)
    return out


def _cmd_demo(args: argparse.Namespace) -> int:
    run_demo(method=args.method, kappa=args.kappa, l2=args.l2, seed=args.seed, plot=args.plot,
             trace=args.verbose, verbose=args.progress)
    return 0


def _cmd_solve(args: argparse.Namespace) -> int:
    from .settings import OPTIMAL

    with _stdout_to_stderr(args.json):
        problem = _load_problem(args.spec)
        result = problem.solve(method=args.method, seed=args.seed,
                               callback=_progress if args.verbose and not args.json else None,
                               verbose=args.progress)
    code = EXIT_SOLVED if result.status == OPTIMAL else EXIT_NOT_SOLVED
    if args.json:
        print(result.to_json())
        return code
    print(problem.plan(args.method))
    print(result)
    if result.has_model:
        print(result.report())
    return code


def _cmd_verify(args: argparse.Namespace) -> int:
    from .verify import verify

    with _stdout_to_stderr(args.json):
        problem = _load_problem(args.spec)
        report = verify(problem, method=args.method, rtol=args.rtol, seed=args.seed)
    if args.json:
        from .solution import _jsonable

        print(json.dumps(_jsonable({
            "method": report.method, "reference": report.reference, "agrees": report.agrees,
            "confirmed": report.confirmed, "status": report.result.status,
            "reference_status": report.reference_result.status,
            "rows": dict(report.rows)}), default=float))
    else:
        print(report)
    return EXIT_SOLVED if report.confirmed else EXIT_NOT_SOLVED


def _cmd_export(args: argparse.Namespace) -> int:
    from . import export_mps, read_solution
    from .matrix_chain import check_export_request
    from .settings import OPTIMAL

    _check_export_flags(args)
    problem = _load_problem(args.spec)
    if args.read is not None:
        result = read_solution(problem, args.read)
        print(f"objective {result.objective:.10g}, status {result.status}")
        message = result.certificate.details.get("message")
        if message:
            print(message)
        print(result.report())
        return EXIT_SOLVED if result.status == OPTIMAL else EXIT_NOT_SOLVED
    check_export_request(problem, args.at is not None, args.restricted,  # before any solve
                         ("--at", "--restricted"))
    at = None
    if args.at == "solve":
        if problem.analysis is not None:  # refuse a problem with no LP/QP form before solving
            from .reductions.to_matrix import check_representable

            check_representable(problem.analysis)
        at = problem.solve(method=args.method or "auto", seed=args.seed)
        print(f"solved by {at.method}: status {at.status}, objective {at.objective:.10g}")
        if not at.has_model:  # nothing to anchor the step at: not solved
            print(f"ratecons: no model to write the step at (status {at.status}); try another "
                  "--method, or export the hinge relaxation without --at", file=sys.stderr)
            return EXIT_NOT_SOLVED
    elif args.at is not None:
        at = read_solution(problem, args.at)
    info = export_mps(problem, args.output, at=at, restricted=args.restricted)
    print(f"wrote {info['path']}: {info['kind']}, {info['rows']} rows, {info['cols']} columns"
          f"; {info['sense']}")
    return 0


def _check_export_flags(args: argparse.Namespace) -> None:
    """Refuse flags that the chosen export mode would ignore, before the spec is loaded."""
    from .errors import SpecError

    if args.read is not None:
        given = [flag for flag, value in (("-o", args.output), ("--at", args.at),
                                          ("--method", args.method),
                                          ("--restricted", args.restricted)) if value]
        if given:
            raise SpecError(f"--read maps a solution back and writes nothing: drop "
                            f"{', '.join(given)} (export with -o first, then --read).")
        return
    if args.output is None:
        raise SpecError("ratecons export needs -o FILE.mps (or --read SOLUTION to map a "
                        "solution back).")
    if args.method is not None and args.at != "solve":
        raise SpecError("--method chooses the solve of --at solve; without it nothing is "
                        "solved: add --at solve, or drop --method.")


def _number(text: str, least: float, strict: bool) -> float:
    """A finite float >= ``least`` (> it when ``strict``), for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > least if strict else value >= least) or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a finite number {'>' if strict else '>='} {least:g}; got {text}")
    return value


def _positive(text: str) -> float:
    """An argparse type: a finite float > 0."""
    return _number(text, 0.0, True)


def _nonnegative(text: str) -> float:
    """An argparse type: a finite float >= 0."""
    return _number(text, 0.0, False)


VERBOSE_HELP = "log solver progress (one line per iteration, on standard error)"
SEED_HELP = ("seed of the method's random choices (sampling, coordinate order, random "
             "features); default 0")


def _verbose_after(parser: argparse.ArgumentParser) -> None:
    """-v after the command (``ratecons demo -v``) as well as before it (``ratecons -v demo``):
    the command's flag leaves the global one alone when it is not given."""
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help=VERBOSE_HELP)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="ratecons",
        description="Declare what a classifier must achieve; get a trained, verified model.",
        epilog="exit codes: 0 solved, 1 error, 2 infeasible or not solved to tolerance.",
    )
    parser.add_argument("--version", action="version", version=f"ratecons {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="Adult fairness demo (the 80%% rule)",
                          description="Train on Adult with s_p(women) >= kappa s_p(men); print "
                                      "reports on train and test and the unconstrained model.")
    demo.add_argument("--method", default="auto", help="solver method (default: auto)")
    demo.add_argument("--kappa", type=_positive, default=0.8,
                      help="fairness ratio target (> 0)")
    demo.add_argument("--l2", type=_nonnegative, default=1e-3,
                      help="l2 regularization lambda (>= 0)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the 70/30 split")
    demo.add_argument("--plot", metavar="FILE.png",
                      help='write the figure (per-group rates, convergence); needs the plot '
                           'extra: pip install "ratecons[plot]"')
    demo.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="progress bar (default: only on a terminal)")
    _verbose_after(demo)
    demo.set_defaults(func=_cmd_demo)

    for name, func, text in (("solve", _cmd_solve, "solve the problem defined in SPEC.py"),
                             ("verify", _cmd_verify, "compare a method with the CVXPY reference")):
        p = sub.add_parser(name, help=text, description=text + " (SPEC.py defines `problem`).")
        p.add_argument("spec", help="Python file defining a variable `problem`")
        p.add_argument("--method", default="auto", help="method (default: auto)")
        p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
        p.add_argument("--json", action="store_true",
                       help="print one JSON document on stdout (nothing else)")
        p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar (default: only on a terminal)")
        if name == "verify":
            p.add_argument("--rtol", type=_positive, default=1e-4,
                           help="tolerance (> 0) of the gaps |a - b| / max(1, |b|)")
        _verbose_after(p)
        p.set_defaults(func=func)

    export = sub.add_parser(
        "export", help="write an LP/QP-representable problem to MPS, or read a solution back",
        description="Write the problem in SPEC.py as a free MPS file (a QP with QUADOBJ when "
                    "it has an l2 term), or map an external solver's solution file back "
                    "(--read). See docs/export.md.")
    export.add_argument("spec", help="Python file defining a variable `problem`")
    export.add_argument("-o", "--output", help="output path (.mps)")
    export.add_argument("--at", metavar="solve|SOLUTION",
                        help="write the majorization step at an anchor: 'solve' solves the "
                             "problem first (--method), a path reads a solution file")
    export.add_argument("--method", default=None,
                        help="method of --at solve (default: auto; the step is written at "
                             "its model's scores, whichever method found it)")
    export.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    export.add_argument("--read", metavar="SOLUTION",
                        help="read a HiGHS/CBC/GLPK solution file of the export and print the "
                             "report")
    export.add_argument("--restricted", action="store_true",
                        help="minimax risk: write the final restricted LP of constraint "
                             "generation")
    _verbose_after(export)
    export.set_defaults(func=_cmd_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    _Parser.json_errors = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
    finally:
        _Parser.json_errors = False
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as other tools do
        with contextlib.suppress(OSError, ValueError):  # no second error at exit's flush
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ratecons: interrupted", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"error": "interrupted", "type": "KeyboardInterrupt"}))
        return EXIT_INTERRUPTED
    except Exception as exc:  # any failure, ours or the spec file's, is exit code 1
        if args.verbose:
            logging.exception("ratecons failed")
        print(f"ratecons: error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"error": str(exc), "type": type(exc).__name__}))
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
