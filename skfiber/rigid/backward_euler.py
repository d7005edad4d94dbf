"""One backward-Euler step of the rigid system, solved by Newton (paper eq. 64, rigid part).

:func:`backward_euler_rigid` steps from (qₙ, pₙ) at tₙ to tₙ + Δt: Newton on
the residual of :func:`~skfiber.rigid.rigid_step` (on (q⁺, s⁺) with the
elements' internal states, globalized by a trust region on the states and
a backtracking line search).  The theory: :mod:`skfiber.rigid.integrate`;
a whole run: :func:`~skfiber.rigid.simulate_rigid`.

Examples
--------
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> q, p, report = backward_euler_rigid(system, [0.1], [0.0], 0.0, 0.01)
>>> bool(q[0] < 0.1 and p[0] < 0), report.iterations <= 3
(True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..core import ConvergenceError, NewtonOptions
from .element_states import check_states, layout_size, state_layout, state_scales
from .step import rigid_step
from .system import RigidSystem

__all__ = ["backward_euler_rigid", "RigidNewtonReport", "STEP_TOL", "STATE_STEP"]

#: relative size of a final Newton update that counts as converged (see backward_euler_rigid)
STEP_TOL = 1e-8


@dataclass
class RigidNewtonReport:
    """How the Newton iteration of one :func:`backward_euler_rigid` step went."""

    #: Newton iterations (residual evaluations after the first)
    iterations: int
    residual_history: list[float]
    #: s⁺, the new element states (empty without stateful elements)
    states: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: ‖R_s‖∞ of each iteration (empty without stateful elements)
    state_residual_history: list[float] = field(default_factory=list)


def backward_euler_rigid(system: RigidSystem, q_prev, p_prev, t_prev: float, dt: float, *,
                         options=None, step: int | str = 0, a_prev=None, states_prev=None,
                         state_rate_prev=None, anchors=None):
    """One backward-Euler step from (qₙ, pₙ) at tₙ to tₙ + Δt: returns (q⁺, p⁺, report).

    ``anchors`` = (q̂, p̂, ŝ, ĥ) makes it a BDF2 step (:mod:`skfiber.core.bdf`):
    p⁺ = (q⁺ − q̂)/ĥ, the acceleration (p⁺ − p̂)/ĥ and the state rows
    (s⁺ − ŝ − ĥ ṡ)/s_scale replace the backward-Euler quotients (ŝ None
    without element states); the predictor still starts from (qₙ, pₙ, Δt).

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
    (:func:`_newton`: a trust region on the states and a backtracking line
    search) and ``report.states`` is s⁺.
    """
    options = NewtonOptions() if options is None else options
    q_prev = np.asarray(q_prev, dtype=float)
    p_prev = np.asarray(p_prev, dtype=float)
    t = float(t_prev) + dt
    q = q_prev + dt * p_prev
    layout = state_layout(system)
    if layout_size(layout):
        if states_prev is None:
            check_states(layout, None, None)  # raises the explanatory error
        s_prev = np.asarray(states_prev, dtype=float)
        s = s_prev if state_rate_prev is None else s_prev + dt * np.asarray(state_rate_prev, dtype=float)
    else:
        if states_prev is not None and np.size(states_prev):
            raise ValueError("states_prev was given but no force element of the system has internal states")
        s_prev = s = None
        if a_prev is not None:
            q = q + dt**2 * np.asarray(a_prev, dtype=float)
    anchors = (q_prev, p_prev, s_prev, dt) if anchors is None else anchors
    return _newton(system, layout, q, s, t, options=options, step=step, anchors=anchors)


#: largest scaled element-state change |Δs/s_scale| of one Newton iteration (trust region)
STATE_STEP = 0.25


def _newton(system, layout, q, s, t, *, options, step, anchors):
    """Newton on q⁺, or on (q⁺, s⁺) with the elements' internal states ``s`` (None without them).

    Without states every update Δq = −K⁻¹R is taken in full, and a last update below ``STEP_TOL`` ends it
    (see :func:`backward_euler_rigid`).  With states Newton is globalized for their stiffness: each update
    Δx = −K⁻¹R is first shortened so that no scaled state moves by more than ``STATE_STEP`` (a muscle fiber
    by a quarter of its optimal length), then halved (at most ``options.line_search`` times) until
    Deuflhard's natural monotonicity test holds: the simplified Newton update at the trial point,
    ‖K⁻¹R(x + δΔx)‖, is below (1 − δ/2)‖Δx‖ (norms of (Δq, Δs/s_scale)).  The test is invariant to the
    scaling of the rows, so forces and state rates need no common unit.
    """
    q_hat, p_hat, s_hat, h_eff = anchors
    n = q.shape[0]
    stateful = s is not None
    if stateful:
        scale = state_scales(layout)
        weights = np.concatenate([np.ones(n), 1.0 / scale])
    history: list[float] = []
    s_history: list[float] = []

    def evaluate(q, s):
        try:
            if stateful:
                return rigid_step(system, q, q_prev=q_hat, p_prev=p_hat, dt=h_eff, t=t, states=s, states_prev=s_hat)
            return rigid_step(system, q, q_prev=q_hat, p_prev=p_hat, dt=h_eff, t=t)
        except FloatingPointError as err:
            raise ConvergenceError(str(err), t=t, step=step, residual_history=history) from err

    def report(iterations):
        return RigidNewtonReport(iterations, history, s.copy(), s_history) if stateful else RigidNewtonReport(
            iterations, history)

    ev = evaluate(q, s)
    for it in range(options.max_iterations + 1):
        res = float(np.linalg.norm(ev.residual[:n]))
        history.append(res)
        res_s = 0.0
        if stateful:
            res_s = float(np.max(np.abs(ev.residual[n:])))
            s_history.append(res_s)
        if not (math.isfinite(res) and math.isfinite(res_s)):
            what = "rigid" if not math.isfinite(res) else "element-state"
            raise ConvergenceError(f"the {what} residual is not finite", t=t, step=step, residual_history=history)
        if res <= options.rtol * ev.reference_force + options.atol and res_s <= options.rtol:
            return q, ev.velocity, report(it)
        if it == options.max_iterations:
            break
        try:  # (with states the line search solves with the same factors again)
            if stateful:
                lu = scipy.linalg.lu_factor(ev.tangent, check_finite=True)
                dx = -scipy.linalg.lu_solve(lu, ev.residual)
            else:
                dx = np.linalg.solve(ev.tangent, -ev.residual)
        except (ValueError, np.linalg.LinAlgError) as err:
            raise ConvergenceError(f"singular rigid tangent ({err})", t=t, step=step, residual_history=history) from err
        if not stateful:
            q = q + dx
            if (res <= math.sqrt(options.rtol) * ev.reference_force
                    and np.linalg.norm(dx) <= STEP_TOL * max(1.0, float(np.linalg.norm(q)))):
                return q, (q - q_hat) / h_eff, report(it + 1)  # (the residual there: of the order of Δq²)
            ev = evaluate(q, s)
            continue
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
    if not stateful:
        raise ConvergenceError(f"no convergence in {options.max_iterations} iterations", t=t, step=step,
                               residual_history=history)
    state_hist = ", ".join(f"{r:.3e}" for r in s_history)
    raise ConvergenceError(f"no convergence in {options.max_iterations} iterations (element-state residual "
                           f"history ‖R_s‖∞: [{state_hist}])", t=t, step=step, residual_history=history)
