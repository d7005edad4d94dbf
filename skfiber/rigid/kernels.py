r"""Compiled loops (numba) of the rigid-body kinematics and inertia terms.

The rigid systems of muscle models are tiny (a few bodies and joints), so
their evaluation through numpy is dominated by the cost of the calls, not by
the arithmetic: a backward-Euler residual with its complex-step tangent took
about 150 numpy calls.  The kernels here do the same work in one pass each,
for any kinematic tree and in any dtype (float, or complex for the complex
step):

* :func:`tree_poses` — poses of the bodies and world twists of the moving
  joints (:class:`~skfiber.rigid.kinematics.Kinematics`);
* :func:`inertia_terms` — M and h of the Lagrangian equations (and the
  centers of mass with their twists, which gravity reuses)
  (:meth:`~skfiber.rigid.RigidSystem.inertia_terms`);
* :func:`point_jets` — positions of body points with their q- and
  t-derivatives up to the second order (:func:`~skfiber.rigid.evaluate_points`);
* :func:`point_kinematics` — positions, Jacobians and velocities of the
  points force elements register (``ctx.position`` … of the force context);
* :func:`euler_terms` and :func:`body_point_jets` — the above fused into one
  call each for the hot paths (:func:`~skfiber.rigid.rigid_step`,
  :func:`~skfiber.rigid.evaluate_points`): at a few bodies the cost of a
  kernel is its call (the arguments and the returned arrays), not its loops.

The formulas are those of :mod:`skfiber.rigid.kinematics` and
:mod:`skfiber.rigid.system` (see there); the kinematics of a body point (its
twists, second derivatives and acceleration, a body's angular acceleration)
are written once, in :mod:`.jet_kernels`, which these kernels and the methods of
:class:`~skfiber.rigid.kinematics.Kinematics` call; the tests check them against
finite differences and Lagrange's equations.  The kernels are compiled on first use
for each dtype (a few seconds each) and cached on disk (``cache=True``).

Conventions: B configurations, nb bodies (index nb is the ground), nz
moving joints, n coordinates, m prescribed joints.  All arrays are C
contiguous; the tables of the tree are those of
:class:`~skfiber.rigid.tree.Tree`.

Module map (one idea each; this module gathers their kernels):

* :mod:`.vector_kernels` — the 3-vector helpers of the loops;
* :mod:`.jet_kernels` — the kinematics of one body point and of a body's rotation;
* :mod:`.pose_kernel` — :func:`tree_poses`;
* :mod:`.inertia_kernel` — :func:`inertia_terms` (and its loop
  :func:`~.inertia_kernel.inertia_terms_into`);
* :mod:`.point_kernels` — :func:`point_jets`, :func:`point_kinematics`;
* :mod:`.fused_kernels` — :func:`euler_terms`, :func:`euler_step_terms`,
  :func:`body_point_jets`.

Caching: numba's on-disk cache keys each kernel on its own file only, so a
kernel that calls into another module (the fused kernels, and those of
:mod:`skfiber.coupled_kernels` and :mod:`skfiber.evaluation_kernel`) keeps
the compiled code of its callees until its own file changes: after editing
a kernel, delete the ``*.nbi``/``*.nbc`` files of the modules that call it
(or all of ``skfiber/rigid/__pycache__``).
"""
from __future__ import annotations

from .fused_kernels import body_point_jets, euler_step_terms, euler_terms
from .inertia_kernel import inertia_terms
from .point_kernels import point_jets, point_kinematics
from .pose_kernel import tree_poses

__all__ = ["tree_poses", "inertia_terms", "point_jets", "point_kinematics", "euler_terms", "euler_step_terms",
           "body_point_jets"]
