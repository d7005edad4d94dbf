"""Broad phase: which elements of different fibers may touch.

Each cubic Hermite segment lies in the convex hull of its Bézier control
points P0 = x0, P1 = x0 + h x0′/3, P2 = x1 − h x1′/3, P3 = x1, hence in their
axis-aligned bounding box.  Boxes inflated by a reach (the largest current
radius on the element) that do not overlap cannot be in contact.  Candidate
pairs are the boxes that share a cell of a uniform grid (compiled,
:func:`box_neighbours`), then the exact box test: the cost grows like
N log N plus the number of boxes sharing a cell, not N² (nor like a sweep
along one axis, which meets every box of a bundle lying across it).

Examples
--------
>>> import numpy as np
>>> lo = np.array([[0, 0, 0], [0.5, 0, 0], [3, 0, 0]], float)
>>> hi = lo + 1.0
>>> box_pairs(lo, hi, np.array([0, 1, 2]), np.zeros(3)).tolist()
[[0, 1], [1, 0]]
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit

__all__ = ["box_pairs", "box_neighbours", "NeighbourList", "LIST_MARGIN"]

#: the extra reach of a kept neighbour list, as a fraction of the largest reach (:class:`NeighbourList`)
LIST_MARGIN = 0.1


def box_pairs(lo: np.ndarray, hi: np.ndarray, group: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Directed pairs (i, j) of boxes of different groups whose inflated boxes overlap.

    Parameters
    ----------
    lo, hi
        Box corners (n, 3).
    group
        Group (fiber) of each box; pairs within a group are skipped.
    reach
        Inflation of each box (n,) in every direction.

    Returns
    -------
    (m, 2) int array with both (i, j) and (j, i), sorted by i then j.
    """
    lo = np.ascontiguousarray(lo, dtype=float)
    if lo.shape[0] < 2:
        return np.zeros((0, 2), dtype=np.int64)
    ptr, nbr = box_neighbours(lo, np.ascontiguousarray(hi, dtype=float), np.ascontiguousarray(group, dtype=np.int64),
                              np.ascontiguousarray(reach, dtype=float))
    return np.stack([np.repeat(np.arange(lo.shape[0]), np.diff(ptr)), nbr], axis=1)


@njit(cache=True)
def box_neighbours(lo, hi, group, reach):  # pragma: no cover - compiled
    """CSR (ptr, nbr) of :func:`box_pairs`: row i lists the j (ascending) whose inflated boxes overlap box i.

    The boxes are hashed into a uniform grid (:func:`_grid_keys`) and only boxes sharing a cell are tested,
    each pair once (in the first cell the two share): the work grows with the number of boxes and their
    neighbours, not with the boxes that overlap along one axis (a sweep along x meets every box of a bundle
    lying along z at that x).  Where :func:`_grid_keys` has no grid (non-finite or inverted boxes), the
    sweep along x (:func:`_sweep_keys`) gives the pairs.
    """
    n = lo.shape[0]
    L = lo - reach.reshape(-1, 1)
    H = hi + reach.reshape(-1, 1)
    keys = _grid_keys(L, H, group)
    if keys.size == 1 and keys[0] < 0:  # no grid: the sweep
        keys = _sweep_keys(L, H, group)
    keys = np.sort(keys)
    m = keys.size
    ptr = np.zeros(n + 1, dtype=np.int64)
    nbr = np.empty(m, dtype=np.int64)
    for r in range(m):
        ptr[keys[r] // n + 1] += 1
        nbr[r] = keys[r] % n
    for i in range(n):
        ptr[i + 1] += ptr[i]
    return ptr, nbr


@njit(inline="always", cache=True)
def _overlap(L, H, i, j):  # pragma: no cover - compiled
    """Whether the boxes [L_i, H_i] and [L_j, H_j] overlap (touching counts)."""
    return (L[i, 0] <= H[j, 0] and L[j, 0] <= H[i, 0] and L[i, 1] <= H[j, 1] and L[j, 1] <= H[i, 1]
            and L[i, 2] <= H[j, 2] and L[j, 2] <= H[i, 2])


@njit(cache=True)
def _push(keys, m, key):  # pragma: no cover - compiled
    """keys[m] = key, keys grown (doubled) when full; returns the array."""
    if m + 1 > keys.size:
        grown = np.empty(2 * keys.size, dtype=np.int64)
        grown[:m] = keys[:m]
        keys = grown
    keys[m] = key
    return keys


@njit(cache=True)
def _sweep_keys(L, H, group):  # pragma: no cover - compiled
    """The pairs i·n + j and j·n + i of overlapping boxes of different groups, by a sweep along x over the
    boxes sorted by their lower x corner (unsorted)."""
    n = L.shape[0]
    order = np.argsort(L[:, 0], kind="mergesort")
    keys = np.empty(16 * n + 16, dtype=np.int64)
    m = 0
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if L[j, 0] > H[i, 0]:  # sorted: no later box overlaps box i in x
                break
            if group[i] != group[j] and _overlap(L, H, i, j):
                keys = _push(keys, m, i * n + j)
                keys = _push(keys, m + 1, j * n + i)
                m += 2
    return keys[:m]


#: the grid's cell is this many times the median box extent along each axis (:func:`_grid_keys`)
GRID_CELL = 2.0
#: a grid is refined no further than this many (box, cell) entries per box; beyond, the cells are doubled
GRID_ENTRIES = 16


@njit(cache=True)
def _grid_keys(L, H, group):  # pragma: no cover - compiled
    """The pairs of :func:`_sweep_keys` from a uniform grid, or [−1] when there is none: fewer than 2 boxes,
    a non-finite corner, an inverted box (a corner below the other: a negative reach) or a span that
    overflows; the sweep answers those.

    The cell along each axis is :data:`GRID_CELL` × the median box extent, at least the span over ∛n (so
    the grid has about n cells or fewer), doubled while the boxes would cover more than :data:`GRID_ENTRIES`
    cells each on average.
    Every box is entered in each cell it covers; the (cell, box) entries are sorted by cell, and the boxes of
    each cell are tested against each other.  A pair is kept in the cell whose index is, per axis, the larger
    of the two boxes' first cells: the first cell both cover, so each pair once.
    """
    n = L.shape[0]
    none = np.full(1, -1, dtype=np.int64)
    if n < 2:
        return none
    for i in range(n):
        for d in range(3):
            if not (np.isfinite(L[i, d]) and np.isfinite(H[i, d]) and L[i, d] <= H[i, d]):
                return none  # (an inverted box, from a negative reach, covers no cell: the sweep tests it)
    origin = np.empty(3)
    cell = np.empty(3)
    dims = np.empty(3, dtype=np.int64)
    for d in range(3):
        origin[d] = L[:, d].min()
        span = H[:, d].max() - origin[d]
        cell[d] = max(GRID_CELL * np.median(H[:, d] - L[:, d]), span / np.ceil(n ** (1 / 3)), 1e-300)
        if not (np.isfinite(span) and np.isfinite(cell[d])):
            return none  # corners so far apart that their span overflows
    first = np.empty((n, 3), dtype=np.int64)
    last = np.empty((n, 3), dtype=np.int64)
    while True:
        entries = 0
        for i in range(n):
            covered = 1
            for d in range(3):
                first[i, d] = int((L[i, d] - origin[d]) / cell[d])
                last[i, d] = int((H[i, d] - origin[d]) / cell[d])
                covered *= last[i, d] - first[i, d] + 1
            entries += covered
        if entries <= GRID_ENTRIES * n:
            break
        for d in range(3):
            cell[d] *= 2.0
    for d in range(3):
        dims[d] = last[:, d].max() + 1  # (at most ∛n + 1: the cell is at least the span over ∛n)
    cell_of = np.empty(entries, dtype=np.int64)
    box_of = np.empty(entries, dtype=np.int64)
    e = 0
    for i in range(n):
        for ix in range(first[i, 0], last[i, 0] + 1):
            for iy in range(first[i, 1], last[i, 1] + 1):
                for iz in range(first[i, 2], last[i, 2] + 1):
                    cell_of[e] = (ix * dims[1] + iy) * dims[2] + iz
                    box_of[e] = i
                    e += 1
    order = np.argsort(cell_of, kind="mergesort")
    keys = np.empty(16 * n + 16, dtype=np.int64)
    m = 0
    start = 0
    while start < entries:
        key = cell_of[order[start]]
        stop = start + 1
        while stop < entries and cell_of[order[stop]] == key:
            stop += 1
        iz = key % dims[2]
        iy = (key // dims[2]) % dims[1]
        ix = key // (dims[1] * dims[2])
        for a in range(start, stop):
            i = box_of[order[a]]
            for b in range(a + 1, stop):
                j = box_of[order[b]]
                if group[i] == group[j] or not _overlap(L, H, i, j):
                    continue
                if (max(first[i, 0], first[j, 0]) != ix or max(first[i, 1], first[j, 1]) != iy
                        or max(first[i, 2], first[j, 2]) != iz):
                    continue  # kept in their first common cell
                keys = _push(keys, m, i * n + j)
                keys = _push(keys, m + 1, j * n + i)
                m += 2
        start = stop
    return keys[:m]


class NeighbourList:
    """The broad phase kept over several states, rebuilt when the boxes have moved too far (a Verlet list).

    Built at a state with every box's reach enlarged by a margin m, the list
    contains every pair that the broad phase of a later state would give as
    long as no control point has moved by more than M since the build and
    every current reach plus M is within the enlarged one: two boxes then
    overlap after inflation by today's reaches only if their boxes at the
    build overlapped after inflation by the enlarged reaches.  Candidates
    beyond today's broad phase are removed by the exact per-point tests that
    follow it, so results do not change; within a Newton step the boxes move
    little and the broad phase is skipped.

    Parameters
    ----------
    margin
        The enlargement, as a fraction of the largest reach (default :data:`LIST_MARGIN`).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.zeros((2, 4, 3)); P[1] += [0.15, 0.0, 0.0]     # two point-like elements 0.15 apart
    >>> nl = NeighbourList()
    >>> ptr, nbr = nl.neighbours(P, np.array([0, 1]), np.array([0, 1]), np.full(2, 0.1))
    >>> nbr.tolist(), nl.builds
    ([1, 0], 1)
    >>> _ = nl.neighbours(P + 0.001, np.array([0, 1]), np.array([0, 1]), np.full(2, 0.1))   # moved a little
    >>> nl.builds
    1
    """

    def __init__(self, margin: float = LIST_MARGIN):
        if not (isinstance(margin, (int, float)) and margin >= 0):
            raise ValueError(f"margin must be a number >= 0, got {margin!r}")
        self.margin = float(margin)
        self.builds = 0  # how often the broad phase ran
        self._built = None  # (control points, elements, enlarged reach, ptr, nbr, groups)

    def neighbours(self, P: np.ndarray, elements: np.ndarray, fiber: np.ndarray, reach: np.ndarray):
        """CSR (ptr, nbr) over ``elements`` (local indices) of the boxes of their control points ``P`` (e, 4, 3).

        ``fiber`` groups the elements (no pairs within one), ``reach`` is each element's inflation now.
        """
        built = self._built
        if (built is not None and built[0].shape == P.shape
                and (built[1] is elements or np.array_equal(built[1], elements))
                and (built[6] is fiber or np.array_equal(built[5], fiber[elements]))
                and _list_holds(P, built[0], elements, reach, built[2])):
            return built[3], built[4]
        enlarged = reach[elements] + self.margin * (float(reach[elements].max()) if elements.size else 0.0)
        lo, hi = P.min(axis=1), P.max(axis=1)
        ptr, nbr = box_neighbours(np.ascontiguousarray(lo[elements]), np.ascontiguousarray(hi[elements]),
                                  np.ascontiguousarray(fiber[elements]), enlarged)
        # (fiber itself is kept to recognise it next time; its values at the build are in the copy)
        self._built = (P.copy(), elements, enlarged, ptr, nbr, np.array(fiber[elements]), fiber)
        self.builds += 1
        return ptr, nbr


@njit(cache=True)
def _list_holds(P, P_built, elements, reach, enlarged):  # pragma: no cover - compiled
    """Whether reach[e] + M ≤ enlarged[i] for every element e = elements[i], with M the largest move
    |P[e] − P_built[e]| of a control-point coordinate since the build (the test of :class:`NeighbourList`)."""
    moved = 0.0
    for e in elements:
        for a in range(P.shape[1]):
            for m in range(P.shape[2]):
                d = abs(P[e, a, m] - P_built[e, a, m])
                if not d <= moved:
                    if d != d:  # NaN: rebuild (the sweep and the search then see it)
                        return False
                    moved = d
    for i in range(elements.size):
        if not reach[elements[i]] + moved <= enlarged[i]:
            return False
    return True
