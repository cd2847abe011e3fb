"""The generic chain as the last pattern: every composition no specialized pattern accepts.

Dispatch (:mod:`ratecons.dispatch`) falls back to this pattern. Its methods are the chain of
:mod:`ratecons.generic` with two step solvers: ``structured`` (the structured interior point,
:mod:`ratecons.structured_chain`), which ``auto`` picks whenever every part of the problem has
a structured lowering, and ``cvxpy`` (CVXPY steps: the reference, and ``auto``'s choice for the
parts the structured solver does not take, which ``plan()`` names).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import settings
from ..comparison import objective_rel_gap
from ..errors import SolverError
from ..expr.analysis import Analysis
from ..generic import generic_method
from ..reductions.to_cvxpy import is_lp, pick_solver
from ..result import Result
from ..structured_chain import structured_method, structured_support
from .pattern import MethodSpec, Pattern

__all__ = ["GenericChain"]


class GenericChain(Pattern):
    """Every composition no specialized pattern accepts (module docstring)."""

    name = "composed (generic chain)"
    reference_method = "cvxpy"
    specialized_method = None
    has_cross_check = True

    def compile(self, problem: Any) -> Analysis:
        return problem.analysis

    def methods(self) -> dict[str, MethodSpec]:
        reference = replace(generic_method("cvxpy"), is_reference=True, description=(
            "kernelize, hinge relaxation + MM (Alg 1) with every step solved by CVXPY (the "
            "reference)"))
        return {"cvxpy": reference, settings.STRUCTURED_METHOD: structured_method()}

    def choose(self, problem: Any, form: Analysis) -> tuple[str, list[str]]:
        reasons = list(problem.pattern_reasons)
        chain = "the generic chain: " + ("hinge relaxation, then majorization-minimization "
                                         "(Alg 1) over the ramp parts" if form.needs_mm else
                                         "one convex problem")
        unsupported = structured_support(form)
        small = form.n_examples < settings.STRUCTURED_AUTO_MIN_EXAMPLES
        if unsupported is None and not small:
            name = settings.STRUCTURED_METHOD
            reasons.append(chain + ", each step by the structured interior point (one "
                           "weighted Gram product over the examples per Newton step; faster "
                           "than the CVXPY steps from "
                           f"{settings.STRUCTURED_AUTO_MIN_EXAMPLES} examples in "
                           "benchmarks.composition)")
        else:
            name = "cvxpy"
            why = unsupported or (
                f"{form.n_examples} examples, below the "
                f"{settings.STRUCTURED_AUTO_MIN_EXAMPLES} from which the structured steps were "
                "faster (method='structured' runs them anyway)")
            reasons.append(chain + f", each step by CVXPY ({pick_solver(form, None)}): " + why)
        return name, reasons

    def is_reference(self, method: str) -> bool:
        """``generic`` is the reference's chain with the same CVXPY steps: a user's
        ``verify(method="generic")`` compared it with an identical run (bit for bit, gap 0)."""
        return method in (self.reference_method, settings.GENERIC_METHOD)

    def cross_check(self, problem: Any, reference: Result) -> dict[str, Any]:
        """Options of an independent solve for ``verify``: the reference's last convex step
        (same anchor, same bounds) by another solver (SCS at 1e-9, or CLARABEL for LP steps);
        its optimal value is unique, so the two must agree to the solvers' accuracy."""
        if not reference.has_model:
            raise SolverError(f"the reference ended with status {reference.status!r}; there is "
                              "no step to cross-check.")
        step = {"only_step": reference.last_step}
        if is_lp(problem.analysis):
            return {"solver": "CLARABEL", **step}
        return {"solver": "SCS", "solver_options": {"eps_abs": 1e-9, "eps_rel": 1e-9,
                                                    "max_iters": 200_000}, **step}

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        """Objectives, violations and score distance; the verdict (``objective_rel_gap``)
        rests on the one number that is unique, the optimal value of one convex step at one
        anchor: for a cross-check of the last step (``cross_check``) that step by both
        solvers; for the structured chain, the reference's last step (same anchor, same
        bounds) solved again by the structured step solver. The two chains' own objectives
        are shown beside it: MM's fixed points are local, and two step solvers that stop at
        different accuracies may end at different ones; ``tied_anchors`` (when either chain met
        one) counts the MM steps at a tie of eq. (4), where the paths may part
        (:func:`~ratecons.chain_points.tied_examples`)."""
        rows: dict[str, Any] = {"objective": (result.objective, reference.objective)}
        ties = tuple(r.certificate.details.get("tied_anchors") for r in (result, reference))
        if any(ties):  # MM steps at a tie of eq. 4: the chains' paths may part there
            rows["tied_anchors"] = ties
        if not (result.has_model and reference.has_model):
            rows["objective_rel_gap"] = None
            return rows
        step, other = result, reference
        if result.method == settings.HIGHS_METHOD:  # its last step by another solver: the
            # chains' own objectives may part at ties of eq. (4) (docs/mm.md)
            other = problem.solve(settings.GENERIC_METHOD, **self.cross_check(problem, result))
            rows["chain objective_rel_gap"] = objective_rel_gap(result.objective,
                                                                reference.objective)
        elif (result.method == settings.STRUCTURED_METHOD
                and not result.certificate.details.get("only_step", False)):
            made = reference.certificate.details  # the same feature map as the reference's
            step = problem.solve(settings.STRUCTURED_METHOD, only_step=reference.last_step,
                                 kernel_points=made["kernel_points"], seed=made["seed"])
            rows["chain objective_rel_gap"] = objective_rel_gap(result.objective,
                                                                reference.objective)
            rows["max_violation"] = (result.certificate.max_violation,
                                     reference.certificate.max_violation)
        if (step.certificate.details.get("only_step", False) or other is not reference) \
                and step.has_model and other.has_model:
            pair = (step.last_step.bound_objective, other.last_step.bound_objective)
            user = problem.analysis.objective.to_user  # in the user's sense, as the objective
            rows["last step (one anchor, two solvers)"] = (user(pair[0]), user(pair[1]))
            rows["objective_rel_gap"] = objective_rel_gap(*pair)
        else:
            rows["objective_rel_gap"] = objective_rel_gap(result.objective, reference.objective)
            rows["max_violation"] = (result.certificate.max_violation,
                                     reference.certificate.max_violation)
        X = [d.X for d in problem.analysis.datasets]
        diff = max(float(np.max(np.abs(result.decision_function(x)
                                       - reference.decision_function(x)))) for x in X)
        rows["score_distance"] = diff
        return rows

