"""MomentSet, feature maps and the minimax-risk objective: definitions and input errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ratecons as rc
from ratecons.errors import DataError, LabelError, SpecError
from tests.mrc_helpers import random_dataset


def explicit_phi(U: rc.MomentSet) -> np.ndarray:
    """Phi(x_i, y_i) = e_{y_i} kron psi(x_i), built row by row from the definition."""
    K, p = U.n_classes, U.p
    out = np.zeros((U.n, K * p))
    for i in range(U.n):
        out[i] = np.kron(np.eye(K)[U.y[i]], U.psi[i])
    return out


@settings(max_examples=25, deadline=None)
@given(n=st.integers(5, 40), d=st.integers(1, 4), K=st.integers(2, 5),
       lambda0=st.floats(0.0, 2.0), seed=st.integers(0, 10_000))
def test_tau_and_lambda_match_the_thesis_definition(n, d, K, lambda0, seed):
    data = random_dataset(max(n, K), d, K, seed)
    U = rc.MomentSet(data, lambda0=lambda0)
    Phi = explicit_phi(U)
    np.testing.assert_allclose(U.tau, Phi.mean(axis=0), atol=1e-12)
    # lambda_j = lambda0 sqrt(sum_i (Phi_j - tau_j)^2) / n = lambda0 * std_j / sqrt(n)
    expected = lambda0 * Phi.std(axis=0) / np.sqrt(U.n)
    np.testing.assert_allclose(U.lam, expected, atol=1e-12)
    # layout contract: mu.reshape(K, p)[y] @ psi(x) == Phi(x, y)^T mu
    mu = np.random.default_rng(seed).normal(size=U.m)
    np.testing.assert_allclose((U.psi * mu.reshape(K, U.p)[U.y]).sum(axis=1), Phi @ mu)


def test_linear_features_standardize_with_training_statistics():
    data = random_dataset(50, 3, 2, 0)
    U = rc.MomentSet(data, features=rc.features.Linear())
    assert U.p == 4 and np.all(U.psi[:, 0] == 1.0)
    np.testing.assert_allclose(U.psi[:, 1:].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(U.psi[:, 1:].std(axis=0), 1.0)
    X_new = np.asarray(data.X[:3]) + 1.0
    z = (X_new - np.asarray(data.X).mean(0)) / np.asarray(data.X).std(0)
    np.testing.assert_allclose(U.transform(X_new)[:, 1:], z)
    raw = rc.MomentSet(data, features=rc.features.Linear(intercept=False), standardize=False)
    np.testing.assert_allclose(raw.psi, data.X)


def test_random_features_are_seeded_and_bounded():
    data = random_dataset(60, 4, 3, 1)
    a = rc.MomentSet(data, features=rc.features.RandomFourier(20, seed=3))
    b = rc.MomentSet(data, features=rc.features.RandomFourier(20, seed=3))
    c = rc.MomentSet(data, features=rc.features.RandomFourier(20, seed=4))
    np.testing.assert_array_equal(a.psi, b.psi)
    assert not np.allclose(a.psi, c.psi)
    assert a.p == 21 and np.all(np.abs(a.psi) <= 1.0)
    r = rc.MomentSet(data, features=rc.features.RandomReLU(15, seed=0))
    assert r.p == 16 and np.all(r.psi >= 0) and np.all(r.psi[:, 0] == 1)
    f = rc.MomentSet(data, features=lambda Z: np.hstack([np.ones((len(Z), 1)), Z**2]))
    assert f.p == 5
    np.testing.assert_allclose(f.psi[:, 1:], ((np.asarray(data.X) - np.asarray(data.X).mean(0))
                                              / np.asarray(data.X).std(0)) ** 2)


def test_user_tau_and_lambda_and_label_values_kept():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.repeat([3, 5, 9], 10)
    U = rc.MomentSet(rc.Dataset(X, y), tau=np.zeros(9), lambda_=np.full(9, 0.1))
    assert U.classes.tolist() == [3, 5, 9] and U.y.tolist() == [0] * 10 + [1] * 10 + [2] * 10
    assert np.all(U.tau == 0) and np.all(U.lam == 0.1)
    assert U.codes([9, 3]).tolist() == [2, 0]
    with pytest.raises(LabelError, match="not among the training classes"):
        U.codes([4])


def test_bad_inputs_raise_clear_errors():
    data = random_dataset(20, 2, 3, 0)
    with pytest.raises(SpecError, match="'lambda0' parameter of MomentSet"):
        rc.MomentSet(data, lambda0=-1)
    with pytest.raises(SpecError, match="'features' parameter of MomentSet"):
        rc.MomentSet(data, features="poly")
    with pytest.raises(DataError, match="tau must have shape"):
        rc.MomentSet(data, tau=np.zeros(4))
    with pytest.raises(DataError, match="NaN"):
        rc.MomentSet(data, lambda_=np.full(9, np.nan))
    with pytest.raises(SpecError, match="entries >= 0"):
        rc.MomentSet(data, lambda_=np.full(9, -1.0))
    with pytest.raises(LabelError, match="needs labels"):
        rc.MomentSet(rc.Dataset(np.ones((5, 2))))
    with pytest.raises(LabelError, match="at least 2 classes"):
        rc.MomentSet(rc.Dataset(np.random.default_rng(0).normal(size=(5, 2)), np.full(5, 4)))
    with pytest.raises(SpecError, match="'n_components' parameter of RandomFourier"):
        rc.features.RandomFourier(0)
    U = rc.MomentSet(data)
    with pytest.raises(SpecError, match="'loss' parameter of minimax_risk"):
        rc.minimax_risk(U, loss="hinge")
    with pytest.raises(SpecError, match="'U' parameter of minimax_risk"):
        rc.minimax_risk(data)
    with pytest.raises(DataError, match="fitted on inputs with 2 columns"):
        U.transform(np.ones((3, 5)))
    with pytest.raises(DataError, match="NaN"):
        U.transform(np.full((3, 2), np.nan))
    with pytest.raises(SpecError, match="minimized"):
        rc.Problem(maximize=rc.minimax_risk(U))
    with pytest.raises(DataError, match="callable must return"):
        rc.MomentSet(data, features=lambda Z: Z[:3])
