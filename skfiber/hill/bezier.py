"""Smooth segmented quintic Bézier curves (OpenSim's ``SmoothSegmentedFunction``).

A curve is a chain of quintic Bézier segments ``(x(u), y(u))``, u ∈ [0, 1],
each built from two points, the slopes there and a *curviness* (OpenSim's
``SegmentedQuinticBezierToolkit::calcQuinticBezierCornerControlPoints``,
:func:`corner_control_points`); it is C2 inside and continued linearly outside
its domain.  Evaluating y at a given x first finds the parameter u with
x(u) = x: Newton's method on a bracket [0, 1] with a bisection safeguard (x(u)
is increasing on each segment), started from a tabulated u(x).  The tolerance
on ‖x(u) − x‖ is OpenSim's (100 machine epsilons).  The evaluation runs as a
compiled kernel (:mod:`skfiber.hill.curve_kernels`) on the curve's
:class:`~skfiber.hill.curve_tables.CurveTables`.

Examples
--------
>>> xp, yp = corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 0.5)
>>> curve = SmoothSegmentedCurve(xp[None], yp[None], slope_start=0.0, slope_end=2.0)
>>> curve([-1.0, 0.0, 1.0, 2.0]).tolist()
[0.0, 0.0, 1.0, 3.0]
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .checks import ROOT_EPS, check_range
from .curve_kernels import curve_parameter, evaluate_curve, pack_curve
from .curve_tables import CurveTables

__all__ = ["CurveValues", "SmoothSegmentedCurve", "corner_control_points", "scale_curviness"]


def scale_curviness(curviness: float) -> float:
    """Map a user curviness c ∈ [0, 1] to the Bézier one, 0.1 + 0.8 c (OpenSim)."""
    return 0.1 + 0.8 * curviness


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
    check_range("curviness", curviness, 0.0, 1.0)
    if abs(dydx0 - dydx1) > ROOT_EPS:
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


def _writeable_flat(x) -> np.ndarray:
    """x as a writeable 1-D float array (one compiled specialization: writeable arrays)."""
    xf = np.asarray(x, dtype=float).ravel()
    return xf if xf.flags.writeable else xf.copy()


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

    Attributes
    ----------
    tables : :class:`~skfiber.hill.curve_tables.CurveTables`, the coefficients
        and inverse table the evaluation reads.
    packed : the tables as one array, the compiled kernels' input
        (:func:`skfiber.hill.curve_kernels.pack_curve`).

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
    tables: CurveTables = field(init=False, repr=False)
    packed: np.ndarray = field(init=False, repr=False)

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
        tables = CurveTables.of(xp, yp, self.slope_start, self.slope_end)
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "packed", pack_curve(tables))

    @classmethod
    def from_corners(cls, corners: list[tuple[np.ndarray, np.ndarray]], slope_start: float, slope_end: float,
                     *, swap: bool = False) -> "SmoothSegmentedCurve":
        """The chain of :func:`corner_control_points` segments `corners` (x and y swapped with ``swap``)."""
        xs = np.stack([c[0] for c in corners])
        ys = np.stack([c[1] for c in corners])
        if swap:
            xs, ys = ys, xs
        return cls(xs, ys, slope_start, slope_end)

    # -- domain ---------------------------------------------------------------
    @property
    def domain(self) -> tuple[float, float]:
        """(x_start, x_end): the interval covered by the Bézier segments."""
        return self.tables.domain

    @property
    def end_values(self) -> tuple[float, float]:
        """(y(x_start), y(x_end))."""
        return self.tables.end_values

    # -- evaluation -----------------------------------------------------------
    def parameter(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Segment index and Bézier parameter u with x(u) = x (flattened), for x inside the domain.

        A tabulated inverse (2048 samples per segment) and three Newton steps;
        points where that does not meet OpenSim's tolerance ‖x(u) − x‖ ≤ 100 ε
        take a safeguarded Newton iteration (bisection whenever a step leaves
        the bracket).  Runs as the compiled kernel
        :func:`skfiber.hill.curve_kernels.curve_parameter`.
        """
        return curve_parameter(self.packed, _writeable_flat(x))

    def evaluate(self, x, *, order: int = 1) -> CurveValues:
        """Value and derivatives d/dx up to `order` (0, 1 or 2; higher entries are zero).

        Outside the domain the curve continues linearly (slope_start / slope_end)
        and the second derivative is zero.  Runs as the compiled kernel
        :func:`skfiber.hill.curve_kernels.evaluate_curve`.
        """
        if order not in (0, 1, 2):
            raise ValueError(f"order={order!r} is not supported; pick one of 0, 1, 2")
        xa = np.asarray(x, dtype=float)
        shape = xa.shape
        value, d1, num, den = evaluate_curve(self.packed, _writeable_flat(xa), order)
        d2 = num / den**3 if order == 2 else num  # numpy's power (the last bit differs from libm's pow)
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
