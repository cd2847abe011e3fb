"""Passes over Dask-backed examples of the structured interior point (issue #33): on rows
whose every pass is a round trip over partitions, an iteration's evaluation, its Gram
product, the Gram product's column, the rows' Jacobian and the predictor's right-hand side
through P^T share one pass (:func:`ratecons.solvers.structured._evaluated`,
:meth:`ratecons.scans.DaskRows.gram_and_products`), so that an iteration costs 2 passes up
to the end of its predictor (5 before: evaluation, Gram product, the rows' P^T product, then
the predictor's P^T and P); and the step comes out as in memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from ratecons.scans import Rows, dask_passes  # noqa: E402
from ratecons.solvers import structured as S  # noqa: E402
from tests.solvers.test_direction_kernels import _adult_step  # noqa: E402
from tests.solvers.test_structured import _random_form  # noqa: E402


def _lazy(form):
    """The same step over its features as a (dense) Dask array in three partitions."""
    P = form.rows.P.toarray() if sp.issparse(form.rows.P) else form.rows.P
    return dataclasses.replace(form, rows=Rows(da.from_array(P, chunks=(P.shape[0] // 3 + 1,
                                                                          P.shape[1]))))


@pytest.mark.parametrize("m", [1, 2])
def test_an_iteration_makes_two_passes_up_to_its_predictor(monkeypatch, m):
    """From the end of one iteration's last direction to the end of the next iteration's
    predictor: one pass for the residuals, the Gram product, the rows' Jacobian and the
    predictor's right-hand side, one for the predictor's direction on the examples (P)."""
    form = _lazy(_random_form(3, 60, 4, m, l1=False, intercept=True))
    marks: list[tuple[str, int]] = []
    measures, direction = S._IPM.measures, S._IPM.direction

    def measured(self, *args):
        marks.append(("measures", dask_passes()))
        return measures(self, *args)

    def directed(self, *args):
        out = direction(self, *args)
        marks.append(("direction", dask_passes()))
        return out

    monkeypatch.setattr(S._IPM, "measures", measured)
    monkeypatch.setattr(S._IPM, "direction", directed)
    with dask.config.set(scheduler="synchronous"):
        answer = S.solve_structured(form)
    assert answer.status == "optimal" and answer.iterations >= 5
    spans = []  # passes from the previous iteration's last direction to this predictor's end
    for at, (kind, _) in enumerate(marks):
        if kind == "measures" and 0 < at < len(marks) - 1 and marks[at + 1][0] == "direction":
            spans.append(marks[at + 1][1] - marks[at - 1][1])
    assert len(spans) >= 4
    assert spans == [2] * len(spans)


def test_the_dask_step_is_the_step_in_memory():
    """A real step (Adult, the hinge relaxation of error rate + 80% rule): the same
    iterations and the same answer to rounding (the products are summed over the partitions,
    in another order)."""
    form = _adult_step()
    memory = S.solve_structured(form)
    with dask.config.set(scheduler="synchronous"):
        lazy = S.solve_structured(_lazy(form))
    assert memory.status == lazy.status == "optimal"
    assert abs(memory.iterations - lazy.iterations) <= 1
    np.testing.assert_allclose(lazy.w, memory.w, atol=1e-7)
    assert abs(lazy.objective - memory.objective) <= 1e-8 * max(1.0, abs(memory.objective))


def test_a_refined_direction_makes_four_passes():
    """A direction with its round of iterative refinement: P^T and P of the solve, one P^T
    for the operator's and the correction's right-hand sides together, P of the correction
    (five before: the operator's P^T product apart)."""
    form = _lazy(_random_form(3, 60, 4, 1, l1=False, intercept=True))
    ipm = S._IPM(form)
    with dask.config.set(scheduler="synchronous"):
        x = ipm.start()
        ev = ipm.evaluate(x)
        system = ipm.factor(x, ev)
        before = dask_passes()
        refined = ipm.direction(x, ev, system, {g: x.s[g] * x.lam[g] for g in x.s}, True)
        assert dask_passes() - before == 4
        plain = ipm.direction(x, ev, system, {g: x.s[g] * x.lam[g] for g in x.s}, False)
    np.testing.assert_allclose(refined.theta, plain.theta, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_the_gram_product_and_its_products_are_one_pass(shape):
    """DaskRows.gram_and_products: the Gram product, P^T c and P^T V of in memory, from one
    pass over the partitions (with or without the column; V one column or three)."""
    rng = np.random.default_rng(4)
    X, c = rng.normal(size=(50, 4)), rng.random(50)
    V = rng.normal(size=(50, *shape))
    memory, lazy = Rows(X), Rows(da.from_array(X, chunks=(17, 4)))
    with dask.config.set(scheduler="synchronous"):
        for column in (True, False):
            before = dask_passes()
            G, col, PV = lazy.gram_and_products(c, V, column=column)
            assert dask_passes() - before == 1
            np.testing.assert_allclose(G, memory.gram(c), atol=1e-12)
            assert (col is None) != column
            if column:
                np.testing.assert_allclose(col, X.T @ c, atol=1e-12)
            assert PV.shape == (4, *shape)
            np.testing.assert_allclose(PV, X.T @ V, atol=1e-12)


@pytest.mark.parametrize("client_sum_bytes", [64 * 2**20, 0])
def test_each_pass_is_the_in_memory_product_summed_on_the_client_or_on_the_workers(
        client_sum_bytes, monkeypatch):
    """Scores, P W, P^T v, P^T V, the Gram product and the scores' summary (range, mean, mean
    absolute value) over three partitions equal the in-memory ones, one pass each, whether
    the partitions' results are summed on the client (small results, the default) or in a
    tree on the workers (``CLIENT_SUM_BYTES`` = 0)."""
    from ratecons import scans

    monkeypatch.setattr(scans, "CLIENT_SUM_BYTES", client_sum_bytes)
    rng = np.random.default_rng(5)
    X, c, w = rng.normal(size=(50, 4)), rng.random(50), rng.normal(size=4)
    W, v, V = rng.normal(size=(4, 2)), rng.normal(size=50), rng.normal(size=(50, 3))
    memory, lazy = Rows(X), Rows(da.from_array(X, chunks=(17, 4)))
    with dask.config.set(scheduler="synchronous"):
        for got, want in ((lambda: lazy.scores(w, 0.5), X @ w - 0.5),
                          (lambda: lazy.apply(W), X @ W),
                          (lambda: lazy.transpose_apply(v), X.T @ v),
                          (lambda: lazy.transpose_apply(V), X.T @ V),
                          (lambda: lazy.gram(c), memory.gram(c)),
                          (lambda: np.array(lazy.score_summary(w, 0.5)),
                           np.array(memory.score_summary(w, 0.5)))):
            before = dask_passes()
            value = got()
            assert dask_passes() - before == 1
            assert value.shape == want.shape
            np.testing.assert_allclose(value, want, atol=1e-12)
