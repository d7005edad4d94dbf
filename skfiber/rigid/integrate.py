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

from .system import RigidSystem, complex_jacobian

# skfiber.solver (ConvergenceError, NewtonOptions) is imported inside the functions, so that
# skfiber.model / skfiber.solver may import skfiber.rigid without an import cycle.

#: relative size of a final Newton update that counts as converged (see backward_euler_rigid)
STEP_TOL = 1e-8

__all__ = ["RigidStep", "rigid_step", "rigid_residual", "rigid_tangent", "backward_euler_rigid",
           "simulate_rigid", "RigidResult", "RigidNewtonReport"]


@dataclass(frozen=True)
class RigidStep:
    """R_rb(q⁺; qₙ, pₙ, Δt, t⁺), its tangent dR_rb/dq⁺ and what goes with them.

    ``velocity`` p⁺ = (q⁺ − qₙ)/Δt; ``reference_force`` the largest of
    ‖M (p⁺ − pₙ)/Δt‖, ‖h‖ and the elements' ‖Q_e‖ (scale for convergence).
    """

    residual: np.ndarray
    tangent: np.ndarray | None
    velocity: np.ndarray
    reference_force: float


def _check_step(system, q, q_prev, p_prev, dt, t):
    n = system.n
    arrays = []
    for name, a in (("q", q), ("q_prev", q_prev), ("p_prev", p_prev)):
        a = np.asarray(a)
        if a.shape != (n,):
            raise ValueError(f"{name} must have {n} entries {list(system.coordinate_names)}, got shape {a.shape}")
        arrays.append(a)
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be > 0, got {dt!r}")
    if not math.isfinite(t):
        raise ValueError(f"t must be finite, got {t!r}")
    return arrays


def _residual_batch(system: RigidSystem, Q, q_prev, p_prev, dt, t):
    P = (Q - q_prev) / dt
    ctx = system._context(Q, P, t)
    M, h = system._inertia(ctx)
    forces = system._forces(ctx)
    inertia = np.einsum("xkl,xl->xk", M, (P - p_prev) / dt)
    total = sum(forces.values(), np.zeros_like(h))
    ref = max([np.linalg.norm(np.real(inertia[0])), np.linalg.norm(np.real(h[0]))]
              + [np.linalg.norm(np.real(v[0])) for v in forces.values()])
    return inertia + h - total, ref


def rigid_step(system: RigidSystem, q, *, q_prev, p_prev, dt: float, t: float, tangent: bool = True) -> RigidStep:
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
    """
    q, q_prev, p_prev = _check_step(system, q, q_prev, p_prev, dt, t)
    q = np.asarray(q, dtype=float)
    ref = [0.0]

    def fn(Q):
        R, ref[0] = _residual_batch(system, Q, q_prev, p_prev, dt, t)
        return R

    if tangent:
        R, K = complex_jacobian(fn, q)
    else:
        R, K = np.real(fn(q[None, :])[0]), None
    return RigidStep(R, K, (q - q_prev) / dt, float(ref[0]))


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


def backward_euler_rigid(system: RigidSystem, q_prev, p_prev, t_prev: float, dt: float, *,
                         options=None, step: int | str = 0, a_prev=None):
    """One backward-Euler step from (qₙ, pₙ) at tₙ to tₙ + Δt: returns (q⁺, p⁺, report).

    Newton on R_rb(q⁺) = 0 from the predictor q⁺ = qₙ + Δt pₙ + Δt² aₙ
    (``a_prev`` = aₙ, the last step's (pₙ − pₙ₋₁)/Δt, default 0); converged when
    ‖R_rb‖ ≤ rtol·F_ref + atol (``options`` of :class:`skfiber.NewtonOptions`),
    or when a Newton update is below ``STEP_TOL``·max(1, ‖q‖) after the
    residual has already dropped below √rtol·F_ref (then the remaining
    residual is of the order of the update squared: Newton converges
    quadratically here), which saves the last residual evaluation.
    Raises :class:`skfiber.ConvergenceError` with the residual history.
    """
    from ..solver import ConvergenceError, NewtonOptions

    options = NewtonOptions() if options is None else options
    q_prev = np.asarray(q_prev, dtype=float)
    p_prev = np.asarray(p_prev, dtype=float)
    t = float(t_prev) + dt
    q = q_prev + dt * p_prev
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


@dataclass
class RigidResult:
    """Time series of a rigid backward-Euler run: ``q[i]``, ``p[i]`` at ``times[i]``."""

    times: np.ndarray
    q: np.ndarray
    p: np.ndarray
    newton_iterations: list[int] = field(default_factory=list)
    retries: int = 0


def simulate_rigid(system: RigidSystem, q0, p0, t_end: float, dt: float, *, t0: float = 0.0,
                   options=None, max_bisections: int = 6,
                   callback=None) -> RigidResult:
    """Integrate the rigid system with backward Euler from (q0, p0) at t0 to t_end.

    The step is Δt = (t_end − t0)/N with N = ⌈(t_end − t0)/dt⌉.  A step whose
    Newton iteration fails is retried in 2, 4, … substeps (at most
    ``max_bisections`` halvings).  ``callback(t, q, p)`` after each step.
    ``options``: :class:`skfiber.NewtonOptions` (default settings if None).
    """
    from ..solver import ConvergenceError
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
    Q = np.empty((n_steps + 1, n)); P = np.empty((n_steps + 1, n))
    Q[0], P[0] = q0, p0
    iterations, retries = [], 0
    a = np.zeros(n)  # last step's acceleration, for the predictor
    for i in range(n_steps):
        q, p = Q[i], P[i]
        for level in range(max_bisections + 1):
            sub = 2**level
            try:
                qq, pp, its, aa = q, p, 0, a
                for j in range(sub):
                    q1, p1, rep = backward_euler_rigid(system, qq, pp, times[i] + j * h / sub, h / sub,
                                                       options=options, step=i + 1, a_prev=aa)
                    aa = (p1 - pp) / (h / sub)
                    qq, pp = q1, p1
                    its += rep.iterations
                a = aa
                break
            except ConvergenceError:
                if level == max_bisections:
                    raise
                retries += 1
        Q[i + 1], P[i + 1] = qq, pp
        iterations.append(its)
        if callback is not None:
            callback(times[i + 1], qq, pp)
    return RigidResult(times, Q, P, iterations, retries)
