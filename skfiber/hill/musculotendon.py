"""Hill-type musculotendon models of Millard et al. (2013) (OpenSim's
``Millard2012EquilibriumMuscle``), vectorized over any number of muscles or
time points.

Three formulations (``Millard2012Muscle(formulation=...)``):

``"equilibrium"``
    Elastic tendon, no damping: the fiber velocity follows from the force
    equilibrium eq. (1) solved for it, eq. (2): ṽM = (f^V)⁻¹((f^T/cos α − f^PE)/(a f^L)).
    The four singularities of eq. (2) are kept away as the paper describes:
    a ≥ ``minimum_activation`` > 0, f^L ≥ its ``minimum_value`` > 0 (0.1 by
    default), α ≤ ``maximum_pennation_angle`` < 90° and f^V with positive end
    slopes (so (f^V)⁻¹ is finite everywhere).
``"damped"`` (default, as in OpenSim)
    Elastic tendon with a damper β in parallel, eq. (3), solved for ṽM by
    Newton's method; free of singularities for a ≥ 0 as long as α < 90°.
``"rigid"``
    Inextensible tendon, eqs. (4)–(7): fiber length and velocity follow from the
    musculotendon length and velocity; force f^M* = f_o(a f^L f^V + f^PE + βṽ) cos α,
    kept ≥ 0 (tension only).

State variables: the elastic-tendon formulations have two, the activation a
(dimensionless, in [``minimum_activation``, 1]) and the fiber length l^M (m);
d l^M/dt is :attr:`MusculotendonResponse.fiber_velocity` and da/dt is
:meth:`Millard2012Muscle.activation_rate` (first-order activation dynamics).
The rigid-tendon formulation has only the activation.  The inputs of every
call are the musculotendon (path) length l^MT and lengthening speed v^MT.

All fiber lengths are kept above the minimum fiber length (the larger of the
length where the fixed-height parallelogram reaches the maximum pennation angle
and the shortest length of the active force–length curve), and a fiber at its
minimum length may not shorten (the paper's unilateral constraint).

Example
-------
>>> from skfiber.hill import Millard2012Muscle, MuscleParameters
>>> muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=1000.0,
...     optimal_fiber_length=0.1, tendon_slack_length=0.2, pennation_angle_at_optimal=0.2))
>>> rest = muscle.static_equilibrium(activation=0.5, musculotendon_length=0.3)
>>> bool(abs(rest.fiber_velocity) < 1e-9), bool(abs(rest.equilibrium_residual) < 1e-6)
(True, True)
>>> round(float(rest.tendon_force), 3) == round(float(rest.fiber_force_along_tendon), 3)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from . import curve_kernels as _kernels
from .curves import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    TendonForceLengthCurve,
)

__all__ = [
    "Formulation",
    "FORMULATIONS",
    "MuscleParameters",
    "FixedHeightPennation",
    "FirstOrderActivation",
    "MuscleCurves",
    "MusculotendonResponse",
    "Millard2012Muscle",
]

Formulation = Literal["damped", "equilibrium", "rigid"]
FORMULATIONS: tuple[str, ...] = ("damped", "equilibrium", "rigid")
_SIGNIFICANT_REAL = 2.0**-40  # SimTK::SignificantReal


def _flat(values, shape: tuple[int, ...]) -> np.ndarray:
    """`values` broadcast to `shape` as a writeable 1-D float array (what the compiled kernels take)."""
    v = np.asarray(values, dtype=float)
    if v.shape != shape:
        v = np.broadcast_to(v, shape)
    v = v.ravel()
    return v if v.flags.writeable else v.copy()


def _positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} must be a positive finite number")


@dataclass(frozen=True)
class MuscleParameters:
    """Parameters of one musculotendon actuator (OpenSim's defaults).

    Attributes
    ----------
    max_isometric_force : f_o^M (N), 1000.
    optimal_fiber_length : l_o^M (m), 0.1.
    tendon_slack_length : l_s^T (m), 0.2.
    pennation_angle_at_optimal : α_o (rad) in [0, π/2), 0.
    max_contraction_velocity : v_max^M in optimal fiber lengths per second, 10.
    fiber_damping : β (normalized: force / f_o per unit ṽM), 0.1; used by the
        damped and rigid-tendon formulations, ignored by ``"equilibrium"``.
    maximum_pennation_angle : α_max (rad) in [α_o, π/2], acos(0.1) ≈ 84.3°.
    minimum_activation : a_min in [0, 1), 0.01; activations are clamped to [a_min, 1].
    """

    max_isometric_force: float = 1000.0
    optimal_fiber_length: float = 0.1
    tendon_slack_length: float = 0.2
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    fiber_damping: float = 0.1
    maximum_pennation_angle: float = math.acos(0.1)
    minimum_activation: float = 0.01

    def __post_init__(self):
        _positive("max_isometric_force", self.max_isometric_force)
        _positive("optimal_fiber_length", self.optimal_fiber_length)
        _positive("tendon_slack_length", self.tendon_slack_length)
        _positive("max_contraction_velocity", self.max_contraction_velocity)
        if not (0.0 <= self.pennation_angle_at_optimal < math.pi / 2):
            raise ValueError(f"pennation_angle_at_optimal={self.pennation_angle_at_optimal!r} rad "
                             "is outside the allowed range [0, pi/2)")
        if not (self.pennation_angle_at_optimal <= self.maximum_pennation_angle <= math.pi / 2):
            raise ValueError(f"maximum_pennation_angle={self.maximum_pennation_angle!r} rad is outside "
                             f"the allowed range [pennation_angle_at_optimal, pi/2] = "
                             f"[{self.pennation_angle_at_optimal!r}, {math.pi / 2!r}]")
        if not (math.isfinite(self.fiber_damping) and self.fiber_damping >= 0):
            raise ValueError(f"fiber_damping={self.fiber_damping!r} must be >= 0")
        if not (0.0 <= self.minimum_activation < 1.0):
            raise ValueError(f"minimum_activation={self.minimum_activation!r} is outside the allowed "
                             "range [0, 1)")

    @property
    def max_fiber_velocity(self) -> float:
        """v_max^M l_o^M (m/s): the velocity normalizing ṽM."""
        return self.max_contraction_velocity * self.optimal_fiber_length


@dataclass(frozen=True)
class FixedHeightPennation:
    """Fixed-height parallelogram pennation model, eq. (6): l^M sin α = h = l_o^M sin α_o.

    The angle is capped at `maximum_pennation_angle`, which sets the minimum
    fiber length h / sin α_max (1 % of l_o^M for unpennated muscles, as in
    OpenSim's ``MuscleFixedWidthPennationModel``).

    Examples
    --------
    >>> pen = FixedHeightPennation(0.1, pennation_angle_at_optimal=math.pi / 6)
    >>> round(float(pen.pennation_angle(0.1)), 12) == round(math.pi / 6, 12)
    True
    >>> round(float(pen.fiber_length(0.3, 0.2)), 12)   # √(h² + (l^MT − l^T)²)
    0.111803398875
    """

    optimal_fiber_length: float
    pennation_angle_at_optimal: float = 0.0
    maximum_pennation_angle: float = math.acos(0.1)

    def __post_init__(self):
        _positive("optimal_fiber_length", self.optimal_fiber_length)
        if not (0.0 <= self.pennation_angle_at_optimal < math.pi / 2):
            raise ValueError(f"pennation_angle_at_optimal={self.pennation_angle_at_optimal!r} rad "
                             "is outside the allowed range [0, pi/2)")
        if not (0.0 <= self.maximum_pennation_angle <= math.pi / 2):
            raise ValueError(f"maximum_pennation_angle={self.maximum_pennation_angle!r} rad is outside "
                             "the allowed range [0, pi/2]")

    @property
    def height(self) -> float:
        """Parallelogram height h = l_o^M sin α_o (m)."""
        return self.optimal_fiber_length * math.sin(self.pennation_angle_at_optimal)

    @property
    def minimum_fiber_length(self) -> float:
        """Fiber length at the maximum pennation angle (m)."""
        if self.maximum_pennation_angle > _SIGNIFICANT_REAL:
            return self.height / math.sin(self.maximum_pennation_angle)
        return 0.01 * self.optimal_fiber_length

    @property
    def _pennated(self) -> bool:
        return self.pennation_angle_at_optimal > np.finfo(float).eps

    def pennation_angle(self, fiber_length) -> np.ndarray:
        """α(l^M) = asin(h / l^M), capped at the maximum pennation angle (rad)."""
        lce = np.asarray(fiber_length, dtype=float)
        if not self._pennated:
            return np.zeros_like(lce)
        with np.errstate(divide="ignore", invalid="ignore"):
            sin_phi = self.height / lce
            phi = np.arcsin(np.clip(sin_phi, 0.0, 1.0))
        capped = (lce <= self.minimum_fiber_length) | (sin_phi >= math.sin(self.maximum_pennation_angle))
        return np.where(capped, self.maximum_pennation_angle, phi)

    def d_pennation_angle_d_fiber_length(self, fiber_length) -> np.ndarray:
        """dα/dl^M = −tan α / l^M (zero where the angle is capped)."""
        lce = np.asarray(fiber_length, dtype=float)
        phi = self.pennation_angle(lce)
        capped = phi >= self.maximum_pennation_angle
        with np.errstate(divide="ignore", invalid="ignore"):
            d = -np.tan(phi) / lce
        return np.where(capped | ~self._pennated, 0.0, d)

    def fiber_length(self, musculotendon_length, tendon_length) -> np.ndarray:
        """l^M from eqs. (4) and (6): √(h² + (l^MT − l^T)²), at least the minimum length."""
        l_at = np.asarray(musculotendon_length, dtype=float) - np.asarray(tendon_length, dtype=float)
        l_min = self.minimum_fiber_length
        l_min_at = l_min * math.cos(self.maximum_pennation_angle)
        return np.where(l_at >= l_min_at, np.sqrt(self.height**2 + np.maximum(l_at, 0.0) ** 2), l_min)

    def tendon_length(self, musculotendon_length, fiber_length) -> np.ndarray:
        """l^T = l^MT − l^M cos α, eq. (4)."""
        lce = np.asarray(fiber_length, dtype=float)
        return np.asarray(musculotendon_length, dtype=float) - lce * np.cos(self.pennation_angle(lce))

    def pennation_angular_velocity(self, fiber_length, fiber_velocity) -> np.ndarray:
        """α̇ = −v^M sin α / (l^M cos α), eq. (7)."""
        lce = np.asarray(fiber_length, dtype=float)
        return -np.asarray(fiber_velocity, dtype=float) * np.tan(self.pennation_angle(lce)) / lce

    def fiber_velocity(self, fiber_length, musculotendon_velocity, tendon_velocity=0.0) -> np.ndarray:
        """v^M from eqs. (5) and (7): (v^MT − v^T) cos α."""
        phi = self.pennation_angle(fiber_length)
        return (np.asarray(musculotendon_velocity, dtype=float) - tendon_velocity) * np.cos(phi)


@dataclass(frozen=True)
class FirstOrderActivation:
    """First-order activation dynamics (OpenSim's ``MuscleFirstOrderActivationDynamicModel``).

    da/dt = (u − a)/τ with τ = τ_act (0.5 + 1.5 a) when u > a and
    τ_deact / (0.5 + 1.5 a) otherwise, a clamped to [a_min, 1].

    Examples
    --------
    >>> act = FirstOrderActivation()
    >>> round(float(act.derivative(0.5, 1.0)), 6)   # (1 - 0.5) / (0.01 * 1.25)
    40.0
    """

    activation_time_constant: float = 0.010
    deactivation_time_constant: float = 0.040

    def __post_init__(self):
        _positive("activation_time_constant", self.activation_time_constant)
        _positive("deactivation_time_constant", self.deactivation_time_constant)

    def derivative(self, activation, excitation, *, minimum_activation: float = 0.01) -> np.ndarray:
        """da/dt for activation a and excitation u (arrays broadcast)."""
        a = np.clip(np.asarray(activation, dtype=float), minimum_activation, 1.0)
        u = np.asarray(excitation, dtype=float)
        tau = np.where(u > a, self.activation_time_constant * (0.5 + 1.5 * a),
                       self.deactivation_time_constant / (0.5 + 1.5 * a))
        return (u - a) / tau


@dataclass(frozen=True)
class MuscleCurves:
    """The five force curves of one muscle."""

    active_force_length: ActiveForceLengthCurve = field(default_factory=ActiveForceLengthCurve)
    force_velocity: ForceVelocityCurve = field(default_factory=ForceVelocityCurve)
    force_velocity_inverse: ForceVelocityInverseCurve = field(default_factory=ForceVelocityInverseCurve)
    fiber_force_length: FiberForceLengthCurve = field(default_factory=FiberForceLengthCurve)
    tendon_force_length: TendonForceLengthCurve = field(default_factory=TendonForceLengthCurve)

    @classmethod
    def for_formulation(cls, formulation: str, *, curves: "MuscleCurves | None" = None) -> "MuscleCurves":
        """The curves OpenSim's ``Millard2012EquilibriumMuscle`` uses for a formulation.

        Starting from `curves` (default: all OpenSim defaults), as OpenSim does:

        * ``"equilibrium"``: f^L minimum value raised to ≥ 0.1; f^V end slopes
          raised to ≥ half the "near vmax" slopes; the inverse is the exact inverse
          of that f^V.
        * ``"damped"``, ``"rigid"``: f^L minimum value 0; f^V end slopes 0; the
          inverse (only the Newton start of the damped model) uses end slopes of
          half the "near vmax" slopes.
        """
        if formulation not in FORMULATIONS:
            raise ValueError(f"formulation={formulation!r} is unknown; pick one of {', '.join(FORMULATIONS)}")
        base = curves if curves is not None else cls()
        fal, fv = base.active_force_length, base.force_velocity
        if formulation == "equilibrium":
            fal = replace(fal, minimum_value=max(fal.minimum_value, 0.1))
            fv = replace(fv,
                         concentric_slope_at_vmax=max(fv.concentric_slope_at_vmax, 0.5 * fv.concentric_slope_near_vmax),
                         eccentric_slope_at_vmax=max(fv.eccentric_slope_at_vmax, 0.5 * fv.eccentric_slope_near_vmax))
            inverse = ForceVelocityInverseCurve.of(fv)
        else:
            fal = replace(fal, minimum_value=0.0)
            fv = replace(fv, concentric_slope_at_vmax=0.0, eccentric_slope_at_vmax=0.0)
            inverse = ForceVelocityInverseCurve.of(
                replace(fv, concentric_slope_at_vmax=0.5 * fv.concentric_slope_near_vmax,
                        eccentric_slope_at_vmax=0.5 * fv.eccentric_slope_near_vmax))
        return cls(fal, fv, inverse, base.fiber_force_length, base.tendon_force_length)


@dataclass(frozen=True)
class MusculotendonResponse:
    """Everything one evaluation of a musculotendon model yields (arrays, broadcast shape).

    Lengths in m, velocities in m/s, angles in rad, forces in N; the ``d_*`` entries
    are partial derivatives for a consistent tangent.  For the elastic-tendon
    formulations the tendon force depends on (l^MT, a, l^M) but not on velocity;
    for the rigid tendon it depends on (l^MT, v^MT, a) and the fiber-length and
    fiber-velocity derivatives are zero.

    Attributes
    ----------
    activation : a, clamped to [a_min, 1].
    fiber_length, normalized_fiber_length : l^M (clamped to the minimum), l̃M.
    pennation_angle : α.
    tendon_length, normalized_tendon_length : l^T, l̃T.
    fiber_velocity, normalized_fiber_velocity : v^M = d l^M/dt, ṽM.
    pennation_angular_velocity, tendon_velocity : α̇ (eq. 7), v^T (eq. 5).
    active_force_length_multiplier, force_velocity_multiplier,
    passive_force_multiplier, tendon_force_multiplier : f^L, f^V, f^PE, f^T.
    active_fiber_force, passive_fiber_force, damping_force, fiber_force :
        f_o a f^L f^V, f_o f^PE, f_o β ṽM and their sum f^M.
    fiber_force_along_tendon : f^M cos α.
    tendon_force : the force the actuator transmits (≥ 0).
    equilibrium_residual : fiber_force_along_tendon − tendon_force (eqs. 1/3;
        ≈ 0 except where the fiber is clamped).
    clamped : fiber at its minimum length and not lengthening (the unilateral
        constraint carries the force difference).
    d_tendon_force_d_musculotendon_length, d_tendon_force_d_musculotendon_velocity,
    d_tendon_force_d_activation, d_tendon_force_d_fiber_length : tangent.
    d_fiber_velocity_d_musculotendon_length, d_fiber_velocity_d_activation,
    d_fiber_velocity_d_fiber_length : derivatives of the fiber-length state
        derivative (elastic tendon; zero when clamped and for the rigid tendon).
    """

    activation: np.ndarray
    fiber_length: np.ndarray
    normalized_fiber_length: np.ndarray
    pennation_angle: np.ndarray
    tendon_length: np.ndarray
    normalized_tendon_length: np.ndarray
    fiber_velocity: np.ndarray
    normalized_fiber_velocity: np.ndarray
    pennation_angular_velocity: np.ndarray
    tendon_velocity: np.ndarray
    active_force_length_multiplier: np.ndarray
    force_velocity_multiplier: np.ndarray
    passive_force_multiplier: np.ndarray
    tendon_force_multiplier: np.ndarray
    active_fiber_force: np.ndarray
    passive_fiber_force: np.ndarray
    damping_force: np.ndarray
    fiber_force: np.ndarray
    fiber_force_along_tendon: np.ndarray
    tendon_force: np.ndarray
    equilibrium_residual: np.ndarray
    clamped: np.ndarray
    d_tendon_force_d_musculotendon_length: np.ndarray
    d_tendon_force_d_musculotendon_velocity: np.ndarray
    d_tendon_force_d_activation: np.ndarray
    d_tendon_force_d_fiber_length: np.ndarray
    d_fiber_velocity_d_musculotendon_length: np.ndarray
    d_fiber_velocity_d_activation: np.ndarray
    d_fiber_velocity_d_fiber_length: np.ndarray


@dataclass(frozen=True)
class Millard2012Muscle:
    """A Millard (2013) musculotendon actuator.

    Parameters
    ----------
    parameters : :class:`MuscleParameters`.
    formulation : ``"damped"`` (eq. 3, default), ``"equilibrium"`` (eqs. 1–2) or
        ``"rigid"`` (eqs. 4–7).
    curves : the five curves; default :meth:`MuscleCurves.for_formulation`.  Given
        curves are used as they are (checked for the equilibrium formulation).
    activation_dynamics : :class:`FirstOrderActivation` for :meth:`activation_rate`.

    Examples
    --------
    >>> m = Millard2012Muscle(formulation="rigid")
    >>> r = m.evaluate(activation=1.0, musculotendon_length=0.3)   # fiber at l_o, v = 0
    >>> round(float(r.tendon_force), 6)
    1000.0
    """

    parameters: MuscleParameters = field(default_factory=MuscleParameters)
    formulation: Formulation = "damped"
    curves: MuscleCurves | None = None
    activation_dynamics: FirstOrderActivation = field(default_factory=FirstOrderActivation)

    def __post_init__(self):
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"formulation={self.formulation!r} is unknown; pick one of {', '.join(FORMULATIONS)}")
        if self.curves is None:
            object.__setattr__(self, "curves", MuscleCurves.for_formulation(self.formulation))
        p, c = self.parameters, self.curves
        if self.formulation != "rigid" and p.maximum_pennation_angle >= math.pi / 2 - 1e-12:
            raise ValueError(f"maximum_pennation_angle={p.maximum_pennation_angle!r} rad: an elastic-tendon "
                             "model needs a maximum pennation angle below pi/2 (cos α > 0); "
                             "OpenSim uses acos(0.1)")
        if self.formulation == "damped" and p.fiber_damping <= 0:
            raise ValueError(f"fiber_damping={p.fiber_damping!r}: the damped formulation needs β > 0 "
                             "(OpenSim's default is 0.1); use formulation='equilibrium' for β = 0")
        if self.formulation == "equilibrium":
            if p.minimum_activation <= 0:
                raise ValueError(f"minimum_activation={p.minimum_activation!r}: eq. (2) is singular at a = 0; "
                                 "use minimum_activation > 0 (OpenSim requires >= 0.01) or "
                                 "formulation='damped'")
            if c.active_force_length.minimum_value <= 0:
                raise ValueError(f"active_force_length.minimum_value={c.active_force_length.minimum_value!r}: "
                                 "eq. (2) is singular where f^L = 0; use a minimum value > 0 "
                                 "(OpenSim uses 0.1) or formulation='damped'")
            f = np.linspace(0.0, c.force_velocity.max_eccentric_velocity_force_multiplier, 9)
            err = np.max(np.abs(c.force_velocity(c.force_velocity_inverse(f)) - f))
            if not err < 1e-9:
                raise ValueError("force_velocity_inverse does not invert force_velocity (error "
                                 f"{err:.3g}); build it with ForceVelocityInverseCurve.of(force_velocity)")

    # -- derived quantities ---------------------------------------------------
    @property
    def pennation(self) -> FixedHeightPennation:
        """The fixed-height pennation model of this muscle."""
        p = self.parameters
        return FixedHeightPennation(p.optimal_fiber_length, p.pennation_angle_at_optimal,
                                    p.maximum_pennation_angle)

    @property
    def minimum_fiber_length(self) -> float:
        """max(pennation limit, shortest active length of f^L) (m)."""
        p = self.parameters
        return max(_SIGNIFICANT_REAL, self.curves.active_force_length.min_norm_active_fiber_length
                   * p.optimal_fiber_length, self.pennation.minimum_fiber_length)

    @property
    def damping(self) -> float:
        """β used by the force equation (0 for the equilibrium formulation)."""
        return 0.0 if self.formulation == "equilibrium" else self.parameters.fiber_damping

    def activation_rate(self, activation, excitation) -> np.ndarray:
        """da/dt of the first-order activation dynamics (1/s)."""
        return self.activation_dynamics.derivative(activation, excitation,
                                                   minimum_activation=self.parameters.minimum_activation)

    # -- evaluation -----------------------------------------------------------
    def evaluate(self, *, activation, musculotendon_length, fiber_length=None,
                 musculotendon_velocity=0.0, tol: float = 1e-12) -> MusculotendonResponse:
        """Fiber velocity, forces and tangent at a state (all arguments broadcast).

        Parameters
        ----------
        activation : a (clamped to [a_min, 1]).
        musculotendon_length : l^MT (m).
        fiber_length : l^M (m), the state of the elastic-tendon formulations
            (required there, not accepted for ``"rigid"``).
        musculotendon_velocity : v^MT (m/s); the elastic formulations use it only
            for the tendon velocity.
        tol : damped formulation: tolerance on the normalized force residual of eq. (3).
        """
        if self.formulation == "rigid":
            if fiber_length is not None:
                raise ValueError("the rigid-tendon formulation computes the fiber length from "
                                 "musculotendon_length (eq. 4); do not pass fiber_length")
            return self._evaluate_rigid(activation, musculotendon_length, musculotendon_velocity)
        if fiber_length is None:
            raise ValueError(f"fiber_length is the state of the {self.formulation!r} formulation; pass it "
                             "(e.g. from static_equilibrium) or use formulation='rigid'")
        return self._evaluate_elastic(activation, musculotendon_length, fiber_length,
                                      musculotendon_velocity, tol)

    def _activation(self, activation) -> tuple[np.ndarray, np.ndarray]:
        a_raw = np.asarray(activation, dtype=float)
        a_min = self.parameters.minimum_activation
        a = np.clip(a_raw, a_min, 1.0)
        return a, ((a_raw >= a_min) & (a_raw <= 1.0)).astype(float)   # one-sided at the bounds

    def _geometry(self, lce):
        pen = self.pennation
        phi = pen.pennation_angle(lce)
        return phi, np.cos(phi), np.sin(phi), pen.d_pennation_angle_d_fiber_length(lce)

    def _evaluate_elastic(self, activation, musculotendon_length, fiber_length, musculotendon_velocity, tol):
        p, c = self.parameters, self.curves
        f0, lopt, lts, vscale = (p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length,
                                 p.max_fiber_velocity)
        a_in, lmt, lce_in, vmt = np.broadcast_arrays(
            *(np.asarray(v, dtype=float) for v in (activation, musculotendon_length, fiber_length,
                                                   musculotendon_velocity)))
        a, a_free = self._activation(a_in)
        l_min = self.minimum_fiber_length
        lce = np.maximum(lce_in, l_min)
        lce_free = (lce_in > l_min).astype(float)
        phi, cos, sin, dphi = self._geometry(lce)
        lt = lmt - lce * cos
        fal = c.active_force_length.evaluate(lce / lopt)
        fpe = c.fiber_force_length.evaluate(lce / lopt)
        fse = c.tendon_force_length.evaluate(lt / lts)
        beta = self.damping
        target = fse.value / cos - fpe.value          # what a f^L f^V + β ṽ must equal
        if self.formulation == "equilibrium":
            v_norm = c.force_velocity_inverse(target / (a * fal.value))       # eq. (2)
        else:
            v_norm = self._solve_damped(a, fal.value, target, beta, tol)     # eq. (3)
        clamped = (lce_in <= l_min) & (v_norm <= 0)
        v_norm = np.where(clamped, 0.0, v_norm)
        fv = c.force_velocity.evaluate(v_norm)
        fv_value = np.where(clamped, 1.0, fv.value)
        # tangent of the fiber velocity (implicit function theorem on the residual
        # r = a fL fV + fPE + β ṽ − fT / cos α, which eq. (2) also solves)
        dlt_dlce = -(cos - lce * sin * dphi)
        d_inv_cos = sin * dphi / cos**2
        r_v = a * fal.value * fv.derivative + beta
        r_a = fal.value * fv_value * a_free
        r_lce = lce_free * ((a * fal.derivative * fv_value + fpe.derivative) / lopt
                            - (fse.derivative * dlt_dlce / lts) / cos - fse.value * d_inv_cos)
        r_lmt = -fse.derivative / (lts * cos)
        free = ~clamped
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(free, -vscale / r_v, 0.0)
        active = f0 * a * fal.value * fv_value
        passive = f0 * fpe.value
        damping = f0 * beta * v_norm
        fiber_force = active + passive + damping
        tendon_force = f0 * fse.value
        v = v_norm * vscale
        dphidt = self.pennation.pennation_angular_velocity(lce, v)
        zero = np.zeros_like(lce)
        return MusculotendonResponse(
            activation=a, fiber_length=lce, normalized_fiber_length=lce / lopt, pennation_angle=phi,
            tendon_length=lt, normalized_tendon_length=lt / lts,
            fiber_velocity=v, normalized_fiber_velocity=v_norm, pennation_angular_velocity=dphidt,
            tendon_velocity=vmt - v * cos + lce * sin * dphidt,
            active_force_length_multiplier=fal.value, force_velocity_multiplier=fv_value,
            passive_force_multiplier=fpe.value, tendon_force_multiplier=fse.value,
            active_fiber_force=active, passive_fiber_force=passive, damping_force=damping,
            fiber_force=fiber_force, fiber_force_along_tendon=fiber_force * cos, tendon_force=tendon_force,
            equilibrium_residual=fiber_force * cos - tendon_force, clamped=clamped,
            d_tendon_force_d_musculotendon_length=f0 * fse.derivative / lts,
            d_tendon_force_d_musculotendon_velocity=zero,
            d_tendon_force_d_activation=zero,
            d_tendon_force_d_fiber_length=lce_free * f0 * fse.derivative * dlt_dlce / lts,
            d_fiber_velocity_d_musculotendon_length=scale * r_lmt,
            d_fiber_velocity_d_activation=scale * r_a,
            d_fiber_velocity_d_fiber_length=scale * r_lce,
        )

    def _solve_damped(self, a, fal, target, beta, tol) -> np.ndarray:
        """Solve r(ṽ) = a f^L f^V(ṽ) + β ṽ − target = 0 for all points at once.

        r' ≥ β > 0, so one evaluation at the start ṽ0 brackets the root between
        ṽ0 and ṽ0 − r(ṽ0)/β; Newton steps leaving the bracket are replaced by
        bisection.  The start is OpenSim's: the undamped solution (eq. 2) with
        a, f^L ≥ 0.01, limited to [−1, 1].

        Runs as a compiled kernel (:func:`skfiber.hill.curve_kernels.solve_damped`)
        that repeats :meth:`_solve_damped_numpy` operation by operation (the
        same numbers, bit for bit).
        """
        shape = np.shape(target)
        a_f, fal_f, t_f = _flat(a, shape), _flat(fal, shape), _flat(target, shape)
        v, n_failed = _kernels.solve_damped(self.curves.force_velocity.curve._packed,
                                            self.curves.force_velocity_inverse.curve._packed,
                                            a_f, fal_f, t_f, float(beta), float(tol))
        if n_failed:  # not expected: the root stays bracketed and bisection replaces bad Newton steps
            raise RuntimeError(f"damped fiber-velocity Newton iteration did not converge at {n_failed} points")
        return v.reshape(shape)

    def _solve_damped_numpy(self, a, fal, target, beta, tol) -> np.ndarray:
        """:meth:`_solve_damped` through numpy and the numpy curve evaluation (the reference)."""
        fv_curve = self.curves.force_velocity
        shape = np.shape(target)
        af_f = np.broadcast_to(a * fal, shape).ravel()
        t_f = np.asarray(target, dtype=float).ravel()
        guess = self.curves.force_velocity_inverse.curve._evaluate_numpy(
            target / (np.maximum(a, 0.01) * np.maximum(fal, 0.01)), order=0).value
        v = np.clip(np.asarray(guess, dtype=float), -1.0, 1.0).ravel().copy()
        r0 = af_f * fv_curve.curve._evaluate_numpy(v, order=0).value + beta * v - t_f
        other = v - r0 / beta
        lo, hi = np.minimum(v, other), np.maximum(v, other)
        active = np.abs(r0) > tol
        for _ in range(200):
            if not active.any():
                break
            idx = np.flatnonzero(active)
            vi = v[idx]
            ev = fv_curve.curve._evaluate_numpy(vi)
            r = af_f[idx] * ev.value + beta * vi - t_f[idx]
            done = np.abs(r) <= tol
            lo_i = np.where(r < 0, vi, lo[idx])
            hi_i = np.where(r > 0, vi, hi[idx])
            newton = vi - r / (af_f[idx] * ev.derivative + beta)
            inside = (newton > lo_i) & (newton < hi_i)
            step = np.where(inside, newton, 0.5 * (lo_i + hi_i))
            done |= (hi_i - lo_i) <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(vi))
            v[idx] = np.where(done, vi, step)
            lo[idx], hi[idx] = lo_i, hi_i
            active[idx[done]] = False
        if active.any():  # not expected: the root stays bracketed and bisection replaces bad Newton steps
            raise RuntimeError(f"damped fiber-velocity Newton iteration did not converge at {active.sum()} points")
        return v.reshape(shape)

    def _evaluate_rigid(self, activation, musculotendon_length, musculotendon_velocity):
        p, c = self.parameters, self.curves
        f0, lopt, lts, vscale = (p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length,
                                 p.max_fiber_velocity)
        a_in, lmt, vmt = np.broadcast_arrays(
            *(np.asarray(v, dtype=float) for v in (activation, musculotendon_length, musculotendon_velocity)))
        a, a_free = self._activation(a_in)
        l_min = self.minimum_fiber_length
        lce_pen = self.pennation.fiber_length(lmt, lts)                      # eqs. (4), (6)
        lce = np.maximum(lce_pen, l_min)
        phi, cos, sin, dphi = self._geometry(lce)
        lt = lmt - lce * cos
        slack = lt < lts - _SIGNIFICANT_REAL                                 # tendon buckles
        v = np.where(slack, 0.0, self.pennation.fiber_velocity(lce, vmt))    # eqs. (5), (7)
        clamped = slack | ((lce <= l_min) & (v <= 0))
        v = np.where(clamped, 0.0, v)
        v_norm = v / vscale
        fal = c.active_force_length.evaluate(lce / lopt)
        fpe = c.fiber_force_length.evaluate(lce / lopt)
        fv = c.force_velocity.evaluate(v_norm)
        beta = self.damping
        g = a * fal.value * fv.value + fpe.value + beta * v_norm
        force_star = f0 * g * cos
        transmits = ~clamped & (force_star > 0)                              # tension only
        tendon_force = np.where(transmits, force_star, 0.0)
        # tangent: dl^M/dl^MT = cos α where l^M is free, and cos α depends on l^MT
        dlce = np.where(lce_pen > l_min, cos, 0.0)
        dcos = -sin * dphi * dlce
        dv_norm = np.where(clamped, 0.0, vmt * dcos / vscale)
        dg = (a * fal.derivative * fv.value + fpe.derivative) / lopt * dlce + \
            (a * fal.value * fv.derivative + beta) * dv_norm
        d_lmt = np.where(transmits, f0 * (dg * cos + g * dcos), 0.0)
        d_vmt = np.where(transmits, f0 * (a * fal.value * fv.derivative + beta) * cos * cos / vscale, 0.0)
        d_a = np.where(transmits, f0 * fal.value * fv.value * cos * a_free, 0.0)
        fiber_force = np.where(clamped, 0.0, f0 * g)
        zero = np.zeros_like(lce)
        return MusculotendonResponse(
            activation=a, fiber_length=lce, normalized_fiber_length=lce / lopt, pennation_angle=phi,
            tendon_length=lt, normalized_tendon_length=lt / lts,
            fiber_velocity=v, normalized_fiber_velocity=v_norm,
            pennation_angular_velocity=self.pennation.pennation_angular_velocity(lce, v),
            tendon_velocity=zero,
            active_force_length_multiplier=fal.value, force_velocity_multiplier=fv.value,
            passive_force_multiplier=fpe.value, tendon_force_multiplier=tendon_force / f0,
            active_fiber_force=np.where(clamped, 0.0, f0 * a * fal.value * fv.value),
            passive_fiber_force=np.where(clamped, 0.0, f0 * fpe.value),
            # tension only: a negative f^M* is cancelled by the damper (as OpenSim reports it)
            damping_force=np.where(clamped, 0.0, np.where(transmits, f0 * beta * v_norm,
                                                          -f0 * (a * fal.value * fv.value + fpe.value))),
            fiber_force=np.where(transmits, fiber_force, 0.0),
            fiber_force_along_tendon=tendon_force, tendon_force=tendon_force,
            equilibrium_residual=zero, clamped=clamped,
            d_tendon_force_d_musculotendon_length=d_lmt,
            d_tendon_force_d_musculotendon_velocity=d_vmt,
            d_tendon_force_d_activation=d_a,
            d_tendon_force_d_fiber_length=zero,
            d_fiber_velocity_d_musculotendon_length=zero,
            d_fiber_velocity_d_activation=zero,
            d_fiber_velocity_d_fiber_length=zero,
        )

    # -- initialization -------------------------------------------------------
    def static_equilibrium(self, *, activation, musculotendon_length, tol: float = 1e-12,
                           max_iter: int = 200) -> MusculotendonResponse:
        """Fiber length at which fiber and tendon are in equilibrium at rest (ṽM = 0).

        Solves (a f^L + f^PE) cos α − f^T = 0 (eq. 1 with f^V = 1) for l^M on the
        bracket [minimum fiber length, length with a slack tendon] by Newton's
        method with bisection; a fiber that cannot stretch the tendon enough stays
        at its minimum length.  Returns :meth:`evaluate` at that length, whose
        fiber velocity is zero (to the tolerance).  The rigid tendon needs no
        solve: this is then ``evaluate`` with v^MT = 0.
        """
        if self.formulation == "rigid":
            return self.evaluate(activation=activation, musculotendon_length=musculotendon_length)
        p, c = self.parameters, self.curves
        lopt, lts = p.optimal_fiber_length, p.tendon_slack_length
        a_in, lmt = np.broadcast_arrays(np.asarray(activation, dtype=float),
                                        np.asarray(musculotendon_length, dtype=float))
        a = self._activation(a_in)[0].ravel()
        lmt_f = lmt.ravel()
        l_min = self.minimum_fiber_length

        def residual(lce, a, lmt):
            phi, cos, sin, dphi = self._geometry(lce)
            lt = lmt - lce * cos
            fal = c.active_force_length.evaluate(lce / lopt)
            fpe = c.fiber_force_length.evaluate(lce / lopt)
            fse = c.tendon_force_length.evaluate(lt / lts)
            g = a * fal.value + fpe.value
            r = g * cos - fse.value
            dr = ((a * fal.derivative + fpe.derivative) / lopt * cos - g * sin * dphi
                  + fse.derivative * (cos - lce * sin * dphi) / lts)
            return r, dr

        lo = np.full(lmt_f.shape, l_min)
        hi = np.maximum(self.pennation.fiber_length(lmt_f, lts), l_min)      # tendon at slack length
        r_lo, _ = residual(lo, a, lmt_f)
        lce = np.where(r_lo >= 0, lo, 0.5 * (lo + hi))
        active = r_lo < 0
        for _ in range(max_iter):
            if not active.any():
                break
            idx = np.flatnonzero(active)
            li = lce[idx]
            r, dr = residual(li, a[idx], lmt_f[idx])
            done = np.abs(r) <= tol
            lo_i = np.where(r < 0, li, lo[idx])
            hi_i = np.where(r > 0, li, hi[idx])
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = li - r / dr
            inside = (newton > lo_i) & (newton < hi_i) & np.isfinite(newton)
            step = np.where(inside, newton, 0.5 * (lo_i + hi_i))
            done |= (hi_i - lo_i) <= 4 * np.finfo(float).eps * li
            lce[idx] = np.where(done, li, step)
            lo[idx], hi[idx] = lo_i, hi_i
            active[idx[done]] = False
        if active.any():
            raise RuntimeError(f"static equilibrium not found at {active.sum()} points within "
                               f"max_iter={max_iter}; increase max_iter or tol")
        return self.evaluate(activation=a_in, musculotendon_length=lmt,
                             fiber_length=lce.reshape(lmt.shape))
