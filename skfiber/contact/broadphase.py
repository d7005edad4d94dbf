"""Broad phase: which elements of different fibers may touch.

Each cubic Hermite segment lies in the convex hull of its Bézier control
points P0 = x0, P1 = x0 + h x0′/3, P2 = x1 − h x1′/3, P3 = x1, hence in their
axis-aligned bounding box.  Boxes inflated by a reach (the largest current
radius on the element) that do not overlap cannot be in contact.  Candidate
pairs come from a k-d tree (``scipy.spatial.cKDTree``) on the box centres in
the maximum norm with radius 2 × the largest inflated half-width, then the
exact box test: the cost grows like N log N with the number of elements, not
N².

Example
-------
>>> import numpy as np
>>> lo = np.array([[0, 0, 0], [0.5, 0, 0], [3, 0, 0]], float)
>>> hi = lo + 1.0
>>> box_pairs(lo, hi, np.array([0, 1, 2]), np.zeros(3)).tolist()
[[0, 1], [1, 0]]
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

__all__ = ["box_pairs"]


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
    lo = np.asarray(lo, dtype=float) - reach[:, None]
    hi = np.asarray(hi, dtype=float) + reach[:, None]
    n = lo.shape[0]
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    centre = 0.5 * (lo + hi)
    half = 0.5 * (hi - lo)
    radius = 2.0 * float(np.max(half)) * (1 + 1e-12)
    pairs = cKDTree(centre).query_pairs(radius, p=np.inf, output_type="ndarray")
    if pairs.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    i, j = pairs[:, 0], pairs[:, 1]
    keep = group[i] != group[j]
    keep &= np.all((lo[i] <= hi[j]) & (lo[j] <= hi[i]), axis=1)
    i, j = i[keep], j[keep]
    out = np.concatenate([np.stack([i, j], axis=1), np.stack([j, i], axis=1)]).astype(np.int64)
    order = np.lexsort((out[:, 1], out[:, 0]))
    return out[order]
