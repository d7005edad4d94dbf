r"""Compiled kinematics of body points (numba): :func:`point_jets` and :func:`point_kinematics`.

* :func:`point_jets` — positions of body points with their q- and
  t-derivatives up to the second order, at one configuration
  (:func:`~skfiber.rigid.evaluate_points`);
* :func:`point_kinematics` — positions, Jacobians and velocities of the
  points force elements register, at a batch of configurations
  (``ctx.position`` … of :class:`~skfiber.rigid.context.ForceContext`).

Both start from the poses and joint twists of :func:`.pose_kernel.tree_poses`.
Conventions: :mod:`skfiber.rigid.kernels`.
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .jet_kernels import point_position, point_second_derivatives, point_twists

__all__ = ["point_jets", "point_kinematics"]


@njit(cache=True)
def point_jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
               q_joints, tau_joints, hessian):  # pragma: no cover - compiled
    """Positions and q-, t-derivatives of body points at one configuration (batch entry 0).

    Parameters
    ----------
    R, p, omega, origin, velocity, own_angular, own_linear
        Poses and joint twists of :func:`.pose_kernel.tree_poses` (only entry 0 of the batch is used).
    bodies, X : (P,), (P, 3)
        Body index (nb: the ground) and reference coordinates of each point.
    path, upstream, prescribed, q_joints, tau_joints
        Tables of the tree (:class:`~skfiber.rigid.tree.Tree`).
    hessian
        Also return ∂C/∂q (else an array of shape (P, 3, 0, 0)).

    Returns
    -------
    x : (P, 3)  x = R X + p
    C : (P, 3, n)  ∂x/∂q: the twists s_k(x) = ω_k × (x − o_k) + v_k of the coordinates' joints
    H : (P, 3, n, n)  ∂²x/∂q∂q
    x_t, C_t, x_tt : (P, 3), (P, 3, n), (P, 3)  ∂x/∂t, ∂C/∂t, ∂²x/∂t² (sums over the prescribed joints)

    With the second derivatives ∂²x/∂ζ_j∂ζ_k of :func:`.jet_kernels.point_second_derivatives`.
    """
    P = bodies.shape[0]
    n = q_joints.shape[0]
    dt = R.dtype
    x = np.empty((P, 3), dt)
    C = np.zeros((P, 3, n), dt)
    nh = n if hessian else 0
    H = np.zeros((P, 3, nh, nh), dt)
    x_t = np.zeros((P, 3), dt)
    C_t = np.zeros((P, 3, n), dt)
    x_tt = np.zeros((P, 3), dt)
    _jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
          q_joints, tau_joints, hessian, x, C, H, x_t, C_t, x_tt)
    return x, C, H, x_t, C_t, x_tt


@njit(cache=True)
def _jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
          q_joints, tau_joints, hessian, x, C, H, x_t, C_t, x_tt):  # pragma: no cover - compiled
    """The loop of :func:`point_jets`, writing into its outputs (all but x zero on entry)."""
    P = bodies.shape[0]
    nz = omega.shape[1]
    n = q_joints.shape[0]
    m = tau_joints.shape[0]
    dt = R.dtype
    S = np.zeros((nz, 3), dt)
    H2 = np.zeros((nz, nz, 3), dt)
    for pt in range(P):
        b = bodies[pt]
        point_position(R, p, 0, b, X[pt], x[pt])
        point_twists(omega, origin, velocity, path, 0, b, x[pt], S)
        for a in range(n):
            for i in range(3):
                C[pt, i, a] = S[q_joints[a], i]
        for t in range(m):
            for i in range(3):
                x_t[pt, i] += S[tau_joints[t], i]
        if not (hessian or m):
            continue
        point_second_derivatives(omega, origin, velocity, own_angular, own_linear, upstream, prescribed, path, 0, b,
                                 x[pt], S, H2)
        if hessian:
            for a in range(n):
                for e in range(n):
                    for i in range(3):
                        H[pt, i, a, e] = H2[q_joints[a], q_joints[e], i]
        for t in range(m):
            for a in range(n):
                for i in range(3):
                    C_t[pt, i, a] += H2[tau_joints[t], q_joints[a], i]
            for t2 in range(m):
                for i in range(3):
                    x_tt[pt, i] += H2[tau_joints[t], tau_joints[t2], i]


@njit(cache=True)
def point_kinematics(R, p, omega, origin, velocity, bodies, X, path, q_joints, zd,
                     rates):  # pragma: no cover - compiled
    """Positions, Jacobians and velocities of body points at a batch of configurations.

    What force elements ask of their registered points (``ctx.position``,
    ``ctx.jacobian``, ``ctx.velocity`` of :class:`~skfiber.rigid.context.ForceContext`);
    the point's position and twists are those of :mod:`.jet_kernels`.

    Parameters
    ----------
    R, p, omega, origin, velocity
        Poses and joint twists of :func:`.pose_kernel.tree_poses` (B configurations).
    bodies, X : (P,), (P, 3)
        Body index (nb: the ground) and reference coordinates of each point.
    path, q_joints
        Tables of the tree.
    zd : (B, nz)
        ζ̇ (read only if ``rates``).

    Returns
    -------
    x : (B, P, 3)  x = R X + p
    C : (B, P, 3, n)  ∂x/∂q: the twists s_k(x) = ω_k × (x − o_k) + v_k of the coordinates' joints
    v : (B, P, 3)  Σ_k s_k(x) ζ̇_k (zero unless ``rates``)
    """
    B = R.shape[0]
    P = bodies.shape[0]
    nz = omega.shape[1]
    n = q_joints.shape[0]
    dt = R.dtype
    x = np.empty((B, P, 3), dt)
    C = np.zeros((B, P, 3, n), dt)
    v = np.zeros((B, P, 3), dt)
    S = np.zeros((nz, 3), dt)
    for y in range(B):
        for pt in range(P):
            b = bodies[pt]
            point_position(R, p, y, b, X[pt], x[y, pt])
            point_twists(omega, origin, velocity, path, y, b, x[y, pt], S)
            if rates:
                for k in range(nz):
                    for i in range(3):
                        v[y, pt, i] += S[k, i] * zd[y, k]
            for a in range(n):
                for i in range(3):
                    C[y, pt, i, a] = S[q_joints[a], i]
    return x, C, v
