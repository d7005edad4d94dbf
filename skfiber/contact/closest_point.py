"""Closest point of a point to cubic Hermite segments (paper eqs. 66–68), batched.

A segment is given in the power basis y(ξ) = c0 + c1 ξ + c2 ξ² + c3 ξ³,
ξ ∈ [0, 1] (eq. 68 with slopes per unit ξ).  The distance to a point x is
stationary where f(ξ) = (y − x) · y′ = 0, a quintic in ξ (eq. 67).  The
closest point is the best of all real roots in [0, 1] and the two ends.

One compiled loop (numba) over the (point, segment) pairs,
:func:`closest_point_loop`, which the contact kernels of
:mod:`skfiber.contact.fiber_kernels` call per pair through
:func:`closest_point_one`:

* **no root** — when the Bernstein coefficients of f on [0, 1] all have one
  sign, f has no root there and the minimum is the end where f points inwards;
* **certified fast path** — when the Bernstein coefficients of f′ on [0, 1]
  all have one sign (:func:`_slope_sign`), f is strictly monotone there: if it
  increases, its one root (where f goes from − to +) is the minimum, found by
  safeguarded Newton–bisection on the bracket, or the minimum is an end; if it
  decreases, a root is a maximum of the distance and the minimum is the nearer
  end;
* **general path** — otherwise all real roots of the quintic in [0, 1],
  isolated by its derivatives: the roots of f⁽ʲ⁺¹⁾ in [0, 1] split [0, 1] into
  intervals on which f⁽ʲ⁾ is monotone, so each interval holds at most one root
  of f⁽ʲ⁾, found by the same safeguarded Newton–bisection where the signs at
  its ends differ; from the linear f⁽ᵐ⁻¹⁾ down to f itself (m ≤ 5 the
  effective degree).  Every root where f changes sign is found, hence every
  interior minimum of the distance.

Examples
--------
>>> import numpy as np
>>> c = np.array([[[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]], float)  # y = (ξ, 0, 0)
>>> r = closest_points(c, np.array([[0.25, 1.0, 0.0]]))
>>> float(r.xi[0]), float(r.distance[0])
(0.25, 1.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.jit import njit

__all__ = [
    "POWER_FROM_HERMITE",
    "BEZIER_FROM_HERMITE",
    "ClosestPoints",
    "quintic_coefficients",
    "real_roots",
    "closest_points",
    "closest_point_one",
    "closest_point_loop",
]

# power coefficients c = M q for q = (y(0), y′(0), y(1), y′(1)) (slopes per unit ξ): eq. 68
POWER_FROM_HERMITE = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0], [-3, -2, 3, -1], [2, 1, -2, 1]])
# Bézier control points P = B q: P0 = y0, P1 = y0 + y0′/3, P2 = y1 − y1′/3, P3 = y1
BEZIER_FROM_HERMITE = np.array([[1.0, 0, 0, 0], [1, 1 / 3, 0, 0], [0, 0, 1, -1 / 3], [0, 0, 1, 0]])

# a coefficient below this fraction of the largest one does not change the
# quintic on [0, 1] by more than round-off: it is dropped (effective degree)
_DEGREE_TOL = 1e-13
_NEWTON_TOL = 1e-14  # the bracketed Newton iteration stops below this correction (ξ ∈ [0, 1])
_JIT = dict(cache=True, error_model="numpy")


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


@njit(inline="always", **_JIT)
def _quintic(c, x, a):  # pragma: no cover - compiled
    """Coefficients a0 … a5 of f(ξ) = (y(ξ) − x) · y′(ξ) of one segment c (4, 3) and point x (3,), into a."""
    a[:] = 0.0
    for i in range(4):
        for j in range(3):
            t = 0.0
            for m in range(3):
                ai = c[i, m] - x[m] if i == 0 else c[i, m]
                t += ai * (c[j + 1, m] * (j + 1))
            a[i + j] += t
    return a


@njit(inline="always", **_JIT)
def _polyval(a, n, xi):  # pragma: no cover - compiled
    """Σ_{j<n} a[j] ξ^j by Horner."""
    out = 0.0
    for j in range(n - 1, -1, -1):
        out = out * xi + a[j]
    return out


@njit(inline="always", **_JIT)
def _dpolyval(a, n, xi):  # pragma: no cover - compiled
    """d/dξ Σ_{j<n} a[j] ξ^j by Horner."""
    out = 0.0
    for j in range(n - 1, 0, -1):
        out = out * xi + a[j] * j
    return out


@njit(inline="always", **_JIT)
def _point(c, xi, x):  # pragma: no cover - compiled
    """|y(ξ) − x|² of the segment c."""
    d2 = 0.0
    for m in range(3):
        v = c[0, m] + xi * c[1, m] + xi * xi * c[2, m] + xi * xi * xi * c[3, m] - x[m]
        d2 += v * v
    return d2


@njit(inline="always", **_JIT)
def _one_sign(a):  # pragma: no cover - compiled
    """+1 (−1) where the Bernstein coefficients of the quintic f = Σ a_j ξ^j on [0, 1] are all > 0 (< 0), else 0.

    β_i = Σ_{j≤i} C(i, j)/C(5, j) a_j, and f = Σ β_i B_i⁵ with B_i⁵ ≥ 0
    summing to 1: all β_i > 0 prove f > 0 on [0, 1] (the distance grows, its
    minimum is at ξ = 0), all < 0 prove f < 0 (the minimum is at ξ = 1).
    """
    a0, a1, a2, a3, a4, a5 = a[0], a[1], a[2], a[3], a[4], a[5]
    b1 = a0 + a1 / 5
    b2 = a0 + 2 * a1 / 5 + a2 / 10
    b3 = a0 + 3 * a1 / 5 + 3 * a2 / 10 + a3 / 10
    b4 = a0 + 4 * a1 / 5 + 6 * a2 / 10 + 4 * a3 / 10 + a4 / 5
    b5 = a0 + a1 + a2 + a3 + a4 + a5
    if a0 > 0 and b1 > 0 and b2 > 0 and b3 > 0 and b4 > 0 and b5 > 0:
        return 1
    if a0 < 0 and b1 < 0 and b2 < 0 and b3 < 0 and b4 < 0 and b5 < 0:
        return -1
    return 0


@njit(inline="always", **_JIT)
def _slope_sign(a):  # pragma: no cover - compiled
    """+1 (−1) where the Bernstein coefficients of f′ on [0, 1] (f = Σ a_j ξ^j, the quintic) are all > 0 (< 0),
    which proves f strictly increasing (decreasing) on [0, 1]; else 0.

    f′ = Σ_{j<5} p_j ξ^j with p_j = (j + 1) a_{j+1}, and β_i = Σ_{j≤i} C(i, j)/C(4, j) p_j.
    """
    a1, a2, a3, a4, a5 = a[1], a[2], a[3], a[4], a[5]
    b1 = a1 + a2 / 2
    b2 = a1 + a2 + a3 / 2
    b3 = a1 + 1.5 * a2 + 1.5 * a3 + a4
    b4 = a1 + 2 * a2 + 3 * a3 + 4 * a4 + 5 * a5
    if a1 > 0 and b1 > 0 and b2 > 0 and b3 > 0 and b4 > 0:
        return 1
    if a1 < 0 and b1 < 0 and b2 < 0 and b3 < 0 and b4 < 0:
        return -1
    return 0


@njit(inline="always", **_JIT)
def _bracketed_root(p, n, lo, hi, p_lo, p_hi):  # pragma: no cover - compiled
    """Root of Σ_{j<n} p[j] ξ^j, monotone on (lo, hi) with p(lo) p(hi) < 0: Newton, bisection fallback.

    Converged when the Newton correction is below 1e-14 (ξ ∈ [0, 1]).
    """
    sign = 1.0 if p_lo < 0 else -1.0  # sign · p increases
    xi = lo - p_lo * (hi - lo) / (p_hi - p_lo)  # secant start
    for _ in range(60):
        x = xi
        f = sign * _polyval(p, n, x)
        df = sign * _dpolyval(p, n, x)
        if f < 0:
            lo = x
        else:
            hi = x
        correction = -f / df
        if abs(correction) <= _NEWTON_TOL or f == 0:
            return min(max(x + correction, 0.0), 1.0)
        new = x + correction
        xi = new if np.isfinite(new) and lo < new < hi else 0.5 * (lo + hi)
    return xi


@njit(**_JIT)
def _effective_degree(a):  # pragma: no cover - compiled
    """Highest j with |a[j]| > 1e-13 max |a| (0 if none)."""
    scale = 0.0
    for j in range(a.shape[0]):
        scale = max(scale, abs(a[j]))
    for j in range(a.shape[0] - 1, 0, -1):
        if abs(a[j]) > _DEGREE_TOL * scale:
            return j
    return 0


@njit(**_JIT)
def _real_roots(a, D, pts, new):  # pragma: no cover - compiled
    """The real roots in [0, 1] of Σ a[j] ξ^j where it changes sign (or vanishes at a break point).

    D (m+1, m+1), pts and new (m+2,) are scratch; the roots are new[1 : count + 1] (ascending).
    Returns the count.
    """
    k = _effective_degree(a)
    if k == 0:
        return 0
    for j in range(k + 1):  # D[j] = coefficients of the j-th derivative
        for i in range(j, k + 1):
            factor = 1.0
            for m in range(j):
                factor *= i - m
            D[j, i - j] = a[i] * factor
    pts[0], pts[1] = 0.0, 1.0
    npts = 2
    count = 0
    for j in range(k - 1, -1, -1):  # f⁽ʲ⁾ is monotone between consecutive pts
        n = k + 1 - j
        count = 0
        new[0] = 0.0
        p_r = _polyval(D[j], n, pts[0])
        for i in range(npts - 1):
            lo, hi = pts[i], pts[i + 1]
            p_lo, p_r = p_r, _polyval(D[j], n, hi)
            if p_lo == 0:
                root = lo
            elif (p_lo < 0) != (p_r < 0) and p_r != 0:
                root = _bracketed_root(D[j], n, lo, hi, p_lo, p_r)
            elif p_r == 0 and i == npts - 2:
                root = hi
            else:
                continue
            count += 1
            new[count] = root
        new[count + 1] = 1.0
        npts = count + 2
        pts[:npts] = new[:npts]
    return count


@njit(inline="always", **_JIT)
def closest_point_one(c, x, certify, a, scratch):  # pragma: no cover - compiled
    """(ξ, |y(ξ) − x|, stationary) of one segment c (4, 3) and point x (3,).

    ``certify``: try the certified monotone fast path (:func:`_slope_sign`) before the root isolation;
    ``a`` (6,) and ``scratch`` (9, 7) float scratch arrays.
    """
    _quintic(c, x, a)
    sign = _one_sign(a)
    if sign != 0:  # no root in [0, 1]: the minimum is the end where f points inwards
        xi = 0.0 if sign > 0 else 1.0
        return xi, np.sqrt(_point(c, xi, x)), False
    slope = _slope_sign(a) if certify else 0
    if slope > 0:  # f increasing: at most one root, the minimum (f goes from − to +)
        f0 = a[0]
        f1 = a[0] + a[1] + a[2] + a[3] + a[4] + a[5]
        if f0 < 0 and f1 > 0:
            xi = _bracketed_root(a, 6, 0.0, 1.0, f0, f1)
            stationary = True
        else:  # f ≥ 0 at 0: minimum at ξ = 0; f ≤ 0 at 1: at ξ = 1
            xi = 0.0 if f0 >= 0 else 1.0
            stationary = f0 == 0 or f1 == 0
        return xi, np.sqrt(_point(c, xi, x)), stationary
    if slope < 0:  # f decreasing: a root is a maximum of the distance; the minimum is the nearer end
        d0, d1 = _point(c, 0.0, x), _point(c, 1.0, x)
        return (0.0, np.sqrt(d0), False) if d0 <= d1 else (1.0, np.sqrt(d1), False)
    roots = scratch[8]
    count = _real_roots(a, scratch[:6, :6], scratch[6], roots)
    best = np.inf
    xi = 0.0
    stationary = False
    for j in range(1, count + 1):  # roots first: ties go to the stationary point
        d2 = _point(c, roots[j], x)
        if d2 < best:
            best, xi, stationary = d2, roots[j], True
    for t in (0.0, 1.0):
        d2 = _point(c, t, x)
        if d2 < best:
            best, xi, stationary = d2, t, False
    return xi, np.sqrt(best), stationary


@njit(**_JIT)
def closest_point_loop(c, x, certify, xi, distance, stationary):  # pragma: no cover - compiled
    """:func:`closest_point_one` for every pair i of c (n, 4, 3), x (n, 3), into the (n,) outputs."""
    a = np.empty(6)
    scratch = np.empty((9, 7))
    for i in range(c.shape[0]):
        xi[i], distance[i], stationary[i] = closest_point_one(c[i], x[i], certify, a, scratch)


@njit(**_JIT)
def _quintic_loop(c, x, a):  # pragma: no cover - compiled
    for i in range(c.shape[0]):
        _quintic(c[i], x[i], a[i])


@njit(**_JIT)
def _real_roots_loop(a, out):  # pragma: no cover - compiled
    m = a.shape[1]
    D = np.empty((m, m))
    pts = np.empty(m + 1)
    new = np.empty(m + 1)
    for i in range(a.shape[0]):
        out[i] = np.nan
        count = _real_roots(a[i], D, pts, new)
        out[i, :count] = new[1:count + 1]


def quintic_coefficients(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Coefficients a0 … a5 (ascending) of f(ξ) = (y(ξ) − x) · y′(ξ) (eq. 67), (n, 6)."""
    c = np.ascontiguousarray(c, dtype=float)
    a = np.empty((c.shape[0], 6))
    _quintic_loop(c, np.ascontiguousarray(x, dtype=float), a)
    return a


def real_roots(a: np.ndarray) -> np.ndarray:
    """The real roots in [0, 1] where Σ a[:, j] ξ^j (n, m+1) changes sign, ascending, as (n, m); NaN pads.

    Coefficients below ``1e-13 × max |a|`` are dropped from the top (the
    effective degree); the roots are isolated by the derivatives (module note).
    """
    a = np.ascontiguousarray(a, dtype=float)
    out = np.empty((a.shape[0], a.shape[1] - 1))
    _real_roots_loop(a, out)
    return out


def closest_points(c: np.ndarray, x: np.ndarray, *, method: str = "auto") -> ClosestPoints:
    """Closest point on each segment c[i] (power basis, (n, 4, 3)) to the point x[i] (n, 3).

    Parameters
    ----------
    method
        ``"auto"`` (fast path where f is certified monotone, all real roots
        elsewhere) or ``"eig"`` (all real roots for every pair; the name is
        kept from the former companion-eigenvalue root finder).
    """
    if method not in ("auto", "eig"):
        raise ValueError(f"unknown method {method!r}; pick one of 'auto', 'eig'")
    c = np.ascontiguousarray(c, dtype=float)
    n = c.shape[0]
    out = ClosestPoints(np.empty(n), np.empty(n), np.empty(n, dtype=bool))
    closest_point_loop(c, np.ascontiguousarray(x, dtype=float), method == "auto",
                       out.xi, out.distance, out.stationary)
    return out
