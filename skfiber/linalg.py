"""Linear solves of the Newton systems with constrained DOFs.

The cable DOFs are numbered node by node, so the tangent is banded
(bandwidth 11 per fiber; fibers do not couple).  LAPACK's banded solver
(``gbsv``, as in ``scipy.linalg.solve_banded``) is then 5–10× faster than a
sparse LU; the band storage is summed directly in LAPACK's layout (two small compiled
loops over the element and extra entries) and factorized in place.
When extra blocks widen the band (contact between fibers, rigid coupling),
the solve falls back to SuperLU (``scipy.sparse.linalg.splu``).
"""
from __future__ import annotations

import numba
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from .assembly import BatchedAssembler

__all__ = ["ConstrainedSolver"]


class ConstrainedSolver:
    """Solve K Δu = −R on the free DOFs (Δu = 0 on the constrained ones).

    Parameters
    ----------
    assembler
        Gives the element-to-global maps.
    constrained
        Indices of DOFs with prescribed values.
    """

    def __init__(self, assembler: BatchedAssembler, constrained: np.ndarray):
        self.assembler = assembler
        self.N = assembler.N
        self.constrained = np.asarray(constrained, dtype=int)
        fixed = np.zeros(self.N, dtype=bool)
        fixed[self.constrained] = True
        self.fixed = fixed
        rows, cols = assembler.rows, assembler.cols
        self._keep = ~(fixed[rows] | fixed[cols])
        self._keep_index = np.flatnonzero(self._keep)
        self.bandwidth = assembler.bandwidth
        bw = self.bandwidth
        # LAPACK band storage with room for the fill of the pivoting, (3 bw + 1, N) in Fortran order:
        # A[i, j] is at row 2 bw + i − j of column j, i.e. at flat index (2 bw + i − j) + j (3 bw + 1)
        self._rows_band = 3 * bw + 1
        self._band_index = self._band_flat(rows, cols)
        # the band slots of the constrained rows and columns (cleared; then 1 on their diagonal)
        d, off = np.meshgrid(self.constrained, np.arange(-bw, bw + 1), indexing="ij")
        inside = (d + off >= 0) & (d + off < self.N)
        d, e = d[inside], (d + off)[inside]
        self._fixed_band = np.unique(np.concatenate([self._band_flat(d, e), self._band_flat(e, d)]))
        self._diag_fixed = self._band_flat(self.constrained, self.constrained)
        self.last_method = ""
        self._gbsv_fn = None
        self._end_margins = None  # contact margins of the last converged step (skfiber.solver)

    def _band_flat(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Flat index of the entries A[r, c] in the Fortran-ordered band storage of :meth:`_gbsv`."""
        return (2 * self.bandwidth + r - c) + c * self._rows_band

    def _gbsv(self, work: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """LAPACK gbsv on the band storage ``work`` (3 bw + 1, N), Fortran order, overwritten, as is ``rhs``."""
        if self._gbsv_fn is None:
            self._gbsv_fn = sla.get_lapack_funcs("gbsv", (work,))
        bw = self.bandwidth
        _, _, x, info = self._gbsv_fn(bw, bw, work, rhs, overwrite_ab=True, overwrite_b=True)
        if info > 0:
            raise np.linalg.LinAlgError(f"singular matrix (zero pivot at row {info - 1})")
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of gbsv")
        return x

    def solve(self, element_matrices: np.ndarray, rhs: np.ndarray, extra: list | None = None) -> np.ndarray:
        """Solve for one right-hand side (N,) or several (N, k) at once."""
        rhs = np.where(self.fixed[:, None] if np.ndim(rhs) == 2 else self.fixed, 0.0, rhs)
        extra = extra or []
        work = np.zeros(self._rows_band * self.N)
        Ke = np.ascontiguousarray(element_matrices, dtype=float).reshape(-1)
        _add_to_band(work, self._band_index, Ke)
        wide = False
        for r, c, v in extra:
            if not _add_triplets_to_band(work, np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64),
                                         np.asarray(v, dtype=float), self.bandwidth, self._rows_band):
                wide = True
                break
        if not wide:  # all entries summed into the band, then the constrained rows and columns replaced
            work[self._fixed_band] = 0.0
            work[self._diag_fixed] = 1.0
            self.last_method = "banded"
            return self._gbsv(work.reshape(self.N, self._rows_band).T, rhs)
        rows = [self.assembler.rows[self._keep], self.constrained]
        cols = [self.assembler.cols[self._keep], self.constrained]
        vals = [element_matrices.reshape(-1)[self._keep_index], np.ones(self.constrained.size)]
        for r, c, v in extra:
            keep = ~(self.fixed[r] | self.fixed[c])
            rows.append(r[keep]); cols.append(c[keep]); vals.append(v[keep])
        K = sps.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(self.N, self.N))
        self.last_method = "splu"
        return spla.splu(K).solve(rhs)


@numba.njit(cache=True)
def _add_to_band(work, index, values):  # pragma: no cover - compiled
    """work[index[k]] += values[k] (the element matrices into the band storage)."""
    for k in range(index.shape[0]):
        work[index[k]] += values[k]


@numba.njit(cache=True)
def _add_triplets_to_band(work, rows, cols, values, bw, rows_band):  # pragma: no cover - compiled
    """Add COO triplets to the band storage; False (and none added) if one lies outside the band."""
    for k in range(rows.shape[0]):
        if abs(rows[k] - cols[k]) > bw:
            return False
    for k in range(rows.shape[0]):
        work[(2 * bw + rows[k] - cols[k]) + cols[k] * rows_band] += values[k]
    return True
