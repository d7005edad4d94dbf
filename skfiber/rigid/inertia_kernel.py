r"""Compiled inertia terms of the Lagrangian equations (numba): :func:`inertia_terms`.

M and h of M q̈ + h = Q (:mod:`skfiber.rigid.system`) in one pass over the
bodies, with the centers of mass and their twists computed on the way
(gravity reuses them); :func:`inertia_terms_into` is the same loop writing
into given arrays, for the fused kernels.  Conventions: :mod:`skfiber.rigid.kernels`.
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .jet_kernels import angular_acceleration, point_acceleration, point_position, point_twists, upstream_rates
from .vector_kernels import cross3, matvec3

__all__ = ["inertia_terms", "inertia_terms_into"]


@njit(cache=True)
def inertia_terms(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream,
                  prescribed, q_joints, mass, com, inertia):  # pragma: no cover - compiled
    """M (B, n, n), h (B, n), and the centers of mass x_S (B, nb, 3) with their twists S (B, nb, nz, 3).

    With the joint twists of :func:`.pose_kernel.tree_poses`, ζ̇ = ``zd`` (B, nz), for each body b
    (the point's twists and accelerations those of :mod:`.jet_kernels`):

    * x_S = R X_S + p,  S_k = ω_k × (x_S − o_k) + v_k on its path,  J_S = S[:, q_joints],
    * J_ω = ω_k on its path,  I_w = R I Rᵀ,
    * M = Σ_b m_b J_Sᵀ J_S + J_ωᵀ I_w J_ω,
    * a⁰ = Σ_k ζ̇_k (ζ̇_k ω_k + 2 Ω⁻_k) × S_k (+ Σ_τ D_τ(x_S) if ``own``), Ω⁻_k = Σ_{j upstream of k} ζ̇_j ω_j,
    * α⁰ = Σ_k ζ̇_k Ω⁻_k × ω_k (+ own ω̇_k if ``own``),  ω = Σ_k ζ̇_k ω_k,
    * h = Σ_b m_b J_Sᵀ a⁰ + J_ωᵀ (I_w α⁰ + ω × I_w ω)   (only if ``rates``; else h = 0).

    ``own`` is False for the relative motion (time frozen): no own accelerations of prescribed
    joints (D_τ(x) = ω̇_τ × (x − o_τ) + d̈_τ − ω_τ × v_τ).
    """
    B = R.shape[0]
    nb = mass.shape[0]
    nz = omega.shape[1]
    n = q_joints.shape[0]
    dt = R.dtype
    M = np.zeros((B, n, n), dt)
    h = np.zeros((B, n), dt)
    xS = np.empty((B, nb, 3), dt)
    S = np.zeros((B, nb, nz, 3), dt)
    inertia_terms_into(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream,
                       prescribed, q_joints, mass, com, inertia, M, h, xS, S)
    return M, h, xS, S


@njit(cache=True)
def inertia_terms_into(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream,
                       prescribed, q_joints, mass, com, inertia, M, h, xS, S):  # pragma: no cover - compiled
    """The loop of :func:`inertia_terms`, adding into given outputs.

    The arguments are those of :func:`inertia_terms` followed by its outputs M (B, n, n),
    h (B, n), x_S (B, nb, 3) and S (B, nb, nz, 3), of the dtype of R; M, h and S must be zero
    on entry (x_S is overwritten).  The fused kernels (:func:`.fused_kernels.euler_terms`)
    call it with outputs of their own.
    """
    B = R.shape[0]
    nb = mass.shape[0]
    nz = omega.shape[1]
    n = q_joints.shape[0]
    dt = R.dtype
    Iw = np.empty((3, 3), dt)
    tmp = np.empty((3, 3), dt)
    Om = np.zeros((nz, 3), dt)
    wk = np.empty((nz, 3), dt)
    c = np.empty(3, dt)
    aS = np.empty(3, dt)
    al = np.empty(3, dt)
    w = np.empty(3, dt)
    Iww = np.empty(3, dt)
    mom = np.empty(3, dt)
    for x in range(B):
        if rates:
            upstream_rates(omega, upstream, zd, x, Om, wk)
        for b in range(nb):
            Rb = R[x, b]
            point_position(R, p, x, b, com[b], xS[x, b])
            point_twists(omega, origin, velocity, path, x, b, xS[x, b], S[x, b])
            # I_w = R I Rᵀ
            for i in range(3):
                for j in range(3):
                    tmp[i, j] = Rb[i, 0] * inertia[b, 0, j] + Rb[i, 1] * inertia[b, 1, j] + Rb[i, 2] * inertia[b, 2, j]
            for i in range(3):
                for j in range(3):
                    Iw[i, j] = tmp[i, 0] * Rb[j, 0] + tmp[i, 1] * Rb[j, 1] + tmp[i, 2] * Rb[j, 2]
            mb = mass[b]
            for a in range(n):
                ka = q_joints[a]
                if not path[b, ka]:
                    continue
                Sa = S[x, b, ka]
                wa = omega[x, ka]
                for e in range(a, n):  # the upper triangle, mirrored: M is exactly symmetric
                    ke = q_joints[e]
                    if not path[b, ke]:
                        continue
                    Se = S[x, b, ke]
                    we = omega[x, ke]
                    acc = mb * (Sa[0] * Se[0] + Sa[1] * Se[1] + Sa[2] * Se[2])
                    for i in range(3):
                        acc += wa[i] * (Iw[i, 0] * we[0] + Iw[i, 1] * we[1] + Iw[i, 2] * we[2])
                    M[x, a, e] += acc
                    if e != a:
                        M[x, e, a] += acc
            if not rates:
                continue
            point_acceleration(omega, origin, velocity, own_angular, own_linear, prescribed, path, zd, wk, own, x, b,
                               xS[x, b], S[x, b], aS)
            angular_acceleration(omega, own_angular, path, zd, Om, own, x, b, al)
            for i in range(3):
                w[i] = 0.0
            for k in range(nz):
                if path[b, k]:
                    for i in range(3):
                        w[i] += zd[x, k] * omega[x, k, i]
            matvec3(Iw, w, Iww)
            matvec3(Iw, al, mom)
            cross3(w[0], w[1], w[2], Iww[0], Iww[1], Iww[2], c)
            for i in range(3):
                mom[i] += c[i]
            for a in range(n):
                ka = q_joints[a]
                if not path[b, ka]:
                    continue
                Sa = S[x, b, ka]
                wa = omega[x, ka]
                h[x, a] += mb * (Sa[0] * aS[0] + Sa[1] * aS[1] + Sa[2] * aS[2]) + (
                    wa[0] * mom[0] + wa[1] * mom[1] + wa[2] * mom[2])
