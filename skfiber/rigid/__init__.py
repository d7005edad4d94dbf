"""Rigid multibody system in minimal coordinates (paper §3.1; the Lagrangian
open-chain formulation of the multibody paper, eqs. 22–43).

Bodies are right circular cylinders (:class:`Body`) in a kinematic tree:
each has a parent (another body or the ground) and a joint
(:class:`Fixed`, :class:`Revolute`, :class:`Prismatic`, or a
:class:`Prescribed` motion in time such as a base translation).  Force
elements (gravity, :class:`JointSpringDamper` with linear or nonlinear
:class:`Characteristic`, :class:`PointSpringDamper`,
:class:`GeneralizedForce`, :class:`PointForce`) give Q(q, q̇, t); the
equations of motion M(q, t) q̈ + h(q, q̇, t) = Q follow from T, V and the
dissipation function (:class:`RigidSystem`).

Module map: ``bodies`` (cylinders; :class:`Cylinder`, a body's shape placed in
space, for output), ``joints``, ``tree`` (topology),
``kinematics`` (poses, Jacobians and their derivatives), ``forces``,
``characteristic``, ``system`` (dynamics, energies, powers), ``work`` (the
kinetic-energy–work balance along a motion), ``ode`` (reference motions from
scipy's ODE solvers),
``context`` (what force elements see), ``plan`` (what the fast paths keep
per assembled system), ``complex_step`` (the tangents),
``points`` (attachment points and cylinder poses for coupling and
contact), ``integrate`` (backward Euler, eq. 64 rigid part: ``element_states``,
``step``, ``backward_euler``, ``simulate``), ``kernels`` (the compiled loops:
``vector_kernels``, ``pose_kernel``, ``inertia_kernel``, ``point_kernels``,
``fused_kernels``).

Examples
--------
A double pendulum whose base moves sideways, with joint springs and dampers:

>>> import numpy as np
>>> from skfiber.rigid import (Body, JointSpringDamper, Prescribed, Revolute, RigidSystem,
...                            simulate_rigid)
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("base", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.02),
...                 joint=Prescribed(translation=lambda t: (0.05 * np.sin(t), 0, 0))) and None
>>> for i, parent in enumerate(["base", "link1"]):
...     z = -0.3 * i
...     system.add_body(Body(f"link{i + 1}", start=(0, 0, z), axis=(0, 0, -0.3), radius=0.02, mass=1.0),
...                     parent=parent, joint=Revolute(axis=(0, 1, 0), point=(0, 0, z))) and None
...     system.add(JointSpringDamper(f"link{i + 1}", stiffness=2.0, damping=0.1)) and None
>>> system.coordinate_names
('link1.angle', 'link2.angle')
>>> result = simulate_rigid(system, [0.2, -0.1], [0.0, 0.0], t_end=0.05, dt=0.01)
>>> result.q.shape
(6, 2)
"""
from .bodies import Body, Cylinder, solid_cylinder_inertia
from .characteristic import Characteristic
from .forces import GeneralizedForce, JointSpringDamper, PointForce, PointSpringDamper
from .integrate import (
    EulerStep,
    RigidResult,
    RigidStep,
    backward_euler_rigid,
    rigid_residual,
    rigid_static,
    rigid_step,
    rigid_tangent,
    simulate_rigid,
)
from .ode import OdeMotion, ode_motion
from .joints import Fixed, Prescribed, PrescribedState, Prismatic, Revolute
from .points import BodyCylinder, BodyPoint, CylinderPose, PointKinematics, evaluate_points
from .system import RigidSystem
from .tree import GROUND
from .work import WORK_RULES, WorkBalance, work_balance

__all__ = [
    "Body",
    "Cylinder",
    "solid_cylinder_inertia",
    "Fixed",
    "Revolute",
    "Prismatic",
    "Prescribed",
    "PrescribedState",
    "RigidSystem",
    "Characteristic",
    "JointSpringDamper",
    "PointSpringDamper",
    "GeneralizedForce",
    "PointForce",
    "BodyPoint",
    "BodyCylinder",
    "CylinderPose",
    "PointKinematics",
    "evaluate_points",
    "RigidStep",
    "rigid_step",
    "EulerStep",
    "rigid_static",
    "rigid_residual",
    "rigid_tangent",
    "backward_euler_rigid",
    "simulate_rigid",
    "RigidResult",
    "GROUND",
    "WorkBalance",
    "OdeMotion",
    "ode_motion",
    "work_balance",
    "WORK_RULES",
]
