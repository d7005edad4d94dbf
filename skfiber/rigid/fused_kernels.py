r"""Fused kernels of the hot paths (numba): one compiled call per evaluation.

At a few bodies the cost of a kernel is its call (the arguments and the
returned arrays), not its loops, so the hot paths get one kernel each:

* :func:`euler_terms` — :func:`.pose_kernel.tree_poses` and
  :func:`.inertia_kernel.inertia_terms` with the weight of the bodies: the
  backward-Euler balance of a batch of configurations
  (:func:`~skfiber.rigid.rigid_step`);
* :func:`euler_step_terms` — the same with its complex-step tangent at one
  configuration (:class:`~skfiber.rigid.EulerStep`, the coupled solver);
* :func:`body_point_jets` — :func:`.pose_kernel.tree_poses` and
  :func:`.point_kernels.point_jets` (:func:`~skfiber.rigid.evaluate_points`).

Conventions: :mod:`skfiber.rigid.kernels`.
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .inertia_kernel import inertia_terms_into
from .point_kernels import point_jets
from .pose_kernel import tree_poses

__all__ = ["euler_terms", "euler_step_terms", "body_point_jets"]


@njit(cache=True)
def euler_terms(q, q_prev, p_prev, dt, g, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints, tau_joints, mass, com,
                inertia):  # pragma: no cover - compiled
    """The backward-Euler balance M a + h − Q_g of a batch of configurations q⁺ in one call.

    With p⁺ = (q⁺ − qₙ)/Δt and a = (p⁺ − pₙ)/Δt: :func:`.pose_kernel.tree_poses` and
    :func:`.inertia_kernel.inertia_terms` fused (ζ̇ = p⁺ on the coordinates, 1 on the prescribed
    joints), and the weight Q_g = Σ_b m_b J_Sbᵀ g, so that the step residual of
    a system whose only force element is gravity takes one compiled call
    (:func:`skfiber.rigid.step.compiled_balance`).  The arguments after ``g``
    are those of :func:`.pose_kernel.tree_poses` and :func:`.inertia_kernel.inertia_terms`.

    Parameters
    ----------
    q : (B, n)
        Configurations q⁺ (float, or complex for the complex step).
    q_prev, p_prev : (n,)
        qₙ and pₙ.
    dt : float
        Δt.
    g : (3,)
        Gravitational acceleration.

    Returns
    -------
    F : (4, B, n)
        M a, h, Q_g and (h − Q_g) + M a.
    ref : float
        The largest norm of the real parts of M a, h and Q_g of configuration 0 (the force scale).
    """
    B = q.shape[0]
    nb = parent.shape[0]
    nz = kind.shape[0]
    n = q_joints.shape[0]
    dt_ = q.dtype
    R, p, omega, origin, velocity, own_angular, own_linear = tree_poses(
        q, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center)
    zd = np.zeros((B, nz), dt_)  # ζ̇
    acc = np.empty((B, n), dt_)
    for x in range(B):
        for a in range(n):
            v = (q[x, a] - q_prev[a]) / dt
            zd[x, q_joints[a]] = v
            acc[x, a] = (v - p_prev[a]) / dt
        for t in range(tau_joints.shape[0]):
            zd[x, tau_joints[t]] = 1.0
    M = np.zeros((B, n, n), dt_)
    F = np.zeros((4, B, n), dt_)
    xS = np.empty((B, nb, 3), dt_)
    S = np.zeros((B, nb, nz, 3), dt_)
    inertia_terms_into(R, p, omega, origin, velocity, own_angular, own_linear, zd, True, True, path, upstream,
                       prescribed, q_joints, mass, com, inertia, M, F[1], xS, S)
    for x in range(B):
        for a in range(n):
            ma = F[0, x, a]
            for e in range(n):
                ma += M[x, a, e] * acc[x, e]
            F[0, x, a] = ma
            ka = q_joints[a]
            Qa = F[2, x, a]
            for b in range(nb):
                Sb = S[x, b, ka]
                Qa += mass[b] * (Sb[0] * g[0] + Sb[1] * g[1] + Sb[2] * g[2])
            F[2, x, a] = Qa
            F[3, x, a] = (F[1, x, a] - Qa) + ma
    ref = 0.0
    for k in range(3):
        sq = 0.0
        for a in range(n if B else 0):
            sq += F[k, 0, a].real ** 2
        ref = max(ref, np.sqrt(sq))
    return F, ref


@njit(cache=True)
def euler_step_terms(q, h, q_prev, p_prev, dt, g, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                     tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints, tau_joints, mass, com,
                     inertia):  # pragma: no cover - compiled
    """:func:`euler_terms` with its complex-step tangent at one real configuration q⁺ (n ≥ 1).

    The batch is q⁺ + i h I (:func:`skfiber.rigid.complex_jacobian`); returns the residual
    (h − Q_g) + M a (n,), its tangent (n, n) and the force scale.
    """
    n = q.shape[0]
    X = np.empty((n, n), np.complex128)
    for b in range(n):
        for a in range(n):
            X[b, a] = complex(q[a], h if a == b else 0.0)
    F, ref = euler_terms(X, q_prev, p_prev, dt, g, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                         tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints, tau_joints, mass,
                         com, inertia)
    R = np.empty(n)
    T = np.empty((n, n))
    for a in range(n):
        R[a] = F[3, 0, a].real
        for b in range(n):
            T[a, b] = F[3, b, a].imag / h
    return R, T, ref


@njit(cache=True)
def body_point_jets(q, bodies, X, hessian, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                    tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints,
                    tau_joints):  # pragma: no cover - compiled
    """:func:`.pose_kernel.tree_poses` and :func:`.point_kernels.point_jets` fused: the jets of body points at
    one configuration q (1, n).

    The arguments are those of the two kernels (the tables of the tree last); returns those of
    :func:`.point_kernels.point_jets`.
    """
    R, p, omega, origin, velocity, own_angular, own_linear = tree_poses(
        q[:1], parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center)
    return point_jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
                      q_joints, tau_joints, hessian)
