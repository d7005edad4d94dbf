"""One implicit time step of a model: backward Euler or BDF2, with Newton (paper eq. 64).

:func:`implicit_step` turns a step into G(u) = M a + F_int(u, v) − F_ext(tₙ₊₁) = 0
with v = (u − û)/ĥ, a = (v − v̂)/ĥ, solved by Newton on the consistent tangent
c_a M + ∂F/∂u + c_v ∂F/∂v with c_v = 1/ĥ, c_a = 1/ĥ²: backward Euler for
(û, v̂, ĥ) = (uₙ, vₙ, Δt), variable-step BDF2 for the anchors of
:mod:`skfiber.core.bdf`.  Bodies (q, p) take the same scheme.  The
predictor, the contact safeguard and the coupled Newton are shared.

Examples
--------
>>> from skfiber import Fiber, Model
>>> from skfiber.newton import make_solver
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
>>> s1, _ = implicit_step(model, model.initial_state(), 0.01, make_solver(model), method="bdf2")
>>> s2, _ = implicit_step(model, s1, 0.01, make_solver(model), method="bdf2")
>>> s1.has_history, bool(s2.u.min() < s1.u.min() < 0)
(True, True)
"""
from __future__ import annotations

import math

import numpy as np

from .contact.base import margins_kept
from .core import EulerRates, NewtonOptions, State
from .core.bdf import anchor
from .fiber_step import FiberStep
from .fiber_step import applies as fiber_step_applies
from .fiber_step import compiled_step
from .linalg import ConstrainedSolver
from .model import Model
from .newton import IterationMatrix, NewtonReport, newton
from .rigid import EulerStep

__all__ = ["implicit_step", "backward_euler_step", "extrapolated_start", "predicted_accelerations", "METHODS", "PREDICTOR_SMOOTHNESS",
           "STEP_STAGNATION_WINDOW"]


#: the predictor extrapolates the acceleration when it changed over the last step by at most
#: this fraction of its size (see predicted_accelerations).  Measured on the upper limb
#: (Newton iterations of the full runs, constant vs this predictor): level 1 996 → 952,
#: level 3 2458 → 2253, level 4 4487 → 3708 (0.3: 3851; 1.0 at level 4 over 4 s: as 0.5);
#: always extrapolating cost level 2 50 % more failed attempts
PREDICTOR_SMOOTHNESS = 0.5
#: … and this many in backward-Euler steps (a failing step is split in two; at
#: the snap-back of the upper-limb model this halves the evaluations spent in
#: failing attempts, docs/performance.md)
STEP_STAGNATION_WINDOW = 1
#: the time schemes of simulate: backward Euler (order 1) and variable-step BDF2 (order 2)
METHODS = {"euler": 1, "bdf2": 2}


def backward_euler_step(
    model: Model,
    state: State,
    dt: float,
    solver: ConstrainedSolver,
    *,
    options: NewtonOptions = NewtonOptions(),
    step: int | str = 0,
    matrix: IterationMatrix | None = None,
) -> tuple[State, NewtonReport]:
    """One backward-Euler step from ``state`` to ``state.t + dt`` (:func:`implicit_step` with ``method="euler"``).

    ``solver`` is a :class:`~skfiber.linalg.ConstrainedSolver`, or for a
    model with a rigid system a :class:`~skfiber.coupling.CoupledProblem`
    (Newton on (u_I, q), paper eq. 64).
    """
    return implicit_step(model, state, dt, solver, method="euler", options=options, step=step, matrix=matrix)


def implicit_step(
    model: Model,
    state: State,
    dt: float,
    solver: ConstrainedSolver,
    *,
    method: str = "euler",
    options: NewtonOptions = NewtonOptions(),
    step: int | str = 0,
    matrix: IterationMatrix | None = None,
) -> tuple[State, NewtonReport]:
    """One implicit step from ``state`` to ``state.t + dt``: backward Euler, or BDF2.

    With ``method="bdf2"`` and a state that knows its earlier point
    (:attr:`State.has_history`) the step is variable-step BDF2, otherwise
    backward Euler.  Both are the same Newton problem
    (:mod:`skfiber.core.bdf`): v = (u − û)/ĥ, a = (v − v̂)/ĥ (and p, its rate
    for q) with c_v = 1/ĥ, c_a = 1/ĥ², where (û, v̂, ĥ) = (uₙ, vₙ, Δt) for
    backward Euler and BDF2's anchors otherwise.  The new state keeps
    ``state`` as its earlier point.  ``matrix`` (one per run) carries the
    factorized iteration matrix from step to step for modified Newton and
    counts tangents and factorizations (:class:`~skfiber.newton.IterationMatrix`).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; pick one of {sorted(METHODS)}")
    options = options.with_stagnation_window(STEP_STAGNATION_WINDOW)
    history = method == "bdf2" and state.has_history
    h_prev = state.dt_last if history else 0.0
    (u_hat, h_eff), (v_hat, _) = (anchor(dt, h_prev, now, prev if history else None)
                                  for now, prev in ((state.u, state.u_prev), (state.v, state.v_prev)))
    if hasattr(solver, "solve_newton"):
        (q_hat, _), (p_hat, _) = (anchor(dt, h_prev, now, prev if history else None)
                                  for now, prev in ((state.q, state.q_prev), (state.p, state.p_prev)))
        return _coupled_step(model, state, dt, solver, (u_hat, v_hat, q_hat, p_hat, h_eff), options=options, step=step,
                             matrix=matrix)
    t1 = state.t + dt
    u_n, v_n = state.u, state.v
    a0, _ = predicted_accelerations(state, dt)
    u0 = u_hat + h_eff * v_hat + h_eff**2 * a0
    c = model.constrained_dofs
    u0[c] = model.prescribed_displacement(t1)
    if options.compiled_step:  # the Newton iteration below as one compiled call, where it applies
        done = compiled_step(model, state, dt, solver, u0=u0, u_hat=u_hat, v_hat=v_hat, h=h_eff, options=options,
                             matrix=matrix)
        if done is not None:
            return done

    rates = EulerRates(u_prev=u_hat, v_prev=v_hat, dt=h_eff)
    if fiber_step_applies(model):  # one compiled call per evaluation
        evaluate = FiberStep(model, u_hat=rates.u_prev, v_hat=rates.v_prev, h=h_eff, c_v=rates.c_v, c_a=rates.c_a,
                             t=t1, free=solver.free)
    else:
        def evaluate(u, tangent=True):
            v, a, c_v, c_a = rates(u)
            return model.evaluate(u, v, a, t1, c_v=c_v, c_a=c_a, tangent=tangent)

    def safeguard(u, du):
        return model.max_step(u, du, t1, delta_bar=options.safeguard)

    def prescribe(u):
        u[c] = model.prescribed_displacement(t1)

    first = None
    if model.contacts:
        u0, first = _admissible_predictor(solver, u_n, u0, evaluate, safeguard, options, prescribe)
    u, report = newton(evaluate, u0, solver, options=options, t=t1, step=step,
                       max_step=safeguard if model.contacts else None, first=first, matrix=matrix,
                       scheme=(rates.c_v, rates.c_a))
    _keep_margins(solver, u, report)
    v = (u - u_hat) / h_eff
    return State(t1, u, v, (v - v_hat) / h_eff, a_prev=state.a, dt_last=dt, u_prev=u_n, v_prev=v_n), report


def extrapolated_start(
    model: Model,
    state: State,
    dt: float,
    solver: ConstrainedSolver,
    *,
    options: NewtonOptions = NewtonOptions(),
    step: int | str = 0,
    matrix: IterationMatrix | None = None,
) -> tuple[State, NewtonReport]:
    """The first step of a fixed-step BDF2 run: backward Euler extrapolated, 2 y(Δt/2 ∘ Δt/2) − y(Δt).

    BDF2 needs an earlier point; a plain backward-Euler first step would
    leave an O(Δt²) position error in the first step that dominates the
    early error (measured on the pendulum chain: local rate 1.8).  The
    extrapolation cancels backward Euler's Δt² term (local error O(Δt³),
    still L-stable: R(z) = 2/(1 − z/2)² − 1/(1 − z) → 0), at the price of
    three Newton solves once.  With contacts the start stays backward Euler:
    the extrapolated point is not a Newton solution and could leave the
    safeguard's admissible set.  The new state keeps ``state`` as its
    earlier point; its accelerations (predictor only) are those of the
    second half step.
    """
    kw = dict(method="euler", options=options, step=step, matrix=matrix)
    if model.contacts:
        return implicit_step(model, state, dt, solver, **kw)
    half, r1 = implicit_step(model, state, 0.5 * dt, solver, **kw)
    two, r2 = implicit_step(model, half, 0.5 * dt, solver, **kw)
    one, r3 = implicit_step(model, state, dt, solver, **kw)
    u, v, q, p = (2.0 * x2 - x1 for x2, x1 in ((two.u, one.u), (two.v, one.v), (two.q, one.q), (two.p, one.p)))
    if model.rigid is not None:
        model.set_coordinates(q)
    solver.end_margins = None  # the margins kept by the last solve are not those of the extrapolated state
    report = NewtonReport(r1.iterations + r2.iterations + r3.iterations,
                          r1.residual_history + r2.residual_history + r3.residual_history,
                          r1.step_fractions + r2.step_fractions + r3.step_fractions)
    return State(one.t, u, v, two.a, q, p, two.b, state.a, state.b, dt, state.u, state.v, state.q, state.p), report


def predicted_accelerations(state: State, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The accelerations (fibers, bodies) the predictor of a step of size ``dt`` from ``state`` assumes.

    The step's solution is predicted as uₙ + Δt vₙ + Δt² a (and likewise for q).
    a is the last step's acceleration extrapolated linearly in time,
    aₙ + (Δt/Δtₙ)(aₙ − aₙ₋₁), when the accelerations vary smoothly —
    ‖(aₙ, bₙ) − (aₙ₋₁, bₙ₋₁)‖ ≤ :data:`PREDICTOR_SMOOTHNESS` ‖(aₙ, bₙ)‖ — and
    the last one aₙ otherwise (or when aₙ₋₁ is unknown).  The converged step
    does not depend on the predictor beyond Newton's tolerance; a better one
    saves iterations.

    Examples
    --------
    >>> import numpy as np
    >>> from skfiber.model import State
    >>> s = State(0.2, np.zeros(2), np.zeros(2), np.array([1.0, 2.0]), a_prev=np.array([0.9, 1.9]), dt_last=0.1)
    >>> predicted_accelerations(s, 0.1)[0]
    array([1.1, 2.1])
    """
    a, b = state.a, state.b
    if state.dt_last <= 0 or state.a_prev.shape != a.shape or state.b_prev.shape != b.shape:
        return a, b
    da = a - state.a_prev
    change, size = float(da @ da), float(a @ a)
    if b.size:  # (no rigid system: b is empty)
        db = b - state.b_prev
        change, size = change + float(db @ db), size + float(b @ b)
    if not math.sqrt(change) <= PREDICTOR_SMOOTHNESS * math.sqrt(size):
        return a, b
    r = dt / state.dt_last
    return a + r * da, (b + r * db if b.size else b)


def _admissible_predictor(solver, x_n, x0, evaluate, max_step, options, prescribe):
    """The predictor x0 kept admissible (eq. 71 from xₙ) and its evaluation, if made.

    When the contact margins at xₙ are known (the last step's converged
    evaluation, kept on ``solver`` by :func:`_keep_margins`) and the
    evaluation at x0 keeps them (:func:`margins_kept`), x0 is taken with that
    evaluation.  Otherwise the safeguard ``max_step(xₙ, x0 − xₙ)`` shortens the
    move from xₙ.  x0 is first replaced by xₙ + (x0 − xₙ), which may differ from it in the last bit:
    the state the safeguard checks (and searches for contacts) is then the one evaluated next.
    """
    dx = x0 - x_n
    x0 = x_n + dx   # what max_step(xₙ, dx) checks
    prescribe(x0)
    ev = None
    memo = solver.end_margins
    if memo is not None and memo[0] == x_n.tobytes():
        try:
            ev = evaluate(x0)
        except FloatingPointError:  # inadmissible: let the safeguard shorten the move
            ev = None
        if ev is not None and ev.margins is not None and margins_kept(memo[1], ev.margins, options.safeguard):
            return x0, ev
    delta = max_step(x_n, dx)
    if delta < 1.0:
        x0 = x_n + delta * dx
        prescribe(x0)
        return x0, None
    return x0, ev


def _keep_margins(solver, x: np.ndarray, report: NewtonReport) -> None:
    """Remember the contact margins of the converged state x for the next step's predictor."""
    solver.end_margins = None if report.margins is None else (x.tobytes(), report.margins)


def _coupled_step(model: Model, state: State, dt: float, problem, anchors, *, options: NewtonOptions,
                  step, matrix: IterationMatrix | None = None) -> tuple[State, NewtonReport]:
    """A step of :func:`implicit_step` for fibers + rigid bodies (paper eq. 64): Newton on z = (u_I, q).

    v = (u − û)/ĥ and p = (q − q̂)/ĥ for all DOFs, the attached ends
    included (v_D from their positions c(q)); ``anchors`` = (û, v̂, q̂, p̂, ĥ).
    """
    u_hat, v_hat, q_hat, p_hat, h_eff = anchors
    t1 = state.t + dt
    u_n, v_n, q_n, p_n = state.u, state.v, state.q, state.p
    z_n = np.concatenate([u_n, q_n])
    a0, b0 = predicted_accelerations(state, dt)
    z0 = np.concatenate([u_n + dt * v_n + dt**2 * a0, q_n + dt * p_n + dt**2 * b0])
    c = model.constrained_dofs
    z0[c] = model.prescribed_displacement(t1)

    fiber_state = EulerRates(u_prev=u_hat, v_prev=v_hat, dt=h_eff)
    # R_rb(q) with its tangent (it costs 10 % on top of the residual here: not worth deferring)
    rigid_state = EulerStep(model.rigid, q_prev=q_hat, p_prev=p_hat, dt=h_eff, t=t1)

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
                       max_step=safeguard if model.contacts else None, first=first, matrix=matrix)
    u, q, _ = problem.expand(z, t1, kinematics=False)
    model.set_coordinates(q)  # body cylinders at the step's end (the fast path does not move them)
    _keep_margins(problem, np.concatenate([u, q]), report)
    v = (u - u_hat) / h_eff
    p = (q - q_hat) / h_eff
    return State(t1, u, v, (v - v_hat) / h_eff, q, p, (p - p_hat) / h_eff, state.a, state.b, dt,
                 u_n, v_n, q_n, p_n), report
