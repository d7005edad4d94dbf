"""Block-tridiagonal storage and a compiled block LU (block Thomas algorithm).

What
----
The cable DOFs are numbered node by node, B = 6 per node (cubic Hermite in
3D: 3 positions + 3 slopes), and an element couples two consecutive nodes;
fibers are stacked one after the other.  So the tangent is **block
tridiagonal** with B × B blocks (the off-diagonal blocks between the last
node of one fiber and the first of the next are zero, unless extra entries
couple them).  :func:`factor_solve` solves such a system by block LU without
pivoting across blocks: per node, Schur-update the diagonal block, LU-factor
it with partial pivoting inside the block, solve for the coupling to the next
node; then back-substitute.  It is :func:`factor` then :func:`solve_factored`,
whose factors solve further right-hand sides (modified Newton);
:func:`assemble_factor_solve` adds the assembly and the residual check in the
same call.

Why
---
The band LU of the same matrix (LAPACK ``gbsv``, bandwidth 2B − 1 = 11, plus
the fill of its row pivoting) needs about three times the flops, and it was
the largest single cost of a Newton iteration.  Measured on the upper-limb
demo (5 fibers × 64 elements, N = 1950, real Newton tangents with contact,
two right-hand sides): the factorization + solve takes 0.16 ms instead of
0.63 ms for ``gbsv`` (0.45 ms on a random SPD-like matrix, which needs no
row swaps), the residual check 0.04 ms; the whole
:meth:`skfiber.linalg.ConstrainedSolver.solve` (assembly included) 0.30 ms
instead of 0.70 ms, and in a simulation 0.39 ms instead of 0.94 ms per solve
(3.0 → 2.4 ms per Newton iteration).  At N = 270: 0.05 ms instead of 0.10 ms.

Safety
------
Without pivoting across blocks the factorization can break down (a singular
Schur complement) or lose accuracy through element growth on matrices that
a band LU with partial pivoting solves fine.  :func:`factor_solve` reports a
zero / tiny pivot (relative to its block's largest entry) and non-finite
values, and :func:`residual_ok` checks the normwise backward error
‖r − K x‖∞ ≤ tol (‖K‖∞ ‖x‖∞ + ‖r‖∞) per right-hand side from the block
storage.  The caller (:class:`skfiber.linalg.ConstrainedSolver`) falls back
to ``gbsv`` when either fails.

Storage
-------
``A`` of shape (nn, 3, B, B), C order: ``A[n, 0]`` = K[node n, node n − 1],
``A[n, 1]`` = K[node n, node n], ``A[n, 2]`` = K[node n, node n + 1]
(``A[0, 0]`` and ``A[nn − 1, 2]`` are unused and must stay zero).  Entry
K[i, j] with nodes ``i // B`` and ``j // B`` at most one apart lies at flat
index ``((i // B) * 3 + j // B − i // B + 1) * B² + (i % B) * B + j % B``
(:func:`flat_index`).  Right-hand sides and solutions are (nn, B, k).
B is a module constant, so the kernels' loops over a block have a
compile-time length (unrolled; a run-time block size made them 1.7× slower).
"""
from __future__ import annotations

import numpy as np

from .core.jit import njit

#: DOFs per node (3D cubic Hermite), the block size; a compile-time constant of the kernels
B = 6

__all__ = ["B", "flat_index", "in_pattern", "scatter_add", "add_triplets", "split_blocks", "multiply", "factor_solve",
           "factor", "solve_factored", "assemble_factor_solve", "residual_ok"]


def flat_index(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Flat index of the entries K[rows, cols] in the block storage (nn, 3, B, B).

    All pairs must lie in the pattern (:func:`in_pattern`).
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    ni, nj = rows // B, cols // B
    return ((ni * 3 + (nj - ni + 1)) * B + rows % B) * B + cols % B


def in_pattern(rows: np.ndarray, cols: np.ndarray) -> bool:
    """True if all entries K[rows, cols] lie in the block-tridiagonal pattern (node distance ≤ 1)."""
    return bool(np.all(np.abs(np.asarray(rows) // B - np.asarray(cols) // B) <= 1))


@njit(cache=True)
def scatter_add(work, index, values):  # pragma: no cover - compiled
    """work[index[k]] += values[k] (element matrices into the block storage, or into the band storage of
    :class:`skfiber.linalg.ConstrainedSolver`)."""
    for k in range(index.shape[0]):
        work[index[k]] += values[k]


@njit(cache=True)
def add_triplets(work, rows, cols, values, n):  # pragma: no cover - compiled
    """Add COO triplets to the flat block storage ``work`` of an (n, n) matrix.

    Returns False as soon as a nonzero entry lies outside the
    block-tridiagonal pattern (node distance > 1) or outside the matrix;
    ``work`` is then partly updated and must be discarded.  (One pass:
    checking all entries first would cost a second pass for a case that
    falls back anyway.)  Zero values are skipped: contact blocks of inactive
    pairs are often zero, and skipping them saves a third of the time.
    """
    for k in range(rows.shape[0]):
        if values[k] == 0.0:
            continue
        i, j = rows[k], cols[k]
        if i < 0 or j < 0 or i >= n or j >= n:
            return False
        ni, nj = i // B, j // B
        d = nj - ni + 1
        if d < 0 or d > 2:
            return False
        work[((ni * 3 + d) * B + (i - ni * B)) * B + (j - nj * B)] += values[k]
    return True


@njit(cache=True)
def split_blocks(work, row_dofs, col_dofs, blocks, n, fixed):  # pragma: no cover - compiled
    """Add the element blocks that lie in the block pattern to ``work``; return the others.

    ``blocks[g]`` holds K[row_dofs[g], col_dofs[g]] (g, nb, nb), e.g. the
    fiber–fiber contact tangent per element (x–x) and per element pair (x–y).
    A block whose row and column nodes are at most one apart is summed into
    ``work`` like :func:`add_triplets`; a block of two elements of different
    fibers (or far apart on one) is kept aside as a block of E, the rest of
    the matrix that :mod:`skfiber.coupled_krylov` handles, with its entries
    in a ``fixed`` row or column set to 0 (they are cleared in the system).

    Returns
    -------
    ok : bool
        False if a DOF lies outside the (n, n) matrix (``work`` is then
        partly updated and must be discarded).
    outside : ndarray (m,) of int
        The blocks of E (indices into ``blocks``).
    e_blocks : ndarray (m, nb, nb)
        Their values with the fixed rows and columns zeroed.
    """
    g_count, nb = row_dofs.shape
    outside = np.empty(g_count, np.int64)
    col_node = np.empty(nb, np.int64)
    col_local = np.empty(nb, np.int64)
    m = 0
    for g in range(g_count):
        lo_r, hi_r, lo_c, hi_c = n, -1, n, -1
        for a in range(nb):
            r, c = row_dofs[g, a], col_dofs[g, a]
            if r < 0 or c < 0 or r >= n or c >= n:
                return False, outside[:0], np.zeros((0, nb, nb))
            lo_r, hi_r = min(lo_r, r), max(hi_r, r)
            lo_c, hi_c = min(lo_c, c), max(hi_c, c)
        if hi_r // B - lo_c // B > 1 or hi_c // B - lo_r // B > 1:
            outside[m] = g
            m += 1
            continue
        for b in range(nb):  # the column part of the flat index, then the row part added per entry
            j = col_dofs[g, b]
            col_node[b], col_local[b] = j // B, j % B
        for a in range(nb):
            i = row_dofs[g, a]
            ni = i // B
            base = (ni * 3 - ni + 1) * B + i % B
            for b in range(nb):
                v = blocks[g, a, b]
                if v != 0.0:
                    work[(base + col_node[b] * B) * B + col_local[b]] += v
    e_blocks = np.empty((m, nb, nb))
    col_fixed = np.empty(nb, np.bool_)
    for k in range(m):
        g = outside[k]
        for b in range(nb):  # (looked up once per block, not once per entry)
            col_fixed[b] = fixed[col_dofs[g, b]]
        for a in range(nb):
            row_fixed = fixed[row_dofs[g, a]]
            for b in range(nb):
                e_blocks[k, a, b] = 0.0 if row_fixed or col_fixed[b] else blocks[g, a, b]
    return True, outside[:m], e_blocks


@njit(cache=True, fastmath={"contract"})
def multiply(A, x):  # pragma: no cover - compiled
    """K x for K in the block storage ``A`` (nn, 3, B, B) and x (nn, B); returns (nn, B)."""
    nn = A.shape[0]
    y = np.empty((nn, B))
    for n in range(nn):
        lo = n - 1 if n > 0 else 0  # at the ends the unused (zero) slots meet a valid node
        hi = n + 1 if n < nn - 1 else nn - 1
        for i in range(B):
            acc = 0.0
            for j in range(B):
                acc += A[n, 0, i, j] * x[lo, j] + A[n, 1, i, j] * x[n, j] + A[n, 2, i, j] * x[hi, j]
            y[n, i] = acc
    return y


@njit(cache=True, fastmath={"contract"})
def factor_solve(A, R, pivot_tol):  # pragma: no cover - compiled
    """Solve K x = R by block LU, K block tridiagonal in the storage ``A``: :func:`factor`, then
    :func:`solve_factored`.

    Parameters
    ----------
    A : ndarray (nn, 3, B, B)
        The matrix (not modified).
    R : ndarray (nn, B, k)
        Right-hand sides (not modified).
    pivot_tol : float
        Breakdown when a pivot of a Schur-complemented diagonal block is
        ≤ ``pivot_tol`` times that block's largest entry.

    Returns
    -------
    x : ndarray (nn, B, k)
        The solution (garbage when ``info != 0``).
    info : int
        0 on success, else 1 + the node where the factorization broke down
        (tiny / zero pivot or non-finite entries).
    """
    LU, piv, X, info = factor(A, pivot_tol)
    if info:
        return np.empty(R.shape), info
    return solve_factored(A, LU, piv, X, R), 0


@njit(cache=True, fastmath={"contract"})
def factor(A, pivot_tol):  # pragma: no cover - compiled
    """The block LU factors of K (block tridiagonal in the storage ``A``), for :func:`solve_factored`.

    Returns
    -------
    LU : ndarray (nn, B, B)
        Per node the LU factors (unit lower triangle below the diagonal) of the
        Schur complement S = A[n, 1] − A[n, 0] X[n − 1], row-pivoted inside the block.
    piv : ndarray (nn, B) of int64
        Row p of node n's block was swapped with row piv[n, p] at step p.
    X : ndarray (nn, B, B)
        X[n] = S⁻¹ A[n, 2] (zero for the last node).
    info : int
        0 on success, else 1 + the node where the factorization broke down
        (a pivot ≤ ``pivot_tol`` × its block's largest entry, or non-finite entries).

    Notes
    -----
    Forward sweep, per node n: the Schur complement is LU-factored with partial
    pivoting inside the block, then X[n] = S⁻¹ A[n, 2].  All loops over a block
    have the compile-time length B.  ``fastmath="contract"`` only fuses
    multiply-adds (NaN / inf semantics are kept, which the breakdown tests rely on).
    """
    nn = A.shape[0]
    X = np.empty((nn, B, B))
    LU = np.empty((nn, B, B))
    piv = np.empty((nn, B), np.int64)
    for n in range(nn):
        S = LU[n]  # the Schur complement, then its LU factors
        if n > 0:
            for i in range(B):
                for j in range(B):
                    acc = A[n, 1, i, j]
                    for m in range(B):
                        acc -= A[n, 0, i, m] * X[n - 1, m, j]
                    S[i, j] = acc
        else:
            for i in range(B):
                for j in range(B):
                    S[i, j] = A[n, 1, i, j]
        # the block's scale (two running maxima per row: shorter dependency chains than one)
        scale = 0.0
        for i in range(B):
            r0 = abs(S[i, B - 1])  # (B odd: the last column; else counted twice)
            r1 = 0.0
            for j in range(0, B - 1, 2):
                r0 = max(r0, abs(S[i, j]))
                r1 = max(r1, abs(S[i, j + 1]))
            scale = max(scale, max(r0, r1))
        if not (scale > 0.0 and scale < np.inf):  # zero block, inf or nan
            return LU, piv, X, n + 1
        tiny = pivot_tol * scale
        for p in range(B):
            q = p
            big = abs(S[p, p])
            for i in range(p + 1, B):
                a = abs(S[i, p])
                if a > big:
                    big = a
                    q = i
            if not (big > tiny):  # (also catches nan)
                return LU, piv, X, n + 1
            piv[n, p] = q
            if q != p:
                for j in range(B):
                    tmp = S[p, j]
                    S[p, j] = S[q, j]
                    S[q, j] = tmp
            inv = 1.0 / S[p, p]
            for i in range(p + 1, B):
                f = S[i, p] * inv
                S[i, p] = f
                for j in range(p + 1, B):
                    S[i, j] -= f * S[p, j]
        # X[n] = S⁻¹ A[n, 2]: row swaps, forward and back substitution, by rows of length B
        if n < nn - 1:
            for i in range(B):
                for j in range(B):
                    X[n, i, j] = A[n, 2, i, j]
            for p in range(B):
                q = piv[n, p]
                if q != p:
                    for j in range(B):
                        tmp = X[n, p, j]
                        X[n, p, j] = X[n, q, j]
                        X[n, q, j] = tmp
            for p in range(B):
                for i in range(p + 1, B):
                    f = S[i, p]
                    for j in range(B):
                        X[n, i, j] -= f * X[n, p, j]
            for p in range(B - 1, -1, -1):
                for m in range(p + 1, B):
                    f = S[p, m]
                    for j in range(B):
                        X[n, p, j] -= f * X[n, m, j]
                inv = 1.0 / S[p, p]
                for j in range(B):
                    X[n, p, j] *= inv
        else:
            for i in range(B):
                for j in range(B):
                    X[n, i, j] = 0.0
    return LU, piv, X, 0


@njit(cache=True, fastmath={"contract"})
def solve_factored(A, LU, piv, X, R):  # pragma: no cover - compiled
    """Solve K x = R with the factors of :func:`factor` (``A`` the matrix's storage, for its lower
    blocks A[n, 0]); R (nn, B, k) is not modified, x (nn, B, k) is returned.

    Forward: Y[n] = S⁻¹ (R[n] − A[n, 0] Y[n − 1]), one column at a time (a loop over k
    innermost would be vectorized for k ≥ 4 at a cost for k = 1, 2); back substitution:
    x[nn − 1] = Y[nn − 1], x[n] = Y[n] − X[n] x[n + 1] (in place in Y).
    """
    nn = A.shape[0]
    k = R.shape[2]
    Y = np.empty((nn, B, k))
    t = np.empty(B)
    for n in range(nn):
        S = LU[n]
        for c in range(k):
            for i in range(B):
                acc = R[n, i, c]
                if n > 0:
                    for m in range(B):
                        acc -= A[n, 0, i, m] * Y[n - 1, m, c]
                t[i] = acc
            for p in range(B):
                q = piv[n, p]
                tmp = t[p]
                t[p] = t[q]
                t[q] = tmp
            for p in range(B):
                for i in range(p + 1, B):
                    t[i] -= S[i, p] * t[p]
            for p in range(B - 1, -1, -1):
                acc = t[p]
                for m in range(p + 1, B):
                    acc -= S[p, m] * t[m]
                t[p] = acc / S[p, p]
            for i in range(B):
                Y[n, i, c] = t[i]
    for n in range(nn - 2, -1, -1):
        for c in range(k):
            for i in range(B):
                acc = Y[n, i, c]
                for m in range(B):
                    acc -= X[n, i, m] * Y[n + 1, m, c]
                Y[n, i, c] = acc
    return Y


@njit(cache=True)
def assemble_factor_solve(work, index, values, fixed, diag_fixed, R, pivot_tol, residual_tol):  # pragma: no cover
    """Sum ``values`` into the block storage ``work`` (flat, its extra entries already added) at ``index``,
    clear the slots ``fixed`` and put 1 at ``diag_fixed`` (constrained rows and columns), then
    :func:`factor`, :func:`solve_factored` for R and :func:`residual_ok` — one call for
    :class:`skfiber.linalg.ConstrainedSolver`.

    Returns (A, LU, piv, X, x, status): status 0 on success, 1 breakdown of the factorization, 2 the
    solution failed the residual test (``residual_tol``).
    """
    for k in range(index.shape[0]):
        work[index[k]] += values[k]
    for k in range(fixed.shape[0]):
        work[fixed[k]] = 0.0
    for k in range(diag_fixed.shape[0]):
        work[diag_fixed[k]] = 1.0
    A = work.reshape((work.shape[0] // (3 * B * B), 3, B, B))
    LU, piv, X, info = factor(A, pivot_tol)
    if info:
        return A, LU, piv, X, R, 1
    x = solve_factored(A, LU, piv, X, R)
    if not residual_ok(A, x, R, residual_tol):
        return A, LU, piv, X, x, 2
    return A, LU, piv, X, x, 0


@njit(cache=True, fastmath={"contract"})
def residual_ok(A, x, R, tol):  # pragma: no cover - compiled
    """Whether ‖R − K x‖∞ ≤ tol (‖K‖∞ ‖x‖∞ + ‖R‖∞) holds for every right-hand side.

    ``A`` (nn, 3, B, B) is the block storage with its unused slots
    ``A[0, 0]`` and ``A[nn − 1, 2]`` zero; x and R are (nn, B, k).  A pass
    for ‖K‖∞ (largest absolute row sum), then one per right-hand side for
    the residual and the norms of x and R.  Non-finite values fail.
    """
    nn = A.shape[0]
    k = x.shape[2]
    knorm = 0.0
    for n in range(nn):
        for i in range(B):
            # three partial sums: shorter dependency chains (the loop is latency-bound)
            r0 = 0.0
            r1 = 0.0
            r2 = 0.0
            for j in range(B):
                r0 += abs(A[n, 0, i, j])
                r1 += abs(A[n, 1, i, j])
                r2 += abs(A[n, 2, i, j])
            knorm = max(knorm, r0 + r1 + r2)
    ok = knorm < np.inf
    for c in range(k):
        res = 0.0
        xn = 0.0
        rn = 0.0
        finite = 0.0  # stays finite iff all residuals are (max() may drop a nan)
        for n in range(nn):
            lo = n - 1 if n > 0 else 0  # at the ends the unused (zero) slots meet a valid node
            hi = n + 1 if n < nn - 1 else nn - 1
            for i in range(B):
                a0 = 0.0
                a1 = R[n, i, c]
                a2 = 0.0
                for j in range(B):
                    a0 += A[n, 0, i, j] * x[lo, j, c]
                    a1 -= A[n, 1, i, j] * x[n, j, c]
                    a2 += A[n, 2, i, j] * x[hi, j, c]
                r = abs(a1 - a0 - a2)
                finite += r
                res = max(res, r)
                xn = max(xn, abs(x[n, i, c]))
                rn = max(rn, abs(R[n, i, c]))
        if not (res <= tol * (knorm * xn + rn) and finite < np.inf):
            ok = False
    return ok
