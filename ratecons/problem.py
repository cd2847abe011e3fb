"""Problem: an objective to minimize or maximize, constraints, and a model.

>>> problem = rc.Problem(minimize=rc.error_rate(train),
...                      subject_to=[rc.positive_rate(women) >= 0.8 * rc.positive_rate(men)],
...                      model=rc.LinearModel(l2=1e-4))
>>> print(problem.plan()); result = problem.solve()

A Problem only describes; ``solve`` hands its canonical form to the solver chosen by
:mod:`ratecons.dispatch`. Modelling errors are raised here, before anything is solved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import dispatch
from .errors import SpecError
from .models import KernelModel, LinearModel

if TYPE_CHECKING:  # pragma: no cover
    from .result import Result

__all__ = ["Problem"]


def _flatten(items: Any) -> list[Any]:
    if items is None:
        return []
    if isinstance(items, (list, tuple)):
        out: list[Any] = []
        for item in items:
            out.extend(_flatten(item))
        return out
    if isinstance(items, Iterable) and not isinstance(items, (str, bytes)) and not hasattr(
        items, "describe"
    ):
        return _flatten(list(items))
    return [items]


class Problem:
    """An optimization problem over a model.

    Parameters
    ----------
    minimize, maximize : objective expression
        Exactly one of them. A linear combination of rates, ``rc.minimax_risk(U)``,
        ``rc.robust_loss(U)``, ``rc.tpr_at_top(...)``, ...
    subject_to : list of constraints, optional
        Built with ``<=``, ``>=``, ``==`` on rate expressions (nested lists are flattened).
    model : LinearModel or KernelModel, optional
        Defaults to ``LinearModel()``.
    """

    def __init__(
        self,
        minimize: Any = None,
        maximize: Any = None,
        subject_to: Any = None,
        model: LinearModel | KernelModel | None = None,
    ) -> None:
        if (minimize is None) == (maximize is None):
            raise SpecError("give exactly one of minimize= or maximize= to rc.Problem.")
        self.objective = minimize if minimize is not None else maximize
        self.sense = "minimize" if minimize is not None else "maximize"
        self.constraints = _flatten(subject_to)
        model_given = model is not None
        if model is None:
            model = LinearModel()
        if not isinstance(model, (LinearModel, KernelModel)):
            raise SpecError(
                f"model must be rc.LinearModel(...) or rc.KernelModel(...); got "
                f"{type(model).__name__}."
            )
        self.model = model
        #: whether the user passed model= (minimax risk has no score model and refuses one)
        self.model_given = model_given
        #: the composition analysis (None for minimax risk, which is not a score model)
        self.analysis: Any = None
        #: why no specialized pattern accepted the problem (empty when one did)
        self.pattern_reasons: list[str] = []
        self.pattern = dispatch.pattern_for(self)
        self._canonical: Any = None

    def canonical(self) -> Any:
        """The canonical form this problem compiles to (cached; plain data with describe())."""
        if self._canonical is None:
            self._canonical = self.pattern.compile(self)
        return self._canonical

    def describe(self) -> str:
        """The compiled canonical form as a table, to check what was compiled."""
        return self.canonical().describe()

    def plan(self, method: str = "auto", sample_start: bool | int | None = None
             ) -> dispatch.Plan:
        """Which lowering and solver ``solve(method)`` will use, and why; ``sample_start``
        as the chains' option of that name (whether they start from a row sample)."""
        spec, reasons = dispatch.resolve(self, method, sample_start)
        return dispatch.Plan(
            pattern=self.pattern.name,
            method=spec.name,
            reasons=reasons,
            form_summary=self.canonical().summary(),
            available=dispatch.available_methods(self),
        )

    def solve(
        self,
        method: str = "auto",
        seed: int | None = None,
        callback: Callable[[dict[str, Any]], None] | None = None,
        verbose: bool | None = None,
        **options: Any,
    ) -> Result:
        """Solve with ``method`` (``"auto"`` chooses; see :meth:`plan`) and return a Result.

        ``seed`` makes randomized methods reproducible; ``callback(event)`` receives progress
        records (dicts); ``verbose`` draws a progress bar from them (None: only when standard
        error is a terminal). Method-specific options are keyword arguments; unknown ones raise.
        """
        return dispatch.run_method(self, method, seed=seed, callback=callback, verbose=verbose,
                                   **options)

    def __repr__(self) -> str:
        return (
            f"Problem({self.sense} {self.pattern.name} objective, "
            f"{len(self.constraints)} constraints, model={self.model})"
        )
