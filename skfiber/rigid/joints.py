"""Joints of the kinematic tree: how a body moves relative to its parent.

Joint data are given in the reference configuration in world coordinates
(the parent's frame coincides with the world there) and move with the
parent.  With the parent's pose (R_p, p_p), a reference point X of the
child is at x = R_p x_loc + p_p with

=================  ===========================================  ================
joint              x_loc                                        coordinates
=================  ===========================================  ================
``Fixed()``        X                                            none
``Revolute``       Rot(a, q)(X − P) + P  (rotation about a       1 angle (rad)
                   through P)
``Prismatic``      X + q a                                      1 length (m)
``Prescribed``     R_b(t)(X − O) + O + d(t)                     none (time)
=================  ===========================================  ================

q = 0 (and R_b = I, d = 0) is the reference configuration.

Examples
--------
>>> from skfiber.rigid import Revolute, Prescribed
>>> elbow = Revolute(axis=(0, 1, 0), point=(0, 0, -0.351))
>>> import numpy as np
>>> base = Prescribed(translation=lambda t: (0.1 * np.sin(t), 0, 0),
...                   velocity=lambda t: (0.1 * np.cos(t), 0, 0),
...                   acceleration=lambda t: (-0.1 * np.sin(t), 0, 0))
>>> base.motion(0.0).velocity.tolist()
[0.1, 0.0, 0.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .bodies import as_vector

__all__ = ["Fixed", "Revolute", "Prismatic", "Prescribed", "PrescribedState", "rotation_about"]


def skew(w: np.ndarray) -> np.ndarray:
    """[w]× with [w]× v = w × v (w of shape (..., 3))."""
    w = np.asarray(w)
    z = np.zeros_like(w[..., 0])
    return np.stack(
        [np.stack([z, -w[..., 2], w[..., 1]], -1),
         np.stack([w[..., 2], z, -w[..., 0]], -1),
         np.stack([-w[..., 1], w[..., 0], z], -1)],
        -2,
    )


def rotation_about(axis: np.ndarray, angle) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` (shape (B,), real or complex) about the unit ``axis``; (B, 3, 3)."""
    K = skew(np.asarray(axis, dtype=float))
    angle = np.asarray(angle)[..., None, None]
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _unit_axis(axis, what: str) -> np.ndarray:
    a = as_vector(axis, what)
    length = np.linalg.norm(a)
    if length == 0:
        raise ValueError(f"{what} has zero length: give a direction vector such as (0, 1, 0)")
    return a / length


@dataclass(frozen=True, eq=False)
class Fixed:
    """The body is rigidly attached to its parent (or to the ground).

    Examples
    --------
    >>> from skfiber.rigid import Body, Fixed, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("pelvis", start=(0, 0, 0), axis=(0, 0, 0.2), radius=0.05), joint=Fixed()) and None
    >>> system.add_body(Body("femur", start=(0, 0, 0), axis=(0, 0, -0.4), radius=0.02, mass=1.0), parent="pelvis",
    ...                 joint=Revolute(axis=(1, 0, 0))) and None
    >>> system.coordinate_names, system.coordinate_index("pelvis")    # a fixed joint has no coordinate
    (('femur.angle',), None)
    """

    n_coordinates = 0


@dataclass(frozen=True, eq=False)
class Revolute:
    """Rotation about the unit axis ``axis`` through ``point`` (reference configuration, moves with the parent).

    The coordinate is the rotation angle (rad, right-hand rule about
    ``axis``), 0 in the reference configuration.

    Examples
    --------
    >>> from skfiber.rigid import Revolute
    >>> knee = Revolute(axis=(0, 0, 2), point=(0.1, 0, 0))
    >>> knee.axis.tolist(), knee.point.tolist(), knee.n_coordinates    # the axis is normalized
    ([0.0, 0.0, 1.0], [0.1, 0.0, 0.0], 1)
    """

    axis: np.ndarray
    point: np.ndarray = (0.0, 0.0, 0.0)
    n_coordinates = 1

    def __post_init__(self):
        object.__setattr__(self, "axis", _unit_axis(self.axis, "the axis of a revolute joint"))
        object.__setattr__(self, "point", as_vector(self.point, "the point of a revolute joint"))
        K = skew(self.axis)  # Rot(a, q) = I + sin q K + (1 − cos q) K²
        object.__setattr__(self, "_K", K)
        object.__setattr__(self, "_K2", K @ K)

    @property
    def cross_matrix(self) -> np.ndarray:
        """K = [a]× (3, 3) of the unit axis a: Rot(a, q) = I + sin q K + (1 − cos q) K²."""
        return self._K

    @property
    def cross_matrix_squared(self) -> np.ndarray:
        """K² = [a]×² (3, 3) of the unit axis a (see :attr:`cross_matrix`)."""
        return self._K2


@dataclass(frozen=True, eq=False)
class Prismatic:
    """Translation along the unit axis ``axis`` (moves with the parent); the coordinate is the distance (m).

    Examples
    --------
    >>> from skfiber.rigid import Body, Prismatic, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("slider", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Prismatic(axis=(3, 4, 0))) and None
    >>> system.coordinate_names, system.pose("slider", [0.5])[1].round(12).tolist()   # moved 0.5 m along (0.6, 0.8, 0)
    (('slider.distance',), [0.3, 0.4, 0.0])
    """

    axis: np.ndarray
    n_coordinates = 1

    def __post_init__(self):
        object.__setattr__(self, "axis", _unit_axis(self.axis, "the axis of a prismatic joint"))


@dataclass(frozen=True, eq=False)
class PrescribedState:
    """Prescribed motion at one time, in the parent's frame.

    ``rotation`` R_b, ``translation`` d, their rates: ``angular_velocity`` ω
    (spatial: Ṙ_b = [ω]× R_b), ``angular_acceleration`` ω̇, ``velocity`` ḋ,
    ``acceleration`` d̈.
    """

    rotation: np.ndarray
    translation: np.ndarray
    angular_velocity: np.ndarray
    angular_acceleration: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


def _vee(A: np.ndarray) -> np.ndarray:
    """Axial vector of the skew part of A."""
    return 0.5 * np.array([A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]])


@dataclass(frozen=True, eq=False)
class Prescribed:
    """Motion prescribed in time relative to the parent: x_loc = R_b(t)(X − O) + O + d(t).

    Typical use: the base of a chain moving with a given translation
    ``translation(t)`` (a base excitation x_b(t)).  No coordinates.

    Parameters
    ----------
    translation
        d(t) → 3 numbers (m); ``None``: no translation.
    rotation
        R_b(t) → 3×3 rotation matrix; ``None``: no rotation.
    center
        O, the point R_b rotates about (reference configuration).
    velocity, acceleration
        ḋ(t), d̈(t).  ``None``: 5-point central differences of d with
        step ``time_step`` (accurate for smooth, slow motions; give them
        for exact results and for motions with kinks).
    angular_velocity, angular_acceleration
        ω(t), ω̇(t) with Ṙ_b = [ω]× R_b (spatial, in the parent's frame).
        ``None``: from central differences of R_b.
    time_step
        Step of the central differences (s).

    Examples
    --------
    >>> from skfiber.rigid import Prescribed
    >>> base = Prescribed(translation=lambda t: (0.2 * t, 0, 0))    # velocity and acceleration: by differences
    >>> state = base.motion(1.0)
    >>> state.translation.tolist(), state.velocity.round(9).tolist(), state.acceleration.round(6).tolist()
    ([0.2, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.0, 0.0])
    """

    translation: Callable[[float], np.ndarray] | None = None
    rotation: Callable[[float], np.ndarray] | None = None
    center: np.ndarray = (0.0, 0.0, 0.0)
    velocity: Callable[[float], np.ndarray] | None = None
    acceleration: Callable[[float], np.ndarray] | None = None
    angular_velocity: Callable[[float], np.ndarray] | None = None
    angular_acceleration: Callable[[float], np.ndarray] | None = None
    time_step: float = 1e-3
    n_coordinates = 0

    def __post_init__(self):
        for name in ("translation", "rotation", "velocity", "acceleration", "angular_velocity", "angular_acceleration"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"Prescribed.{name} must be a function of time t, got {type(value).__name__}")
        object.__setattr__(self, "center", as_vector(self.center, "the center of a prescribed motion"))
        if not (self.time_step > 0 and np.isfinite(self.time_step)):
            raise ValueError(f"time_step must be > 0, got {self.time_step!r}")

    def _d(self, t):
        if self.translation is None:
            return np.zeros(3)
        return as_vector(self.translation(t), f"translation({t})")

    def _R(self, t):
        if self.rotation is None:
            return np.eye(3)
        R = np.asarray(self.rotation(t), dtype=float)
        if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9):
            raise ValueError(f"rotation({t}) must return an orthogonal 3×3 matrix, got {R.tolist()}")
        return R

    def motion(self, t: float) -> PrescribedState:
        """The prescribed motion and its rates at time t (the last one is cached)."""
        t = float(t)
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0] == t:
            return cached[1]
        state = self._motion(t)
        object.__setattr__(self, "_cache", (t, state))
        return state

    def _motion(self, t: float) -> PrescribedState:
        h = self.time_step
        d = self._d(t)
        if self.velocity is None or self.acceleration is None:
            dm2, dm1, dp1, dp2 = (self._d(t + k * h) for k in (-2, -1, 1, 2))
        velocity = (
            (dm2 - 8 * dm1 + 8 * dp1 - dp2) / (12 * h) if self.velocity is None
            else as_vector(self.velocity(t), f"velocity({t})")
        )
        acceleration = (
            (-dm2 + 16 * dm1 - 30 * d + 16 * dp1 - dp2) / (12 * h**2) if self.acceleration is None
            else as_vector(self.acceleration(t), f"acceleration({t})")
        )
        R = self._R(t)
        if self.rotation is None:
            omega = omega_dot = np.zeros(3)
        else:
            if self.angular_velocity is None or self.angular_acceleration is None:
                Rm2, Rm1, Rp1, Rp2 = (self._R(t + k * h) for k in (-2, -1, 1, 2))
                dR = (Rm2 - 8 * Rm1 + 8 * Rp1 - Rp2) / (12 * h)
                ddR = (-Rm2 + 16 * Rm1 - 30 * R + 16 * Rp1 - Rp2) / (12 * h**2)
            omega = _vee(dR @ R.T) if self.angular_velocity is None else as_vector(self.angular_velocity(t), f"angular_velocity({t})")
            if self.angular_acceleration is None:  # R̈ Rᵀ = [ω̇]× + [ω]×²
                omega_dot = _vee(ddR @ R.T - skew(omega) @ skew(omega))
            else:
                omega_dot = as_vector(self.angular_acceleration(t), f"angular_acceleration({t})")
        return PrescribedState(R, d, omega, omega_dot, velocity, acceleration)
