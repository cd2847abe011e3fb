"""Choosing a solver: patterns tried in order, the generic chain last, with reasons.

Each pattern (:mod:`ratecons.patterns`: rate constraints, minimax risk, robust learning,
ranking at the top) is asked in order whether it takes the problem
(:meth:`~ratecons.patterns.pattern.Pattern.accepts`); the first that does compiles it and picks
a method for ``method="auto"``. Every composition no pattern accepts goes to the generic chain
(:mod:`ratecons.generic`), and ``method="generic"`` runs that chain on any score-model problem.
Patterns are imported on first use.
"""

from __future__ import annotations

import importlib
import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import settings
from .blas_threads import solve_blas_threads
from .dask_methods import (
    DASK_METHODS,
    check_dask_method,
    check_dask_problem,
    dask_method,
    dask_partitions,
)
from .degenerate import check_degenerate
from .display import PlanDisplay
from .errors import SpecError, UnknownOptionError, check_flag, parameter_error
from .kernels import warn_if_flat
from .limits import active, finish, limits_scope, renamed_options, split_options
from .options import validate_options

if TYPE_CHECKING:  # pragma: no cover
    from .patterns.pattern import MethodSpec, Pattern
    from .result import Result

__all__ = ["Plan", "available_methods", "pattern_for", "resolve", "run_method"]

#: the pattern modules, in the order they are tried; each defines ``PATTERN``
PATTERN_MODULES = (
    "ratecons.patterns.rate_constraints",
    "ratecons.patterns.mrc",
    "ratecons.patterns.dro",
    "ratecons.patterns.ranking",
)
#: the generic chain, available on every score-model problem next to its pattern's methods
GENERIC_METHOD = settings.GENERIC_METHOD
#: the generic chain on the matrix form (HiGHS), on every LP/QP-representable score-model problem
HIGHS_METHOD = settings.HIGHS_METHOD
#: the generic chain with the structured step solver, on every composition it has lowerings for
STRUCTURED_METHOD = settings.STRUCTURED_METHOD
#: the chains every score-model problem has, in the order ``available_methods`` lists them
CHAIN_METHODS = (GENERIC_METHOD, HIGHS_METHOD, STRUCTURED_METHOD)
#: options every method takes (:mod:`ratecons.limits`): a wall-clock budget in seconds and an
#: iteration cap (routed to the method's own iteration option, or to its backend)
COMMON_OPTIONS = ("time_limit", "max_iterations")


@dataclass(repr=False)
class Plan(PlanDisplay):
    """What ``solve(method=...)`` will do, and why."""

    pattern: str
    method: str
    reasons: list[str]
    form_summary: str
    available: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"pattern: {self.pattern}", f"method: {self.method}", "because:"]
        lines += [f"  - {r}" for r in self.reasons]
        lines.append(f"canonical form: {self.form_summary}")
        lines.append(f"available methods: {', '.join(self.available)}")
        return "\n".join(lines)


def patterns() -> list[Pattern]:
    """The patterns, in the order they are tried (their modules imported on first use)."""
    return [importlib.import_module(name).PATTERN for name in PATTERN_MODULES]


def pattern_for(problem: Any) -> Pattern:
    """The first pattern that accepts ``problem``, or the generic chain.

    The composition rules are checked first (:func:`ratecons.expr.analysis.analyse`, which
    raises :class:`~ratecons.errors.CurvatureError`); then each registered pattern, in order,
    is asked whether it takes the whole problem (:meth:`Pattern.accepts`); when none does (a
    constraint, model or term outside every pattern's structure), the generic chain solves it
    and ``plan()`` lists why each pattern declined.
    """
    from .expr.analysis import analyse

    objective = problem.objective
    if not getattr(objective, "scores_model", True):  # a model of its own (minimax risk)
        if problem.constraints or problem.model_given:
            objective.refuse_composition("subject_to constraints" if problem.constraints
                                         else "a model=")
    else:
        problem.analysis = analyse(objective, problem.sense, problem.constraints,
                                   problem.model)
        warn_if_flat(problem.model, problem.analysis.datasets)
    reasons: list[str] = []
    for pattern in patterns():
        reason = pattern.accepts(problem)
        if reason is None:
            return pattern
        # the reason of a pattern built for this objective first, then the others
        if pattern.built_for(objective):
            reasons.insert(0, reason)
        else:
            reasons.append(reason)
    problem.pattern_reasons = reasons
    if problem.analysis is None:  # a model of its own: its pattern or nothing
        raise SpecError(reasons[0])
    if getattr(problem.model, "kernel", "") == "precomputed":
        raise SpecError(
            f"kernel='precomputed' is supported by the ranking pattern only (one dataset, the "
            f"kernel matrix as X), and {reasons[0]}. The generic chain needs the kernel "
            "function: use 'gaussian', 'polynomial' or 'linear'.")
    from .patterns.composed import GenericChain

    return GenericChain()


def resolve(problem: Any, method: str, sample_start: Any = None, kernel_points: Any = None,
            seed: Any = None) -> tuple[MethodSpec, list[str]]:
    """Resolve ``method`` (``"auto"`` or a name) for a problem, with the reasons; on data
    that live in Dask, only the methods of :mod:`ratecons.dask_methods`. A chain says how it
    makes a kernel model linear (its ``kernel_points`` and ``seed``: default 500 and 0), that
    it starts from a row sample (``sample_start``, :mod:`ratecons.sample_start`) and that it
    solves at the loss's scale (:mod:`ratecons.chain_scale`)."""
    spec, reasons = _resolve_where(problem, method)
    notes = []
    if problem.analysis is not None and "kernel_points" in spec.options:
        from .reductions.kernelize import MAX_EXACT_KERNEL_POINTS, kernel_map_note

        points = kernel_points if isinstance(kernel_points, int) and kernel_points > 0 else (
            MAX_EXACT_KERNEL_POINTS)  # (a wrong one is refused with the options)
        notes.append(kernel_map_note(problem.analysis.model, problem.analysis.n_examples,
                                     points, 0 if seed is None else seed))
    if "sample_start" in spec.options:  # the structured and CVXPY chains
        from .sample_start import sample_start_note

        notes.append(sample_start_note(problem.analysis, sample_start, spec.name))
    if spec.at_loss_scale:
        from .chain_scale import scale_note

        notes.append(scale_note(problem.analysis))
    return spec, [*reasons, *(note for note in notes if note is not None)]


def _resolve_where(problem: Any, method: str) -> tuple[MethodSpec, list[str]]:
    """:func:`resolve` before the sample start's note."""
    partitions = dask_partitions(problem)
    if partitions is None:
        return _resolve(problem, method)
    check_dask_problem(problem)
    spec, reasons = _resolve(problem, dask_method(problem, method))
    check_dask_method(spec.name)
    if method == "auto":
        reasons = [f"the data live in Dask: {spec.name!r} runs on partitions", *reasons[1:]]
        if spec.name in problem.pattern.methods():  # the pattern's own: as auto picks in
            in_memory, why = _resolve(problem, "auto")  # memory? then for the same reasons
            if in_memory.name == spec.name:
                reasons = [f"{reasons[0]}, the method auto picks in memory", *why]
    return spec, [*reasons, f"distributed over {partitions} partitions: the features live in "
                  "Dask, every pass over them is a reduction on the active Client"]


def available_methods(problem: Any) -> list[str]:
    """The methods ``solve`` takes for ``problem``: its pattern's, then the chains that every
    score-model problem has (generic, highs, structured); on Dask data only those that run
    there (:data:`~ratecons.dask_methods.DASK_METHODS`)."""
    names = [name for name, spec in problem.pattern.methods().items()
             if spec.refuses is None or spec.refuses(problem) is None]
    if problem.analysis is not None:
        names += [m for m in CHAIN_METHODS if m not in names]
    if dask_partitions(problem) is not None:  # the others refuse Dask data
        names = [m for m in names if m in DASK_METHODS]
    return names


def _resolve(problem: Any, method: str) -> tuple[MethodSpec, list[str]]:
    pattern = problem.pattern
    methods = pattern.methods()
    if method == GENERIC_METHOD and problem.analysis is not None:
        from .generic import generic_method

        return generic_method(), ["method 'generic' was requested: the generic chain, the "
                                  "reference every pattern is checked against"]
    if method == HIGHS_METHOD and problem.analysis is not None:
        from .matrix_chain import highs_method, qp_stall_note

        note = qp_stall_note(problem.analysis)
        return highs_method(), ["method 'highs' was requested: the generic chain with every "
                                "step as a matrix LP/QP on HiGHS", *([note] if note else [])]
    if method == STRUCTURED_METHOD and problem.analysis is not None:
        from .structured_chain import structured_method

        spec = methods.get(method) or structured_method()  # a pattern may wrap its Result
        return spec, ["method 'structured' was requested: the generic chain with every step "
                      "solved by the structured interior point"]
    if method == "auto":
        name, reasons = pattern.choose(problem, problem.canonical())
        return methods[name], reasons
    if method not in methods:
        raise UnknownOptionError(
            f"unknown method {method!r} for a {pattern.name} problem; choose one of "
            f"{['auto', *available_methods(problem)]}."
        )
    refuses = methods[method].refuses
    why = None if refuses is None else refuses(problem)
    if why is not None:
        raise SpecError(f"method {method!r} does not apply to this {pattern.name} problem: "
                        f"{why}. Choose one of {['auto', *available_methods(problem)]}.")
    return methods[method], [f"method {method!r} was requested"]


def run_method(
    problem: Any,
    method: str = "auto",
    seed: int | None = None,
    callback: Callable[[dict[str, Any]], None] | None = None,
    verbose: bool | None = None,
    **options: Any,
) -> Result:
    """Solve ``problem`` with ``method``; unknown options raise and list the valid ones.

    Every method takes ``time_limit`` (seconds) and ``max_iterations``
    (:data:`COMMON_OPTIONS`, :mod:`ratecons.limits`); a method stopped by either returns its
    best point so far with status ``time_limit`` or ``iteration_limit``.

    ``verbose`` draws a progress bar from the method's callback events (None: only on a
    terminal; see :mod:`ratecons.progress`). The solve runs on
    :data:`ratecons.settings.SOLVE_BLAS_THREADS` BLAS threads (:mod:`ratecons.blas_threads`)."""
    from .progress import solve_progress

    start = time.perf_counter()
    spec, reasons = resolve(problem, method, options.get("sample_start"),
                            options.get("kernel_points"), seed)
    accepted = (*spec.options, *(o for o in COMMON_OPTIONS if o not in spec.options))
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise UnknownOptionError(
            f"unknown option(s) {unknown} for method {spec.name!r}; it accepts "
            f"{list(accepted)}.{renamed_options(unknown)}"
        )
    validate_options(spec.name, options)
    _check_solve_arguments(seed, callback, verbose)
    solve_limits, options = split_options(spec.name, spec.options, options)
    cap = options.get("max_iterations")  # the method's own cap, for the progress total
    with limits_scope(solve_limits), solve_blas_threads(), solve_progress(
            spec.name, callback, verbose, cap) as progress:
        # no option of the user's but a time budget, which every run of the ladder shares (a
        # time_limit of 100 s that never bound turned the ladder off: 211 L-BFGS iterations
        # where auto runs 40 and then the structured chain, and reasons that said the latter)
        ladder = method == "auto" and not set(options) - {"time_limit"}
        first = problem.pattern.ladder_options(problem, spec.name) if ladder else {}
        # on the ladder each run's warnings wait for the outcome of the next one
        proved = unreachable_result(problem, spec.name)  # rates no predictions meet
        with (warnings.catch_warnings(record=True) if ladder else nullcontext([])) as held:
            result = proved or spec.run(problem, _form_for(problem, spec.name), seed=seed,
                                        callback=progress, **options, **first)
        runs = [result]
        while (ladder and not proved and result.status != settings.OPTIMAL
               and not active().expired()
               and (nxt := problem.pattern.fallback(problem, runs)) is not None):
            with warnings.catch_warnings(record=True) as caught:
                run = problem.pattern.methods()[nxt.method].run(
                    problem, _form_for(problem, nxt.method), seed=seed, callback=progress,
                    **nxt.options)
            runs.append(run)
            if run.status == settings.OPTIMAL or nxt.continues:  # the kept run's warnings
                result, reasons, held = run, [*reasons, nxt.why], caught
        for caught in held:
            warnings.warn_explicit(caught.message, caught.category, caught.filename,
                                   caught.lineno)
        result.reasons = reasons + ([
            "no predictions meet the rate rows (an LP over free predictions, "
            "details['unreachable']): infeasible before the method ran"] if proved else [])
        if result is not runs[0]:  # the ladder's runs before the kept one, each record named
            result.history = [dict(record, method=run.method) for run in
                              runs[:runs.index(result)] for record in run.history] + [
                dict(record, method=result.method) for record in result.history]
        check_degenerate(problem, result)
    result = finish(result, solve_limits)
    result.solve_time = time.perf_counter() - start
    return result


def unreachable_result(problem: Any, method: str) -> Result | None:
    """The ``infeasible`` Result of a problem whose linear rate rows no predictions meet
    (:func:`ratecons.prediction_lp.unreachable_rows`: every method, the kernel chain's too,
    ends here before it solves anything), or None."""
    from .prediction_lp import unreachable_rows  # the solver modules load on first solve
    from .result import Result
    from .solvers.tracker import no_point

    proof = None if problem.analysis is None else unreachable_rows(problem.analysis)
    if proof is None:
        return None
    return Result(problem, method, no_point(
        settings.INFEASIBLE, solver="prediction LP",
        details={"unreachable": asdict(proof), "message": proof.message()}))


def _check_solve_arguments(seed: Any, callback: Any, verbose: Any) -> None:
    """``seed``, ``callback`` and ``verbose`` of ``solve``, checked before anything runs (a
    callback that is not callable failed at the first progress record, a string seed was
    taken silently by methods that draw nothing)."""
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise parameter_error("seed", "solve", "an int >= 0 or None", seed)
    if callback is not None and not callable(callback):
        raise parameter_error("callback", "solve", "a callable taking one dict, or None",
                              callback)
    check_flag(verbose, "verbose", "solve", none=True)


def _form_for(problem: Any, method: str) -> Any:
    """What ``method`` solves: the analysis for the chains, else the pattern's canonical form."""
    return (problem.analysis if method in (GENERIC_METHOD, HIGHS_METHOD, STRUCTURED_METHOD)
            else problem.canonical())
