"""Reference motions of a rigid system from scipy's ODE solvers (for verification and comparison).

The equations of motion M(q, t) q̈ + h(q, q̇, t) = Q(q, q̇, t) as the first-order
system y = (q, q̇), ẏ = (q̇, M⁻¹(Q − h)) (:meth:`RigidSystem.accelerations
<skfiber.rigid.RigidSystem.accelerations>`), integrated by
``scipy.integrate.solve_ivp`` with dense output: independent of skfiber's own
integrators, and to any tolerance.  ``breaks`` restarts the solver at times
where the prescribed motion has a kink (a pulse's corners), so that the
error control does not have to find them.

Examples
--------
>>> from skfiber.rigid import Body, Revolute, RigidSystem, ode_motion
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> motion = ode_motion(system, [0.1], [0.0], t_end=1.0, rtol=1e-10, atol=1e-12)
>>> motion.q([0.0, 1.0]).shape
(2, 1)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.integrate import solve_ivp

from .system import RigidSystem

__all__ = ["OdeMotion", "ode_motion"]


@dataclass
class OdeMotion:
    """A dense solution y(t) = (q(t), q̇(t)) on [breaks[0], breaks[-1]], one solver run per interval."""

    breaks: np.ndarray
    pieces: list = field(repr=False)
    n: int
    #: right-hand-side evaluations and Jacobians (implicit methods) of all intervals
    evaluations: int = 0
    jacobians: int = 0

    def __call__(self, t) -> np.ndarray:
        """y at the times t: (2n, len(t)), rows q then q̇."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        if np.any(t < self.breaks[0] - 1e-12) or np.any(t > self.breaks[-1] + 1e-12):
            raise ValueError(f"times must lie in [{self.breaks[0]}, {self.breaks[-1]}] s, got {t.min()} … {t.max()}")
        piece = np.clip(np.searchsorted(self.breaks, t, side="right") - 1, 0, len(self.pieces) - 1)
        out = np.empty((2 * self.n, len(t)))
        for k in np.unique(piece):
            out[:, piece == k] = self.pieces[k](t[piece == k])
        return out

    def q(self, t) -> np.ndarray:
        """Coordinates at the times t: (len(t), n)."""
        return self(t)[: self.n].T

    def p(self, t) -> np.ndarray:
        """Velocities at the times t: (len(t), n)."""
        return self(t)[self.n:].T


def ode_motion(system: RigidSystem, q0, p0, t_end: float, *, t0: float = 0.0, method: str = "Radau",
               rtol: float = 1e-10, atol: float = 1e-12, breaks: Sequence[float] = ()) -> OdeMotion:
    """Integrate the rigid system from (q0, q̇0) at t0 to t_end with ``solve_ivp`` (dense output).

    Parameters
    ----------
    method
        A ``solve_ivp`` method: ``"Radau"`` (implicit, for stiff springs and
        dampers), ``"DOP853"``, ``"BDF"``, ….
    rtol, atol
        Its tolerances.
    breaks
        Times in (t0, t_end) at which to restart the solver.
    """
    n = system.n
    y = np.concatenate([np.asarray(q0, dtype=float), np.asarray(p0, dtype=float)])
    if y.shape != (2 * n,):
        raise ValueError(f"q0 and p0 must have {n} entries {list(system.coordinate_names)} each")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0}, got {t_end!r}")
    inner = sorted(float(b) for b in breaks if t0 < b < t_end)
    edges = np.array([t0, *inner, t_end], dtype=float)

    def rhs(t, z):
        return np.concatenate([z[n:], system.accelerations(z[:n], z[n:], t)])

    pieces, evaluations, jacobians = [], 0, 0
    for a, b in zip(edges[:-1], edges[1:]):
        sol = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol, dense_output=True)
        if not sol.success:
            raise RuntimeError(f"solve_ivp ({method}) failed on [{a:g}, {b:g}] s: {sol.message}")
        pieces.append(sol.sol)
        evaluations += sol.nfev
        jacobians += sol.njev
        y = sol.y[:, -1]
    return OdeMotion(edges, pieces, n, evaluations, jacobians)
