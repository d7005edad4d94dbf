"""Body-fixed points and cylinders as functions of q and t (paper eqs. 49, 51, 58–63).

A fiber end attached to a body point X (reference configuration) is at
ĉ(q, t) = R_b(q, t) X + p_b(q, t) (eq. 49a); its displacement is
c(q, t) = ĉ − X (the paper's c = ĉ^RB − X^c, eq. 54c, u_D = c(q)), with

* ``jacobian``    C = ∂c/∂q                    (3, n)   (δu_D = C δq, eq. 59)
* ``hessian``     ∂C/∂q, [a, i, j] = ∂²c_a/∂q_i∂q_j   (3, n, n)  (tangent of Cᵀλ and of
  ü_D = C q̈ + C_q(q̇, q̇))
* ``dt``, ``jacobian_dt``, ``dtt``   ∂c/∂t, ∂C/∂t, ∂²c/∂t² (prescribed motion)
* ``velocity``    ċ = C q̇ + ∂c/∂t,  ``acceleration_bias`` c̈ − C q̈.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem()
>>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -1), radius=0.05, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> tip = system.point("arm", (0, 0, -1))
>>> pk = tip.evaluate([np.pi / 2])
>>> (pk.position.round(12) + 0).tolist(), (pk.jacobian.round(12) + 0).tolist()
([-1.0, 0.0, 0.0], [[0.0], [0.0], [1.0]])
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bodies import as_vector
from .fused_kernels import body_point_jets
from .kinematics import Kinematics
from .point_kernels import point_jets
from .tree import GROUND

__all__ = ["BodyPoint", "BodyCylinder", "PointKinematics", "CylinderPose", "evaluate_points"]


@dataclass(frozen=True)
class PointKinematics:
    """Kinematics of body points at one (q, t) (leading axis P when several points are evaluated).

    Attributes
    ----------
    reference : (3,)  X, the point in the reference configuration
    position : (3,)  ĉ(q, t) = R X + p
    jacobian : (3, n)  C = ∂ĉ/∂q = ∂c/∂q
    hessian : (3, n, n) or None  ∂C/∂q
    dt, jacobian_dt, dtt : (3,), (3, n), (3,)  ∂c/∂t, ∂C/∂t, ∂²c/∂t²
    velocity : (3,) or None  C q̇ + ∂c/∂t
    acceleration_bias : (3,) or None  c̈ − C q̈ = C_q(q̇, q̇) + 2 ∂C/∂t q̇ + ∂²c/∂t²
    """

    reference: np.ndarray
    position: np.ndarray
    jacobian: np.ndarray
    hessian: np.ndarray | None
    dt: np.ndarray
    jacobian_dt: np.ndarray
    dtt: np.ndarray
    velocity: np.ndarray | None = None
    acceleration_bias: np.ndarray | None = None

    @property
    def displacement(self) -> np.ndarray:
        """c(q, t) = ĉ − X (paper eq. 54c: u_D = c(q))."""
        return self.position - self.reference


def evaluate_points(system, bodies, points, q, t: float = 0.0, qd=None, *, hessian: bool = True) -> PointKinematics:
    """Kinematics of several body points at once: ``bodies`` (P,) names, ``points`` (P, 3) reference coordinates.

    Returns a :class:`PointKinematics` whose arrays have a leading axis P.
    ``q`` (n,) may be complex (complex-step derivatives pass through).
    ``bodies`` may also be an integer array of body indices (``system.tree.index``).
    """
    plan = system.plan()
    tree = plan.tree
    if isinstance(bodies, np.ndarray) and bodies.dtype.kind == "i":
        idx = np.ascontiguousarray(bodies, dtype=np.int64)
    else:
        idx = np.array([system.body_index(b) for b in bodies], dtype=np.int64)
    X = np.ascontiguousarray(points, dtype=float).reshape(len(idx), 3)
    q = np.asarray(q)
    if q.shape != (tree.n,):
        raise ValueError(f"q must have {tree.n} entries {list(tree.coordinate_names)}, got shape {q.shape}")
    if qd is None and isinstance(t, (float, int)) and math.isfinite(t):
        # the coupled solver's case: poses and jets in one compiled call, the tables kept by the plan
        q = np.ascontiguousarray(q[None, :], dtype=complex if np.iscomplexobj(q) else float)
        x, C, H, dt, C_t, dtt = body_point_jets(q, idx, X, hessian, *plan.point_args(t))
        return PointKinematics(X, x, C, H if hessian else None, dt, C_t, dtt)
    kin = Kinematics(tree, q[None, :], t, None if qd is None else np.asarray(qd)[None, :])
    tab = tree.tables
    x, C, H, dt, C_t, dtt = point_jets(kin.R, kin.p, idx, X, tree.path, kin.omega, kin.origin, kin.velocity,
                                       kin.own_angular, kin.own_linear, tree.upstream, tab.prescribed, tab.q_joints,
                                       tab.tau_joints, hessian)
    velocity = bias = None
    if qd is not None:
        S = kin.twists(idx, x[None])
        velocity = np.einsum("pkc,k->pc", S[0], kin.zeta_rate[0])
        bias = kin.velocity_product(idx, x[None], S)[0]
    return PointKinematics(X, x, C, H if hessian else None, dt, C_t, dtt, velocity, bias)


class BodyPoint:
    """A point fixed to a body (or to the ground), given in the reference configuration.

    Use it for fiber attachments: ``displacement(q, t)`` is the paper's
    c(q) (u_D = c(q)), ``jacobian`` C, ``hessian`` ∂C/∂q.
    """

    def __init__(self, system, body: str, point):
        known = [b.name for b in system.bodies]
        name = getattr(body, "name", body)
        if name != GROUND and name not in known:
            raise ValueError(f"a point is attached to the unknown body {name!r}; bodies: {known} or 'ground'")
        self.system = system
        self.body = name
        self.name = None
        if isinstance(point, str):
            named = {} if name == GROUND else system.body(name).points
            if point not in named:
                raise ValueError(f"body {name!r} has no point named {point!r}; its named points: {sorted(named)}")
            self.name = point
            point = named[point]
        self.reference = as_vector(point, f"the point on body {name!r}")

    def __repr__(self):
        return f"BodyPoint({self.body!r}, {self.name or self.reference.tolist()!r})"

    def evaluate(self, q, t: float = 0.0, qd=None, *, hessian: bool = True) -> PointKinematics:
        """All kinematic quantities at (q, t) (and q̇), see :class:`PointKinematics`."""
        pk = evaluate_points(self.system, [self.body], self.reference[None], q, t, qd, hessian=hessian)
        return PointKinematics(*(None if v is None else v[0] for v in (
            pk.reference, pk.position, pk.jacobian, pk.hessian, pk.dt, pk.jacobian_dt, pk.dtt,
            pk.velocity, pk.acceleration_bias)))

    def position(self, q, t: float = 0.0) -> np.ndarray:
        """ĉ(q, t) (3,)."""
        return self.evaluate(q, t, hessian=False).position

    def displacement(self, q, t: float = 0.0) -> np.ndarray:
        """c(q, t) = ĉ − X (3,)."""
        return self.position(q, t) - self.reference

    def jacobian(self, q, t: float = 0.0) -> np.ndarray:
        """C = ∂c/∂q (3, n)."""
        return self.evaluate(q, t, hessian=False).jacobian

    def hessian(self, q, t: float = 0.0) -> np.ndarray:
        """∂C/∂q (3, n, n), [a, i, j] = ∂²c_a/∂q_i∂q_j."""
        return self.evaluate(q, t).hessian

    def velocity(self, q, qd, t: float = 0.0) -> np.ndarray:
        """ċ = C q̇ + ∂c/∂t (3,)."""
        return self.evaluate(q, t, qd, hessian=False).velocity


@dataclass(frozen=True)
class CylinderPose:
    """Pose of a body's cylinder at (q, t) with its derivatives (for contact with moving cylinders).

    ``start`` y₀ (3,), ``axis`` a = end − start (3,) (length = cylinder
    length), ``direction`` t_RB = a/‖a‖ (paper eq. 51), ``radius``.
    ``*_jacobian`` (3, n) = ∂/∂q, ``*_hessian`` (3, n, n) = ∂²/∂q², and
    ``*_dt`` (3,) = ∂/∂t (prescribed motion).
    """

    start: np.ndarray
    axis: np.ndarray
    radius: float
    start_jacobian: np.ndarray
    axis_jacobian: np.ndarray
    start_hessian: np.ndarray | None
    axis_hessian: np.ndarray | None
    start_dt: np.ndarray
    axis_dt: np.ndarray

    @property
    def length(self) -> float:
        return float(np.sqrt(np.real(self.axis @ self.axis)))

    @property
    def direction(self) -> np.ndarray:
        return self.axis / self.length

    @property
    def direction_jacobian(self) -> np.ndarray:
        return self.axis_jacobian / self.length

    @property
    def end(self) -> np.ndarray:
        return self.start + self.axis


class BodyCylinder:
    """The cylinder of a body as a function of (q, t): :meth:`pose` gives a :class:`CylinderPose`."""

    def __init__(self, system, body: str):
        self.system = system
        self.body = system.body(getattr(body, "name", body))

    def __repr__(self):
        return f"BodyCylinder({self.body.name!r})"

    def pose(self, q, t: float = 0.0, *, hessian: bool = True) -> CylinderPose:
        b = self.body
        pk = evaluate_points(self.system, [b.name, b.name], np.array([b.start, b.end]), q, t, hessian=hessian)
        return CylinderPose(
            start=pk.position[0], axis=pk.position[1] - pk.position[0], radius=b.radius,
            start_jacobian=pk.jacobian[0], axis_jacobian=pk.jacobian[1] - pk.jacobian[0],
            start_hessian=None if pk.hessian is None else pk.hessian[0],
            axis_hessian=None if pk.hessian is None else pk.hessian[1] - pk.hessian[0],
            start_dt=pk.dt[0], axis_dt=pk.dt[1] - pk.dt[0],
        )
