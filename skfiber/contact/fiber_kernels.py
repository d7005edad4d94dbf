"""Fiber–fiber contact search as compiled loops (numba): broad phase, candidates, closest points, residual.

The contact of a few fibers touches a few hundred (contact point, element)
candidates per Newton iteration; through numpy that is hundreds of small-array
calls per state.  The loops here do the same work in one pass each (the
formulas are those of :mod:`skfiber.contact.fiber_pairs` and
:mod:`skfiber.contact.broadphase`):

* :func:`neighbours_of` — the broad phase over the taking-part elements
  (:func:`~skfiber.contact.broadphase.box_neighbours`: CSR rows of the
  elements of other fibers whose inflated boxes overlap);
* :func:`pairs_loop` — per contact point x_k and each element E′ of its row,
  lower bounds of d(x_k, E′) (box, then "fat chord") against r_x + r̄_E′, the
  pruning by an upper bound of the distance to the partner fiber, the closest
  point on each remaining candidate
  (:func:`~skfiber.contact.closest_point.closest_point_one`) and the best
  element of each partner fiber, in the order (contact point, partner fiber);
  :func:`pairs_loop_parallel` shares the elements out among threads, with the same result;
* :func:`residual_loop` — F(g), dF/dg (:func:`~skfiber.contact.base.penalty_force`)
  and the residual G_c = Σ F n·ξ |x′| w of the pairs (eq. 65).

Example
-------
>>> import numpy as np
>>> P = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], float)   # chord along x
>>> float(chord_distance(P, np.array([1.5, 2.0, 0.0]))), float(chord_parameter(P, np.array([6.0, 1.0, 0.0])))
(2.0, 1.0)
"""
from __future__ import annotations

import numba
import numpy as np

from .base import penalty_force
from .broadphase import box_neighbours
from .closest_point import closest_point_one

__all__ = ["neighbours_of", "pairs_loop", "pairs_loop_parallel", "residual_loop", "power_point",
           "chord_parameter", "chord_distance"]

_JIT = dict(cache=True, error_model="numpy")
_PRUNE_SLACK = 1e-9  # a candidate is kept when its lower bound ≤ (1 + this) × the fiber's upper bound


@numba.njit(**_JIT)
def power_point(c, xi, derivative, out):  # pragma: no cover - compiled
    """The derivative (0, 1, 2) of Σ c_j ξ^j (c (4, 3)) at ξ, into out (3,)."""
    if derivative == 0:
        w0, w1, w2, w3 = 1.0, xi, xi * xi, xi * xi * xi
    elif derivative == 1:
        w0, w1, w2, w3 = 0.0, 1.0, 2 * xi, 3 * xi * xi
    else:
        w0, w1, w2, w3 = 0.0, 0.0, 2.0, 6 * xi
    for m in range(3):
        out[m] = w0 * c[0, m] + w1 * c[1, m] + w2 * c[2, m] + w3 * c[3, m]
    return out


@numba.njit(**_JIT)
def chord_parameter(P, x):  # pragma: no cover - compiled
    """Parameter in [0, 1] of the point of the chord P0–P3 (P (4, 3)) closest to x."""
    ee = 0.0
    t = 0.0
    for m in range(3):
        e = P[3, m] - P[0, m]
        ee += e * e
        t += (x[m] - P[0, m]) * e
    if not ee > 0:
        return 0.0
    return min(max(t / ee, 0.0), 1.0)


@numba.njit(**_JIT)
def chord_distance(P, x):  # pragma: no cover - compiled
    """Distance from x to the chord segment P0–P3."""
    t = chord_parameter(P, x)
    d2 = 0.0
    for m in range(3):
        v = x[m] - P[0, m] - t * (P[3, m] - P[0, m])
        d2 += v * v
    return np.sqrt(d2)


@numba.njit(**_JIT)
def _distance(a, b):  # pragma: no cover - compiled
    d2 = 0.0
    for m in range(3):
        d2 += (a[m] - b[m]) ** 2
    return np.sqrt(d2)


@numba.njit(**_JIT)
def _box_distance(lo, hi, x):  # pragma: no cover - compiled
    """Distance from x to the box [lo, hi] (0 inside)."""
    return _box_box_distance(lo, hi, x, x)


@numba.njit(**_JIT)
def _upper_bound(c, P, xk, y):  # pragma: no cover - compiled
    """An upper bound of d(x_k, E′): the distance to E′'s point at the chord parameter, or to an end."""
    power_point(c, chord_parameter(P, xk), 0, y)
    return min(_distance(y, xk), min(_distance(P[0], xk), _distance(P[3], xk)))


@numba.njit(**_JIT)
def _box_box_distance(lo_a, hi_a, lo_b, hi_b):  # pragma: no cover - compiled
    """Distance between the boxes [lo_a, hi_a] and [lo_b, hi_b] (0 if they overlap)."""
    d2 = 0.0
    for m in range(3):
        v = max(max(lo_a[m] - hi_b[m], lo_b[m] - hi_a[m]), 0.0)
        d2 += v * v
    return np.sqrt(d2)


@numba.njit(**_JIT)
def _element_candidates(ia, row_start, row_end, nbr, elements, fiber, nq, x, rx, P, c, deviation, reach, lo, hi,
                        hint, hint_e, near, top, short, y):  # pragma: no cover - compiled
    """The elements of a broad-phase row that may be a candidate of some contact point of element ``ia``.

    Per partner fiber, the element whose box is nearest to ``ia``'s box gives every contact point k of
    ``ia`` for which it is a candidate (box and fat-chord tests) an upper bound of d(x_k, fiber) (``hint``
    (nq, nf), × (1 + slack); +∞ elsewhere).  An element whose box is farther from ``ia``'s box than the
    largest of those bounds is farther than the bound from every point, and is dropped (the per-point pass
    drops it anyway: see :func:`_point_candidates`).  Returns the count of the kept elements (in row order)
    in ``short``; ``near`` and ``top`` (nf,) are scratch.
    """
    eA = elements[ia]
    nf = hint.shape[1]
    near[:] = np.inf
    for r in range(row_start, row_end):
        eB = elements[nbr[r]]
        d = _box_box_distance(lo[eA], hi[eA], lo[eB], hi[eB])
        if d < near[fiber[eB]]:
            near[fiber[eB]] = d
            hint_e[fiber[eB]] = eB
    top[:] = 0.0
    for f in range(nf):
        for q in range(nq):
            hint[q, f] = np.inf
        if hint_e[f] < 0:
            top[f] = np.inf
            continue
        e = hint_e[f]
        for q in range(nq):  # a bound only where that element is a candidate of the point (the same tests)
            k = eA * nq + q
            bound = rx[k] + reach[e]
            lb = _box_distance(lo[e], hi[e], x[k])
            if lb < bound and max(lb, chord_distance(P[e], x[k]) - deviation[e]) < bound:
                hint[q, f] = _upper_bound(c[e], P[e], x[k], y) * (1 + _PRUNE_SLACK)
            top[f] = max(top[f], hint[q, f])
        hint_e[f] = -1
    m = 0
    for r in range(row_start, row_end):
        eB = elements[nbr[r]]
        if _box_box_distance(lo[eA], hi[eA], lo[eB], hi[eB]) > top[fiber[eB]]:
            continue
        short[m] = eB
        m += 1
    return m


@numba.njit(**_JIT)
def _point_candidates(k, short, count, fiber, x, rx, P, c, deviation, reach, lo, hi, gmin, hint, cand_e, cand_lb,
                      y):  # pragma: no cover - compiled
    """The candidate elements of contact point k among ``short[:count]``, into cand_e, cand_lb.

    Box and fat-chord lower bounds of d(x_k, E′) against r_x + r̄_E′, then
    the pruning by the upper bound of the distance to each partner fiber
    (points of its candidate elements: at the chord parameter, and the ends;
    ``gmin`` is per fiber, +∞ on entry and on return).  Returns the count.

    ``hint`` (per fiber) is the upper bound of d(x_k, fiber) from one of its
    candidate elements (:func:`_element_candidates`; +∞: none): an element
    whose box is farther is skipped at once.  The kept candidates are the
    same as without it: the hint is ≥ the fiber's smallest upper bound over
    the candidates, and a skipped element's lower bound exceeds it.
    """
    xk = x[k]
    m = 0
    for i in range(count):
        eB = short[i]
        lb = _box_distance(lo[eB], hi[eB], xk)
        bound = rx[k] + reach[eB]
        if not lb < bound or lb > hint[fiber[eB]]:
            continue
        lb = max(lb, chord_distance(P[eB], xk) - deviation[eB])
        if not lb < bound:
            continue
        ub = _upper_bound(c[eB], P[eB], xk, y)
        gmin[fiber[eB]] = min(gmin[fiber[eB]], ub)
        cand_e[m] = eB
        cand_lb[m] = lb
        m += 1
    kept = 0
    for i in range(m):
        if cand_lb[i] <= gmin[fiber[cand_e[i]]] * (1 + _PRUNE_SLACK):
            cand_e[kept] = cand_e[i]
            cand_lb[kept] = cand_lb[i]
            kept += 1
    gmin[:] = np.inf
    return kept


def neighbours_of(elements, fiber, lo, hi, reach):
    """The broad phase over the taking-part elements (local indices in the rows)."""
    return box_neighbours(np.ascontiguousarray(lo[elements]), np.ascontiguousarray(hi[elements]),
                          np.ascontiguousarray(fiber[elements]), np.ascontiguousarray(reach[elements]))


@numba.njit(**_JIT)
def _pairs_share(share, n_shares, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation,
                 reach, lo, hi, certify, bez, out_e, out_xi, out_d, out_fixed, out_y, out_yp,
                 out_Yp):  # pragma: no cover - compiled
    """The slots of :func:`pairs_loop` of the elements ``share``, ``share + n_shares``, … (one thread's part)."""
    n_el = elements.size
    width = 0
    for i in range(n_el):
        width = max(width, ptr[i + 1] - ptr[i])
    cand_e = np.empty(width, dtype=np.int64)
    cand_lb = np.empty(width)
    gmin = np.full(nf, np.inf)
    hint = np.full((nq, nf), np.inf)
    hint_e = np.full(nf, -1, dtype=np.int64)
    short = np.empty(width, dtype=np.int64)
    near = np.empty(nf)  # scratch of _element_candidates (per partner fiber)
    top = np.empty(nf)
    best_e = np.full(nf, -1, dtype=np.int64)
    best_xi = np.empty(nf)
    best_d = np.empty(nf)
    best_st = np.empty(nf, dtype=np.bool_)
    y = np.empty(3)
    a = np.empty(6)
    scratch = np.empty((9, 7))
    for ia in range(share, n_el, n_shares):
        if ptr[ia + 1] == ptr[ia]:
            continue
        count = _element_candidates(ia, ptr[ia], ptr[ia + 1], nbr, elements, fiber, nq, x, rx, P, c, deviation,
                                    reach, lo, hi, hint, hint_e, near, top, short, y)
        for q in range(nq):
            k = elements[ia] * nq + q
            m = _point_candidates(k, short, count, fiber, x, rx, P, c, deviation, reach, lo, hi, gmin, hint[q],
                                  cand_e, cand_lb, y)
            for i in range(m):
                eB = cand_e[i]
                fb = fiber[eB]
                xi, d, st = closest_point_one(c[eB], x[k], certify, bez, a, scratch)
                if best_e[fb] < 0 or d < best_d[fb]:
                    best_e[fb], best_xi[fb], best_d[fb], best_st[fb] = eB, xi, d, st
            for fb in range(nf):
                eB = best_e[fb]
                if eB < 0:
                    continue
                n = (ia * nq + q) * nf + fb
                xi = best_xi[fb]
                out_e[n], out_xi[n], out_d[n] = eB, xi, best_d[fb]
                out_fixed[n] = not best_st[fb] and ((xi == 0.0 and first[eB]) or (xi == 1.0 and last[eB]))
                power_point(c[eB], xi, 0, out_y[n])
                power_point(c[eB], xi, 1, y)
                out_yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
                power_point(c_ref[eB], xi, 1, y)
                out_Yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
                best_e[fb] = -1


@numba.njit(**_JIT)
def _pairs_slots(slots):  # pragma: no cover - compiled
    """The output slots of :func:`pairs_loop` (element −1: no pair)."""
    return (np.full(slots, -1, dtype=np.int64), np.empty(slots), np.empty(slots), np.empty(slots, dtype=np.bool_),
            np.empty((slots, 3)), np.empty(slots), np.empty(slots))


@numba.njit(**_JIT)
def _pairs_compact(elements, nq, nf, out_e, out_xi, out_d, out_fixed, out_y, out_yp, out_Yp):  # pragma: no cover
    """The filled slots in order, with their contact points k."""
    keep = np.flatnonzero(out_e >= 0)
    out_k = np.empty(keep.size, dtype=np.int64)
    for i in range(keep.size):
        slot = keep[i] // nf
        out_k[i] = elements[slot // nq] * nq + slot % nq
    return (out_k, out_e[keep], out_xi[keep], out_d[keep], out_fixed[keep], out_y[keep], out_yp[keep],
            out_Yp[keep])


@numba.njit(**_JIT)
def pairs_loop(ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
               certify, bez):  # pragma: no cover - compiled
    """Per contact point and partner fiber within reach: the best element's closest point.

    ``ptr, nbr``: the broad phase of ``elements`` (:func:`box_neighbours`).
    Returns k, eB, ξ, d, fixed (closest point at a fiber end, not
    stationary), y, |y′|, |Y′| (reference) in the order (contact point,
    partner fiber); a tie of the distance goes to the lower element.
    Every (contact point, partner fiber) has its own slot, filled by one pass over its element
    (:func:`pairs_loop_parallel` shares the elements out among threads, with the same result).
    """
    out = _pairs_slots(elements.size * nq * nf)
    _pairs_share(0, 1, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
                 certify, bez, *out)
    return _pairs_compact(elements, nq, nf, *out)


@numba.njit(parallel=True, **_JIT)
def pairs_loop_parallel(ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
                        certify, bez, n_shares):  # pragma: no cover - compiled
    """:func:`pairs_loop` with the elements shared out cyclically among ``n_shares`` threads (neighbouring
    elements have similar rows); the same result to the bit."""
    out = _pairs_slots(elements.size * nq * nf)
    n_shares = max(1, min(elements.size, n_shares))
    for share in numba.prange(n_shares):
        _pairs_share(share, n_shares, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation,
                     reach, lo, hi, certify, bez, *out)
    return _pairs_compact(elements, nq, nf, *out)


@numba.njit(**_JIT)
def residual_loop(k, eA, x, y, distance, gap, xp_norm, w, H0, scale, dofs, nq, kappa, gamma,
                  n_dofs):  # pragma: no cover - compiled
    """F, dF/dg of every pair and G_c = Σ F |x′| w φ_a(ξ_k) n over the pairs with g < 0 (eq. 65).

    Returns F, dF, the residual (n_dofs,) and the number of pairs in contact.
    """
    p = k.size
    F = np.empty(p)
    dF = np.empty(p)
    R = np.zeros(n_dofs)
    n_active = 0
    for i in range(p):
        F[i], dF[i] = penalty_force(gap[i], kappa, gamma)
        if not gap[i] < 0:
            continue
        n_active += 1
        q = k[i] % nq
        e = eA[i]
        T = w[q] * F[i] * xp_norm[k[i]]
        for a in range(4):
            phi = H0[q, a] * scale[e, a]
            for m in range(3):
                R[dofs[e, a, m]] += phi * (T * ((y[i, m] - x[k[i], m]) / distance[i]))
    return F, dF, R, n_active
