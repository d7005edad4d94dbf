"""One backward-Euler step of the rigid system as a residual and tangent (paper eq. 64, rigid part).

:func:`rigid_step` gives R_rb(q⁺) = M(q⁺)(p⁺ − pₙ)/Δt + h(q⁺, p⁺, t) − Q(q⁺, p⁺, t)
with p⁺ = (q⁺ − qₙ)/Δt and its tangent dR_rb/dq⁺ (complex step), the rows
of the element states with them (:mod:`.element_states`); :class:`EulerStep`
is the same for fixed (qₙ, pₙ, Δt, t); :func:`rigid_static` the residual at
rest.  The theory, and how the step is solved and integrated:
:mod:`skfiber.rigid.integrate`.

Two evaluations of the balance M a + h − Q: :func:`balance` on a full
force context (the definition), and :func:`compiled_balance`, which gets
M a, h and the weight from one compiled call with the tables kept by the
system's plan (:meth:`RigidSystem.plan <skfiber.rigid.RigidSystem.plan>`)
and evaluates only the other force elements through ``force(ctx)``.
:func:`rigid_step` uses the second; :func:`rigid_step_definition` the first.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> fast = rigid_step(system, [0.1], q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01)
>>> ref = rigid_step_definition(system, [0.1], q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01)
>>> bool(np.allclose(fast.residual, ref.residual) and np.allclose(fast.tangent, ref.tangent))
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .complex_step import COMPLEX_STEP, complex_jacobian
from .element_states import check_states, state_layout
from .fused_kernels import euler_step_terms, euler_terms
from .system import RigidSystem

__all__ = ["RigidStep", "rigid_step", "rigid_step_definition", "EulerStep", "rigid_static", "rigid_residual",
           "rigid_tangent", "balance", "compiled_balance"]


@dataclass(frozen=True)
class RigidStep:
    """R_rb(q⁺; qₙ, pₙ, Δt, t⁺), its tangent dR_rb/dq⁺ and what goes with them.

    ``velocity`` p⁺ = (q⁺ − qₙ)/Δt; ``reference_force`` the largest of
    ‖M (p⁺ − pₙ)/Δt‖, ‖h‖ and the elements' ‖Q_e‖ (scale for convergence).
    With element states (``n_states`` = m > 0) ``residual`` is (R_rb, R_s)
    (n + m,) and ``tangent`` its derivative with respect to (q⁺, s⁺).
    """

    residual: np.ndarray
    tangent: np.ndarray | None
    velocity: np.ndarray
    reference_force: float
    n_states: int = 0


_NO_GRAVITY = np.zeros(3)


def _check_step(system, q, q_prev, p_prev, dt, t, n=None):
    """q, q_prev, p_prev as float arrays of shape (n,), after checking them, Δt and t."""
    n = system.n if n is None else n
    q, q_prev, p_prev = np.asarray(q, dtype=float), np.asarray(q_prev, dtype=float), np.asarray(p_prev, dtype=float)
    if not q.shape == q_prev.shape == p_prev.shape == (n,):
        for name, a in (("q", q), ("q_prev", q_prev), ("p_prev", p_prev)):
            if a.shape != (n,):
                raise ValueError(f"{name} must have {n} entries {list(system.coordinate_names)}, got shape {a.shape}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be > 0, got {dt!r}")
    if not math.isfinite(t):
        raise ValueError(f"t must be finite, got {t!r}")
    return q, q_prev, p_prev


def balance(system: RigidSystem, ctx, acceleration=None):
    """M a + h − Q at the context's (q, q̇, t) and its force scale: the definition of the step's balance.

    Parameters
    ----------
    system
        The rigid system.
    ctx
        Its force context (:meth:`RigidSystem.context <skfiber.rigid.RigidSystem.context>`), a batch (B, n).
    acceleration
        a (B, n), or None: at rest, no inertia term.

    Returns
    -------
    R : (B, n)
        M a + h − Q.
    ref : float
        The largest norm of the real parts of h, the Q_e and M a of configuration 0 (the force scale).
    """
    M, h = system.inertia_terms(ctx)
    forces = list(system.element_forces(ctx).values())
    parts = [h] + forces
    Q = forces[0] if len(forces) == 1 else sum(forces, np.zeros_like(h))
    R = h - Q
    if acceleration is not None:
        inertia = (M @ acceleration[:, :, None])[:, :, 0]
        R = R + inertia
        parts.append(inertia)
    ref = 0.0  # the largest ‖part‖ of configuration 0 (the real one of a complex-step batch)
    for v in parts:
        v0 = v[0].real
        ref = max(ref, math.sqrt(float(v0 @ v0)))
    return R, ref


def compiled_balance(system: RigidSystem, Q, q_prev, p_prev, dt, t: float, S=None):
    """(R, ref, ctx): R, ref of :func:`balance` at (Q, P, t) with P = (Q − qₙ)/Δt and A = (P − pₙ)/Δt
    (to round-off), and the context of the force elements: the fast path of :func:`rigid_step`.

    M A, h and the weight of the system's gravity come from one compiled call
    (:func:`.kernels.euler_terms`); only the other force elements need a
    context ``ctx`` (None if there are none), which gets
    ``ctx.element_states`` from S when elements have internal states.
    Q (B, n) C-contiguous; t a number.
    """
    plan = system.plan()
    gravity = plan.gravity
    F, ref = euler_terms(Q, q_prev, p_prev, dt, _NO_GRAVITY if gravity is None else gravity.g,
                         *plan.kernel_args(t))
    R = F[3]  # (h − Q_g) + M A
    if not plan.elements:
        return R, ref, None
    ctx = system.context(Q, (Q - q_prev) / dt, t)
    if plan.layout:
        ctx.element_states = {e.name: S[:, sl] for e, sl in plan.layout}
    for Qe in system.element_forces(ctx, plan.elements).values():
        R = R - Qe
        v0 = Qe[0].real
        ref = max(ref, math.sqrt(float(v0 @ v0)))
    return R, ref, ctx


def _residual_batch(system: RigidSystem, Q, q_prev, p_prev, dt, t, S=None, s_prev=None, *, fast: bool = True):
    """R (B, n + m) and ref of the backward-Euler step at a batch of (q⁺, s⁺) (t a number).

    ``fast``: :func:`compiled_balance`; else :func:`balance` on a full context,
    the definition (the tests compare the two).
    """
    layout = system.plan().layout
    Q = np.ascontiguousarray(Q)
    if fast:
        R, ref, ctx = compiled_balance(system, Q, q_prev, p_prev, dt, t, S)
    else:
        P = (Q - q_prev) / dt
        ctx = system.context(Q, P, t)
        if layout:
            ctx.element_states = {e.name: S[:, sl] for e, sl in layout}
        R, ref = balance(system, ctx, (P - p_prev) / dt)
    if layout:
        rows = []
        for e, sl in layout:
            rate = np.asarray(e.state_rates(ctx))
            if rate.shape != (len(Q), sl.stop - sl.start):
                raise ValueError(f"force element {e.name!r}: state_rates returned shape {rate.shape}, "
                                 f"expected {(len(Q), sl.stop - sl.start)}")
            rows.append((S[:, sl] - s_prev[sl] - dt * rate) / np.asarray(e.state_scale, dtype=float))
        R = np.concatenate([R] + rows, axis=1)
    return R, ref


def rigid_step(system: RigidSystem, q, *, q_prev, p_prev, dt: float, t: float, tangent: bool = True,
               states=None, states_prev=None) -> RigidStep:
    """Backward-Euler residual R_rb(q⁺) = M(q⁺)(p⁺ − pₙ)/Δt + h(q⁺, p⁺, t) − Q(q⁺, p⁺, t) and dR_rb/dq⁺.

    Parameters
    ----------
    q
        q⁺, the unknown coordinates at the new time t = tₙ + Δt.
    q_prev, p_prev
        qₙ, pₙ = q̇ₙ at the old time.
    dt, t
        Δt and the new time t⁺.
    tangent
        Also compute dR_rb/dq⁺ (n, n).
    states, states_prev
        s⁺ and sₙ (m,), required when force elements have internal states
        (:mod:`skfiber.rigid.integrate`); the residual is then (R_rb, R_s) and the
        tangent is taken with respect to (q⁺, s⁺).
    """
    return _step(system, q, q_prev, p_prev, dt, t, tangent, states, states_prev, fast=True)


class EulerStep:
    """One backward-Euler step of a rigid system as a function of q⁺: ``step(q)`` is
    :func:`rigid_step` (``q_prev``, ``p_prev``, ``dt``, ``t`` fixed).

    The coupled fiber solver evaluates it once per Newton residual
    (:mod:`skfiber.coupling_fast` asks for :meth:`terms`).

    Examples
    --------
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem(gravity=(0, 0, -9.81))
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> step = EulerStep(system, q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01)
    >>> bool(np.allclose(step.terms(np.array([0.0]))[0], step([0.0]).residual))
    True
    """

    def __init__(self, system: RigidSystem, *, q_prev, p_prev, dt: float, t: float):
        plan = system.plan()
        _, q_prev, p_prev = _check_step(system, np.zeros(plan.n), q_prev, p_prev, dt, t, plan.n)
        self.system = system
        self.q_prev, self.p_prev, self.dt, self.t = q_prev, p_prev, float(dt), float(t)
        # one compiled call gives residual and tangent when gravity is the only force element
        self._direct = not plan.elements and not plan.layout and plan.n > 0
        self._args = None  # (plan, kernel_args())

    def __call__(self, q) -> RigidStep:
        return rigid_step(self.system, q, q_prev=self.q_prev, p_prev=self.p_prev, dt=self.dt, t=self.t)

    def terms(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(R_rb, dR_rb/dq⁺, reference force) at q⁺ ((n,) float array, not checked): the numbers of
        ``step(q)``, in one kernel call when gravity is the only force element."""
        if not self._direct:
            rs = self(q)
            return rs.residual, rs.tangent, rs.reference_force
        return euler_step_terms(q, *self.kernel_args())

    def kernel_args(self) -> tuple:
        """The arguments of :func:`~skfiber.rigid.kernels.euler_step_terms` after q (when gravity is the
        only force element: ``direct``); made once per step and plan of the system."""
        plan = self.system.plan()
        if self._args is None or self._args[0] is not plan:
            gravity = plan.gravity
            self._args = (plan, (COMPLEX_STEP, self.q_prev, self.p_prev, self.dt,
                                 _NO_GRAVITY if gravity is None else gravity.g, *plan.kernel_args(self.t)))
        return self._args[1]

    @property
    def direct(self) -> bool:
        """Whether :meth:`terms` is one compiled call (gravity the only force element)."""
        return self._direct


def _step(system, q, q_prev, p_prev, dt, t, tangent, states, states_prev, *, fast: bool) -> RigidStep:
    """:func:`rigid_step`; ``fast=False`` evaluates the definition (:func:`balance`)."""
    plan = system.plan()
    q, q_prev, p_prev = _check_step(system, q, q_prev, p_prev, dt, t, plan.n)
    t = float(t)
    s, s_prev = check_states(plan.layout, states, states_prev)
    n, m = plan.n, plan.n_states
    x = q if m == 0 else np.concatenate([q, s])
    if not tangent:
        R, ref = _residual_batch(system, x[None, :n], q_prev, p_prev, dt, t, x[None, n:], s_prev, fast=fast)
        return RigidStep(R[0].real, None, (q - q_prev) / dt, float(ref), m)
    if n + m == 0:
        R, ref = _residual_batch(system, np.zeros((1, 0), complex), q_prev, p_prev, dt, t, fast=fast)
        return RigidStep(R[0].real, np.zeros((0, 0)), (q - q_prev) / dt, float(ref), m)
    # the complex step (complex_jacobian): one batch x + i h I, row j gives column j of the tangent
    X = x + plan.complex_steps(n + m)
    R, ref = _residual_batch(system, X[:, :n], q_prev, p_prev, dt, t, X[:, n:], s_prev, fast=fast)
    return RigidStep(R[0].real, R.imag.T / COMPLEX_STEP, (q - q_prev) / dt, float(ref), m)


def rigid_step_definition(system: RigidSystem, q, *, q_prev, p_prev, dt: float, t: float, tangent: bool = True,
                          states=None, states_prev=None) -> RigidStep:
    """:func:`rigid_step` evaluated by its definition: :func:`balance` on a full context.

    The same numbers as :func:`rigid_step` (to round-off), without the compiled
    fast path (:func:`compiled_balance`); the tests compare the two.  The
    arguments are those of :func:`rigid_step`.
    """
    return _step(system, q, q_prev, p_prev, dt, t, tangent, states, states_prev, fast=False)


def rigid_static(system: RigidSystem, q, *, t: float, tangent: bool = True) -> RigidStep:
    """Static residual R_st(q) = h(q, 0, t) − Q(q, 0, t) (at rest: gravity, springs, …) and dR_st/dq.

    The rigid part of a static equilibrium (:func:`skfiber.solve_static` with
    bodies); the fiber forces at the attachments are added by the coupling.

    Raises
    ------
    ValueError
        If a force element has internal states (a muscle fiber length has no
        static residual here: integrate in time instead).
    """
    if state_layout(system):
        names = ", ".join(e.name for e, _ in state_layout(system))
        raise ValueError(f"a static equilibrium cannot include force elements with internal states ({names}); "
                         "run the dynamics (simulate_rigid) with damping instead")
    n = system.n
    q = np.asarray(q, dtype=float)
    if q.shape != (n,) or not np.all(np.isfinite(q)):
        raise ValueError(f"q must be {n} finite values {list(system.coordinate_names)}, got {q!r}")
    if not math.isfinite(t):
        raise ValueError(f"t must be finite, got {t!r}")
    ref = [0.0]

    def fn(Q):
        R, ref[0] = balance(system, system.context(Q, np.zeros_like(Q), t))
        return R

    if tangent:
        R, K = complex_jacobian(fn, q)
    else:
        R, K = np.real(fn(q[None, :])[0]), None
    return RigidStep(R, K, np.zeros(n), float(ref[0]))


def rigid_residual(system: RigidSystem, q, *, q_prev, p_prev, dt: float, t: float) -> np.ndarray:
    """R_rb(q⁺) of :func:`rigid_step` (n,)."""
    return rigid_step(system, q, q_prev=q_prev, p_prev=p_prev, dt=dt, t=t, tangent=False).residual


def rigid_tangent(system: RigidSystem, q, *, q_prev, p_prev, dt: float, t: float) -> np.ndarray:
    """dR_rb/dq⁺ of :func:`rigid_step` (n, n)."""
    return rigid_step(system, q, q_prev=q_prev, p_prev=p_prev, dt=dt, t=t).tangent
