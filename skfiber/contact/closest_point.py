"""Closest point of a point to cubic Hermite segments (paper eqs. 66–68), batched.

A segment is given in the power basis y(ξ) = c0 + c1 ξ + c2 ξ² + c3 ξ³,
ξ ∈ [0, 1] (eq. 68 with slopes per unit ξ).  The distance to a point x is
stationary where f(ξ) = (y − x) · y′ = 0, a quintic in ξ (eq. 67).  The
closest point is the best of all real roots in [0, 1] and the two ends.

Everything is vectorized over the (point, segment) pairs:

* **certified fast path** — when Bézier bounds prove f′ = |y′|² + (y − x)·y″ > 0
  on [0, 1] (f increasing, d² convex: at most one root), the root is found by
  safeguarded Newton–bisection on the bracket, or the minimum is an end;
* **general path** — all roots of the quintic as eigenvalues of batched
  companion matrices (``np.linalg.eigvals`` on (n, m, m) stacks, grouped by
  the effective degree m ≤ 5), polished by Newton steps on f.

Example
-------
>>> import numpy as np
>>> c = np.array([[[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]], float)  # y = (ξ, 0, 0)
>>> r = closest_points(c, np.array([[0.25, 1.0, 0.0]]))
>>> float(r.xi[0]), float(r.distance[0])
(0.25, 1.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "POWER_FROM_HERMITE",
    "BEZIER_FROM_HERMITE",
    "ClosestPoints",
    "quintic_coefficients",
    "polynomial_roots",
    "closest_points",
]

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
