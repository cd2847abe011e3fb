"""Choosing a solver: patterns tried in order, the generic chain last, with reasons.

A pattern (a :class:`Family`: rate constraints, minimax risk, ranking at the top, robust
learning) recognizes the structure its specialized solvers were built for
(:meth:`Family.accepts`), compiles a :class:`~ratecons.problem.Problem` to its canonical form,
lists the methods that can solve that form, picks one for ``method="auto"`` by short ordered
rules that say *why*, and knows how to compare two results for :func:`ratecons.verify`.
Patterns live in :mod:`ratecons.families` and are imported lazily; every composition no pattern
accepts goes to the generic chain (:mod:`ratecons.generic`), and ``method="generic"`` runs that
chain on any score-model problem.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import CurvatureError, NotLinearError, SpecError, UnknownOptionError
from .limits import finish, limits_scope, split_options
from .options import validate_options

if TYPE_CHECKING:  # pragma: no cover
    from .problem import Problem
    from .result import Result

__all__ = ["Family", "MethodSpec", "Plan", "family_for", "register_family", "run_method"]

#: modules that define (and register) a family; imported on first use
FAMILY_MODULES = (
    "ratecons.families.rates",
    "ratecons.families.mrc",
    "ratecons.families.dro",
    "ratecons.families.top",
)

_FAMILIES: list[Family] = []
#: the generic chain, available on every score-model problem next to its pattern's methods
GENERIC_METHOD = "generic"
#: the generic chain on the matrix form (HiGHS), on every LP/QP-representable score-model problem
HIGHS_METHOD = "highs"
_LOADED = False
#: options every method takes (:mod:`ratecons.limits`): a wall-clock budget in seconds and an
#: iteration cap (routed to the method's own iteration option, or to its backend)
COMMON_OPTIONS = ("time_limit", "max_iterations")


@dataclass(frozen=True)
class MethodSpec:
    """One way to solve a family's canonical form.

    ``run(problem, form, seed=..., callback=..., **options) -> Result``. The keyword-only
    parameters of ``run`` (other than seed and callback) are the method's options: an unknown
    option is an error that lists them.
    """

    name: str
    run: Callable[..., Result]
    description: str
    is_reference: bool = False

    @property
    def options(self) -> tuple[str, ...]:
        params = inspect.signature(self.run).parameters.values()
        return tuple(
            p.name
            for p in params
            if p.kind == p.KEYWORD_ONLY and p.name not in ("seed", "callback")
        )


@dataclass
class Plan:
    """What ``solve(method=...)`` will do, and why."""

    family: str
    method: str
    reasons: list[str]
    form_summary: str
    available: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"family: {self.family}", f"method: {self.method}", "because:"]
        lines += [f"  - {r}" for r in self.reasons]
        lines.append(f"canonical form: {self.form_summary}")
        lines.append(f"available methods: {', '.join(self.available)}")
        return "\n".join(lines)


class Family:
    """Base class of a problem family. Subclasses set the attributes and override the hooks."""

    #: short name used in plans and reports
    name: str = ""
    #: objective classes this family owns
    objective_types: tuple[type, ...] = ()
    #: the method every other method is verified against
    reference_method: str = "cvxpy"
    #: what ``verify(method="auto")`` checks when ``auto`` picks the reference itself
    specialized_method: str | None = None

    def validate(self, problem: Problem) -> None:
        """Raise a clear SpecError for malformed problems, before anything is solved."""

    def accepts(self, problem: Problem) -> str | None:
        """None when this pattern takes ``problem``; otherwise why not (for ``plan()``).

        A pattern takes the structures its solver was built for: its objective type, and the
        constraints and models its :meth:`validate` allows. Data errors (labels, shapes) are
        raised, not turned into reasons.
        """
        if not isinstance(problem.objective, self.objective_types):
            kinds = " or ".join(t.__name__ for t in self.objective_types)
            return f"pattern '{self.name}' needs a {kinds} objective"
        try:
            self.validate(problem)
        except SpecError as exc:
            if type(exc) not in (SpecError, NotLinearError):
                raise
            return f"pattern '{self.name}' does not accept this problem: {exc}"
        return None

    def compile(self, problem: Problem) -> Any:
        """Return the canonical form (plain data with ``describe()`` and ``summary()``)."""
        raise NotImplementedError

    def methods(self) -> dict[str, MethodSpec]:
        raise NotImplementedError

    def choose(self, problem: Problem, form: Any) -> tuple[str, list[str]]:
        """Ordered rules: return the method ``auto`` resolves to and the reasons."""
        raise NotImplementedError

    def compare(self, problem: Problem, result: Result, reference: Result) -> dict[str, Any]:
        """Numbers for :func:`ratecons.verify`: objective gap, violations, solution distance."""
        raise NotImplementedError

    def verify_method(self, problem: Problem, form: Any) -> str | None:
        """The specialized method ``verify`` checks when ``auto`` picks the reference."""
        return self.specialized_method

    def cross_check(self, problem: Problem, reference: Result) -> dict[str, Any]:
        """Options of an independent solve checked against ``reference``, for ``verify`` when
        the family has no specialized method (another solver for the same lowering)."""
        raise NotImplementedError(f"{self.name} has no cross-check")


def register_family(family: Family) -> Family:
    """Register a family instance (called at import time by each family module)."""
    if not any(type(f) is type(family) for f in _FAMILIES):
        _FAMILIES.append(family)
    return family


def _load() -> None:
    global _LOADED
    if not _LOADED:
        for module in FAMILY_MODULES:
            importlib.import_module(module)
        _LOADED = True


def family_for(problem: Problem) -> Family:
    """The first pattern that accepts ``problem``, or the generic chain.

    The composition rules are checked first (:func:`ratecons.expr.analysis.analyse`, which
    raises :class:`~ratecons.errors.CurvatureError`); then each registered pattern, in order,
    is asked whether it takes the whole problem (:meth:`Family.accepts`); when none does (a
    constraint, model or term outside every pattern's structure), the generic chain solves it
    and ``plan()`` lists why each pattern declined.
    """
    from .expr.analysis import analyse
    from .moments import MinimaxRisk

    objective = problem.objective
    if isinstance(objective, MinimaxRisk):
        if problem.constraints or problem.model_given:
            what = "subject_to constraints" if problem.constraints else "a model="
            raise CurvatureError(
                f"minimax_risk(...) cannot take {what}: a minimax risk classifier is not a "
                "score model (it is the LP (4) over the moment set's coefficients, with its "
                "own randomized classifier), so it composes with no other term. Put the "
                "expectation constraints in rc.MomentSet(...), drop model=, or use a rate "
                "objective over a rc.LinearModel to add constraints.")
    else:
        problem.analysis = analyse(objective, problem.sense, problem.constraints,
                                   problem.model)
    _load()
    reasons: list[str] = []
    for family in _FAMILIES:
        reason = family.accepts(problem)
        if reason is None:
            return family
        # the reason of a pattern built for this objective first, then the others
        if isinstance(objective, family.objective_types):
            reasons.insert(0, reason)
        else:
            reasons.append(reason)
    problem.pattern_reasons = reasons
    if problem.analysis is None:  # minimax risk: its own pattern or nothing
        raise SpecError(reasons[0])
    if getattr(problem.model, "kernel", "") == "precomputed":
        raise SpecError(
            f"kernel='precomputed' is supported by the ranking pattern only (one dataset, the "
            f"kernel matrix as X), and {reasons[0]}. The generic chain needs the kernel "
            "function: use 'gaussian', 'polynomial' or 'linear'.")
    from .generic import GenericChain

    return GenericChain()


def resolve(problem: Problem, method: str) -> tuple[MethodSpec, list[str]]:
    """Resolve ``method`` (``"auto"`` or a name) for a problem, with the reasons."""
    family = problem.family
    methods = family.methods()
    if method == GENERIC_METHOD and problem.analysis is not None:
        from .generic import generic_method

        return generic_method(), ["method 'generic' was requested: the generic chain, the "
                                  "reference every pattern is checked against"]
    if method == HIGHS_METHOD and problem.analysis is not None:
        from .matrix_chain import highs_method

        return highs_method(), ["method 'highs' was requested: the generic chain with every "
                                "step as a matrix LP/QP on HiGHS"]
    if method == "auto":
        name, reasons = family.choose(problem, problem.canonical())
        return methods[name], reasons
    if method not in methods:
        extra = [GENERIC_METHOD, HIGHS_METHOD] if problem.analysis is not None else []
        raise UnknownOptionError(
            f"unknown method {method!r} for a {family.name} problem; choose one of "
            f"{['auto', *methods, *extra]}."
        )
    return methods[method], [f"method {method!r} was requested"]


def run_method(
    problem: Problem,
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
    terminal; see :mod:`ratecons.progress`)."""
    from .progress import solve_progress

    spec, reasons = resolve(problem, method)
    accepted = (*spec.options, *(o for o in COMMON_OPTIONS if o not in spec.options))
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise UnknownOptionError(
            f"unknown option(s) {unknown} for method {spec.name!r}; it accepts "
            f"{list(accepted)}."
        )
    validate_options(spec.name, options)
    solve_limits, options = split_options(spec.name, spec.options, options)
    form = (problem.analysis if spec.name in (GENERIC_METHOD, HIGHS_METHOD)
            else problem.canonical())
    with limits_scope(solve_limits), solve_progress(spec.name, callback, verbose) as progress:
        result = spec.run(problem, form, seed=seed, callback=progress, **options)
    result.reasons = reasons
    return finish(result, solve_limits)
