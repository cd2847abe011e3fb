"""The compiled replacements of numba's generic array code (compile time, docs/robust.md): the
same draws and values as the calls they replace."""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ratecons.numerics.compiled_copy import copy_into
from ratecons.solvers import dro_kernels
from ratecons.solvers.dro_kernels import _permutation_prefix, _sample_without_replacement


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 5000), fraction=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_the_permutation_prefix_draws_what_numpy_draws(n, fraction, seed):
    m = int(fraction * n)
    ours = _permutation_prefix(np.random.default_rng(seed), n, m)
    assert np.array_equal(ours, np.random.default_rng(seed).permutation(n)[:m])


def test_large_samples_are_distinct_and_leave_the_generator_where_numpy_would():
    rng, reference = np.random.default_rng(7), np.random.default_rng(7)
    rows = _sample_without_replacement(rng, 10_000, 3_000)  # above Floyd's 2,048
    assert np.unique(rows).size == 3_000 and rows.min() >= 0 and rows.max() < 10_000
    assert np.array_equal(rows, reference.permutation(10_000)[:3_000])
    assert rng.integers(0, 2**62) == reference.integers(0, 2**62)


@settings(deadline=None)  # the first call loads the compiled kernel (271 ms on a loaded machine)
@given(values=st.lists(st.floats(allow_nan=False), min_size=0, max_size=50))
def test_copy_into_copies_every_entry(values):
    source = np.array(values, dtype=np.float64)
    target = np.full(source.size, np.nan)
    copy_into(source, target)
    assert np.array_equal(target, source)


def test_a_numba_without_random_interval_falls_back_to_its_own_permutation(monkeypatch):
    """``random_interval`` is numba's internal name: a release that moves it must leave the
    package importable, with numba's ``Generator.permutation`` (compiled, it drew NumPy's
    permutation on numba 0.68; its 6.3 s compile is left out of the suite)."""
    monkeypatch.setitem(sys.modules, "numba.np.random.random_methods",
                        types.ModuleType("numba.np.random.random_methods"))
    try:
        moved = importlib.reload(dro_kernels)
        assert moved.random_interval is None
        assert moved._permutation_prefix.py_func is moved._permuted_prefix
        rows = moved._permutation_prefix.py_func(np.random.default_rng(5), 100, 7)
        assert np.array_equal(rows, np.random.default_rng(5).permutation(100)[:7])
    finally:
        monkeypatch.undo()
        restored = importlib.reload(dro_kernels)
    assert restored._permutation_prefix.py_func is restored._shuffled_prefix
