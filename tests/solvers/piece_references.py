"""The NumPy expressions that the compiled pieces' passes of a structured Newton direction
(:mod:`ratecons.solvers.structured_kernels`) replaced, put back into the solver for the tests
that ask whole steps to come out the same to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

from ratecons.solvers import structured_correctors as SC
from ratecons.solvers import structured_newton as SN


def transposed(index, slope, y_a, y_b, column, coef, n):
    """J^T y's pieces: 0 - bincount(y_A a) on the examples, y_A + y_B + column coef on u."""
    on_z = np.zeros(n)
    on_z -= np.bincount(index, weights=y_a * slope, minlength=n)
    return on_z, y_a + y_b + column * coef


def scattered(index, scatter, r_u, Du, n):
    """bincount(scatter r_u) on the examples and r_u / Du."""
    return np.bincount(index, weights=scatter * r_u, minlength=n), r_u / Du


def recovered(index, slope, dz, extra, r_u, W_a, column, coef, Du):
    """The pieces a dz_{i_k} (+ G d_v) and d_u = (r_u + W_A pieces + column coef) / Du."""
    pieces = slope * dz[index] + extra if extra.size else slope * dz[index]
    return pieces, (r_u + W_a * pieces + column * coef) / Du


def pulled(s, ds, lam, dlam, trial, target, r_c):
    """Gondzio's pull of the products into [target / 10, 10 target]."""
    v = (s + trial * ds) * (lam + trial * dlam)
    return r_c - np.maximum(np.clip(v, 0.1 * target, 10.0 * target) - v, -10.0 * target)


def pieces_rhs(index, slope, groups, column, coef, r_u, scatter, Du, n):
    """The Newton right-hand sides of groups A and B, J^T of them on the pieces, and what the
    pieces' right-hand side brings to the reduced system."""
    W_a, c_a, s_a, r_a, W_b, c_b, s_b, r_b = groups
    xi_a, xi_b = W_a * (c_a - s_a) + r_a / s_a, W_b * (c_b - s_b) + r_b / s_b
    on_z, t_u = transposed(index, slope, xi_a, xi_b, column, coef, n)
    rhs_u = -r_u - t_u
    examples, per_du = scattered(index, scatter, rhs_u, Du, n)
    return xi_a, on_z, examples, rhs_u, per_du


def smallest_ratio(x, dx):
    """min over dx_i < 0 of -x_i / dx_i (inf when none)."""
    falling = dx < 0
    return float(np.min(-x[falling] / dx[falling], initial=np.inf))


def piece_pairs(d_u, pieces, a, b):
    """The pairs' directions of groups A (J dx = d_u - pieces) and B (d_u), and their steps
    to the boundary."""
    W_a, c_a, s_a, r_a, lam_a = a
    W_b, c_b, s_b, r_b, lam_b = b
    ds_a = d_u - pieces + c_a - s_a
    ds_b = d_u + c_b - s_b
    dlam_a, dlam_b = -W_a * ds_a - r_a / s_a, -W_b * ds_b - r_b / s_b
    steps = np.array([min(smallest_ratio(s_a, ds_a), smallest_ratio(s_b, ds_b)),
                      min(smallest_ratio(lam_a, dlam_a), smallest_ratio(lam_b, dlam_b))])
    return ds_a, dlam_a, ds_b, dlam_b, steps


def numpy_piece_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the NumPy expressions of the pieces' passes back into the solver."""
    for name, expression in (("pieces_transposed", transposed), ("scattered_rhs", scattered),
                             ("recovered_pieces", recovered), ("pieces_rhs", pieces_rhs),
                             ("piece_pairs", piece_pairs)):
        monkeypatch.setattr(SN, name, expression)
    monkeypatch.setattr(SC, "pulled_products", pulled)
