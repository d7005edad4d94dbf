"""Contact point – partner fiber pairs of fiber–fiber contact: broad phase, closest points, gaps.

**Broad phase** (:mod:`skfiber.contact.broadphase`, then per contact point
in :func:`~skfiber.contact.fiber_kernels.pairs_loop`): Bézier boxes of the elements inflated by
a bound r̄_E of the current radius on the element (1.1 × the largest current
radius sampled at 9 points), pairs from a uniform grid; then per contact point a
lower bound of the distance to each candidate element (box, then "fat
chord": distance to the chord P0–P3 minus the distance of P1, P2 from it)
against r_x + r̄_B, and candidates whose lower bound exceeds an upper bound of
the distance to fiber B (points of the other candidates) are dropped.

**Narrow phase** (:func:`find_pairs`, one compiled loop
:func:`~skfiber.contact.fiber_kernels.pairs_loop` — or
:func:`~skfiber.contact.fiber_kernels.pairs_loop_parallel` on several threads from
:data:`PARALLEL_SEARCH_WORK` on (:mod:`skfiber.threads`), the same result — and one
vectorized call of the fibers' r0(θ)): every contact point x of a fiber A
finds, on each other fiber B within reach, its closest point y (all real roots
in [0, 1] of the quintic eq. 67 on every candidate element of B, plus the
element ends; :mod:`skfiber.contact.closest_point`), keeps the best element
of each fiber, and gets the gap with both current radii
g = d / (r_x + r_y) − 1 (eq. 40).  :func:`check_pairs` rejects inadmissible
pairs (1 + γ g ≤ 0, d = 0).

Examples
--------
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

from ..core.jit import njit
from ..threads import threads_for
from .base import STEP_HINT
from .broadphase import NeighbourList
from .fiber_geometry import FiberSetup, FiberState, fiber_label, reference_radius
from .fiber_kernels import neighbours_of, pairs_loop, pairs_loop_parallel
from .gap import admissibility, current_radius, normalized_gap
from .smallest_gap import polynomial_radius

__all__ = ["ContactPairs", "find_pairs", "check_pairs", "PARALLEL_SEARCH_WORK"]

#: the search runs on several threads from this many broad-phase (contact point, element) pairs on: about
#: 0.5 ms of serial search (5.5 ns a pair measured at the upper limb's level 4, 1.26 ms serial and 0.70 ms
#: on two threads with 229,000 pairs; level 1 has about 4,000), below which waking the threads costs
#: about what they save
PARALLEL_SEARCH_WORK = 100_000


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
    log_slope_y: np.ndarray | None = None  # (dr0/dξ) / r0 at y (for the tangent)


def find_pairs(model, s: FiberSetup, st: FiberState, *, gamma: float, method: str = "auto",
               neighbours: NeighbourList | None = None, smallest: bool = False) -> ContactPairs:
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
    neighbours
        A broad phase kept over states (the same pairs, the broad phase skipped while the boxes move little);
        None: the broad phase of this state.
    smallest
        False: y is the closest point of each partner fiber (eq. 66) and g takes the radius there (eq. 40);
        True: y minimizes the gap over the partner fiber (:mod:`~skfiber.contact.smallest_gap`), with the
        radius quintic ``s.r0_poly``.

    Returns
    -------
    ContactPairs
    """
    if method not in ("auto", "eig"):
        raise ValueError(f"unknown method {method!r}; pick one of 'auto', 'eig'")
    lo, hi = st.lo, st.hi
    if neighbours is None:
        ptr, nbr = neighbours_of(s.elements, s.fiber, lo, hi, st.reach)
    else:
        ptr, nbr = neighbours.neighbours(st.P, s.elements, s.fiber, st.reach)
    args = (ptr, nbr, s.elements, s.fiber, s.first, s.last, s.nq, s.nf, st.x, st.rx, st.P, st.c, s.c_ref,
            st.deviation, st.reach, lo, hi, method == "auto", s.r0_poly, bool(smallest))
    threads = threads_for(int(ptr[-1]) * s.nq, PARALLEL_SEARCH_WORK)
    k, eB, xi, dist, fixed, y, yp_norm, Yp_norm = (pairs_loop(*args) if threads == 1 else
                                                   pairs_loop_parallel(*args, threads))
    if smallest:
        r0y, dr0y = polynomial_radius(s.r0_poly, eB, xi)
    else:
        r0y, dr0y = reference_radius(model, s, eB, xi)
    eA, x, rx, ry, g, admissibility, log_slope, fiber_x, fiber_y = _gaps(k, eB, s.nq, s.fiber, st.x, st.rx, r0y, dr0y,
                                                                        yp_norm, Yp_norm, dist, float(gamma))
    return ContactPairs(k, eA, eB, xi, fixed, x, y, dist, rx, ry, g, admissibility, fiber_x, fiber_y, log_slope)


@njit(cache=True, error_model="numpy")
def _gaps(k, eB, nq, fiber, x_points, rx_points, r0y, dr0y, yp_norm, Yp_norm, dist, gamma):  # pragma: no cover
    """Per pair: the element of x, x, r_x, r_y = r0 √(|Y′|/|y′|) (eq. 21), g = d/(r_x + r_y) − 1 (eq. 40),
    1 + γ g, (dr0/dξ)/r0 at y and the fibers of x and y (IEEE results for zero or non-finite inputs, as numpy
    gives them)."""
    n = k.size
    eA = np.empty(n, dtype=np.int64)
    x = np.empty((n, 3))
    rx, ry, g, adm, slope = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    fiber_x = np.empty(n, dtype=fiber.dtype)
    fiber_y = np.empty(n, dtype=fiber.dtype)
    for i in range(n):
        eA[i] = k[i] // nq
        for m in range(3):
            x[i, m] = x_points[k[i], m]
        fiber_x[i] = fiber[eA[i]]
        fiber_y[i] = fiber[eB[i]]
        rx[i] = rx_points[k[i]]
        ry[i] = current_radius(r0y[i], Yp_norm[i], yp_norm[i])
        g[i] = normalized_gap(dist[i], rx[i], ry[i])
        adm[i] = admissibility(g[i], gamma)
        slope[i] = dr0y[i] / r0y[i]
    return eA, x, rx, ry, g, adm, slope, fiber_x, fiber_y


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
    i = _worst_inadmissible(pr.admissibility, pr.distance, pr.radius_x, pr.radius_y)
    if i >= 0:
        fa, fb = int(s.fiber[pr.element_x[i]]), int(s.fiber[pr.element_y[i]])
        q = pr.point[i] % s.nq
        th_x = s.theta0[pr.element_x[i]] + s.h[pr.element_x[i]] * s.xi[q]
        th_y = s.theta0[pr.element_y[i]] + s.h[pr.element_y[i]] * pr.xi_y[i]
        raise FloatingPointError(
            f"inadmissible fiber–fiber contact in {name!r} at t = {t:.6g} s: "
            f"{fiber_label(s.names, fa)} at θ = {th_x:.4g} and {fiber_label(s.names, fb)} at θ = {th_y:.4g} "
            f"penetrate too far: 1 + γg = {pr.admissibility[i]:.3g} ≤ 0 (distance {pr.distance[i]:.4g} m, "
            f"r_x + r_y = {pr.radius_x[i] + pr.radius_y[i]:.4g} m, γ = {gamma:g}); "
            f"the fibers may not come closer than (1 − 1/γ)(r_x + r_y); " + STEP_HINT
        )


@njit(cache=True)
def _worst_inadmissible(admissibility, distance, radius_x, radius_y):  # pragma: no cover - compiled
    """The pair with 1 + γ g ≤ 0, d ≤ 0 or a non-finite radius (or any of them NaN) and the smallest 1 + γ g
    (NaN counts as the smallest; the first of equals), or −1 when every pair is admissible."""
    worst, value = -1, np.inf
    for i in range(admissibility.size):
        a = admissibility[i]
        if (a > 0 and distance[i] > 0 and np.isfinite(radius_x[i]) and np.isfinite(radius_y[i])):
            continue
        key = -np.inf if a != a else a
        if worst < 0 or key < value:
            worst, value = i, key
    return worst
