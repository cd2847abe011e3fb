"""The warm start of the structured interior point (:mod:`.structured`): the first iterate of
an MM step from the previous step's answer.

The steps of one MM run differ only in the bounds that switch between hinge and constant
(eq. 4 of Goh et al.), so the previous step's (w, b), free variables and row multipliers are
close to the next step's. From them every epigraph variable starts on its piece and the piece
multipliers are split by which side of the hinge is active (lam_A + lam_B is what
stationarity in u asks). The start is then **centred**: every slack-multiplier pair is lifted
to a product of at least mu_0 (the smaller of the two is raised: an inactive piece's multiplier
to mu_0 / s, an active piece's slack to mu_0 / lam), with mu_0 chosen so that the pairs at that
floor sum to :data:`WARM_GAP` times max(kappa_0, |f|) in the scaled rows (the interior point's
relative gap, :meth:`~.structured._IPM.measures`). The former start pushed every slack and
multiplier up by a fixed shift of 0.3 instead: products of 0.3 s on inactive pieces, a first
relative gap of about 4 on the whole Adult split (error rate + recall floor), where the centred
start begins at :data:`WARM_GAP` and needs about a fifth fewer iterations.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .structured_form import Iterate, WarmStart

__all__ = ["RECENTRED_GAP", "WARM_GAP", "WARM_SHIFT", "WARM_SHIFT_WIDE", "WIDE_COLUMNS",
           "WARM_U_SHIFT", "recentred", "warm_shift", "warm_iterate"]

#: how far above |w| a warm start puts the l1 epigraph tau, and where it starts the robust
#: balls' multipliers (scaled rows' units); until the centred start (:data:`WARM_GAP`) it was
#: also the shift of every slack and multiplier: on a 2,000-row Adult sample with 500 Nystrom
#: features and the 80% rule, the MM run took 129 interior-point iterations at 0.1 against
#: 139 at 1e-2, 226 at 1e-3, 244 at 1e-4 and about 160 from cold starts; with the epigraph
#: variables no longer shifted (:data:`WARM_U_SHIFT`), logistic loss + 80% rule on the same
#: sample took 150 iterations at 1e-2, 121 at 0.1, 111 at 0.3 and 166 at 1 (hinge + FPR
#: parity: 70 at 0.1, 67 at 0.3)
WARM_SHIFT = 0.3
#: how far above its piece a warm start puts each epigraph variable u_k: every unit of it
#: raises the rows by the sum of their coefficients, and with 0.1 (WARM_SHIFT) the 80% rule's
#: row started violated by 50-90 (scaled units) on a 2,000-row Adult sample (the rows are
#: active at the anchor), so the warm starts began with a primal residual of 60; with 0 the
#: infeasibility sits in the pieces' slacks instead (0.1 each)
WARM_U_SHIFT = 0.0
#: ... on a model with at least WIDE_COLUMNS features (kernel models: 500 Nystrom features),
#: WARM_SHIFT_WIDE instead. Kernel error rate + 80% rule (Adult, 500 features), interior-point
#: iterations of the whole MM run at 0.3 / 0.1: 139 / 139 on 2,000 rows, 229 / 186 on 5,000,
#: 202 / 166 on 10,000, 266 / 190 on the whole split (34,189 rows; 12 and 11 MM steps);
#: kernel logistic + FPR parity on the whole split 30 / 31. Most linear rows lost at 0.1
#: (whole split: hinge + 80% rule 149 / 171, hinge + FPR parity 88 / 93, error rate + KL
#: worst-case recall 300 / 328; error rate + recall with l1 gained, 746 / 708), so they keep
#: 0.3
WARM_SHIFT_WIDE = 0.1
WIDE_COLUMNS = 256
#: the relative gap of a warm start (module docstring). Interior-point iterations of whole MM
#: runs of the structured chain, the former shifted start / this one at 0.3 (one session,
#: whole Adult split, 34,189 rows): error rate + recall floor 323 / 263 (0.1: 271, 1.0: 271,
#: 1e-2: 312, 1e-3: 396), error rate + 80% rule 430 / 330 (1.0: 359), logistic + 80% rule
#: 159 / 140, hinge + 80% rule 149 / 148, logistic + recall floor 57 / 57, robust chi2 +
#: recall 50 / 52, hinge + FPR parity 88 / 95, logistic + worst-case recall 90 / 96; on
#: 2,000 rows kernel error + 80% rule (500 Nystrom features) 139 / 132, hinge + FPR parity
#: 52 / 61, the other rows of benchmarks/composition.py within 5%. Those runs measured the gap
#: against max(1, |f|) in the scaled rows; against max(kappa_0, |f|) (the user's max(1, |f|),
#: since the TPR@K fix) and with that fix's separate step lengths, the same four whole-split
#: runs (error rate + 80% rule, logistic + 80% rule, hinge + FPR parity, hinge + 80% rule)
#: took 454 / 161 / 107 / 163 iterations at 0.3, 341 / 153 / 118 / 196 at 0.06 and
#: 342 / 132 / 111 / 176 at 0.15 (0.3 in the former units: 342 / 134 / 114 / 179, and its
#: diabetes hinge + FPR parity chain reached another MM fixed point, 1.6e-4 above the CVXPY
#: chain's, where 0.15 and 0.06 reach the CVXPY chain's)
WARM_GAP = 0.15
#: the relative gap of a second warm start after a blocked one (:func:`recentred`)
RECENTRED_GAP = 1.5


def recentred(warm: WarmStart) -> WarmStart:
    """``warm`` centred to :data:`RECENTRED_GAP`: deeper in the interior, its pieces' pairs no
    longer pinned at their kinks, and still at the last step's point. The start tried after
    ``warm`` was blocked (:func:`.structured_stop.warm_blocked`) on a step with smooth parts,
    before the cold start (:func:`ratecons.structured_fallback.warm_then_cold`).

    On logistic loss + churn <= 0.05 + 80% rule (Adult rows, l2 = 1e-3) most blocked warm
    starts had been followed by a cold start of about 80 iterations; recentred, the same steps
    took about 40, and few were blocked again (those start cold as before). Whole runs, s / MM
    steps / interior-point iterations / objective, without -> with (one run each; 20,000 rows
    with other runs on the machine): 10,000 rows 40.6 / 66 / 4,428 / 0.369322 -> 35.9 / 66 /
    3,018 / 0.368324 (cold starts 42 -> 5); 20,000 102.1 / 130 / 5,533 / 0.369500 -> 79.9 /
    119 / 4,518 / 0.369108; 25,000 101.1 / 118 / 6,594 / 0.371691 -> 80.8 / 125 / 5,540 /
    0.371716 (45 -> 7); the whole split (34,189 rows) 97.4 / 88 / 3,847 / 0.372029 -> 88.0 /
    87 / 4,256 / 0.370657 (34 -> 10). Piecewise-linear steps start cold at once: the one
    blocked warm step of TPR@K + 80% rule on the whole split was blocked again recentred (33
    more iterations, 93 -> 126 in its run). 1.5 measured against 5: 25,000 rows 4,900
    iterations, the whole split 5,310 (123 MM steps)."""
    return replace(warm, gap=RECENTRED_GAP)


def warm_shift(p: int) -> float:
    """The shift of a warm start on a model with p features (:data:`WARM_SHIFT_WIDE`)."""
    return WARM_SHIFT_WIDE if p >= WIDE_COLUMNS else WARM_SHIFT


def warm_iterate(ipm: Any, warm: WarmStart, groups: list[str]) -> Iterate:
    """The first iterate of the interior point ``ipm`` (a :class:`.structured._IPM`) from the
    previous step's answer ``warm`` (module docstring), with slacks and multipliers of the
    inequality ``groups``."""
    f, sc = ipm.form, ipm.sc
    theta = np.concatenate([warm.w, [warm.b] if ipm.fit_b else [], warm.extra])
    shift = warm_shift(ipm.p)
    z = ipm.scores(theta)
    piece = ipm.pieces(z, theta) + f.hinge_offset if ipm.K else np.zeros(0)
    u = np.maximum(piece, 0.0) + WARM_U_SHIFT
    w = theta[:ipm.p]
    tau = np.abs(w) + shift if ipm.use_l1 else np.zeros(0)
    lam_R = np.maximum(warm.duals * sc.kappa[0] / sc.kappa[1:], 0.0) if ipm.m else np.zeros(0)
    total = sc.C[0] + sc.C[1:].T @ lam_R  # lam_A + lam_B at stationarity in u
    rob, _ = ipm.robust_at(z, u, theta[ipm.p1:], lam_R)
    if rob is not None:
        total = total + rob.g_u
    active = piece > 0
    lam = {"A": np.where(active, total, 0.0), "B": np.where(active, 0.0, total), "R": lam_R}
    if ipm.use_l1:
        lam["T+"] = np.where(w > 0, sc.l1, 0.0)
        lam["T-"] = np.where(w > 0, 0.0, sc.l1)
    if f.robust:
        lam["L"] = np.full(ipm.positive.size, shift)
    x = Iterate(theta, u, tau, {}, lam, z)
    ev = ipm.evaluate(x)
    x.s = {}
    gap = WARM_GAP if warm.gap is None else warm.gap
    mu0 = gap * max(float(sc.kappa[0]), abs(ev["objective"])) / max(
        1, sum(ev["c"][g].size for g in groups))
    for g in groups:  # every pair's product at least mu0 (its weight on the weighted path)
        floor = mu0 * ipm.weights[g]
        lam[g] = np.maximum(lam[g], floor / np.maximum(ev["c"][g], np.sqrt(floor)))
        x.s[g] = np.maximum(ev["c"][g], floor / lam[g])
    return x
