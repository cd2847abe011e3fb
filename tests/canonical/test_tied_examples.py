"""Ties of the bounds of eq. (4) at an anchor (:func:`hinge_ties`): an example whose anchor
score is at the switch point of a bound it has (z' = 1/2 for u+, -1/2 for u-), where both
bounds are tight and the step solver's rounding picks one (issue #29); which bounds an example
has comes from the rate program (:meth:`RateProgram.bound_sides`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ratecons.canonical.rate_program import TIE_TOL, RateBlock, RateProgram, hinge_ties


def test_a_tie_is_a_score_at_the_switch_point_of_a_bound_the_example_has():
    off = 10 * TIE_TOL
    z = np.array([0.5 + 0.5 * TIE_TOL, -0.5, -0.5 - 0.5 * TIE_TOL, 0.5 - off, 0.5, -0.5 + off])
    upper = np.array([True, True, True, True, False, False])
    lower = np.array([False, False, True, True, True, True])
    # 0: u+ at 1/2; 1: u+ only, at the kink of its hinge (not its switch point); 2: u- at -1/2;
    # 3: both, off both switch points; 4: u- only, at its kink; 5: u- off its switch point
    np.testing.assert_array_equal(hinge_ties(z, upper, lower),
                                  [True, False, True, False, False, False])
    np.testing.assert_array_equal(hinge_ties(z, upper, lower, tol=20 * TIE_TOL),
                                  [True, False, True, True, False, True])


def test_the_bound_sides_of_a_rate_program_follow_its_coefficients():
    # block 0 (examples 0-3) has a u+ term in row 1, block 1 (examples 2-5) a u- term in row 2
    blocks = [RateBlock("D0", 0, np.arange(4), np.full(4, 0.25)),
              RateBlock("D1", 0, np.arange(2, 6), np.full(4, 0.25))]
    alpha = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    beta = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.8]])
    program = RateProgram([sp.identity(6, format="csr")], ["X"], blocks, alpha, beta,
                          np.zeros(2), np.zeros(3), ["objective", "row1", "row2"])
    [(upper, lower)] = program.bound_sides()
    np.testing.assert_array_equal(upper, [True, True, True, True, False, False])
    np.testing.assert_array_equal(lower, [False, False, True, True, True, True])
