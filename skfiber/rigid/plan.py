"""The evaluation plan of an assembled rigid system: what its fast paths keep between calls.

:func:`~skfiber.rigid.rigid_step`, :class:`~skfiber.rigid.EulerStep` and
:func:`~skfiber.rigid.evaluate_points` call compiled kernels
(:mod:`skfiber.rigid.kernels`) whose arguments are the tree's tables and the
prescribed motion at the time t.  An :class:`EvaluationPlan` gathers them
once per assembled tree, splits the force elements into the built-in
gravity (computed inside the kernels) and the others, lays out the
elements' internal states, and keeps the kernel arguments of the last time.
:meth:`RigidSystem.plan <skfiber.rigid.RigidSystem.plan>` makes and keeps it.

Examples
--------
>>> from skfiber.rigid import Body, JointSpringDamper, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> system.add(JointSpringDamper("rod", stiffness=1.0)) and None
>>> plan = system.plan()
>>> plan.n, plan.gravity.name, [e.name for e in plan.elements], plan.n_states
(1, 'gravity', ['joint[rod]'], 0)
>>> system.plan() is plan
True
"""
from __future__ import annotations

import numpy as np

from .complex_step import COMPLEX_STEP
from .forces import Gravity
from .kinematics import Kinematics

__all__ = ["EvaluationPlan"]


class EvaluationPlan:
    """What the fast evaluations of a finalized system need that does not depend on the state.

    :func:`~skfiber.rigid.rigid_step` and :func:`~skfiber.rigid.evaluate_points`
    run once per Newton residual of a coupled model; for the few bodies of a
    muscle model their cost is the Python around the compiled kernels, not
    the arithmetic.  Built once per assembled tree (:meth:`RigidSystem.plan
    <skfiber.rigid.RigidSystem.plan>`).

    Parameters
    ----------
    system
        The :class:`~skfiber.rigid.RigidSystem`, assembled (:meth:`~skfiber.rigid.RigidSystem.finalize`).

    Attributes
    ----------
    tree, n
        The tree and the number of coordinates.
    gravity
        The system's :class:`~.forces.Gravity` element (None without gravity):
        its weight is computed inside the compiled kernel (:func:`.kernels.euler_terms`).
    elements
        The other force elements, evaluated through their ``force(ctx)``.
    layout, n_states
        [(element, slice into s)] of the elements with internal states
        (``n_states`` must not change once the system is assembled) and their total.
    pose_tables, body_tables, point_tables
        The tree's arrays in the argument order of the kernels: those of
        :func:`.kernels.tree_poses` before the prescribed motion, and those of
        :func:`.kernels.euler_terms` / :func:`.kernels.body_point_jets` after it.
    """

    def __init__(self, system):
        tree = system.tree
        tab, rot = tree.tables, tree.rotations
        self.tree, self.n = tree, tree.n
        bound = system.elements
        # exactly the built-in class: a subclass may redefine force()
        self.gravity = next((e for e in bound if type(e) is Gravity), None)
        self.elements = tuple(e for e in bound if e is not self.gravity)
        layout, k = [], 0
        for element in bound:
            m = int(getattr(element, "n_states", 0) or 0)
            if m > 0:
                layout.append((element, slice(k, k + m)))
                k += m
        self.layout, self.n_states = layout, k
        self.pose_tables = (tab.parent, tab.joint_of_body, tab.kind, tab.coordinate, tab.axis, tab.point,
                            rot.K, rot.K2, rot.slot, tab.tau_slot)
        self.center = tab.center
        self.body_tables = (tree.path, tree.upstream, tab.prescribed, tab.q_joints, tab.tau_joints,
                            tree.mass, tree.com, tree.inertia)
        self.point_tables = (tree.path, tree.upstream, tab.prescribed, tab.q_joints, tab.tau_joints)
        self._steps = None
        self._t = None  # the time of the kept motion and kernel arguments
        self._motion = self._euler_args = self._point_args = None

    def complex_steps(self, size: int) -> np.ndarray:
        """i h I (size, size): the complex-step batch is x + i h I (:func:`.complex_step.complex_jacobian`)."""
        if self._steps is None or self._steps.shape[0] != size:
            self._steps = 1j * COMPLEX_STEP * np.eye(size)
            self._steps.setflags(write=False)
        return self._steps

    def motion(self, t: float) -> tuple:
        """(R_b, (d, ω, ω̇, ḋ, d̈)) of the prescribed joints at the time t (a number), the last one kept."""
        if t != self._t:  # Prescribed.motion keeps its last time too: the same t, the same motion
            motion = Kinematics.prescribed_data(self.tree, t)
            self._euler_args = self.pose_tables + motion + (self.center,) + self.body_tables
            self._point_args = self.pose_tables + motion + (self.center,) + self.point_tables
            self._t, self._motion = t, motion
        return self._motion

    def kernel_args(self, t: float) -> tuple:
        """The arguments of :func:`.kernels.euler_terms` after g at the time t."""
        if t != self._t:
            self.motion(t)
        return self._euler_args

    def point_args(self, t: float) -> tuple:
        """The arguments of :func:`.kernels.body_point_jets` after ``hessian`` at the time t."""
        if t != self._t:
            self.motion(t)
        return self._point_args
