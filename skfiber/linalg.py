"""Linear solves of the Newton systems with constrained DOFs.

The cable DOFs are numbered node by node (6 per node), an element couples
two consecutive nodes and fibers do not couple, so the tangent is block
tridiagonal with 6 × 6 blocks, in particular banded (bandwidth 11).  Three
paths, tried in this order:

1. ``"block"``: a compiled block LU (:mod:`skfiber.block_tridiagonal`),
   summed directly into block storage.  About a third of the flops of a
   band LU: at N = 1950 (upper-limb demo, real tangents, two right-hand
   sides) a solve takes 0.30 ms instead of 0.70 ms.  It does not pivot
   across blocks, so it is checked — breakdown (tiny pivot, non-finite
   values) and a residual test ‖r − K x‖∞ ≤ 10³ ε (‖K‖∞ ‖x‖∞ + ‖r‖∞),
   costing 0.04 ms of those 0.30 ms — and falls back to the band path when
   a check fails.  Used when the assembler's pattern is block tridiagonal
   (checked once) and the extra entries stay in that pattern.
2. ``"banded"``: LAPACK's banded LU (``gbtrf`` and ``gbtrs``, what ``gbsv`` and
   ``scipy.linalg.solve_banded`` call), 5–10× faster than a sparse LU; the band
   storage is summed directly in LAPACK's layout and factorized in place.
3. ``"splu"``: SuperLU (``scipy.sparse.linalg.splu``) when extra entries
   widen the band (contact between fibers, rigid coupling).

:meth:`ConstrainedSolver.factor_solve` returns the factors too
(:class:`Factorization`): modified Newton (:mod:`skfiber.newton`) solves later
iterations with them, a back substitution instead of an assembly and a
factorization.
"""
from __future__ import annotations

import weakref

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from .core.jit import njit
from . import block_tridiagonal as bt
from .assembly import BatchedAssembler

__all__ = ["ConstrainedSolver", "Factorization"]

#: block LU breakdown: a pivot ≤ PIVOT_TOL × the largest entry of its Schur-complemented diagonal block
#: (that block is singular to working precision; milder trouble is left to the residual test)
PIVOT_TOL = 16 * np.finfo(float).eps
#: the block solution is accepted if ‖r − K x‖∞ ≤ RESIDUAL_TOL (‖K‖∞ ‖x‖∞ + ‖r‖∞) for every right-hand side.
#: A backward-stable solve stays far below (block and gbsv both ≈ 0.03 ε on the upper-limb tangents); a
#: block LU with element growth g has a backward error ≈ g ε and is rejected once g ≳ 10³
RESIDUAL_TOL = 1e3 * np.finfo(float).eps
#: SuperLU first factorizes the matrix, scaled to a unit diagonal (:func:`symmetric_scaling`), with threshold
#: pivoting (a diagonal pivot is kept while it is at least this fraction of the largest in its column), checked
#: like the block LU (:data:`RESIDUAL_TOL`); a rejected solution is redone with partial pivoting.  On the
#: tangents of bundles in touch the pivots then rarely leave the diagonal (docs/performance.md)
SPLU_PIVOT_THRESHOLD = 0.01
#: … in the column ordering of a minimum degree on A + Aᵀ, which suits pivots kept on the diagonal (COLAMD, the
#: default, orders for any row pivoting): on the tangents of a 72-fiber bundle in touch 27 % less fill and
#: 32 % less time (docs/performance.md); the partial-pivoting fallback keeps COLAMD
SPLU_ORDERING = "MMD_AT_PLUS_A"


#: per assembler, the index maps of ConstrainedSolver for (constrained DOFs, block) (see _layout)
_LAYOUTS: "weakref.WeakKeyDictionary[BatchedAssembler, dict]" = weakref.WeakKeyDictionary()


def _band_flat(r: np.ndarray, c: np.ndarray, bw: int, rows_band: int) -> np.ndarray:
    """Flat index of the entries A[r, c] in the Fortran-ordered band storage (3 bw + 1, N) of
    :meth:`ConstrainedSolver.factor_solve`: A[i, j] is at row 2 bw + i − j of column j."""
    return (2 * bw + r - c) + c * rows_band


def _layout(assembler: BatchedAssembler, constrained: np.ndarray, block: bool) -> tuple:
    """The index maps of a :class:`ConstrainedSolver` (made once per assembler, constrained DOFs and
    ``block``; shared, never written): fixed, free, the kept entries and their indices, the band slots of
    the element entries, of the constrained rows and columns and of their diagonal, and the block storage's
    node count and slots (None when K is not block tridiagonal with B × B blocks)."""
    per_assembler = _LAYOUTS.setdefault(assembler, {})
    key = (constrained.tobytes(), bool(block))
    layout = per_assembler.get(key)
    if layout is not None:
        return layout
    N, bw = assembler.N, assembler.bandwidth
    rows_band = 3 * bw + 1
    fixed = np.zeros(N, dtype=bool)
    fixed[constrained] = True
    rows, cols = assembler.rows, assembler.cols
    keep = ~(fixed[rows] | fixed[cols])
    band_index = _band_flat(rows, cols, bw, rows_band)
    # the band slots of the constrained rows and columns (cleared; then 1 on their diagonal)
    d, off = np.meshgrid(constrained, np.arange(-bw, bw + 1), indexing="ij")
    inside = (d + off >= 0) & (d + off < N)
    d, e = d[inside], (d + off)[inside]
    fixed_band = np.unique(np.concatenate([_band_flat(d, e, bw, rows_band), _band_flat(e, d, bw, rows_band)]))
    diag_fixed = _band_flat(constrained, constrained, bw, rows_band)
    nodes = block_index = block_fixed = block_diag_fixed = None
    B = bt.B
    if block and N % B == 0 and bt.in_pattern(rows, cols):
        nodes = N // B
        block_index = bt.flat_index(rows, cols)
        # the constrained rows (all three blocks of their node row) and columns (the blocks of
        # the neighbouring node rows), cleared; then 1 on their diagonal
        node, local = constrained // B, constrained % B
        slots = np.arange(3)
        row_slots = (((node[:, None] * 3 + slots) * B + local[:, None])[:, :, None] * B + np.arange(B)).ravel()
        m = node[:, None] + slots - 1  # node rows n − 1, n, n + 1 see node n in their slots 2, 1, 0
        col_slots = ((((m * 3 + 2 - slots) * B)[:, :, None] + np.arange(B)) * B + local[:, None, None])
        col_slots = col_slots[(m >= 0) & (m < nodes)].ravel()
        block_fixed = np.unique(np.concatenate([row_slots, col_slots]))
        block_diag_fixed = ((node * 3 + 1) * B + local) * B + local
    layout = (fixed, ~fixed, keep, np.flatnonzero(keep), band_index, fixed_band, diag_fixed, nodes, block_index,
              block_fixed, block_diag_fixed)
    per_assembler[key] = layout
    return layout


class ConstrainedSolver:
    """Solve K Δu = −R on the free DOFs (Δu = 0 on the constrained ones).

    Parameters
    ----------
    assembler
        Gives the element-to-global maps.
    constrained
        Indices of DOFs with prescribed values.
    block
        Try the block-tridiagonal LU first (when the assembler's pattern
        allows it); False: always the band / sparse path.

    Attributes
    ----------
    last_method : str
        The path that solved the last system: ``"block"`` (block LU),
        ``"banded"`` (LAPACK gbtrf / gbtrs) or ``"splu"`` (SuperLU).
    block_fallbacks : int
        How many block solves were rejected (breakdown or failed residual
        check) and redone by the band / sparse path.
    splu_fallbacks : int
        How many SuperLU solves with threshold pivoting were rejected by the
        residual check and redone with partial pivoting.
    """

    def __init__(self, assembler: BatchedAssembler, constrained: np.ndarray, *, block: bool = True):
        self.assembler = assembler
        self.N = assembler.N
        self.constrained = np.asarray(constrained, dtype=int)
        self.bandwidth = assembler.bandwidth
        self._rows_band = 3 * self.bandwidth + 1
        # the index maps depend on the assembler's pattern and the constrained DOFs only: made once
        # (a run that calls simulate once per step makes a solver per step)
        layout = _layout(assembler, self.constrained, block)
        (self.fixed, self.free, self._keep, self._keep_index, self._band_index, self._fixed_band, self._diag_fixed,
         self._nodes, self.block_index, self.block_fixed, self.block_diag_fixed) = layout
        self.last_method = ""
        self.block_fallbacks = 0  # block solves rejected (breakdown / residual check) and redone by the band LU
        self.splu_fallbacks = 0  # SuperLU solves with threshold pivoting rejected and redone with partial pivoting
        self._gbtrf = self._gbtrs = None
        self.end_margins = None  # contact margins of the last converged step (skfiber.solver)

    def _factor_block(self, element_matrices: np.ndarray, rhs: np.ndarray, extra: list):
        """The block-tridiagonal LU and its first solution, with the residual check: (x, factorization), or
        None when it does not apply or fails."""
        B, nn = bt.B, self._nodes
        work = np.zeros(nn * 3 * B * B)
        for r, c, v in extra:  # first: an entry outside the pattern (contact between fibers) ends this path early
            if not bt.add_triplets(work, np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64),
                                   np.asarray(v, dtype=float), self.N):
                return None  # band or sparse path
        R = np.ascontiguousarray(rhs.reshape(nn, B, -1))  # (N,) or (N, k) → (nn, B, k); rhs is not changed
        # no pivoting across blocks: accept only a solution that passes the residual test (≈ 15 % of the solve);
        # the test bounds the element growth of the factors, so later solves with them need not repeat it
        A, LU, piv, X, x, status = bt.assemble_factor_solve(
            work, self.block_index, np.ascontiguousarray(element_matrices, dtype=float).reshape(-1), self.block_fixed,
            self.block_diag_fixed, R, PIVOT_TOL, RESIDUAL_TOL)
        if status:
            self.block_fallbacks += 1
            return None
        return x.reshape(rhs.shape), Factorization("block", (A, LU, piv, X), self.constrained)

    def _factor_band(self, work: np.ndarray, rhs: np.ndarray):
        """LAPACK gbtrf + gbtrs on the band storage ``work`` (3 bw + 1, N), Fortran order, overwritten, as is
        ``rhs``: (x, factorization)."""
        if self._gbtrf is None:
            self._gbtrf, self._gbtrs = sla.get_lapack_funcs(("gbtrf", "gbtrs"), (work,))
        bw = self.bandwidth
        lu, ipiv, info = self._gbtrf(work, bw, bw, overwrite_ab=True)
        if info > 0:
            raise np.linalg.LinAlgError(f"singular matrix (zero pivot at row {info - 1})")
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of gbtrf")
        factorization = Factorization("banded", (self._gbtrs, lu, bw, ipiv), self.constrained)
        return factorization.solve(rhs, overwrite=True), factorization

    def solve(self, element_matrices: np.ndarray, rhs: np.ndarray, extra: list | None = None) -> np.ndarray:
        """Solve for one right-hand side (N,) or several (N, k) at once (:meth:`factor_solve`'s solution)."""
        return self.factor_solve(element_matrices, rhs, extra)[0]

    def factor_solve(self, element_matrices: np.ndarray, rhs: np.ndarray,
                     extra: list | None = None) -> tuple[np.ndarray, "Factorization"]:
        """Factorize the matrix and solve for one right-hand side (N,) or several (N, k) at once; the
        :class:`Factorization` solves for further right-hand sides (modified Newton).

        Parameters
        ----------
        element_matrices : ndarray (e, nb, nb)
            The element matrices, summed with the assembler's maps.
        rhs : ndarray (N,) or (N, k)
            Right-hand side(s); their constrained entries are ignored.
        extra : list of (rows, cols, values), optional
            COO triplets added to the matrix (contact, coupling blocks).

        Returns
        -------
        x : ndarray
            The solution, shaped like ``rhs``, 0 on the constrained DOFs.
        factorization : Factorization
            The factors of the matrix.

        Raises
        ------
        numpy.linalg.LinAlgError
            The band LU met an exactly zero pivot (singular matrix).
        RuntimeError
            SuperLU found the matrix singular (sparse path).
        """
        rhs = np.array(rhs, dtype=float)  # a copy: the band solve overwrites it
        rhs[self.constrained] = 0.0
        extra = extra or []
        if self.block_index is not None:
            solved = self._factor_block(element_matrices, rhs, extra)
            if solved is not None:
                self.last_method = "block"
                return solved
        work = np.zeros(self._rows_band * self.N)
        wide = False
        for r, c, v in extra:  # first: an entry outside the band skips the element scatter
            if not _add_triplets_to_band(work, np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64),
                                         np.asarray(v, dtype=float), self.bandwidth, self._rows_band):
                wide = True
                break
        if not wide:  # all entries summed into the band, then the constrained rows and columns replaced
            bt.scatter_add(work, self._band_index, np.ascontiguousarray(element_matrices, dtype=float).reshape(-1))
            work[self._fixed_band] = 0.0
            work[self._diag_fixed] = 1.0
            self.last_method = "banded"
            return self._factor_band(work.reshape(self.N, self._rows_band).T, rhs)
        rows = [self.assembler.rows[self._keep], self.constrained]
        cols = [self.assembler.cols[self._keep], self.constrained]
        vals = [element_matrices.reshape(-1)[self._keep_index], np.ones(self.constrained.size)]
        for r, c, v in extra:
            keep = ~(self.fixed[r] | self.fixed[c])
            rows.append(r[keep]); cols.append(c[keep]); vals.append(v[keep])
        K = sps.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(self.N, self.N))
        self.last_method = "splu"
        scale = symmetric_scaling(K)
        scaled = K.copy()
        scaled.data *= scale[scaled.indices] * np.repeat(scale, np.diff(scaled.indptr))
        lu = spla.splu(scaled, permc_spec=SPLU_ORDERING, diag_pivot_thresh=SPLU_PIVOT_THRESHOLD)
        factorization = Factorization("splu", (lu, scale), self.constrained)
        x = factorization.solve(rhs)
        if _sparse_residual_ok(K, x, rhs):
            return x, factorization
        self.splu_fallbacks += 1  # partial pivoting, on K itself (backward stable for K)
        factorization = Factorization("splu", (spla.splu(K), np.ones(self.N)), self.constrained)
        return factorization.solve(rhs, overwrite=True), factorization


def symmetric_scaling(K: sps.csc_matrix) -> np.ndarray:
    """The scaling s of the rows and columns of ``K`` that gives diag(s) K diag(s) a diagonal of ±1.

    Threshold pivoting keeps a diagonal pivot while it is a fraction :data:`SPLU_PIVOT_THRESHOLD` of the
    largest entry of its column.  Unscaled, the Hermite slope d.o.f. (the basis functions of the
    derivatives are multiplied by the element's length h in θ) have diagonal entries about h² times
    those of the positions they couple to in the same column, below that fraction at 16 elements a
    fiber, and SuperLU would leave the diagonal order.  A row with a zero diagonal is scaled by its
    largest entry instead (1 for an empty row), and no diagonal counts as smaller than ε times the
    largest (a tiny one would overflow the scaled entries).

    Examples
    --------
    >>> import scipy.sparse as sps
    >>> K = sps.csc_matrix([[4.0, 1.0], [1.0, 0.01]])
    >>> s = symmetric_scaling(K)
    >>> (sps.diags(s) @ K @ sps.diags(s)).toarray().round(3).tolist()
    [[1.0, 5.0], [5.0, 1.0]]
    """
    size = np.abs(K.diagonal())
    empty = size == 0
    if empty.any():
        size[empty] = np.asarray(abs(K[empty.nonzero()[0]]).max(axis=1).todense()).ravel()
        size[size == 0] = 1.0
    return 1.0 / np.sqrt(np.maximum(size, np.finfo(float).eps * size.max()))


def _sparse_residual_ok(K, x: np.ndarray, rhs: np.ndarray) -> bool:
    """‖r − K x‖∞ ≤ RESIDUAL_TOL (‖K‖∞ ‖x‖∞ + ‖r‖∞) for every right-hand side (columns), all finite."""
    X, R = x.reshape(len(x), -1), rhs.reshape(len(rhs), -1)
    if not np.all(np.isfinite(X)):
        return False
    norm_K = float(abs(K).sum(axis=1).max())
    error = np.max(np.abs(R - K @ X), axis=0)
    return bool(np.all(error <= RESIDUAL_TOL * (norm_K * np.max(np.abs(X), axis=0) + np.max(np.abs(R), axis=0))))


class Factorization:
    """A matrix factorized by :meth:`ConstrainedSolver.factor_solve`, for solves with more right-hand sides.

    ``method`` is the path that made it (``"block"``, ``"banded"`` or ``"splu"``).
    :meth:`solve` ignores the right-hand side's constrained entries and returns 0 there, as
    :meth:`ConstrainedSolver.solve` does.

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> solver = ConstrainedSolver(model.discretization.assembler, np.arange(6))
    >>> Ke = np.repeat(np.eye(12)[None], 2, axis=0)
    >>> x, lu = solver.factor_solve(Ke, np.ones(18))
    >>> lu.method, bool(np.array_equal(lu.solve(np.ones(18)), x)), x[:6].tolist()
    ('block', True, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    """

    __slots__ = ("method", "_factors", "_constrained")

    def __init__(self, method: str, factors: tuple, constrained: np.ndarray):
        self.method = method
        self._factors = factors
        self._constrained = constrained

    @property
    def factors(self) -> tuple:
        """The factors (for ``"block"``: the block storage A, LU, piv and X of
        :func:`skfiber.block_tridiagonal.factor`); read them, do not change them."""
        return self._factors

    def solve(self, rhs: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """The solution for ``rhs`` (N,) or (N, k); ``overwrite``: ``rhs`` is a scratch copy with zero
        constrained entries that the solve may overwrite."""
        if not overwrite:
            rhs = np.array(rhs, dtype=float)
            rhs[self._constrained] = 0.0
        f = self._factors
        if self.method == "block":
            A, LU, piv, X = f
            return bt.solve_factored(A, LU, piv, X, rhs.reshape(A.shape[0], bt.B, -1)).reshape(rhs.shape)
        if self.method == "banded":
            gbtrs, lu, bw, ipiv = f
            x, info = gbtrs(lu, bw, bw, rhs, ipiv, overwrite_b=True)
            if info < 0:
                raise ValueError(f"illegal value in argument {-info} of gbtrs")
            return x
        lu, scale = f
        scale = scale.reshape(-1, *([1] * (rhs.ndim - 1)))
        return lu.solve(rhs * scale) * scale


@njit(cache=True)
def _add_triplets_to_band(work, rows, cols, values, bw, rows_band):  # pragma: no cover - compiled
    """Add COO triplets to the band storage; False (and none added) if one lies outside the band."""
    for k in range(rows.shape[0]):
        if abs(rows[k] - cols[k]) > bw:
            return False
    for k in range(rows.shape[0]):
        work[(2 * bw + rows[k] - cols[k]) + cols[k] * rows_band] += values[k]
    return True
