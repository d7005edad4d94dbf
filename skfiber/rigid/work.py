"""The kinetic-energy–work balance along a computed motion (multibody paper eqs. 49–55).

With a prescribed (rheonomic) motion the total energy is not conserved, but
the relative kinetic energy T₂ = ½ q̇ᵀ M q̇ changes by the work of all
generalized forces, the transport inertia forces of the prescribed motion
included (Q* = −γ, eq. 50):

    T₂(t) − T₂(0) = W(t) = ∫₀ᵗ Σ_e P_e dτ,   P_e = q̇ᵀ Q_e   (eqs. 51–54),

with the powers P_e of :meth:`RigidSystem.powers
<skfiber.rigid.RigidSystem.powers>` (its ``"transport"`` entry is q̇ᵀ Q* +
½ q̇ᵀ ∂M/∂t q̇).  :func:`work_balance` sums the powers along a time series
(q_k, q̇_k, t_k) with one of two rules:

``"right"``
    W_k = W_{k−1} + Δt_k P(q_k, q̇_k, t_k): the rule consistent with backward
    Euler (q_k − q_{k−1} = Δt_k q̇_k, so Δt_k P_e = (q_k − q_{k−1})·Q_e at the
    new state); the residual of a backward-Euler run goes to zero at first
    order in Δt.
``"trapezoid"``
    W_k = W_{k−1} + Δt_k (P_{k−1} + P_k)/2: second order, for a solution
    given on a fine grid by an accurate integrator (the paper's choice).

The relative error max_k ‖T₂,k − T₂,0 − W_k‖ / max_k T₂ is the paper's e_R
(eq. 55) taken over the whole run.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid import Body, Prescribed, Revolute, RigidSystem, simulate_rigid, work_balance
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("cart", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.02),
...                 joint=Prescribed(translation=lambda t: (0.1 * t**2, 0, 0),
...                                  velocity=lambda t: (0.2 * t, 0, 0),
...                                  acceleration=lambda t: (0.2, 0, 0))) and None
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 parent="cart", joint=Revolute(axis=(0, 1, 0))) and None
>>> run = simulate_rigid(system, [0.3], [0.0], t_end=0.5, dt=0.005)
>>> balance = work_balance(system, run.times, run.q, run.p)
>>> sorted(balance.work)
['gravity', 'transport']
>>> bool(balance.relative_error < 0.05)
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .system import RigidSystem

__all__ = ["WorkBalance", "work_balance", "WORK_RULES"]

#: the quadrature rules of :func:`work_balance`
WORK_RULES = ("right", "trapezoid")


@dataclass
class WorkBalance:
    """T₂ and the work of every force along a motion; all arrays have one entry per time.

    Attributes
    ----------
    times
        t_k (s).
    relative_kinetic_energy
        T₂,k (J).
    work
        {element name: cumulative work W_e,k (J)}, with ``"transport"`` for
        the transport inertia forces of the prescribed motion.
    """

    times: np.ndarray
    relative_kinetic_energy: np.ndarray
    work: dict[str, np.ndarray]

    @property
    def total_work(self) -> np.ndarray:
        """W_k = Σ_e W_e,k (J)."""
        return sum(self.work.values(), np.zeros_like(self.times))

    @property
    def residual(self) -> np.ndarray:
        """T₂,k − T₂,0 − W_k (J)."""
        T2 = self.relative_kinetic_energy
        return T2 - T2[0] - self.total_work

    @property
    def relative_error(self) -> float:
        """max_k ‖T₂,k − T₂,0 − W_k‖ / max_k T₂ (eq. 55 over the whole run; 0 when nothing moves)."""
        scale = float(np.max(self.relative_kinetic_energy))
        return float(np.max(np.abs(self.residual)) / scale) if scale > 0 else 0.0


def work_balance(system: RigidSystem, times, q, qd, *, rule: str = "right") -> WorkBalance:
    """The kinetic-energy–work balance along the states (q_k, q̇_k) at ``times`` (see the module text).

    Parameters
    ----------
    system
        The rigid system that moved.
    times
        (N,) increasing times (s).
    q, qd
        (N, n) coordinates and velocities at those times.
    rule
        ``"right"`` (consistent with backward Euler) or ``"trapezoid"``.
    """
    if rule not in WORK_RULES:
        raise ValueError(f"unknown quadrature rule {rule!r}; pick one of {', '.join(WORK_RULES)}")
    times = np.asarray(times, dtype=float)
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    n = system.n
    if times.ndim != 1 or len(times) < 2:
        raise ValueError(f"times must be a vector of at least 2 times, got shape {times.shape}")
    if q.shape != (len(times), n) or qd.shape != q.shape:
        raise ValueError(f"q and qd must have shape ({len(times)}, {n}) (one row per time), got {q.shape} and {qd.shape}")
    dt = np.diff(times)
    if np.any(dt <= 0):
        raise ValueError("times must increase")
    T2 = system.relative_kinetic_energy(q, qd, times)       # all states in one batched call
    if rule == "right":
        powers = system.powers(q[1:], qd[1:], times[1:])
        increments = {k: dt * p for k, p in powers.items()}
    else:
        powers = system.powers(q, qd, times)
        increments = {k: 0.5 * dt * (p[:-1] + p[1:]) for k, p in powers.items()}
    work = {k: np.concatenate([[0.0], np.cumsum(v)]) for k, v in increments.items()}
    return WorkBalance(times, np.asarray(T2, dtype=float), work)
