"""The coupled fiber–rigid residual and Newton increment as compiled kernels.

Residual (:meth:`skfiber.coupling_fast.FastCoupling.evaluate`): a handful of
calls around the model's generated form kernel (:mod:`skfiber.compile`, the
fibers' residual terms and element tangent), each replacing the small numpy
operations between the kernels of the general path —

* :func:`coupled_positions` — q, the body points (attachments, contact
  cylinders on bodies) with their q-derivatives, and u with u_D = c(q, t);
* :func:`cylinder_contact` — broad and narrow phase of one contact cylinder,
  its residual added;
* :func:`coupled_rows` — the rows of q: R_rb + Cᵀ G_D + Σ Jpᵀ R_pose.

Safeguard: the ``safeguard="trial"`` step bound of one cylinder is
:func:`skfiber.contact.cylinder_safeguard.trial_step`, the same compiled call
for this path and :meth:`skfiber.contact.cylinder.CylinderContact.max_step`.

Increment:

:meth:`skfiber.coupling.CoupledProblem.solve_newton` builds the blocks of the
coupled tangent (W = ∂G/∂q, ∂R_q/∂u, ∂R_q/∂q; the chain rule is
:func:`coupled_chain_rule`), solves the fiber block for the n + 1 right-hand
sides [−G, W] and the n × n Schur complement for Δq with numpy;
:func:`coupled_increment` does the same arithmetic in one pass (the
fast path, :mod:`skfiber.coupling_fast`), with the fiber block solved by the
block-tridiagonal LU of :mod:`skfiber.block_tridiagonal` and its checks.
:func:`newton_increment` computes the derivatives of at most one contact in
touch too, so that a Newton step with at most one contact is one call.
"""
from __future__ import annotations

import math

import numpy as np

from .core.jit import njit
from . import block_tridiagonal as bt
from .coupled_krylov import GMRES_ACCEPT, GMRES_MAX_ITERATIONS, GMRES_TOL, coupled_gmres
from .contact.cylinder_kernels import broad_phase_loop, contact_derivatives_loop, contact_points_loop
from .rigid.kernels import body_point_jets

__all__ = ["coupled_positions", "cylinder_contact", "coupled_rows", "coupled_chain_rule", "coupled_increment",
           "schur_solve", "back_substitute", "dependent_increment",
           "newton_increment", "scatter_dependent", "scatter_dependent_blocks", "stacked_pose_terms"]

#: status of :func:`coupled_increment`
OK, BLOCK_FAILED, OUTSIDE_PATTERN, SINGULAR_SCHUR, KRYLOV_FAILED = 0, 1, 2, 3, 4
#: status of :func:`cylinder_contact`: no element in reach, in reach, a point inadmissible
NONE_IN_REACH, IN_REACH, INADMISSIBLE = 0, 1, 2


@njit(cache=True)
def scatter_dependent(values, index, rows, cols, pos, C, KX, XK):  # pragma: no cover - compiled
    """Add the matrix entries K[rows, cols] = values[index] to KX = K X and XK = Xᵀ K.

    X (N, n) is C (|D|, n) on the dependent DOFs (``pos`` ≥ 0: the row of C) and zero elsewhere, so an
    entry contributes K[r, c] C[pos c] to row r of KX if c is dependent, and K[r, c] C[pos r] to column c
    of XK if r is.  ``index`` empty: values[k] is the k-th entry.
    """
    for k in range(rows.shape[0]):
        _add_dependent(values[index[k]] if index.shape[0] else values[k], rows[k], cols[k], pos, C, KX, XK)


@njit(inline="always", cache=True)
def _add_dependent(v, r, c, pos, C, KX, XK):  # pragma: no cover - compiled
    """One entry K[r, c] = v into KX and XK (:func:`scatter_dependent`)."""
    pc, pr = pos[c], pos[r]
    if pc >= 0:
        for a in range(C.shape[1]):
            KX[r, a] += v * C[pc, a]
    if pr >= 0:
        for a in range(C.shape[1]):
            XK[a, c] += v * C[pr, a]


@njit(cache=True)
def scatter_dependent_blocks(row_dofs, col_dofs, blocks, pos, C, KX, XK):  # pragma: no cover - compiled
    """:func:`scatter_dependent` for dense blocks K[row_dofs[g], col_dofs[g]] = blocks[g]."""
    nb = row_dofs.shape[1]
    for g in range(row_dofs.shape[0]):
        touches = False  # most blocks have no dependent DOF: skip them after 2 nb lookups
        for a in range(nb):
            if pos[row_dofs[g, a]] >= 0 or pos[col_dofs[g, a]] >= 0:
                touches = True
                break
        if not touches:
            continue
        for a in range(nb):
            for b in range(nb):
                _add_dependent(blocks[g, a, b], row_dofs[g, a], col_dofs[g, b], pos, C, KX, XK)


@njit(cache=True)
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
    # (np.bool_: a plain True would compile the callee once more, for that literal value)
    x, C, H, _, _, _ = body_point_jets(q, bodies, X, np.bool_(True), parent, joint_of_body, kind, coordinate, axis,
                                       point, K, K2, slot, tau_slot, pres_R, pres_v, center, path, upstream,
                                       prescribed, q_joints, tau_joints)
    for j in range(P + 1, bodies.shape[0], 2):
        x[j] -= x[j - 1]
        C[j] -= C[j - 1]
        H[j] -= H[j - 1]
    u = z[:N].copy()
    for k in range(P):
        for i in range(3):
            u[D[3 * k + i]] = x[k, i] - X[k, i]
    return q[0], u, x, C, H


@njit(cache=True)
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
        # (a fresh array and np.bool_: a global array is read-only and a constant literal, either of which would
        # compile broad_phase_loop once more)
        el = broad_phase_loop(ref, u, dofs, h, r0max, A1max, elements, point, tangent, radius, finite, L,
                              np.empty(0), np.bool_(False), 0.0, 0.0)
    if el.size == 0:
        return (NONE_IN_REACH, el, tangent, axis_norm, np.empty((0, w.size, 1)), np.empty((0, w.size)),
                np.zeros(6), 0, np.zeros(0, np.int64), 0.0)
    pts, adm, res, force, n_active, act, bad = contact_points_loop(ref, u, dofs, S, dS, r0, A1, h, w, el, point, tangent,
                                                       axis_norm, radius, finite, L, kappa, gamma)
    if bad >= 0 or not adm.min() > 0:
        return INADMISSIBLE, el, tangent, axis_norm, pts, adm, force, n_active, act, 0.0
    sq = 0.0
    for k in range(R.shape[0]):
        R[k] += res[k]
        sq += res[k] * res[k]
    norm = np.sqrt(sq) if np.isfinite(sq) else np.inf
    return IN_REACH, el, tangent, axis_norm, pts, adm, force, n_active, act, norm


@njit(cache=True)
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


@njit(cache=True)
def coupled_chain_rule(W, Rq_u, rigid_tangent, C, H, G, D, pos, Jp, Hp, force, Gp, columns, offsets, dRu,
                       d_pose):  # pragma: no cover - compiled
    """The coupled tangent's blocks by the chain rule through u_D = c(q) and the poses of the cylinders on
    bodies (paper eq. 64 with eqs. 59 and 51; the tangent of :func:`coupled_rows`): the one definition that
    the general path, the fast path and :func:`coupled_increment` share.

    On entry ``W`` (N, n) = K X and ``Rq_u`` (n, N) = Xᵀ K, X = ∂u/∂q (C on the rows D, zero elsewhere),
    K the fiber tangent (:func:`scatter_dependent`); on return W = ∂G/∂q and Rq_u = ∂R_q/∂u with the
    cylinders' terms added:

        W    += Σ_c Gp_c Jp_c
        Rq_u += Σ_c Jp_cᵀ ∂R_pose,c/∂u
        ∂R_q/∂q = dR_rb/dq + Σ_a G_D,a ∂²c_a/∂q² + Σ_c [Jp_cᵀ (∂R_pose,c/∂u X + ∂R_pose,c/∂pose Jp_c)
                  + Σ_k R_pose,c,k ∂²pose_k/∂q²] + Xᵀ W      (returned, (n, n))

    Parameters
    ----------
    W, Rq_u : (N, n), (n, N)
        Changed in place (see above).
    rigid_tangent : (n, n)
        dR_rb/dq.
    C, H : (nD, n), (nD, n, n)
        ∂c/∂q and ∂²c/∂q² of the dependent DOFs ``D`` (nD,); ``G`` (N,) the fiber residual; ``pos`` (N,)
        the position of each DOF in D (−1 if not dependent).
    Jp, Hp, force, Gp : (c, 6, n), (c, 6, n, n), (c, 6), (c, N, 6)
        Per contact cylinder on a body: the pose (y0, a) Jacobian and Hessian, R_pose and ∂G/∂pose;
        ``columns[offsets[c]:offsets[c + 1]]`` and ``dRu[:, offsets[c]:offsets[c + 1]]`` its ∂R_pose/∂u,
        ``d_pose`` (c, 6, 6) its ∂R_pose/∂pose.

    Returns
    -------
    Rq_q : (n, n)
        ∂R_q/∂q.
    """
    N, n = W.shape
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
    return Rq_q


def stacked_pose_terms(N: int, n: int, jets, forces, derivatives) -> tuple:
    """The pose arguments ``(Jp, Hp, force, Gp, columns, offsets, dRu, d_pose)`` of :func:`coupled_chain_rule` and
    :func:`coupled_increment` from per-cylinder lists (one entry per contact cylinder on a body).

    Parameters
    ----------
    N, n : int
        The numbers of fiber DOFs and of rigid coordinates.
    jets : list of (Jp (6, n), Hp (6, n, n))
        The pose's Jacobian and Hessian in q.
    forces : list of (6,)
        R_pose, the contact's reaction conjugate to the pose.
    derivatives : list of (Gp (N, 6), columns (k,), dRu (6, k), d_pose (6, 6))
        ∂G/∂pose, ∂R_pose/∂u on its columns, ∂R_pose/∂pose.

    Returns
    -------
    tuple
        Jp (c, 6, n), Hp (c, 6, n, n), force (c, 6), Gp (c, N, 6), columns (k₁ + … + k_c,), offsets (c + 1,),
        dRu (6, k₁ + … + k_c), d_pose (c, 6, 6), C-contiguous, float64 and int64.
    """
    if not jets:
        return (np.zeros((0, 6, n)), np.zeros((0, 6, n, n)), np.zeros((0, 6)), np.zeros((0, N, 6)),
                np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((6, 0)), np.zeros((0, 6, 6)))
    Jp = np.array([jp for jp, _ in jets], dtype=float)
    Hp = np.array([hp for _, hp in jets], dtype=float).reshape(len(jets), 6, n, n)
    force = np.array(forces, dtype=float).reshape(len(jets), 6)
    Gp = np.array([d[0] for d in derivatives], dtype=float)
    columns = np.concatenate([np.asarray(d[1], dtype=np.int64) for d in derivatives])
    offsets = np.cumsum([0] + [len(d[1]) for d in derivatives]).astype(np.int64)
    dRu = np.ascontiguousarray(np.concatenate([np.asarray(d[2], dtype=float).reshape(6, -1) for d in derivatives],
                                              axis=1))
    d_pose = np.array([d[3] for d in derivatives], dtype=float)
    return Jp, Hp, force, Gp, columns, offsets, dRu, d_pose


@njit(cache=True)
def coupled_increment(K, rows, cols, vals, block_rows, block_cols, blocks, block_index, block_fixed, block_diag_fixed, touch_flat, touch_rows,
                      touch_cols, pos, C, H, G, R_q, rigid_tangent, D, constrained, Jp, Hp, force, Gp, columns,
                      offsets, dRu, d_pose, pivot_tol, residual_tol, linear_tol):  # pragma: no cover - compiled
    """Δz = (Δu, Δq) of the coupled Newton system (see :meth:`CoupledProblem.solve_newton`).

    Parameters
    ----------
    K : (e, nb, nb)
        Fiber element matrices; ``rows, cols, vals`` the contact triplets (in the block pattern).
    block_rows, block_cols, blocks : (g, nc), (g, nc), (g, nc, nc)
        Contact tangent blocks K[block_rows[i], block_cols[i]] += blocks[i] (fiber–fiber contact; may couple
        different fibers).
    block_index, block_fixed, block_diag_fixed
        The fiber solver's block storage maps (:class:`skfiber.linalg.ConstrainedSolver`).
    touch_flat, touch_rows, touch_cols, pos
        The entries of K in a row or column of a dependent DOF and the position of each DOF in D
        (``CoupledProblem.touch_entries`` and ``dependent_rows``).
    C, H : (|D|, n), (|D|, n, n)
        Attachment Jacobian and Hessian; ``G`` (N,) the fiber residual, ``R_q`` (n,) the rows of q,
        ``rigid_tangent`` (n, n) dR_rb/dq.
    D, constrained
        Dependent DOFs; prescribed and dependent DOFs (the fixed rows of the fiber block).
    Jp, Hp, force, Gp : (c, 6, n), (c, 6, n, n), (c, 6), (c, N, 6)
        Per contact cylinder on a body in contact: pose Jacobian and Hessian, R_pose and ∂G_c/∂pose;
        ``columns[offsets[i]:offsets[i + 1]]`` and ``dRu[:, offsets[i]:offsets[i + 1]]`` its ∂R_pose/∂u,
        ``d_pose`` (c, 6, 6) its ∂R_pose/∂pose.
    pivot_tol, residual_tol
        The block LU's pivot and residual checks (:func:`~skfiber.block_tridiagonal.factor`,
        :func:`~skfiber.block_tridiagonal.residual_ok`).
    linear_tol : float
        With fibers in touch: the residual ‖T Δz + b‖ that GMRES may leave (absolute; Newton passes a
        small fraction of its own tolerance, an inexact Newton step).  0: to round-off
        (:data:`~skfiber.coupled_krylov.GMRES_TOL` relative).  The direct block elimination (no fibers in
        touch) is exact whatever it is.

    Returns
    -------
    dz : (N + n,)
    status : OK, BLOCK_FAILED (the block LU of the in-pattern part broke down or failed its residual
        check), OUTSIDE_PATTERN (a contact triplet outside the block pattern, a block outside the matrix),
        SINGULAR_SCHUR or KRYLOV_FAILED
        (fibers in touch and GMRES did not reach :data:`~skfiber.coupled_krylov.GMRES_ACCEPT`, or twice
        ``linear_tol``, whichever is larger).
    iterations : int
        GMRES iterations (0 when no entry lies outside the block pattern).

    Notes
    -----
    Contact blocks inside the block pattern are summed into the block storage; those outside it (fibers
    in touch with each other) form E, and the system is then solved by
    :func:`~skfiber.coupled_krylov.coupled_gmres` preconditioned by the block elimination without E.
    """
    N = G.shape[0]
    n = R_q.shape[0]
    B = bt.B
    nn = N // B
    dz = np.zeros(N + n)
    work = np.zeros(nn * 3 * B * B)
    if not bt.add_triplets(work, rows, cols, vals, N):
        return dz, OUTSIDE_PATTERN, 0
    fixed = np.zeros(N, np.bool_)
    for k in range(constrained.shape[0]):
        fixed[constrained[k]] = True
    inside, outside, e_blocks = bt.split_blocks(work, block_rows, block_cols, blocks, N, fixed)
    if not inside:
        return dz, OUTSIDE_PATTERN, 0
    bt.scatter_add(work, block_index, K.reshape(-1))
    for k in range(block_fixed.shape[0]):
        work[block_fixed[k]] = 0.0
    for k in range(block_diag_fixed.shape[0]):
        work[block_diag_fixed[k]] = 1.0
    # W = K X (N, n) and Xᵀ K (n, N), X = ∂u/∂q (C on the rows D)
    W = np.zeros((N, n))
    Rq_u = np.zeros((n, N))
    scatter_dependent(K.reshape(-1), touch_flat, touch_rows, touch_cols, pos, C, W, Rq_u)
    scatter_dependent(vals, touch_flat[:0], rows, cols, pos, C, W, Rq_u)
    scatter_dependent_blocks(block_rows, block_cols, blocks, pos, C, W, Rq_u)
    Rq_q = coupled_chain_rule(W, Rq_u, rigid_tangent, C, H, G, D, pos, Jp, Hp, force, Gp, columns, offsets, dRu,
                              d_pose)
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
    LU, piv, X, info = bt.factor(A, pivot_tol)
    if info:
        return dz, BLOCK_FAILED, 0
    x = bt.solve_factored(A, LU, piv, X, R)
    if not bt.residual_ok(A, x, R, residual_tol):
        return dz, BLOCK_FAILED, 0
    sol = x.reshape((N, n + 1))
    for k in range(constrained.shape[0]):
        sol[constrained[k]] = 0.0
    dq, S, regular = schur_solve(sol, Rq_u, Rq_q, R_q)
    if not regular:
        return dz, SINGULAR_SCHUR, 0
    back_substitute(sol, dq, dz)
    iterations = 0
    if outside.shape[0]:  # fibers in touch: GMRES on the whole system, from this solution (skfiber.coupled_krylov)
        for i in range(n):
            dz[N + i] = dq[i]
        full_b = np.empty(N + n)
        for r in range(N):
            full_b[r] = rhs[r, 0]
        for i in range(n):
            full_b[N + i] = -R_q[i]
        S_inv = np.linalg.inv(S) if n > 1 else (1.0 / S if n == 1 else S)
        Y_w = np.ascontiguousarray(sol[:, 1:])
        W_fixed = np.ascontiguousarray(rhs[:, 1:])
        b_norm = math.sqrt(np.dot(full_b, full_b))
        tol, accept = GMRES_TOL, GMRES_ACCEPT
        if linear_tol > 0.0 and b_norm > 0.0:  # an inexact Newton step: GMRES stops at linear_tol
            tol = max(tol, linear_tol / b_norm)
            accept = max(accept, 2.0 * linear_tol / b_norm)
        dz, iterations, res = coupled_gmres(A, LU, piv, X, block_rows[outside], block_cols[outside], e_blocks, W_fixed, Rq_u, Rq_q, S_inv, Y_w,
                                            full_b, dz, tol, GMRES_MAX_ITERATIONS)
        if not res <= accept:
            return dz, KRYLOV_FAILED, iterations
        for i in range(n):
            dq[i] = dz[N + i]
    dependent_increment(dz, C, D, dq)
    return dz, OK, iterations


@njit(cache=True)
def schur_solve(sol, Rq_u, Rq_q, R_q):  # pragma: no cover - compiled
    """(Δq, S, regular) of the block elimination, from the fiber block's solution ``sol`` = K_II⁻¹ [−G, W]
    (N, n + 1) with its fixed rows 0: the Schur complement S = ∂R_q/∂q − ∂R_q/∂u Y and
    Δq = S⁻¹ (−R_q − ∂R_q/∂u x0) (``regular`` False for a zero or non-finite S when n = 1; for n > 1 a singular
    S raises ``numpy.linalg.LinAlgError``).  The general path (``CoupledProblem.solve_blocks``) and
    :func:`coupled_increment` both call it."""
    n = R_q.shape[0]
    AY = Rq_u @ sol  # (n, n + 1)
    S = Rq_q - AY[:, 1:]
    b = -R_q - AY[:, 0]
    if n == 1:
        if S[0, 0] == 0.0 or not math.isfinite(S[0, 0]):
            return np.zeros(1), S, False
        return b / S[0, 0], S, True
    if n == 0:
        return np.zeros(0), S, True
    return np.linalg.solve(S, b), S, True


@njit(cache=True)
def back_substitute(sol, dq, dz):  # pragma: no cover - compiled
    """dz[:N] = x0 − Y Δq: the fibers' increment from the block elimination (``sol`` = [x0, Y], N rows)."""
    n = dq.shape[0]
    for r in range(sol.shape[0]):
        s = sol[r, 0]
        for i in range(n):
            s -= sol[r, 1 + i] * dq[i]
        dz[r] = s


@njit(cache=True)
def dependent_increment(dz, C, D, dq):  # pragma: no cover - compiled
    """dz[D] = C Δq (the attached ends follow their bodies, δu_D = C δq, paper eq. 59) and dz[N:] = Δq."""
    n = dq.shape[0]
    N = dz.shape[0] - n
    for a in range(D.shape[0]):
        s = 0.0
        for i in range(n):
            s += C[a, i] * dq[i]
        dz[D[a]] = s
    for i in range(n):
        dz[N + i] = dq[i]


@njit(cache=True)
def newton_increment(K, pts, elements, act,
                     contact_dofs, contact_S, contact_dS, tangent, axis_norm, row, force, block_index, block_fixed,
                     block_diag_fixed, touch_flat, touch_rows, touch_cols, pos, points_C, points_H, P, G, R_q,
                     rigid_tangent, D, constrained, pivot_tol, residual_tol):  # pragma: no cover - compiled
    """:func:`coupled_increment` with its inputs computed in the same call, for at most one contact in touch.

    ``K`` are the fiber element matrices (the model's generated form kernel); the contact's triplets and pose derivatives are
    :func:`skfiber.contact.cylinder_kernels.contact_derivatives` of ``pts`` … ``axis_norm`` (``act``
    empty: no contact in touch).  ``row`` is the cylinder's start point among the body points (−1: a
    cylinder not on a body) and ``force`` its R_pose; ``points_C``, ``points_H`` (P + 2c, 3, n),
    (P + 2c, 3, n, n) are the jets of the body points (the first P the attachments).  The arithmetic is
    that of the separate calls, so Δz is the same bit for bit.  Returns (Δz, status, GMRES iterations).
    """
    N = G.shape[0]
    n = R_q.shape[0]
    C = np.empty((3 * P, n))
    H = np.empty((3 * P, n, n))
    for a in range(P):
        for i in range(3):
            C[3 * a + i] = points_C[a, i]
            H[3 * a + i] = points_H[a, i]
    on_body = row >= 0 and act.size > 0
    c = 1 if on_body else 0
    Jp = np.empty((c, 6, n))
    Hp = np.empty((c, 6, n, n))
    f = np.empty((c, 6))
    if act.size > 0:
        rows, cols, vals, Dfib, columns, dRu, dp = contact_derivatives_loop(pts, elements, act, contact_dofs, contact_S,
                                                                 contact_dS, tangent, axis_norm, N)
    else:
        rows, cols, vals = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        Dfib, columns, dRu, dp = np.zeros((N, 6)), np.zeros(0, np.int64), np.zeros((6, 0)), np.zeros((6, 6))
    if on_body:
        for k in range(6):
            f[0, k] = force[k]
            Jp[0, k] = points_C[row + k // 3, k % 3]
            Hp[0, k] = points_H[row + k // 3, k % 3]
    offsets = np.zeros(c + 1, np.int64)
    offsets[c] = columns.size if on_body else 0
    no_dofs = np.zeros((0, 12), np.int64)
    no_blocks = np.zeros((0, 12, 12))
    body_columns = columns if on_body else columns[:0]
    body_dRu = dRu if on_body else dRu[:, :0]
    return coupled_increment(K, rows, cols, vals, no_dofs, no_dofs, no_blocks, block_index, block_fixed,
                             block_diag_fixed, touch_flat, touch_rows, touch_cols, pos, C, H, G, R_q, rigid_tangent,
                             D, constrained, Jp, Hp, f, Dfib.reshape((1, N, 6))[:c], body_columns, offsets, body_dRu,
                             dp.reshape((1, 6, 6))[:c], pivot_tol, residual_tol, 0.0)
