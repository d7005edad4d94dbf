r"""The damped fiber-velocity solve of Millard et al. (2013), eq. (3).

With a damper β > 0 in parallel with the fiber, the normalized fiber velocity
ṽ follows from the force equilibrium

    r(ṽ) = a f^L f^V(ṽ) + β ṽ − target = 0,   target = f^T / cos α − f^PE,

which has exactly one root for any a f^L ≥ 0 (r′ ≥ β > 0).  The solve is one
compiled call, :func:`skfiber.hill.curve_kernels.solve_damped`: bracketed
Newton on all points at once from OpenSim's start (the undamped solution with
a, f^L ≥ 0.01, limited to [−1, 1]).

Examples
--------
>>> import numpy as np
>>> from skfiber.hill import MuscleCurves
>>> curves = MuscleCurves.for_formulation("damped")
>>> v = solve_damped_fiber_velocity(curves, 1.0, 1.0, np.array([1.0, 1.2]), 0.1, 1e-12)
>>> bool(abs(v[0]) < 1e-12), bool(v[1] > 0)      # isometric at f^V = 1, lengthening above
(True, True)
"""
from __future__ import annotations

import numpy as np

from .curve_kernels import solve_damped
from .parameters import MuscleCurves

__all__ = ["solve_damped_fiber_velocity"]


def _flat(values, shape: tuple[int, ...]) -> np.ndarray:
    """`values` broadcast to `shape` as a writeable 1-D float array (what the compiled kernel takes)."""
    v = np.asarray(values, dtype=float)
    if v.shape != shape:
        v = np.broadcast_to(v, shape)
    v = v.ravel()
    return v if v.flags.writeable else v.copy()


def solve_damped_fiber_velocity(curves: MuscleCurves, activation, active_force_length, target,
                                damping: float, tol: float) -> np.ndarray:
    """Solve a f^L f^V(ṽ) + β ṽ = target for the normalized fiber velocity ṽ at all points.

    Parameters
    ----------
    curves : the muscle's curves: ``force_velocity`` f^V and ``force_velocity_inverse``
        (only the Newton start).
    activation, active_force_length : a and f^L (broadcast to the shape of `target`).
    target : f^T / cos α − f^PE (any shape).
    damping : β > 0.
    tol : tolerance on |r|.

    Returns
    -------
    ṽ with the shape of `target`.

    Raises
    ------
    RuntimeError
        If some point has not converged within 200 iterations (not expected: the
        root stays bracketed and bisection replaces bad Newton steps).
    """
    shape = np.shape(target)
    a_f, fal_f, t_f = _flat(activation, shape), _flat(active_force_length, shape), _flat(target, shape)
    v, n_failed = solve_damped(curves.force_velocity.curve.packed, curves.force_velocity_inverse.curve.packed,
                               a_f, fal_f, t_f, float(damping), float(tol))
    if n_failed:
        raise RuntimeError(f"damped fiber-velocity Newton iteration did not converge at {n_failed} points")
    return v.reshape(shape)
