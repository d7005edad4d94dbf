"""Contact point – partner fiber pairs of fiber–fiber contact: broad phase, closest points, gaps.

**Broad phase** (:func:`point_candidates`, with
:mod:`skfiber.contact.broadphase`): Bézier boxes of the elements inflated by
a bound r̄_E of the current radius on the element (1.1 × the largest current
radius sampled at 9 points), pairs from a k-d tree; then per contact point a
lower bound of the distance to each candidate element (box, then "fat
chord": distance to the chord P0–P3 minus the distance of P1, P2 from it)
against r_x + r̄_B, and candidates whose lower bound exceeds an upper bound of
the distance to fiber B (points of the other candidates) are dropped.

**Narrow phase** (:func:`find_pairs`): every contact point x of a fiber A
finds, on each other fiber B within reach, its closest point y (all real roots
in [0, 1] of the quintic eq. 67 on every candidate element of B, plus the
element ends; :mod:`skfiber.contact.closest_point`), keeps the best element
of each fiber, and gets the gap with both current radii
g = d / (r_x + r_y) − 1 (eq. 40).  :func:`check_pairs` rejects inadmissible
pairs (1 + γ g ≤ 0, d = 0).

Example
-------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact.fiber_geometry import fiber_setup, fiber_state
>>> a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
>>> b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.5, 0.5, 0.09), n_elements=4, radius=0.05)
>>> model = sf.Model([a, b])
>>> s = fiber_setup(model.discretization, 5, None, "contact")
>>> pr = find_pairs(model, s, fiber_state(s, model, np.zeros(model.n_dofs), "contact"), gamma=2.0)
>>> bool((pr.gap < 0).any()), sorted(set(pr.fiber_x.tolist()))
(True, [0, 1])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import STEP_HINT
from .broadphase import box_pairs
from .closest_point import closest_points
from .fiber_geometry import FiberSetup, FiberState, chord_distance, chord_parameter, power_eval, reference_radius

__all__ = ["ContactPairs", "point_candidates", "find_pairs", "check_pairs"]


@dataclass
class ContactPairs:
    """Contact point – partner fiber pairs (one row each) at a state.

    ``point`` indexes the contact points (element × quadrature point, in that
    order), ``element_x``/``element_y`` the elements of x and of its closest
    point y, ``xi_y`` its parameter on ``element_y``; ``gap`` is g (eq. 40)
    and ``admissibility`` 1 + γ g.
    """

    point: np.ndarray
    element_x: np.ndarray
    element_y: np.ndarray
    xi_y: np.ndarray
    fixed: np.ndarray  # closest point at a fiber end (ξ_y does not move)
    x: np.ndarray
    y: np.ndarray
    distance: np.ndarray
    radius_x: np.ndarray
    radius_y: np.ndarray
    gap: np.ndarray
    admissibility: np.ndarray
    fiber_x: np.ndarray
    fiber_y: np.ndarray


def _fiber_label(names, k: int) -> str:
    return f"fiber {k}" + (f" ({names[k]!r})" if names[k] else "")


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


def check_pairs(name: str, gamma: float, s: FiberSetup, pr: ContactPairs, t: float) -> None:
    """Raise FloatingPointError naming both fibers and θ when a pair is inadmissible.

    Parameters
    ----------
    name
        The contact's name (for the message).
    gamma
        γ of its penalty law (for the message).
    s
        The setup.
    pr
        The pairs.
    t
        Time (s), for the message.

    Raises
    ------
    FloatingPointError
        If a pair has 1 + γ g ≤ 0, d ≤ 0 or a non-finite radius.
    """
    bad = ~(pr.admissibility > 0) | ~(pr.distance > 0) | ~np.isfinite(pr.radius_y) | ~np.isfinite(pr.radius_x)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[np.argmin(np.where(np.isnan(pr.admissibility[bad]), -np.inf,
                                                       pr.admissibility[bad]))])
        fa, fb = int(s.fiber[pr.element_x[i]]), int(s.fiber[pr.element_y[i]])
        q = pr.point[i] % s.nq
        th_x = s.theta0[pr.element_x[i]] + s.h[pr.element_x[i]] * s.xi[q]
        th_y = s.theta0[pr.element_y[i]] + s.h[pr.element_y[i]] * pr.xi_y[i]
        raise FloatingPointError(
            f"inadmissible fiber–fiber contact in {name!r} at t = {t:.6g} s: "
            f"{_fiber_label(s.names, fa)} at θ = {th_x:.4g} and {_fiber_label(s.names, fb)} at θ = {th_y:.4g} "
            f"penetrate too far: 1 + γg = {pr.admissibility[i]:.3g} ≤ 0 (distance {pr.distance[i]:.4g} m, "
            f"r_x + r_y = {pr.radius_x[i] + pr.radius_y[i]:.4g} m, γ = {gamma:g}); "
            f"the fibers may not come closer than (1 − 1/γ)(r_x + r_y); " + STEP_HINT
        )
