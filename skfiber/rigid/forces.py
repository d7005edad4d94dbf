"""Force elements of the rigid system: springs, dampers, external loads.

Each element contributes a generalized force Q_e(q, q̇, t) (n,) to the
right-hand side of M q̈ + h = Σ_e Q_e and, where it has one, a potential
energy V_e(q, t) (Q_e = −∂V_e/∂q for its elastic part) and a Rayleigh
dissipation function R_e (Q_e = −∂R_e/∂q̇ for its damping part).  Elements
are evaluated for a batch of (possibly complex) configurations so that the
tangent follows by the complex step.

=========================  ==================================================
element                    generalized force
=========================  ==================================================
gravity (system-level)     Σ_b m_b J_Sbᵀ g                 V = −Σ m_b g·x_Sb
``JointSpringDamper``      −f_k(q_i − q̄_i) − f_c(q̇_i)     V = ∫ f_k, R = ∫ f_c
``PointSpringDamper``      −(f_k(ξ − ξ0) + f_c(ξ̇)) ∂ξ/∂q  between two body points
``GeneralizedForce``       Q(t)
``PointForce``             C(q)ᵀ f(t) at a body point
=========================  ==================================================

Protocol of an element (write your own the same way): ``name``;
``bind(system)`` resolves body names and registers points with
``system.register_point``; ``force(ctx)`` → (B, n); optional
``energy(ctx)`` → (B,) and ``dissipation(ctx)`` → (B,).  ``ctx``
(:class:`~.context.ForceContext`) gives
``q``, ``qd``, ``t``, ``n``, ``kin`` (:class:`~.kinematics.Kinematics`) and
for a registered point index i: ``ctx.position(i)`` (B, 3),
``ctx.jacobian(i)`` (B, 3, n), ``ctx.velocity(i)`` (B, 3).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .bodies import as_vector
from .characteristic import Characteristic, as_characteristic

__all__ = ["JointSpringDamper", "PointSpringDamper", "GeneralizedForce", "PointForce", "Gravity"]


@dataclass
class Gravity:
    """Weight of all bodies: g (m/s²) acting at the centers of mass (added by the system).

    Examples
    --------
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem(gravity=(0, 0, -9.81))
    >>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=2.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> system.generalized_forces([0.0], [0.0]).round(6).tolist()   # m g × 0.25 m about y, the rod horizontal
    [4.905]
    """

    g: np.ndarray
    name: str = "gravity"

    def bind(self, system):
        """Nothing to resolve: gravity acts on every body of the system."""

    def force(self, ctx):
        """Generalized force (B, n): Σ_b m_b J_Sbᵀ g over the bodies' centers of mass S_b."""
        tree = ctx.kin.tree
        S = ctx.com()[1]  # twists of the centers of mass (B, nb, nz, 3): Q = Σ_b m_b J_Sbᵀ g
        return (tree.mass @ (S @ self.g))[:, tree.q_joints]

    def energy(self, ctx):
        """Potential energy (B,): −Σ_b m_b g · x_Sb."""
        tree = ctx.kin.tree
        return -np.einsum("b,xbc,c->x", tree.mass, ctx.com_position(), self.g)


@dataclass
class JointSpringDamper:
    """Spring and damper in the joint of ``body`` (a revolute or prismatic joint).

    Generalized force on the joint coordinate q_i:
    Q_i = −f_k(q_i − rest) − f_c(q̇_i) (a moment in N·m for a revolute joint).

    Parameters
    ----------
    body
        Name of the body whose joint (to its parent) carries the element.
    stiffness
        k (N·m/rad or N/m) for a linear spring, or a
        :class:`~skfiber.rigid.Characteristic` such as
        ``Characteristic.tan_sec(k)`` (eq. 35 of the multibody paper).
    damping
        c (N·m·s/rad or N·s/m) or a Characteristic of q̇_i.
    rest
        Rest value q̄_i of the coordinate.

    Examples
    --------
    >>> from skfiber.rigid import Body, JointSpringDamper, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> spring = system.add(JointSpringDamper("arm", stiffness=2.0, damping=0.1, rest=0.1))
    >>> system.force_contributions([0.5], [1.0])[spring.name].tolist()    # −k (q − rest) − c q̇
    [-0.9]
    """

    body: str
    stiffness: float | Characteristic | None = None
    damping: float | Characteristic | None = None
    rest: float = 0.0
    name: str | None = None
    _index: int = field(default=-1, init=False, repr=False)

    def __post_init__(self):
        self.stiffness = as_characteristic(self.stiffness, f"stiffness of the joint spring at {self.body!r}")
        self.damping = as_characteristic(self.damping, f"damping of the joint damper at {self.body!r}")
        self.rest = float(self.rest)
        if self.name is None:
            self.name = f"joint[{self.body}]"

    def bind(self, system):
        """Find the coordinate of the body's joint in ``system`` (ValueError for a joint without one)."""
        index = system.coordinate_index(self.body)
        if index is None:
            raise ValueError(
                f"{self.name}: the joint of body {self.body!r} has no coordinate (it is Fixed or Prescribed); "
                "joint springs and dampers need a Revolute or Prismatic joint"
            )
        self._index = index

    def force(self, ctx):
        """Generalized force (B, n): −f_k(q_i − rest) − f_c(q̇_i) on the joint's coordinate i, 0 elsewhere."""
        Q = np.zeros((ctx.B, ctx.n), ctx.dtype)
        i = self._index
        if self.stiffness is not None:
            Q[:, i] -= self.stiffness(ctx.q[:, i] - self.rest)
        if self.damping is not None:
            Q[:, i] -= self.damping(ctx.qd[:, i])
        return Q

    def energy(self, ctx):
        """Potential energy of the spring (B,): ∫ f_k from the rest value to q_i (0 without a spring)."""
        if self.stiffness is None:
            return np.zeros(ctx.B)
        return self.stiffness.energy(np.real(ctx.q[:, self._index]) - self.rest)

    def dissipation(self, ctx):
        """Rayleigh dissipation function of the damper (B,): ∫ f_c from 0 to q̇_i (0 without a damper)."""
        if self.damping is None:
            return np.zeros(ctx.B)
        return self.damping.energy(np.real(ctx.qd[:, self._index]))


@dataclass
class PointSpringDamper:
    """Spring–damper between a point of ``body_a`` and a point of ``body_b`` (either may be ``"ground"``).

    Points are given in the reference configuration (world coordinates).
    With the distance ξ = ‖x_b − x_a‖ and its rate ξ̇, the tension is
    F = f_k(ξ − ξ0) + f_c(ξ̇) and Q = −F ∂ξ/∂q (Kelvin–Voigt element, eqs.
    30–33 and 38 of the multibody paper).  ``rest_length`` ξ0 defaults to
    the reference distance.  ``rest_length=0`` makes a zero-length element
    with vector law Q = −(k d + c ḋ)ᵀ ∂d/∂q, d = x_b − x_a (linear only).

    Examples
    --------
    >>> from skfiber.rigid import Body, PointSpringDamper, Prismatic, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("slider", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Prismatic(axis=(1, 0, 0))) and None
    >>> spring = system.add(PointSpringDamper("ground", (-0.5, 0, 0), "slider", (0, 0, 0), stiffness=100.0))
    >>> system.generalized_forces([0.1], [0.0]).round(12).tolist(), spring.rest_length   # ξ0: the reference distance
    ([-10.0], 0.5)
    """

    body_a: str
    point_a: Sequence[float]
    body_b: str
    point_b: Sequence[float]
    stiffness: float | Characteristic | None = None
    damping: float | Characteristic | None = None
    rest_length: float | None = None
    name: str | None = None
    _points: tuple = field(default=(), init=False, repr=False)

    def __post_init__(self):
        if self.name is None:
            self.name = f"spring[{self.body_a}–{self.body_b}]"
        if not isinstance(self.point_a, str):
            self.point_a = as_vector(self.point_a, f"{self.name}: point_a")
        if not isinstance(self.point_b, str):
            self.point_b = as_vector(self.point_b, f"{self.name}: point_b")
        self.stiffness = as_characteristic(self.stiffness, f"stiffness of {self.name}")
        self.damping = as_characteristic(self.damping, f"damping of {self.name}")
        if self.rest_length is not None:
            self.rest_length = float(self.rest_length)
            if not (np.isfinite(self.rest_length) and self.rest_length >= 0):
                raise ValueError(f"{self.name}: rest_length must be ≥ 0, got {self.rest_length}")
        self._check_laws()
        if self.body_a == self.body_b:
            raise ValueError(f"{self.name}: both ends are on body {self.body_a!r}; a spring needs two different bodies")

    def _check_laws(self):
        if self.rest_length == 0:
            for law in (self.stiffness, self.damping):
                if law is not None and not law.name.startswith("linear"):
                    raise ValueError(f"{self.name}: a zero-length spring–damper takes numbers (linear laws), not {law.name}")

    @property
    def _vector_law(self) -> bool:
        return self.rest_length == 0

    def bind(self, system):
        """Resolve the two points (coordinates or names) in ``system``, take the reference distance as rest length
        when none is given, and register the points."""
        a = system.resolve_point(self.body_a, self.point_a, self.name)
        b = system.resolve_point(self.body_b, self.point_b, self.name)
        if self.rest_length is None:  # the reference distance
            self.rest_length = float(np.linalg.norm(b - a))
            self._check_laws()
        self._points = (system.register_point(self.body_a, a, self.name),
                        system.register_point(self.body_b, b, self.name))

    def _kin(self, ctx):
        a, b = self._points
        d = ctx.position(b) - ctx.position(a)
        dv = ctx.velocity(b) - ctx.velocity(a) if ctx.qd is not None else None
        return d, dv, ctx.jacobian(b) - ctx.jacobian(a)

    def force(self, ctx):
        """Generalized force (B, n): −F ∂ξ/∂q (for a zero-length element −(k d + c ḋ)ᵀ ∂d/∂q)."""
        d, dv, Jd = self._kin(ctx)
        if self._vector_law:
            f = np.zeros_like(d)
            if self.stiffness is not None:
                f = f + self.stiffness(d)
            if self.damping is not None:
                f = f + self.damping(dv)
            return -np.einsum("xc,xcn->xn", f, Jd)
        F, e = self._tension(d, dv)
        return -F[:, None] * np.einsum("xc,xcn->xn", e, Jd)

    def _tension(self, d, dv):
        """(F, e): tension f_k(ξ − ξ0) + f_c(ξ̇) (B,) and unit direction e = d/ξ (B, 3) of the separation d."""
        xi = np.sqrt(np.sum(d * d, axis=-1))  # no abs: complex-step safe
        if np.any(np.real(xi) == 0):
            raise FloatingPointError(f"{self.name}: the two points coincide, the direction of the spring is undefined")
        e = d / xi[:, None]
        F = np.zeros_like(xi)
        if self.stiffness is not None:
            F = F + self.stiffness(xi - self.rest_length)
        if self.damping is not None:
            F = F + self.damping(np.sum(e * dv, axis=-1))
        return F, e

    def tension(self, ctx):
        """Tension F = f_k(ξ − ξ0) + f_c(ξ̇) (B,) in N (> 0 pulls the points together; multibody paper's F^S).

        ``ctx`` needs q̇ when the element has a damper, e.g.
        ``system.context(q, qd, t)`` for a whole time series at once.
        Not defined for a zero-length element (``rest_length=0``), whose law is a vector.
        """
        if self._vector_law:
            raise ValueError(f"{self.name}: a zero-length spring–damper has a vector force, not a tension")
        d, dv, _ = self._kin(ctx)
        if dv is None and self.damping is not None:
            raise ValueError(f"{self.name}: the tension of a damper needs velocities; make the context with q̇")
        return self._tension(d, np.zeros_like(d) if dv is None else dv)[0]

    def energy(self, ctx):
        """Potential energy of the spring (B,): ∫ f_k from the rest length to ξ (0 without a spring)."""
        if self.stiffness is None:
            return np.zeros(ctx.B)
        d = np.real(self._kin(ctx)[0])
        if self._vector_law:
            return np.sum(self.stiffness.energy(d), axis=-1)
        return self.stiffness.energy(np.linalg.norm(d, axis=-1) - self.rest_length)

    def dissipation(self, ctx):
        """Rayleigh dissipation function of the damper (B,): ∫ f_c from 0 to ξ̇ (0 without a damper)."""
        if self.damping is None:
            return np.zeros(ctx.B)
        d, dv, _ = self._kin(ctx)
        d, dv = np.real(d), np.real(dv)
        if self._vector_law:
            return np.sum(self.damping.energy(dv), axis=-1)
        return self.damping.energy(np.sum(d * dv, axis=-1) / np.linalg.norm(d, axis=-1))

    def length(self, ctx):
        """Current distance ξ (B,)."""
        d = self._kin(ctx)[0]
        return np.sqrt(np.sum(d * d, axis=-1))


def _time_function(value, shape, what):
    if callable(value):
        return value
    arr = np.asarray(value, dtype=float)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be a function of t or {shape[0]} finite numbers, got {value!r}")
    return lambda t: arr


@dataclass
class GeneralizedForce:
    """External generalized force Q(t) (n,) on the coordinates (a function of t, or constant): moments (N·m) on
    revolute coordinates, forces (N) on prismatic ones.

    Examples
    --------
    >>> from skfiber.rigid import Body, GeneralizedForce, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> torque = system.add(GeneralizedForce(lambda t: [2.0 * t], name="motor"))
    >>> system.force_contributions([0.0], [0.0], t=1.5)["motor"].tolist()
    [3.0]
    """

    values: Callable[[float], np.ndarray] | Sequence[float]
    name: str = "generalized force"
    _n: int = field(default=0, init=False, repr=False)

    def bind(self, system):
        """Take the system's number of coordinates n; constant values are checked against it."""
        self._n = system.n
        if not callable(self.values):
            self.values = _time_function(self.values, (system.n,), f"{self.name}")

    def force(self, ctx):
        """Generalized force (B, n): Q(t) at each time of the batch (ValueError if Q(t) has not n values)."""
        Q = np.array([self._value(t) for t in np.atleast_1d(ctx.t)])
        return np.broadcast_to(Q, (ctx.B, ctx.n)).astype(ctx.dtype)

    def _value(self, t):
        Q = np.asarray(self.values(t), dtype=float)
        if Q.shape != (self._n,):
            raise ValueError(f"{self.name}: Q(t) must return {self._n} values (one per coordinate), got shape {Q.shape}")
        return Q


@dataclass
class PointForce:
    """External force f(t) (N, world axes) at a body point (reference coordinates): Q = C(q)ᵀ f.

    Examples
    --------
    >>> from skfiber.rigid import Body, PointForce, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> push = system.add(PointForce("rod", (0.5, 0, 0), (0, 0, -10.0)))    # 10 N down at the tip
    >>> push.name, system.generalized_forces([0.0], [0.0]).tolist()          # the moment about y: 0.5 m × 10 N
    ('point force[rod]', [5.0])
    """

    body: str
    point: Sequence[float]
    force_value: Callable[[float], np.ndarray] | Sequence[float]
    name: str | None = None
    _point: int = field(default=-1, init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.point, str):
            self.point = as_vector(self.point, "the point of a point force")
        self.force_value = _time_function(self.force_value, (3,), "the force of a point force")
        if self.name is None:
            self.name = f"point force[{self.body}]"

    def bind(self, system):
        """Register the point where the force acts with ``system``."""
        self._point = system.register_point(self.body, system.resolve_point(self.body, self.point, self.name), self.name)

    def force(self, ctx):
        """Generalized force (B, n): C(q)ᵀ f(t), C the Jacobian of the point."""
        f = np.array([as_vector(self.force_value(t), f"{self.name}: f(t)") for t in np.atleast_1d(ctx.t)])
        return np.einsum("xc,xcn->xn", np.broadcast_to(f, (ctx.B, 3)), ctx.jacobian(self._point))
