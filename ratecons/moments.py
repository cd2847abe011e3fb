"""Moment uncertainty sets of minimax risk classifiers and the minimax-risk objective.

The uncertainty set (Bondugula et al., eq. 2; thesis eq. 2.1) is

    U = { p : |E_p Phi(x, y) - tau| <= lambda }

with Phi(x, y) = e_y kron psi(x), the mean vector tau = (1/n) sum_i Phi(x_i, y_i) and the
confidence vector (thesis, definition after eq. 2.1, scaled by lambda0)

    lambda_j = lambda0 * sqrt( sum_i (Phi_j(x_i, y_i) - tau_j)^2 ) / n,

that is lambda0 times the population standard deviation of component j over sqrt(n). The default
lambda0 = 0.3. With ``fixed_marginals=True`` the set also fixes the instances' marginal to the
empirical one (thesis eq. 2.4).

For binary data ``one_hot=False`` gives MRCpy's compact map Phi(x, 0) = psi(x),
Phi(x, 1) = -psi(x) (m = p instead of 2p; label map E = [[1], [-1]] of
:mod:`ratecons.canonical.mrc`), with tau and lambda computed by the same formulas from it. Its
minimax risk differs from the one-hot one (the sets U differ); it is the number MRCpy reports.

>>> U = rc.MomentSet(train, features=rc.features.RandomFourier(200), lambda0=0.3)
>>> result = rc.Problem(minimize=rc.minimax_risk(U)).solve()
>>> result.objective          # R*, the worst-case 0-1 error over U
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dask_methods import refuse_dask
from .data import Dataset, Subset
from .errors import DataError, LabelError, SpecError, check_flag, parameter_error
from .expr.atom import Term
from .features import FittedFeatures, as_feature_map
from .moment_sums import moment_pass, wrong_predictions
from .numerics.moment_scores import label_scores
from .shapes import PsiShape

__all__ = ["MinimaxRisk", "MomentSet", "minimax_risk"]


class MomentSet(PsiShape):
    """The moment uncertainty set U of eq. (2) built from labelled training data.

    Parameters
    ----------
    data : Dataset or Subset
        Labelled training data (binary or multiclass integer codes).
    features : "linear", a :mod:`ratecons.features` map, or a callable
        psi; Phi(x, y) = e_y kron psi(x).
    lambda0 : float, default 0.3
        Scale of the confidence vector lambda (see the module docstring).
    standardize : bool, default True
        Z-score the inputs (training mean and deviation) before psi.
    tau, lambda_ : array of shape (m,), optional
        User-given estimates replacing the sample ones.
    one_hot : bool, default True
        False (binary data only): the compact map Phi(x, y) = (1 - 2y) psi(x) of MRCpy.

    Attributes
    ----------
    classes : ndarray
        Label values; class code c (0..n_classes-1) stands for ``classes[c]``.
    y : ndarray of int
        Training labels as codes 0..n_classes-1.
    psi : ndarray, shape (n, p)
        psi of the training instances (intercept column included when the map has one).
    label_map : ndarray of shape (n_classes, L) or None
        E of Phi(x, y) = E[y] kron psi(x): None for one-hot, [[1], [-1]] for the compact map.
    tau, lam : ndarray, shape (m,) with m = L p
        Mean and confidence vectors, laid out so that ``mu.reshape(L, p)`` has one row per
        block (one-hot: ``mu.reshape(n_classes, p)[y] @ psi(x)`` is Phi(x, y)^T mu).
    """

    def __init__(
        self,
        data: Dataset | Subset,
        features: Any = "linear",
        lambda0: float = 0.3,
        standardize: bool = True,
        tau: Any = None,
        lambda_: Any = None,
        one_hot: bool = True,
    ) -> None:
        in_dask = getattr(data.data if isinstance(data, Subset) else data, "in_dask", False)
        if in_dask and isinstance(data, Subset) and data.n != data.data.n:
            refuse_dask(data.data, "rc.MomentSet over a Subset (rows gathered by index)")
        if in_dask and isinstance(data, Subset):
            data = data.data
        if isinstance(data, Subset):
            data = data.data.take(data.index, name=data.name)
        if not isinstance(data, Dataset):
            raise SpecError(
                f"MomentSet is built from a labelled rc.Dataset; got {type(data).__name__}."
            )
        labels = data.require_labels("MomentSet")
        if not (isinstance(lambda0, (int, float, np.floating, np.integer))
                and np.isfinite(lambda0) and lambda0 >= 0):
            raise parameter_error("lambda0", "MomentSet", "a finite float >= 0", lambda0)
        check_flag(one_hot, "one_hot", "MomentSet")
        if data.n < 2:
            raise DataError(f"MomentSet needs at least 2 training examples; got {data.n}.")
        if data.weights is not None:
            raise DataError(
                f"dataset {data.name!r} has example weights, but the moment set is built from "
                "the empirical distribution of its examples (tau and lambda count them); drop "
                "the weights, or repeat each example k times for an integer weight k.")
        self.data_name = data.name
        self.lambda0 = float(lambda0)
        if data.is_binary:
            self.classes = np.array([0, 1])
        else:
            self.classes = np.unique(labels)
        present = np.unique(labels)
        if present.size < 2:
            raise LabelError(
                f"MomentSet needs examples of at least 2 classes; every label of dataset "
                f"{data.name!r} is {present.tolist()[0]!r}, so any rule predicting it has zero "
                "risk and there is nothing to learn. Check the labels (or the split)."
            )
        if not one_hot and self.classes.size != 2:
            raise SpecError(
                f"one_hot=False (MRCpy's compact map Phi(x, 1) = -Phi(x, 0)) is for binary data; "
                f"dataset {data.name!r} has {self.classes.size} classes. Use one_hot=True."
            )
        self.one_hot = bool(one_hot)
        self.label_map = None if one_hot else np.array([[1.0], [-1.0]])
        self.y = np.searchsorted(self.classes, labels).astype(np.int64)
        #: the Dask-backed training data (None in memory, where psi holds all the set needs)
        self.data: Dataset | None = data if in_dask else None
        if in_dask:  # psi stays in Dask partitions; the sums are reductions over them
            from .dask_moments import DaskFeatures, PartitionedPsi

            self.features = DaskFeatures(as_feature_map(features), data.X, standardize)
            self.psi = PartitionedPsi(self.features.train_psi, self.y)
            sums = self.psi.moment_sums
        else:
            self.features = FittedFeatures(as_feature_map(features), data.X, standardize)
            self.psi = self.features.train_psi

            def sums(K: int, E: np.ndarray | None, tau: np.ndarray | None = None) -> np.ndarray:
                return moment_pass(self.psi, self.y, K, E, tau)

        n = self.psi.shape[0]
        tau_blocks = sums(self.n_classes, self.label_map) / n
        # sum_i (Phi_j(x_i, y_i) - tau_j)^2; one-hot: for j in block c, examples of class c
        # contribute (psi_ik - tau_j)^2 (the pass), the others (0 - tau_j)^2.
        sq = sums(self.n_classes, self.label_map, tau_blocks)
        if self.label_map is None:
            counts = np.bincount(self.y, minlength=self.n_classes)
            sq += (n - counts)[:, None] * tau_blocks**2
        self.sample_tau = tau_blocks.ravel()
        self.sample_lam = self.lambda0 * np.sqrt(sq).ravel() / n
        self.tau = self._user_vector(tau, "tau", self.sample_tau)
        self.lam = self._user_vector(lambda_, "lambda_", self.sample_lam)
        if np.any(self.lam < 0):
            raise parameter_error("lambda_", "MomentSet", "a vector with entries >= 0",
                                  "negative entries")

    def _user_vector(self, value: Any, name: str, default: np.ndarray) -> np.ndarray:
        if value is None:
            return default
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != default.shape:
            raise DataError(
                f"MomentSet: {name} must have shape {default.shape} (L * p = "
                f"{self.n_blocks} * {self.p}); got {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise DataError(f"MomentSet: {name} has NaN or infinite entries.")
        return arr

    @property
    def n_classes(self) -> int:
        return int(self.classes.size)

    def scores(self, mu: np.ndarray, psi: np.ndarray) -> np.ndarray:
        """Phi(x, y)^T mu for every row of ``psi`` and label code y: shape (n, n_classes)."""
        return label_scores(psi, mu, self.n_classes, self.label_map)

    def transform(self, X: Any) -> np.ndarray:
        """psi of new inputs (the training z-scoring and random weights)."""
        if isinstance(X, (Dataset, Subset)):
            refuse_dask(X.data if isinstance(X, Subset) else X,
                        "psi of new inputs (MomentSet.transform)")
            X = X.X
        return self.features(X)

    def training_error(self, mu: np.ndarray) -> float:
        """0-1 error of the argmax rule of ``mu`` on the training instances (one pass over
        the partitions on Dask data)."""
        if self.data is not None:
            wrong = self.psi.reduce(wrong_predictions, mu, self.n_classes, self.label_map)
            return float(np.sum(wrong) / self.n)
        return float(np.mean(np.argmax(self.scores(mu, self.psi), axis=1) != self.y))

    def codes(self, labels: Any) -> np.ndarray:
        """Class codes 0..n_classes-1 of label values; unknown labels are an error."""
        labels = np.asarray(labels)
        codes = np.searchsorted(self.classes, labels)
        codes = np.clip(codes, 0, self.n_classes - 1)
        bad = self.classes[codes] != labels
        if np.any(bad):
            raise LabelError(
                f"labels {np.unique(labels[bad])[:5].tolist()} were not among the training "
                f"classes {self.classes.tolist()[:10]}."
            )
        return codes.astype(np.int64)

    def describe(self) -> str:
        return (
            f"MomentSet on {self.data_name!r}: n={self.n}, {self.n_classes} classes, psi: "
            f"{self.features.describe()}, m={self.m}"
            f"{'' if self.one_hot else ' (compact binary map)'}, lambda0={self.lambda0}"
        )

    def __repr__(self) -> str:
        return f"MomentSet({self.data_name!r}, n={self.n}, classes={self.n_classes}, m={self.m})"


class MinimaxRisk(Term):
    """Objective: the worst-case expected loss over a :class:`MomentSet` (to minimize).

    A term of the one expression algebra that stands alone: it is the LP (4) over the moment
    set's coefficients with its own randomized classifier, not a function of a score model, so
    it is minimized by itself and never added to, scaled or bounded
    (:meth:`refuse_combination`).
    """

    curvature = "convex"
    kind = "minimax risk"
    combinable = False
    scores_model = False

    def __init__(self, U: MomentSet, loss: str, fixed_marginals: bool) -> None:
        self.U = U
        self.loss = loss
        self.fixed_marginals = fixed_marginals

    @property
    def name(self) -> str:
        return f"minimax_risk({self.U.data_name}, loss={self.loss!r})"

    def refuse_combination(self) -> None:
        raise SpecError(
            f"{self.name} is an objective of its own (the LP (4) over the moment set's "
            "coefficients, not a score model): minimize it alone. Put expectation constraints "
            "in rc.MomentSet(...), or use a rate objective over a rc.LinearModel to combine "
            "terms.")

    def describe(self) -> str:
        kind = "fixed marginals (2.5)" if self.fixed_marginals else "general (2.2), LP (4)"
        return f"minimax {self.loss} risk over {self.U.describe()}; {kind}"

    def __repr__(self) -> str:
        return (f"minimax_risk({self.U!r}, loss={self.loss!r}, "
                f"fixed_marginals={self.fixed_marginals})")


def minimax_risk(U: MomentSet, loss: str = "0-1", fixed_marginals: bool = False) -> MinimaxRisk:
    """The minimax risk R* = min_h max_{p in U} E_p loss(h, (x, y)) (eq. 1), as an objective.

    Parameters
    ----------
    U : MomentSet
    loss : {"0-1"}
        Only the 0-1 loss, whose learning problem is the LP (4).
    fixed_marginals : bool, default False
        Use the set V of thesis eq. (2.4) (instance marginal fixed to the empirical one), whose
        learning problem is (2.5).
    """
    if not isinstance(U, MomentSet):
        raise parameter_error("U", "minimax_risk", "an rc.MomentSet", type(U).__name__)
    if loss != "0-1":
        raise parameter_error("loss", "minimax_risk", "'0-1'", loss)
    check_flag(fixed_marginals, "fixed_marginals", "minimax_risk")
    return MinimaxRisk(U, loss, bool(fixed_marginals))
