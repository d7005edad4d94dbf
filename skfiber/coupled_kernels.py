"""The Newton increment of the coupled fiber–rigid system in one compiled call.

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
from .coupling import _scatter_dependent

__all__ = ["coupled_increment"]

#: status of :func:`coupled_increment`
OK, BLOCK_FAILED, OUTSIDE_PATTERN, SINGULAR_SCHUR = 0, 1, 2, 3


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
