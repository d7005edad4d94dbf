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
summed per element (x–x) and per element pair (x–y) and returned as COO
triplets (:func:`tangent_triplets`).  Where the closest point sits on an
interior node of B, y″ jumps (C¹ elements) and the closest-point map has a
kink: there the mean of the two one-sided y″ is used (an element of the
generalized Jacobian).

Example
-------
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

import math

import numpy as np
import scipy.sparse as sps

from ..discretization import hermite_shape
from .fiber_geometry import FiberSetup, FiberState, power_eval, reference_radius, row_dot
from .fiber_pairs import ContactPairs

__all__ = ["tangent_triplets", "pair_derivatives"]

_CHUNK = 50000  # contact pairs per tangent chunk (memory ≈ _CHUNK × 3 kB)
_NODE_TOL = 1e-9  # closest points this close (in ξ) to an interior node are "at the node"


def tangent_triplets(model, s: FiberSetup, st: FiberState, pr: ContactPairs, active: np.ndarray, F: np.ndarray,
                     dF: np.ndarray):
    """COO triplets of the tangent: x–x blocks summed per element of x, x–y blocks per element pair.

    The block of pair p is the outer product of its weights w φ_a(ξ_k) (4)
    with ∂T_p/∂(q_x, q_y) (3 × 8 × 3); the sums over the pairs of an
    element (pair) are one sparse × dense product.

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    pr
        The pairs.
    active
        Indices of the pairs in contact (g < 0).
    F, dF
        F(g) and dF/dg of every pair.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        rows, cols, values.
    """
    order = active[np.lexsort((pr.element_y[active], pr.element_x[active]))]
    rows, cols, vals = [], [], []
    for chunk in np.array_split(order, max(1, math.ceil(order.size / _CHUNK))):
        weights, dT = pair_derivatives(model, s, st, pr, chunk, F[chunk], dF[chunk])
        eA, eB = pr.element_x[chunk], pr.element_y[chunk]
        p = chunk.size
        for part, key, col_el in ((dT[:, :, :4], eA, eA), (dT[:, :, 4:], eA * s.ne + eB, eB)):
            new = np.r_[True, key[1:] != key[:-1]]  # keys are sorted
            group = np.cumsum(new) - 1
            starts = np.flatnonzero(new)
            G = starts.size
            M = sps.csr_matrix(
                (weights.ravel(), ((4 * group[:, None] + np.arange(4)).ravel(), np.repeat(np.arange(p), 4))),
                shape=(4 * G, p),
            )
            blocks = (M @ part.reshape(p, 36)).reshape(G, 4, 3, 4, 3)  # [a, i, b, j]
            r = s.dofs[eA[starts]]  # (G, 4, 3)
            c = s.dofs[col_el[starts]]
            rows.append(np.broadcast_to(r[:, :, :, None, None], (G, 4, 3, 4, 3)).ravel())
            cols.append(np.broadcast_to(c[:, None, None, :, :], (G, 4, 3, 4, 3)).ravel())
            vals.append(blocks.ravel())
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def pair_derivatives(model, s: FiberSetup, st: FiberState, pr: ContactPairs, a: np.ndarray, F: np.ndarray,
                     dF: np.ndarray):
    """Weights w φ_a(ξ_k) (p, 4) and ∂T/∂(q_x, q_y) (p, 3, 8, 3) of the pairs a, T = F |x′| n.

    With s_b = −φ_b(ξ_k) (groups of x) or φ_b(ξ_y) (groups of y),
    δ(y − x) = s δq + y′ δξ_y, and
    δT = (F J/d) s_b δq_b + y′ (F J/d) δξ_y + n [F′ J δg − (F J/d) δd + F δJ].

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    pr
        The pairs.
    a
        (p,) indices of the pairs.
    F, dF
        (p,) F(g) and dF/dg of those pairs.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
    """
    p = a.size
    k, eA, eB, xi = pr.point[a], pr.element_x[a], pr.element_y[a], pr.xi_y[a]
    q = k % s.nq
    x, xp, y = pr.x[a], st.xp[k], pr.y[a]
    c = st.c[eB]
    yp, ypp = power_eval(c, xi, 1), power_eval(c, xi, 2)
    Yp, Ypp = power_eval(s.c_ref[eB], xi, 1), power_eval(s.c_ref[eB], xi, 2)
    # at an interior node y″ jumps (C¹ elements): the closest-point map has a kink there;
    # use the mean of both sides (an element of the generalized Jacobian, semismooth Newton)
    at0 = (xi <= _NODE_TOL) & ~s.first[eB]
    at1 = (xi >= 1 - _NODE_TOL) & ~s.last[eB]
    if np.any(at0 | at1):
        for mask, other, xo in ((at0, eB - 1, 1.0), (at1, eB + 1, 0.0)):
            i = np.flatnonzero(mask)
            if i.size:
                xo = np.full(i.size, xo)
                ypp[i] = 0.5 * (ypp[i] + power_eval(st.c[other[i]], xo, 2))
                Ypp[i] = 0.5 * (Ypp[i] + power_eval(s.c_ref[other[i]], xo, 2))
    d, rx, ry = pr.distance[a], pr.radius_x[a], pr.radius_y[a]
    S = rx + ry
    rel = y - x
    n = rel / d[:, None]
    J = st.xp_norm[k]
    r0y, dr0y = reference_radius(model, s, eB, xi)
    phiA = s.H0[q] * s.scale[eA]  # (p, 4)
    dphiA = s.H1[q] * s.scale[eA]
    phiB = hermite_shape(xi).T * s.scale[eB]
    dphiB = hermite_shape(xi, 1).T * s.scale[eB]
    sb = np.concatenate([-phiA, phiB], axis=1)  # (p, 8)

    # δξ_y (eq. 95); zero at a fiber end
    fxi = row_dot(yp, yp) + row_dot(rel, ypp)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(pr.fixed[a] | (np.abs(fxi) <= 1e-300), 0.0, 1.0 / fxi)
    dxi = np.empty((p, 8, 3))
    dxi[:, :4] = phiA[:, :, None] * yp[:, None, :]
    dxi[:, 4:] = -(phiB[:, :, None] * yp[:, None, :] + dphiB[:, :, None] * rel[:, None, :])
    dxi *= inv[:, None, None]
    # δd = n · δ(y − x)
    dd = sb[:, :, None] * n[:, None, :] + row_dot(n, yp)[:, None, None] * dxi
    # radii (eqs. 97–101)
    drx = np.zeros((p, 8, 3))
    drx[:, :4] = -0.5 * (rx / J**2)[:, None, None] * dphiA[:, :, None] * xp[:, None, :]
    yp2 = row_dot(yp, yp)
    dlnr = dr0y / r0y + 0.5 * row_dot(Yp, Ypp) / row_dot(Yp, Yp) - 0.5 * row_dot(yp, ypp) / yp2
    dry = (ry * dlnr)[:, None, None] * dxi
    dry[:, 4:] -= 0.5 * (ry / yp2)[:, None, None] * dphiB[:, :, None] * yp[:, None, :]
    dg = dd / S[:, None, None] - (d / S**2)[:, None, None] * (drx + dry)
    dJ = np.zeros((p, 8, 3))
    dJ[:, :4] = dphiA[:, :, None] * (xp / J[:, None])[:, None, :]
    alpha = F * J / d
    v = (dF * J)[:, None, None] * dg - alpha[:, None, None] * dd + F[:, None, None] * dJ
    dT = n[:, :, None, None] * v[:, None, :, :] + yp[:, :, None, None] * (alpha[:, None, None] * dxi)[:, None, :, :]
    diag = alpha[:, None] * sb  # (p, 8): the α s_b δ_ij part
    for i in range(3):
        dT[:, i, :, i] += diag
    return s.w[q][:, None] * phiA, dT
