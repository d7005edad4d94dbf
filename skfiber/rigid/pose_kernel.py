r"""Compiled poses of the kinematic tree (numba): :func:`tree_poses`.

Poses of all bodies and the world twists of all moving joints for a batch
of configurations, in one pass over the tree in tree order (parents first);
what follows from them for a point of a body is :mod:`.jet_kernels`, for the
bodies the methods of :class:`~skfiber.rigid.kinematics.Kinematics`.  Conventions and the tables of
the tree: :mod:`skfiber.rigid.kernels`.
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .tree import PRISMATIC, REVOLUTE
from .vector_kernels import matvec3

__all__ = ["tree_poses"]

# joint kinds of skfiber.rigid.tree, repeated here: numba's cache of this module does not see other files
_REVOLUTE, _PRISMATIC = 0, 1
if (REVOLUTE, PRISMATIC) != (_REVOLUTE, _PRISMATIC):  # pragma: no cover - a guard for edits
    raise ImportError("skfiber.rigid.pose_kernel: the joint kinds differ from skfiber.rigid.tree")


@njit(cache=True)
def tree_poses(q, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v,
               center):  # pragma: no cover - compiled
    """Poses of all bodies and twists of all moving joints at a batch of configurations.

    Parameters
    ----------
    q : (B, n)
        Coordinates (float or complex); the outputs have its dtype.
    parent, joint_of_body : (nb,)
        Parent body (−1: ground) and own moving joint (−1: fixed) of each body (tree order).
    kind, coordinate : (nz,)
        Joint kind and coordinate index of each moving joint.
    axis, point : (nz, 3)
        Axis (revolute, prismatic) and point (revolute) of each moving joint (reference configuration).
    K, K2, slot
        [a]× and [a]×² of the revolute joints (r, 3, 3) and the revolute slot of each moving joint (nz,).
    tau_slot : (nz,)
        Index of each prescribed joint in ``pres_R``, ``pres_v`` and ``center`` (−1 otherwise).
    pres_R, pres_v : (T, m, 3, 3), (T, m, 5, 3)
        Prescribed rotation R_b and (translation d, ω, ω̇, ḋ, d̈) of each prescribed joint, in its
        parent's frame; T = 1 (one time) or B (one time per configuration).
    center : (m, 3)
        Centers O of the prescribed rotations.

    Returns
    -------
    R, p : (B, nb + 1, 3, 3), (B, nb + 1, 3)
        Pose of each body (last: the ground, R = I, p = 0).
    omega, origin, velocity, own_angular, own_linear : (B, nz, 3)
        Joint twists ω_k, o_k, v_k and, for prescribed joints, R_p ω̇ and R_p d̈.
    """
    B = q.shape[0]
    nb = parent.shape[0]
    nz = kind.shape[0]
    dt = q.dtype
    R = np.zeros((B, nb + 1, 3, 3), dt)
    p = np.zeros((B, nb + 1, 3), dt)
    omega = np.zeros((B, nz, 3), dt)
    origin = np.zeros((B, nz, 3), dt)
    velocity = np.zeros((B, nz, 3), dt)
    own_angular = np.zeros((B, nz, 3), dt)
    own_linear = np.zeros((B, nz, 3), dt)
    _poses(q, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center,
           R, p, omega, origin, velocity, own_angular, own_linear)
    return R, p, omega, origin, velocity, own_angular, own_linear


@njit(cache=True)
def _poses(q, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center,
           R, p, omega, origin, velocity, own_angular, own_linear):  # pragma: no cover - compiled
    """The loop of :func:`tree_poses`, writing into its outputs (zero on entry)."""
    B = q.shape[0]
    nb = parent.shape[0]
    T = pres_R.shape[0]
    dt = q.dtype
    Rl = np.empty((3, 3), dt)
    y = np.empty(3, dt)
    w = np.empty(3, dt)
    for x in range(B):
        for i in range(3):
            R[x, nb, i, i] = 1.0
        for b in range(nb):
            par = parent[b] if parent[b] >= 0 else nb
            Rp = R[x, par]
            pp = p[x, par]
            k = joint_of_body[b]
            if k < 0:  # fixed
                for i in range(3):
                    p[x, b, i] = pp[i]
                    for j in range(3):
                        R[x, b, i, j] = Rp[i, j]
                continue
            if kind[k] == _REVOLUTE:  # Rot(a, q) = I + sin q K + (1 − cos q) K²
                qk = q[x, coordinate[k]]
                s, c1 = np.sin(qk), 1.0 - np.cos(qk)
                r = slot[k]
                for i in range(3):
                    for j in range(3):
                        Rl[i, j] = (1.0 if i == j else 0.0) + s * K[r, i, j] + c1 * K2[r, i, j]
                for i in range(3):
                    for j in range(3):
                        R[x, b, i, j] = Rp[i, 0] * Rl[0, j] + Rp[i, 1] * Rl[1, j] + Rp[i, 2] * Rl[2, j]
                P = point[k]
                for i in range(3):  # P − Rl P
                    y[i] = P[i] - (Rl[i, 0] * P[0] + Rl[i, 1] * P[1] + Rl[i, 2] * P[2])
                matvec3(Rp, axis[k], omega[x, k])
                matvec3(Rp, P, origin[x, k])
                matvec3(Rp, y, p[x, b])
                for i in range(3):
                    origin[x, k, i] += pp[i]
                    p[x, b, i] += pp[i]
            elif kind[k] == _PRISMATIC:
                for i in range(3):
                    for j in range(3):
                        R[x, b, i, j] = Rp[i, j]
                qk = q[x, coordinate[k]]
                for i in range(3):
                    y[i] = qk * axis[k, i]
                matvec3(Rp, y, p[x, b])
                for i in range(3):
                    p[x, b, i] += pp[i]
                matvec3(Rp, axis[k], velocity[x, k])
            else:  # prescribed: x_loc = R_b (X − O) + O + d
                m = tau_slot[k]
                tx = x if T > 1 else 0
                Rm = pres_R[tx, m]
                V = pres_v[tx, m]
                O = center[m]
                for i in range(3):
                    for j in range(3):
                        R[x, b, i, j] = Rp[i, 0] * Rm[0, j] + Rp[i, 1] * Rm[1, j] + Rp[i, 2] * Rm[2, j]
                for i in range(3):
                    y[i] = O[i] - (Rm[i, 0] * O[0] + Rm[i, 1] * O[1] + Rm[i, 2] * O[2]) + V[0, i]
                matvec3(Rp, y, p[x, b])
                for i in range(3):
                    w[i] = O[i] + V[0, i]
                matvec3(Rp, w, origin[x, k])
                for i in range(3):
                    p[x, b, i] += pp[i]
                    origin[x, k, i] += pp[i]
                matvec3(Rp, V[1], omega[x, k])
                matvec3(Rp, V[3], velocity[x, k])
                matvec3(Rp, V[2], own_angular[x, k])
                matvec3(Rp, V[4], own_linear[x, k])
