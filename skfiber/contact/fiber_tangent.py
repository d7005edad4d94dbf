"""The consistent tangent of fiber–fiber contact (paper Appendix A.3, rederived).

The closest-point parameter ξ_y depends on both fibers' DOFs: at an interior
closest point by the implicit function theorem on f = (y − x)·y′ = 0 (eq. 66,
94–95), δξ_y = −(∂f/∂q δq)/(y′·y′ + (y − x)·y″); at a fiber end ξ_y is fixed.
Then δd = n·(δy − δx) (eq. 96), δn = (I − n⊗n)(δy + y′ δξ_y − δx)/d,
δr_x = −r_x (x′·δx′)/(2|x′|²), δr_y = r_y [∂_ξ ln r_y δξ_y − (y′·δy′)/(2|y′|²)]
with ∂_ξ ln r_y = h r0′/r0 + (Y′·Y″)/(2|Y′|²) − (y′·y″)/(2|y′|²) (eqs. 97–101),
δg = δd/(r_x + r_y) − d (δr_x + δr_y)/(r_x + r_y)² (eqs. 92–93) and
δ|x′| = x′·δx′/|x′| (eq. 89).  Per contact pair this is a 12 × 24 block
(rows: element of x; columns: element of x and element of y); the blocks are
summed per element (x–x) and per element pair (x–y) and returned as element
blocks (:func:`tangent_blocks`) or COO triplets (:func:`tangent_triplets`), from
one compiled loop (:func:`tangent_loop`, or :func:`tangent_loop_parallel` on several
threads from :data:`PARALLEL_TANGENT_WORK` pairs on, with the same result)
over the pairs in contact; φ_b(ξ_y) from the power form
y = Σ ξʲ (M q)_j, M = ``POWER_FROM_HERMITE``).  Where the closest point sits on an
interior node of B, y″ jumps (C¹ elements) and the closest-point map has a
kink: there the mean of the two one-sided y″ is used (an element of the
generalized Jacobian).

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.fiber_geometry import fiber_setup, fiber_state
>>> from skfiber.contact.fiber_pairs import find_pairs
>>> a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
>>> b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.5, 0.5, 0.09), n_elements=4, radius=0.05)
>>> model = sf.Model([a, b])
>>> s = fiber_setup(model.discretization, 5, None, "contact")
>>> st = fiber_state(s, model, np.zeros(model.n_dofs), "contact")
>>> pr = find_pairs(model, s, st, gamma=2.0)
>>> F, dF = PenaltyLaw(stiffness=1000.0, gamma=2.0).force(pr.gap)
>>> rows, cols, values = tangent_triplets(model, s, st, pr, np.flatnonzero(pr.gap < 0), F, dF)
>>> rows.shape == cols.shape == values.shape, bool(np.isfinite(values).all())
(True, True)
"""
from __future__ import annotations

import numba
import numpy as np

from ..core.jit import njit
from ..threads import threads_for
from .base import block_triplets
from .closest_point import POWER_FROM_HERMITE
from .fiber_geometry import FiberSetup, FiberState
from .fiber_kernels import power_point
from .fiber_pairs import ContactPairs
from .smallest_gap import phi_derivatives, xi_sensitivity

__all__ = ["tangent_blocks", "tangent_triplets", "tangent_loop", "tangent_loop_parallel",
           "PARALLEL_TANGENT_WORK"]

#: the tangent runs on several threads from this many pairs in contact on (measured at a state of the upper
#: limb's level 4 with its first n pairs: 400 pairs 0.22–0.25 ms serial, 0.24–0.35 ms on two threads; 800 pairs
#: 0.47 and 0.39–0.42 ms; 1,100 pairs 0.66 and 0.53–0.54 ms; 1,610 pairs 0.96 and 0.75–0.80 ms; level 1 has
#: about 200)
PARALLEL_TANGENT_WORK = 800

_NODE_TOL = 1e-9  # closest points this close (in ξ) to an interior node are "at the node"
_JIT = dict(cache=True, error_model="numpy")


def tangent_blocks(model, s: FiberSetup, st: FiberState, pr: ContactPairs, active: np.ndarray, F: np.ndarray,
                   dF: np.ndarray, *, smallest: bool = False):
    """The tangent as 12 × 12 element blocks: x–x blocks summed per element of x, x–y blocks per element pair.

    The block of pair p is the outer product of its weights w φ_a(ξ_k) (4)
    with ∂T_p/∂(q_x, q_y) (3 × 8 × 3), T = F |x′| n; with s_b = −φ_b(ξ_k)
    (groups of x) or φ_b(ξ_y) (groups of y), δ(y − x) = s δq + y′ δξ_y and
    δT = (F J/d) s_b δq_b + y′ (F J/d) δξ_y + n [F′ J δg − (F J/d) δd + F δJ].

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    pr
        The pairs (of :func:`~skfiber.contact.fiber_pairs.find_pairs`).
    active
        Indices of the pairs in contact (g < 0).
    F, dF
        F(g) and dF/dg of every pair.
    smallest
        The pairs minimize the gap over the partner (``find_pairs(..., smallest=True)``): δξ_y from φ′ = 0.

    Returns
    -------
    row_dofs, col_dofs : numpy.ndarray (G, 12) of int
        The DOFs of the rows and of the columns of each block.
    blocks : numpy.ndarray (G, 12, 12)
        The blocks, in the order of (element of x, element of y).
    """
    a = np.asarray(active, dtype=np.int64)
    args = (a, pr.point, pr.element_x, pr.element_y, pr.xi_y, pr.fixed, pr.x, pr.y, pr.distance, pr.radius_x,
            pr.radius_y, pr.log_slope_y, F, dF, st.xp, st.xp_norm, st.c, s.c_ref, s.first, s.last, s.H0, s.H1, s.scale,
            s.w, s.nq, s.ne, POWER_FROM_HERMITE, s.r0_poly, bool(smallest))
    threads = threads_for(a.size, PARALLEL_TANGENT_WORK)
    row_el, col_el, blocks = tangent_loop(*args) if threads == 1 else tangent_loop_parallel(*args, threads)
    element_dofs = s.dofs.reshape(s.ne, 12)
    return element_dofs[row_el], element_dofs[col_el], blocks.reshape(-1, 12, 12)


def tangent_triplets(model, s: FiberSetup, st: FiberState, pr: ContactPairs, active: np.ndarray, F: np.ndarray,
                     dF: np.ndarray, *, smallest: bool = False):
    """:func:`tangent_blocks` as COO triplets (rows, cols, values)."""
    return block_triplets(*tangent_blocks(model, s, st, pr, active, F, dF, smallest=smallest))


@njit(inline="always", **_JIT)
def _dot(a, b):  # pragma: no cover - compiled
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(inline="always", **_JIT)
def _smallest_sensitivity(i, eb, t, c, c_ref, rpoly, x, y, rx, ry, dlnr, xp, kk, J, vec, basis,
                          dxis):  # pragma: no cover - compiled
    """δξ_y per DOF of pair i from φ′ = 0 (the smallest gap) into dxis, with y′, y″ in ``vec[0]``, ``vec[1]`` and
    the shape functions in ``basis`` as :func:`_tangent_share` has them (inlined there: called, its 11 arrays
    cost the smallest gap's tangent 4–7 %)."""
    _, _, phi2, _, _ = phi_derivatives(c[eb], c_ref[eb], rpoly[eb], x[i], rx[i], t)
    xi_sensitivity(phi2, x[i], y[i], vec[0], vec[1], rx[i], ry[i], dlnr, xp[kk], J, basis[0], basis[1], basis[2],
                   basis[3], basis[4], dxis)


@njit(**_JIT)
def _tangent_groups(eA, eB, ne):  # pragma: no cover - compiled
    """The block layout of :func:`tangent_loop`: the pair order, the pairs of x-element group g
    (order[start[g]:start[g + 1]]), the x–y blocks of the groups before g, and the counts of x–x and all
    blocks."""
    p = eA.size
    order = np.argsort(eA * ne + eB, kind="mergesort")
    n_xx = 0
    for j in range(p):
        if j == 0 or eA[order[j]] != eA[order[j - 1]]:
            n_xx += 1
    start = np.empty(n_xx + 1, dtype=np.int64)
    xy_before = np.empty(n_xx, dtype=np.int64)
    g = -1
    n_xy = 0
    for j in range(p):
        i = order[j]
        if j == 0 or eA[i] != eA[order[j - 1]]:
            g += 1
            start[g] = j
            xy_before[g] = n_xy
            n_xy += 1
        elif eB[i] != eB[order[j - 1]]:
            n_xy += 1
    start[n_xx] = p
    return order, start, xy_before, n_xx, n_xx + n_xy


@njit(**_JIT)
def _tangent_share(share, n_shares, order, start, xy_before, n_xx, k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0,
                   F, dF, xp, xp_norm, c, c_ref, first, last, H0, H1, scale, w, nq, M, rpoly, smallest, row_el, col_el,
                   blocks):  # pragma: no cover - compiled
    """The blocks of the x-element groups ``share``, ``share + n_shares``, … (one thread's part).

    Per pair i in contact: the weights w φ_a(ξ_k) and ∂T/∂(q_x, q_y) of its block (module notes); with
    ``smallest`` y minimizes the gap (:mod:`~skfiber.contact.smallest_gap`, radius quintics ``rpoly``) and
    δξ_y comes from φ′ = 0, otherwise from eq. 66.  ``vec`` (7, 3), ``basis`` (5, 4), ``sb`` (8,) and
    ``dxis`` (8, 3: δξ_y per DOF) are scratch, allocated once per call, not per pair."""
    weights = np.empty(4)
    dT = np.empty((3, 8, 3))
    vec, basis, sb, dxis = np.empty((7, 3)), np.empty((5, 4)), np.empty(8), np.empty((8, 3))
    for gx in range(share, n_xx, n_shares):
        gy = n_xx + xy_before[gx] - 1  # current x–y block
        for j in range(start[gx], start[gx + 1]):
            i = order[j]
            if j == start[gx]:
                row_el[gx], col_el[gx] = eA[i], eA[i]
            if j == start[gx] or eB[i] != eB[order[j - 1]]:
                gy += 1
                row_el[gy], col_el[gy] = eA[i], eB[i]
            # the pair's weights w φ_a(ξ_k) (4,) and ∂T/∂(q_x, q_y) (3, 8, 3) into weights and dT (written out
            # here, not called: a compiled call passing these 31 arrays cost about 0.43 µs, half a pair's time,
            # and numba does not inline it); y′, y″, … in the rows of vec, the shape functions in basis
            kk, ea, eb, t = k[i], eA[i], eB[i], xi[i]
            q = kk % nq
            yp, ypp, Yp, Ypp, tmp, rel, n = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], vec[6]
            power_point(c[eb], t, 1, yp)
            power_point(c[eb], t, 2, ypp)
            power_point(c_ref[eb], t, 1, Yp)
            power_point(c_ref[eb], t, 2, Ypp)
            # at an interior node y″ jumps (C¹ elements): the closest-point map has a kink there;
            # use the mean of both sides (an element of the generalized Jacobian, semismooth Newton)
            other = -1
            if t <= _NODE_TOL and not first[eb]:
                other, t_other = eb - 1, 1.0
            elif t >= 1 - _NODE_TOL and not last[eb]:
                other, t_other = eb + 1, 0.0
            if other >= 0 and not smallest:  # (the smallest gap takes the one-sided values of its element)
                power_point(c[other], t_other, 2, tmp)
                for m in range(3):
                    ypp[m] = 0.5 * (ypp[m] + tmp[m])
                power_point(c_ref[other], t_other, 2, tmp)
                for m in range(3):
                    Ypp[m] = 0.5 * (Ypp[m] + tmp[m])
            d = dist[i]
            S = rx[i] + ry[i]
            for m in range(3):
                rel[m] = y[i, m] - x[i, m]
                n[m] = rel[m] / d
            J = xp_norm[kk]
            phiA, dphiA, phiB, dphiB, ddphiB = basis[0], basis[1], basis[2], basis[3], basis[4]
            w0 = (1.0, t, t * t, t * t * t)
            w1 = (0.0, 1.0, 2 * t, 3 * t * t)
            for a in range(4):
                phiA[a] = H0[q, a] * scale[ea, a]
                dphiA[a] = H1[q, a] * scale[ea, a]
                phiB[a] = (M[0, a] * w0[0] + M[1, a] * w0[1] + M[2, a] * w0[2] + M[3, a] * w0[3]) * scale[eb, a]
                dphiB[a] = (M[1, a] * w1[1] + M[2, a] * w1[2] + M[3, a] * w1[3]) * scale[eb, a]
                ddphiB[a] = (2 * M[2, a] + 6 * t * M[3, a]) * scale[eb, a]
                sb[a] = -phiA[a]
                sb[4 + a] = phiB[a]
                weights[a] = w[q] * phiA[a]
            yp2 = _dot(yp, yp)
            dlnr = dlnr0[i] + 0.5 * _dot(Yp, Ypp) / _dot(Yp, Yp) - 0.5 * _dot(yp, ypp) / yp2
            xpk = xp[kk]
            # δξ_y per DOF: from φ′ = 0 (smallest gap) or f = 0 (eq. 95); zero at a fiber end (fixed)
            if smallest and not fixed[i]:
                _smallest_sensitivity(i, eb, t, c, c_ref, rpoly, x, y, rx, ry, dlnr, xp, kk, J, vec, basis, dxis)
            else:
                fxi = yp2 + _dot(rel, ypp)
                inv = 0.0 if fixed[i] or abs(fxi) <= 1e-300 else 1.0 / fxi
                for a in range(4):
                    for comp in range(3):
                        dxis[a, comp] = phiA[a] * yp[comp] * inv
                        dxis[4 + a, comp] = -(phiB[a] * yp[comp] + dphiB[a] * rel[comp]) * inv
            n_yp = _dot(n, yp)
            Fi, dFi, rxi, ryi = F[i], dF[i], rx[i], ry[i]
            alpha = Fi * J / d
            # the factors of the loop below, read once (its stores into dT may alias the inputs for the compiler)
            c_rx = -0.5 * (rxi / J**2)
            c_ry = -0.5 * (ryi / yp2)
            ry_dlnr = ryi * dlnr
            d_S2 = d / S**2
            dF_J = dFi * J
            for b in range(8):
                for comp in range(3):
                    dxi = dxis[b, comp]
                    if b < 4:
                        drx = c_rx * dphiA[b] * xpk[comp]
                        dry = ry_dlnr * dxi
                        dJ = dphiA[b] * (xpk[comp] / J)
                    else:
                        drx = 0.0
                        dry = ry_dlnr * dxi + c_ry * dphiB[b - 4] * yp[comp]
                        dJ = 0.0
                    dd = sb[b] * n[comp] + n_yp * dxi
                    dg = dd / S - d_S2 * (drx + dry)
                    v = dF_J * dg - alpha * dd + Fi * dJ
                    for r in range(3):
                        dT[r, b, comp] = n[r] * v + yp[r] * (alpha * dxi)
                    dT[comp, b, comp] += alpha * sb[b]
            for a in range(4):
                for r in range(3):
                    for b in range(4):
                        for m in range(3):
                            blocks[gx, a, r, b, m] += weights[a] * dT[r, b, m]
                            blocks[gy, a, r, b, m] += weights[a] * dT[r, 4 + b, m]


@njit(**_JIT)
def _active_pairs(active, k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF):  # pragma: no cover - compiled
    """The per-pair arrays of the pairs ``active`` (the pairs in contact), in that order."""
    n = active.size
    out = (np.empty(n, k.dtype), np.empty(n, eA.dtype), np.empty(n, eB.dtype), np.empty(n), np.empty(n, fixed.dtype),
           np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
           np.empty(n))
    for j in range(n):
        i = active[j]
        out[0][j], out[1][j], out[2][j], out[3][j], out[4][j] = k[i], eA[i], eB[i], xi[i], fixed[i]
        for m in range(3):
            out[5][j, m] = x[i, m]
            out[6][j, m] = y[i, m]
        out[7][j], out[8][j], out[9][j], out[10][j], out[11][j], out[12][j] = (dist[i], rx[i], ry[i], dlnr0[i], F[i],
                                                                              dF[i])
    return out


@njit(**_JIT)
def tangent_loop(active, k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF, xp, xp_norm, c, c_ref, first, last,
                 H0, H1, scale, w, nq, ne, M, rpoly, smallest):  # pragma: no cover - compiled
    """The blocks of the pairs ``active`` (those in contact; the per-pair arrays ``k`` … ``dF`` are of all
    pairs): per element of x the x–x block, per element pair the x–y block (each 12 × 12 as (4, 3, 4, 3)), in
    the order of (element of x, element of y); returns the row elements, the column elements and the blocks.
    Each block sums its pairs in one order (:func:`tangent_loop_parallel` shares the elements of x out among
    threads, with the same result)."""
    k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF = _active_pairs(active, k, eA, eB, xi, fixed, x, y, dist,
                                                                           rx, ry, dlnr0, F, dF)
    order, start, xy_before, n_xx, G = _tangent_groups(eA, eB, ne)
    blocks = np.zeros((G, 4, 3, 4, 3))
    row_el = np.empty(G, dtype=np.int64)
    col_el = np.empty(G, dtype=np.int64)
    _tangent_share(0, 1, order, start, xy_before, n_xx, k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF, xp,
                   xp_norm, c, c_ref, first, last, H0, H1, scale, w, nq, M, rpoly, smallest, row_el, col_el, blocks)
    return row_el, col_el, blocks


@njit(parallel=True, **_JIT)
def tangent_loop_parallel(active, k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF, xp, xp_norm, c, c_ref, first,
                          last, H0, H1, scale, w, nq, ne, M, rpoly, smallest, n_shares):  # pragma: no cover - compiled
    """:func:`tangent_loop` with the elements of x shared out cyclically among ``n_shares`` threads."""
    k, eA, eB, xi, fixed, x, y, dist, rx, ry, dlnr0, F, dF = _active_pairs(active, k, eA, eB, xi, fixed, x, y, dist,
                                                                           rx, ry, dlnr0, F, dF)
    order, start, xy_before, n_xx, G = _tangent_groups(eA, eB, ne)
    blocks = np.zeros((G, 4, 3, 4, 3))
    row_el = np.empty(G, dtype=np.int64)
    col_el = np.empty(G, dtype=np.int64)
    n_shares = max(1, min(n_xx, n_shares))
    for share in numba.prange(n_shares):
        _tangent_share(share, n_shares, order, start, xy_before, n_xx, k, eA, eB, xi, fixed, x, y, dist, rx, ry,
                       dlnr0, F, dF, xp, xp_norm, c, c_ref, first, last, H0, H1, scale, w, nq, M, rpoly, smallest,
                       row_el, col_el, blocks)
    return row_el, col_el, blocks
