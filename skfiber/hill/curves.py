"""Smooth segmented quintic Bézier curves and the five default muscle curves of
Millard et al. (2013), as in OpenSim's ``Millard2012EquilibriumMuscle``.

A curve is a chain of quintic Bézier segments ``(x(u), y(u))``, u ∈ [0, 1],
each built from two points, the slopes there and a *curviness* (OpenSim's
``SegmentedQuinticBezierToolkit::calcQuinticBezierCornerControlPoints``); it is
C2 inside and continued linearly outside its domain.  Evaluating y at a given x
first finds the parameter u with x(u) = x: for all points at once by Newton's
method on a bracket [0, 1] with a bisection safeguard (x(u) is increasing on each
segment), started from a tabulated u(x).  The tolerance on |x(u) − x| is
OpenSim's (100 machine epsilons).  The evaluation runs as a compiled kernel
(:mod:`skfiber.hill.curve_kernels`); the numpy code
(``SmoothSegmentedCurve._evaluate_numpy``) stays its definition and gives the
same numbers bit for bit.

The construction parameters and their defaults are those of OpenSim 4.6
(``ActiveForceLengthCurve``, ``ForceVelocityCurve``,
``ForceVelocityInverseCurve``, ``FiberForceLengthCurve``,
``TendonForceLengthCurve`` and ``SmoothSegmentedFunctionFactory``).

Example
-------
>>> from skfiber.hill.curves import ActiveForceLengthCurve, TendonForceLengthCurve
>>> fal = ActiveForceLengthCurve()
>>> round(float(fal(1.0)), 12), round(float(fal.derivative(1.0)), 12)
(1.0, 0.0)
>>> round(float(TendonForceLengthCurve()(1.049)), 12)
1.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import curve_kernels as _kernels

__all__ = [
    "CurveValues",
    "SmoothSegmentedCurve",
    "corner_control_points",
    "scale_curviness",
    "ActiveForceLengthCurve",
    "ForceVelocityCurve",
    "ForceVelocityInverseCurve",
    "FiberForceLengthCurve",
    "TendonForceLengthCurve",
]

_EPS = float(np.finfo(float).eps)
_ROOT_EPS = math.sqrt(_EPS)
_SIGNIFICANT_REAL = 2.0**-40  # SimTK::SignificantReal for double (≈ 9.1e-13)
_U_TOLERANCE = 100.0 * _EPS  # OpenSim's UTOL on |x(u) - x|
_TABLE_SAMPLES = 2048  # samples per segment of the tabulated u(x) (initial guess)

# Bernstein -> power basis of a quintic: coefficient of u**j is
# sum_k C(5, j) C(j, k) (-1)**(j - k) P_k  (k <= j).
_BERNSTEIN_TO_POWER = np.array(
    [
        [math.comb(5, j) * math.comb(j, k) * (-1) ** (j - k) if k <= j else 0 for k in range(6)]
        for j in range(6)
    ],
    dtype=float,
)


def scale_curviness(curviness: float) -> float:
    """Map a user curviness c ∈ [0, 1] to the Bézier one, 0.1 + 0.8 c (OpenSim)."""
    return 0.1 + 0.8 * curviness


def _check_range(name: str, value: float, low: float, high: float, *, low_open=False, high_open=False,
                 hint: str = "") -> None:
    """Raise ValueError naming `value` unless it lies in the interval."""
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if not (ok_low and ok_high and math.isfinite(value)):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name}={value!r} is outside the allowed range {interval}{hint}")


def corner_control_points(x0: float, y0: float, dydx0: float, x1: float, y1: float, dydx1: float,
                          curviness: float) -> tuple[np.ndarray, np.ndarray]:
    """Control points of one C-shaped quintic Bézier corner.

    The segment starts at (x0, y0) with slope `dydx0` and ends at (x1, y1) with
    slope `dydx1`; its inner control points lie on the two tangent lines, a
    fraction `curviness` of the way towards their intersection (doubled, which
    makes the curvature vanish at both ends).

    Parameters
    ----------
    x0, y0, dydx0 : start point and slope.
    x1, y1, dydx1 : end point and slope.
    curviness : Bézier curviness in [0, 1] (already scaled, see :func:`scale_curviness`).

    Returns
    -------
    (x_points, y_points) : two arrays of 6 control-point coordinates.

    Raises
    ------
    ValueError
        If curviness is outside [0, 1] or the two tangent lines do not form a
        C-shaped corner (the segment would be S-shaped).

    Examples
    --------
    >>> xp, yp = corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 0.5)
    >>> xp.tolist(), yp.tolist()
    ([0.0, 0.25, 0.25, 0.75, 0.75, 1.0], [0.0, 0.0, 0.0, 0.5, 0.5, 1.0])
    """
    _check_range("curviness", curviness, 0.0, 1.0)
    if abs(dydx0 - dydx1) > _ROOT_EPS:
        xc = (y1 - y0 - x1 * dydx1 + x0 * dydx0) / (dydx0 - dydx1)
    else:
        xc = 0.5 * (x1 + x0)
    yc = (xc - x1) * dydx1 + y1
    a = (xc - x0) ** 2 + (yc - y0) ** 2
    b = (xc - x1) ** 2 + (yc - y1) ** 2
    c = (x1 - x0) ** 2 + (y1 - y0) ** 2
    if not (c > a and c > b):
        raise ValueError(
            f"the tangent lines at ({x0:g}, {y0:g}) with slope {dydx0:g} and at ({x1:g}, {y1:g}) "
            f"with slope {dydx1:g} meet at ({xc:g}, {yc:g}), which does not make a C-shaped corner; "
            "change the curve parameters (slopes or points)"
        )
    x0m, y0m = x0 + curviness * (xc - x0), y0 + curviness * (yc - y0)
    x1m, y1m = x1 + curviness * (xc - x1), y1 + curviness * (yc - y1)
    return (np.array([x0, x0m, x0m, x1m, x1m, x1], dtype=float),
            np.array([y0, y0m, y0m, y1m, y1m, y1], dtype=float))


@dataclass(frozen=True)
class CurveValues:
    """A curve's value and derivatives at an array of points (same shape as x)."""

    value: np.ndarray
    derivative: np.ndarray
    second_derivative: np.ndarray


def _horner(coeffs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Σ_j coeffs[:, j] u**j for per-point coefficient rows (m, k)."""
    out = coeffs[:, -1].copy()
    for j in range(coeffs.shape[1] - 2, -1, -1):
        out = out * u + coeffs[:, j]
    return out


@dataclass(frozen=True, eq=False)
class SmoothSegmentedCurve:
    """A C2 chain of quintic Bézier segments with linear extrapolation.

    Parameters
    ----------
    x_points, y_points : (n_segments, 6) control points; segment i covers
        x ∈ [x_points[i, 0], x_points[i, 5]], consecutive segments join, and each
        row of x_points is non-decreasing.
    slope_start, slope_end : slopes of the linear continuation left of the first
        and right of the last segment.

    Examples
    --------
    >>> xp, yp = corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 0.5)
    >>> curve = SmoothSegmentedCurve(xp[None], yp[None], slope_start=0.0, slope_end=2.0)
    >>> curve([-1.0, 0.0, 1.0, 2.0]).tolist()
    [0.0, 0.0, 1.0, 3.0]
    """

    x_points: np.ndarray
    y_points: np.ndarray
    slope_start: float
    slope_end: float
    _x_coeffs: np.ndarray = field(init=False, repr=False)
    _y_coeffs: np.ndarray = field(init=False, repr=False)
    _table_x: np.ndarray = field(init=False, repr=False)
    _table_s: np.ndarray = field(init=False, repr=False)
    _packed: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        xp = np.atleast_2d(np.asarray(self.x_points, dtype=float))
        yp = np.atleast_2d(np.asarray(self.y_points, dtype=float))
        if xp.shape != yp.shape or xp.shape[1] != 6:
            raise ValueError(f"x_points and y_points must both have shape (n_segments, 6); "
                             f"got {xp.shape} and {yp.shape}")
        if np.any(np.diff(xp, axis=1) < 0):
            raise ValueError("each row of x_points must be non-decreasing (x(u) increasing)")
        if np.any(xp[1:, 0] != xp[:-1, 5]) or np.any(yp[1:, 0] != yp[:-1, 5]):
            raise ValueError("consecutive segments must join: x_points[i, 5] == x_points[i + 1, 0] "
                             "and likewise for y_points")
        object.__setattr__(self, "x_points", xp)
        object.__setattr__(self, "y_points", yp)
        object.__setattr__(self, "_x_coeffs", xp @ _BERNSTEIN_TO_POWER.T)
        object.__setattr__(self, "_y_coeffs", yp @ _BERNSTEIN_TO_POWER.T)
        # tabulated inverse u(x) over all segments: s = segment + u is increasing in x
        u = np.linspace(0.0, 1.0, _TABLE_SAMPLES)
        n = xp.shape[0]
        xs = np.stack([_horner(np.repeat(self._x_coeffs[i:i + 1], u.size, 0), u) for i in range(n)])
        object.__setattr__(self, "_table_x", xs.ravel())
        object.__setattr__(self, "_table_s", (np.arange(n)[:, None] + u[None, :]).ravel())
        object.__setattr__(self, "_packed", _kernels.pack_curve(self))  # the compiled evaluation's input

    # -- domain ---------------------------------------------------------------
    @property
    def domain(self) -> tuple[float, float]:
        """(x_start, x_end): the interval covered by the Bézier segments."""
        return float(self.x_points[0, 0]), float(self.x_points[-1, 5])

    @property
    def end_values(self) -> tuple[float, float]:
        """(y(x_start), y(x_end))."""
        return float(self.y_points[0, 0]), float(self.y_points[-1, 5])

    # -- evaluation -----------------------------------------------------------
    def parameter(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Segment index and Bézier parameter u with x(u) = x, for x inside the domain.

        Vectorized: a tabulated inverse (2048 samples per segment) and three
        Newton steps; points where that does not meet OpenSim's tolerance
        |x(u) − x| ≤ 100 ε take a safeguarded Newton iteration (bisection
        whenever a step leaves the bracket).
        """
        x = np.asarray(x, dtype=float).ravel()
        starts = self.x_points[:, 0]
        seg = np.clip(np.searchsorted(starts, x, side="right") - 1, 0, len(starts) - 1)
        cx = self._x_coeffs[seg]
        c0, c1, c2, c3, c4, c5 = cx.T
        d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
        # the fine table puts u within ~1e-7 of the root: two plain Newton steps reach round-off, a third
        # polishes it (x′ > 0 inside the segments); points where that fails take the safeguarded loop below
        u = np.clip(np.interp(x, self._table_x, self._table_s) - seg, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            for _ in range(3):  # points already within the tolerance stay put (x′ may vanish at the ends)
                f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
                u = np.where(np.abs(f) <= _U_TOLERANCE, u, u - f / (c1 + u * (d1 + u * (d2 + u * (d3 + u * d4)))))
        f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
        ok = (np.abs(f) <= _U_TOLERANCE) & (u >= 0.0) & (u <= 1.0)
        if ok.all():
            return seg, u
        bad = ~ok
        u_bad = self._parameter_safeguarded(x[bad], cx[bad])
        u = np.where(ok, u, 0.0)
        u[bad] = u_bad
        return seg, u

    def _parameter_safeguarded(self, x: np.ndarray, cx: np.ndarray) -> np.ndarray:
        """Bracketed Newton (bisection whenever a step leaves the bracket) for x(u) = x on [0, 1]."""
        c0, c1, c2, c3, c4, c5 = cx.T
        d1, d2, d3, d4 = 2.0 * c2, 3.0 * c3, 4.0 * c4, 5.0 * c5
        u = np.full_like(x, 0.5)
        lo = np.zeros_like(x)
        hi = np.ones_like(x)
        for _ in range(200):
            f = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5)))) - x
            done = np.abs(f) <= _U_TOLERANCE
            if done.all():
                break
            lo = np.where(f < 0, u, lo)
            hi = np.where(f > 0, u, hi)
            d = c1 + u * (d1 + u * (d2 + u * (d3 + u * d4)))
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = u - f / d
            bad = ~((newton > lo) & (newton < hi) & (d > 0))
            done |= (hi - lo) <= 4 * _EPS
            u = np.where(done, u, np.where(bad, 0.5 * (lo + hi), newton))
            if done.all():
                break
        return u

    def evaluate(self, x, *, order: int = 1) -> CurveValues:
        """Value and derivatives d/dx up to `order` (0, 1 or 2; higher entries are zero).

        Outside the domain the curve continues linearly (slope_start / slope_end)
        and the second derivative is zero.

        Runs as a compiled kernel (:func:`skfiber.hill.curve_kernels.evaluate_curve`)
        that repeats :meth:`_evaluate_numpy`, the definition, operation by
        operation: the numbers are the same bit for bit.
        """
        if order not in (0, 1, 2):
            raise ValueError(f"order={order!r} is not supported; pick one of 0, 1, 2")
        xa = np.asarray(x, dtype=float)
        shape = xa.shape
        xf = xa.ravel()
        if not xf.flags.writeable:  # one compiled specialization: writeable arrays
            xf = xf.copy()
        value, d1, num, den = _kernels.evaluate_curve(self._packed, xf, order)
        d2 = num / den**3 if order == 2 else num  # numpy's power, as in _evaluate_numpy
        return CurveValues(value.reshape(shape), d1.reshape(shape), d2.reshape(shape))

    def _evaluate_numpy(self, x, *, order: int = 1) -> CurveValues:
        """:meth:`evaluate` through numpy (the reference of the compiled kernel)."""
        if order not in (0, 1, 2):
            raise ValueError(f"order={order!r} is not supported; pick one of 0, 1, 2")
        xa = np.asarray(x, dtype=float)
        shape = xa.shape
        xf = xa.ravel()
        x0, x1 = self.domain
        y0, y1 = self.end_values
        value = np.where(xf < x0, y0 + self.slope_start * (xf - x0), y1 + self.slope_end * (xf - x1))
        d1 = np.where(xf < x0, self.slope_start, self.slope_end).astype(float)
        d2 = np.zeros_like(xf)
        inside = (xf >= x0) & (xf <= x1)
        if inside.any():
            seg, u = self.parameter(xf[inside])
            cx, cy = self._x_coeffs[seg], self._y_coeffs[seg]
            value[inside] = _horner(cy, u)
            if order >= 1:
                k1 = np.arange(1, 6)
                xu = _horner(cx[:, 1:] * k1, u)
                yu = _horner(cy[:, 1:] * k1, u)
                d1[inside] = yu / xu
                if order >= 2:
                    k2 = np.arange(2, 6) * np.arange(1, 5)
                    xuu = _horner(cx[:, 2:] * k2, u)
                    yuu = _horner(cy[:, 2:] * k2, u)
                    d2[inside] = (yuu * xu - yu * xuu) / xu**3
        if order < 2:
            d2[:] = 0.0
        if order < 1:
            d1[:] = 0.0
        return CurveValues(value.reshape(shape), d1.reshape(shape), d2.reshape(shape))

    def __call__(self, x) -> np.ndarray:
        """y(x)."""
        return self.evaluate(x, order=0).value

    def derivative(self, x, order: int = 1) -> np.ndarray:
        """d^order y / dx^order (order 1 or 2)."""
        if order not in (1, 2):
            raise ValueError(f"order={order!r} is not supported; pick 1 or 2")
        values = self.evaluate(x, order=order)
        return values.derivative if order == 1 else values.second_derivative


def _chain(corners: list[tuple[np.ndarray, np.ndarray]], slope_start: float, slope_end: float,
           *, swap: bool = False) -> SmoothSegmentedCurve:
    xs = np.stack([c[0] for c in corners])
    ys = np.stack([c[1] for c in corners])
    if swap:
        xs, ys = ys, xs
    return SmoothSegmentedCurve(xs, ys, slope_start, slope_end)


class _MuscleCurve:
    """Shared evaluation interface of the default curves (the Bézier chain is ``curve``)."""

    curve: SmoothSegmentedCurve

    def __call__(self, x) -> np.ndarray:
        """Curve value at x (any array shape)."""
        return self.curve(x)

    def derivative(self, x, order: int = 1) -> np.ndarray:
        """First (or, with ``order=2``, second) derivative at x."""
        return self.curve.derivative(x, order)

    def evaluate(self, x, *, order: int = 1) -> CurveValues:
        """Value and derivatives at x, sharing one parameter solve."""
        return self.curve.evaluate(x, order=order)

    @property
    def domain(self) -> tuple[float, float]:
        """Interval covered by Bézier segments (linear outside)."""
        return self.curve.domain


def _set_curve(obj, curve: SmoothSegmentedCurve) -> None:
    object.__setattr__(obj, "curve", curve)


# ---------------------------------------------------------------------------
# Active force–length
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ActiveForceLengthCurve(_MuscleCurve):
    """Active force–length multiplier f^L(l̃M) (normalized fiber length → [0, 1]).

    Five Bézier corners: ascending limb from `min_norm_active_fiber_length`,
    shallow ascending plateau (slope `shallow_ascending_slope`) from
    `transition_norm_fiber_length`, peak 1 at l̃M = 1, descending limb to
    `max_norm_active_fiber_length`; `minimum_value` outside.

    Parameters (OpenSim defaults)
    ----------
    min_norm_active_fiber_length : 0.47 − 0.0259; must be ≥ 0 and below the transition length.
    transition_norm_fiber_length : 0.73; in (min, 1).
    max_norm_active_fiber_length : 1.8123; > 1.
    shallow_ascending_slope : 0.8616; in [0, (1 − minimum_value)/(1 − transition)).
    minimum_value : 0.1; ≥ 0.  (OpenSim's damped and rigid-tendon muscles set it
        to 0, the undamped elastic-tendon one to at least 0.1.)
    curviness : 1.0 (OpenSim passes 1 and does not expose it); in [0, 1].

    Examples
    --------
    >>> fal = ActiveForceLengthCurve()
    >>> [round(float(v), 6) for v in fal([0.3, 1.0, 2.0])]
    [0.1, 1.0, 0.1]
    """

    min_norm_active_fiber_length: float = 0.47 - 0.0259
    transition_norm_fiber_length: float = 0.73
    max_norm_active_fiber_length: float = 1.8123
    shallow_ascending_slope: float = 0.8616
    minimum_value: float = 0.1
    curviness: float = 1.0
    curve: SmoothSegmentedCurve = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        x0, x1, x2, x3 = (self.min_norm_active_fiber_length, self.transition_norm_fiber_length, 1.0,
                          self.max_norm_active_fiber_length)
        ylow, dydx = self.minimum_value, self.shallow_ascending_slope
        _check_range("min_norm_active_fiber_length", x0, 0.0, x1 - _ROOT_EPS, high_open=True,
                     hint=" (0 <= min < transition < 1 < max)")
        _check_range("transition_norm_fiber_length", x1, x0 + _ROOT_EPS, x2 - _ROOT_EPS,
                     low_open=True, high_open=True, hint=" (min < transition < 1)")
        _check_range("max_norm_active_fiber_length", x3, x2 + _ROOT_EPS, math.inf, low_open=True,
                     hint=" (must exceed 1)")
        _check_range("minimum_value", ylow, 0.0, 1.0, high_open=True)
        _check_range("shallow_ascending_slope", dydx, 0.0, (1 - ylow) / (x2 - x1), high_open=True,
                     hint=" [0, (1 - minimum_value)/(1 - transition_norm_fiber_length))")
        _check_range("curviness", self.curviness, 0.0, 1.0)
        c = scale_curviness(self.curviness)
        x_delta = 0.05 * x2
        xs = x2 - x_delta
        y0, dydx0 = 0.0, 0.0
        y1 = 1 - dydx * (xs - x1)
        dydx01 = 1.25 * (y1 - y0) / (x1 - x0)
        x01, y01 = x0 + 0.5 * (x1 - x0), y0 + 0.5 * (y1 - y0)
        x1s, y1s = x1 + 0.5 * (xs - x1), y1 + 0.5 * (1 - y1)
        y2, dydx2, y3, dydx3 = 1.0, 0.0, 0.0, 0.0
        x23 = (x2 + x_delta) + 0.5 * (x3 - (x2 + x_delta))
        y23 = y2 + 0.5 * (y3 - y2)
        dydx23 = (y3 - y2) / ((x3 - x_delta) - (x2 + x_delta))
        corners = [
            corner_control_points(x0, ylow, dydx0, x01, y01, dydx01, c),
            corner_control_points(x01, y01, dydx01, x1s, y1s, dydx, c),
            corner_control_points(x1s, y1s, dydx, x2, y2, dydx2, c),
            corner_control_points(x2, y2, dydx2, x23, y23, dydx23, c),
            corner_control_points(x23, y23, dydx23, x3, ylow, dydx3, c),
        ]
        _set_curve(self, _chain(corners, 0.0, 0.0))


# ---------------------------------------------------------------------------
# Force–velocity and its inverse
# ---------------------------------------------------------------------------
def _force_velocity_corners(p) -> list[tuple[np.ndarray, np.ndarray]]:
    c_c = scale_curviness(p.concentric_curviness)
    c_e = scale_curviness(p.eccentric_curviness)
    fmax = p.max_eccentric_velocity_force_multiplier
    dc, dnc = p.concentric_slope_at_vmax, p.concentric_slope_near_vmax
    de, dne = p.eccentric_slope_at_vmax, p.eccentric_slope_near_vmax
    diso = p.isometric_slope
    xc, yc = -1.0, 0.0
    xnc = -0.9
    ync = yc + 0.5 * dnc * (xnc - xc) + 0.5 * dc * (xnc - xc)
    xiso, yiso = 0.0, 1.0
    xe, ye = 1.0, fmax
    xne = 0.9
    yne = ye + 0.5 * dne * (xne - xe) + 0.5 * de * (xne - xe)
    return [
        corner_control_points(xc, yc, dc, xnc, ync, dnc, c_c),
        corner_control_points(xnc, ync, dnc, xiso, yiso, diso, c_c),
        corner_control_points(xiso, yiso, diso, xne, yne, dne, c_e),
        corner_control_points(xne, yne, dne, xe, ye, de, c_e),
    ]


def _check_force_velocity(p, *, strict_end_slopes: bool) -> None:
    fmax = p.max_eccentric_velocity_force_multiplier
    _check_range("max_eccentric_velocity_force_multiplier", fmax, 1.0, math.inf, low_open=True)
    low = _SIGNIFICANT_REAL if strict_end_slopes else 0.0
    _check_range("concentric_slope_at_vmax", p.concentric_slope_at_vmax, low, 1.0,
                 low_open=strict_end_slopes, high_open=True,
                 hint=" (an inverse curve needs a positive end slope)" if strict_end_slopes else "")
    _check_range("concentric_slope_near_vmax", p.concentric_slope_near_vmax, p.concentric_slope_at_vmax,
                 1.0, low_open=True, high_open=strict_end_slopes,
                 hint=" (concentric_slope_at_vmax, 1)")
    _check_range("isometric_slope", p.isometric_slope, 1.0, math.inf, low_open=True)
    _check_range("eccentric_slope_at_vmax", p.eccentric_slope_at_vmax, low, fmax - 1, low_open=strict_end_slopes,
                 high_open=True, hint=" [0, max_eccentric_velocity_force_multiplier - 1)")
    _check_range("eccentric_slope_near_vmax", p.eccentric_slope_near_vmax, p.eccentric_slope_at_vmax,
                 fmax - 1, high_open=True,
                 hint=" [eccentric_slope_at_vmax, max_eccentric_velocity_force_multiplier - 1)")
    _check_range("concentric_curviness", p.concentric_curviness, 0.0, 1.0)
    _check_range("eccentric_curviness", p.eccentric_curviness, 0.0, 1.0)


@dataclass(frozen=True)
class ForceVelocityCurve(_MuscleCurve):
    """Force–velocity multiplier f^V(ṽM), ṽM = fiber velocity / (v_max l_o) ∈ [−1, 1].

    f^V(−1) = 0, f^V(0) = 1 with slope `isometric_slope`, f^V(1) =
    `max_eccentric_velocity_force_multiplier`; four Bézier corners (through
    ṽ = ∓0.9 where the slopes are the "near vmax" ones), linear outside [−1, 1].

    Parameters (OpenSim defaults)
    ----------
    concentric_slope_at_vmax : 0.0; in [0, 1).
    concentric_slope_near_vmax : 0.25; in (concentric_slope_at_vmax, 1].
    isometric_slope : 5.0; > 1.
    eccentric_slope_at_vmax : 0.0; in [0, fmax − 1).
    eccentric_slope_near_vmax : 0.15; in [eccentric_slope_at_vmax, fmax − 1).
    max_eccentric_velocity_force_multiplier : 1.4 (fmax); > 1.
    concentric_curviness : 0.6; in [0, 1].
    eccentric_curviness : 0.9; in [0, 1].

    Examples
    --------
    >>> fv = ForceVelocityCurve()
    >>> [round(float(v), 9) for v in fv([-1.0, 0.0, 1.0])]
    [0.0, 1.0, 1.4]
    """

    concentric_slope_at_vmax: float = 0.0
    concentric_slope_near_vmax: float = 0.25
    isometric_slope: float = 5.0
    eccentric_slope_at_vmax: float = 0.0
    eccentric_slope_near_vmax: float = 0.15
    max_eccentric_velocity_force_multiplier: float = 1.4
    concentric_curviness: float = 0.6
    eccentric_curviness: float = 0.9
    curve: SmoothSegmentedCurve = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _check_force_velocity(self, strict_end_slopes=False)
        _set_curve(self, _chain(_force_velocity_corners(self), self.concentric_slope_at_vmax,
                                self.eccentric_slope_at_vmax))


@dataclass(frozen=True)
class ForceVelocityInverseCurve(_MuscleCurve):
    """Inverse force–velocity curve ṽM = (f^V)⁻¹(f), built from the parameters of
    the force–velocity curve it inverts (same fields as :class:`ForceVelocityCurve`).

    The Bézier control points are those of the force–velocity curve with x and
    y swapped, so it is the exact inverse of ``ForceVelocityCurve`` with the same
    parameters, including the linear continuations (end slopes 1/slope).  The end
    slopes must therefore be positive; OpenSim's defaults here are 0.1.

    Examples
    --------
    >>> inv = ForceVelocityInverseCurve()
    >>> [round(float(v), 9) for v in inv([0.0, 1.0, 1.4])]
    [-1.0, 0.0, 1.0]
    """

    concentric_slope_at_vmax: float = 0.1
    concentric_slope_near_vmax: float = 0.25
    isometric_slope: float = 5.0
    eccentric_slope_at_vmax: float = 0.1
    eccentric_slope_near_vmax: float = 0.15
    max_eccentric_velocity_force_multiplier: float = 1.4
    concentric_curviness: float = 0.6
    eccentric_curviness: float = 0.9
    curve: SmoothSegmentedCurve = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _check_force_velocity(self, strict_end_slopes=True)
        _set_curve(self, _chain(_force_velocity_corners(self), 1.0 / self.concentric_slope_at_vmax,
                                1.0 / self.eccentric_slope_at_vmax, swap=True))

    @classmethod
    def of(cls, force_velocity: ForceVelocityCurve) -> "ForceVelocityInverseCurve":
        """The exact inverse of `force_velocity` (its end slopes must be positive)."""
        names = ("concentric_slope_at_vmax", "concentric_slope_near_vmax", "isometric_slope",
                 "eccentric_slope_at_vmax", "eccentric_slope_near_vmax",
                 "max_eccentric_velocity_force_multiplier", "concentric_curviness", "eccentric_curviness")
        return cls(**{n: getattr(force_velocity, n) for n in names})


# ---------------------------------------------------------------------------
# Passive fiber force–length
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FiberForceLengthCurve(_MuscleCurve):
    """Passive fiber force–length multiplier f^PE(l̃M).

    Zero up to l̃M = 1 + `strain_at_zero_force`, one at 1 + `strain_at_one_norm_force`
    with slope `stiffness_at_one_norm_force`, linear beyond; two Bézier corners.

    Parameters (OpenSim defaults)
    ----------
    strain_at_zero_force : 0.0.
    strain_at_one_norm_force : 0.7; > strain_at_zero_force.
    stiffness_at_low_force : None → 0.2; in (0, 1/(e1 − e0)).
    stiffness_at_one_norm_force : None → 2/(e1 − e0); > 1/(e1 − e0).
    curviness : None → 0.75; in [0, 1].

    ``None`` selects OpenSim's fitted value (each separately; OpenSim requires
    all three optional values or none).

    Examples
    --------
    >>> fpe = FiberForceLengthCurve()
    >>> [round(float(v), 9) for v in fpe([0.9, 1.0, 1.7])]
    [0.0, 0.0, 1.0]
    """

    strain_at_zero_force: float = 0.0
    strain_at_one_norm_force: float = 0.7
    stiffness_at_low_force: float | None = None
    stiffness_at_one_norm_force: float | None = None
    curviness: float | None = None
    curve: SmoothSegmentedCurve = field(init=False, repr=False, compare=False)

    @property
    def stiffness_at_low_force_in_use(self) -> float:
        """kLow actually used (0.2 by default)."""
        return 0.2 if self.stiffness_at_low_force is None else self.stiffness_at_low_force

    @property
    def stiffness_at_one_norm_force_in_use(self) -> float:
        """kIso actually used (2/(e1 − e0) by default)."""
        if self.stiffness_at_one_norm_force is None:
            return 2.0 / (self.strain_at_one_norm_force - self.strain_at_zero_force)
        return self.stiffness_at_one_norm_force

    @property
    def curviness_in_use(self) -> float:
        """Curviness actually used (0.75 by default)."""
        return 0.75 if self.curviness is None else self.curviness

    def __post_init__(self):
        e0, e1 = self.strain_at_zero_force, self.strain_at_one_norm_force
        _check_range("strain_at_one_norm_force", e1, e0, math.inf, low_open=True,
                     hint=" (must exceed strain_at_zero_force)")
        k_low = self.stiffness_at_low_force_in_use
        k_iso = self.stiffness_at_one_norm_force_in_use
        curv = self.curviness_in_use
        _check_range("stiffness_at_one_norm_force", k_iso, 1.0 / (e1 - e0), math.inf, low_open=True,
                     hint=" (1/(strain_at_one_norm_force - strain_at_zero_force), inf)")
        _check_range("stiffness_at_low_force", k_low, 0.0, 1.0 / (e1 - e0), low_open=True, high_open=True,
                     hint=" (0, 1/(strain_at_one_norm_force - strain_at_zero_force))")
        _check_range("curviness", curv, 0.0, 1.0)
        c = scale_curviness(curv)
        x_zero, y_zero = 1 + e0, 0.0
        x_iso, y_iso = 1 + e1, 1.0
        delta_x = min(0.1 * (1.0 / k_iso), 0.1 * (x_iso - x_zero))
        x_low = x_zero + delta_x
        x_foot = x_zero + 0.5 * (x_low - x_zero)
        y_low = 0.0 + k_low * (x_low - x_foot)
        corners = [
            corner_control_points(x_zero, y_zero, 0.0, x_low, y_low, k_low, c),
            corner_control_points(x_low, y_low, k_low, x_iso, y_iso, k_iso, c),
        ]
        _set_curve(self, _chain(corners, 0.0, k_iso))


# ---------------------------------------------------------------------------
# Tendon force–length
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TendonForceLengthCurve(_MuscleCurve):
    """Tendon force–length multiplier f^T(l̃T), l̃T = tendon length / slack length.

    Zero for l̃T ≤ 1, a toe region (two Bézier corners) up to the normalized force
    `norm_force_at_toe_end`, then linear with slope `stiffness_at_one_norm_force`
    through f^T(1 + `strain_at_one_norm_force`) = 1.

    Parameters (OpenSim defaults)
    ----------
    strain_at_one_norm_force : 0.049; > 0.
    stiffness_at_one_norm_force : None → 1.375/strain; > 1/strain.
    norm_force_at_toe_end : None → 2/3; in (0, 1).
    curviness : None → 0.5; in [0, 1].

    Examples
    --------
    >>> ft = TendonForceLengthCurve()
    >>> [round(float(v), 9) for v in ft([0.99, 1.0, 1.049])]
    [0.0, 0.0, 1.0]
    """

    strain_at_one_norm_force: float = 0.049
    stiffness_at_one_norm_force: float | None = None
    norm_force_at_toe_end: float | None = None
    curviness: float | None = None
    curve: SmoothSegmentedCurve = field(init=False, repr=False, compare=False)

    @property
    def stiffness_at_one_norm_force_in_use(self) -> float:
        """kIso actually used (1.375/strain by default)."""
        if self.stiffness_at_one_norm_force is None:
            return 1.375 / self.strain_at_one_norm_force
        return self.stiffness_at_one_norm_force

    @property
    def norm_force_at_toe_end_in_use(self) -> float:
        """Normalized force at the end of the toe region actually used (2/3 by default)."""
        return 2.0 / 3.0 if self.norm_force_at_toe_end is None else self.norm_force_at_toe_end

    @property
    def curviness_in_use(self) -> float:
        """Curviness actually used (0.5 by default)."""
        return 0.5 if self.curviness is None else self.curviness

    def __post_init__(self):
        e_iso = self.strain_at_one_norm_force
        _check_range("strain_at_one_norm_force", e_iso, 0.0, math.inf, low_open=True)
        k_iso = self.stiffness_at_one_norm_force_in_use
        f_toe = self.norm_force_at_toe_end_in_use
        curv = self.curviness_in_use
        _check_range("stiffness_at_one_norm_force", k_iso, 1.0 / e_iso, math.inf, low_open=True,
                     hint=" (1/strain_at_one_norm_force, inf)")
        _check_range("norm_force_at_toe_end", f_toe, 0.0, 1.0, low_open=True, high_open=True)
        _check_range("curviness", curv, 0.0, 1.0)
        c = scale_curviness(curv)
        x0, y0, dydx0 = 1.0, 0.0, 0.0
        x_iso, y_iso = 1.0 + e_iso, 1.0
        y_toe = f_toe
        x_toe = (y_toe - 1) / k_iso + x_iso
        x_foot, y_foot = 1.0 + (x_toe - 1.0) / 10.0, 0.0
        y_toe_mid = 0.5 * y_toe
        x_toe_mid = (y_toe_mid - y_iso) / k_iso + x_iso
        dydx_toe_mid = (y_toe_mid - y_foot) / (x_toe_mid - x_foot)
        x_toe_ctrl = x_foot + 0.5 * (x_toe_mid - x_foot)
        y_toe_ctrl = y_foot + dydx_toe_mid * (x_toe_ctrl - x_foot)
        corners = [
            corner_control_points(x0, y0, dydx0, x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, c),
            corner_control_points(x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, x_toe, y_toe, k_iso, c),
        ]
        _set_curve(self, _chain(corners, dydx0, k_iso))
