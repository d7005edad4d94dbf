"""Vectorized numpy reference of the Hill model's compiled kernels (skfiber.hill.curve_kernels).

The library evaluates the Bézier curves and solves the damped fiber-velocity
equation only through the numba kernels.  The functions here do the same work
the numpy way (all points at once), and the tests compare both bit for bit:

* :func:`parameter` — segment and u with x(u) = x (``SmoothSegmentedCurve.parameter``),
  with :func:`parameter_safeguarded`, its bracketed-Newton fallback;
* :func:`evaluate` — value and derivatives (``SmoothSegmentedCurve.evaluate``);
  its signature is that of the method, so a test can put it in the method's place;
* :func:`solve_damped_fiber_velocity` — the damped solve, with the signature of
  ``skfiber.hill.damped.solve_damped_fiber_velocity``.

The kernels repeat these operations one by one (the same Horner orders, numpy's
``interp`` search with its guess, the same Newton steps and fallback), which is
why their numbers agree to the bit.
"""
import numpy as np

from skfiber.hill import CurveValues
from skfiber.hill.curve_tables import U_TOLERANCE, horner

EPS = float(np.finfo(float).eps)


def parameter_safeguarded(x: np.ndarray, cx: np.ndarray) -> np.ndarray:
    """Bracketed Newton (bisection whenever a step leaves the bracket) for x(u) = x on [0, 1]."""
    c0, c1, c2, c3, c4, c5 = cx.T
    d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
    u = np.full_like(x, 0.5)
    lo = np.zeros_like(x)
    hi = np.ones_like(x)
    for _ in range(200):
        f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
        done = np.abs(f) <= U_TOLERANCE
        if done.all():
            break
        lo = np.where(f < 0, u, lo)
        hi = np.where(f > 0, u, hi)
        d = c1 + u * (d1 + u * (d2 + u * (d3 + u * d4)))
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = u - f / d
        bad = ~((newton > lo) & (newton < hi) & (d > 0))
        done |= (hi - lo) <= 4 * EPS
        u = np.where(done, u, np.where(bad, 0.5 * (lo + hi), newton))
        if done.all():
            break
    return u


def parameter(curve, x) -> tuple[np.ndarray, np.ndarray]:
    """Segment index and Bézier parameter u with x(u) = x of a SmoothSegmentedCurve, for x inside the domain."""
    tables = curve.tables
    x = np.asarray(x, dtype=float).ravel()
    starts = tables.starts
    seg = np.clip(np.searchsorted(starts, x, side="right") - 1, 0, len(starts) - 1)
    cx = tables.x_coeffs[seg]
    c0, c1, c2, c3, c4, c5 = cx.T
    d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
    # the fine table puts u within ~1e-7 of the root: two plain Newton steps reach round-off, a third
    # polishes it (x′ > 0 inside the segments); points where that fails take the safeguarded loop below
    u = np.clip(np.interp(x, tables.table_x, tables.table_s) - seg, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(3):  # points already within the tolerance stay put (x′ may vanish at the ends)
            f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
            u = np.where(np.abs(f) <= U_TOLERANCE, u, u - f / (c1 + u * (d1 + u * (d2 + u * (d3 + u * d4)))))
    f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
    ok = (np.abs(f) <= U_TOLERANCE) & (u >= 0.0) & (u <= 1.0)
    if ok.all():
        return seg, u
    bad = ~ok
    u_bad = parameter_safeguarded(x[bad], cx[bad])   # looked up at call time: tests may spy on it
    u = np.where(ok, u, 0.0)
    u[bad] = u_bad
    return seg, u


def evaluate(curve, x, *, order: int = 1) -> CurveValues:
    """SmoothSegmentedCurve.evaluate through numpy: value and derivatives up to `order` (0, 1, 2)."""
    if order not in (0, 1, 2):
        raise ValueError(f"order={order!r} is not supported; pick one of 0, 1, 2")
    tables = curve.tables
    xa = np.asarray(x, dtype=float)
    shape = xa.shape
    xf = xa.ravel()
    x0, x1 = tables.domain
    y0, y1 = tables.end_values
    value = np.where(xf < x0, y0 + tables.slope_start * (xf - x0), y1 + tables.slope_end * (xf - x1))
    d1 = np.where(xf < x0, tables.slope_start, tables.slope_end).astype(float)
    d2 = np.zeros_like(xf)
    inside = (xf >= x0) & (xf <= x1)
    if inside.any():
        seg, u = parameter(curve, xf[inside])
        cx, cy = tables.x_coeffs[seg], tables.y_coeffs[seg]
        value[inside] = horner(cy, u)
        if order >= 1:
            k1 = np.arange(1, 6)
            xu = horner(cx[:, 1:] * k1, u)
            yu = horner(cy[:, 1:] * k1, u)
            d1[inside] = yu / xu
            if order >= 2:
                k2 = np.arange(2, 6) * np.arange(1, 5)
                xuu = horner(cx[:, 2:] * k2, u)
                yuu = horner(cy[:, 2:] * k2, u)
                d2[inside] = (yuu * xu - yu * xuu) / xu**3
    if order < 2:
        d2[:] = 0.0
    if order < 1:
        d1[:] = 0.0
    return CurveValues(value.reshape(shape), d1.reshape(shape), d2.reshape(shape))


def solve_damped_fiber_velocity(curves, activation, active_force_length, target, damping, tol) -> np.ndarray:
    """skfiber.hill.damped.solve_damped_fiber_velocity through numpy and the numpy curve evaluation."""
    a, fal, beta = activation, active_force_length, damping
    fv_curve = curves.force_velocity.curve
    shape = np.shape(target)
    af_f = np.broadcast_to(a * fal, shape).ravel()
    t_f = np.asarray(target, dtype=float).ravel()
    guess = evaluate(curves.force_velocity_inverse.curve,
                     target / (np.maximum(a, 0.01) * np.maximum(fal, 0.01)), order=0).value
    v = np.clip(np.asarray(guess, dtype=float), -1.0, 1.0).ravel().copy()
    r0 = af_f * evaluate(fv_curve, v, order=0).value + beta * v - t_f
    other = v - r0 / beta
    lo, hi = np.minimum(v, other), np.maximum(v, other)
    active = np.abs(r0) > tol
    for _ in range(200):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        vi = v[idx]
        ev = evaluate(fv_curve, vi)
        r = af_f[idx] * ev.value + beta * vi - t_f[idx]
        done = np.abs(r) <= tol
        lo_i = np.where(r < 0, vi, lo[idx])
        hi_i = np.where(r > 0, vi, hi[idx])
        newton = vi - r / (af_f[idx] * ev.derivative + beta)
        inside = (newton > lo_i) & (newton < hi_i)
        step = np.where(inside, newton, 0.5 * (lo_i + hi_i))
        done |= (hi_i - lo_i) <= 4 * EPS * np.maximum(1.0, np.abs(vi))
        v[idx] = np.where(done, vi, step)
        lo[idx], hi[idx] = lo_i, hi_i
        active[idx[done]] = False
    if active.any():  # not expected: the root stays bracketed and bisection replaces bad Newton steps
        raise RuntimeError(f"damped fiber-velocity Newton iteration did not converge at {active.sum()} points")
    return v.reshape(shape)
