"""Results: the fitted model, the solver's status and certificate, and reports.

:class:`Result` is the one result of every score-model problem (rates, ranking at the top,
robust losses, compositions): ``w``, ``b``, ``decision_function``, ``predict``,
``report(data)``, ``certificate`` and ``metrics(data)`` with the same keys everywhere. What is
specific to a family is plain data in :attr:`Result.extras`, read as attributes
(``result.threshold``, ``result.weights``; see :class:`Result`). Minimax risk classifiers, which
are not score models, add their rule in :class:`ratecons.patterns.mrc.MRCResult`.
"""

from __future__ import annotations

import base64
import copy
import json
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from .dask_types import is_dask
from .data import Dataset, Subset
from .data_columns import check_feature_names, is_pandas, nonfinite_rows, numeric_array
from .errors import DataError, SolverError, SpecError, check_flag
from .kernels import kernel_rows
from .ramp import checked_width, ramp, ramp_scores, ramp_width
from .settings import INFEASIBLE_STATUSES, SOLVED_STATUSES
from .solution import Certificate, Solution, _from_jsonable, _jsonable

__all__ = ["Result", "FeatureScorer", "KernelScorer", "LinearScorer", "features_of"]


class _RampScaled:
    """The ramp width of the scorers below (:mod:`ratecons.ramp`) and their rescaling."""

    ramp_width = 1.0
    _coefficients = "w"

    def scaled(self, t: float) -> Any:
        """The same scorer with scores t f(x) and a ramp t times as wide: the same
        deterministic predictions, randomized rule and ramp rates."""
        t = checked_width(t, f"{type(self).__name__}.scaled")
        out = copy.copy(self)
        setattr(out, self._coefficients, t * getattr(self, self._coefficients))
        out.b = t * self.b
        out.ramp_width = t * self.ramp_width
        return out


def features_of(X: Any, d: int | None = None) -> Any:
    """Features from a Dataset, a Subset of one (its rows), or a matrix, checked against the
    model's dimension ``d`` and for NaN or infinite values (a score of NaN would silently
    predict negative)."""
    if isinstance(X, (Dataset, Subset)) or is_dask(X):
        # a Dataset was checked when it was built (so were its Dask features: never gathered)
        return _checked_width(X.X if isinstance(X, (Dataset, Subset)) else X, d)
    if not sp.issparse(X):
        X = numeric_array(X, "X")
        if X.ndim == 1:
            X = X.reshape(1, -1)
    values = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(values)):
        rows = nonfinite_rows(X)
        raise DataError(f"X has NaN or infinite values in {rows.size} rows (first: "
                        f"{rows[:5].tolist()}); impute or drop them before predicting.")
    return _checked_width(X, d)


def _checked_width(X: Any, d: int | None) -> Any:
    if d is not None and X.shape[1] != d:
        raise DataError(f"the model was fitted on {d} features; got data with {X.shape[1]}.")
    return X


class LinearScorer(_RampScaled):
    """f(x) = <w, x> - b with deterministic and randomized (App. A) predictions; the ramp of
    the randomized rule has width ``ramp_width`` (:func:`ramp_width`)."""

    def __init__(self, w: np.ndarray, b: float, ramp_width: float = 1.0) -> None:
        self.w = np.asarray(w, dtype=np.float64)
        self.b = float(b)
        self.ramp_width = checked_width(ramp_width, "LinearScorer")

    def decision_function(self, X: Any) -> np.ndarray:
        X = features_of(X, self.w.size)
        return np.asarray(X @ self.w).ravel() - self.b

    def predict(self, X: Any, randomized: bool = False, seed: int | None = None) -> np.ndarray:
        """Deterministic: 1 where f(x) > 0. Randomized (App. A of Goh et al.): 1 with
        probability sigma(f(x) / t), the ramp of eq. (2) of width t = ``ramp_width``."""
        check_flag(randomized, "randomized", "predict")
        z = self.decision_function(X)
        if not randomized:
            return (z > 0).astype(np.int8)
        rng = np.random.default_rng(seed)
        return (rng.random(z.size) < ramp(ramp_scores(self, z))).astype(np.int8)


class KernelScorer(_RampScaled):
    """f(x) = sum_j a_j k(x_j, x) - b over expansion points x_j (the representer form of a
    kernel model; eq. 13 of the ranking paper), with the predictions of :class:`LinearScorer`.

    For a ``precomputed`` kernel, ``points`` is None and ``X`` holds kernel values
    k(x_new, x_train) for every training example (columns in training order): the expansion
    points are the columns ``columns`` of the ``n_train`` training examples.
    """

    _coefficients = "a"

    @property
    def w(self) -> np.ndarray:
        """A kernel model has no weights over the input features: the error says what to use."""
        raise AttributeError(
            "this result's model is a KernelScorer, which has no weights w over the input "
            "features: it scores by its expansion over training points (result.scorer, its "
            "coefficients result.scorer.a); use result.decision_function(X) for scores.")

    def __init__(self, spec: Any, points: Any, a: np.ndarray, b: float,
                 columns: np.ndarray | None = None, n_train: int | None = None) -> None:
        self.spec = spec
        self.points = points
        self.a = np.asarray(a, dtype=np.float64)
        self.b = float(b)
        self.columns = columns
        self.n_train = n_train

    def decision_function(self, X: Any) -> np.ndarray:
        if self.points is None:
            X = features_of(X, self.n_train)
            return np.asarray(X[:, self.columns] @ self.a).ravel() - self.b
        X = features_of(X, self.points.shape[1])
        out = np.empty(X.shape[0])
        for start, stop, block in kernel_rows(self.spec, X, self.points):
            out[start:stop] = block @ self.a
        return out - self.b

    predict = LinearScorer.predict


class FeatureScorer(_RampScaled):
    """f(x) = <w, psi(x)> - b over an explicit feature map psi (``feature_map.apply``; random
    Fourier features of a gaussian kernel model), with the predictions of
    :class:`LinearScorer`."""

    def __init__(self, feature_map: Any, d: int, w: np.ndarray, b: float) -> None:
        self.feature_map = feature_map
        self.d = int(d)
        self.w = np.asarray(w, dtype=np.float64)
        self.b = float(b)

    def decision_function(self, X: Any) -> np.ndarray:
        return self.feature_map.apply(features_of(X, self.d)) @ self.w - self.b

    predict = LinearScorer.predict


def _plain(value: Any) -> bool:
    """A number, string, None or numeric array: an extra that :meth:`Result.to_json` keeps."""
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def _history_in_sense(history: list[dict[str, Any]], to_user: Callable[[float], float]
                      ) -> list[dict[str, Any]]:
    """Copies of the history's records with ``objective``, ``lower`` and ``upper`` carried by
    ``to_user`` (the bounds swapped where it decreases), as :meth:`Certificate.in_sense` maps
    the certificate; the other keys (a step's own values, violations) as recorded."""
    flips = to_user(1.0) < to_user(0.0)
    out = []
    for record in history:
        record = dict(record)
        mapped = {key: None if record[key] is None else float(to_user(record[key]))
                  for key in ("objective", "lower", "upper") if key in record}
        if flips and ("lower" in mapped or "upper" in mapped):
            mapped["lower"], mapped["upper"] = mapped.pop("upper", None), mapped.pop("lower", None)
        record.update(mapped)
        out.append(record)
    return out


class Result:
    """A solved problem: fitted model, status, objective, certificate and history.

    Attributes
    ----------
    objective : float
        The objective in the user's sense (maximization problems report the maximum).
    status : str
        "optimal", "infeasible" (proved), "infeasible_inaccurate" (none found, no proof),
        "iteration_limit", ... (``settings.STATUSES``)
    method : str
        The method that produced the result (``auto`` resolved).
    reasons : list of str
        Why that method was chosen.
    certificate : Certificate
        In the user's sense, as ``objective``: for a maximized objective ``lower_bound <=
        objective <= upper_bound`` bound the maximum (``solution.certificate`` is the
        canonical, minimized form's).
    history : list of dict
        One record per iteration; ``objective``, ``lower`` and ``upper`` in the user's sense as
        the certificate (``solution.history``: the solver's own records; ``callback`` events
        during the solve are those).
    solve_time : float
        Wall time of the whole ``solve`` call in seconds (every run of ``auto``'s ladder, the
        repairs and rounds included); ``solution.solve_time`` is the returned run's own clock.
    extras : dict
        Values specific to the problem's family, also read as attributes (``result.theta`` is
        ``result.extras["theta"]``):

        - ranking at the top: ``threshold`` (the training threshold t; the model predicts
          positive at s > t), ``alpha`` and ``beta`` (dual variables of (7)/(10); None for
          the primal methods);
        - robust losses (the DRO pattern): ``theta`` ((w, b), or w without an intercept),
          ``weights`` (P*(theta), the worst-case pmf on the training examples),
          ``robust_loss`` (R(theta) on the training data, without the regularizer), ``alpha``
          and ``lam`` (the inner problem's dual variables, eq. 5);
        - the generic chain: ``last_step`` (the last convex step, for ``verify``).
    """

    def __init__(
        self,
        problem: Any,
        method: str,
        solution: Solution,
        scorer: Any = None,
        objective: float | None = None,
        extras: Mapping[str, Any] | None = None,
        to_user: Callable[[float], float] | None = None,
    ) -> None:
        self.problem = problem
        self.method = method
        self.solution = solution
        self.status: str = solution.status
        self.objective: float = solution.objective if objective is None else objective
        # in the user's sense, as the objective (the solution's stays the canonical form's)
        self.certificate: Certificate = (solution.certificate if to_user is None
                                         else solution.certificate.in_sense(to_user))
        self.history: list[dict[str, Any]] = (solution.history if to_user is None
                                               else _history_in_sense(solution.history, to_user))
        self.solve_time: float = solution.solve_time
        self.reasons: list[str] = []
        self.scorer = scorer
        self.extras: dict[str, Any] = dict(extras or {})
        #: the training data's column names, read back by :meth:`from_json` (no problem)
        self.stored_feature_names: list[str] | None = None

    def __getattr__(self, name: str) -> Any:
        """A family's values (:attr:`extras`) as attributes: ``result.threshold``, ..."""
        extras = self.__dict__.get("extras")
        if not name.startswith("__") and extras is not None and name in extras:
            return extras[name]
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):  # a property that raised AttributeError (a kernel
            prop.fget(self)             # model's w): raised again, with its own message
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}"
            + (f"; this result's extras are {sorted(extras)}" if extras else ""))

    # ------------------------------------------------------------------ the fitted model
    @property
    def has_model(self) -> bool:
        return self.scorer is not None and self.status in SOLVED_STATUSES

    def _require_problem(self, what: str) -> None:
        """Refuse ``what`` (a report, metrics) of a Result loaded from JSON, which keeps the
        model but not the problem."""
        if self.problem is None:
            raise SpecError(f"this Result was loaded from JSON without its problem; it predicts "
                            f"but cannot {what} (pickle the Result to keep both).")

    def _require_model(self) -> Any:
        if not self.has_model:
            why = self.certificate.details.get("limit") if self.certificate else None
            if self.status in INFEASIBLE_STATUSES:  # the proof's or the search's account
                said = self.certificate.details.get("message") if self.certificate else None
                hint = (said[0].upper() + said[1:] if isinstance(said, str) and said else
                        "Relax the targets or check them with problem.describe().")
            elif isinstance(why, str) and why:  # a limit's own account of the missing point
                hint = why[0].upper() + why[1:].rstrip(".") + "."
            else:
                hint = "See result.certificate."
            raise SolverError(
                f"no model to use: the solve ended with status {self.status!r}. {hint}")
        return self.scorer

    @property
    def w(self) -> np.ndarray:
        """The weights of a linear model over the input features (a kernel model has none:
        it scores by its expansion, :class:`KernelScorer`; the AttributeError says so)."""
        return self._require_model().w

    @property
    def b(self) -> float:
        return self._require_model().b

    @property
    def ramp_width(self) -> float:
        """The width t of the ramp of the model's randomized rule and ramp rates
        (:mod:`ratecons.ramp`): 1 unless the chain returned the model at its loss's scale
        (:mod:`ratecons.reductions.score_scale`)."""
        return ramp_width(self._require_model())

    @property
    def feature_names(self) -> list[str] | None:
        """The training data's column names (None when unknown, or not one list for every
        training dataset): a DataFrame or Dataset scored by this result must have them, in
        this order."""
        if self.problem is None:  # loaded from JSON: the names it stored
            return self.stored_feature_names
        analysis = self.problem.analysis
        names = {tuple(d.feature_names) if d.feature_names else None
                 for d in (analysis.datasets if analysis is not None else [])}
        return list(names.pop()) if len(names) == 1 and None not in names else None

    def check_columns(self, X: Any) -> None:
        """Refuse a DataFrame or Dataset whose column names differ from the training data's
        (:func:`ratecons.data_columns.check_feature_names`)."""
        data = X.data if isinstance(X, Subset) else X
        labels = (X.columns if X.ndim == 2 else X.index) if is_pandas(X) else None
        # as scikit-learn: a frame (or one row, a Series) whose labels are not all strings
        # (a numpy array wrapped by pandas) has no names, and is read by position; unless its
        # labels, read as text, are the training names (a frame of integer labels trained
        # as '0'..'3' and given in the order 3, 2, 1, 0 was scored by position)
        texts = None if labels is None else [str(c) for c in labels]
        given = (data.feature_names if isinstance(data, Dataset)
                 else texts if texts is not None and (
                     all(isinstance(c, str) for c in labels)
                     or sorted(texts) == sorted(self.feature_names or ())) else None)
        check_feature_names(self.feature_names, given)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of the fitted model on a Dataset or feature matrix."""
        model = self._require_model()
        self.check_columns(X)
        return model.decision_function(X)

    def predict(self, X: Any, randomized: bool = False, seed: int | None = None) -> np.ndarray:
        """Predictions; ``randomized=True`` uses the randomized rule where the paper defines one."""
        model = self._require_model()
        self.check_columns(X)
        return model.predict(X, randomized=randomized, seed=seed)

    # ------------------------------------------------------------------ reporting
    def report(self, data: Dataset | Mapping[Dataset, Dataset] | None = None) -> Any:
        """Objective and every constraint against its target, on the training data or ``data``
        (a held-out Dataset, or a mapping {training dataset: held-out dataset}).

        One :class:`~ratecons.report.RateReport` for every problem kind (patterns with a
        report of their own override this): score models are reported through the composition
        analysis (:func:`ratecons.report.analysis_report`), minimax risk classifiers by
        :func:`ratecons.report.minimax_report`.
        """
        from .report import analysis_report, minimax_report

        self._require_problem("rebuild a report")
        for held_out in (data.values() if isinstance(data, Mapping) else [data]):
            if held_out is not None:
                self.check_columns(held_out)
        if self.problem.analysis is not None:
            return analysis_report(self, data)
        if isinstance(data, Mapping):
            raise SpecError("a minimax risk report takes one labelled rc.Dataset.")
        return minimax_report(self, data)

    def metrics(self, data: Dataset | None = None) -> dict[str, float]:
        """Metrics of the model on a labelled Dataset (default: the training data, as for
        :meth:`report`, where the problem has one), the same keys for every score-model
        problem: ``objective`` (exact, on ``data``, without the regularizer), ``error``,
        ``accuracy``, ``auc``, ``positive_rate``, then the objective's family keys
        (``tpr@K``, ``mean_loss``, ``robust_loss``); see :func:`ratecons.report.score_metrics`."""
        from .report import score_metrics

        self._require_problem("measure its objective")
        if self.problem.analysis is None:
            raise SpecError("metrics(data) is for score models; a minimax risk classifier "
                            "gives result.error(data) and result.report(data).")
        if data is None:
            datasets = self.problem.analysis.datasets
            if len(datasets) != 1:
                raise SpecError(
                    f"metrics() with no data needs a problem over one training dataset; this "
                    f"one has {len(datasets)} ({', '.join(d.name for d in datasets)}): pass "
                    "the one to measure, result.metrics(data).")
            data = datasets[0]
        self.check_columns(data)
        return score_metrics(self, data)

    def summary(self) -> dict[str, Any]:
        """Plain-data summary (status, method, objective, certificate, timings)."""
        return {
            "status": self.status,
            "method": self.method,
            "reasons": self.reasons,
            "objective": self.objective,
            "solve_time": self.solve_time,
            "solver": self.solution.solver,
            "certificate": self.certificate.to_dict(),
            # the method's own count (MM steps and repairs together, as max_iterations counts
            # them), where it keeps one; else its progress events
            "iterations": int(self.certificate.details.get("iterations", len(self.history))),
            "history": _jsonable(self.history),  # plain data: a step's arrays as lists
        }

    def to_json(self, **kwargs: Any) -> str:
        """JSON with the summary, the fitted parameters, the training report and the model.

        ``model`` is ``{"type": "linear", "w": [...], "b": ...}`` for linear scorers, and for
        other scorers (kernel expansions, minimax risk classifiers with their feature maps)
        ``{"type": "pickle", "base64": ...}``. :meth:`from_json` loads it back; a pickled
        model only with ``allow_pickle=True`` (unpickling runs code the file names).
        """
        out = self.summary()
        out.update(self._json_extras())
        out["model"] = self._model_json()
        out["feature_names"] = self.feature_names  # checked again after from_json
        return json.dumps(_jsonable(out), indent=kwargs.pop("indent", 2), **kwargs)

    def _model_json(self) -> dict[str, Any] | None:
        if not self.has_model:
            return None
        if isinstance(self.scorer, LinearScorer):
            return {"type": "linear", "w": self.scorer.w, "b": self.scorer.b,
                    "ramp_width": self.scorer.ramp_width}
        return {"type": "pickle",
                "base64": base64.b64encode(pickle.dumps(self.scorer)).decode("ascii")}

    @classmethod
    def from_json(cls, text: str, allow_pickle: bool = False) -> Result:
        """A Result from :meth:`to_json`: status, objective, certificate, history and the
        model, which predicts as the original did. The problem is not stored (``problem`` is
        None): pickle the Result to keep it.

        A linear model is plain data. Other models (kernel expansions, minimax risk feature
        maps) are stored pickled, and unpickling can run any code the file names: as
        ``numpy.load``, they load only with ``allow_pickle=True``, for files you trust."""
        check_flag(allow_pickle, "allow_pickle", "Result.from_json")
        try:
            data = _from_jsonable(json.loads(text))
        except (TypeError, ValueError) as exc:
            raise SpecError(f"Result.from_json needs the text of Result.to_json(): {exc}.") \
                from None
        missing = ({"status", "objective", "method"} - data.keys() if isinstance(data, dict)
                   else None)
        if missing is None or missing:
            raise SpecError("Result.from_json needs the text of Result.to_json(), a JSON object "
                            "with 'status', 'objective' and 'method'; "
                            + (f"got a JSON {type(data).__name__}." if missing is None
                               else f"this one has no {sorted(missing)}."))
        model = data.get("model")
        scorer: Any = None
        if isinstance(model, dict) and model.get("type") == "linear":
            scorer = LinearScorer(np.asarray(model["w"], dtype=np.float64), model["b"],
                                  model.get("ramp_width", 1.0))
        elif model is not None:
            if not allow_pickle:
                raise SpecError(
                    "this JSON's model is pickled (a kernel expansion or a minimax risk feature "
                    "map is not plain data), and unpickling runs any code the file names; if "
                    "you trust the file, pass allow_pickle=True.")
            scorer = pickle.loads(base64.b64decode(model["base64"]))
        from .solvers.tracker import from_record  # solvers load on first use

        solution = from_record(data)
        extras = {k: np.asarray(v, dtype=np.float64) if isinstance(v, list) else v
                  for k, v in data.get("extras", {}).items()}
        kind = getattr(scorer, "result_class", cls)  # a family's own Result (MRC: proba, error)
        kind = kind if isinstance(kind, type) and issubclass(kind, cls) else cls
        result = kind(None, data["method"], solution, scorer, extras=extras)
        result.reasons = list(data.get("reasons", []))
        result.stored_feature_names = data.get("feature_names")
        return result

    def _json_extras(self) -> dict[str, Any]:
        """The fitted w and b (linear scorers), the training report (score models) and the
        :attr:`extras` that are numbers or arrays (``extras``)."""
        out: dict[str, Any] = {}
        if isinstance(self.scorer, LinearScorer) and self.has_model:
            out.update({"w": self.scorer.w, "b": self.scorer.b})
        if self.has_model and self.problem is not None and self.problem.analysis is not None:
            out["report"] = self.report().to_dict()
        out["extras"] = {k: v for k, v in self.extras.items() if _plain(v)}
        return out

    def __repr__(self) -> str:
        return (
            f"Result(status={self.status!r}, method={self.method!r}, "
            f"objective={self.objective:.6g})"
        )

    def _repr_html_(self) -> str:
        from .display import result_html

        return result_html(self)
