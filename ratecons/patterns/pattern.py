"""A pattern: a structure a specialized solver was built for, recognized on a composed problem.

A pattern (rate constraints, minimax risk, ranking at the top, robust learning) says whether it
takes a :class:`~ratecons.problem.Problem` (:meth:`Pattern.accepts`, with the reason when not,
for ``plan()``), compiles it to its canonical form (plain data), lists the methods that solve
that form (:class:`MethodSpec`), picks one for ``method="auto"`` by short ordered rules that say
*why*, and knows how to compare two results for :func:`ratecons.verify`. The patterns are tried
in the order of :data:`ratecons.dispatch.PATTERN_MODULES`; each module names its instance
``PATTERN``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotLinearError, SpecError

if TYPE_CHECKING:  # pragma: no cover
    from ..result import Result

__all__ = ["MethodSpec", "NextRun", "Pattern"]


@dataclass(frozen=True)
class MethodSpec:
    """One way to solve a pattern's canonical form.

    ``run(problem, form, seed=..., callback=..., **options) -> Result``. The keyword-only
    parameters of ``run`` (other than seed and callback) are the method's options: an unknown
    option is an error that lists them. ``relaxes`` names the other problem a method solves
    when it solves a relaxation, not the problem (:func:`ratecons.verify` refuses it, saying
    so); empty for a method of the problem itself. ``at_loss_scale``: the method runs the chain
    in rounds at the loss's scale where they apply (:mod:`ratecons.chain_scale`), which
    ``plan()`` then says. ``refuses(problem)``: why the method does not apply to a problem of
    its pattern (None where it does): such a method is left out of the available methods, and
    asking for it is an error that says why.
    """

    name: str
    run: Callable[..., Result]
    description: str
    is_reference: bool = False
    relaxes: str = ""
    at_loss_scale: bool = False
    refuses: Callable[[Any], str | None] | None = None

    @property
    def options(self) -> tuple[str, ...]:
        params = inspect.signature(self.run).parameters.values()
        return tuple(
            p.name
            for p in params
            if p.kind == p.KEYWORD_ONLY and p.name not in ("seed", "callback")
        )


@dataclass(frozen=True)
class NextRun:
    """What ``auto`` runs next when its last run ended without its certificate
    (:meth:`Pattern.fallback`): the method, why, its options, and whether its result takes the
    place of the one kept so far whatever its status (``continues``: the first method going on
    from where its budget stopped it); otherwise only an ``optimal`` result does."""

    method: str
    why: str
    options: dict[str, Any]
    continues: bool = False


class Pattern:
    """A structure a specialized solver was built for. Subclasses set the attributes and
    override the hooks."""

    #: short name used in plans and reports
    name: str = ""
    #: the objective types this pattern is built for: its table, read by the objective's exact
    #: type as the lowering tables are (:func:`ratecons.reductions.table.entry_for`)
    objective_types: tuple[type, ...] = ()
    #: the method every other method is verified against
    reference_method: str = "cvxpy"
    #: what ``verify(method="auto")`` checks when ``auto`` picks the reference itself
    specialized_method: str | None = None
    #: whether :meth:`cross_check` gives an independent solve of the reference's own answer
    has_cross_check: bool = False

    def validate(self, problem: Any) -> None:
        """Raise a clear SpecError for malformed problems, before anything is solved."""

    def accepts(self, problem: Any) -> str | None:
        """None when this pattern takes ``problem``; otherwise why not (for ``plan()``).

        A pattern takes the structures its solver was built for: its objective type, and the
        constraints and models its :meth:`validate` allows. Data errors (labels, shapes) are
        raised, not turned into reasons.
        """
        if not self.built_for(problem.objective):
            kinds = " or ".join(t.__name__ for t in self.objective_types)
            return f"pattern '{self.name}' needs a {kinds} objective"
        try:
            self.validate(problem)
        except SpecError as exc:
            if type(exc) not in (SpecError, NotLinearError):
                raise
            return f"pattern '{self.name}' does not accept this problem: {exc}"
        return None

    def built_for(self, objective: Any) -> bool:
        """Whether ``objective``'s type is in this pattern's table (:attr:`objective_types`)."""
        return type(objective) in self.objective_types

    def compile(self, problem: Any) -> Any:
        """Return the canonical form (plain data with ``describe()`` and ``summary()``)."""
        raise NotImplementedError

    def methods(self) -> dict[str, MethodSpec]:
        raise NotImplementedError

    def choose(self, problem: Any, form: Any) -> tuple[str, list[str]]:
        """Ordered rules: return the method ``auto`` resolves to and the reasons."""
        raise NotImplementedError

    def ladder_options(self, problem: Any, method: str) -> dict[str, Any]:
        """Options of ``auto``'s first run when the user gave none: a budget after which
        :meth:`fallback` goes on with another method (the default: none)."""
        return {}

    def fallback(self, problem: Any, runs: list[Result]) -> NextRun | None:
        """After ``auto``'s last run (``runs``: every run so far, in order) ended without its
        certificate, by its own stopping rule or the budget of :meth:`ladder_options` (no
        budget or option of the user's), what to run next; None (the default) keeps the
        result."""
        return None

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        """Numbers for :func:`ratecons.verify`: objective gap, violations, solution distance."""
        raise NotImplementedError

    def is_reference(self, method: str) -> bool:
        """Whether ``method`` runs the reference itself (comparing it with the reference would
        prove nothing: ``verify`` checks it against :meth:`cross_check` instead)."""
        return method == self.reference_method

    def verify_method(self, problem: Any, form: Any) -> str | None:
        """The specialized method ``verify`` checks when ``auto`` picks the reference."""
        return self.specialized_method

    def cross_check(self, problem: Any, reference: Result) -> dict[str, Any]:
        """Options of an independent solve checked against ``reference``, for ``verify`` when
        the pattern has no specialized method (another solver for the same lowering)."""
        raise NotImplementedError(f"{self.name} has no cross-check")
