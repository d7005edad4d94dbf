"""Compiled 3-vector helpers of the rigid-body kernels (numba).

Small loops the compiled kinematics (:mod:`.pose_kernel`, :mod:`.inertia_kernel`,
:mod:`.point_kernels`, :mod:`.jet_kernels`) share: a 3 × 3 matrix times a 3-vector
and a cross product, written into given outputs or returned as a tuple
(:func:`cross_components`, inlined), so that the loops allocate nothing.
They work in any dtype (float, or complex for the complex step).

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid.vector_kernels import cross3, matvec3
>>> out = np.empty(3)
>>> cross3(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, out); out.tolist()
[0.0, 0.0, 1.0]
>>> matvec3(2.0 * np.eye(3), np.array([1.0, 2.0, 3.0]), out); out.tolist()
[2.0, 4.0, 6.0]
"""
from __future__ import annotations

from ..core.jit import njit


__all__ = ["matvec3", "cross3", "cross_components"]


@njit(cache=True)
def matvec3(R, x, out):  # pragma: no cover - compiled
    """out = R x (3 × 3 times 3).

    Parameters
    ----------
    R : (3, 3)
        The matrix.
    x : (3,)
        The vector.
    out : (3,)
        Where the product is written (not ``x``).
    """
    for i in range(3):
        out[i] = R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]


@njit(cache=True)
def cross3(a0, a1, a2, b0, b1, b2, out):  # pragma: no cover - compiled
    """out = a × b, with a = (a0, a1, a2) and b = (b0, b1, b2) given as numbers.

    Parameters
    ----------
    a0, a1, a2, b0, b1, b2
        The components of a and b.
    out : (3,)
        Where a × b is written.
    """
    out[0] = a1 * b2 - a2 * b1
    out[1] = a2 * b0 - a0 * b2
    out[2] = a0 * b1 - a1 * b0


@njit(cache=True, inline="always")
def cross_components(a0, a1, a2, b0, b1, b2):  # pragma: no cover - compiled
    """(a × b) as a tuple of three numbers: nothing allocated in the loops that call it."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
