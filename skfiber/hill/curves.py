"""The five default muscle curves of Millard et al. (2013), as in OpenSim's
``Millard2012EquilibriumMuscle``: active force–length, force–velocity and its
inverse, passive fiber force–length and tendon force–length.

Each is a :class:`~skfiber.hill.bezier.SmoothSegmentedCurve` (``curve``) built
from a few Bézier corners (:func:`~skfiber.hill.bezier.corner_control_points`)
whose construction parameters and defaults are those of OpenSim 4.6
(``ActiveForceLengthCurve``, ``ForceVelocityCurve``,
``ForceVelocityInverseCurve``, ``FiberForceLengthCurve``,
``TendonForceLengthCurve`` and ``SmoothSegmentedFunctionFactory``).  The curve
machinery lives in :mod:`skfiber.hill.bezier`; its public names are importable
from here too.

Examples
--------
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

from .bezier import CurveValues, SmoothSegmentedCurve, corner_control_points, scale_curviness
from .checks import ROOT_EPS, SIGNIFICANT_REAL, check_range

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

    The defaults are OpenSim's.

    Parameters
    ----------
    min_norm_active_fiber_length : 0.47 − 0.0259; must be ≥ 0 and below the transition length.
    transition_norm_fiber_length : 0.73; in (min, 1).
    max_norm_active_fiber_length : 1.8123; > 1.
    shallow_ascending_slope : 0.8616; in [0, (1 − minimum_value)/(1 − transition)).
    minimum_value : 0.1; ≥ 0.
        OpenSim's damped and rigid-tendon muscles set it to 0, the undamped
        elastic-tendon one to at least 0.1.
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
        check_range("min_norm_active_fiber_length", x0, 0.0, x1 - ROOT_EPS, high_open=True,
                     hint=" (0 <= min < transition < 1 < max)")
        check_range("transition_norm_fiber_length", x1, x0 + ROOT_EPS, x2 - ROOT_EPS,
                     low_open=True, high_open=True, hint=" (min < transition < 1)")
        check_range("max_norm_active_fiber_length", x3, x2 + ROOT_EPS, math.inf, low_open=True,
                     hint=" (must exceed 1)")
        check_range("minimum_value", ylow, 0.0, 1.0, high_open=True)
        check_range("shallow_ascending_slope", dydx, 0.0, (1 - ylow) / (x2 - x1), high_open=True,
                     hint=" [0, (1 - minimum_value)/(1 - transition_norm_fiber_length))")
        check_range("curviness", self.curviness, 0.0, 1.0)
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
        _set_curve(self, SmoothSegmentedCurve.from_corners(corners, 0.0, 0.0))


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
    check_range("max_eccentric_velocity_force_multiplier", fmax, 1.0, math.inf, low_open=True)
    low = SIGNIFICANT_REAL if strict_end_slopes else 0.0
    check_range("concentric_slope_at_vmax", p.concentric_slope_at_vmax, low, 1.0,
                 low_open=strict_end_slopes, high_open=True,
                 hint=" (an inverse curve needs a positive end slope)" if strict_end_slopes else "")
    check_range("concentric_slope_near_vmax", p.concentric_slope_near_vmax, p.concentric_slope_at_vmax,
                 1.0, low_open=True, high_open=strict_end_slopes,
                 hint=" (concentric_slope_at_vmax, 1)")
    check_range("isometric_slope", p.isometric_slope, 1.0, math.inf, low_open=True)
    check_range("eccentric_slope_at_vmax", p.eccentric_slope_at_vmax, low, fmax - 1, low_open=strict_end_slopes,
                 high_open=True, hint=" [0, max_eccentric_velocity_force_multiplier - 1)")
    check_range("eccentric_slope_near_vmax", p.eccentric_slope_near_vmax, p.eccentric_slope_at_vmax,
                 fmax - 1, high_open=True,
                 hint=" [eccentric_slope_at_vmax, max_eccentric_velocity_force_multiplier - 1)")
    check_range("concentric_curviness", p.concentric_curviness, 0.0, 1.0)
    check_range("eccentric_curviness", p.eccentric_curviness, 0.0, 1.0)


@dataclass(frozen=True)
class ForceVelocityCurve(_MuscleCurve):
    """Force–velocity multiplier f^V(ṽM), ṽM = fiber velocity / (v_max l_o) ∈ [−1, 1].

    f^V(−1) = 0, f^V(0) = 1 with slope `isometric_slope`, f^V(1) =
    `max_eccentric_velocity_force_multiplier`; four Bézier corners (through
    ṽ = ∓0.9 where the slopes are the "near vmax" ones), linear outside [−1, 1].

    The defaults are OpenSim's.

    Parameters
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
        _set_curve(self, SmoothSegmentedCurve.from_corners(
            _force_velocity_corners(self), self.concentric_slope_at_vmax, self.eccentric_slope_at_vmax))


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
        _set_curve(self, SmoothSegmentedCurve.from_corners(
            _force_velocity_corners(self), 1.0 / self.concentric_slope_at_vmax, 1.0 / self.eccentric_slope_at_vmax,
            swap=True))

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

    The defaults are OpenSim's.

    Parameters
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
        check_range("strain_at_one_norm_force", e1, e0, math.inf, low_open=True,
                     hint=" (must exceed strain_at_zero_force)")
        k_low = self.stiffness_at_low_force_in_use
        k_iso = self.stiffness_at_one_norm_force_in_use
        curv = self.curviness_in_use
        check_range("stiffness_at_one_norm_force", k_iso, 1.0 / (e1 - e0), math.inf, low_open=True,
                     hint=" (1/(strain_at_one_norm_force - strain_at_zero_force), inf)")
        check_range("stiffness_at_low_force", k_low, 0.0, 1.0 / (e1 - e0), low_open=True, high_open=True,
                     hint=" (0, 1/(strain_at_one_norm_force - strain_at_zero_force))")
        check_range("curviness", curv, 0.0, 1.0)
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
        _set_curve(self, SmoothSegmentedCurve.from_corners(corners, 0.0, k_iso))


# ---------------------------------------------------------------------------
# Tendon force–length
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TendonForceLengthCurve(_MuscleCurve):
    """Tendon force–length multiplier f^T(l̃T), l̃T = tendon length / slack length.

    Zero for l̃T ≤ 1, a toe region (two Bézier corners) up to the normalized force
    `norm_force_at_toe_end`, then linear with slope `stiffness_at_one_norm_force`
    through f^T(1 + `strain_at_one_norm_force`) = 1.

    The defaults are OpenSim's.

    Parameters
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
        check_range("strain_at_one_norm_force", e_iso, 0.0, math.inf, low_open=True)
        k_iso = self.stiffness_at_one_norm_force_in_use
        f_toe = self.norm_force_at_toe_end_in_use
        curv = self.curviness_in_use
        check_range("stiffness_at_one_norm_force", k_iso, 1.0 / e_iso, math.inf, low_open=True,
                     hint=" (1/strain_at_one_norm_force, inf)")
        check_range("norm_force_at_toe_end", f_toe, 0.0, 1.0, low_open=True, high_open=True)
        check_range("curviness", curv, 0.0, 1.0)
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
        _set_curve(self, SmoothSegmentedCurve.from_corners(corners, dydx0, k_iso))
