"""Backward Euler for the rigid system alone (paper eq. 64, rigid part).

    q⁺ = qₙ + Δt p⁺,   M(q⁺, t⁺) (p⁺ − pₙ)/Δt + h(q⁺, p⁺, t⁺) − Q(q⁺, p⁺, t⁺) = 0.

Eliminating p⁺ = (q⁺ − qₙ)/Δt leaves R_rb(q⁺) = 0, solved by Newton on q⁺
with the consistent tangent dR_rb/dq⁺ = ∂R/∂q + (1/Δt) ∂R/∂p (complex
step on the analytic expressions: exact to round-off).

In the coupled system (eq. 64 with fibers, dependent fiber DOFs
u_D = c(q) eliminated) the q-rows are R_rb(q⁺) + C(q⁺)ᵀ G_D, G_D being the
fiber residual (inertia + internal − external) at the dependent DOFs, i.e.
the force the fiber exerts on the attachment (eq. 62); :func:`rigid_step`
gives R_rb and dR_rb/dq⁺ for that assembly.

Force elements with internal states (e.g. the fiber length of an
elastic-tendon :class:`skfiber.hill.HillActuator`) declare them with the
optional protocol ``n_states`` (int, fixed once the element is added),
``state_names``, ``state_scale`` (m,), ``initial_states(ctx)`` → (B, m) and
``state_rates(ctx)`` → (B, m) = ṡ(q, q̇, s, t);
their force and rates read the states from ``ctx.element_states[name]`` (B, m).
The states s of all such elements join q as unknowns of the same step, with
the backward-Euler rows

    R_s(q⁺, s⁺) = (s⁺ − sₙ − Δt ṡ(q⁺, p⁺, s⁺, t⁺)) / s_scale = 0,

and Newton runs on (q⁺, s⁺) with the tangent d(R_rb, R_s)/d(q⁺, s⁺) by the same
complex step (an element whose law is not complex-step safe propagates the
imaginary parts through its own analytic tangent, as ``HillActuator`` does).
Without such elements nothing changes.

:func:`rigid_step` runs once per Newton residual of a coupled model, so it is
built for a small cost per call: the tables of the tree and the element
layout are kept per assembled system (``RigidSystem._plan``), and M a + h and
the weight of all configurations of the complex-step batch come from one
compiled call (:func:`_fast_balance`); other force elements are evaluated
through ``force(ctx)`` as always.  :func:`_balance` on a full context is the
definition (the tests compare the two).

Example
-------
>>> import numpy as np
>>> from skfiber.rigid import Body, Revolute, RigidSystem, simulate_rigid
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> result = simulate_rigid(system, [0.1], [0.0], t_end=0.1, dt=0.01)
>>> result.q.shape, max(result.newton_iterations) <= 3
((11, 1), True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..core import ConvergenceError, NewtonOptions
from .kernels import euler_step_terms, euler_terms
from .system import COMPLEX_STEP, RigidSystem, complex_jacobian

# skfiber.solver (ConvergenceError, NewtonOptions) is imported inside the functions, so that
# skfiber.model / skfiber.solver may import skfiber.rigid without an import cycle.

#: relative size of a final Newton update that counts as converged (see backward_euler_rigid)
STEP_TOL = 1e-8

__all__ = ["RigidStep", "EulerStep", "rigid_step", "rigid_static", "rigid_residual", "rigid_tangent", "backward_euler_rigid",
           "simulate_rigid", "RigidResult", "RigidNewtonReport", "element_state_names",
           "initial_element_states"]


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


def _state_layout(system: RigidSystem) -> list:
    """[(element, slice into s)] of the force elements with internal states (kept by the system's plan)."""
    return system._plan().layout


def _n_states(layout) -> int:
    return layout[-1][1].stop if layout else 0


def _state_scale(layout) -> np.ndarray:
    if not layout:
        return np.zeros(0)
    return np.concatenate([np.broadcast_to(np.asarray(e.state_scale, dtype=float), (sl.stop - sl.start,))
                           for e, sl in layout])


def element_state_names(system: RigidSystem) -> tuple[str, ...]:
    """Names of the internal states of all force elements, in the order of s."""
    return tuple(name for e, _ in _state_layout(system) for name in e.state_names)


def initial_element_states(system: RigidSystem, q, p, t: float = 0.0) -> np.ndarray:
    """The elements' own initial states s₀ (m,) at (q, p, t) (e.g. muscle fibers in static equilibrium)."""
    layout = _state_layout(system)
    if not layout:
        return np.zeros(0)
    q = np.asarray(q, dtype=float)[None, :]
    ctx = system._context(q, np.asarray(p, dtype=float)[None, :], float(t))
    return np.concatenate([np.asarray(e.initial_states(ctx), dtype=float).reshape(1, -1)[0] for e, _ in layout])


def _check_states(layout, states, states_prev):
    m = _n_states(layout)
    if m == 0:
        if states is not None and np.size(states) or states_prev is not None and np.size(states_prev):
            raise ValueError("states were given but no force element of the system has internal states")
        return None, None
    if states is None or states_prev is None:
        names = ", ".join(e.name for e, _ in layout)
        raise ValueError(f"force elements with internal states ({names}) need states= and states_prev= "
                         f"({m} values each, see element_state_names); simulate_rigid and backward_euler_rigid "
                         "pass them. The coupled fiber solver does not integrate element states: use elements "
                         "without states there (e.g. a rigid-tendon HillActuator driven by an activation)")
    out = []
    for name, a in (("states", states), ("states_prev", states_prev)):
        a = np.asarray(a, dtype=float)
        if a.shape != (m,) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be {m} finite values {list(n for e, _ in layout for n in e.state_names)}, "
                             f"got {a!r}")
        out.append(a)
    return out


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


def _balance(system: RigidSystem, ctx, acceleration=None):
    """M a + h − Q at the context's (q, q̇, t) (a = None: at rest, no inertia term) and its force scale."""
    M, h = system._inertia(ctx)
    forces = list(system._forces(ctx).values())
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


def _fast_balance(system: RigidSystem, Q, q_prev, p_prev, dt, t: float, S=None):
    """(R, ref, ctx): R, ref of :func:`_balance` at (Q, P, t) with P = (Q − qₙ)/Δt and A = (P − pₙ)/Δt
    (to round-off), and the context of the force elements.

    M A, h and the weight of the system's gravity come from one compiled call
    (:func:`.kernels.euler_terms`); only the other force elements need a
    context ``ctx`` (None if there are none), which gets
    ``ctx.element_states`` from S when elements have internal states.
    Q (B, n) C-contiguous; t a number.
    """
    plan = system._plan()
    gravity = plan.gravity
    F, ref = euler_terms(Q, q_prev, p_prev, dt, _NO_GRAVITY if gravity is None else gravity.g,
                         *plan.kernel_args(t))
    R = F[3]  # (h − Q_g) + M A
    if not plan.elements:
        return R, ref, None
    ctx = system._context(Q, (Q - q_prev) / dt, t)
    if plan.layout:
        ctx.element_states = {e.name: S[:, sl] for e, sl in plan.layout}
    for Qe in system._forces(ctx, plan.elements).values():
        R = R - Qe
        v0 = Qe[0].real
        ref = max(ref, math.sqrt(float(v0 @ v0)))
    return R, ref, ctx


_NO_GRAVITY = np.zeros(3)


def _residual_batch(system: RigidSystem, Q, q_prev, p_prev, dt, t, S=None, s_prev=None, *, fast: bool = True):
    """R (B, n + m) and ref of the backward-Euler step at a batch of (q⁺, s⁺) (t a number).

    ``fast``: :func:`_fast_balance`; else :func:`_balance` on a full context,
    the definition (the tests compare the two).
    """
    layout = system._plan().layout
    Q = np.ascontiguousarray(Q)
    if fast:
        R, ref, ctx = _fast_balance(system, Q, q_prev, p_prev, dt, t, S)
    else:
        P = (Q - q_prev) / dt
        ctx = system._context(Q, P, t)
        if layout:
            ctx.element_states = {e.name: S[:, sl] for e, sl in layout}
        R, ref = _balance(system, ctx, (P - p_prev) / dt)
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
        (see the module notes); the residual is then (R_rb, R_s) and the
        tangent is taken with respect to (q⁺, s⁺).
    """
    return _step(system, q, q_prev, p_prev, dt, t, tangent, states, states_prev, fast=True)


class EulerStep:
    """One backward-Euler step of a rigid system as a function of q⁺: ``step(q)`` is
    :func:`rigid_step` (``q_prev``, ``p_prev``, ``dt``, ``t`` fixed).

    The coupled fiber solver evaluates it once per Newton residual
    (:mod:`skfiber.coupling_fast` asks for :meth:`terms`).

    Example
    -------
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem(gravity=(0, 0, -9.81))
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> step = EulerStep(system, q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01)
    >>> bool(np.allclose(step.terms(np.array([0.0]))[0], step([0.0]).residual))
    True
    """

    def __init__(self, system: RigidSystem, *, q_prev, p_prev, dt: float, t: float):
        plan = system._plan()
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
        plan = self.system._plan()
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
    """:func:`rigid_step`; ``fast=False`` evaluates the definition (:func:`_balance`), for the tests."""
    plan = system._plan()
    q, q_prev, p_prev = _check_step(system, q, q_prev, p_prev, dt, t, plan.n)
    t = float(t)
    s, s_prev = _check_states(plan.layout, states, states_prev)
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
    if _state_layout(system):
        names = ", ".join(e.name for e, _ in _state_layout(system))
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
        R, ref[0] = _balance(system, system._context(Q, np.zeros_like(Q), t))
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


@dataclass
class RigidNewtonReport:
    iterations: int
    residual_history: list[float]
    #: s⁺, the new element states (empty without stateful elements)
    states: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: ‖R_s‖∞ of each iteration (empty without stateful elements)
    state_residual_history: list[float] = field(default_factory=list)


def backward_euler_rigid(system: RigidSystem, q_prev, p_prev, t_prev: float, dt: float, *,
                         options=None, step: int | str = 0, a_prev=None, states_prev=None,
                         state_rate_prev=None):
    """One backward-Euler step from (qₙ, pₙ) at tₙ to tₙ + Δt: returns (q⁺, p⁺, report).

    Newton on R_rb(q⁺) = 0 from the predictor q⁺ = qₙ + Δt pₙ + Δt² aₙ
    (``a_prev`` = aₙ, the last step's (pₙ − pₙ₋₁)/Δt, default 0); converged when
    ‖R_rb‖ ≤ rtol·F_ref + atol (``options`` of :class:`skfiber.NewtonOptions`),
    or when a Newton update is below ``STEP_TOL``·max(1, ‖q‖) after the
    residual has already dropped below √rtol·F_ref (then the remaining
    residual is of the order of the update squared: Newton converges
    quadratically here), which saves the last residual evaluation.
    Raises :class:`skfiber.ConvergenceError` with the residual history.

    With stateful force elements ``states_prev`` = sₙ is required; the
    unknowns are then (q⁺, s⁺), the predictor is q⁺ = qₙ + Δt pₙ,
    s⁺ = sₙ + Δt ṡₙ (``state_rate_prev`` = ṡₙ, the last step's (sₙ − sₙ₋₁)/Δt,
    default 0; ``a_prev`` is not used: extrapolating the acceleration of a
    stiff muscle-driven step overshoots, and Newton may then find another root
    of the implicit equations), the state rows converge when ‖R_s‖∞ ≤ rtol
    (they are scaled by the elements' ``state_scale``), Newton is globalized
    (:func:`_newton_with_states`: a trust region on the states and a
    backtracking line search) and ``report.states`` is s⁺.
    """
    options = NewtonOptions() if options is None else options
    q_prev = np.asarray(q_prev, dtype=float)
    p_prev = np.asarray(p_prev, dtype=float)
    t = float(t_prev) + dt
    q = q_prev + dt * p_prev
    layout = _state_layout(system)
    if _n_states(layout):
        return _newton_with_states(system, layout, q, q_prev, p_prev, t, dt, options=options, step=step,
                                   states_prev=states_prev, state_rate_prev=state_rate_prev)
    if states_prev is not None and np.size(states_prev):
        raise ValueError("states_prev was given but no force element of the system has internal states")
    if a_prev is not None:
        q = q + dt**2 * np.asarray(a_prev, dtype=float)
    history: list[float] = []
    for it in range(options.max_iterations + 1):
        try:
            ev = rigid_step(system, q, q_prev=q_prev, p_prev=p_prev, dt=dt, t=t)
        except FloatingPointError as err:
            raise ConvergenceError(str(err), t=t, step=step, residual_history=history) from err
        res = float(np.linalg.norm(ev.residual))
        history.append(res)
        if not math.isfinite(res):
            raise ConvergenceError("the rigid residual is not finite", t=t, step=step, residual_history=history)
        if res <= options.rtol * ev.reference_force + options.atol:
            return q, ev.velocity, RigidNewtonReport(it, history)
        if it == options.max_iterations:
            break
        try:
            dq = np.linalg.solve(ev.tangent, -ev.residual)
        except np.linalg.LinAlgError as err:
            raise ConvergenceError(f"singular rigid tangent ({err})", t=t, step=step, residual_history=history) from err
        q = q + dq
        if (res <= math.sqrt(options.rtol) * ev.reference_force
                and np.linalg.norm(dq) <= STEP_TOL * max(1.0, float(np.linalg.norm(q)))):
            return q, (q - q_prev) / dt, RigidNewtonReport(it + 1, history)
    raise ConvergenceError(f"no convergence in {options.max_iterations} iterations", t=t, step=step,
                           residual_history=history)


#: largest scaled element-state change |Δs/s_scale| of one Newton iteration (trust region)
STATE_STEP = 0.25


def _newton_with_states(system, layout, q, q_prev, p_prev, t, dt, *, options, step, states_prev,
                        state_rate_prev):
    """Newton on (q⁺, s⁺), globalized for stiff element states.

    Each update Δx = −K⁻¹R is first shortened so that no scaled state moves
    by more than ``STATE_STEP`` (a muscle fiber by a quarter of its optimal
    length), then halved (at most ``options.line_search`` times) until
    Deuflhard's natural monotonicity test holds: the simplified Newton update
    at the trial point, ‖K⁻¹R(x + δΔx)‖, is below (1 − δ/2)‖Δx‖ (norms of
    (Δq, Δs/s_scale)).  The test is invariant to the scaling of the rows, so
    forces and state rates need no common unit.
    """
    if states_prev is None:
        _check_states(layout, None, None)  # raises the explanatory error
    n = q.shape[0]
    s_prev = np.asarray(states_prev, dtype=float)
    s = s_prev.copy()
    if state_rate_prev is not None:
        s = s + dt * np.asarray(state_rate_prev, dtype=float)
    scale = _state_scale(layout)
    weights = np.concatenate([np.ones(n), 1.0 / scale])
    history: list[float] = []
    s_history: list[float] = []

    def evaluate(q, s):
        try:
            return rigid_step(system, q, q_prev=q_prev, p_prev=p_prev, dt=dt, t=t, states=s, states_prev=s_prev)
        except FloatingPointError as err:
            raise ConvergenceError(str(err), t=t, step=step, residual_history=history) from err

    ev = evaluate(q, s)
    for it in range(options.max_iterations + 1):
        res = float(np.linalg.norm(ev.residual[:n]))
        res_s = float(np.max(np.abs(ev.residual[n:])))
        history.append(res)
        s_history.append(res_s)
        if not (math.isfinite(res) and math.isfinite(res_s)):
            what = "rigid" if not math.isfinite(res) else "element-state"
            raise ConvergenceError(f"the {what} residual is not finite", t=t, step=step, residual_history=history)
        if res <= options.rtol * ev.reference_force + options.atol and res_s <= options.rtol:
            return q, ev.velocity, RigidNewtonReport(it, history, s.copy(), s_history)
        if it == options.max_iterations:
            break
        try:
            lu = scipy.linalg.lu_factor(ev.tangent, check_finite=True)
        except (ValueError, np.linalg.LinAlgError) as err:
            raise ConvergenceError(f"singular rigid tangent ({err})", t=t, step=step, residual_history=history) from err
        dx = -scipy.linalg.lu_solve(lu, ev.residual)
        size = float(np.linalg.norm(weights * dx))
        largest = float(np.max(np.abs(dx[n:] / scale)))
        delta = min(1.0, STATE_STEP / largest) if largest > 0 else 1.0
        for k in range(options.line_search + 1):
            trial = evaluate(q + delta * dx[:n], s + delta * dx[n:])
            simplified = float(np.linalg.norm(weights * scipy.linalg.lu_solve(lu, trial.residual)))
            if (math.isfinite(simplified) and simplified <= (1.0 - 0.5 * delta) * size) or k == options.line_search:
                break
            delta *= 0.5
        q, s, ev = q + delta * dx[:n], s + delta * dx[n:], trial
    state_hist = ", ".join(f"{r:.3e}" for r in s_history)
    raise ConvergenceError(f"no convergence in {options.max_iterations} iterations (element-state residual "
                           f"history ‖R_s‖∞: [{state_hist}])", t=t, step=step, residual_history=history)


@dataclass
class RigidResult:
    """Time series of a rigid backward-Euler run: ``q[i]``, ``p[i]`` (and element ``states[i]``) at ``times[i]``."""

    times: np.ndarray
    q: np.ndarray
    p: np.ndarray
    newton_iterations: list[int] = field(default_factory=list)
    retries: int = 0
    #: internal states of the force elements (len(times), m); m = 0 without stateful elements
    states: np.ndarray | None = None
    #: their names (:func:`element_state_names`)
    state_names: tuple[str, ...] = ()
    #: True when Ctrl-C stopped the run: the arrays hold the steps done until then
    interrupted: bool = False


def simulate_rigid(system: RigidSystem, q0, p0, t_end: float, dt: float, *, t0: float = 0.0,
                   options=None, max_bisections: int = 6,
                   callback=None, states0=None) -> RigidResult:
    """Integrate the rigid system with backward Euler from (q0, p0) at t0 to t_end.

    The step is Δt = (t_end − t0)/N with N = ⌈(t_end − t0)/dt⌉.  A step whose
    Newton iteration fails is retried in 2, 4, … substeps (at most
    ``max_bisections`` halvings).  ``callback(t, q, p)`` after each step.
    ``options``: :class:`skfiber.NewtonOptions` (default settings if None).

    Force elements with internal states are integrated in the same Newton
    iteration (module notes); their initial states are ``states0`` or, by
    default, :func:`initial_element_states` at (q0, p0, t0), and
    ``result.states`` holds their time series.

    Ctrl-C stops the run with a warning and returns the steps done so far
    (``result.interrupted``).
    """
    import warnings

    q0 = np.asarray(q0, dtype=float)
    p0 = np.asarray(p0, dtype=float)
    n = system.n
    if q0.shape != (n,) or p0.shape != (n,):
        raise ValueError(f"q0 and p0 must have {n} entries {list(system.coordinate_names)}, got {q0.shape}, {p0.shape}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be > 0, got {dt!r}")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0}, got {t_end!r}")
    n_steps = max(1, math.ceil((t_end - t0) / dt - 1e-9))
    h = (t_end - t0) / n_steps
    times = t0 + h * np.arange(n_steps + 1)
    layout = _state_layout(system)
    m = _n_states(layout)
    if m:
        s0 = initial_element_states(system, q0, p0, t0) if states0 is None else np.asarray(states0, dtype=float)
        _check_states(layout, s0, s0)
    elif states0 is not None and np.size(states0):
        raise ValueError("states0 was given but no force element of the system has internal states")
    Q = np.empty((n_steps + 1, n)); P = np.empty((n_steps + 1, n)); S = np.empty((n_steps + 1, m))
    Q[0], P[0] = q0, p0
    if m:
        S[0] = s0
    iterations, retries = [], 0
    a = np.zeros(n)  # last step's acceleration, for the predictor
    sd = np.zeros(m)  # last step's state rate, for the predictor
    done = n_steps
    try:
        for i in range(n_steps):
            q, p, s = Q[i], P[i], S[i]
            for level in range(max_bisections + 1):
                sub = 2**level
                try:
                    qq, pp, ss, its, aa, sdd = q, p, s, 0, a, sd
                    for j in range(sub):
                        q1, p1, rep = backward_euler_rigid(system, qq, pp, times[i] + j * h / sub, h / sub,
                                                           options=options, step=i + 1, a_prev=aa,
                                                           states_prev=ss if m else None,
                                                           state_rate_prev=sdd if m else None)
                        aa = (p1 - pp) / (h / sub)
                        sdd = (rep.states - ss) / (h / sub)
                        qq, pp, ss = q1, p1, rep.states
                        its += rep.iterations
                    a, sd = aa, sdd
                    break
                except ConvergenceError:
                    if level == max_bisections:
                        raise
                    retries += 1
            Q[i + 1], P[i + 1], S[i + 1] = qq, pp, ss
            iterations.append(its)
            if callback is not None:
                callback(times[i + 1], qq, pp)
    except KeyboardInterrupt:
        done = len(iterations)
        warnings.warn(f"rigid simulation interrupted at t = {times[done]:.6g} s; returning the {done + 1} states "
                      "computed so far")
    k = done + 1
    return RigidResult(times[:k], Q[:k], P[:k], iterations, retries, S[:k], element_state_names(system),
                       done < n_steps)
