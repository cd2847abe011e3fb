"""scikit-learn estimators: rate-constrained, minimax risk, top-K and robust classifiers.

>>> clf = RateConstrainedClassifier(constraints=DemographicParityRatio(bound=0.8), l2=1e-3)
>>> clf.fit(X, y, sensitive_features=A).predict(X_test)

Every estimator is a real :class:`sklearn.base.BaseEstimator` with :class:`ClassifierMixin`: the
constructor only stores its parameters, ``fit`` validates with scikit-learn's helpers and solves
a Problem, learned attributes end in ``_`` (``result_``: the Result), any two labels work (also
strings, through ``classes_``), and ``predict`` before ``fit`` raises ``NotFittedError``.

Sensitive features are sample-aligned fit parameters, so ``GridSearchCV(...).fit(X, y,
sensitive_features=A)`` and ``cross_val_score(..., params={"sensitive_features": A})`` split them
with the folds; with metadata routing enabled, request them with
``clf.set_fit_request(sensitive_features=True)``. ``fit`` names them ``"sensitive"`` in the
training :class:`ratecons.Dataset` (several columns are crossed into one intersectional group);
``groups={"name": values}`` adds more named attributes.

The ready constraint objects (:class:`DemographicParityRatio`, ...) are estimators themselves,
so their bound is a nested parameter: ``GridSearchCV(clf, {"constraints__bound": [0.7, 0.9]})``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import rates
from .data import Dataset
from .errors import SolverError, check_flag, parameter_error
from .models import KernelModel, LinearModel
from .problem import Problem
from .ramp import ramp, ramp_scores
from .report import RateReport
from .result import Result
from .sklearn_fairness import (
    SENSITIVE,
    DemographicParityDifference,
    DemographicParityRatio,
    EqualizedOdds,
    EqualOpportunityDifference,
    EqualOpportunityRatio,
    as_makers,
    constraints_on,
)
from .solvers.tracker import revised

__all__ = [
    "report",
    "DemographicParityDifference",
    "DemographicParityRatio",
    "EqualOpportunityDifference",
    "EqualOpportunityRatio",
    "EqualizedOdds",
    "MinimaxRiskClassifier",
    "RateConstrainedClassifier",
    "RobustClassifier",
    "TopKClassifier",
]


# ---------------------------------------------------------------------------- shared machinery
def _sensitive_column(values: Any, n: int) -> np.ndarray:
    """One group attribute from ``sensitive_features``: 1-D as is, 2-D columns crossed."""
    arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 2:
        arr = np.array([" & ".join(str(v) for v in row) for row in arr])
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"sensitive_features must have one value (or row) per sample ({n}); "
                         f"got shape {arr.shape}.")
    return arr


class _RateconsClassifier(ClassifierMixin, BaseEstimator):
    """Validation, labels and the fitted result shared by the estimators below."""

    _multiclass = False
    #: the objective counts examples (no weighted form): integer weights repeat rows
    _counts_examples = True

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multiclass
        tags.input_tags.sparse = True
        return tags

    def _training_data(self, X: Any, y: Any, sample_weight: Any = None,
                       sensitive_features: Any = None, groups: Mapping[str, Any] | None = None,
                       baseline: Any = None) -> Dataset:
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        name = type(self).__name__
        if self.classes_.size < 2:
            raise ValueError(f"{name} needs samples of at least 2 classes in the data; got "
                             f"1 class ({self.classes_[0]!r}).")
        if self.classes_.size > 2 and not self._multiclass:
            raise ValueError(f"Only binary classification is supported. {name} got y with "
                             f"{self.classes_.size} classes; use one-vs-rest "
                             "(sklearn.multiclass) for more.")
        n = X.shape[0]
        named = {str(k): np.asarray(v) for k, v in (groups or {}).items()}
        if sensitive_features is not None:
            named[SENSITIVE] = _sensitive_column(sensitive_features, n)
        rows = None
        weights = None
        if sample_weight is not None:
            # a negative weight was read as "drop this row", silently
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                           ensure_non_negative=True)
            if np.unique(codes[weights > 0]).size < 2:
                raise ValueError(f"{name} needs positive sample weight on at least 2 classes.")
            if self._counts_examples:
                # the objective counts examples: an integer weight k means k copies
                if not np.all(weights == np.round(weights)):
                    raise ValueError(f"{name} takes integer sample weights only (a weight k "
                                     "counts the example k times).")
                rows, weights = np.repeat(np.arange(n), weights.astype(np.int64)), None
            else:
                rows = np.flatnonzero(weights > 0)  # a zero weight removes the example
                weights = weights[rows]
                if np.all(weights == weights[0]):
                    weights = None  # uniform weights: the unweighted problem
        if rows is not None:
            X, codes = X[rows], codes[rows]
            named = {k: v[rows] for k, v in named.items()}
            baseline = None if baseline is None else np.asarray(baseline)[rows]
        return Dataset(X, codes, groups=named, baseline=baseline, weights=weights,
                       name="train")

    def _solve(self, problem: Problem, method: str, options: dict[str, Any] | None,
               verbose: bool | None) -> Result:
        if options is not None and not isinstance(options, Mapping):
            raise parameter_error("options", type(self).__name__, "a dict or None", options)
        result = problem.solve(method=method, verbose=verbose, **(options or {}))
        if not result.has_model:
            why = result.certificate.details.get("message", "no model")
            raise SolverError(f"{type(self).__name__}.fit: the solve ended with status "
                              f"{result.status!r} ({why}).")
        self.result_ = result
        return result

    def _features(self, X: Any) -> Any:
        check_is_fitted(self, "result_")
        return validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)

    def report(self, X: Any, y: Any, sensitive_features: Any = None,
               groups: Mapping[str, Any] | None = None, baseline: Any = None,
               sample_weight: Any = None, name: str | None = None) -> RateReport:
        """The fitted problem's objective and constraints on held-out data, with metrics by
        group, in one call.

        Builds the held-out :class:`ratecons.Dataset` as ``fit`` built the training one
        (``sensitive_features`` becomes the group ``"sensitive"``, labels map to the codes of
        ``classes_``) and returns ``result_.report(data)``: every constraint's achieved value
        and slack on that data, and a :class:`ratecons.report.GroupTable` per group
        attribute (selection, error, true- and false-positive rates by level, their largest
        differences and smallest ratios). For a Pipeline use :func:`report`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), labels among ``classes_``
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), optional
            Needed when the constraints are about the sensitive groups.
        groups : dict of str to array-like, optional
        baseline : array-like, optional
        sample_weight : array-like of shape (n_samples,), optional
            Example weights of the rates.
        name : str, optional
            The data's name in the report (default as ``rc.Dataset``'s, ``"data"``).
        """
        X = self._features(X)
        n = X.shape[0]
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y must have one label per sample ({n}); got shape {y.shape}.")
        unknown = ~np.isin(y, self.classes_)
        if np.any(unknown):
            raise ValueError(f"y has labels the estimator was not fitted on: "
                             f"{np.unique(y[unknown])[:5].tolist()}; classes_ are "
                             f"{self.classes_.tolist()}.")
        named = {str(k): np.asarray(v) for k, v in (groups or {}).items()}
        if sensitive_features is not None:
            named[SENSITIVE] = _sensitive_column(sensitive_features, n)
        features = {getattr(m, "feature", None)
                    for m in as_makers(getattr(self, "constraints", None))}
        if SENSITIVE in features - set(named):  # (the message named groups={'sensitive': ...})
            raise ValueError("report needs sensitive_features=, as fit had them: the "
                             "constraints are over the sensitive groups.")
        weights = (None if sample_weight is None
                   else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                             ensure_non_negative=True))
        data = Dataset(X, np.searchsorted(self.classes_, y), groups=named, baseline=baseline,
                       weights=weights, name=name)
        if self.result_.problem is not None:
            return self.result_.report(data)
        # unpickled (see __getstate__): the problem is built anew on the held-out data
        rebuilt = copy.copy(self.result_)
        rebuilt.problem = self._problem(data)
        return rebuilt.report(data)

    def _problem(self, data: Dataset) -> Problem:
        """The estimator's problem on ``data`` (``fit`` solves it on the training data)."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        """Pickles keep what prediction needs: ``result_`` without its problem (which holds
        the training data), the solver's primal and dual vectors or a family's training-size
        attributes; status, objective, certificate, history and the fitted model stay.
        :meth:`report` then builds the problem anew on the held-out data."""
        state = dict(super().__getstate__())  # may be the instance's own __dict__
        if "result_" in state:
            state["result_"] = _portable(state["result_"])
        return state

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores f(x); positive means ``classes_[1]``."""
        X = self._features(X)
        return np.asarray(self.result_.decision_function(X), dtype=np.float64)

    def predict(self, X: Any) -> np.ndarray:
        """Labels (from ``classes_``) of the deterministic rule f(x) > 0."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.int64)]


def _portable(result: Result) -> Result:
    """A copy of ``result`` with the attributes every Result has (:class:`Result`'s
    constructor), the problem dropped, the solution without its primal and dual vectors and
    only the scalar extras (``threshold``, ``robust_loss``; not the training-size arrays); the
    class is kept, so family methods that use the model alone (``proba``) still work."""
    slim = copy.copy(result)
    keep = set(vars(Result(None, result.method, result.solution)))
    for name in set(vars(slim)) - keep:
        delattr(slim, name)
    slim.problem = None
    slim.extras = {k: v for k, v in result.extras.items() if np.ndim(v) == 0
                   and not hasattr(v, "__dict__")}
    slim.solution = revised(result.solution, primal={}, dual={})
    return slim


class _LinearAttributes:
    """``coef_`` and ``intercept_`` for linear scorers in scikit-learn's shapes for a binary
    linear classifier, (1, n_features) and (1,): f(x) = X @ coef_[0] + intercept_[0]
    (``intercept_ = -b`` in the papers' f(x) = <w, x> - b)."""

    @property
    def coef_(self) -> np.ndarray:
        check_is_fitted(self, "result_")
        return self.result_.w.reshape(1, -1).copy()

    @property
    def intercept_(self) -> np.ndarray:
        check_is_fitted(self, "result_")
        return np.array([-float(self.result_.b)])


# ---------------------------------------------------------------------------- estimators
_OBJECTIVES: dict[str, Callable[[Dataset], Any]] = {
    "error_rate": rates.error_rate,
    "false_negative_rate": rates.false_negative_rate,
    "false_positive_rate": rates.false_positive_rate,
}


class RateConstrainedClassifier(_LinearAttributes, _RateconsClassifier):
    """Minimize a rate on the training data subject to rate constraints built from it.

    Parameters
    ----------
    constraints : callable or list of callables, optional
        ``constraints(train_dataset) -> list of constraints``, called in ``fit`` on the training
        :class:`ratecons.Dataset` (its group ``"sensitive"`` holds ``sensitive_features``).
        The ready objects (:class:`DemographicParityRatio`, ...) are such callables.
    objective : {"error_rate", "false_negative_rate", "false_positive_rate", "hinge_loss",
        "logistic_loss"} or callable
        What to minimize, or ``objective(train_dataset) -> expression``.
    l2, l1 : float
        Regularization of the linear model (:class:`ratecons.LinearModel`).
    method : str
        Solver method (``"auto"`` chooses; see :meth:`ratecons.Problem.plan`).
    options : dict, optional
        Method options passed to :meth:`ratecons.Problem.solve`.
    verbose : bool, optional
        Progress bar (None: only on a terminal).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_, intercept_ : the linear model, shapes (1, n_features) and (1,) as scikit-learn's
        binary linear classifiers: ``decision_function(X) = X @ coef_[0] + intercept_[0]``
    result_ : ratecons.Result
        The solve: status, certificate, history and ``report()``.
    """

    _counts_examples = False

    def __init__(self, constraints: Any = None, objective: str | Callable = "error_rate",
                 l2: float = 1e-3, l1: float = 0.0, method: str = "auto",
                 options: dict[str, Any] | None = None, verbose: bool | None = None) -> None:
        self.constraints = constraints
        self.objective = objective
        self.l2 = l2
        self.l1 = l1
        self.method = method
        self.options = options
        self.verbose = verbose

    def _objective(self, data: Dataset) -> Any:
        if callable(self.objective):
            return self.objective(data)
        if self.objective in _OBJECTIVES:
            return _OBJECTIVES[self.objective](data)
        if self.objective in ("hinge_loss", "logistic_loss"):
            from .expr import mean_loss

            return getattr(mean_loss, self.objective)(data)
        raise ValueError(
            f"The 'objective' parameter of RateConstrainedClassifier must be one of "
            f"{[*_OBJECTIVES, 'hinge_loss', 'logistic_loss']} or a callable. Got "
            f"{self.objective!r} instead.")

    def fit(self, X: Any, y: Any, sensitive_features: Any = None,
            groups: Mapping[str, Any] | None = None, baseline: Any = None,
            sample_weight: Any = None) -> RateConstrainedClassifier:
        """Build the training Dataset and the problem, and solve it (raises if no model).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two distinct labels
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), optional
            The group ``"sensitive"`` of the training Dataset.
        groups : dict of str to array-like, optional
            More named group attributes.
        baseline : array-like, optional
            Predictions (or scores) of a deployed model, for churn and win/loss constraints.
        sample_weight : array-like of shape (n_samples,), optional
        """
        data = self._training_data(X, y, sample_weight, sensitive_features, groups, baseline)
        self._solve(self._problem(data), self.method, self.options, self.verbose)
        return self

    def _problem(self, data: Dataset) -> Problem:
        return Problem(minimize=self._objective(data),
                       subject_to=constraints_on(self.constraints, data),
                       model=LinearModel(l2=self.l2, l1=self.l1))

    def predict_proba(self, X: Any) -> np.ndarray:
        """The randomized rule of App. A (Goh et al.): P(classes_[1] | x) = clip(1/2 + f(x) / t)
        with t the width of the model's ramp (``result_.ramp_width``, 1 unless the model was
        returned at its loss's scale)."""
        z = self.decision_function(X)  # (checks that the estimator is fitted)
        p = ramp(ramp_scores(self.result_, z))
        return np.column_stack([1.0 - p, p])


def report(estimator: Any, X: Any, y: Any, sensitive_features: Any = None,
           **kwargs: Any) -> RateReport:
    """The held-out report of a fitted ratecons estimator, also at the end of a Pipeline or
    inside a fitted search (``GridSearchCV``: its ``best_estimator_``).

    ``report(pipe, X_test, y_test, sensitive_features=A_test)`` transforms ``X_test`` by the
    pipeline's steps before the last and returns the last step's
    :meth:`RateConstrainedClassifier.report` (the same for every estimator here);
    ``kwargs`` are that method's other arguments.
    """
    from sklearn.pipeline import Pipeline

    while hasattr(estimator, "best_estimator_"):
        estimator = estimator.best_estimator_
    if isinstance(estimator, Pipeline):
        X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    if not isinstance(estimator, _RateconsClassifier):
        raise TypeError(f"report takes a fitted ratecons estimator (or a Pipeline or search "
                        f"ending in one); got {type(estimator).__name__}.")
    return estimator.report(X, y, sensitive_features=sensitive_features, **kwargs)


class TopKClassifier(_RateconsClassifier):
    """Maximize the true-positive rate at the top: TPR@K (``k``) or TPR@tau (``tau``).

    Predicts ``classes_[1]`` at scores above the training threshold (the mean of the K largest
    negative scores for TopPush(K), of all scores for TopMeanK, or the tau-quantile); see
    :func:`ratecons.tpr_at_top` and :func:`ratecons.tpr_at_quantile`.

    Parameters
    ----------
    k : int, default 1
        K of TPR@K (1: TopPush).
    tau : float, optional
        When given, maximize TPR@tau instead of TPR@K (``k`` then stays 1: both is an error).
    among : {"negatives", "all"}
    kernel : {"linear", "gaussian", "polynomial"}, optional
        None: a linear model; else a :class:`ratecons.KernelModel` with ``gamma``.
    l2, gamma : float; the model's l2 and kernel width (:class:`ratecons.KernelModel`)
    method, options, verbose : as for :class:`RateConstrainedClassifier`
    """

    def __init__(self, k: int = 1, tau: float | None = None, among: str = "negatives",
                 kernel: str | None = None, l2: float = 1e-3, gamma: float | None = None,
                 method: str = "auto", options: dict[str, Any] | None = None,
                 verbose: bool | None = None) -> None:
        self.k = k
        self.tau = tau
        self.among = among
        self.kernel = kernel
        self.l2 = l2
        self.gamma = gamma
        self.method = method
        self.options = options
        self.verbose = verbose

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> TopKClassifier:
        """Solve the ranking problem on (X, y); an integer ``sample_weight`` k counts an example k
        times (the ranking objectives count examples)."""
        data = self._training_data(X, y, sample_weight)
        self._solve(self._problem(data), self.method, self.options, self.verbose)
        return self

    def _problem(self, data: Dataset) -> Problem:
        from .ranking import tpr_at_quantile, tpr_at_top

        if self.tau is not None and self.k != 1:  # a user's k=5 with tau=0.05 was ignored
            raise parameter_error("k", "TopKClassifier", "1 when tau is given (TPR@tau's K "
                                  "comes from tau: set one of them)", self.k)
        objective = (tpr_at_top(data, k=self.k, among=self.among) if self.tau is None
                     else tpr_at_quantile(data, tau=self.tau, among=self.among))
        model = (LinearModel(l2=self.l2) if self.kernel is None
                 else KernelModel(kernel=self.kernel, l2=self.l2, gamma=self.gamma))
        return Problem(maximize=objective, model=model)


class RobustClassifier(_LinearAttributes, _RateconsClassifier):
    """Minimize the worst-case expected loss over a phi-divergence ball around the training
    distribution (the DRO paper, eq. 2), plus (l2/2) ||w||^2.

    Parameters
    ----------
    phi : {"chi2", "kl", ...} or ratecons.Phi
    rho : float
        Radius of the ball.
    loss : {"logistic", "hinge", "squared"}
    l2 : float
    method : str
    options : dict, optional
    verbose : bool, optional
    """

    def __init__(self, phi: Any = "chi2", rho: float = 0.1, loss: str = "logistic",
                 l2: float = 1e-3, method: str = "auto", options: dict[str, Any] | None = None,
                 verbose: bool | None = None) -> None:
        self.phi = phi
        self.rho = rho
        self.loss = loss
        self.l2 = l2
        self.method = method
        self.options = options
        self.verbose = verbose

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> RobustClassifier:
        """Solve the robust problem on (X, y); an integer ``sample_weight`` k counts an example k
        times (the ball is centred on the empirical distribution)."""
        data = self._training_data(X, y, sample_weight)
        self._solve(self._problem(data), self.method, self.options, self.verbose)
        return self

    def _problem(self, data: Dataset) -> Problem:
        from .phi_divergence import PhiDivergenceBall, robust_loss

        objective = robust_loss(PhiDivergenceBall(data, phi=self.phi, rho=self.rho),
                                loss=self.loss)
        return Problem(minimize=objective, model=LinearModel(l2=self.l2))

    def _has_probabilities(self) -> bool:
        """Whether ``predict_proba`` exists: for the logistic loss only, so that
        ``hasattr(clf, "predict_proba")`` (soft voting, calibration, log-loss scorers) is
        False for the others instead of an attribute that raises when called."""
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba is defined for loss='logistic' only; this "
                                 f"RobustClassifier uses loss={self.loss!r}.")
        return True

    @available_if(_has_probabilities)
    def predict_proba(self, X: Any) -> np.ndarray:
        """sigmoid(f(x)) for the logistic loss (the only loss that defines probabilities)."""
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p, p])


class MinimaxRiskClassifier(_RateconsClassifier):
    """Minimax risk classifier (Mazuelas et al.): the classifier minimizing the worst-case 0-1
    risk over the moment set U (LP (4)); multiclass.

    Parameters
    ----------
    features : str or feature map
        ``"linear"`` or a map from :mod:`ratecons.features` (e.g. ``RandomFourier(200)``).
    lambda0 : float
        Scale of the confidence vector of U.
    fixed_marginals : bool
        Fix the instances' marginal to the empirical one (thesis eq. 2.4).
    one_hot : bool, default True
        False (binary data only): MRCpy's compact map Phi(x, 1) = -Phi(x, 0), whose bounds are
        MRCpy's (see :class:`ratecons.MomentSet`).
    deterministic : bool, default True
        Which rule ``lower_`` is about, as MRCpy's flag: the argmax rule of ``predict`` (True)
        or the randomized rule of ``predict_proba`` (False).
    method : str
    options : dict, optional
    verbose : bool, optional

    Attributes
    ----------
    upper_ : float
        An upper bound on the returned rule's expected 0-1 loss for every distribution in U
        (MRCpy's; the worst-case risk at the returned mu): R* when optimal, above it if stopped
        early (``k_max``, ``time_limit``, ``eps1 > 0``; ``certified_lower_`` bounds R* below).
    lower_ : float
        MRCpy's lower bound (``get_lower_bound``): the smallest expected 0-1 loss of the rule
        (argmax, or randomized with ``deterministic=False``) over the distributions of U on the
        training instances, by the LP of :mod:`ratecons.solvers.mrc_bounds`. General MRC only
        (NaN with ``fixed_marginals=True``, where MRCpy has no such bound).
    certified_lower_ : float
        The solver's certified lower bound on R* (equal to ``upper_`` up to the solver's
        tolerance when the status is optimal).
    """

    _multiclass = True

    def __init__(self, features: Any = "linear", lambda0: float = 0.3,
                 fixed_marginals: bool = False, one_hot: bool = True,
                 deterministic: bool = True, method: str = "auto",
                 options: dict[str, Any] | None = None, verbose: bool | None = None) -> None:
        self.features = features
        self.lambda0 = lambda0
        self.fixed_marginals = fixed_marginals
        self.one_hot = one_hot
        self.deterministic = deterministic
        self.method = method
        self.options = options
        self.verbose = verbose

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MinimaxRiskClassifier:
        """Solve the MRC LP on (X, y); an integer ``sample_weight`` k counts an example k times
        (U is built from the empirical moments)."""
        for flag in ("fixed_marginals", "one_hot", "deterministic"):
            check_flag(getattr(self, flag), flag, type(self).__name__)
        data = self._training_data(X, y, sample_weight)
        problem = self._problem(data)
        result = self._solve(problem, self.method, self.options, self.verbose)
        self.upper_ = float(result.objective)
        lower = result.certificate.lower_bound
        self.certified_lower_ = float(result.objective if lower is None else lower)
        self.lower_ = (np.nan if self.fixed_marginals
                       else self._rule_lower_bound(problem, result, data))
        return self

    def _problem(self, data: Dataset) -> Problem:
        from .moments import MomentSet, minimax_risk

        U = MomentSet(data, features=self.features, lambda0=self.lambda0,
                      one_hot=self.one_hot)
        return Problem(minimize=minimax_risk(U, fixed_marginals=self.fixed_marginals))

    def _rule_lower_bound(self, problem: Any, result: Any, data: Dataset) -> float:
        """MRCpy's lower bound L(h) of the argmax or randomized rule on the training data."""
        from .solvers.mrc_bounds import expected_loss_lower_bound

        form = problem.canonical()
        if self.deterministic:
            H = np.eye(form.n_classes)[np.argmax(form.scores(result.mu), axis=1)]
        else:
            H = result.proba(data.X)
        return float(expected_loss_lower_bound(form, H).objective)

    def decision_function(self, X: Any) -> np.ndarray:
        """Phi(x, y)^T mu per class (n_samples, n_classes); for two classes the difference of
        the second and first column, as scikit-learn expects."""
        X = self._features(X)
        V = np.asarray(self.result_.decision_function(X), dtype=np.float64)
        return V[:, 1] - V[:, 0] if V.shape[1] == 2 else V

    def predict(self, X: Any) -> np.ndarray:
        """The argmax rule of the MRC (labels from ``classes_``)."""
        X = self._features(X)
        codes = self.result_.predict(X)
        return self.classes_[np.asarray(codes, dtype=np.int64)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """The MRC's randomized rule h(y|x) (columns in the order of ``classes_``)."""
        X = self._features(X)
        return np.asarray(self.result_.proba(X), dtype=np.float64)
