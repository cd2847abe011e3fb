"""The minimax-risk family: ``rc.Problem(minimize=rc.minimax_risk(U))``.

Methods (``problem.solve(method=...)``):

- ``"lp"``: the full LP (4) (or (2.5)) on HiGHS; by default its dual (6) by interior point with
  crossover (the fastest full solve measured, docs/mrc.md), or simplex / the primal on request;
- ``"ccg"``: constraint and column generation (Alg. 1 of Bondugula et al.), LP (4) only;
- ``"subgradient"``: the subgradient methods of the thesis (chapter 3);
- ``"cvxpy"``: the reference, written from the definitions (2.2) / (2.5).

``auto`` picks CCG for LP (4) (at least as fast as the best full LP on every instance of
the benchmark grid, docs/mrc.md) and the full LP for the fixed-marginals problem (2.5).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import settings
from ..canonical.mrc import MAX_ENUMERATED_CLASSES, MRCForm, max_subset_value
from ..canonical.mrc_dask import DaskMRCForm
from ..comparison import objective_rel_gap
from ..data import Dataset, Subset
from ..errors import DataError, SpecError
from ..moments import MinimaxRisk, MomentSet
from ..reductions.to_cvxpy import solve_mrc_cvxpy
from ..result import Result
from ..solution import Solution
from ..solvers.ccg import CCG
from ..solvers.mrc_dask import DaskCCG
from ..solvers.mrc_lp import solve_mrc_lp
from .pattern import MethodSpec, Pattern

__all__ = ["MRCPattern", "MRCResult", "MRCScorer"]

class MRCScorer:
    """The MRC rule from mu: scores Phi(x, y)^T mu, argmax and the randomized rule h(y|x).

    ``phi_train`` is varphi(mu) of (2.3) (a number) for the general MRC, or None for fixed
    marginals, where varphi(mu, x) of (2.6) is evaluated at each x.
    """

    def __init__(self, U: MomentSet, mu: np.ndarray, phi_train: float | None) -> None:
        self.U = U
        self.mu = np.asarray(mu, dtype=np.float64)
        self.phi_train = phi_train

    def decision_function(self, X: Any) -> np.ndarray:
        """Phi(x, y)^T mu for every row of X and label code y: shape (n, n_classes)."""
        return self.U.scores(self.mu, self.U.transform(X))

    def proba(self, X: Any) -> np.ndarray:
        """h(y|x) of the papers, shape (n, n_classes); rows sum to 1.

        Fixed marginals (Theorem 2.2.1): h(y|x) = (Phi(x,y)^T mu - varphi(mu, x))_+, which sums
        to 1. General MRC (Theorem 2.1.1): any h >= Phi(x,y)^T mu - varphi(mu) is minimax; as
        MRCpy, we normalize the positive parts to sum 1 (uniform when they are all 0).
        """
        V = self.decision_function(X)
        phi = max_subset_value(V)[0] if self.phi_train is None else self.phi_train
        H = np.maximum(V - np.reshape(phi, (-1, 1)), 0.0)
        total = H.sum(axis=1, keepdims=True)
        empty = np.isclose(total[:, 0], 0.0)
        H[empty], total[empty] = 1.0 / V.shape[1], 1.0
        return H / total

    def predict(self, X: Any, randomized: bool = False, seed: int | None = None) -> np.ndarray:
        """Labels (as in the training data): argmax of the scores, or drawn from h(y|x)."""
        if not randomized:
            codes = np.argmax(self.decision_function(X), axis=1)
        else:
            H = self.proba(X)
            rng = np.random.default_rng(seed)
            u = rng.random(H.shape[0])[:, None]
            codes = np.minimum((np.cumsum(H, axis=1) < u).sum(axis=1), H.shape[1] - 1)
        return self.U.classes[codes]


class MRCResult(Result):
    """A solved MRC: ``mu``, ``objective`` = R* (worst-case 0-1 error), predictions, errors."""

    @property
    def mu(self) -> np.ndarray:
        """Coefficients mu, laid out so that ``mu.reshape(n_classes, p)[y] @ psi(x)`` is
        Phi(x, y)^T mu."""
        return self._require_model().mu

    def proba(self, X: Any) -> np.ndarray:
        """The randomized rule h(y|x) (columns in the order of ``classes``)."""
        return self._require_model().proba(X)

    @property
    def classes(self) -> np.ndarray:
        return self._require_model().U.classes

    def error(self, data: Dataset | Subset, randomized: bool = False) -> float:
        """0-1 error on labelled data: of the argmax rule, or the expected error of h(y|x)."""
        if isinstance(data, Subset):
            data = data.data.take(data.index)
        if not isinstance(data, Dataset):
            raise DataError(f"error() needs a labelled rc.Dataset; got {type(data).__name__}.")
        labels = data.require_labels("MRCResult.error")
        scorer = self._require_model()
        if randomized:  # a class unseen in training has h(y|x) = 0: always an error, as for
            # the argmax rule
            known = np.isin(labels, scorer.U.classes)
            rows = np.flatnonzero(known)
            H = scorer.proba(data.X)
            hit = np.zeros(labels.size)
            hit[rows] = H[rows, scorer.U.codes(labels[known])]
            return float(1.0 - hit.mean())
        return float(np.mean(scorer.predict(data.X) != labels))

    def _json_extras(self) -> dict[str, Any]:
        return {"mu": self.mu} if self.has_model else {}


#: the Result that :meth:`ratecons.result.Result.from_json` rebuilds around this scorer
MRCScorer.result_class = MRCResult


def _form_of(problem: Any) -> MRCForm:
    return problem.canonical()


def _result(problem: Any, method: str, solution: Solution) -> MRCResult:
    U = problem.objective.U
    scorer = None
    if "mu" in solution.primal and solution.status in settings.SOLVED_STATUSES:
        mu = solution.primal["mu"]
        phi_train = None
        if not problem.objective.fixed_marginals:
            phi_train = problem.canonical().varphi_aggregate(mu)
        scorer = MRCScorer(U, mu, phi_train)
    return MRCResult(problem, method, solution, scorer=scorer)


def _run_lp(
    problem: Any, form: MRCForm, *, seed: int | None = None, callback: Any = None,
    solver: str = "ipm", formulation: str = "dual", time_limit: float | None = None,
) -> MRCResult:
    return _result(problem, "lp", solve_mrc_lp(form, solver=solver, formulation=formulation,
                                                time_limit=time_limit))


def _run_ccg(
    problem: Any, form: MRCForm, *, seed: int | None = None, callback: Any = None,
    eps1: float = 0.0, eps2: float = 0.0, n_max: int = 400, m_max: int = 400,
    k_max: int | None = None, max_iterations: int | None = None, features: str = "all",
    remove_slack: bool = True,
    init_full_classes: int = 8, solver: str = "simplex", time_limit: float | None = None,
    slack_patience: int = 1, stabilization: float = 0.0, start: str = "auto",
) -> MRCResult:
    ccg = _ccg_class(form)(form, eps1=eps1, eps2=eps2, n_max=n_max, m_max=m_max, k_max=k_max,
              max_iterations=max_iterations, features=features, remove_slack=remove_slack,
              init_full_classes=init_full_classes, solver=solver, time_limit=time_limit,
              slack_patience=slack_patience, stabilization=stabilization, start=start,
              callback=callback)
    return _result(problem, "ccg", ccg.run())


def _ccg_class(form: MRCForm) -> type[CCG]:
    """CCG, or its Dask form when psi lives in Dask partitions (solvers.mrc_dask)."""
    return DaskCCG if isinstance(form, DaskMRCForm) else CCG


def _run_cvxpy(
    problem: Any, form: MRCForm, *, seed: int | None = None, callback: Any = None,
    solver: str = "CLARABEL", formulation: str = "subsets",
) -> MRCResult:
    return _result(problem, "cvxpy", solve_mrc_cvxpy(form, solver=solver,
                                                     formulation=formulation))


def _run_subgradient(
    problem: Any, form: MRCForm, *, seed: int | None = None, callback: Any = None,
    method: str | None = None, step: str | None = None, step_params: dict | None = None,
    iterate: str | None = None, max_iterations: int | None = None, tol: float | None = None,
    improvement_tol: float | None = None, check_every: int | None = None,
    batch_size: int | None = None, sampling: str | None = None, mu0: Any = None,
) -> MRCResult:
    from ..solvers import subgradient

    if form.label_map is not None:
        raise SpecError("the subgradient methods use the one-hot map; for one_hot=False use "
                        "method='lp', 'ccg' or 'cvxpy'.")
    given = {k: v for k, v in {
        "step": step, "step_params": step_params, "iterate": iterate,
        "max_iterations": max_iterations, "tol": tol, "improvement_tol": improvement_tol,
        "check_every": check_every, "mu0": mu0,
    }.items() if v is not None}
    args = (form.psi, form.n_classes, form.y, form.tau, form.lam)
    if form.fixed_marginals:
        extra = {k: v for k, v in {"method": method, "batch_size": batch_size,
                                    "sampling": sampling}.items() if v is not None}
        sol = subgradient.fixed_marginals_subgradient(*args, seed=seed, callback=callback,
                                                      **given, **extra)
    else:
        if method not in (None, "constrained") or batch_size is not None or sampling is not None:
            raise SpecError(
                "the general MRC (2.2) is solved by the constrained subgradient method only; "
                "method, batch_size and sampling apply to fixed_marginals=True."
            )
        sol = subgradient.constrained_subgradient(*args, callback=callback, **given)
    return _result(problem, "subgradient", sol)


class MRCPattern(Pattern):
    """Minimax risk classifiers with the 0-1 loss (LP (4), fixed marginals (2.5))."""

    name = "minimax risk"
    objective_types = (MinimaxRisk,)
    reference_method = "cvxpy"
    specialized_method = "ccg"

    def validate(self, problem: Any) -> None:
        if problem.sense != "minimize":
            raise SpecError("the minimax risk is minimized: use rc.Problem(minimize=...).")
        if problem.constraints:
            raise SpecError(
                "minimax_risk problems take no subject_to constraints; the uncertainty set "
                "(rc.MomentSet) holds the expectation constraints."
            )

    def compile(self, problem: Any) -> MRCForm:
        obj: MinimaxRisk = problem.objective
        U = obj.U
        if U.data is not None and obj.fixed_marginals:
            raise SpecError(
                "fixed_marginals=True (problem (2.5)) has no method that reads Dask partitions: "
                "on Dask data the MRC is LP (4), solved by method='ccg'. Use "
                "rc.minimax_risk(U) or gather the data (rc.Dataset(X.compute(), ...)).")
        form = DaskMRCForm if U.data is not None else MRCForm
        return form(psi=U.psi, n_classes=U.n_classes, y=U.y, tau=U.tau, lam=U.lam,
                       fixed_marginals=obj.fixed_marginals, classes=U.classes,
                       name=f"mrc_{U.data_name}", label_map=U.label_map)

    def methods(self) -> dict[str, MethodSpec]:
        out = {
            "lp": MethodSpec("lp", _run_lp, "full LP (4)/(2.5) on HiGHS (dual (6) by IPM)"),
            "ccg": MethodSpec("ccg", _run_ccg, "constraint and column generation (Alg. 1)"),
            "cvxpy": MethodSpec("cvxpy", _run_cvxpy, "CVXPY reference from (2.2)/(2.5)",
                                is_reference=True),
            "subgradient": MethodSpec("subgradient", _run_subgradient,
                                      "subgradient methods (thesis, ch. 3)"),
        }
        return out

    def choose(self, problem: Any, form: MRCForm) -> tuple[str, list[str]]:
        size = form.full_lp_size()
        counts = (f"the full LP has {size['rows']} rows (n (2^|Y| - 1) = {form.n} x "
                  f"{form.n_subsets}), {size['cols']} columns and {size['nnz']} nonzeros")
        if form.fixed_marginals:
            if form.n_classes > MAX_ENUMERATED_CLASSES:
                return "subgradient", [counts, "too many label subsets to enumerate; CCG "
                                       "handles LP (4) only, so the subgradient method"]
            return "lp", [counts, "fixed marginals (2.5): CCG handles LP (4) only"]
        return "ccg", [counts, "CCG solves LP (4) over the rows that can be active; it was at "
                       "least as fast as the best full LP on every instance of benchmarks.mrc's "
                       "grid, from 214 instances to 48,842 (docs/mrc.md)"]

    def compare(self, problem: Any, result: Result, reference: Result) -> dict[str, Any]:
        form = _form_of(problem)
        rows: dict[str, Any] = {
            "objective": (result.objective, reference.objective),
            "objective_rel_gap": objective_rel_gap(result.objective, reference.objective),
        }
        if result.has_model and reference.has_model:
            a, b = result.mu, reference.mu
            rows["objective_at_mu"] = (form.objective(a), form.objective(b))
            rows["max_violation"] = (result.certificate.max_violation or 0.0,
                                     reference.certificate.max_violation or 0.0)
            rows["solution_distance"] = float(np.linalg.norm(a - b))
            train_agree = np.mean(
                np.argmax(form.scores(a), axis=1) == np.argmax(form.scores(b), axis=1))
            rows["train_prediction_agreement"] = float(train_agree)
        return rows

    def to_matrix_lp(self, problem: Any) -> Any:
        """The full LP (4) / (2.5) with named rows and columns (for MPS export)."""
        from ..canonical.mrc_matrix import mrc_primal_lp

        return mrc_primal_lp(_form_of(problem))

    def restricted_model(self, problem: Any, **options: Any) -> Any:
        """Run CCG with ``options`` and return its final restricted HiGHS model, named."""
        form = _form_of(problem)
        ccg = _ccg_class(form)(form, **options)
        ccg.run()
        ccg.model.set_names(*ccg.names())
        return ccg.model


#: the instance :mod:`ratecons.dispatch` tries
PATTERN = MRCPattern()
