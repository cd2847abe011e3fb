"""Side-by-side comparison of a specialized solver with the CVXPY reference.

``rc.verify(problem)`` solves the same instance twice, with the method ``auto`` picks (or the one
named) and with the pattern's reference method, and reports objective, maximum constraint
violation and solution distance next to each other. Families supply the numbers through
:meth:`ratecons.patterns.pattern.Pattern.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dispatch
from .dask_methods import dask_partitions
from .display import VerifyDisplay
from .errors import SpecError, parameter_error
from .problem import Problem
from .result import Result
from .settings import INFEASIBLE, INFEASIBLE_STATUSES, OPTIMAL

__all__ = ["VerifyReport", "verify"]


@dataclass(repr=False)
class VerifyReport(VerifyDisplay):
    """Outcome of :func:`verify`.

    Attributes
    ----------
    method, reference : str
    result, reference_result : Result
    rows : dict
        Named comparison numbers: ``objective`` (pair), ``objective_rel_gap``,
        ``max_violation`` (pair), ``solution_distance`` and pattern-specific rows.
    rtol : float
        Relative objective tolerance for :attr:`agrees`.
    verdict : tuple of str
        The relative gaps among ``rows`` that :attr:`agrees` rests on: ``objective_rel_gap``,
        or for majorization-minimization the same convex steps at the same anchors
        (:meth:`Pattern.verdict_rows <ratecons.patterns.rate_constraints.RateConstraintPattern.
        verdict_rows>`).
    """

    method: str
    reference: str
    result: Result
    reference_result: Result
    rows: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-4
    verdict: tuple[str, ...] = ("objective_rel_gap",)

    @property
    def agrees(self) -> bool:
        """Every gap of :attr:`verdict` within ``rtol`` (relative to max(1, |reference|)) and
        both results feasible; or neither found a feasible point (``infeasible``, or
        ``infeasible_inaccurate``: :attr:`confirmed` asks for the proof)."""
        if {self.result.status, self.reference_result.status} <= set(INFEASIBLE_STATUSES):
            return True
        gaps = [self.rows.get(name) for name in self.verdict]
        viol = self.rows.get("max_violation", (0.0, 0.0))
        return (all(g is not None and g <= self.rtol for g in gaps)
                and max(v or 0.0 for v in viol) <= self.rtol)

    @property
    def confirmed(self) -> bool:
        """:attr:`agrees`, and both results certified (``optimal``, or both ``infeasible``):
        an answer that stopped short of its certificate (a limit, reduced accuracy) can agree
        in its numbers but confirms nothing (``ratecons verify`` exits 0 only then)."""
        statuses = {self.result.status, self.reference_result.status}
        return self.agrees and (statuses == {OPTIMAL} or statuses == {INFEASIBLE})

    def __str__(self) -> str:
        w = max(12, len(self.method), len(self.reference))
        lines = [f"{'':28s}{self.method:>{w}s}  {self.reference:>{w}s}"]
        statuses = (self.result.status, self.reference_result.status)
        lines.append(f"{'status':28s}{statuses[0]:>{w}s}  {statuses[1]:>{w}s}")
        lines.append(
            f"{'wall time (s)':28s}{self.result.solve_time:>{w}.3f}  "
            f"{self.reference_result.solve_time:>{w}.3f}"
        )
        for key, value in self.rows.items():
            if isinstance(value, tuple):
                a, b = ("-" if v is None else v if isinstance(v, str) else f"{v:.6g}"
                        for v in value)
                lines.append(f"{key:28s}{a:>{w}s}  {b:>{w}s}")
            else:
                lines.append(f"{key:28s}{('-' if value is None else f'{value:.3g}'):>{w}s}")
        if self.agrees and not self.confirmed:
            lines.append(f"{'note':28s}the numbers agree, but not both results are certified "
                         "(optimal): this confirms nothing")
        label = f"agrees (rtol={self.rtol:g})"
        if self.verdict != ("objective_rel_gap",):
            lines.append(f"{'verdict on':28s}" + ", ".join(self.verdict))
        lines.append(f"{label:28s}{str(self.agrees):>{w}s}")
        return "\n".join(lines)


def verify(
    problem: Problem,
    method: str = "auto",
    rtol: float = 1e-4,
    seed: int | None = 0,
    options: dict[str, Any] | None = None,
    reference_options: dict[str, Any] | None = None,
) -> VerifyReport:
    """Solve ``problem`` with ``method`` and with the reference; compare side by side.

    Parameters
    ----------
    problem : Problem
    method : str
        The method to check. ``"auto"`` is checked as ``solve`` runs it (its plan's method, and
        the fallback that follows it when that ends short of ``optimal``: the method whose
        result ``solve`` returns), except that when it picks the reference itself (small
        problems) the method the pattern names instead is checked (its specialized method,
        or the fallback ``solve`` takes after the reference).
    rtol : float
        Tolerance of the gaps :attr:`VerifyReport.agrees` rests on: |a - b| / max(1, |b|), b
        the reference's value (an absolute gap for objectives below 1 in magnitude).
    seed : int, optional
    options, reference_options : dict, optional
        Method options for each side.
    """
    if not isinstance(problem, Problem):
        raise SpecError(f"verify needs an rc.Problem; got {type(problem).__name__}.")
    if not (isinstance(rtol, (int, float)) and np.isfinite(rtol) and rtol > 0):
        raise parameter_error("rtol", "verify", "a finite float > 0", rtol)
    if dask_partitions(problem) is not None:
        raise SpecError(
            "verify compares the method with the CVXPY reference, which needs the examples in "
            "one process, and this problem's data live in Dask: verify the same problem on an "
            "in-memory sample (rc.Dataset(X[:n].compute(), ...)), whose answers the Dask "
            "methods reproduce (docs/cluster.md).")
    pattern = problem.pattern
    spec, _ = dispatch.resolve(problem, method)
    # auto as solve runs it (with its fallback), unless it picks the reference itself
    as_solve = method == "auto" and not pattern.is_reference(spec.name)
    specialized = pattern.verify_method(problem, problem.canonical())
    if method == "auto" and pattern.is_reference(spec.name) and specialized:
        # comparing the reference with itself would prove nothing: check the specialized one
        spec, _ = dispatch.resolve(problem, specialized)
    label = spec.name
    methods = pattern.methods()
    others = [m for m in dispatch.available_methods(problem)
              if m != pattern.reference_method and not (m in methods and methods[m].relaxes)]
    if spec.relaxes:
        raise SpecError(
            f"verify(method={method!r}): method {spec.name!r} solves {spec.relaxes}, not this "
            f"problem: the reference's answer is not one it should agree with. Pass method= "
            f"one of {others} to compare a method of this problem with the reference.")
    if pattern.is_reference(spec.name) and not specialized and not pattern.has_cross_check:
        raise SpecError(
            f"verify(method={method!r}) would compare the reference {spec.name!r} with itself: "
            f"no specialized method of the {pattern.name} pattern applies to this problem by "
            f"default (problem.plan() says why) and the pattern has no independent "
            f"cross-check. Pass method= one of {others} to compare that method with the "
            "reference.")
    reference = problem.solve(pattern.reference_method, seed=seed, **(reference_options or {}))
    if pattern.is_reference(spec.name) and not specialized:
        # no specialized method: check the reference against an independent solve of the same
        # chain by another solver, so the comparison can fail
        options = {**pattern.cross_check(problem, reference), **(options or {})}
        label = f"{spec.name}/{options['solver']}"
    result = problem.solve("auto" if as_solve else spec.name, seed=seed, **(options or {}))
    if as_solve:  # what solve returns: the plan's method or its fallback
        label = result.method
    rows = pattern.compare(problem, result, reference)
    verdict = getattr(pattern, "verdict_rows", lambda _: ("objective_rel_gap",))(rows)
    return VerifyReport(label, pattern.reference_method, result, reference, rows, rtol,
                        tuple(verdict))
