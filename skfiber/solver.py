"""Dynamics: backward Euler with Newton, step retries and progress (Newton: :mod:`skfiber.newton`;
statics: :mod:`skfiber.statics`, both re-exported here).

Backward Euler (paper eq. 64, fiber part) with v = (u − uₙ)/Δt and
a = (v − vₙ)/Δt turns each step into G(u) = M a + F_int(u, v) − F_ext(tₙ₊₁) = 0,
solved by Newton on the consistent tangent c_a M + ∂F/∂u + c_v ∂F/∂v with
c_v = 1/Δt, c_a = 1/Δt².  A step that does not converge is retried with
smaller steps; when that fails too, :class:`ConvergenceError` says where and
why.  No unconverged state is ever returned.

Example
-------
>>> from skfiber import Fiber, Model, simulate
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8)
>>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
>>> model.add_gravity()
>>> result = simulate(model, t_end=0.1, dt=0.01, progress=False)
>>> float(result.times[-1])
0.1
"""
from __future__ import annotations

import math
import sys
import threading
import time as _time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .contact.base import margins_kept
from .core import ConvergenceError, EulerRates, NewtonOptions, State
from .linalg import ConstrainedSolver
from .model import Model
from .newton import NewtonReport, make_solver, newton
from .rigid import EulerStep
from .statics import StaticResult, check_admissible_start, check_finite_time, check_step_count, solve_static

__all__ = [
    "NewtonOptions",
    "ConvergenceError",
    "newton",
    "solve_static",
    "simulate",
    "SimulationResult",
    "StaticResult",
    "StepInfo",
    "make_solver",
    "predicted_accelerations",
    "EulerRates",
    "compile_notice",
]


#: the predictor extrapolates the acceleration when it changed over the last step by at most
#: this fraction of its size (see predicted_accelerations).  Measured on the upper limb
#: (Newton iterations of the full runs, constant vs this predictor): level 1 996 → 952,
#: level 3 2458 → 2253, level 4 4487 → 3708 (0.3: 3851; 1.0 at level 4 over 4 s: as 0.5);
#: always extrapolating cost level 2 50 % more failed attempts
PREDICTOR_SMOOTHNESS = 0.5
#: a last step shorter than this fraction of dt is joined to the one before it (simulate)
LAST_STEP_MIN_FRACTION = 0.01
#: simulate(progress=True) explains a first step slower than this (s): numba compiling the kernels
FIRST_STEP_NOTICE_S = 3.0
#: … and this many in backward-Euler steps (a failing step is split in two; at
#: the snap-back of the upper-limb model this halves the evaluations spent in
#: failing attempts, docs/performance.md)
STEP_STAGNATION_WINDOW = 1


@dataclass(frozen=True)
class StepInfo:
    """What a callback learns about the step just finished."""

    step: int
    n_steps: int
    t_end: float
    newton_iterations: int
    #: failed Newton attempts in this step (each one split a (sub)step in two)
    retries: int
    elapsed: float
    active_contacts: int = 0


@dataclass
class SimulationResult:
    """Time series of a backward-Euler run.

    ``displacements[i]`` and ``velocities[i]`` belong to ``times[i]``.
    ``interrupted`` is True when the run was stopped by Ctrl-C; everything
    computed until then is kept.
    """

    times: np.ndarray
    displacements: np.ndarray
    velocities: np.ndarray
    newton_iterations: list[int] = field(default_factory=list)
    residual_histories: list[list[float]] = field(default_factory=list)
    retries: int = 0
    wall_time: float = 0.0
    interrupted: bool = False
    last_state: State | None = None
    #: rigid coordinates q and velocities p at ``times`` (shape (len(times), n); n = 0 without bodies)
    coordinates: np.ndarray | None = None
    rigid_velocities: np.ndarray | None = None

    @property
    def final_state(self) -> State:
        """The last state, with the acceleration the next step's predictor uses
        (continuing from it reproduces an uninterrupted run)."""
        if self.last_state is not None:
            return self.last_state.copy()
        return self.state(-1)

    def state(self, i: int) -> State:
        q = p = None
        if self.coordinates is not None:
            q, p = self.coordinates[i].copy(), self.rigid_velocities[i].copy()
        return State(float(self.times[i]), self.displacements[i].copy(), self.velocities[i].copy(), q=q, p=p)


def backward_euler_step(
    model: Model,
    state: State,
    dt: float,
    solver: ConstrainedSolver,
    *,
    options: NewtonOptions = NewtonOptions(),
    step: int | str = 0,
) -> tuple[State, NewtonReport]:
    """One backward-Euler step from ``state`` to ``state.t + dt``.

    ``solver`` is a :class:`~skfiber.linalg.ConstrainedSolver`, or for a
    model with a rigid system a :class:`~skfiber.coupling.CoupledProblem`
    (Newton on (u_I, q), paper eq. 64).
    """
    options = options.with_stagnation_window(STEP_STAGNATION_WINDOW)
    if hasattr(solver, "solve_newton"):
        return _coupled_step(model, state, dt, solver, options=options, step=step)
    t1 = state.t + dt
    u_n, v_n = state.u, state.v
    a0, _ = predicted_accelerations(state, dt)
    u0 = u_n + dt * v_n + dt**2 * a0
    c = model.constrained_dofs
    u0[c] = model.prescribed_displacement(t1)

    rates = EulerRates(u_prev=u_n, v_prev=v_n, dt=dt)

    def evaluate(u):
        v, a, c_v, c_a = rates(u)
        return model.evaluate(u, v, a, t1, c_v=c_v, c_a=c_a)

    def safeguard(u, du):
        return model.max_step(u, du, t1, delta_bar=options.safeguard)

    def prescribe(u):
        u[c] = model.prescribed_displacement(t1)

    first = None
    if model.contacts:
        u0, first = _admissible_predictor(solver, u_n, u0, evaluate, safeguard, options, prescribe)
    u, report = newton(evaluate, u0, solver, options=options, t=t1, step=step,
                       max_step=safeguard if model.contacts else None, first=first)
    _keep_margins(solver, u, report)
    v = (u - u_n) / dt
    return State(t1, u, v, (v - v_n) / dt, a_prev=state.a, dt_last=dt), report


def predicted_accelerations(state: State, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The accelerations (fibers, bodies) the predictor of a step of size ``dt`` from ``state`` assumes.

    The step's solution is predicted as uₙ + Δt vₙ + Δt² a (and likewise for q).
    a is the last step's acceleration extrapolated linearly in time,
    aₙ + (Δt/Δtₙ)(aₙ − aₙ₋₁), when the accelerations vary smoothly —
    ‖(aₙ, bₙ) − (aₙ₋₁, bₙ₋₁)‖ ≤ :data:`PREDICTOR_SMOOTHNESS` ‖(aₙ, bₙ)‖ — and
    the last one aₙ otherwise (or when aₙ₋₁ is unknown).  The converged step
    does not depend on the predictor beyond Newton's tolerance; a better one
    saves iterations.

    Example
    -------
    >>> import numpy as np
    >>> from skfiber.model import State
    >>> s = State(0.2, np.zeros(2), np.zeros(2), np.array([1.0, 2.0]), a_prev=np.array([0.9, 1.9]), dt_last=0.1)
    >>> predicted_accelerations(s, 0.1)[0]
    array([1.1, 2.1])
    """
    a, b = state.a, state.b
    if state.dt_last <= 0 or state.a_prev.shape != a.shape or state.b_prev.shape != b.shape:
        return a, b
    da, db = a - state.a_prev, b - state.b_prev
    change = math.sqrt(float(da @ da) + float(db @ db))
    size = math.sqrt(float(a @ a) + float(b @ b))
    if not change <= PREDICTOR_SMOOTHNESS * size:
        return a, b
    r = dt / state.dt_last
    return a + r * da, b + r * db


def _admissible_predictor(solver, x_n, x0, evaluate, max_step, options, prescribe):
    """The predictor x0 kept admissible (eq. 71 from xₙ) and its evaluation, if made.

    When the contact margins at xₙ are known (the last step's converged
    evaluation, kept on ``solver`` by :func:`_keep_margins`) and the
    evaluation at x0 keeps them (:func:`margins_kept`), x0 is taken with that
    evaluation.  Otherwise the safeguard ``max_step(xₙ, x0 − xₙ)`` shortens the
    move from xₙ.
    """
    ev = None
    memo = solver.end_margins
    if memo is not None and memo[0] == x_n.tobytes():
        try:
            ev = evaluate(x0)
        except FloatingPointError:  # inadmissible: let the safeguard shorten the move
            ev = None
        if ev is not None and ev.margins is not None and margins_kept(memo[1], ev.margins, options.safeguard):
            return x0, ev
    delta = max_step(x_n, x0 - x_n)
    if delta < 1.0:
        x0 = x_n + delta * (x0 - x_n)
        prescribe(x0)
        return x0, None
    return x0, ev


def _keep_margins(solver, x: np.ndarray, report: NewtonReport) -> None:
    """Remember the contact margins of the converged state x for the next step's predictor."""
    solver.end_margins = None if report.margins is None else (x.tobytes(), report.margins)


def _coupled_step(model: Model, state: State, dt: float, problem, *, options: NewtonOptions, step) -> tuple[State, NewtonReport]:
    """Backward Euler (paper eq. 64) for fibers + rigid bodies: Newton on z = (u_I, q).

    v = (u − uₙ)/Δt and p = (q − qₙ)/Δt for all DOFs, the attached ends
    included (v_D from their positions c(q)).
    """

    t1 = state.t + dt
    u_n, v_n, q_n, p_n = state.u, state.v, state.q, state.p
    z_n = np.concatenate([u_n, q_n])
    a0, b0 = predicted_accelerations(state, dt)
    z0 = np.concatenate([u_n + dt * v_n + dt**2 * a0, q_n + dt * p_n + dt**2 * b0])
    c = model.constrained_dofs
    z0[c] = model.prescribed_displacement(t1)

    fiber_state = EulerRates(u_prev=u_n, v_prev=v_n, dt=dt)
    # R_rb(q) with its tangent (it costs 10 % on top of the residual here: not worth deferring)
    rigid_state = EulerStep(model.rigid, q_prev=q_n, p_prev=p_n, dt=dt, t=t1)

    def evaluate(z):
        return problem.evaluate(z, t1, fiber_state=fiber_state, rigid_state=rigid_state)

    def safeguard(z, dz):
        return problem.max_step(z, dz, t1, delta_bar=options.safeguard)

    def prescribe(z):
        z[c] = model.prescribed_displacement(t1)

    first = None
    if model.contacts:  # keep the predictor admissible (as in the fiber-only step)
        z0, first = _admissible_predictor(problem, z_n, z0, evaluate, safeguard, options, prescribe)
    z, report = newton(evaluate, z0, problem, options=options, t=t1, step=step,
                       max_step=safeguard if model.contacts else None, first=first)
    u, q, _ = problem.expand(z, t1, kinematics=False)
    model.set_coordinates(q)  # body cylinders at the step's end (the fast path does not move them)
    _keep_margins(problem, np.concatenate([u, q]), report)
    v = (u - u_n) / dt
    p = (q - q_n) / dt
    return State(t1, u, v, (v - v_n) / dt, q, p, (p - p_n) / dt, state.a, state.b, dt), report


def compile_notice(message: str, *, enabled: bool = True, delay: float | None = None,
                   file=None) -> threading.Timer:
    """A timer that prints ``message`` after ``delay`` s (default :data:`FIRST_STEP_NOTICE_S`) unless cancelled first.

    For work that is slow only on the first run on a machine, while numba
    compiles the kernels (later runs load them from its cache): start it
    before, ``cancel()`` it after.  With ``enabled=False`` it never prints.

    Example
    -------
    >>> notice = compile_notice("compiling …", enabled=False)
    >>> notice.cancel()
    """
    notice = threading.Timer(FIRST_STEP_NOTICE_S if delay is None else delay, print, args=(message,), kwargs={"file": file, "flush": True})
    notice.daemon = True  # never keeps the interpreter alive
    if enabled:
        notice.start()
    return notice


def simulate(
    model: Model,
    *,
    t_end: float,
    dt: float,
    state: State | None = None,
    store_every: int = 1,
    max_halvings: int = 4,
    newton_options: NewtonOptions = NewtonOptions(),
    callback: Callable[[State, StepInfo], None] | None = None,
    progress: bool = True,
) -> SimulationResult:
    """Integrate with backward Euler from ``state`` (default: rest at t = 0) to ``t_end``.

    Parameters
    ----------
    t_end, dt
        End time and step size (s).  The last step is shortened to hit t_end;
        a last step shorter than ``LAST_STEP_MIN_FRACTION`` · dt (a sliver left
        by round-off in t_end, where Newton would stagnate at round-off) is
        joined to the step before it, which then takes up to 1.01 dt.
    store_every
        Keep every k-th state in the result (the last one always).
    max_halvings
        A step whose Newton fails is split into two halves, a failing half
        again, and so on, down to substeps of dt / 2**max_halvings; then
        :class:`ConvergenceError` is raised.  Converged substeps are kept.
    callback
        Called as ``callback(state, info)`` after every step, with
        :class:`StepInfo` (step number, Newton iterations, …).  Writers of
        output and checkpoints hook in here.
    progress
        Print progress (time, step, Newton iterations, ETA) to stderr.
    """
    state = model.initial_state() if state is None else state.copy()
    check_finite_time(t_end=t_end, dt=dt, t0=state.t)
    if dt <= 0:
        raise ValueError(f"dt must be > 0, got {dt}")
    if t_end <= state.t:
        raise ValueError(f"t_end = {t_end} must be after the start time {state.t}")
    check_step_count(dt=dt, t_start=state.t, t_end=t_end)
    if isinstance(store_every, bool) or not isinstance(store_every, (int, np.integer)) or store_every < 1:
        raise ValueError(f"store_every must be an integer ≥ 1, got {store_every!r}")
    if isinstance(max_halvings, bool) or not isinstance(max_halvings, (int, np.integer)) or not 0 <= max_halvings <= 60:
        raise ValueError(f"max_halvings must be an integer in 0 … 60 (a failing step is split into at most "
                         f"2**max_halvings substeps), got {max_halvings!r}")
    if not isinstance(newton_options, NewtonOptions):
        raise TypeError(f"newton_options must be a skfiber.NewtonOptions, got {type(newton_options).__name__}")
    if state.u.shape != (model.n_dofs,) or state.v.shape != (model.n_dofs,):
        raise ValueError(f"state arrays must have shape ({model.n_dofs},), got {state.u.shape} and {state.v.shape}")
    n_q = 0 if model.rigid is None else model.rigid.n
    if state.q.shape != (n_q,) or state.p.shape != (n_q,):
        raise ValueError(f"state.q and state.p must have {n_q} entries (the rigid coordinates), "
                         f"got shapes {state.q.shape} and {state.p.shape}")
    check_admissible_start(model, state.u, state.t, state.q)
    solver = make_solver(model)
    model.memo.enabled = True  # attachment_forces in callbacks reuses the step's last evaluation
    n_steps = int(math.ceil((t_end - state.t) / dt - 1e-9))
    if n_steps > 1 and (t_end - state.t) - (n_steps - 1) * dt < LAST_STEP_MIN_FRACTION * dt:
        n_steps -= 1  # a sliver of a last step (round-off in t_end) joins the one before it
    times, us, vs, its, histories = [state.t], [state.u.copy()], [state.v.copy()], [], []
    qs, ps = [state.q.copy()], [state.p.copy()]
    retries = 0
    start = _time.perf_counter()
    last_print = start
    interrupted = False
    t0 = state.t
    # the first step compiles the numba kernels on the first run on a machine: say so if it is slow
    notice = compile_notice("  the first step takes a while: on the first run on a machine numba compiles the "
                            "kernels (cached for later runs) …", enabled=progress, file=sys.stderr)
    try:
        for k in range(1, n_steps + 1):
            t_target = min(t0 + k * dt, t_end) if k < n_steps else t_end
            h = t_target - state.t
            state, n_it, n_retry, hist, n_contact = _step_with_retries(model, state, h, solver, newton_options, k, max_halvings)
            notice.cancel()
            its.append(n_it)
            histories.append(hist)
            retries += n_retry
            if callback is not None:
                callback(state, StepInfo(k, n_steps, t_end, n_it, n_retry, _time.perf_counter() - start, n_contact))
            if k % store_every == 0 or k == n_steps:
                times.append(state.t); us.append(state.u.copy()); vs.append(state.v.copy())
                qs.append(state.q.copy()); ps.append(state.p.copy())
            now = _time.perf_counter()
            if progress and (now - last_print > 1.0 or k == n_steps):
                last_print = now
                eta = (now - start) / k * (n_steps - k)
                print(
                    f"  t = {state.t:.4g}/{t_end:.4g} s  step {k}/{n_steps}  newton {n_it} it  "
                    + (f"contacts {n_contact}  " if model.contacts else "")
                    + f"retries {retries}  elapsed {now - start:.1f} s  ETA {eta:.1f} s",
                    file=sys.stderr, flush=True,
                )
    except KeyboardInterrupt:
        interrupted = True
        warnings.warn(f"simulation interrupted at t = {state.t:.6g} s; returning the {len(times)} states computed so far")
        if times[-1] != state.t:
            times.append(state.t); us.append(state.u.copy()); vs.append(state.v.copy())
            qs.append(state.q.copy()); ps.append(state.p.copy())
    finally:  # outside the run the model may change: evaluate afresh
        notice.cancel()
        model.memo.enabled = False
        model.memo.clear()
    return SimulationResult(
        np.array(times), np.array(us), np.array(vs), its, histories, retries,
        _time.perf_counter() - start, interrupted, state.copy(), np.array(qs), np.array(ps),
    )


def _step_with_retries(model, state, h, solver, options, k, max_halvings):
    """Advance by h; a failing (sub)step is split in two halves, recursively.

    Only the failing part is redone: substeps that converged are kept.  At most
    ``max_halvings`` levels (smallest substep h / 2**max_halvings).
    Returns (state, Newton iterations, failed attempts, residual history, contacts).
    """
    counts = {"iterations": 0, "failures": 0, "contacts": 0}
    history: list[float] = []

    def advance(s, level, index):
        """Substep ``index`` (0-based) of the 2**level substeps of length h / 2**level."""
        dt_sub = h / 2**level
        label = k if level == 0 else f"{k} (substep {index + 1}/{2**level})"
        try:
            s_new, rep = backward_euler_step(model, s, dt_sub, solver, options=options, step=label)
        except ConvergenceError as err:
            counts["failures"] += 1
            if level == max_halvings:
                raise ConvergenceError(
                    f"{err.reason}; still failing with the step split into {2**max_halvings} substeps "
                    f"(Δt = {dt_sub:.3g} s)",
                    t=err.t, step=k, residual_history=err.residual_history,
                ) from err
            half = advance(s, level + 1, 2 * index)
            return advance(half, level + 1, 2 * index + 1)
        counts["iterations"] += rep.iterations
        counts["contacts"] = rep.active_contacts
        history.extend(rep.residual_history)
        return s_new

    out = advance(state, 0, 0)
    return out, counts["iterations"], counts["failures"], history, counts["contacts"]
