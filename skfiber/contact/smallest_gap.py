"""The smallest gap to a partner fiber: the overlap of two fibers taken as unions of balls.

With eq. 66 the partner point y of a contact point x is the closest point of
the centerline, and the gap takes the radius found there,
g = d/(r_x + r_y) − 1 (eq. 40).  Where the radius varies along the partner,
two closest points of nearly equal distance but different radius swap under a
tiny motion, and g jumps although d does not (``docs/theory.md``, "Contact").
The smallest gap over all points y of the partner,

    g = min_y φ(ξ) − 1,   φ(ξ) = d(ξ) / (r_x + r_y(ξ)),   r_y = r0(θ(ξ)) √(|Y′|/|y′|)   (eq. 21),

is continuous in the state: its point y may still jump where two minima of
φ are equally deep, its value does not.  Per candidate element it is found
here by sampling φ′ at :data:`SAMPLES` + 1 points and at the element's
closest point of eq. 67 (the minimum of d, which seeds the basin when the
radius varies slowly), and by safeguarded Newton–bisection on φ′ = 0 in
every bracket where φ′ changes sign from − to +; an element end is a
candidate where φ′ points inwards.  The search needs r0 and its first two
derivatives at any ξ, inside compiled code: r0 of every element is its
quintic Hermite interpolant from r0, r0′ and r0″ at the element's nodes
(:func:`radius_polynomials`; C² across nodes, exact for polynomials of degree
≤ 5 up to the finite differences of a callable r0).

Examples
--------
>>> import numpy as np
>>> c = np.array([[0, -1.0, 0], [0, 2.0, 0], [0, 0, 0], [0, 0, 0]])   # y = (0, 2ξ − 1, 0)
>>> c_ref = c.copy()
>>> rp = np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0])                        # r0 = 0.1 on the element
>>> xi, phi, d, stationary = smallest_on_element(c, c_ref, rp, np.array([0.3, 0.0, 0.0]), 0.05, 0.5)
>>> round(xi, 12), round(phi, 12), stationary        # d = 0.3 at ξ = 0.5: φ = 0.3 / 0.15
(0.5, 2.0, True)
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .gap import current_radius

__all__ = ["POWER_FROM_QUINTIC_HERMITE", "SAMPLES", "radius_polynomials", "polynomial_radius", "radius_derivatives",
           "phi_derivatives", "smallest_on_element", "xi_sensitivity"]

#: power coefficients a = M v of the quintic with v = (f(0), f′(0), f″(0), f(1), f′(1), f″(1)) on [0, 1]
POWER_FROM_QUINTIC_HERMITE = np.array([
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.5, 0.0, 0.0, 0.0],
    [-10.0, -6.0, -1.5, 10.0, -4.0, 0.5],
    [15.0, 8.0, 1.5, -15.0, 7.0, -1.0],
    [-6.0, -3.0, -0.5, 6.0, -3.0, 0.5],
])

SAMPLES = 8  # intervals of φ′'s sign sampling per candidate element
_DTHETA = 1e-4  # θ step of the finite differences of a callable r0(θ)
_NEWTON_TOL = 1e-14  # the bracketed Newton iteration stops below this correction (ξ ∈ [0, 1])
_FLAT = 1e-10  # at an element end |φ′| ≤ this × (|φ| + |φ″|) counts as stationary (round-off), not a kink
_JIT = dict(cache=True, error_model="numpy")


def _callable_derivatives(radius_at, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """r0, dr0/dθ and d²r0/dθ² of a callable at the nodes θ ∈ [0, 1]: second-order differences, central
    inside and one-sided at θ < 2Δ or θ > 1 − 2Δ (the callable is not asked outside [0, 1])."""
    dt = _DTHETA
    lo = theta < 2 * dt
    hi = theta > 1 - 2 * dt
    # stencil offsets: central (−1, 0, 1), forward (0, 1, 2, 3), backward (0, −1, −2, −3)
    offsets = np.where(lo[:, None], np.arange(4.0)[None, :], np.where(hi[:, None], -np.arange(4.0)[None, :],
                                                                       np.array([-1.0, 0.0, 1.0, 0.0])[None, :]))
    values = np.asarray(radius_at((theta[:, None] + dt * offsets).ravel()), dtype=float).reshape(theta.size, 4)
    r = np.where(lo | hi, values[:, 0], values[:, 1])
    central1 = (values[:, 2] - values[:, 0]) / (2 * dt)
    central2 = (values[:, 2] - 2 * values[:, 1] + values[:, 0]) / dt**2
    side1 = (-3 * values[:, 0] + 4 * values[:, 1] - values[:, 2]) / (2 * dt)
    side2 = (2 * values[:, 0] - 5 * values[:, 1] + 4 * values[:, 2] - values[:, 3]) / dt**2
    r1 = np.where(lo, side1, np.where(hi, -side1, central1))
    r2 = np.where(lo | hi, side2, central2)
    return r, r1, r2


def radius_polynomials(discretization) -> np.ndarray:
    """Per element, the power coefficients in ξ of the quintic Hermite interpolant of r0(θ).

    Parameters
    ----------
    discretization
        The model's :class:`~skfiber.discretization.Discretization`.

    Returns
    -------
    numpy.ndarray
        (elements, 6): r0(θ0 + h ξ) ≈ Σ_j a_j ξʲ, from r0, h r0′ and h² r0″ at both nodes (derivatives of a
        callable r0 by finite differences, :data:`_DTHETA`); a constant radius gives (r0, 0, …, 0).

    Examples
    --------
    >>> import skfiber as sf
    >>> f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=lambda th: 0.1 + th**2)
    >>> a = radius_polynomials(sf.Model([f]).discretization)
    >>> a.shape, [round(float(v), 6) for v in a[1, :3]]      # 0.1 + (0.5 + ξ/2)² on the second element
    ((2, 6), [0.35, 0.5, 0.25])
    """
    d = discretization
    t = d.mesh.t
    h = d.mesh.p[0, t[1]] - d.mesh.p[0, t[0]]
    ne = int(d.element_fiber.size)
    out = np.zeros((ne, 6))
    for fd, f in zip(d.fiber_dofs, d.fibers):
        el = np.arange(ne)[fd.elements]
        if not callable(f.radius):
            out[el, 0] = float(f.radius)
            continue
        ends = np.stack([t[0, el], t[1, el]])  # (2, elements) node numbers
        nodes, inverse = np.unique(ends, return_inverse=True)
        r, r1, r2 = _callable_derivatives(f.radius_at, d.node_theta[nodes])
        inverse = inverse.reshape(2, -1)
        hv = h[el]
        v = np.stack([r[inverse[0]], hv * r1[inverse[0]], hv**2 * r2[inverse[0]],
                      r[inverse[1]], hv * r1[inverse[1]], hv**2 * r2[inverse[1]]], axis=1)
        out[el] = v @ POWER_FROM_QUINTIC_HERMITE.T
    return out


def polynomial_radius(r0_poly: np.ndarray, e: np.ndarray, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """r0 and dr0/dξ of the radius quintics ``r0_poly`` (:func:`radius_polynomials`) at ξ of elements e."""
    return _polynomial_radius_loop(r0_poly, np.asarray(e, dtype=np.int64), np.asarray(xi, dtype=float))


@njit(**_JIT)
def _polynomial_radius_loop(r0_poly, e, xi):  # pragma: no cover - compiled
    r = np.empty(e.size)
    dr = np.empty(e.size)
    for i in range(e.size):
        r[i], dr[i], _ = radius_derivatives(r0_poly[e[i]], xi[i])
    return r, dr


@njit(inline="always", **_JIT)
def radius_derivatives(rp, t):  # pragma: no cover - compiled
    """ρ, ρ′, ρ″ of the quintic Σ rp_j ξʲ at ξ = t."""
    r = ((((rp[5] * t + rp[4]) * t + rp[3]) * t + rp[2]) * t + rp[1]) * t + rp[0]
    r1 = (((5 * rp[5] * t + 4 * rp[4]) * t + 3 * rp[3]) * t + 2 * rp[2]) * t + rp[1]
    r2 = ((20 * rp[5] * t + 12 * rp[4]) * t + 6 * rp[3]) * t + 2 * rp[2]
    return r, r1, r2


@njit(inline="always", **_JIT)
def _curve(c, t, k):  # pragma: no cover - compiled
    """Component k of y, y′, y″, y‴ of the cubic Σ c_j ξʲ at ξ = t."""
    y = ((c[3, k] * t + c[2, k]) * t + c[1, k]) * t + c[0, k]
    y1 = (3 * c[3, k] * t + 2 * c[2, k]) * t + c[1, k]
    y2 = 6 * c[3, k] * t + 2 * c[2, k]
    return y, y1, y2, 6 * c[3, k]


@njit(**_JIT)
def phi_derivatives(c, c_ref, rp, x, rx, t):  # pragma: no cover - compiled
    """φ, φ′, φ″, d and r_y at ξ = t of the segment c (current), c_ref (reference) with radius quintic rp,
    for the contact point x of current radius r_x (derivatives in ξ)."""
    P = 0.0
    D2 = 0.0
    b = b1 = b2 = 0.0
    a = a1 = a2 = 0.0
    s2 = 0.0
    for k in range(3):
        y, y1, y2, y3 = _curve(c, t, k)
        Y, Y1, Y2, Y3 = _curve(c_ref, t, k)
        rel = y - x[k]
        D2 += rel * rel
        P += rel * y1
        s2 += y1 * y1 + rel * y2
        b += y1 * y1
        b1 += 2 * y1 * y2
        b2 += 2 * (y2 * y2 + y1 * y3)
        a += Y1 * Y1
        a1 += 2 * Y1 * Y2
        a2 += 2 * (Y2 * Y2 + Y1 * Y3)
    D = np.sqrt(D2)
    d1 = P / D
    d2 = s2 / D - P * P / (D2 * D)
    rho, rho1, rho2 = radius_derivatives(rp, t)
    ry = current_radius(rho, np.sqrt(a), np.sqrt(b))  # a = |Y′|², b = |y′|²
    L = rho1 / rho + 0.25 * (a1 / a - b1 / b)
    L1 = rho2 / rho - (rho1 / rho) ** 2 + 0.25 * (a2 / a - (a1 / a) ** 2 - b2 / b + (b1 / b) ** 2)
    R = rx + ry
    R1 = ry * L
    R2 = ry * (L1 + L * L)
    phi = D / R
    phi1 = d1 / R - D * R1 / (R * R)
    phi2 = d2 / R - 2 * d1 * R1 / (R * R) - D * R2 / (R * R) + 2 * D * R1 * R1 / (R * R * R)
    return phi, phi1, phi2, D, ry


@njit(**_JIT)
def _bracketed_minimum(c, c_ref, rp, x, rx, lo, hi, p_lo, p_hi):  # pragma: no cover - compiled
    """The root of φ′ in (lo, hi), where φ′(lo) < 0 < φ′(hi): Newton on φ′ kept in the bracket, bisection
    when Newton leaves it or φ″ ≤ 0; it starts from the secant of φ′(lo) = ``p_lo``, φ′(hi) = ``p_hi``."""
    t = lo + (hi - lo) * p_lo / (p_lo - p_hi)
    if not lo < t < hi:
        t = 0.5 * (lo + hi)
    for _ in range(100):
        _, p1, p2, _, _ = phi_derivatives(c, c_ref, rp, x, rx, t)
        if p1 == 0:
            return t
        if p1 < 0:
            lo = t
        else:
            hi = t
        step = -p1 / p2 if p2 > 0 else np.nan
        new = t + step
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if abs(new - t) <= _NEWTON_TOL or not hi - lo > _NEWTON_TOL:
            return new
        t = new
    return t


@njit(**_JIT)
def smallest_on_element(c, c_ref, rp, x, rx, xi_closest):  # pragma: no cover - compiled
    """(ξ, φ, d, stationary): the smallest φ = d/(r_x + r_y) on one element and where it is.

    ``c``, ``c_ref`` (4, 3): current and reference power coefficients; ``rp`` (6,): the radius quintic;
    ``x`` (3,), ``rx``: the contact point and its current radius; ``xi_closest``: the element's closest point
    (eq. 67), an extra sample.  Candidates are the roots of φ′ where it changes sign from − to + between
    samples and the element ends where φ′ points inwards; the smallest φ wins (the first of equals).
    """
    best_phi = np.inf
    best_t = 0.0
    best_d = np.inf
    best_stat = False
    prev_t = 0.0
    prev_p1 = 0.0
    j = 0
    extra = True  # xi_closest not yet sampled
    n = SAMPLES
    while j <= n:
        grid = j / n
        if extra and xi_closest < grid and xi_closest > prev_t:
            t = xi_closest
            extra = False
        else:
            t = grid
            if extra and xi_closest == grid:
                extra = False
            j += 1
        phi, p1, p2, D, _ = phi_derivatives(c, c_ref, rp, x, rx, t)
        flat = abs(p1) <= _FLAT * (abs(phi) + abs(p2))  # φ′ = 0 up to round-off
        cand_t = -1.0
        stat = False
        if t == 0.0:
            if p1 >= 0 or flat:
                cand_t, stat = 0.0, flat
        else:
            if p1 == 0:
                cand_t, stat = t, True
            elif prev_p1 < 0 < p1:
                cand_t, stat = _bracketed_minimum(c, c_ref, rp, x, rx, prev_t, t, prev_p1, p1), True
            elif t == 1.0 and p1 < 0:
                cand_t, stat = 1.0, flat
        if cand_t >= 0:
            if cand_t == t:
                val, Dv = phi, D
            else:
                val, _, _, Dv, _ = phi_derivatives(c, c_ref, rp, x, rx, cand_t)
            if val < best_phi:
                best_phi, best_t, best_d, best_stat = val, cand_t, Dv, stat
        prev_t, prev_p1 = t, p1
    return best_t, best_phi, best_d, best_stat


@njit(**_JIT)
def xi_sensitivity(phi2, x, y, y1, y2, rx, ry, L, xp, J, phiA, dphiA, phiB, dphiB, ddphiB,
                   out):  # pragma: no cover - compiled
    """δξ of the minimum of φ (φ′ = 0: δξ = −δφ′/φ″) per DOF of the element of x (out[0:4, m]) and of
    the partner element (out[4:8, m]).

    ``phi2``: φ″ at the minimum (:func:`phi_derivatives`); ``x``, ``rx``: the contact point and its radius;
    ``y``, ``y1``, ``y2``: y, y′, y″ of the partner at ξ; ``ry`` and ``L`` = (ln r_y)′ there; ``xp``, ``J``:
    x′ and |x′| (per unit ξ) at x; φ_a of x at its contact point (``phiA``, ``dphiA``), φ_b of y and its
    first two ξ-derivatives (``phiB``, ``dphiB``, ``ddphiB``).  Only what moves with the DOFs at fixed ξ
    enters δφ′: x and r_x, y, y′, y″ and r_y through |y′|."""
    P = yy2 = b = D2 = 0.0
    for k in range(3):
        rel = y[k] - x[k]
        D2 += rel * rel
        P += rel * y1[k]
        yy2 += y1[k] * y2[k]
        b += y1[k] * y1[k]
    D = np.sqrt(D2)
    R = rx + ry
    inv = 1.0 / phi2 if abs(phi2) > 1e-300 else 0.0
    for col in range(8):
        for j in range(3):
            rel_j = y[j] - x[j]
            n_j = rel_j / D
            if col < 4:  # x moves by φ_a e_j; r_x by −r_x (x′·δx′)/(2|x′|²)
                dP = -phiA[col] * y1[j]
                dD = -phiA[col] * n_j
                dR = -0.5 * (rx / (J * J)) * dphiA[col] * xp[j]
                dry = 0.0
                dL = 0.0
            else:  # y, y′, y″ move by φ_b, φ_b′, φ_b″ times e_j
                bb = col - 4
                dP = phiB[bb] * y1[j] + dphiB[bb] * rel_j
                dD = phiB[bb] * n_j
                db = 2 * dphiB[bb] * y1[j]
                dry = -0.25 * ry * db / b
                dR = dry
                dL = -0.5 * ((dphiB[bb] * y2[j] + ddphiB[bb] * y1[j]) / b - yy2 * db / (b * b))
            dp1 = (dP / (D * R) - P * dD / (D * D * R) - P * dR / (D * R * R)
                   - (dD * ry * L + D * dry * L + D * ry * dL) / (R * R) + 2 * D * ry * L * dR / (R * R * R))
            out[col, j] = -dp1 * inv
