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
  :func:`pairs_loop_parallel` shares the elements out among threads, with the same result.
  The candidates are those of the plain loop over the row; the work is cut by
  squared box distances (no square root) that prove an element out, and by a
  seed per partner fiber (the element nearest to the element's contact points)
  whose upper bound prunes the row once per element and then per point
  (:func:`_element_candidates`, :func:`_point_candidates`: the arguments);
* :func:`residual_loop` — F(g), dF/dg (:func:`~skfiber.contact.base.penalty_force`)
  and the residual G_c = Σ F n·ξ |x′| w of the pairs (eq. 65).

Examples
--------
>>> import numpy as np
>>> P = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], float)   # chord along x
>>> float(chord_distance(P, np.array([1.5, 2.0, 0.0]))), float(chord_parameter(P, np.array([6.0, 1.0, 0.0])))
(2.0, 1.0)
"""
from __future__ import annotations

import numba
import numpy as np

from ..core.jit import njit
from .base import penalty_force
from .broadphase import box_neighbours
from .closest_point import closest_point_one
from .smallest_gap import smallest_on_element

__all__ = ["neighbours_of", "pairs_loop", "pairs_loop_parallel", "residual_loop", "power_point",
           "chord_parameter", "chord_distance"]

_JIT = dict(cache=True, error_model="numpy")
_PRUNE_SLACK = 1e-9  # a candidate is kept when its lower bound ≤ (1 + this) × the fiber's upper bound
#: the bound r̄ of the current radius on an element (``reach``) is this × the largest of 9 samples (and of the
#: contact points): a margin for what the samples miss, for the broad phase
RADIUS_SAFETY = 1.1
#: the smallest gap's pruning takes the sampled largest radius with this margin instead (d/(r_x + r̄) is a
#: lower bound of φ only for a radius bound r̄; 1 % is far above what 9 samples of a smooth radius miss)
_PHI_RADIUS_MARGIN = 1.01


@njit(inline="always", **_JIT)
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


@njit(inline="always", **_JIT)
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


@njit(inline="always", **_JIT)
def _chord_point_distance(P, x, t):  # pragma: no cover - compiled
    """Distance from x to the point P0 + t (P3 − P0) of the chord."""
    d2 = 0.0
    for m in range(3):
        v = x[m] - P[0, m] - t * (P[3, m] - P[0, m])
        d2 += v * v
    return np.sqrt(d2)


@njit(inline="always", **_JIT)
def chord_distance(P, x):  # pragma: no cover - compiled
    """Distance from x to the chord segment P0–P3."""
    return _chord_point_distance(P, x, chord_parameter(P, x))


@njit(inline="always", **_JIT)
def _box_distance(lo, hi, x):  # pragma: no cover - compiled
    """Distance from x to the box [lo, hi] (0 inside)."""
    return _box_box_distance(lo, hi, x, x)


@njit(inline="always", **_JIT)
def _upper_bound(c, P, xk, t):  # pragma: no cover - compiled
    """An upper bound of d(x_k, E′): the distance to E′'s point at t (the chord parameter of x_k), or to an end
    (the point as :func:`power_point` makes it)."""
    du = 0.0
    d0 = 0.0
    d3 = 0.0
    for m in range(3):
        ym = 1.0 * c[0, m] + t * c[1, m] + (t * t) * c[2, m] + (t * t * t) * c[3, m]
        du += (ym - xk[m]) ** 2
        d0 += (P[0, m] - xk[m]) ** 2
        d3 += (P[3, m] - xk[m]) ** 2
    return min(np.sqrt(du), min(np.sqrt(d0), np.sqrt(d3)))


@njit(inline="always", **_JIT)
def _box_box_distance(lo_a, hi_a, lo_b, hi_b):  # pragma: no cover - compiled
    """Distance between the boxes [lo_a, hi_a] and [lo_b, hi_b] (0 if they overlap)."""
    d2 = 0.0
    for m in range(3):
        v = max(max(lo_a[m] - hi_b[m], lo_b[m] - hi_a[m]), 0.0)
        d2 += v * v
    return np.sqrt(d2)


@njit(inline="always", **_JIT)
def _beyond(d2, bound):  # pragma: no cover - compiled
    """True where d2, the sum of squares of a box distance (:func:`_box_distance`), proves that distance > bound.

    d2 > bound² (1 + 1e-12) puts √d2 above the float after ``bound``, so its rounding is > bound (the
    product is exact to 2 roundings for bound > 1e-150; below that it is not used); with a bound < 0
    every distance is beyond it.  False when unproven (NaN, +∞ or tiny bound): no square root.
    """
    return bound < 0 or (bound > 1e-150 and d2 > bound * bound * (1 + 1e-12))


@njit(**_JIT)
def _element_candidates(ia, row_start, row_end, nbr, elements, fiber, nq, x, rx, P, c, deviation, reach, lo, hi,
                        short, d2s, near, near_d2, seed_ok, seed_lb, seed_g, top, prune, rf,
                        nrf):  # pragma: no cover - compiled
    """The elements of a broad-phase row that may be a candidate of some contact point of element ``ia``.

    Returns the count of the kept elements (in row order) in ``short``, and per partner fiber f a seed
    for the points (:func:`_point_candidates`): ``near[f]``, the position in ``short`` of the element
    whose box is nearest to the box of the element's contact points (−1: none), and for each point q
    whether it is a candidate of x_q (``seed_ok[q, f]``), its lower bound ``seed_lb[q, f]`` and upper
    bound ``seed_g[q, f]`` of d(x_q, E′).

    With finite points and radii, B = the box of the points x_k (min and max of their coordinates) is no
    farther from an element's box than any x_k, coordinate by coordinate (rounding is monotone).  So an
    element is dropped when its box is proven (:func:`_beyond`) farther from B than

    * the largest r_x of the points + r̄_E′: it fails the reach test of every point; or
    * ``top[f]``, the largest g_q (1 + slack) of the seed over the points (when the seed is a candidate
      of every point): for each point its lower bound exceeds g_q (1 + slack) ≥ the final one, so it is
      not kept, and its upper bound exceeds g_q, so g does not change (see :func:`_point_candidates`).

    ``d2s`` (row length), ``near_d2`` and ``top`` (nf,) are scratch; only the entries of the row's fibers
    ``rf[:nrf]`` (:func:`_row_fiber_lists`) are set and read, so the work is that of the row, not of every fiber.
    """
    eA = elements[ia]
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    r_max = -np.inf
    finite = True
    for q in range(nq):
        k = eA * nq + q
        finite = finite and np.isfinite(x[k, 0]) and np.isfinite(x[k, 1]) and np.isfinite(x[k, 2]) \
            and np.isfinite(rx[k])
        lo0, hi0 = min(lo0, x[k, 0]), max(hi0, x[k, 0])
        lo1, hi1 = min(lo1, x[k, 1]), max(hi1, x[k, 1])
        lo2, hi2 = min(lo2, x[k, 2]), max(hi2, x[k, 2])
        r_max = max(r_max, rx[k])
    for j in range(nrf):
        near[rf[j]] = -1
        near_d2[rf[j]] = np.inf
    m = 0
    for r in range(row_start, row_end):
        eB = elements[nbr[r]]
        if finite:
            v0 = max(max(lo[eB, 0] - hi0, lo0 - hi[eB, 0]), 0.0)  # the terms of _box_box_distance
            v1 = max(max(lo[eB, 1] - hi1, lo1 - hi[eB, 1]), 0.0)
            v2 = max(max(lo[eB, 2] - hi2, lo2 - hi[eB, 2]), 0.0)
            d2 = v0 * v0 + v1 * v1 + v2 * v2
            if _beyond(d2, r_max + reach[eB]):
                continue
            if d2 < near_d2[fiber[eB]]:
                near_d2[fiber[eB]] = d2
                near[fiber[eB]] = m
            d2s[m] = d2
        short[m] = eB
        m += 1
    if not finite:
        return m
    for j in range(nrf):
        f = rf[j]
        top[f] = np.inf
        if near[f] < 0:
            continue
        top[f] = -np.inf
        eB = short[near[f]]
        for q in range(nq):  # the seed's tests for each point (those of _point_candidates)
            k = eA * nq + q
            seed_ok[q, f] = False
            lb = _box_distance(lo[eB], hi[eB], x[k])
            bound = rx[k] + reach[eB]
            if lb < bound:
                t = chord_parameter(P[eB], x[k])
                lb = max(lb, _chord_point_distance(P[eB], x[k], t) - deviation[eB])
                if lb < bound:
                    seed_ok[q, f] = True
                    seed_lb[q, f] = lb
                    seed_g[q, f] = min(np.inf, _upper_bound(c[eB], P[eB], x[k], t))  # NaN: +∞, as in g
            top[f] = max(top[f], seed_g[q, f] * (1 + _PRUNE_SLACK)) if seed_ok[q, f] else np.inf
        if not prune:
            top[f] = np.inf
    kept = 0
    for i in range(m):
        f = fiber[short[i]]
        if near[f] == i:
            near[f] = kept
        elif _beyond(d2s[i], top[f]):
            continue
        short[kept] = short[i]
        kept += 1
    return kept


@njit(inline="always", **_JIT)
def _point_candidates(k, q, short, count, fiber, x, rx, P, c, deviation, reach, lo, hi, near, seed_ok, seed_lb,
                      seed_g, g, thr, cand_e, cand_lb, prune, rf, nrf):  # pragma: no cover - compiled
    """The candidate elements of contact point k (point q of its element) among ``short[:count]``.

    Into cand_e, cand_lb (in row order); returns their count.  They are those of the plain loop over
    the row (as in the numpy reference): an element E′ is tested when the lower bounds of d(x_k, E′) —
    its box, then the "fat chord" (distance to the chord P0–P3 minus the deviation of P1, P2) — are
    below r_x + r̄_E′; its upper bound of d(x_k, E′) (the point at the chord parameter, or an end) goes
    into g, the minimum over the tested elements of its fiber; the tested elements whose lower bound is
    ≤ g (1 + slack) are kept.

    Faster, with the same result: the seed of each fiber (:func:`_element_candidates`: tested already)
    starts g; then, in row order, an element whose box is proven (:func:`_beyond`, squared, no root)
    beyond r_x + r̄_E′ fails the reach test, and one proven farther than g (1 + slack), g the minimum so
    far, is skipped: its lower bound exceeds the final g (1 + slack), so it is not kept, and its upper
    bound (a distance to a point of the element, in its box) exceeds g, so g does not change.  g does
    not depend on the order of the minimum (min(g, NaN) = g: a NaN bound is ignored either way).  The
    point at the chord parameter is evaluated from the power coefficients, so it may lie outside the
    box by a rounding of the coordinates (~10⁻¹⁶ of them): against the slack of 10⁻⁹ g that matters
    only for distances below ~10⁻⁷ of the coordinates, where the pruning before this one (per element,
    by the box of a seed element) made the same assumption.  The bounds are computed as in
    :func:`_box_distance`, :func:`chord_distance` and :func:`_upper_bound`, the chord parameter computed
    once per element and point.
    ``g``, ``thr`` (g (1 + slack)) (nf,) are scratch, set for the row's fibers ``rf[:nrf]`` only.
    """
    x0, x1, x2 = x[k, 0], x[k, 1], x[k, 2]
    rk = rx[k]
    for j in range(nrf):
        f = rf[j]
        g[f] = seed_g[q, f] if near[f] >= 0 and seed_ok[q, f] and prune else np.inf
        thr[f] = g[f] * (1 + _PRUNE_SLACK)
    m = 0
    for i in range(count):
        eB = short[i]
        f = fiber[eB]
        if near[f] == i:  # the seed: tested already
            if seed_ok[q, f]:
                cand_e[m] = eB
                cand_lb[m] = seed_lb[q, f]
                m += 1
            continue
        v0 = max(max(lo[eB, 0] - x0, x0 - hi[eB, 0]), 0.0)  # the terms of _box_distance
        v1 = max(max(lo[eB, 1] - x1, x1 - hi[eB, 1]), 0.0)
        v2 = max(max(lo[eB, 2] - x2, x2 - hi[eB, 2]), 0.0)
        d2 = v0 * v0 + v1 * v1 + v2 * v2
        if _beyond(d2, rk + reach[eB]) or _beyond(d2, thr[f]):
            continue
        lb = np.sqrt(d2)  # = _box_distance(lo[eB], hi[eB], xk): the same terms
        bound = rk + reach[eB]
        if not lb < bound or lb > thr[f]:
            continue
        t = chord_parameter(P[eB], x[k])
        lb = max(lb, _chord_point_distance(P[eB], x[k], t) - deviation[eB])
        if not lb < bound:
            continue
        if prune:
            g[f] = min(g[f], _upper_bound(c[eB], P[eB], x[k], t))
            thr[f] = g[f] * (1 + _PRUNE_SLACK)
        cand_e[m] = eB
        cand_lb[m] = lb
        m += 1
    kept = 0
    for i in range(m):
        if cand_lb[i] <= thr[fiber[cand_e[i]]]:
            cand_e[kept] = cand_e[i]
            cand_lb[kept] = cand_lb[i]
            kept += 1
    return kept


def neighbours_of(elements, fiber, lo, hi, reach):
    """The broad phase over the taking-part elements (local indices in the rows)."""
    return box_neighbours(np.ascontiguousarray(lo[elements]), np.ascontiguousarray(hi[elements]),
                          np.ascontiguousarray(fiber[elements]), np.ascontiguousarray(reach[elements]))


@njit(**_JIT)
def _row_fiber_lists(ptr, nbr, elements, fiber, nf):  # pragma: no cover - compiled
    """CSR (fptr, flist) of the distinct fibers of each element's broad-phase row, ascending.

    They lay out the output of :func:`pairs_loop`: element ``ia`` has nq × (its row's fiber count) slots
    from nq · fptr[ia] on, one per (contact point, partner fiber) in that order, so the slots and the loops
    over partner fibers grow with the broad phase's pairs, not with (contact points) × (fibers).
    """
    n_el = elements.size
    fptr = np.zeros(n_el + 1, dtype=np.int64)
    flist = np.empty(ptr[n_el], dtype=np.int64)  # (at most one fiber per row entry)
    mark = np.full(nf, -1, dtype=np.int64)
    for ia in range(n_el):
        n = fptr[ia]
        for r in range(ptr[ia], ptr[ia + 1]):
            f = fiber[elements[nbr[r]]]
            if mark[f] != ia:
                mark[f] = ia
                flist[n] = f
                n += 1
        for i in range(fptr[ia] + 1, n):  # insertion sort (a row holds a few fibers; usually sorted already)
            j = i
            while j > fptr[ia] and flist[j] < flist[j - 1]:
                flist[j], flist[j - 1] = flist[j - 1], flist[j]
                j -= 1
        fptr[ia + 1] = n
    return fptr, flist[:fptr[n_el]]


@njit(**_JIT)
def _pairs_share(share, n_shares, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation,
                 reach, lo, hi, certify, rpoly, smallest, fptr, flist, out_k, out_e, out_xi, out_d, out_fixed, out_y,
                 out_yp, out_Yp):  # pragma: no cover - compiled
    """The slots of :func:`pairs_loop` of the elements ``share``, ``share + n_shares``, … (one thread's part).

    The arrays indexed by fiber (nf,) are scratch of which only the entries of the current row's fibers
    (``flist[fptr[ia]:fptr[ia + 1]]``, :func:`_row_fiber_lists`) are touched: the work per contact point is
    that of its candidates, whatever the number of fibers.
    """
    n_el = elements.size
    width = 0
    for i in range(n_el):
        width = max(width, ptr[i + 1] - ptr[i])
    short = np.empty(width, dtype=np.int64)
    d2s = np.empty(width)
    cand_e = np.empty(width, dtype=np.int64)
    cand_lb = np.empty(width)
    key = np.empty(width)
    order = np.empty(width, dtype=np.int64)
    radius_bound = _PHI_RADIUS_MARGIN / RADIUS_SAFETY  # × reach: the sampled largest radius + 1 %
    g = np.empty(nf)
    thr = np.empty(nf)
    near = np.full(nf, -1, dtype=np.int64)
    near_d2 = np.empty(nf)
    top = np.empty(nf)
    seed_ok = np.zeros((nq, nf), dtype=np.bool_)
    seed_lb = np.empty((nq, nf))
    seed_g = np.empty((nq, nf))
    best_e = np.full(nf, -1, dtype=np.int64)
    best_xi = np.empty(nf)
    best_d = np.empty(nf)
    best_v = np.empty(nf)
    best_st = np.empty(nf, dtype=np.bool_)
    y = np.empty(3)
    a = np.empty(6)
    scratch = np.empty((9, 7))
    for ia in range(share, n_el, n_shares):
        if ptr[ia + 1] == ptr[ia]:
            continue
        rf = flist[fptr[ia]:fptr[ia + 1]]
        nrf = rf.size
        count = _element_candidates(ia, ptr[ia], ptr[ia + 1], nbr, elements, fiber, nq, x, rx, P, c, deviation,
                                    reach, lo, hi, short, d2s, near, near_d2, seed_ok, seed_lb, seed_g, top,
                                    not smallest, rf, nrf)
        for q in range(nq):
            k = elements[ia] * nq + q
            m = _point_candidates(k, q, short, count, fiber, x, rx, P, c, deviation, reach, lo, hi, near, seed_ok,
                                  seed_lb, seed_g, g, thr, cand_e, cand_lb, not smallest, rf, nrf)
            if smallest:  # lower bounds of φ = d/(r_x + r_y) on the candidates, taken in increasing order
                for i in range(m):
                    key[i] = cand_lb[i] / (rx[k] + radius_bound * reach[cand_e[i]])
                    order[i] = i
                for i in range(1, m):  # insertion sort (a few candidates)
                    j = i
                    while j > 0 and key[order[j]] < key[order[j - 1]]:
                        order[j], order[j - 1] = order[j - 1], order[j]
                        j -= 1
            for r in range(m):
                i = order[r] if smallest else r
                eB = cand_e[i]
                fb = fiber[eB]
                if smallest and best_e[fb] >= 0 and key[i] > best_v[fb] * (1 + _PRUNE_SLACK):
                    continue  # φ ≥ its lower bound > the best φ of the fiber so far
                xi, d, st = closest_point_one(c[eB], x[k], certify, a, scratch)
                v = d
                if smallest:
                    if best_e[fb] >= 0 and d / (rx[k] + radius_bound * reach[eB]) > best_v[fb] * (1 + _PRUNE_SLACK):
                        continue  # φ ≥ (its least distance) / (r_x + r̄) > the best φ so far
                    xi, v, d, st = smallest_on_element(c[eB], c_ref[eB], rpoly[eB], x[k], rx[k], xi)
                if best_e[fb] < 0 or v < best_v[fb]:
                    best_e[fb], best_xi[fb], best_d[fb], best_v[fb], best_st[fb] = eB, xi, d, v, st
            for j in range(nrf):
                fb = rf[j]
                eB = best_e[fb]
                if eB < 0:
                    continue
                n = nq * fptr[ia] + q * nrf + j
                xi = best_xi[fb]
                out_k[n], out_e[n], out_xi[n], out_d[n] = k, eB, xi, best_d[fb]
                # the closest point rests at a fiber end; the smallest gap's point at any element end where it
                # is not stationary (φ has kinks at the nodes: r_y depends on |y′|, whose slope jumps there)
                out_fixed[n] = not best_st[fb] and ((xi == 0.0 and (first[eB] or smallest))
                                                    or (xi == 1.0 and (last[eB] or smallest)))
                power_point(c[eB], xi, 0, out_y[n])
                power_point(c[eB], xi, 1, y)
                out_yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
                power_point(c_ref[eB], xi, 1, y)
                out_Yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
                best_e[fb] = -1


@njit(**_JIT)
def _pairs_slots(slots):  # pragma: no cover - compiled
    """The output slots of :func:`pairs_loop` (contact point, element −1: no pair, ξ, d, fixed, y, |y′|, |Y′|)."""
    return (np.empty(slots, dtype=np.int64), np.full(slots, -1, dtype=np.int64), np.empty(slots), np.empty(slots),
            np.empty(slots, dtype=np.bool_), np.empty((slots, 3)), np.empty(slots), np.empty(slots))


@njit(**_JIT)
def _pairs_compact(out_k, out_e, out_xi, out_d, out_fixed, out_y, out_yp, out_Yp):  # pragma: no cover
    """The filled slots (element ≥ 0) in order."""
    keep = np.flatnonzero(out_e >= 0)
    return (out_k[keep], out_e[keep], out_xi[keep], out_d[keep], out_fixed[keep], out_y[keep], out_yp[keep],
            out_Yp[keep])


@njit(**_JIT)
def pairs_loop(ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
               certify, rpoly, smallest):  # pragma: no cover - compiled
    """Per contact point and partner fiber within reach: the best element's closest point.

    ``ptr, nbr``: the broad phase of ``elements`` (:func:`box_neighbours`).
    Returns k, eB, ξ, d, fixed (closest point at a fiber end, not
    stationary), y, |y′|, |Y′| (reference) in the order (contact point,
    partner fiber); a tie of the distance goes to the lower element.
    Every (contact point, partner fiber of its element's row) has its own slot (:func:`_row_fiber_lists`), filled
    by one pass over its element (:func:`pairs_loop_parallel` shares the elements out among threads, with the
    same result).
    """
    fptr, flist = _row_fiber_lists(ptr, nbr, elements, fiber, nf)
    out = _pairs_slots(nq * fptr[-1])
    _pairs_share(0, 1, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
                 certify, rpoly, smallest, fptr, flist, *out)
    return _pairs_compact(*out)


@njit(parallel=True, **_JIT)
def pairs_loop_parallel(ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
                        certify, rpoly, smallest, n_shares):  # pragma: no cover - compiled
    """:func:`pairs_loop` with the elements shared out cyclically among ``n_shares`` threads (neighbouring
    elements have similar rows); the same result to the bit."""
    fptr, flist = _row_fiber_lists(ptr, nbr, elements, fiber, nf)
    out = _pairs_slots(nq * fptr[-1])
    n_shares = max(1, min(elements.size, n_shares))
    for share in numba.prange(n_shares):
        _pairs_share(share, n_shares, ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation,
                     reach, lo, hi, certify, rpoly, smallest, fptr, flist, *out)
    return _pairs_compact(*out)


@njit(**_JIT)
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
