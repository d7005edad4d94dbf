"""The coupled fiber–rigid residual and Newton increment as compiled kernels.

Residual (:meth:`skfiber.coupling_fast.FastCoupling.evaluate`): a handful of
calls around the stress laws, each replacing the small numpy operations
between the kernels of the general path —

* :func:`coupled_positions` — q, the body points (attachments, contact
  cylinders on bodies) with their q-derivatives, and u with u_D = c(q, t);
* :func:`euler_kinematics` — the backward-Euler rates v, a and the cable
  kinematics x_s, ẋ_s, λ, λ̇ (:func:`euler_state`: both in one call);
* :func:`fiber_residual` — inertia + internal force − external load;
* :func:`cylinder_contact` — broad and narrow phase of one contact cylinder,
  its residual added;
* :func:`coupled_rows` — the rows of q: R_rb + Cᵀ G_D + Σ Jpᵀ R_pose.

Increment:

:meth:`skfiber.coupling.CoupledProblem.solve_newton` builds the blocks of the
coupled tangent (W = ∂G/∂q, ∂R_q/∂u, ∂R_q/∂q), solves the fiber block for
the n + 1 right-hand sides [−G, W] and the n × n Schur complement for Δq.  For
a few hundred DOFs that is some thirty small numpy operations around the
kernels; :func:`coupled_increment` does the same arithmetic in one pass (the
fast path, :mod:`skfiber.coupling_fast`), with the fiber block solved by the
block-tridiagonal LU of :mod:`skfiber.block_tridiagonal` and its checks.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from . import block_tridiagonal as bt
from .cable_kernels import _kinematics, _residual
from .contact.cylinder_kernels import _broad, _points
from .coupling import _scatter_dependent
from .rigid.kernels import body_point_jets

__all__ = ["coupled_positions", "euler_kinematics", "euler_state", "fiber_residual", "cylinder_contact", "coupled_rows",
           "coupled_increment"]

#: status of :func:`coupled_increment`
OK, BLOCK_FAILED, OUTSIDE_PATTERN, SINGULAR_SCHUR = 0, 1, 2, 3
#: status of :func:`cylinder_contact`: no element in reach, in reach, a point inadmissible
NONE_IN_REACH, IN_REACH, INADMISSIBLE = 0, 1, 2

_EMPTY = np.zeros(0)


@numba.njit(cache=True)
def coupled_positions(z, N, D, P, bodies, X, parent, joint_of_body, kind, coordinate, axis, point, K, K2, slot,
                      tau_slot, pres_R, pres_v, center, path, upstream, prescribed, q_joints,
                      tau_joints):  # pragma: no cover - compiled
    """q, u and the body points of z = (u, q) at one time.

    Parameters
    ----------
    z : (N + n,)
        The Newton unknowns (its u_D entries are ignored).
    D : (3P,)
        The dependent DOFs, 3 per attachment.
    P : int
        Number of attachments: the first P rows of ``bodies``, ``X``; after them the start and end point
        of each contact cylinder on a body.
    bodies, X, parent, …
        Body index and reference coordinates of the points, then the tables of the tree at the time
        (:func:`skfiber.rigid.kernels.body_point_jets`).

    Returns
    -------
    q : (n,)
    u : (N,)  z[:N] with u_D = x − X of the attachments
    x, C, H : (P + 2c, 3), (P + 2c, 3, n), (P + 2c, 3, n, n)
        Positions, ∂/∂q and ∂²/∂q² of the points; the end point of each cylinder replaced by its axis
        a = end − start (rows P + 1, P + 3, …).
    """
    n = z.shape[0] - N
    q = np.empty((1, n))
    for i in range(n):
        q[0, i] = z[N + i]
    x, C, H, _, _, _ = body_point_jets(q, bodies, X, True, parent, joint_of_body, kind, coordinate, axis, point, K,
                                       K2, slot, tau_slot, pres_R, pres_v, center, path, upstream, prescribed,
                                       q_joints, tau_joints)
    for j in range(P + 1, bodies.shape[0], 2):
        x[j] -= x[j - 1]
        C[j] -= C[j - 1]
        H[j] -= H[j - 1]
    u = z[:N].copy()
    for k in range(P):
        for i in range(3):
            u[D[3 * k + i]] = x[k, i] - X[k, i]
    return q[0], u, x, C, H


@numba.njit(cache=True)
def euler_kinematics(u, u_prev, v_prev, dt, g, comp, dofs, reference, J):  # pragma: no cover - compiled
    """v = (u − uₙ)/Δt, a = (v − vₙ)/Δt and the cable kinematics x_s, ẋ_s, λ, λ̇ at x = X + u
    (:func:`skfiber.cable_kernels.cable_kinematics`); also min λ."""
    v = (u - u_prev) / dt
    a = (v - v_prev) / dt
    x_s, xdot_s, lam, lamdot = _kinematics(g, comp, dofs, reference + u, v, J)
    return v, a, x_s, xdot_s, lam, lamdot, lam.min()


@numba.njit(cache=True)
def euler_state(z, N, D, P, bodies, X, u_prev, v_prev, dt, g, comp, dofs, reference, J, parent, joint_of_body, kind,
                coordinate, axis, point, K, K2, slot, tau_slot, pres_R, pres_v, center, path, upstream, prescribed,
                q_joints, tau_joints):  # pragma: no cover - compiled
    """:func:`coupled_positions` and :func:`euler_kinematics` in one call (the arguments of both, the tables
    of the tree last): (q, u, x, C, H, v, a, x_s, ẋ_s, λ, λ̇, min λ)."""
    q, u, x, C, H = coupled_positions(z, N, D, P, bodies, X, parent, joint_of_body, kind, coordinate, axis, point,
                                      K, K2, slot, tau_slot, pres_R, pres_v, center, path, upstream, prescribed,
                                      q_joints, tau_joints)
    v, a, x_s, xdot_s, lam, lamdot, lam_min = euler_kinematics(u, u_prev, v_prev, dt, g, comp, dofs, reference, J)
    return q, u, x, C, H, v, a, x_s, xdot_s, lam, lamdot, lam_min


@numba.njit(cache=True)
def fiber_residual(g, comp, dofs, area, S, dx, x_s, mass, a, f_ext, load_factor):  # pragma: no cover - compiled
    """G = F_int + M a − load_factor f_ext (:func:`skfiber.cable_kernels.cable_residual`, coefficient
    area · S · dx), its norms (‖F_int‖, ‖Σ|F_int contributions|‖, ‖M a‖, ‖load_factor f_ext‖) and
    whether all of G is finite."""
    R = np.empty(f_ext.shape[0])
    nF, nA, nM, nE = _residual(g, comp, dofs, area * S * dx, x_s, mass, a, f_ext, load_factor, R)
    finite = True
    for k in range(R.shape[0]):
        if not np.isfinite(R[k]):
            finite = False
            break
    return R, nF, nA, nM, nE, finite


@numba.njit(cache=True)
def cylinder_contact(ref, u, dofs, S, dS, r0, A1, h, w, r0max, A1max, elements, point, axis, radius, finite, L,
                     kappa, gamma, R):  # pragma: no cover - compiled
    """Broad and narrow phase of one contact cylinder at u; R += its residual G_c when admissible.

    The arrays up to ``A1max`` are those of :class:`skfiber.contact.cylinder_kernels.KernelData`,
    ``elements`` the fibers' elements it acts on, ``point`` and ``axis`` its pose (raw axis a).

    Returns
    -------
    status : NONE_IN_REACH, IN_REACH or INADMISSIBLE (R unchanged)
    el : the elements in reach
    tangent, axis_norm : a/|a| and |a|
    pts, adm, force, n_active, act : those of :func:`~skfiber.contact.cylinder_kernels.contact_points`
        (empty when no element is in reach)
    norm : ‖G_c‖ (inf when not finite)
    """
    axis_norm = np.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    tangent = axis / axis_norm
    el = elements
    if el.size:
        el = _broad(ref, u, dofs, h, r0max, A1max, elements, point, tangent, radius, finite, L, _EMPTY, False, 0.0,
                    0.0)
    if el.size == 0:
        return (NONE_IN_REACH, el, tangent, axis_norm, np.empty((0, w.size, 1)), np.empty((0, w.size)),
                np.zeros(6), 0, np.zeros(0, np.int64), 0.0)
    pts, adm, res, force, n_active, act, bad = _points(ref, u, dofs, S, dS, r0, A1, h, w, el, point, tangent,
                                                       axis_norm, radius, finite, L, kappa, gamma)
    if bad >= 0 or not adm.min() > 0:
        return INADMISSIBLE, el, tangent, axis_norm, pts, adm, force, n_active, act, 0.0
    sq = 0.0
    for k in range(R.shape[0]):
        R[k] += res[k]
        sq += res[k] * res[k]
    norm = np.sqrt(sq) if np.isfinite(sq) else np.inf
    return IN_REACH, el, tangent, axis_norm, pts, adm, force, n_active, act, norm


@numba.njit(cache=True)
def coupled_rows(R, rigid_residual, C, D, P, forces, fixed):  # pragma: no cover - compiled
    """The coupled residual (N + n,): G on the fiber rows (zero on the ``fixed`` ones), and on the rows of q
    R_rb + C_Aᵀ G_D + Σ_c Jp_cᵀ R_pose,c with C_A = ∂c/∂q of the attachments (rows 0 … P − 1 of C) and
    Jp_c = ∂(y0, a)/∂q of the c-th cylinder on a body (rows P + 2c, P + 2c + 1 of C, ``forces`` (c, 6));
    also the largest norm of the forces on the cylinders, max_c |R_pose,c[:3]| (0 without)."""
    N = R.shape[0]
    n = rigid_residual.shape[0]
    out = np.empty(N + n)
    for k in range(N):
        out[k] = R[k]
    for a in range(n):
        s = 0.0
        for k in range(P):
            for i in range(3):
                s += C[k, i, a] * R[D[3 * k + i]]
        s = rigid_residual[a] + s
        for c in range(forces.shape[0]):
            t = 0.0
            for r in range(2):
                for i in range(3):
                    t += C[P + 2 * c + r, i, a] * forces[c, 3 * r + i]
            s = s + t
        out[N + a] = s
    for k in range(fixed.shape[0]):
        out[fixed[k]] = 0.0
    largest = 0.0
    for c in range(forces.shape[0]):
        f = forces[c]
        largest = max(largest, np.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]))
    return out, largest


@numba.njit(cache=True)
def coupled_increment(K, rows, cols, vals, block_index, block_fixed, block_diag_fixed, touch_flat, touch_rows,
                      touch_cols, pos, C, H, G, R_q, rigid_tangent, D, constrained, Jp, Hp, force, Gp, columns,
                      offsets, dRu, d_pose, pivot_tol, residual_tol):  # pragma: no cover - compiled
    """Δz = (Δu, Δq) of the coupled Newton system (see :meth:`CoupledProblem.solve_newton`).

    Parameters
    ----------
    K : (e, nb, nb)
        Fiber element matrices; ``rows, cols, vals`` the contact triplets.
    block_index, block_fixed, block_diag_fixed
        The fiber solver's block storage maps (:class:`skfiber.linalg.ConstrainedSolver`).
    touch_flat, touch_rows, touch_cols, pos
        The entries of K in a row or column of a dependent DOF and the position of each DOF in D
        (``CoupledProblem._dependent_index``).
    C, H : (|D|, n), (|D|, n, n)
        Attachment Jacobian and Hessian; ``G`` (N,) the fiber residual, ``R_q`` (n,) the rows of q,
        ``rigid_tangent`` (n, n) dR_rb/dq.
    D, constrained
        Dependent DOFs; prescribed and dependent DOFs (the fixed rows of the fiber block).
    Jp, Hp, force, Gp : (c, 6, n), (c, 6, n, n), (c, 6), (c, N, 6)
        Per contact cylinder on a body in contact: pose Jacobian and Hessian, R_pose and ∂G_c/∂pose;
        ``columns[offsets[i]:offsets[i + 1]]`` and ``dRu[:, offsets[i]:offsets[i + 1]]`` its ∂R_pose/∂u,
        ``d_pose`` (c, 6, 6) its ∂R_pose/∂pose.

    Returns
    -------
    dz : (N + n,)
    status : OK, BLOCK_FAILED (the block LU broke down or failed its residual check),
        OUTSIDE_PATTERN (a contact entry outside the block pattern) or SINGULAR_SCHUR.
    """
    N = G.shape[0]
    n = R_q.shape[0]
    B = bt.B
    nn = N // B
    dz = np.zeros(N + n)
    work = np.zeros(nn * 3 * B * B)
    if not bt.add_triplets(work, rows, cols, vals, N):
        return dz, OUTSIDE_PATTERN
    bt.scatter_add(work, block_index, K.reshape(-1))
    for k in range(block_fixed.shape[0]):
        work[block_fixed[k]] = 0.0
    for k in range(block_diag_fixed.shape[0]):
        work[block_diag_fixed[k]] = 1.0
    # W = K X (N, n) and Xᵀ K (n, N), X = ∂u/∂q (C on the rows D)
    W = np.zeros((N, n))
    Rq_u = np.zeros((n, N))
    _scatter_dependent(K.reshape(-1), touch_flat, touch_rows, touch_cols, pos, C, W, Rq_u)
    _scatter_dependent(vals, touch_flat[:0], rows, cols, pos, C, W, Rq_u)
    Rq_q = rigid_tangent.copy()
    nD = D.shape[0]
    for a in range(nD):
        g = G[D[a]]
        for i in range(n):
            for j in range(n):
                Rq_q[i, j] += g * H[a, i, j]
    for c in range(Jp.shape[0]):  # contact cylinders on bodies
        J = Jp[c]
        for r in range(N):
            for i in range(n):
                s = 0.0
                for k in range(6):
                    s += Gp[c, r, k] * J[k, i]
                W[r, i] += s
        for m in range(offsets[c], offsets[c + 1]):
            col = columns[m]
            pc = pos[col]
            for i in range(n):
                s = 0.0
                for k in range(6):
                    s += J[k, i] * dRu[k, m]
                Rq_u[i, col] += s
                if pc >= 0:  # Jpᵀ ∂R_pose/∂u X
                    for j in range(n):
                        Rq_q[i, j] += s * C[pc, j]
        for i in range(n):
            for j in range(n):
                s = 0.0
                for k in range(6):
                    t = 0.0
                    for l in range(6):
                        t += d_pose[c, k, l] * J[l, j]
                    s += J[k, i] * t + force[c, k] * Hp[c, k, i, j]
                Rq_q[i, j] += s
    for a in range(nD):  # Xᵀ W
        r = D[a]
        for i in range(n):
            for j in range(n):
                Rq_q[i, j] += C[a, i] * W[r, j]
    # the fiber block for [−G, W], then the Schur complement for Δq
    rhs = np.empty((N, n + 1))
    for r in range(N):
        rhs[r, 0] = -G[r]
        for i in range(n):
            rhs[r, 1 + i] = W[r, i]
    for k in range(constrained.shape[0]):
        rhs[constrained[k]] = 0.0
    A = work.reshape((nn, 3, B, B))
    R = rhs.reshape((nn, B, n + 1))
    x, info = bt.factor_solve(A, R, pivot_tol)
    if info or not bt.residual_ok(A, x, R, residual_tol):
        return dz, BLOCK_FAILED
    sol = x.reshape((N, n + 1))
    for k in range(constrained.shape[0]):
        sol[constrained[k]] = 0.0
    AY = Rq_u @ sol  # (n, n + 1)
    S = Rq_q - AY[:, 1:]
    b = -R_q - AY[:, 0]
    if n == 1:
        if S[0, 0] == 0.0 or not math.isfinite(S[0, 0]):
            return dz, SINGULAR_SCHUR
        dq = b / S[0, 0]
    elif n == 0:
        dq = np.zeros(0)
    else:
        dq = np.linalg.solve(S, b)
    for r in range(N):
        s = sol[r, 0]
        for i in range(n):
            s -= sol[r, 1 + i] * dq[i]
        dz[r] = s
    for a in range(nD):
        s = 0.0
        for i in range(n):
            s += C[a, i] * dq[i]
        dz[D[a]] = s
    for i in range(n):
        dz[N + i] = dq[i]
    return dz, OK
