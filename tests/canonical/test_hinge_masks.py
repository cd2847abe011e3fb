"""The one rule that picks the bounds of eq. (4) of Goh et al. at an anchor
(:func:`ratecons.canonical.rate_program.hinge_masks`, used by every lowering): an upper bound
of the ramp everywhere, tight at the anchor."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.canonical.rate_program import RateProgram, hinge_masks

#: rounding: 1/2 - z and 1 - (1/2 + z) differ in the last bits
ROUNDING = 1e-12

scores = st.floats(-3.0, 3.0, allow_nan=False)
near_kink = st.tuples(st.sampled_from([-0.5, 0.5]),
                      st.floats(-1e-6, 1e-6, allow_nan=False)).map(sum)
anchors = st.lists(st.one_of(scores, near_kink, st.sampled_from([-0.5, 0.5])),
                   min_size=1, max_size=40).map(np.array)


def bounds(anchor: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """u+ and u- of eq. (4) selected at ``anchor``, evaluated at scores ``z``."""
    upper, lower = hinge_masks(anchor)
    return (np.where(upper, np.maximum(0.0, 0.5 + z), 1.0),
            np.where(lower, np.maximum(0.0, 0.5 - z), 1.0))


@settings(max_examples=300, deadline=None)
@given(anchor=anchors, shift=st.floats(-3.0, 3.0, allow_nan=False))
def test_bounds_are_above_the_ramp_everywhere_and_tight_at_the_anchor(anchor, shift):
    z = anchor + shift
    ramp = np.clip(0.5 + z, 0.0, 1.0)
    up, un = bounds(anchor, z)
    assert np.all(up >= ramp - ROUNDING) and np.all(un >= 1.0 - ramp - ROUNDING)
    ramp0 = np.clip(0.5 + anchor, 0.0, 1.0)
    up0, un0 = bounds(anchor, anchor)
    np.testing.assert_allclose(up0, ramp0, atol=ROUNDING)
    np.testing.assert_allclose(un0, 1.0 - ramp0, atol=ROUNDING)


def test_the_switch_points_take_the_hinge_and_the_rate_programs_masks_are_the_rule():
    z = np.array([-2.0, -0.5 - 1e-9, -0.5, 0.0, 0.5, 0.5 + 1e-9, 2.0])
    upper, lower = hinge_masks(z)
    np.testing.assert_array_equal(upper, [True, True, True, True, True, False, False])
    np.testing.assert_array_equal(lower, [False, False, True, True, True, True, True])
    [(block_upper, block_lower)] = RateProgram.masks_at_block_scores([z])
    np.testing.assert_array_equal(block_upper, upper)
    np.testing.assert_array_equal(block_lower, lower)
