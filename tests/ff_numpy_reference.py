"""The numpy implementation of fiber–fiber contact before it was compiled: the test reference.

The closest points (quintic eq. 67: certified monotone fast path, companion
eigenvalues elsewhere), the contact point – partner fiber pairs and gaps, the
consistent tangent triplets (Appendix A.3) and the step bound (eqs. 69–73) as
they were written with numpy; ``tests/test_contact_fibers_kernels.py`` checks
the compiled kernels against them to round-off.
"""
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from skfiber.contact.broadphase import box_pairs
from skfiber.contact.fiber_geometry import RADIUS_SAFETY, FiberSetup, FiberState, reference_radius
from skfiber.contact.fiber_pairs import ContactPairs
from skfiber.discretization import hermite_shape

# power coefficients c = M q for q = (y(0), y′(0), y(1), y′(1)) (slopes per unit ξ): eq. 68
POWER_FROM_HERMITE = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0], [-3, -2, 3, -1], [2, 1, -2, 1]])
# Bézier control points P = B q: P0 = y0, P1 = y0 + y0′/3, P2 = y1 − y1′/3, P3 = y1
BEZIER_FROM_HERMITE = np.array([[1.0, 0, 0, 0], [1, 1 / 3, 0, 0], [0, 0, 1, -1 / 3], [0, 0, 1, 0]])
_BEZIER_FROM_POWER = BEZIER_FROM_HERMITE @ np.linalg.inv(POWER_FROM_HERMITE)

# a coefficient below this fraction of the largest one does not change the
# quintic on [0, 1] by more than round-off: it is dropped (effective degree)
_DEGREE_TOL = 1e-13
# accept eigenvalues with |imaginary part| below this as (near-double) real roots
_IMAG_TOL = 1e-5
_ROOT_SLACK = 1e-9  # roots in [−slack, 1 + slack] count (then clipped)


@dataclass
class ClosestPoints:
    """Closest point on each segment.

    Attributes
    ----------
    xi
        Parameter ξ ∈ [0, 1] of the closest point, (n,).
    distance
        |y(ξ) − x|, (n,).
    stationary
        True where ξ is a root of f (interior minimum; the implicit-function
        derivative of eq. 66 applies), False where the minimum is at an end
        with f ≠ 0.
    """

    xi: np.ndarray
    distance: np.ndarray
    stationary: np.ndarray


def _bernstein_power(c: np.ndarray) -> np.ndarray:
    return np.matmul(_BEZIER_FROM_POWER, c)


def quintic_coefficients(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Coefficients a0 … a5 (ascending) of f(ξ) = (y(ξ) − x) · y′(ξ) (eq. 67), (n, 6)."""
    c = np.asarray(c, dtype=float)
    A = c.copy()
    A[:, 0] = c[:, 0] - x
    B = c[:, 1:] * np.array([1.0, 2.0, 3.0])[None, :, None]  # y′ coefficients
    AB = np.matmul(A, B.transpose(0, 2, 1))  # (n, 4, 3): degree i + j
    a = np.zeros((c.shape[0], 6))
    for i in range(4):
        for j in range(3):
            a[:, i + j] += AB[:, i, j]
    return a


def _polyval(a: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """Σ a[..., j] ξ^j by Horner; a (n, m), ξ (n, ...)."""
    out = np.zeros_like(xi)
    for j in range(a.shape[1] - 1, -1, -1):
        out = out * xi + a[:, j].reshape((-1,) + (1,) * (xi.ndim - 1))
    return out


def _polyder(a: np.ndarray) -> np.ndarray:
    return a[:, 1:] * np.arange(1, a.shape[1])[None, :]


def polynomial_roots(a: np.ndarray) -> np.ndarray:
    """All complex roots of the polynomials Σ a[:, j] ξ^j (n, m+1), as (n, m); NaN pads.

    Coefficients below ``1e-13 × max |a|`` are dropped from the top (the
    effective degree); each degree is solved with one batched eigenvalue
    call on the companion matrices.
    """
    a = np.asarray(a, dtype=float)
    n, m1 = a.shape
    m = m1 - 1
    roots = np.full((n, m), np.nan + 0j)
    scale = np.max(np.abs(a), axis=1)
    significant = np.abs(a) > _DEGREE_TOL * scale[:, None]
    degree = np.where(significant.any(axis=1), m - np.argmax(significant[:, ::-1], axis=1), 0)
    for k in range(1, m + 1):
        rows = np.flatnonzero(degree == k)
        if rows.size == 0:
            continue
        lead = a[rows, k]
        monic = a[rows, :k] / lead[:, None]  # a0 … a_{k−1} over a_k
        if k == 1:
            roots[rows, 0] = -monic[:, 0]
            continue
        comp = np.zeros((rows.size, k, k))
        comp[:, 0, :] = -monic[:, ::-1]  # first row: −a_{k−1}, …, −a0
        comp[:, np.arange(1, k), np.arange(k - 1)] = 1.0
        roots[rows, :k] = np.linalg.eigvals(comp)
    return roots


def _newton_polish(a: np.ndarray, xi: np.ndarray, iterations: int = 2) -> np.ndarray:
    """A few Newton steps on f, kept only where they stay in [0, 1] and reduce |f|."""
    da = _polyder(a)
    for _ in range(iterations):
        f = _polyval(a, xi)
        df = _polyval(da, xi)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = xi - f / df
        ok = np.isfinite(new) & (new >= 0) & (new <= 1)
        ok &= np.abs(_polyval(a, np.where(ok, new, xi))) <= np.abs(f)
        xi = np.where(ok, new, xi)
    return xi


def _segment_points(c: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """y(ξ) for ξ of shape (n, k): (n, k, 3)."""
    powers = xi[..., None] ** np.arange(4)  # (n, k, 4)
    return np.matmul(powers, c)


def _monotone(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """True where Bézier bounds prove f′ > 0 on [0, 1]."""
    P = _bernstein_power(c)  # (n, 4, 3) control points of y
    D = np.stack([c[:, 1], c[:, 1] + c[:, 2], c[:, 1] + 2 * c[:, 2] + 3 * c[:, 3]], axis=1)  # y′ (Bernstein)
    u = D[:, 0] + D[:, 2]
    u /= np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
    m = np.maximum(np.min(np.matmul(D, u[:, :, None])[:, :, 0], axis=1), 0.0)  # |y′| ≥ m
    M2 = np.maximum(np.linalg.norm(2 * c[:, 2], axis=1), np.linalg.norm(2 * c[:, 2] + 6 * c[:, 3], axis=1))
    Md = np.max(np.linalg.norm(P - x[:, None, :], axis=2), axis=1)  # |y − x| ≤ Md
    return m * m > 1.001 * Md * M2 + 1e-300


def _bracketed_root(a: np.ndarray, lo: np.ndarray, hi: np.ndarray, f_lo: np.ndarray, f_hi: np.ndarray) -> np.ndarray:
    """Root of the increasing f in (lo, hi) with f(lo) < 0 < f(hi): Newton, bisection fallback.

    Converged when the Newton correction is below 1e-14 (ξ ∈ [0, 1]).
    """
    da = _polyder(a)
    xi = lo - f_lo * (hi - lo) / (f_hi - f_lo)  # secant start
    active = np.arange(xi.size)
    for _ in range(60):
        x = xi[active]
        f = _polyval(a[active], x)
        df = _polyval(da[active], x)
        neg = f < 0
        lo[active] = np.where(neg, x, lo[active])
        hi[active] = np.where(neg, hi[active], x)
        with np.errstate(divide="ignore", invalid="ignore"):
            correction = -f / df
        done = (np.abs(correction) <= 1e-14) | (f == 0)
        new = x + correction
        inside = np.isfinite(new) & (new > lo[active]) & (new < hi[active])
        new = np.where(inside, new, 0.5 * (lo[active] + hi[active]))
        xi[active] = np.where(done, np.clip(x + np.where(done, correction, 0.0), 0.0, 1.0), new)
        active = active[~done]
        if active.size == 0:
            break
    return xi


def closest_points(c: np.ndarray, x: np.ndarray, *, method: str = "auto") -> ClosestPoints:
    """Closest point on each segment c[i] (power basis, (n, 4, 3)) to the point x[i] (n, 3).

    Parameters
    ----------
    method
        ``"auto"`` (fast path where f is certified monotone, eigenvalues
        elsewhere) or ``"eig"`` (companion eigenvalues for every pair).
    """
    if method not in ("auto", "eig"):
        raise ValueError(f"unknown method {method!r}; pick one of 'auto', 'eig'")
    c = np.asarray(c, dtype=float)
    x = np.asarray(x, dtype=float)
    n = c.shape[0]
    xi = np.zeros(n)
    stationary = np.zeros(n, dtype=bool)
    if n == 0:
        return ClosestPoints(xi, np.zeros(0), stationary)
    a = quintic_coefficients(c, x)
    fast = _monotone(c, x) if method == "auto" else np.zeros(n, dtype=bool)

    # --- fast path: f increasing on [0, 1]
    idx = np.flatnonzero(fast)
    if idx.size:
        af = a[idx]
        f0 = af[:, 0]
        f1 = af.sum(axis=1)
        xs = np.where(f0 >= 0, 0.0, 1.0)  # f ≥ 0 at 0: minimum at ξ = 0; f ≤ 0 at 1: at ξ = 1
        inner = (f0 < 0) & (f1 > 0)
        j = np.flatnonzero(inner)
        if j.size:
            xs[j] = _bracketed_root(af[j], np.zeros(j.size), np.ones(j.size), f0[j], f1[j])
        xi[idx] = xs
        stationary[idx] = inner | (f0 == 0) | (f1 == 0)

    # --- general path: all roots of the quintic, plus the ends
    idx = np.flatnonzero(~fast)
    if idx.size:
        ag = a[idx]
        r = polynomial_roots(ag)
        real = np.abs(r.imag) <= _IMAG_TOL * (1 + np.abs(r.real))
        re = r.real
        ok = real & (re >= -_ROOT_SLACK) & (re <= 1 + _ROOT_SLACK)
        cand = np.where(ok, np.clip(re, 0.0, 1.0), 0.0)
        cand = _newton_polish(ag, cand)
        cand = np.concatenate([cand, np.zeros((idx.size, 1)), np.ones((idx.size, 1))], axis=1)
        valid = np.concatenate([ok, np.ones((idx.size, 2), dtype=bool)], axis=1)
        y = _segment_points(c[idx], cand)
        d2 = np.where(valid, np.sum((y - x[idx, None, :]) ** 2, axis=2), np.inf)
        best = np.argmin(d2, axis=1)  # roots come first: ties go to the stationary point
        xi[idx] = cand[np.arange(idx.size), best]
        stationary[idx] = best < r.shape[1]

    y = _segment_points(c, xi[:, None])[:, 0]
    return ClosestPoints(xi, np.linalg.norm(y - x, axis=1), stationary)


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of (n, 3) arrays."""
    return (a * b).sum(axis=-1)


def power_eval(c: np.ndarray, xi: np.ndarray, derivative: int) -> np.ndarray:
    """Derivative of Σ c_j ξ^j (c (n, 4, 3)) at ξ (n,), (n, 3).

    Parameters
    ----------
    c
        (n, 4, 3) power coefficients.
    xi
        (n,) parameters.
    derivative
        0, 1 or 2.

    Returns
    -------
    numpy.ndarray
        (n, 3).
    """
    if derivative == 0:
        w = np.stack([np.ones_like(xi), xi, xi**2, xi**3], axis=1)
    elif derivative == 1:
        w = np.stack([np.zeros_like(xi), np.ones_like(xi), 2 * xi, 3 * xi**2], axis=1)
    else:
        w = np.stack([np.zeros_like(xi), np.zeros_like(xi), 2 * np.ones_like(xi), 6 * xi], axis=1)
    return np.matmul(w[:, None, :], c)[:, 0]


def chord_parameter(P: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Parameter in [0, 1] of the point of the chord P0–P3 closest to x ((n, 4, 3) and (n, 3) → (n,))."""
    e = P[:, 3] - P[:, 0]
    ee = row_dot(e, e)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = row_dot(x - P[:, 0], e) / ee
    return np.clip(np.where(ee > 0, t, 0.0), 0.0, 1.0)


def chord_distance(P: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Distance from x to the chord segment P0–P3."""
    t = chord_parameter(P, x)
    return np.linalg.norm(x - P[:, 0] - t[:, None] * (P[:, 3] - P[:, 0]), axis=1)


def chord_deviation(P: np.ndarray) -> np.ndarray:
    """Largest distance of P1, P2 from the chord: the segment lies within it of the chord."""
    return np.maximum(chord_distance(P, P[:, 1]), chord_distance(P, P[:, 2]))

def fiber_state(s: FiberSetup, model, u: np.ndarray, name: str = "contact") -> FiberState:
    """The current geometry of all elements at displacement u (the numpy reference of the compiled one)."""
    d = model.discretization
    u = np.asarray(u, dtype=float)
    Qs = (d.reference_dofs + u)[s.dofs] * s.scale[:, :, None]
    c = np.matmul(POWER_FROM_HERMITE, Qs)
    P = np.matmul(BEZIER_FROM_HERMITE, Qs)
    x = np.matmul(s.H0, Qs).reshape(-1, 3)
    xp = np.matmul(s.H1, Qs).reshape(-1, 3)
    xp_norm = np.linalg.norm(xp, axis=1)
    speed_s = np.linalg.norm(np.matmul(s.Hs1, Qs), axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = s.r0.ravel() * np.sqrt(s.Xp.ravel() / xp_norm)
        r_s = s.r0_s * np.sqrt(s.Xp_s / speed_s)
    reach = RADIUS_SAFETY * np.maximum(r_s.max(axis=1), rx.reshape(s.ne, s.nq).max(axis=1))
    return FiberState(Qs, c, P, x, xp, xp_norm, rx, reach, speed_s.min(axis=1), chord_deviation(P), P.min(axis=1),
                      P.max(axis=1))


def point_candidates(s: FiberSetup, st: FiberState, lo, hi, reach, extra=None):
    """(contact point, element) candidates of different fibers, pruned by distance bounds.

    Parameters
    ----------
    s, st
        Setup and current geometry.
    lo, hi
        (e, 3) boxes of the elements.
    reach
        (e,) bound of the current radius on each element.
    extra
        (e*q,) how far each contact point may move (swept boxes over a step),
        or None: then the fat-chord and partner-fiber bounds prune further.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Contact point indices k and partner elements eB.
    """
    el = s.elements
    ep = box_pairs(lo[el], hi[el], s.fiber[el], reach[el])
    if ep.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    eA, eB = el[ep[:, 0]], el[ep[:, 1]]
    k = (eA[:, None] * s.nq + np.arange(s.nq)[None, :]).ravel()
    eB = np.repeat(eB, s.nq)
    xk = st.x[k]
    # lower bound of the distance from x_k to element eB: box, and fat chord
    lb = np.linalg.norm(np.maximum(np.maximum(lo[eB] - xk, xk - hi[eB]), 0.0), axis=1)
    if extra is not None:  # swept boxes over a step: x_k moves by at most extra[k]
        keep = lb < st.rx[k] + reach[eB] + extra[k]
        return k[keep], eB[keep]
    keep = np.flatnonzero(lb < st.rx[k] + reach[eB])
    k, eB, lb = k[keep], eB[keep], lb[keep]
    lb = np.maximum(lb, chord_distance(st.P[eB], st.x[k]) - st.deviation[eB])
    keep = lb < st.rx[k] + reach[eB]
    k, eB, lb = k[keep], eB[keep], lb[keep]
    if k.size == 0:
        return k, eB
    # upper bound of the distance to the partner fiber: points on the element
    t = chord_parameter(st.P[eB], st.x[k])
    y = np.matmul((t[:, None] ** np.arange(4))[:, None, :], st.c[eB])[:, 0]
    ub = np.minimum(np.linalg.norm(y - st.x[k], axis=1),
                    np.minimum(np.linalg.norm(st.P[eB, 0] - st.x[k], axis=1),
                               np.linalg.norm(st.P[eB, 3] - st.x[k], axis=1)))
    key = k * s.nf + s.fiber[eB]
    order = np.argsort(key, kind="stable")
    ks = key[order]
    new = np.r_[True, ks[1:] != ks[:-1]]
    gmin = np.minimum.reduceat(ub[order], np.flatnonzero(new))
    gid = np.cumsum(new) - 1
    keep_s = lb[order] <= gmin[gid] * (1 + 1e-9)
    sel = np.sort(order[keep_s])
    return k[sel], eB[sel]


def find_pairs(model, s: FiberSetup, st: FiberState, *, gamma: float, method: str = "auto") -> ContactPairs:
    """The contact point – partner fiber pairs within reach (no check).

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    gamma
        γ of the penalty law (admissibility 1 + γ g).
    method
        Closest-point method of :func:`~skfiber.contact.closest_point.closest_points`.

    Returns
    -------
    ContactPairs
    """
    lo, hi = st.P.min(axis=1), st.P.max(axis=1)
    k, eB = point_candidates(s, st, lo, hi, st.reach)
    cp = closest_points(st.c[eB], st.x[k], method=method)
    # best element of each partner fiber
    key = k * s.nf + s.fiber[eB]
    order = np.lexsort((cp.distance, key))
    ks = key[order]
    best = order[np.r_[True, ks[1:] != ks[:-1]]] if ks.size else order
    k, eB, xi, dist, stat = k[best], eB[best], cp.xi[best], cp.distance[best], cp.stationary[best]
    fixed = ~stat & (((xi == 0.0) & s.first[eB]) | ((xi == 1.0) & s.last[eB]))
    eA = k // s.nq
    y = power_eval(st.c[eB], xi, 0)
    yp = power_eval(st.c[eB], xi, 1)
    Yp = power_eval(s.c_ref[eB], xi, 1)
    r0y, _ = reference_radius(model, s, eB, xi)
    with np.errstate(divide="ignore", invalid="ignore"):
        ry = r0y * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
        g = dist / (st.rx[k] + ry) - 1.0
    return ContactPairs(k, eA, eB, xi, fixed, st.x[k], y, dist, st.rx[k], ry, g,
                        1.0 + gamma * g, s.fiber[eA], s.fiber[eB])



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


SAFEGUARD_ROUNDS = 8  # restarts of the safeguard estimate along a step


@dataclass
class StepData:
    """Per (contact point, partner element) data of the safeguard estimate (eqs. 72–73)."""

    d: np.ndarray  # distance now
    move: np.ndarray  # max over y ∈ E′ of |Δu(y) − Δu(x_k)|
    rx: np.ndarray  # r_x now
    J: np.ndarray  # |x′| now (per unit ξ)
    dJ: np.ndarray  # |Δu′(x_k)|
    rmax: np.ndarray  # max_E′ r0
    Xmax: np.ndarray  # max_E′ |X′|
    vmin: np.ndarray  # min_E′ |x′|
    dv: np.ndarray  # max_E′ |Δu′|
    gamma: float

    def take(self, i: np.ndarray) -> "StepData":
        """The rows ``i``."""
        return StepData(**{k: (v if k == "gamma" else v[i]) for k, v in self.__dict__.items()})

    def estimate(self, delta) -> np.ndarray:
        """e(δ) ≤ 1 + γ g(u + δ Δu); −∞ where a radius bound breaks down or the distance bound d − δ m is ≤ 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = self.J - delta * self.dJ
            sy = self.vmin - delta * self.dv
            r_x = np.where(sx > 0, self.rx * np.sqrt(self.J / sx), np.inf)
            chi = np.where(sy > 0, self.rmax * np.sqrt(self.Xmax / sy), np.inf)
            e = 1.0 + self.gamma * ((self.d - delta * self.move) / (r_x + chi) - 1.0)
        return np.where(np.isfinite(e) & (self.d - delta * self.move > 0), e, -np.inf)


def step_bound(model, s: FiberSetup, st: FiberState, u: np.ndarray, du: np.ndarray, delta_bar: float, *,
               gamma: float, name: str) -> float:
    """Largest δ ∈ (0, 1] keeping e(δ) > δ̄ min(1 + γ g, 1) at every contact point (eqs. 69–73).

    The estimate is applied from δ = 0 and then again from the state it
    reached (at most :data:`SAFEGUARD_ROUNDS` times).

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry at u.
    u, du
        (N,) state and full Newton step (finite, du not zero).
    delta_bar
        δ̄ ∈ (0, 1).
    gamma
        γ of the penalty law.
    name
        The contact's name (for messages).

    Returns
    -------
    float
    """
    dQs = du[s.dofs] * s.scale[:, :, None]
    dP = np.matmul(BEZIER_FROM_HERMITE, dQs)
    dUp = np.linalg.norm(3.0 * np.diff(dP, axis=1), axis=2).max(axis=1)  # max_E |Δu′| per unit ξ
    P1 = st.P + dP
    lo = np.minimum(st.P.min(axis=1), P1.min(axis=1))
    hi = np.maximum(st.P.max(axis=1), P1.max(axis=1))
    speed1 = st.min_speed - dUp  # radius bound over the whole step
    with np.errstate(divide="ignore", invalid="ignore"):
        chi0 = s.r0_s.max(axis=1) * np.sqrt(s.Xp_s.max(axis=1) / st.min_speed)
        chi1 = s.r0_s.max(axis=1) * np.sqrt(s.Xp_s.max(axis=1) / speed1)
    reach = RADIUS_SAFETY * np.where(speed1 > 0, np.maximum(chi1, chi0), 2 * chi0)
    dx = np.matmul(s.H0, dQs).reshape(-1, 3)
    dxp = np.matmul(s.H1, dQs).reshape(-1, 3)
    k, eB = point_candidates(s, st, lo, hi, reach, extra=np.linalg.norm(dx, axis=1))
    if k.size == 0:
        return 1.0
    # |Δu(y) − Δu(x_k)| ≤ max_i |ΔP_i(E′) − Δu(x_k)| for y on E′ (convex hull)
    move = np.linalg.norm(dP[eB] - dx[k][:, None, :], axis=2).max(axis=1)
    dJ = np.linalg.norm(dxp[k], axis=1)
    target = None
    delta = 0.0
    for round_ in range(SAFEGUARD_ROUNDS):
        if round_:
            st = fiber_state(s, model, u + delta * du, name)
        dist, eps = partner_distances(model, s, st, k, eB, gamma)
        data = StepData(
            d=dist, move=move, rx=st.rx[k], J=st.xp_norm[k], dJ=dJ, rmax=s.r0_s.max(axis=1)[eB],
            Xmax=s.Xp_s.max(axis=1)[eB], vmin=st.min_speed[eB], dv=dUp[eB], gamma=gamma,
        )
        e0 = data.estimate(0.0)
        if target is None:
            target = delta_bar * np.minimum(eps, 1.0)
            # where the estimate is too coarse already at δ = 0, compare it with itself;
            # where it is not even positive it says nothing (evaluate still rejects bad states)
            target = np.where(e0 <= target, delta_bar * e0, target)
            watch = e0 > 0
        elif np.any(watch & ~(e0 > target)):
            return delta  # the restart does not reach further
        left = 1.0 - delta
        limiting = np.flatnonzero(watch & ~(data.estimate(left) > target))
        if limiting.size == 0:
            return 1.0
        # bisection for the largest step all pairs allow (each e decreases with δ); a pair
        # that passes below the current upper end passes everywhere below: drop it
        sub = data.take(limiting)
        tgt = target[limiting]
        lo_d, hi_d = 0.0, left
        for _ in range(30):
            mid = 0.5 * (lo_d + hi_d)
            ok = sub.estimate(mid) > tgt
            if ok.all():
                lo_d = mid
            else:
                hi_d = mid
                fail = np.flatnonzero(~ok)
                sub, tgt = sub.take(fail), tgt[fail]
        step = lo_d
        delta += step
        if step < 0.05 * left:  # little progress: stop here
            break
    return float(max(delta, np.finfo(float).tiny))


def partner_distances(model, s: FiberSetup, st: FiberState, k: np.ndarray, eB: np.ndarray, gamma: float):
    """Distance from x_k to element eB and 1 + γ g for it.

    Exact within reach; elsewhere a lower bound of the distance (box and
    fat chord) and 1 + γ g = +∞ (out of reach: not in contact).

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    k, eB
        (n,) contact point indices and partner elements.
    gamma
        γ of the penalty law.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Distances and 1 + γ g, (n,) each.
    """
    xk = st.x[k]
    lo, hi = st.P.min(axis=1), st.P.max(axis=1)
    dist = np.linalg.norm(np.maximum(np.maximum(lo[eB] - xk, xk - hi[eB]), 0.0), axis=1)
    reach = st.rx[k] + st.reach[eB]
    inside = np.flatnonzero(dist < reach)
    dist[inside] = np.maximum(dist[inside], chord_distance(st.P[eB[inside]], xk[inside]) - st.deviation[eB[inside]])
    near = inside[dist[inside] < reach[inside]]
    eps = np.full(k.size, np.inf)
    if near.size:
        e = eB[near]
        cp = closest_points(st.c[e], xk[near])
        dist[near] = cp.distance
        yp = power_eval(st.c[e], cp.xi, 1)
        Yp = power_eval(s.c_ref[e], cp.xi, 1)
        r0y, _ = reference_radius(model, s, e, cp.xi)
        with np.errstate(divide="ignore", invalid="ignore"):
            ry = r0y * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
            eps[near] = 1.0 + gamma * (cp.distance / (st.rx[k[near]] + ry) - 1.0)
    return dist, eps
