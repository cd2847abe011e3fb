"""The Newton system of the structured interior point (:mod:`.structured`, whose module
docstring derives it): the reduced quasi-definite matrix of one iterate (one weighted Gram
product over the examples, the rows kept as multipliers) and its LU factorization
(:meth:`NewtonSystem.factor`), the solves with the pieces' and l1 blocks eliminated and
recovered, J and J^T, the unreduced operator for iterative refinement, and the Newton
direction for given complementarity residuals (:meth:`NewtonSystem.direction`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import get_lapack_funcs, lu_solve

from .structured_form import Iterate
from .structured_free import free_block
from .structured_kernels import (
    newton_rhs,
    pieces_transposed,
    recovered_pairs,
    recovered_pieces,
    scatter_product,
    scattered_rhs,
)
from .structured_smooth import row_jacobian_z
from .thin_products import (
    column_and_coefficient,
    columns_times,
)

__all__ = ["NewtonSystem"]


class NewtonSystem:
    """The Newton system's methods of :class:`.structured._IPM` (a mixin: they read the
    form, its scaled rows and the sizes the interior point sets up)."""

    def factor(self, x: Iterate, ev: dict, damping: float = 0.0, single: bool = False
               ) -> dict[str, object]:
        """The reduced matrix (:mod:`.structured`'s module docstring) and what its solves
        need; ``damping`` times the robust pieces' weights is added on their (eta, lam)
        (:data:`.structured.ROBUST_DAMPING`); ``single``: the Gram product in single
        precision (:data:`.structured.SINGLE_GRAM_ABOVE`). One pass over the examples
        (:meth:`gram_pass`)."""
        system = self.weights_at(x, ev)
        G, col, rows_top, _ = self.gram_pass(system, None, single)
        return self.factored(system, G, col, rows_top, damping)

    def weights_at(self, x: Iterate, ev: dict) -> dict[str, object]:
        """What the reduced matrix needs before its pass over the examples: the pairs' weights
        W = lam / s, the pieces' Du and e, the Gram product's weights d on the examples and
        (with rows) the rows' Jacobian on the examples after the pieces' elimination. What
        per-piece arrays only this needs is not kept: the smooth rows' slopes (taken out of
        ``ev``), e without free variables, and the rows' coefficients through the pieces,
        kept as their product with G (``through_v``; :meth:`factored`)."""
        f = self.form
        W = {g: x.lam[g] / x.s[g] for g in x.s}
        N = self.rows.n
        rob = ev["robust"]
        h_u = 0.0 if rob is None else rob.h_u  # the robust pieces' curvature on u
        Du = W["A"] + W["B"] + h_u
        e = W["A"] * (W["B"] + h_u) / Du  # what eliminating u_k leaves on its piece
        d = ev["curv"].copy()
        if self.K:
            d += scatter_product(f.hinge_index, f.hinge_slope ** 2, e, N)
        system = {"W": W, "Du": Du, "N": N, "robust": rob, "Cu": ev["Cu"], "Fv": ev["Fv"],
                  "scatter": W["A"] * f.hinge_slope / Du,  # r_u's weight on its example
                  "e": e if self.r else None, "d": d}
        slopes = ev.pop("slopes")
        if self.m:  # the rows' Jacobian after the pieces' elimination, on the examples
            Jz = -row_jacobian_z(self, slopes)  # d c_R / dz, (N, m)
            through = (W["A"] / Du)[:, None] * ev["Cu"].T  # (K, m)
            system.update(Jz=Jz if self.smooth_rows else None,
                          through_v=self.G.transpose_times(through),
                          U_u=-ev["Cu"].T,  # d c_R / du, transposed: (K, m)
                          on_z=Jz - (
                np.column_stack([scatter_product(f.hinge_index, f.hinge_slope, through[:, j], N)
                                 for j in range(self.m)]) if self.K else 0.0))
        return system

    def gram_pass(self, system: dict, V: list[np.ndarray] | None, single: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """The one pass over the examples of :meth:`factor`: (P^T diag(d) P, P^T d, P^T of the
        rows' on_z, P^T V) for further per-example columns V (a list of blocks of shape (N,)
        or (N, k) side by side, q columns in all) or None, by
        :meth:`ratecons.scans.Rows.gram_and_products`, which gets the blocks unstacked (a
        :class:`~ratecons.scans.DaskRows` copies them once, into the array it sends, and
        empties the list: pass blocks nothing else holds and they are let go during the
        pass). Of the weights d and the rows' on_z only what :meth:`factored` needs stays in
        ``system``: the sum of d and the intercept row of on_z."""
        q = 0 if V is None else sum(int(np.prod(np.shape(v)[1:])) for v in V)
        system["d_sum"] = system["d"].sum()
        columns = [] if V is None else V
        if self.m:
            system["on_z_total"] = self.intercept_row(system["on_z"])
            columns.insert(0, system.pop("on_z"))
        G, col, top = self.rows.gram_and_products(
            system.pop("d"), columns or None, column=self.fit_b, single=single)
        rows_top = top[:, :self.m] if self.m else None
        return G, col, rows_top, (None if V is None else top[:, top.shape[1] - q:])

    def factored(self, system: dict, G: np.ndarray, col: np.ndarray | None,
                 rows_top: np.ndarray | None, damping: float = 0.0) -> dict[str, object]:
        """:meth:`factor` from the products of its pass (:meth:`gram_pass`)."""
        f, sc, W, Du, rob = self.form, self.sc, system["W"], system["Du"], system["robust"]
        diag_w = np.full(self.p, sc.l2)
        if self.use_l1:
            diag_w += 4.0 * W["T+"] * W["T-"] / (W["T+"] + W["T-"])
        G[np.diag_indices(self.p)] += diag_w
        if self.fit_b:
            top = np.hstack([G, -col[:, None]])
            bottom = np.concatenate([-col, [system["d_sum"]]])
            M = np.vstack([top, bottom[None, :]])
        else:
            M = G
        if self.r:
            cross, own = free_block(self, W, Du, system["e"], rob)
            for piece in (p for p in f.robust if p.row == 0):  # ROBUST_DAMPING
                for at in (piece.eta, piece.lam):
                    own[at, at] += damping * sc.kappa[piece.row] * piece.coef
            M = np.block([[M, cross], [cross.T, own]])
        scale = max(1.0, float(np.max(np.abs(np.diag(M)))))
        M[np.diag_indices(M.shape[0])] += 1e-13 * scale
        if self.m:
            # the rows stay in the system as multipliers y = W_R J_R dx (quasi-definite):
            # [[S, Jh^T], [Jh, -W_R^-1 - C_R diag(1/Du) C_R^T]] with Jh the rows' Jacobian
            # after the pieces' elimination (module docstring)
            Cu = system["Cu"]
            on_v = -system["Fv"].T - system["through_v"]
            if rob is not None:
                on_v += rob.c_u.T @ (Cu.T / Du[:, None])
            Jh_T = self.theta_of(None, on_v, rows_top, system["on_z_total"])
            corner = -np.diag(1.0 / W["R"]) - (Cu / Du) @ Cu.T
            M = np.block([[M, Jh_T], [Jh_T.T, corner]])
        getrf, = get_lapack_funcs(("getrf",), (M,))  # lu_factor's routine, its info kept
        lu, pivots, info = getrf(M, overwrite_a=True)
        if info != 0:  # a zero pivot (info > 0): a direction from it would be inf/nan
            raise np.linalg.LinAlgError(f"singular reduced system (LAPACK getrf info {info})")
        system["lu"] = (lu, pivots)
        return system

    def solve(self, system: dict, r: tuple[np.ndarray, np.ndarray, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(H + J^T W J)^{-1} r: the pieces' and l1 blocks eliminated, the rows kept as
        multipliers (:meth:`factor`), then the eliminated blocks recovered."""
        return self.solve_pieces(system, r)[0]

    def solve_scored(self, system: dict, r: tuple[np.ndarray, np.ndarray, np.ndarray],
                     on_z: np.ndarray | None = None
                     ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray | None]:
        """:meth:`solve` of r + (Q^T on_z, 0, 0), with the scores' direction Q d_theta where
        it was formed (else None): one product with P^T for both per-example parts."""
        return self.solve_pieces(system, r, on_z)[:2]

    def solve_pieces(self, system: dict, r: tuple[np.ndarray, np.ndarray, np.ndarray],
                     on_z: np.ndarray | None = None,
                     scattered: tuple[np.ndarray, np.ndarray] | None = None,
                     top: np.ndarray | None = None
                     ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray | None,
                                np.ndarray | None]:
        """:meth:`solve_scored`, and the pieces' a Q d_theta + G d_v where they were formed
        (else None; :meth:`jacobian_apply` takes them). The pieces' passes before and after
        the small solve are compiled (:func:`.structured_kernels.scattered_rhs`, whose
        (examples, per_du) a direction may give as ``scattered``, and
        :func:`.structured_kernels.recovered_pieces`); ``top``: the P^T product of the
        per-example part (:meth:`solve_column`) when a pass formed it."""
        f = self.form
        W, Du = system["W"], system["Du"]
        r_theta, r_u, r_tau = r
        rt = r_theta.copy()
        per_du = r_u / Du if not self.K else None
        if self.K:
            examples, per_du = scattered or scattered_rhs(f.hinge_index, system["scatter"], r_u,
                                                          Du, system["N"])
            rt = rt + self.theta_of(examples if on_z is None else examples + on_z,
                                    self.G.transpose_times(W["A"] / Du * r_u)
                                    if self.r else np.zeros(0), top)
        elif on_z is not None:
            rt[:self.p1] += self.q_transpose(on_z, top)
        rob = system["robust"]
        if rob is not None:
            rt[self.p1:] -= rob.c_u.T @ per_du
        if self.use_l1:
            wp, wm = W["T+"], W["T-"]
            rt[:self.p] -= (wm - wp) / (wp + wm) * r_tau
        rhs = np.concatenate([rt, system["Cu"] @ per_du]) if self.m else rt
        solved = lu_solve(system["lu"], rhs, check_finite=False)
        d_theta, y = solved[:rt.size], solved[rt.size:]
        dz = self.q_apply(d_theta) if self.K else None
        pieces = None
        if self.K:
            column, coef = column_and_coefficient(system["Cu"].T, y, self.K)
            pieces, d_u = recovered_pieces(
                f.hinge_index, f.hinge_slope, dz,
                self.G.times(d_theta[self.p1:]) if self.r else np.zeros(0), r_u, W["A"], column,
                coef, Du)
            if rob is not None:
                d_u -= rob.c_u @ d_theta[self.p1:] / Du
        else:
            d_u = r_u.copy()
        if self.use_l1:
            wp, wm = W["T+"], W["T-"]
            d_tau = (r_tau - (wm - wp) * d_theta[:self.p]) / (wp + wm)
        else:
            d_tau = r_tau.copy()
        return (d_theta, d_u, d_tau), dz, pieces

    def jacobian_apply(self, system: dict, d: tuple[np.ndarray, np.ndarray, np.ndarray],
                       dz: np.ndarray | None = None, pieces: np.ndarray | None = None
                       ) -> dict[str, np.ndarray]:
        """J dx per group (``dz``: Q d_theta if known; ``pieces``: the pieces' a dz + G d_v
        if known). Group B's entry is d_u itself (read only)."""
        d_theta, d_u, d_tau = d
        dz = self.q_apply(d_theta) if dz is None else dz
        pieces = self.pieces(dz, d_theta) if pieces is None else pieces
        out = {"A": d_u - pieces, "B": d_u}
        if self.m:
            rows = system["U_u"].T @ d_u
            if system["Jz"] is not None:  # None: no smooth loss in a row, d c_R / dz = 0
                rows = system["Jz"].T @ dz + rows
            out["R"] = rows - system["Fv"] @ d_theta[self.p1:]
        else:
            out["R"] = np.zeros(0)
        if self.use_l1:
            dw = d_theta[:self.p]
            out["T+"], out["T-"] = d_tau - dw, d_tau + dw
        if "L" in system["W"]:
            out["L"] = d_theta[self.positive]
        return out

    def jacobian_transpose_parts(self, system: dict, y: dict[str, np.ndarray]
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """J^T y with its theta part split: the rest, and zr with Q^T zr the remainder."""
        f = self.form
        column, coef = column_and_coefficient(system.get("U_u"), y["R"], self.K)
        zr, t_u = pieces_transposed(f.hinge_index, f.hinge_slope, y["A"], y["B"], column, coef,
                                    self.rows.n)
        if self.m and system["Jz"] is not None:  # (None: d c_R / dz = 0)
            zr += columns_times(system["Jz"], y["R"])
        on_v = -self.G.transpose_times(y["A"]) - system["Fv"].T @ y["R"]
        t_theta = np.concatenate([np.zeros(self.p1), on_v])
        t_tau = np.zeros(0)
        if self.use_l1:
            t_theta[:self.p] += y["T-"] - y["T+"]
            t_tau = y["T+"] + y["T-"]
        if "L" in y:
            t_theta[self.positive] += y["L"]
        return t_theta, t_u, t_tau, zr

    def operator(self, system: dict, curv: np.ndarray,
                 v: tuple[np.ndarray, np.ndarray, np.ndarray], dz: np.ndarray | None = None,
                 pieces: np.ndarray | None = None, pending: bool = False) -> tuple:
        """M v = (H + J^T W J) v, applied without the reduction (for iterative refinement;
        ``dz``, ``pieces``: Q v_theta and the pieces' values along v if known). Its
        per-example parts (J^T W J and the curvature on z) reach theta space through one
        product with Q^T (one pass over the examples); ``pending``: without that product,
        their values returned fourth for a later one."""
        W = system["W"]
        dz = self.q_apply(v[0]) if dz is None else dz
        jv = self.jacobian_apply(system, v, dz, pieces)
        t_theta, t_u, t_tau, on_z = self.jacobian_transpose_parts(
            system, {g: W[g] * jv[g] for g in W})
        on_z = on_z + curv * dz
        on_v = np.zeros(self.r)
        rob = system["robust"]
        if rob is not None:
            rob_z, rob_u, on_v = rob.hessian_apply(dz, v[1], v[0][self.p1:])
            on_z += rob_z
            t_u = t_u + rob_u
        t_theta = t_theta + (np.concatenate([np.zeros(self.p1), on_v]) if pending
                             else self.theta_of(on_z, on_v))
        t_theta[:self.p] += self.sc.l2 * v[0][:self.p]
        return (t_theta, t_u, t_tau, on_z) if pending else (t_theta, t_u, t_tau)

    def right_side(self, x: Iterate, ev: dict, system: dict, r_c: dict[str, np.ndarray]
                   ) -> dict[str, object]:
        """What the Newton right-hand side for complementarity residuals r_c brings before the
        small solve (:meth:`direction`): J^T xi off the examples (``t_theta``, ``t_tau``),
        the pieces' right-hand side ``rhs_u``, the per-example values ``on_z`` whose product
        with Q^T the solve adds, the pieces' (examples, per_du) of
        :func:`.structured_kernels.scattered_rhs` (``scattered``), and ``top``: the P^T
        product of :meth:`solve_column` when a pass formed it (None: the solve forms it)."""
        W, c, f = system["W"], ev["c"], self.form
        xi = {g: newton_rhs(W[g], c[g], x.s[g], r_c[g]) for g in x.s}
        t_theta, t_u, t_tau, zr = self.jacobian_transpose_parts(system, xi)
        rhs_u = -ev["r_u"] - t_u
        scattered = scattered_rhs(f.hinge_index, system["scatter"], rhs_u, system["Du"],
                                  system["N"]) if self.K else None
        return {"t_theta": t_theta, "rhs_u": rhs_u, "t_tau": t_tau, "on_z": -zr,
                "scattered": scattered, "top": None}

    def solve_column(self, right: dict) -> np.ndarray:
        """The per-example values whose product with P^T the solve of a right-hand side
        (:meth:`right_side`) adds to its theta part (:meth:`solve_pieces`)."""
        return right["scattered"][0] + right["on_z"] if self.K else right["on_z"]

    def direction(self, x: Iterate, ev: dict, system: dict, r_c: dict[str, np.ndarray],
                  refine: bool, right: dict | None = None) -> Iterate:
        """The Newton direction for complementarity residuals r_c (module docstring), with
        one round of iterative refinement on the unreduced operator if ``refine`` (``right``:
        its :meth:`right_side` if formed before)."""
        W, c = system["W"], ev["c"]
        right = self.right_side(x, ev, system, r_c) if right is None else right
        rhs = (-ev["r_theta"] - right["t_theta"], right["rhs_u"], -ev["r_tau"] - right["t_tau"])
        d, dz, pieces = self.solve_pieces(system, rhs, right["on_z"], right["scattered"],
                                          right["top"])
        if refine:  # the scores' directions are linear in d: Q (d + c) = Q d + Q c
            if self.rows.remote:  # the operator's product with Q^T and the correction's
                # in one pass: Q^T a - Q^T b = Q^T (a - b), another rounding
                *applied, op_z = self.operator(system, ev["curv"], d, dz, pieces, pending=True)
                on_z = right["on_z"] - op_z
            else:
                applied, on_z = self.operator(system, ev["curv"], d, dz, pieces), right["on_z"]
            correction, dz_c = self.solve_scored(system, tuple(
                r - a for r, a in zip(rhs, applied, strict=True)), on_z)
            d = tuple(a + b for a, b in zip(d, correction, strict=True))
            dz, pieces = None if dz is None else dz + dz_c, None
        jd = self.jacobian_apply(system, d, dz, pieces)
        pairs = {g: recovered_pairs(W[g], jd[g], c[g], x.s[g], r_c[g]) for g in x.s}
        ds, dlam = {g: p[0] for g, p in pairs.items()}, {g: p[1] for g, p in pairs.items()}
        return Iterate(d[0], d[1], d[2], ds, dlam, dz)
