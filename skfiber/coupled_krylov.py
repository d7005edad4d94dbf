"""The coupled Newton system with fibers in touch: GMRES on the block elimination.

What
----
The coupled Newton system (:meth:`skfiber.coupling.CoupledProblem.solve_newton`)

    [ K     W    ] [Δu]   [−G  ]
    [ ∂R_q/∂u  ∂R_q/∂q ] [Δq] = [−R_q]

has a fiber block K that is block tridiagonal (:mod:`skfiber.block_tridiagonal`)
until two fibers touch: the fiber–fiber contact tangent couples an element of
one fiber with an element of another, entries far outside the pattern.  Write
K = K₀ + E, K₀ the entries in the pattern (each fiber's own tangent, the
diagonal contact blocks) and E the rest.  The system with K₀ is what the block
elimination solves: block LU of K₀, K₀⁻¹ [−G, W], the n × n Schur complement
for Δq.  :func:`coupled_gmres` solves the whole system by GMRES, right
preconditioned by that elimination (one factorization, then a forward and back
substitution per iteration), starting from the elimination's own solution.

Why
---
E has rank at most the number of DOFs it touches, so the preconditioned
operator is the identity plus a low-rank term and GMRES ends in at most that
many iterations; as the contact stiffness is small against the fibers' own,
it ends in a few (the upper-limb demo: see docs/performance.md).  A sparse LU
of the whole fiber block (SuperLU, the general path) or a band LU after
reordering costs 5–50 times more at the demo's sizes.  The result is the
Newton increment to a relative residual of :data:`GMRES_TOL`, or to the
absolute residual Newton asks for (a small fraction of its own tolerance: an
inexact Newton step, :func:`skfiber.coupled_kernels.coupled_increment`'s
``linear_tol``); when GMRES does not get there within
:data:`GMRES_MAX_ITERATIONS` the caller falls back to the sparse LU.

Examples
--------
>>> import numpy as np
>>> from skfiber import block_tridiagonal as bt
>>> A = np.zeros((3, 3, 6, 6)); A[:, 1] = 4 * np.eye(6)      # K₀ = 4 I, three nodes
>>> LU, piv, X, info = bt.factor(A, 1e-14)
>>> rows, cols, blocks = np.array([[0]]), np.array([[17]]), np.ones((1, 1, 1))   # E: K[0, 17] = 1
>>> x, its, res = coupled_gmres(A, LU, piv, X, rows, cols, blocks, np.zeros((18, 0)), np.zeros((0, 18)),
...                             np.zeros((0, 0)), np.zeros((0, 0)), np.zeros((18, 0)), np.ones(18), np.zeros(18))
>>> round(float(x[0]), 12), round(float(x[17]), 12), its                  # 4 x₀ + x₁₇ = 1, 4 x₁₇ = 1
(0.1875, 0.25, 2)
"""
from __future__ import annotations

import math

import numpy as np

from .core.jit import njit
from . import block_tridiagonal as bt

__all__ = ["GMRES_TOL", "GMRES_ACCEPT", "GMRES_MAX_ITERATIONS", "coupled_gmres"]

#: GMRES stops when its residual estimate is ≤ GMRES_TOL ‖b‖
GMRES_TOL = 1e-14
#: the result is accepted when the true residual is ≤ GMRES_ACCEPT ‖b‖ (else the caller falls back)
GMRES_ACCEPT = 1e-11
#: iterations before GMRES gives up (the Krylov basis has this many vectors: no restarts)
GMRES_MAX_ITERATIONS = 80


@njit(cache=True, fastmath={"contract"})
def _apply(A, e_rows, e_cols, e_blocks, W, Rq_u, Rq_q, z, N, out):  # pragma: no cover - compiled
    """out = T z for T = [[K₀ + E, W], [∂R_q/∂u, ∂R_q/∂q]] (z and out of length N + n)."""
    nn = A.shape[0]
    n = Rq_q.shape[0]
    Kz = bt.multiply(A, z[:N].reshape((nn, bt.B))).reshape(N)
    for r in range(N):
        acc = Kz[r]
        for i in range(n):
            acc += W[r, i] * z[N + i]
        out[r] = acc
    nb = e_rows.shape[1]
    zb = np.empty(nb)
    for k in range(e_rows.shape[0]):
        for b in range(nb):  # the block's columns of z gathered once (not once per row)
            zb[b] = z[e_cols[k, b]]
        for a in range(nb):
            acc = 0.0
            for b in range(nb):
                acc += e_blocks[k, a, b] * zb[b]
            out[e_rows[k, a]] += acc
    for i in range(n):
        acc = 0.0
        for r in range(N):
            acc += Rq_u[i, r] * z[r]
        for j in range(n):
            acc += Rq_q[i, j] * z[N + j]
        out[N + i] = acc


@njit(cache=True, fastmath={"contract"})
def _precondition(A, LU, piv, X, Rq_u, S_inv, Y_w, v, N, out):  # pragma: no cover - compiled
    """out = M⁻¹ v, M = T without E, by block elimination: y = K₀⁻¹ v_u, Δq = S⁻¹ (v_q − ∂R_q/∂u y),
    Δu = y − K₀⁻¹ W Δq."""
    nn = A.shape[0]
    n = S_inv.shape[0]
    y = bt.solve_factored(A, LU, piv, X, v[:N].reshape((nn, bt.B, 1))).reshape(N)
    c = np.empty(n)
    for i in range(n):
        acc = v[N + i]
        for r in range(N):
            acc -= Rq_u[i, r] * y[r]
        c[i] = acc
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += S_inv[i, j] * c[j]
        out[N + i] = acc
    for r in range(N):
        acc = y[r]
        for i in range(n):
            acc -= Y_w[r, i] * out[N + i]
        out[r] = acc


@njit(cache=True, fastmath={"contract"})
def coupled_gmres(A, LU, piv, X, e_rows, e_cols, e_blocks, W, Rq_u, Rq_q, S_inv, Y_w, b, x0,
                  tol=GMRES_TOL, max_iterations=GMRES_MAX_ITERATIONS):  # pragma: no cover - compiled
    """Solve T x = b, T = [[K₀ + E, W], [∂R_q/∂u, ∂R_q/∂q]], by GMRES right-preconditioned with T − E.

    Parameters
    ----------
    A : (nn, 3, B, B)
        K₀ in block storage (the fixed rows and columns already identity);
        ``LU, piv, X`` its :func:`~skfiber.block_tridiagonal.factor`.
    e_rows, e_cols, e_blocks : (m, nb), (m, nb), (m, nb, nb)
        E as dense blocks E[e_rows[k], e_cols[k]] += e_blocks[k] (:func:`~skfiber.block_tridiagonal.split_blocks`;
        zero in the fixed rows and columns).
    W, Rq_u, Rq_q : (N, n), (n, N), (n, n)
        The coupling blocks (W with zero fixed rows).
    S_inv, Y_w : (n, n), (N, n)
        The inverse of the Schur complement ∂R_q/∂q − ∂R_q/∂u K₀⁻¹ W and K₀⁻¹ W.
    b, x0 : (N + n,)
        Right-hand side and start (the block elimination's solution).
    tol, max_iterations
        Stop when the residual estimate is ≤ ``tol`` ‖b‖, or after that many iterations.

    Returns
    -------
    x : (N + n,)
    iterations : int
    relative_residual : float
        ‖b − T x‖ / ‖b‖ of the returned x (computed, not estimated); inf if not finite.
    """
    N = A.shape[0] * bt.B
    size = b.shape[0]
    m = max_iterations
    x = x0.copy()
    r = np.empty(size)
    _apply(A, e_rows, e_cols, e_blocks, W, Rq_u, Rq_q, x, N, r)
    for i in range(size):
        r[i] = b[i] - r[i]
    b_norm = math.sqrt(np.dot(b, b))
    if b_norm == 0.0:
        return np.zeros(size), 0, 0.0
    beta = math.sqrt(np.dot(r, r))
    if not beta > tol * b_norm:
        return x, 0, beta / b_norm if beta < np.inf else np.inf
    V = np.empty((m + 1, size))
    H = np.zeros((m + 1, m))
    cs = np.empty(m)
    sn = np.empty(m)
    g = np.zeros(m + 1)
    V[0] = r / beta
    g[0] = beta
    z = np.empty(size)
    w = np.empty(size)
    j_end = 0
    for j in range(m):
        _precondition(A, LU, piv, X, Rq_u, S_inv, Y_w, V[j], N, z)
        _apply(A, e_rows, e_cols, e_blocks, W, Rq_u, Rq_q, z, N, w)
        for _ in range(2):  # modified Gram–Schmidt, twice (keeps V orthogonal to working precision)
            for i in range(j + 1):
                h = 0.0
                for s_ in range(size):
                    h += w[s_] * V[i, s_]
                H[i, j] += h
                for s_ in range(size):
                    w[s_] -= h * V[i, s_]
        h_next = 0.0
        for s_ in range(size):
            h_next += w[s_] * w[s_]
        h_next = math.sqrt(h_next)
        H[j + 1, j] = h_next
        for i in range(j):  # the previous rotations
            t = cs[i] * H[i, j] + sn[i] * H[i + 1, j]
            H[i + 1, j] = -sn[i] * H[i, j] + cs[i] * H[i + 1, j]
            H[i, j] = t
        rho = math.hypot(H[j, j], H[j + 1, j])
        if not rho > 0.0:  # (also nan)
            break
        cs[j], sn[j] = H[j, j] / rho, H[j + 1, j] / rho
        H[j, j] = rho
        H[j + 1, j] = 0.0
        g[j + 1] = -sn[j] * g[j]
        g[j] = cs[j] * g[j]
        j_end = j + 1
        if not abs(g[j + 1]) > tol * b_norm or not h_next > 0.0:
            break
        inv = 1.0 / h_next
        for s_ in range(size):
            V[j + 1, s_] = w[s_] * inv
    # y = H⁻¹ g (upper triangular), x += M⁻¹ (V y)
    y = np.zeros(j_end)
    for i in range(j_end - 1, -1, -1):
        acc = g[i]
        for k in range(i + 1, j_end):
            acc -= H[i, k] * y[k]
        y[i] = acc / H[i, i]
    v = np.zeros(size)
    for i in range(j_end):
        for s_ in range(size):
            v[s_] += y[i] * V[i, s_]
    _precondition(A, LU, piv, X, Rq_u, S_inv, Y_w, v, N, z)
    x += z
    _apply(A, e_rows, e_cols, e_blocks, W, Rq_u, Rq_q, x, N, r)
    for i in range(size):
        r[i] = b[i] - r[i]
    res = math.sqrt(np.dot(r, r)) / b_norm
    return x, j_end, res if res < np.inf else np.inf
