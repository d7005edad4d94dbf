"""What one evaluation of a Millard (2013) musculotendon model yields: :class:`MusculotendonResponse`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MusculotendonResponse"]


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
