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
  (:meth:`~skfiber.rigid.RigidSystem._inertia`);
* :func:`point_jets` — positions of body points with their q- and
  t-derivatives up to the second order (:func:`~skfiber.rigid.evaluate_points`);
* :func:`point_kinematics` — positions, Jacobians and velocities of the
  points force elements register (``ctx.position`` … of the force context);
* :func:`euler_terms` and :func:`body_point_jets` — the above fused into one
  call each for the hot paths (:func:`~skfiber.rigid.rigid_step`,
  :func:`~skfiber.rigid.evaluate_points`): at a few bodies the cost of a
  kernel is its call (the arguments and the returned arrays), not its loops.

The formulas are those of :mod:`skfiber.rigid.kinematics` and
:mod:`skfiber.rigid.system` (see there); the numpy methods of
:class:`~skfiber.rigid.kinematics.Kinematics` (``twists``,
``second_derivatives``, ``velocity_product``, …) stay the definition, and the
tests compare the kernels with them.  The kernels are compiled on first use
for each dtype (a few seconds each) and cached on disk (``cache=True``).

Conventions: B configurations, nb bodies (index nb is the ground), nz
moving joints, n coordinates, m prescribed joints.  All arrays are C
contiguous; the tables of the tree are those of
:class:`~skfiber.rigid.tree.Tree`.
"""
from __future__ import annotations

import numba
import numpy as np

from . import tree as _tree

__all__ = ["tree_poses", "inertia_terms", "point_jets", "point_kinematics", "euler_terms", "euler_step_terms",
           "body_point_jets"]

# joint kinds of skfiber.rigid.tree, repeated here: numba's cache of this module does not see other files
_REVOLUTE, _PRISMATIC = 0, 1
if (_tree.REVOLUTE, _tree.PRISMATIC) != (_REVOLUTE, _PRISMATIC):  # pragma: no cover - a guard for edits
    raise ImportError("skfiber.rigid.kernels: the joint kinds differ from skfiber.rigid.tree")


@numba.njit(cache=True)
def _mv(R, x, out):  # pragma: no cover - compiled
    """out = R x (3 × 3 times 3)."""
    for i in range(3):
        out[i] = R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]


@numba.njit(cache=True)
def _cross(a0, a1, a2, b0, b1, b2, out):  # pragma: no cover - compiled
    """out = a × b."""
    out[0] = a1 * b2 - a2 * b1
    out[1] = a2 * b0 - a0 * b2
    out[2] = a0 * b1 - a1 * b0


@numba.njit(cache=True)
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


@numba.njit(cache=True)
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
                _mv(Rp, axis[k], omega[x, k])
                _mv(Rp, P, origin[x, k])
                _mv(Rp, y, p[x, b])
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
                _mv(Rp, y, p[x, b])
                for i in range(3):
                    p[x, b, i] += pp[i]
                _mv(Rp, axis[k], velocity[x, k])
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
                _mv(Rp, y, p[x, b])
                for i in range(3):
                    w[i] = O[i] + V[0, i]
                _mv(Rp, w, origin[x, k])
                for i in range(3):
                    p[x, b, i] += pp[i]
                    origin[x, k, i] += pp[i]
                _mv(Rp, V[1], omega[x, k])
                _mv(Rp, V[3], velocity[x, k])
                _mv(Rp, V[2], own_angular[x, k])
                _mv(Rp, V[4], own_linear[x, k])


@numba.njit(cache=True)
def inertia_terms(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream,
                  prescribed, q_joints, mass, com, inertia):  # pragma: no cover - compiled
    """M (B, n, n), h (B, n), and the centers of mass x_S (B, nb, 3) with their twists S (B, nb, nz, 3).

    With the joint twists of :func:`tree_poses`, ζ̇ = ``zd`` (B, nz), for each body b:

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
    _inertia(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream, prescribed,
             q_joints, mass, com, inertia, M, h, xS, S)
    return M, h, xS, S


@numba.njit(cache=True)
def _inertia(R, p, omega, origin, velocity, own_angular, own_linear, zd, own, rates, path, upstream, prescribed,
             q_joints, mass, com, inertia, M, h, xS, S):  # pragma: no cover - compiled
    """The loop of :func:`inertia_terms`, writing into its outputs (M, h, S zero on entry)."""
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
    r = np.empty(3, dt)
    for x in range(B):
        if rates:
            for k in range(nz):  # Ω⁻_k and w_k = ζ̇_k ω_k + 2 Ω⁻_k
                for i in range(3):
                    Om[k, i] = 0.0
                for j in range(nz):
                    if upstream[j, k]:
                        for i in range(3):
                            Om[k, i] += zd[x, j] * omega[x, j, i]
                for i in range(3):
                    wk[k, i] = zd[x, k] * omega[x, k, i] + 2.0 * Om[k, i]
        for b in range(nb):
            Rb = R[x, b]
            _mv(Rb, com[b], xS[x, b])
            for i in range(3):
                xS[x, b, i] += p[x, b, i]
                r[i] = xS[x, b, i]
            for k in range(nz):
                if path[b, k]:
                    o = origin[x, k]
                    om = omega[x, k]
                    _cross(om[0], om[1], om[2], r[0] - o[0], r[1] - o[1], r[2] - o[2], c)
                    for i in range(3):
                        S[x, b, k, i] = c[i] + velocity[x, k, i]
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
            for i in range(3):
                aS[i] = 0.0
                al[i] = 0.0
                w[i] = 0.0
            for k in range(nz):
                if not path[b, k]:
                    continue
                z = zd[x, k]
                Sk = S[x, b, k]
                om = omega[x, k]
                _cross(wk[k, 0], wk[k, 1], wk[k, 2], Sk[0], Sk[1], Sk[2], c)
                for i in range(3):
                    aS[i] += z * c[i]
                    w[i] += z * om[i]
                _cross(Om[k, 0], Om[k, 1], Om[k, 2], om[0], om[1], om[2], c)
                for i in range(3):
                    al[i] += z * c[i]
                if own:
                    for i in range(3):
                        al[i] += own_angular[x, k, i]
            if own:  # D_τ(x_S) of the prescribed joints on the path
                for k in range(nz):
                    if not (path[b, k] and prescribed[k]):
                        continue
                    oa = own_angular[x, k]
                    o = origin[x, k]
                    om = omega[x, k]
                    v = velocity[x, k]
                    _cross(oa[0], oa[1], oa[2], r[0] - o[0], r[1] - o[1], r[2] - o[2], c)
                    for i in range(3):
                        aS[i] += c[i] + own_linear[x, k, i]
                    _cross(om[0], om[1], om[2], v[0], v[1], v[2], c)
                    for i in range(3):
                        aS[i] -= c[i]
            _mv(Iw, w, Iww)
            _mv(Iw, al, mom)
            _cross(w[0], w[1], w[2], Iww[0], Iww[1], Iww[2], c)
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


@numba.njit(cache=True)
def point_jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
               q_joints, tau_joints, hessian):  # pragma: no cover - compiled
    """Positions and q-, t-derivatives of body points at one configuration (batch entry 0).

    Parameters
    ----------
    R, p, omega, origin, velocity, own_angular, own_linear
        Poses and joint twists of :func:`tree_poses` (only entry 0 of the batch is used).
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

    With the second derivatives ∂²x/∂ζ_j∂ζ_k = ω_j × s_k (j strictly upstream of k, symmetric) and
    ω_k × s_k + D_k on the diagonal (D_k for prescribed joints, see :mod:`.kinematics`).
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


@numba.njit(cache=True)
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
    c = np.empty(3, dt)
    for pt in range(P):
        b = bodies[pt]
        _mv(R[0, b], X[pt], x[pt])
        for i in range(3):
            x[pt, i] += p[0, b, i]
        r = x[pt]
        for k in range(nz):
            for i in range(3):
                S[k, i] = 0.0
            if path[b, k]:
                o = origin[0, k]
                om = omega[0, k]
                _cross(om[0], om[1], om[2], r[0] - o[0], r[1] - o[1], r[2] - o[2], c)
                for i in range(3):
                    S[k, i] = c[i] + velocity[0, k, i]
        for a in range(n):
            for i in range(3):
                C[pt, i, a] = S[q_joints[a], i]
        for t in range(m):
            for i in range(3):
                x_t[pt, i] += S[tau_joints[t], i]
        if not (hessian or m):
            continue
        for k in range(nz):
            for j in range(nz):
                for i in range(3):
                    H2[j, k, i] = 0.0
        for k in range(nz):
            if not path[b, k]:
                continue
            for j in range(nz):
                if j == k or upstream[j, k]:
                    om = omega[0, j]
                    _cross(om[0], om[1], om[2], S[k, 0], S[k, 1], S[k, 2], c)
                    for i in range(3):
                        H2[j, k, i] = c[i]
                        H2[k, j, i] = c[i]
            if prescribed[k]:  # D_k = ω̇_k × (x − o_k) + d̈_k − ω_k × v_k
                oa = own_angular[0, k]
                o = origin[0, k]
                _cross(oa[0], oa[1], oa[2], r[0] - o[0], r[1] - o[1], r[2] - o[2], c)
                for i in range(3):
                    H2[k, k, i] += c[i] + own_linear[0, k, i]
                om = omega[0, k]
                v = velocity[0, k]
                _cross(om[0], om[1], om[2], v[0], v[1], v[2], c)
                for i in range(3):
                    H2[k, k, i] -= c[i]
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


@numba.njit(cache=True)
def euler_terms(q, q_prev, p_prev, dt, g, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints, tau_joints, mass, com,
                inertia):  # pragma: no cover - compiled
    """The backward-Euler balance M a + h − Q_g of a batch of configurations q⁺ in one call.

    With p⁺ = (q⁺ − qₙ)/Δt and a = (p⁺ − pₙ)/Δt: :func:`tree_poses` and
    :func:`inertia_terms` fused (ζ̇ = p⁺ on the coordinates, 1 on the prescribed
    joints), and the weight Q_g = Σ_b m_b J_Sbᵀ g, so that the step residual of
    a system whose only force element is gravity takes one compiled call
    (:func:`skfiber.rigid.integrate._fast_balance`).  The arguments after ``g``
    are those of :func:`tree_poses` and :func:`inertia_terms`.

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
    _inertia(R, p, omega, origin, velocity, own_angular, own_linear, zd, True, True, path, upstream, prescribed,
             q_joints, mass, com, inertia, M, F[1], xS, S)
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


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def body_point_jets(q, bodies, X, hessian, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                    tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints,
                    tau_joints):  # pragma: no cover - compiled
    """:func:`tree_poses` and :func:`point_jets` fused: the jets of body points at one configuration q (1, n).

    The arguments are those of the two kernels (the tables of the tree last); returns those of
    :func:`point_jets`.
    """
    R, p, omega, origin, velocity, own_angular, own_linear = tree_poses(
        q[:1], parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center)
    return point_jets(R, p, bodies, X, path, omega, origin, velocity, own_angular, own_linear, upstream, prescribed,
                      q_joints, tau_joints, hessian)


@numba.njit(cache=True)
def point_kinematics(R, p, omega, origin, velocity, bodies, X, path, q_joints, zd,
                     rates):  # pragma: no cover - compiled
    """Positions, Jacobians and velocities of body points at a batch of configurations.

    What force elements ask of their registered points (``ctx.position``,
    ``ctx.jacobian``, ``ctx.velocity`` of :class:`~skfiber.rigid.system._Context`);
    the numpy definitions are :meth:`Kinematics.positions <skfiber.rigid.kinematics.Kinematics.positions>`
    and :meth:`~skfiber.rigid.kinematics.Kinematics.twists`.

    Parameters
    ----------
    R, p, omega, origin, velocity
        Poses and joint twists of :func:`tree_poses` (B configurations).
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
    c = np.empty(3, dt)
    for y in range(B):
        for pt in range(P):
            b = bodies[pt]
            r = x[y, pt]
            _mv(R[y, b], X[pt], r)
            for i in range(3):
                r[i] += p[y, b, i]
            for k in range(nz):
                for i in range(3):
                    S[k, i] = 0.0
                if path[b, k]:
                    o = origin[y, k]
                    om = omega[y, k]
                    _cross(om[0], om[1], om[2], r[0] - o[0], r[1] - o[1], r[2] - o[2], c)
                    for i in range(3):
                        S[k, i] = c[i] + velocity[y, k, i]
                    if rates:
                        for i in range(3):
                            v[y, pt, i] += S[k, i] * zd[y, k]
            for a in range(n):
                for i in range(3):
                    C[y, pt, i, a] = S[q_joints[a], i]
    return x, C, v
