"""One product X w per MM iterate: its history record (ramp and indicator rows) and the bound
masks of the next Problem 3 come from the same block scores, and equal the separate
evaluations they replace bitwise."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.canonical.rate_program import weighted_sum
from ratecons.patterns.rate_mm import SpecializedBound
from ratecons.reductions.to_cvxpy import solve_bound_cvxpy
from ratecons.solvers.mm import majorize_minimize
from tests.rate_bound_helpers import random_problem


def _rows_by_hand(program, w, b, kind):
    """alpha @ s_p + beta @ (1 - s_p), every block's scores from its own rows of X."""
    rates = []
    for blk in program.blocks:
        z = np.asarray(program.sources[blk.source][blk.index] @ w).ravel() - b
        v = (z > 0).astype(float) if kind == "indicator" else np.clip(0.5 + z, 0.0, 1.0)
        rates.append(weighted_sum(blk.weights, v))
    rates = np.array(rates)
    return program.alpha @ rates + program.beta @ (1.0 - rates)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), sparse=st.booleans(), scale=st.sampled_from([0.1, 1.0, 10.0]),
       b=st.floats(-2.0, 2.0))
def test_rows_and_masks_at_scores_equal_the_separate_evaluations(seed, sparse, scale, b):
    program = random_problem(seed % 50, n=120, sparse=sparse)
    w = np.random.default_rng(seed).normal(size=program.d) * scale
    scores = program.block_scores(w, b)
    for kind in ("ramp", "indicator"):
        got = program.rows_at_scores(scores, kind)
        np.testing.assert_array_equal(got, program.row_values(w, b, kind))
        np.testing.assert_allclose(got, _rows_by_hand(program, w, b, kind), rtol=0,
                                   atol=1e-14)
    masks = program.masks_at_block_scores(scores)
    for (mp, mn), (rp, rn), blk in zip(masks, program.bound_masks(w, b), program.blocks,
                                       strict=True):
        np.testing.assert_array_equal(mp, rp)
        np.testing.assert_array_equal(mn, rn)
        z = np.asarray(program.sources[blk.source][blk.index] @ w).ravel() - b
        np.testing.assert_array_equal(mp, z <= 0.5)
        np.testing.assert_array_equal(mn, z >= -0.5)


def _recording(solve_bound, program, calls):
    def solve(prog, masks, warm):
        calls.append((masks, warm))
        return solve_bound(prog, masks, warm)
    return solve


def _check_mm_path(program, solve_bound, start):
    calls = []
    out = majorize_minimize(program, _recording(solve_bound, program, calls), start,
                            max_iterations=8, tol=1e-9)
    assert len(calls) >= 2
    for masks, warm in calls:  # the masks are those of the anchor the bound is tight at
        for (mp, mn), (rp, rn) in zip(masks, program.bound_masks(warm["w"], warm["b"]),
                                      strict=True):
            np.testing.assert_array_equal(mp, rp)
            np.testing.assert_array_equal(mn, rn)
    # the record of iterate t is the exact evaluation at the anchor of bound t
    for record, (_, warm) in zip(out.history, calls, strict=False):
        w, b = warm["w"], warm["b"]
        np.testing.assert_array_equal(record["ramp_rows"], program.row_values(w, b, "ramp"))
        np.testing.assert_array_equal(record["indicator_rows"],
                                      program.row_values(w, b, "indicator"))
        assert record["objective"] == (float(program.row_values(w, b, "ramp")[0])
                                       + program.regularizer(w))
        assert record["objective"] == warm["objective"]
    return out


@pytest.mark.filterwarnings("ignore::ratecons.errors.ConvergenceWarning")
def test_mm_path_uses_the_anchor_masks_with_cvxpy_steps():
    program = random_problem(3, n=200)
    start = solve_bound_cvxpy(program, program.bound_masks())
    _check_mm_path(program, lambda p, m, w: solve_bound_cvxpy(p, m, w), start)


@pytest.mark.filterwarnings("ignore::ratecons.errors.ConvergenceWarning")
def test_mm_path_uses_the_anchor_masks_with_sdca_steps_on_sparse_data():
    program = random_problem(7, n=300, sparse=True)
    bound = SpecializedBound(seed=0, callback=None, epsilon=1e-6)
    start = bound(program, program.bound_masks(), None)
    out = _check_mm_path(program, bound, start)
    assert out.certificate.details["mm_steps"] >= 2
