r"""The Bézier-curve evaluation of :mod:`skfiber.hill.bezier` as compiled loops (numba).

A Hill muscle evaluation makes a few curve evaluations on arrays of a few
entries (one per muscle), and the damped fiber-velocity solve makes a few more
per Newton iteration; through numpy each costs ~50 numpy calls, which
dominated the Hill model's run time.  The kernels here are the library's one
implementation of that work, each in one call:

* :func:`evaluate_curve` — value, slope and the parts of the second derivative
  of a :class:`~skfiber.hill.bezier.SmoothSegmentedCurve` at an array of points
  (:meth:`SmoothSegmentedCurve.evaluate <skfiber.hill.bezier.SmoothSegmentedCurve.evaluate>`);
* :func:`curve_parameter` — the segment and Bézier parameter u with x(u) = x
  (:meth:`SmoothSegmentedCurve.parameter <skfiber.hill.bezier.SmoothSegmentedCurve.parameter>`);
* :func:`solve_damped` — the damped fiber-velocity solve of eq. (3)
  (:func:`skfiber.hill.damped.solve_damped_fiber_velocity`).

The parameter solve: the tabulated start (numpy's ``interp``, including its
search from the previous point's index, which matters where rounding makes the
table decrease by an ulp at a segment joint), three Newton steps, a bracketed
Newton fallback where they miss OpenSim's tolerance; then Horner's scheme on
the segment's coefficients, and the linear continuation outside the domain.
A vectorized numpy version of the same operations, kept in the tests
(``tests/hill_reference.py``), gives the same numbers bit for bit.  The one
operation left to numpy is the cube x′(u)³ of the second derivative (numpy's
``power`` uses SIMD routines whose last bit differs from libm's ``pow``):
:func:`evaluate_curve` returns the numerator and x′(u) and
:meth:`SmoothSegmentedCurve.evaluate <skfiber.hill.bezier.SmoothSegmentedCurve.evaluate>` divides.

A curve enters as one flat array, :func:`pack_curve`, to keep the cost of a
call low.  The kernels are compiled on first use (a few seconds) and cached on
disk (``cache=True``).  Numbers the kernels need from other modules (the
tolerance :data:`~skfiber.hill.curve_tables.U_TOLERANCE`) travel in the packed
array: numba's disk cache would not see a change to a constant of another file.

Examples
--------
>>> import numpy as np
>>> from skfiber.hill.curves import ActiveForceLengthCurve
>>> curve = ActiveForceLengthCurve().curve
>>> value, slope, num, den = evaluate_curve(pack_curve(curve.tables), np.array([0.2, 1.0, 1.2]), 1)
>>> bool(np.all(value == curve([0.2, 1.0, 1.2]))), float(value[1])
(True, 1.0)
"""
from __future__ import annotations

import math

import numpy as np

from ..core.jit import njit
from .curve_tables import U_TOLERANCE, CurveTables

__all__ = ["pack_curve", "evaluate_curve", "curve_parameter", "solve_damped"]

_EPS = float(np.finfo(float).eps)
_LIKELY_IN_CACHE_SIZE = 8  # numpy's binary_search_with_guess
_HEADER = 3  # pack_curve: n_segments, table length, tolerance on |x(u) - x|
_JIT = dict(cache=True, fastmath=False, error_model="numpy")


def pack_curve(tables: CurveTables) -> np.ndarray:
    """The :class:`~skfiber.hill.curve_tables.CurveTables` of a curve as one float array.

    Layout: ``[n, T, u_tolerance, starts (n), x coefficients (n × 6),
    y coefficients (n × 6), table x (T), table s (T), x_start, x_end, y_start,
    y_end, slope_start, slope_end]`` with n segments and T table samples.
    A :class:`~skfiber.hill.bezier.SmoothSegmentedCurve` is accepted too (its
    ``tables``; the curve keeps the result as ``packed``).
    """
    tables = getattr(tables, "tables", tables)
    x0, x1 = tables.domain
    y0, y1 = tables.end_values
    n = tables.x_coeffs.shape[0]
    tx = np.asarray(tables.table_x, dtype=float)
    return np.ascontiguousarray(np.concatenate([
        [float(n), float(tx.size), U_TOLERANCE], tables.starts, tables.x_coeffs.ravel(), tables.y_coeffs.ravel(),
        tx, tables.table_s, [x0, x1, y0, y1, float(tables.slope_start), float(tables.slope_end)]]), dtype=float)


@njit(**_JIT)
def _search_with_guess(key, arr, lo, n, guess):  # pragma: no cover - compiled
    """numpy's ``binary_search_with_guess`` on arr[lo:lo + n] (numpy/_core/src/multiarray/compiled_base.c).

    The index i with arr[i] <= key < arr[i + 1] (−1 below, n above, n − 1 at the
    last entry); where the array is not monotone the answer depends on the
    guess exactly as numpy's does.
    """
    if key > arr[lo + n - 1]:
        return n
    if key < arr[lo]:
        return -1
    if n <= 4:
        i = 1
        while i < n and key >= arr[lo + i]:
            i += 1
        return i - 1
    if guess > n - 3:
        guess = n - 3
    if guess < 1:
        guess = 1
    imin = 0
    imax = n
    if key < arr[lo + guess]:
        if key < arr[lo + guess - 1]:
            imax = guess - 1
            if guess > _LIKELY_IN_CACHE_SIZE and key >= arr[lo + guess - _LIKELY_IN_CACHE_SIZE]:
                imin = guess - _LIKELY_IN_CACHE_SIZE
        else:
            return guess - 1
    else:
        if key < arr[lo + guess + 1]:
            return guess
        if key < arr[lo + guess + 2]:
            return guess + 1
        imin = guess + 2
        if guess < n - _LIKELY_IN_CACHE_SIZE - 1 and key < arr[lo + guess + _LIKELY_IN_CACHE_SIZE]:
            imax = guess + _LIKELY_IN_CACHE_SIZE
    while imin < imax:
        imid = imin + ((imax - imin) >> 1)
        if key >= arr[lo + imid]:
            imin = imid + 1
        else:
            imax = imid
    return imin - 1


@njit(**_JIT)
def _interp(key, data, ox, os, n, j):  # pragma: no cover - compiled
    """numpy's ``interp(key, data[ox:ox + n], data[os:os + n])`` for one key; returns (value, new guess)."""
    j = _search_with_guess(key, data, ox, n, j)
    if j == -1:
        return data[os], j
    if j == n:
        return data[os + n - 1], j
    if j == n - 1:
        return data[os + j], j
    if data[ox + j] == key:
        return data[os + j], j
    slope = (data[os + j + 1] - data[os + j]) / (data[ox + j + 1] - data[ox + j])
    res = slope * (key - data[ox + j]) + data[os + j]
    if math.isnan(res):
        res = slope * (key - data[ox + j + 1]) + data[os + j + 1]
        if math.isnan(res) and data[os + j] == data[os + j + 1]:
            res = data[os + j]
    return res, j


@njit(**_JIT)
def _safeguarded(x, c0, c1, c2, c3, c4, c5, tol):  # pragma: no cover - compiled
    """Bracketed Newton on [0, 1] (bisection whenever a step leaves the bracket) for x(u) = x at one point."""
    d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
    u = 0.5
    lo = 0.0
    hi = 1.0
    for _ in range(200):
        f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
        if abs(f) <= tol:
            break
        if f < 0:
            lo = u
        if f > 0:
            hi = u
        d = c1 + u * (d1 + u * (d2 + u * (d3 + u * d4)))
        newton = u - f / d
        if (hi - lo) <= 4 * _EPS:
            break
        if newton > lo and newton < hi and d > 0:
            u = newton
        else:
            u = 0.5 * (lo + hi)
    return u


@njit(**_JIT)
def _locate(data, x, j):  # pragma: no cover - compiled
    """Segment and Bézier parameter u with x(u) = x at one point: (segment, u, guess).

    The segment is the last one starting at or before x (the first below the
    domain, the last above it); u starts from the tabulated inverse, takes three
    Newton steps (points already within the tolerance stay put) and, where that
    misses the tolerance or leaves [0, 1], the bracketed Newton iteration.
    ``j`` is the interpolation guess carried from the previous point of the same
    call (as numpy's ``interp`` carries it).
    """
    n = int(data[0])
    nt = int(data[1])
    tol = data[2]
    ps = _HEADER
    pxc = ps + n
    ptx = pxc + 12 * n
    pts = ptx + nt
    # segment: np.clip(np.searchsorted(starts, x, side="right") - 1, 0, n - 1) (NaN sorts last)
    seg = 0
    if math.isnan(x):
        seg = n - 1
    while seg + 1 < n and data[ps + seg + 1] <= x:
        seg += 1
    k = pxc + 6 * seg
    c0, c1, c2, c3, c4, c5 = data[k], data[k + 1], data[k + 2], data[k + 3], data[k + 4], data[k + 5]
    d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
    s, j = _interp(x, data, ptx, pts, nt, j)
    u = s - seg
    u = u if u > 0.0 or math.isnan(u) else 0.0  # np.clip's max, then min (NaN passes)
    u = u if u < 1.0 or math.isnan(u) else 1.0
    for _ in range(3):
        f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
        if not abs(f) <= tol:
            u = u - f / (c1 + u * (d1 + u * (d2 + u * (d3 + u * d4))))
    f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
    if not (abs(f) <= tol and u >= 0.0 and u <= 1.0):
        u = _safeguarded(x, c0, c1, c2, c3, c4, c5, tol)
    return seg, u, j


@njit(**_JIT)
def _point(data, x, order, j):  # pragma: no cover - compiled
    """One point of the curve evaluation: (value, slope, d2 numerator, x′(u), guess).

    ``j`` is the interpolation guess carried from the previous inside point of
    the same call (as numpy's ``interp`` carries it); outside the domain it is
    returned unchanged and x′(u) is 1 (the numerator 0).
    """
    n = int(data[0])
    nt = int(data[1])
    pxc = _HEADER + n
    pyc = pxc + 6 * n
    pe = pyc + 6 * n + 2 * nt
    x0, x1, y0, y1, s0, s1 = data[pe], data[pe + 1], data[pe + 2], data[pe + 3], data[pe + 4], data[pe + 5]
    if not (x >= x0 and x <= x1):
        if x < x0:
            return y0 + s0 * (x - x0), (s0 if order >= 1 else 0.0), 0.0, 1.0, j
        return y1 + s1 * (x - x1), (s1 if order >= 1 else 0.0), 0.0, 1.0, j
    seg, u, j = _locate(data, x, j)
    k = pxc + 6 * seg
    c1, c2, c3, c4, c5 = data[k + 1], data[k + 2], data[k + 3], data[k + 4], data[k + 5]
    k = pyc + 6 * seg
    e0, e1, e2, e3, e4, e5 = data[k], data[k + 1], data[k + 2], data[k + 3], data[k + 4], data[k + 5]
    value = ((((e5 * u + e4) * u + e3) * u + e2) * u + e1) * u + e0
    if order < 1:
        return value, 0.0, 0.0, 1.0, j
    xu = (((c5 * 5.0 * u + c4 * 4.0) * u + c3 * 3.0) * u + c2 * 2.0) * u + c1
    yu = (((e5 * 5.0 * u + e4 * 4.0) * u + e3 * 3.0) * u + e2 * 2.0) * u + e1
    if order < 2:
        return value, yu / xu, 0.0, 1.0, j
    xuu = ((c5 * 20.0 * u + c4 * 12.0) * u + c3 * 6.0) * u + c2 * 2.0
    yuu = ((e5 * 20.0 * u + e4 * 12.0) * u + e3 * 6.0) * u + e2 * 2.0
    return value, yu / xu, yuu * xu - yu * xuu, xu, j


@njit(**_JIT)
def evaluate_curve(data, x, order):  # pragma: no cover - compiled
    """A curve (:func:`pack_curve`) at the points x (1-D): (value, slope, numerator, x′(u)).

    The slope is zero for ``order`` 0; for ``order`` 2 the second derivative is
    numerator / x′(u)³ (zero outside the domain, where x′(u) is returned as 1;
    numerator 0 and x′(u) 1 everywhere for lower orders).
    """
    m = x.size
    value = np.empty(m)
    slope = np.empty(m)
    num = np.empty(m)
    den = np.empty(m)
    j = 0
    for i in range(m):
        value[i], slope[i], num[i], den[i], j = _point(data, x[i], order, j)
    return value, slope, num, den


@njit(**_JIT)
def curve_parameter(data, x):  # pragma: no cover - compiled
    """Segment index (int64) and Bézier parameter u with x(u) = x at the points x (1-D).

    ``data`` is the curve (:func:`pack_curve`).

    Meant for points inside the domain; outside it the answer is that of the
    first (below) or last (above) segment's solve, clipped to [0, 1].
    """
    m = x.size
    seg = np.empty(m, dtype=np.int64)
    u = np.empty(m)
    j = 0
    for i in range(m):
        seg[i], u[i], j = _locate(data, x[i], j)
    return seg, u


@njit(**_JIT)
def _nan_min(a, b):  # pragma: no cover - compiled
    """np.minimum for two floats (NaN propagates)."""
    if math.isnan(a) or a <= b:
        return a
    return b


@njit(**_JIT)
def _nan_max(a, b):  # pragma: no cover - compiled
    """np.maximum for two floats (NaN propagates)."""
    if math.isnan(a) or a >= b:
        return a
    return b


@njit(**_JIT)
def solve_damped(fv, fv_inverse, a, fal, target, beta, tol):  # pragma: no cover - compiled
    """The damped fiber-velocity solve: r(ṽ) = a f^L f^V(ṽ) + β ṽ − target = 0 at each point.

    Parameters
    ----------
    fv, fv_inverse : the force–velocity curve and its inverse (:func:`pack_curve`).
    a, fal, target : (m,) activation, f^L and the target a f^L f^V + β ṽ.
    beta, tol : damping β > 0 and the tolerance on |r|.

    Returns
    -------
    (v, n_failed) : the normalized fiber velocities (m,) and the number of
    points that did not converge within 200 iterations.

    r′ ≥ β > 0, so one evaluation at the start ṽ0 brackets the root between
    ṽ0 and ṽ0 − r(ṽ0)/β; Newton steps leaving the bracket are replaced by
    bisection.  The start is OpenSim's: the undamped solution (eq. 2) with
    a, f^L ≥ 0.01, limited to [−1, 1].  The curve evaluations run in the order
    and groups of a vectorized numpy solve (the inverse at all points, f^V at
    all points, then f^V at the points still iterating), so that numpy's
    ``interp`` guesses, and with them the numbers, are those of the numpy
    reference in the tests.
    """
    m = target.size
    v = np.empty(m)
    lo = np.empty(m)
    hi = np.empty(m)
    af = np.empty(m)
    active = np.empty(m, dtype=np.bool_)
    j = 0
    for i in range(m):
        af[i] = a[i] * fal[i]
        g, _, _, _, j = _point(fv_inverse, target[i] / (_nan_max(a[i], 0.01) * _nan_max(fal[i], 0.01)), 0, j)
        v[i] = g if g > -1.0 or math.isnan(g) else -1.0  # np.clip(guess, -1, 1)
        v[i] = v[i] if v[i] < 1.0 or math.isnan(v[i]) else 1.0
    j = 0
    for i in range(m):
        f0, _, _, _, j = _point(fv, v[i], 0, j)
        r0 = af[i] * f0 + beta * v[i] - target[i]
        other = v[i] - r0 / beta
        lo[i] = _nan_min(v[i], other)
        hi[i] = _nan_max(v[i], other)
        active[i] = abs(r0) > tol
    n_active = 0
    for i in range(m):
        if active[i]:
            n_active += 1
    for _ in range(200):
        if n_active == 0:
            break
        j = 0
        for i in range(m):
            if not active[i]:
                continue
            vi = v[i]
            value, deriv, _, _, j = _point(fv, vi, 1, j)
            r = af[i] * value + beta * vi - target[i]
            done = abs(r) <= tol
            if r < 0:
                lo[i] = vi
            if r > 0:
                hi[i] = vi
            newton = vi - r / (af[i] * deriv + beta)
            if newton > lo[i] and newton < hi[i]:
                step = newton
            else:
                step = 0.5 * (lo[i] + hi[i])
            if (hi[i] - lo[i]) <= 4 * _EPS * _nan_max(1.0, abs(vi)):
                done = True
            if done:
                active[i] = False
                n_active -= 1
            else:
                v[i] = step
    return v, n_active
