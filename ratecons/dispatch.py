"""Choosing a solver: problem families, their methods, and ordered rules with reasons.

Every objective type belongs to one :class:`Family` (rate constraints, minimax risk, ranking at
the top, robust learning). A family compiles a :class:`~ratecons.problem.Problem` to its
canonical form, lists the methods that can solve that form, picks one for ``method="auto"`` by
short ordered rules that say *why*, and knows how to compare two results for
:func:`ratecons.verify`. Families live in :mod:`ratecons.families` and are imported lazily.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import CurvatureError, NotLinearError, SpecError, UnknownOptionError

if TYPE_CHECKING:  # pragma: no cover
    from .problem import Problem
    from .result import Result

__all__ = ["Family", "MethodSpec", "Plan", "family_for", "family_of", "register_family",
           "run_method"]

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
_LOADED = False


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


def family_of(objective: Any) -> Family:
    """The family owning an objective expression; a clear error for anything else."""
    _load()
    for family in _FAMILIES:
        if isinstance(objective, family.objective_types):
            return family
    known = sorted(t.__name__ for f in _FAMILIES for t in f.objective_types)
    raise SpecError(
        f"cannot minimize or maximize a {type(objective).__name__}; objectives are rate "
        f"expressions (rc.error_rate(...), ...) or one of: {', '.join(known)}."
    )


def _owner(objective: Any) -> Family | None:
    _load()
    for family in _FAMILIES:
        if isinstance(objective, family.objective_types):
            return family
    return None


def family_for(problem: Problem) -> Family:
    """The pattern (family) that accepts ``problem``, or the generic chain.

    The composition rules are checked first (:func:`ratecons.expr.analysis.analyse`, which
    raises :class:`~ratecons.errors.CurvatureError`); then the pattern owning the objective
    is asked whether it accepts the whole problem; when it does not (a constraint, model or
    term outside its structure), the generic chain solves it and ``plan()`` says why.
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
        family = family_of(objective)
        family.validate(problem)
        return family
    problem.analysis = analyse(objective, problem.sense, problem.constraints, problem.model)
    family = _owner(objective)
    if family is not None:
        try:
            family.validate(problem)
            return family
        except SpecError as exc:
            if type(exc) not in (SpecError, NotLinearError):
                raise
            reason = f"pattern '{family.name}' does not accept this problem: {exc}"
    else:
        reason = (f"no specialized pattern has a {type(objective).__name__} objective "
                  f"({getattr(objective, 'name', '')})")
    problem.pattern_reasons = [reason]
    if getattr(problem.model, "kernel", "") == "precomputed":
        raise SpecError(
            f"kernel='precomputed' is supported by the ranking pattern only (one dataset, the "
            f"kernel matrix as X), and {reason}. The generic chain needs the kernel function: "
            "use 'gaussian', 'polynomial' or 'linear'.")
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
    if method == "auto":
        name, reasons = family.choose(problem, problem.canonical())
        return methods[name], reasons
    if method not in methods:
        extra = [GENERIC_METHOD] if problem.analysis is not None else []
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

    ``verbose`` draws a progress bar from the method's callback events (None: only on a
    terminal; see :mod:`ratecons.progress`)."""
    from .progress import solve_progress

    spec, reasons = resolve(problem, method)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise UnknownOptionError(
            f"unknown option(s) {unknown} for method {spec.name!r}; it accepts "
            f"{list(spec.options) or 'no options'}."
        )
    form = problem.analysis if spec.name == GENERIC_METHOD else problem.canonical()
    with solve_progress(spec.name, callback, verbose) as progress:
        result = spec.run(problem, form, seed=seed, callback=progress, **options)
    result.reasons = reasons
    return result
