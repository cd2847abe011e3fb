"""Phi-divergence balls: the reweightings of a dataset within a phi-divergence of the uniform.

Ghosh & Squillante, section 1 (eq. 1 with P_b = U_N): the pmfs P on the N examples with
D_phi(P, U_N) = (1/N) sum_n phi(N p_n) <= rho. A ball is the uncertainty set of a robust loss
(:mod:`ratecons.expr.robust_loss`) and of a worst-case rate (:mod:`ratecons.expr.robust`); the
generators phi, their bounds and conjugates are in :mod:`ratecons.numerics.phi`.
"""

from __future__ import annotations

import numpy as np

from ..data import Dataset, Subset
from ..errors import DataError, SpecError, parameter_error
from ..numerics.phi import Phi, as_phi, assumption1_bound, degenerate_bound

__all__ = ["PhiDivergenceBall"]


class PhiDivergenceBall:
    """The set of reweightings P of ``data`` with D_phi(P, U_N) <= rho (eq. 1 with P_b = U_N).

    Parameters
    ----------
    data : Dataset
        Training examples with binary labels (0/1, -1/+1 or bool). Example weights are not
        supported: the base distribution is the uniform U_N.
    phi : {"chi2", "kl"} or Phi, default "chi2"
    rho : float, default 0.1
        Radius of the ball, rho > 0.
    strict : bool, default False
        With ``strict=True``, enforce the paper's Assumption 1 (Proposition 1): rho < rho_1(N,
        phi) (see :func:`~ratecons.numerics.phi.assumption1_bound`; 1/(N-1) for chi2), which
        guarantees that the worst-case pmf P* puts positive mass on every example. The bound
        shrinks like 1/N, so the radii of the paper's own experiments (rho = 0.1 with N ~
        10^4..10^6, section 4) violate it, and the default accepts them: P* may then put zero
        mass on low-loss examples; it is still unique whenever the losses are not all equal (phi
        strictly convex). Whether the assumption holds is recorded in ``assumption1_holds`` and
        shown by ``describe()``. In every case rho must stay below the degenerate limit (phi(N)
        + (N-1) phi(0)) / N at which the ball holds every pmf (an error).

    Attributes
    ----------
    n : int
    rho_bound : float
        rho_1(N, phi) of Assumption 1.
    """

    def __init__(
        self, data: Dataset | Subset, phi: str | Phi = "chi2", rho: float = 0.1,
        strict: bool = False
    ) -> None:
        if isinstance(data, Subset):
            #: the examples the ball reweights, as rows of the user's dataset
            self.support = data.require_nonempty("PhiDivergenceBall")
            data = data.data.take(data.index, name=data.name)
        elif isinstance(data, Dataset):
            self.support = data.all
        else:
            raise parameter_error("data", "PhiDivergenceBall", "an rc.Dataset or rc.Subset",
                                  type(data).__name__)
        if data.y is not None:  # unlabelled data are fine for worst-case coverage rates
            data.require_labels("PhiDivergenceBall (robust classification)", binary=True)
        if data.weights is not None:
            raise DataError(
                f"dataset {data.name!r} has example weights, but the phi-divergence ball is "
                "centred at the uniform distribution U_N (section 1); drop the weights or "
                "replicate examples instead."
            )
        self.data = data
        self.phi = as_phi(phi)
        try:
            rho_f = float(rho)
        except (TypeError, ValueError):
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho) from None
        if not np.isfinite(rho_f) or rho_f <= 0:
            raise parameter_error("rho", "PhiDivergenceBall", "a positive float", rho)
        if not isinstance(strict, (bool, np.bool_)):
            raise parameter_error("strict", "PhiDivergenceBall", "a bool", strict)
        self.rho = rho_f
        self.strict = bool(strict)
        self.rho_bound = assumption1_bound(data.n, self.phi)
        self.rho_degenerate = degenerate_bound(data.n, self.phi)
        self.assumption1_holds = rho_f < self.rho_bound
        if self.strict and not rho_f < self.rho_bound:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_bound:.6g}, the "
                f"bound rho_1 = (1 - 1/N) phi(N/(N-1)) + phi(0)/N of Assumption 1 "
                f"(Proposition 1) for N={data.n} and phi={self.phi.name!r}. Got {rho!r} "
                "instead. Use a smaller rho, or strict=False (the default) to allow worst-case "
                "weights of zero (as the paper's experiments with rho=0.1 do)."
            )
        if not rho_f < self.rho_degenerate:
            raise SpecError(
                f"The 'rho' parameter of PhiDivergenceBall must be < {self.rho_degenerate:.6g} "
                f"(for N={data.n}, phi={self.phi.name!r}): at or above it the ball contains "
                "every pmf on the data, the robust loss is the maximum loss and the problem is "
                f"degenerate. Got {rho!r} instead."
            )

    @property
    def n(self) -> int:
        return self.data.n

    def __repr__(self) -> str:
        return (f"PhiDivergenceBall({self.data.name!r}, phi={self.phi.name!r}, rho={self.rho:g}, "
                f"N={self.n})")
