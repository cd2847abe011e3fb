"""Spec, canonical form, kernels and wiring of the ranking-at-the-top family."""

from __future__ import annotations

import numpy as np
import pytest

import ratecons as rc
from ratecons.kernels import KernelSpec, kernel_block, kernel_rows


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0.5).astype(int)
    return rc.Dataset(X, y, name="toy")


def test_formulation_resolution(data):
    assert rc.tpr_at_top(data, k=1).formulation == "toppush"
    assert rc.tpr_at_top(data, k=5).formulation == "toppushk"
    assert rc.tpr_at_top(data, k=5, among="all").formulation == "topmeank"
    q = rc.tpr_at_quantile(data, tau=0.1)
    n_neg = int(np.sum(data.y == 0))
    assert q.formulation == "tau-fpl" and q.k == int(np.ceil(0.1 * n_neg))
    assert rc.tpr_at_quantile(data, 0.1, among="all").formulation == "topmeank"
    assert rc.tpr_at_quantile(data, 0.1, formulation="pat&mat").formulation == "pat&mat-np"
    assert rc.tpr_at_quantile(data, 0.1, among="all",
                              formulation="pat&mat").formulation == "pat&mat"


def test_parameter_errors(data):
    with pytest.raises(rc.SpecError, match=r"The 'k' parameter of tpr_at_top must be an int >= 1. "
                                           r"Got 0 instead."):
        rc.tpr_at_top(data, k=0)
    with pytest.raises(rc.SpecError, match="'k' parameter of tpr_at_top"):
        rc.tpr_at_top(data, k=2.5)
    with pytest.raises(rc.SpecError, match="'k' parameter of tpr_at_top"):
        rc.tpr_at_top(data, k=10_000)
    with pytest.raises(rc.SpecError, match="'tau' parameter of tpr_at_quantile"):
        rc.tpr_at_quantile(data, tau=0.0)
    with pytest.raises(rc.SpecError, match="'among' parameter"):
        rc.tpr_at_top(data, among="positives")
    with pytest.raises(rc.SpecError, match="'surrogate' parameter"):
        rc.tpr_at_top(data, surrogate="logistic")
    with pytest.raises(rc.SpecError, match="'theta' parameter"):
        rc.tpr_at_quantile(data, theta=-1.0, formulation="pat&mat")
    with pytest.raises(rc.SpecError, match="among='all'"):
        rc.tpr_at_top(data, k=3, formulation="topmeank")
    with pytest.raises(rc.SpecError, match="pat&mat-np"):
        rc.tpr_at_quantile(data, among="all", formulation="pat&mat-np")
    with pytest.raises(rc.SpecError, match="'formulation' parameter"):
        rc.tpr_at_quantile(data, formulation="grill")


def test_label_errors():
    X = np.zeros((6, 2))
    with pytest.raises(rc.LabelError, match="binary labels"):
        rc.tpr_at_top(rc.Dataset(X, [0, 1, 2, 0, 1, 2]), k=1)
    with pytest.raises(rc.LabelError, match="needs labels"):
        rc.tpr_at_top(rc.Dataset(X), k=1)
    with pytest.raises(rc.DataError, match="positive examples"):
        rc.tpr_at_top(rc.Dataset(X, [0] * 6), k=1)
    with pytest.raises(rc.EmptySubsetError):
        rc.tpr_at_top(rc.Dataset(X, [1] * 6), k=1)
    with pytest.raises(rc.SpecError, match="rc.Dataset"):
        rc.tpr_at_top(X, k=1)


def test_problem_validation(data):
    obj = rc.tpr_at_top(data, k=3)
    with pytest.raises(rc.SpecError, match="maximize"):
        rc.Problem(minimize=obj)
    # outside the ranking pattern (no regularizer; a kernel without l2): the generic chain
    # takes the problem, and plan() says why the pattern declined
    for model, why in ((rc.LinearModel(l2=0.0), "needs a regularizer"),
                       (rc.KernelModel(l2=0.0), "positive l2")):
        plan = rc.Problem(maximize=obj, model=model).plan()
        assert plan.pattern == "composed (generic chain)" and why in plan.reasons[0]
    assert rc.Problem(maximize=obj, model=rc.LinearModel(l2=1e-2, l1=1e-3)).plan().method \
        == "primal_ipm"
    with pytest.raises(rc.DataError, match="n x n"):
        rc.Problem(maximize=obj, model=rc.KernelModel(kernel="precomputed"))
    p = rc.Problem(maximize=obj, model=rc.LinearModel(l2=1e-2))
    with pytest.raises(rc.UnknownOptionError, match="tol"):
        p.solve("dual_ca", tolerance=1e-3)
    with pytest.raises(rc.UnknownOptionError, match="unknown method"):
        p.solve("sdca")


def test_canonical_form_and_plan(data):
    p = rc.Problem(maximize=rc.tpr_at_top(data, k=3), model=rc.KernelModel(l2=1e-2))
    form = p.canonical()
    n_pos = int(data.y.sum())
    assert form.n_pos == n_pos and form.n_tilde == data.n - n_pos and form.K == 3
    assert form.C == pytest.approx(1.0 / (1e-2 * n_pos))
    assert form.kernel.name == "gaussian" and form.kernel.gamma == pytest.approx(1 / data.d)
    text = p.describe()
    assert "TopPushK" in text and "K=3" in text and "C=" in text
    plan = p.plan()
    assert plan.method == "dual_ca" and "cvxpy" in plan.available
    assert any("Props 3.7-3.9" in r for r in plan.reasons)
    pm = rc.Problem(maximize=rc.tpr_at_quantile(data, 0.1, formulation="pat&mat"),
                    model=rc.KernelModel(l2=1e-2))
    assert pm.plan().method == "dual_qp"  # small kernel Pat&Mat problems: the exact dual QP
    lin = rc.Problem(maximize=rc.tpr_at_quantile(data, 0.1, formulation="pat&mat"),
                     model=rc.LinearModel(l2=1e-2))
    assert lin.plan().method == "primal_ipm"  # linear models: the primal interior point
    assert pm.plan("dual_ca").method == "dual_ca"


@pytest.mark.parametrize("name", ["linear", "gaussian", "polynomial"])
def test_kernel_blocks(name):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    spec = KernelSpec(name, gamma=0.7, degree=2, coef0=0.5)
    K = kernel_block(spec, A, B)
    i, j = 3, 2
    dot = A[i] @ B[j]
    expected = {"linear": dot, "gaussian": np.exp(-0.7 * np.sum((A[i] - B[j]) ** 2)),
                "polynomial": (0.7 * dot + 0.5) ** 2}[name]
    assert K[i, j] == pytest.approx(expected)
    rows = np.vstack([blk for _, _, blk in kernel_rows(spec, A, B, block_bytes=8 * 5 * 2)])
    np.testing.assert_allclose(rows, K)


def test_signed_gram_matches_eq14(data):
    p = rc.Problem(maximize=rc.tpr_at_top(data, k=2), model=rc.LinearModel(l2=1e-2))
    form = p.canonical()
    Z = np.vstack([form.X_pos, -form.X_tilde])
    np.testing.assert_allclose(form.signed_gram(), Z @ Z.T, atol=1e-12)
    np.testing.assert_allclose(form.diagonal(), np.einsum("ij,ij->i", Z, Z))


@pytest.mark.parametrize("option, value", [("working_set_size", 0), ("working_set_size", 2.5),
                                           ("selection", "best"), ("tol", 0.0)])
def test_dual_ca_option_errors(data, option, value):
    problem = rc.Problem(maximize=rc.tpr_at_top(data, k=3), model=rc.LinearModel(l2=1e-2))
    with pytest.raises(rc.SpecError, match=f"The '{option}' parameter of dual_ca"):
        problem.solve("dual_ca", **{option: value})
