"""What defines one Millard (2013) muscle: its parameters, the formulation names
and the five curves each formulation uses (as OpenSim sets them).

Examples
--------
>>> p = MuscleParameters(optimal_fiber_length=0.12, max_contraction_velocity=10.0)
>>> round(p.max_fiber_velocity, 12)
1.2
>>> MuscleCurves.for_formulation("damped").active_force_length.minimum_value
0.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from .checks import check_positive
from .curves import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    TendonForceLengthCurve,
)

__all__ = ["Formulation", "FORMULATIONS", "MuscleParameters", "MuscleCurves"]

#: the three musculotendon formulations (see :mod:`skfiber.hill.musculotendon`)
Formulation = Literal["damped", "equilibrium", "rigid"]
FORMULATIONS: tuple[str, ...] = ("damped", "equilibrium", "rigid")


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
        check_positive("max_isometric_force", self.max_isometric_force)
        check_positive("optimal_fiber_length", self.optimal_fiber_length)
        check_positive("tendon_slack_length", self.tendon_slack_length)
        check_positive("max_contraction_velocity", self.max_contraction_velocity)
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
