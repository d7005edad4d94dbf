"""Rigid bodies: right circular cylinders (paper §3.1).

A body is given in the reference configuration (all coordinates q = 0, no
prescribed motion), in world coordinates: the start point of the cylinder
axis, the axis vector (its length is the cylinder length), the radius and
the mass.  The inertia tensor about the center of mass defaults to that of
a solid cylinder and can be overridden.

A :class:`Cylinder` is the shape of a body placed in space (start, axis,
radius, name), with no mass or joint: what
:func:`skfiber.coupling.body_cylinders` gives for a state and
:func:`skfiber.io.cylinder_mesh` draws (fixed bones may be given as
``Cylinder`` objects or (start, axis, radius) tuples).

Examples
--------
>>> from skfiber.rigid import Body
>>> forearm = Body("forearm", start=(0, 0, -0.351), axis=(0, 0, -0.287), radius=0.035, mass=1.5)
>>> forearm.length, forearm.center_of_mass.round(4).tolist()
(0.287, [0.0, 0.0, -0.4945])
>>> forearm.inertia_matrix.diagonal().round(6).tolist()    # solid cylinder about its center
[0.010755, 0.010755, 0.000919]
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Body", "Cylinder", "solid_cylinder_inertia", "as_vector"]


def solid_cylinder_inertia(mass: float, radius: float, length: float, direction) -> np.ndarray:
    """Inertia tensor (kg m²) of a solid cylinder about its center, in world axes.

    Axial moment m r²/2, transverse m (3 r² + L²)/12, ``direction`` the unit axis.
    """
    e = np.asarray(direction, dtype=float)
    axial = 0.5 * mass * radius**2
    transverse = mass * (3 * radius**2 + length**2) / 12.0
    return transverse * (np.eye(3) - np.outer(e, e)) + axial * np.outer(e, e)


def as_vector(value, what: str) -> np.ndarray:
    """``value`` as a float array of 3 finite numbers; ``what`` names it in the error otherwise."""
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be 3 numbers, got {value!r}") from err
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be 3 finite numbers, got {value!r}")
    return v


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid right circular cylinder.

    Parameters
    ----------
    name
        Unique name, used to refer to the body (parents, points, forces).
    start
        Start point of the cylinder axis (m), reference configuration.
    axis
        Axis vector from the start to the end point (m); its length is the
        cylinder length.
    radius
        Cylinder radius (m), > 0 (used by contact).
    mass
        Mass (kg), ≥ 0.  Bodies that move with their own coordinate need
        mass > 0 (checked when the system is assembled).
    inertia
        Inertia tensor about the center of mass in reference world axes:
        a symmetric positive semidefinite 3×3 matrix, or a pair
        ``(axial, transverse)`` of principal moments.  Default: the solid
        cylinder of this mass.
    center_of_mass
        Reference position of the center of mass; default the middle of
        the axis.
    points
        Named body points (reference coordinates), e.g. muscle insertions:
        ``{"biceps": (0.0, 0.0, -0.40)}``; refer to them by name in
        :meth:`RigidSystem.point`.

    Examples
    --------
    >>> from skfiber.rigid import Body
    >>> tibia = Body("tibia", start=(0, 0, -0.4), axis=(0, 0, -0.4), radius=0.02, mass=3.0,
    ...              points={"insertion": (0.02, 0, -0.45)})
    >>> tibia.center_of_mass.round(6).tolist(), tibia.points["insertion"].tolist()
    ([0.0, 0.0, -0.6], [0.02, 0.0, -0.45])
    >>> rod = Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, inertia=(1e-4, 0.02))   # (axial, transverse)
    >>> rod.inertia_matrix.diagonal().tolist()
    [0.0001, 0.02, 0.02]
    """

    name: str
    start: np.ndarray
    axis: np.ndarray
    radius: float
    mass: float = 0.0
    inertia: np.ndarray | tuple | None = None
    center_of_mass: np.ndarray | None = None
    points: dict | None = None
    inertia_matrix: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or self.name == "ground":
            raise ValueError(f"a body needs a non-empty name other than 'ground', got {self.name!r}")
        start = as_vector(self.start, f"start of body {self.name!r}")
        axis = as_vector(self.axis, f"axis of body {self.name!r}")
        if np.linalg.norm(axis) == 0:
            raise ValueError(f"the axis of body {self.name!r} has zero length: give the vector from the start to the end of the cylinder")
        radius = float(self.radius)
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"the radius of body {self.name!r} must be > 0, got {self.radius!r}")
        mass = float(self.mass)
        if not (np.isfinite(mass) and mass >= 0):
            raise ValueError(f"the mass of body {self.name!r} must be finite and ≥ 0, got {self.mass!r}")
        com = start + 0.5 * axis if self.center_of_mass is None else as_vector(self.center_of_mass, f"center_of_mass of body {self.name!r}")
        length = float(np.linalg.norm(axis))
        direction = axis / length
        if self.inertia is None:
            inertia = solid_cylinder_inertia(mass, radius, length, direction)
        else:
            inertia = np.asarray(self.inertia, dtype=float)
            if inertia.shape == (2,):
                axial, transverse = inertia
                inertia = transverse * (np.eye(3) - np.outer(direction, direction)) + axial * np.outer(direction, direction)
            if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
                raise ValueError(
                    f"the inertia of body {self.name!r} must be a 3×3 matrix or a pair (axial, transverse), got shape {inertia.shape}"
                )
            if not np.allclose(inertia, inertia.T, rtol=1e-12, atol=1e-14 * np.abs(inertia).max()):
                raise ValueError(f"the inertia tensor of body {self.name!r} is not symmetric: {inertia.tolist()}")
            inertia = 0.5 * (inertia + inertia.T)
            smallest = np.linalg.eigvalsh(inertia)[0]
            if smallest < -1e-12 * max(np.abs(inertia).max(), 1e-300):
                raise ValueError(f"the inertia tensor of body {self.name!r} has a negative principal moment ({smallest:.3g} kg m²)")
        points = {}
        for key, value in (self.points or {}).items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"the points of body {self.name!r} need non-empty string names, got {key!r}")
            points[key] = as_vector(value, f"point {key!r} of body {self.name!r}")
        for name, value in (("start", start), ("axis", axis), ("radius", radius), ("mass", mass), ("center_of_mass", com),
                            ("points", points)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "inertia_matrix", inertia)

    @property
    def length(self) -> float:
        """Cylinder length (m)."""
        return float(np.linalg.norm(self.axis))

    @property
    def direction(self) -> np.ndarray:
        """Unit axis vector (reference configuration)."""
        return self.axis / self.length

    @property
    def end(self) -> np.ndarray:
        """End point of the axis (reference configuration)."""
        return self.start + self.axis


@dataclass(frozen=True)
class Cylinder:
    """A right circular cylinder (a bone) in space: base center, axis vector (base → top), radius, in m.

    Only the shape, e.g. a :class:`Body`'s cylinder at a pose (VTK output of
    the bodies); the physics of a body is :class:`Body`.  ``attachment_points`` (k, 3): points fixed to the
    body where fibers are attached (m), drawn as levers from the axis (:func:`skfiber.io.cylinder_mesh`).

    Examples
    --------
    >>> Cylinder((0, 0, 0), (0, 0, -0.3), 0.03, "arm", attachment_points=[(0.1, 0, -0.2)]).attachment_points.shape
    (1, 3)
    """

    start: np.ndarray
    axis: np.ndarray
    radius: float
    name: str = ""
    attachment_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    def __post_init__(self):
        start = np.asarray(self.start, dtype=float)
        axis = np.asarray(self.axis, dtype=float)
        if start.shape != (3,) or axis.shape != (3,):
            raise ValueError(f"a cylinder needs start and axis with 3 coordinates, got shapes {start.shape} and {axis.shape}")
        if not np.all(np.isfinite(start)) or not np.all(np.isfinite(axis)) or np.linalg.norm(axis) == 0:
            raise ValueError(f"cylinder axis must be finite and nonzero, got {axis.tolist()}")
        if not (np.isfinite(self.radius) and self.radius > 0):
            raise ValueError(f"cylinder radius must be > 0 (m), got {self.radius!r}")
        try:
            points = np.asarray(self.attachment_points, dtype=float)
        except (TypeError, ValueError):  # (ragged, text, complex)
            points = None
        if points is not None and points.size == 0:
            points = np.zeros((0, 3))
        if points is None or points.ndim != 2 or points.shape[1] != 3 or not np.all(np.isfinite(points)):
            raise ValueError(f"attachment_points must be finite points of 3 coordinates, shape (k, 3), got "
                             f"{reprlib.repr(self.attachment_points)}")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "radius", float(self.radius))
        object.__setattr__(self, "attachment_points", points)

    @classmethod
    def from_any(cls, value) -> "Cylinder":
        """A Cylinder, or a tuple (start, axis, radius)."""
        if isinstance(value, cls):
            return value
        try:
            start, axis, radius = value
        except (TypeError, ValueError) as err:
            raise TypeError(f"a body is a Cylinder or a tuple (start, axis, radius), got {value!r}") from err
        return cls(start, axis, radius)
