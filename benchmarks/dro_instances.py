"""The instances of the robust-learning benchmarks (:mod:`benchmarks.dro` and
:mod:`benchmarks.dro_reference`): synthetic and standardized real data, one grid point, and
SciPy's L-BFGS-B on the exact objective F (the floor of part B)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import ratecons as rc

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@dataclass
class Instance:
    """One grid point: data and the DRO parameters."""

    data: rc.Dataset
    phi: str
    rho: float
    l2: float
    loss: str = "logistic"
    intercept: bool = True

    @property
    def label(self) -> str:
        return (f"{self.data.name} N={self.data.n} d={self.data.d} {self.phi} rho={self.rho:g} "
                f"l2={self.l2:g} {self.loss}" + ("" if self.intercept else " no-intercept"))

    def problem(self) -> rc.Problem:
        ball = rc.PhiDivergenceBall(self.data, phi=self.phi, rho=self.rho, strict=False)
        return rc.Problem(minimize=rc.robust_loss(ball, loss=self.loss),
                          model=rc.LinearModel(l2=self.l2, fit_intercept=self.intercept))


def synthetic(n: int, d: int, seed: int = 0) -> rc.Dataset:
    """x ~ N(0, I_d), labels from a logistic model with a random direction."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = 3.0 * rng.standard_normal(d) / np.sqrt(d)
    y = (X @ w + rng.logistic(size=n) > 0).astype(np.int8)
    return rc.Dataset(X, y, name=f"synthetic{seed}")


def real(name: str, rows: int | None = None, seed: int = 0) -> rc.Dataset | None:
    """Standardized features of /work/shared/data/<name>.csv (None if missing); class 0 against
    the rest when there are more than two classes; a seeded sample of ``rows`` rows."""
    path = DATA / f"{name}.csv"
    if not path.exists():
        return None
    data = rc.datasets.load_csv(path)
    X = np.asarray(data.X, dtype=np.float64)
    y = np.asarray(data.y)
    if np.unique(y).size > 2:
        y = (y == 0).astype(np.int8)
    if rows is not None and rows < X.shape[0]:
        idx = np.sort(np.random.default_rng(seed).choice(X.shape[0], rows, replace=False))
        X, y = X[idx], y[idx]
    std = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return rc.Dataset(X, y, name=name if rows is None else f"{name}{rows}")


def scipy_lbfgs(inst: Instance) -> tuple[float, float]:
    """SciPy's L-BFGS-B at its defaults on the exact objective F (the IM procedure's value and
    gradient (6), ``solvers.dro.evaluate``) from theta = 0, no certificate: the speed a plain
    quasi-Newton run on F reaches. Returns (F at its end, seconds)."""
    from scipy.optimize import minimize

    from ratecons.solvers.dro import evaluate

    form = inst.problem().canonical()

    def value_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        ev = evaluate(form, theta)
        return ev.value, ev.grad

    start = time.perf_counter()
    res = minimize(value_grad, np.zeros(form.dim), jac=True, method="L-BFGS-B")
    return float(res.fun), time.perf_counter() - start
