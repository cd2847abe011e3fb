"""Compiled per-example passes of the structured interior point's Newton directions
(:meth:`.structured_newton.NewtonSystem.direction` and its solves).

A direction forms, for every inequality group (the pieces' A and B, K entries each, and the
rows R), the right-hand side xi = W (c - s) + r_c / s of the reduced system and, once the
reduced system is solved, the slacks' and multipliers' directions ds = J dx + c - s and
dlam = -W ds - r_c / s (W = lam / s). In NumPy each is four or five passes over K-vectors with
as many temporaries; here each is one pass. The pieces' values reach the examples by a
scatter-add of a product, out[i_k] += a_k b_k (``np.bincount`` of a formed product before),
and the examples' scores reach the pieces by a gathered product a_k z_{i_k}.
Every entry is computed by the same operations in the same order as the NumPy expressions
they replace, so the directions are the same numbers. On the whole Adult split (error rate +
80% rule, 43,546 pieces) the three passes took about 0.9, 0.7 and 0.9 ms of a 4-9 ms
direction (profiled under load 5).
"""

from __future__ import annotations

import numba
import numpy as np

#: the kernels' compilation: NumPy's error model, under which a division by 0 gives inf or nan
#: as the NumPy expression does (Python's model raises ZeroDivisionError) and, with no check
#: before every division, the loops are vectorized: on 68,378 pieces of the whole Adult split
#: (hinge + 80% rule) the reduced right-hand side took 0.058 ms against 0.185 ms
_compiled = numba.njit(cache=True, error_model="numpy")

__all__ = ["columns_transposed", "gather_product", "newton_rhs", "pieces_transposed",
           "pulled_products", "recovered_pairs", "recovered_pieces", "scatter_product",
           "scattered_rhs"]


@_compiled
def _newton_rhs(W: np.ndarray, c: np.ndarray, s: np.ndarray, r: np.ndarray,
                out: np.ndarray) -> None:
    for i in range(out.size):
        out[i] = W[i] * (c[i] - s[i]) + r[i] / s[i]


def newton_rhs(W: np.ndarray, c: np.ndarray, s: np.ndarray, r: np.ndarray) -> np.ndarray:
    """W (c - s) + r / s entrywise, in one pass (module docstring)."""
    out = np.empty(s.size)
    _newton_rhs(W, c, s, r, out)
    return out


@_compiled
def _recovered_pairs(W: np.ndarray, jd: np.ndarray, c: np.ndarray, s: np.ndarray,
                     r: np.ndarray, ds: np.ndarray, dlam: np.ndarray) -> None:
    for i in range(ds.size):
        ds[i] = jd[i] + c[i] - s[i]
        dlam[i] = -W[i] * ds[i] - r[i] / s[i]


def recovered_pairs(W: np.ndarray, jd: np.ndarray, c: np.ndarray, s: np.ndarray,
                    r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ds, dlam) = (jd + c - s, -W ds - r / s) entrywise, in one pass (module docstring)."""
    ds, dlam = np.empty(s.size), np.empty(s.size)
    _recovered_pairs(W, jd, c, s, r, ds, dlam)
    return ds, dlam


@_compiled
def _scatter_product(index: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for k in range(index.size):
        out[index[k]] += a[k] * b[k]


def scatter_product(index: np.ndarray, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """out[index[k]] += a[k] b[k] into n zeros: ``np.bincount(index, a * b, minlength=n)``
    in one pass, summed in the same order (module docstring)."""
    out = np.zeros(n)
    _scatter_product(index, a, b, out)
    return out


@_compiled
def _gather_product(a: np.ndarray, z: np.ndarray, index: np.ndarray, out: np.ndarray) -> None:
    for k in range(index.size):
        out[k] = a[k] * z[index[k]]


def gather_product(a: np.ndarray, z: np.ndarray, index: np.ndarray) -> np.ndarray:
    """a * z[index] for 1-D a, z, in one pass without the gathered copy (module
    docstring)."""
    out = np.empty(index.size)
    _gather_product(a, z, index, out)
    return out


@_compiled
def _pieces_transposed(index: np.ndarray, slope: np.ndarray, y_a: np.ndarray,
                       y_b: np.ndarray, column: np.ndarray, coef: float,
                       on_z: np.ndarray, on_u: np.ndarray) -> None:
    for k in range(index.size):
        on_z[index[k]] -= y_a[k] * slope[k]
        on_u[k] = y_a[k] + y_b[k] + column[k] * coef


def pieces_transposed(index: np.ndarray, slope: np.ndarray, y_a: np.ndarray, y_b: np.ndarray,
                      column: np.ndarray, coef: float, n: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The pieces' part of J^T y in one pass: (on_z, on_u) with on_z = 0 - (the scatter-add
    of y_A a over the n examples) and on_u = y_A + y_B + column coef (the rows' term U_u y_R:
    ``column`` U_u[:, 0] and ``coef`` y_R[0] for one row, else U_u y_R and 1.0)."""
    on_z, on_u = np.zeros(n), np.empty(index.size)
    _pieces_transposed(index, slope, y_a, y_b, column, coef, on_z, on_u)
    return on_z, on_u


@_compiled
def _scattered_rhs(index: np.ndarray, scatter: np.ndarray, r_u: np.ndarray, Du: np.ndarray,
                   examples: np.ndarray, per_du: np.ndarray) -> None:
    for k in range(index.size):
        examples[index[k]] += scatter[k] * r_u[k]
        per_du[k] = r_u[k] / Du[k]


def scattered_rhs(index: np.ndarray, scatter: np.ndarray, r_u: np.ndarray, Du: np.ndarray,
                  n: int) -> tuple[np.ndarray, np.ndarray]:
    """What the pieces' right-hand side r_u brings to the reduced system, in one pass: the
    scatter-add of ``scatter`` r_u over the n examples (``scatter_product``) and r_u / Du."""
    examples, per_du = np.zeros(n), np.empty(index.size)
    _scattered_rhs(index, scatter, r_u, Du, examples, per_du)
    return examples, per_du


@_compiled
def _recovered_pieces(index: np.ndarray, slope: np.ndarray, dz: np.ndarray,
                      extra: np.ndarray, r_u: np.ndarray, W_a: np.ndarray,
                      column: np.ndarray, coef: float, Du: np.ndarray,
                      pieces: np.ndarray, d_u: np.ndarray) -> None:
    with_extra = extra.size > 0
    for k in range(index.size):
        g = slope[k] * dz[index[k]]
        if with_extra:
            g = g + extra[k]
        pieces[k] = g
        d_u[k] = (r_u[k] + W_a[k] * g + column[k] * coef) / Du[k]


def recovered_pieces(index: np.ndarray, slope: np.ndarray, dz: np.ndarray, extra: np.ndarray,
                     r_u: np.ndarray, W_a: np.ndarray, column: np.ndarray, coef: float,
                     Du: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pieces' directions after the reduced solve, in one pass: (pieces, d_u) with pieces
    = a dz_{i_k} + extra (G d_v; ``extra`` empty without free variables) and d_u = (r_u + W_A
    pieces + column coef) / Du (the rows' term C_R^T y: ``column`` C_R[0] and ``coef`` y[0]
    for one row, else C_R^T y and 1.0)."""
    pieces, d_u = np.empty(index.size), np.empty(index.size)
    _recovered_pieces(index, slope, dz, extra, r_u, W_a, column, coef, Du, pieces, d_u)
    return pieces, d_u


@_compiled
def _pulled_products(s: np.ndarray, ds: np.ndarray, lam: np.ndarray, dlam: np.ndarray,
                     trial: float, centring: float, weights: np.ndarray, r_c: np.ndarray,
                     out: np.ndarray) -> None:
    for i in range(out.size):
        v = (s[i] + trial * ds[i]) * (lam[i] + trial * dlam[i])
        target = centring * weights[i]
        low = 0.1 * target
        high = 10.0 * target
        clipped = v if v > low else low  # np.clip: a NaN product or bound gives a NaN
        clipped = clipped if clipped < high else high  # moved, as it does
        moved = clipped - v
        out[i] = r_c[i] - (moved if moved >= -high or np.isnan(moved) else -high)  # np.maximum


def pulled_products(s: np.ndarray, ds: np.ndarray, lam: np.ndarray, dlam: np.ndarray,
                    trial: float, centring: float, weights: np.ndarray, r_c: np.ndarray
                    ) -> np.ndarray:
    """Gondzio's corrected complementarity residual of one group in one pass
    (:func:`.structured_correctors.centrality_correctors`): with v = (s + trial ds)(lam +
    trial dlam) and the target t = centring weights (sigma mu omega, formed entry by entry
    here rather than kept as a vector), r_c - max(clip(v, t / 10, 10 t) - v, -10 t)."""
    out = np.empty(s.size)
    _pulled_products(s, ds, lam, dlam, trial, centring, weights, r_c, out)
    return out


@_compiled
def _columns_transposed(columns: np.ndarray, a: np.ndarray, out: np.ndarray) -> None:
    for k in range(columns.shape[0]):
        for j in range(columns.shape[1]):
            g = columns[k, j]
            if g != 0.0:
                for c in range(a.shape[1]):
                    out[j, c] += g * a[k, c]


def columns_transposed(columns: np.ndarray, a: np.ndarray) -> np.ndarray:
    """columns^T a for columns (K, q) and a (K, k), (q, k): summed over the rows k in order
    over the nonzero entries only, as SciPy's product of a sparse matrix's transpose sums
    (:class:`.thin_products.FreeColumns`)."""
    out = np.zeros((columns.shape[1], a.shape[1]))
    _columns_transposed(columns, a, out)
    return out

