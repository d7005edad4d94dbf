"""Dynamics: backward Euler or BDF2 with Newton, fixed steps with retries or adaptive steps, and progress
(one step: :mod:`skfiber.time_step`; adaptive runs: :mod:`skfiber.adaptive`; Newton:
:mod:`skfiber.newton`; statics: :mod:`skfiber.statics`, all re-exported here).

Backward Euler (paper eq. 64, fiber part) with v = (u − uₙ)/Δt and
a = (v − vₙ)/Δt turns each step into G(u) = M a + F_int(u, v) − F_ext(tₙ₊₁) = 0,
solved by Newton on the consistent tangent c_a M + ∂F/∂u + c_v ∂F/∂v with
c_v = 1/Δt, c_a = 1/Δt²; BDF2 is the same with its anchors
(:mod:`skfiber.core.bdf`).  A fixed step that does not converge is retried
with smaller steps; when that fails too, :class:`ConvergenceError` says where
and why.  No unconverged state is ever returned.

Examples
--------
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
import time as _time
from typing import Callable

import numpy as np

from .adaptive import simulate_adaptive
from .core import ConvergenceError, EulerRates, NewtonOptions, State, StepCounts, check_state, check_state_of
from .core.bdf import ramp_levels
from .core.interrupt import CTRL_C, check_on_interrupt, handle_ctrl_c
from .core.numbers import check_finite_time, check_step_count
from .core.warn import warn
from .fiber_step import decide_compiled_step
from .model import Model, one_run
from .newton import IterationMatrix, make_solver, newton
from .progress import Progress, progress_bar
from .simulation_result import MAX_STORED_STATES, SimulationResult, StateStore, StepInfo, compile_notice
from .statics import StaticResult, check_admissible_start, solve_static
from .threads import one_blas_thread
from .time_step import (METHODS, PREDICTOR_SMOOTHNESS, STEP_STAGNATION_WINDOW, backward_euler_step,
                        extrapolated_start, implicit_step, predicted_accelerations)

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
    "implicit_step",
    "backward_euler_step",
    "EulerRates",
    "compile_notice",
    "MAX_STORED_STATES",
    "METHODS",
    "PREDICTOR_SMOOTHNESS",
    "STEP_STAGNATION_WINDOW",
    "adaptive_scheme",
]

#: a last step shorter than this fraction of dt is joined to the one before it (simulate)
LAST_STEP_MIN_FRACTION = 0.01


def adaptive_scheme(*, method: str, dt, rtol, atol) -> bool:
    """Whether the run is adaptive (tolerances given); ValueError for an unknown method or missing dt."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; pick one of {sorted(METHODS)}")
    adaptive = rtol is not None or atol is not None
    if adaptive and method != "bdf2":
        raise ValueError(f"error control (rtol/atol) needs method='bdf2', got method={method!r}; "
                         "or give dt without tolerances for fixed steps")
    if not adaptive and dt is None:
        raise ValueError("give dt (fixed steps), or rtol and/or atol with method='bdf2' (adaptive steps)")
    return adaptive


@one_blas_thread  # (skfiber.threads: OpenBLAS's spinning threads take the cores from numba's)
@one_run  # (one run for the check of the forms' numbers: Model.run_scope)
def simulate(
    model: Model,
    *,
    t_end: float,
    dt: float | None = None,
    method: str = "euler",
    rtol: float | None = None,
    atol: float | None = None,
    h_min: float | None = None,
    h_max: float | None = None,
    output_times=None,
    state: State | None = None,
    store_every: int | None = None,
    max_halvings: int = 4,
    keep_substeps: bool = False,
    newton_options: NewtonOptions = NewtonOptions(),
    callback: Callable[[State, StepInfo], None] | None = None,
    progress: bool | Progress = True,
    on_interrupt: str = "keep",
) -> SimulationResult:
    """Integrate from ``state`` (default: rest at t = 0) to ``t_end``: backward Euler or BDF2, fixed or adaptive steps.

    Parameters
    ----------
    model
        The model: fibers, loads, contacts, rigid bodies.
    t_end, dt
        End time and step size (s).  With ``dt`` and no tolerances every
        method runs at fixed steps: the last step is shortened to hit t_end;
        a last step shorter than ``LAST_STEP_MIN_FRACTION`` · dt (a sliver left
        by round-off in t_end, where Newton would stagnate at round-off) is
        joined to the step before it, which then takes up to 1.01 dt.  With
        tolerances ``dt`` is the interval of the output times.
    method
        ``"euler"`` (backward Euler, order 1, the default) or ``"bdf2"``
        (variable-step BDF2, order 2, L-stable; :mod:`skfiber.core.bdf`).  Its
        first step is extrapolated backward Euler at fixed steps
        (:func:`~skfiber.time_step.extrapolated_start`), plain backward Euler
        (a small step chosen by the error control) in adaptive runs.
    rtol, atol
        Tolerances of the local error (positions, velocities, q and p): given,
        the steps are chosen by error control (``method="bdf2"``;
        :mod:`skfiber.core.step_control`) between ``h_min`` (default
        1e-12 (t_end − t0)) and ``h_max`` (default t_end − t0).  The states are
        given at ``output_times`` (default: every ``dt`` if given, else 100
        equal intervals), interpolated between steps; ``result.step_counts``
        holds the accepted and rejected steps, Newton iterations and tangent
        builds.
    h_min, h_max
        The smallest and largest step (s) of an error-controlled run (see ``rtol``).
    output_times
        The times (s) of the states of an error-controlled run (see ``rtol``).
    state
        The start (:class:`~skfiber.State`; default: the model at rest in its reference configuration
        at t = 0, :meth:`Model.initial_state`); e.g. ``result.final_state`` of an earlier run to continue it.
    store_every
        Keep every k-th state (step, or output time of an adaptive run) in
        the result (the last one always).  Default: all of them up to
        :data:`MAX_STORED_STATES`, every k-th beyond, so that a long run
        keeps at most that many states (its memory stays bounded; per-step
        Newton iterations are kept as an int32 array and residual histories
        only of the kept steps).
    max_halvings
        A fixed step whose Newton fails is split into two halves, a failing
        half again, and so on, down to substeps of dt / 2**max_halvings; then
        :class:`ConvergenceError` is raised.  Converged substeps are kept.
    keep_substeps
        False (default): every step first tries the whole dt.  True: after a
        step that had to be split, the next step starts with the substep
        that ended it, and the substep doubles after each step that needed
        no split.  In a transient where whole steps keep failing (a bundle of
        fibers coming into contact as it is activated) this saves the failed
        attempts; the results then depend on where steps were split, as they
        would on a smaller dt there.
    newton_options
        Newton's settings (:class:`~skfiber.NewtonOptions`: tolerances, iterations, the contact
        safeguard, the line search, modified Newton).
    callback
        Called as ``callback(state, info)`` after every step (at each output
        time of an adaptive run), with :class:`StepInfo` (step number,
        Newton iterations, …).  Writers of output and checkpoints hook in here.
    progress
        Draw the progress line (time, step, Newton iterations, ETA; redrawn in place on a terminal) on
        stderr, or on the stream of a :class:`skfiber.progress.Progress` given here; its words are
        :data:`skfiber.progress.PROGRESS_TERMS`.
    on_interrupt
        What Ctrl-C does: ``"keep"`` (default) ends the run with a warning and returns the states computed so
        far (``result.interrupted`` is True); ``"raise"`` lets ``KeyboardInterrupt`` through to the caller,
        for code that needs the whole run (:mod:`skfiber.core.interrupt`).

    Returns
    -------
    SimulationResult
        The kept states (``times``, ``displacements``, ``velocities``, with bodies ``coordinates`` and
        ``rigid_velocities``; ``state(i)`` the i-th as a :class:`~skfiber.State`, ``final_state`` the last),
        the Newton iterations per step and the step counts.

    Examples
    --------
    >>> from skfiber import Fiber, Model
    >>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    >>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> r = simulate(model, t_end=0.1, dt=0.05, method="bdf2", rtol=1e-4, atol=1e-6, progress=False)
    >>> r.times.tolist(), r.step_counts.accepted > 2
    ([0.0, 0.05, 0.1], True)
    """
    if not isinstance(model, Model):
        raise TypeError(f"simulate needs a skfiber.Model as its first argument, got {type(model).__name__}")
    bar = progress_bar(progress)
    if state is not None:
        check_state(state)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function callback(state, info) or None, got {callback!r}")
    check_on_interrupt(on_interrupt)
    adaptive = adaptive_scheme(method=method, dt=dt, rtol=rtol, atol=atol)
    output_dt = dt
    if dt is None:  # adaptive without an output interval: dt stands for the whole span in the checks below
        dt = 1.0
    state = model.initial_state() if state is None else state.copy()
    check_finite_time(t_end=t_end, dt=dt, t0=state.t)
    if dt <= 0:
        raise ValueError(f"dt must be > 0, got {dt}")
    if t_end <= state.t:
        raise ValueError(f"t_end = {t_end} must be after the start time {state.t}")
    check_step_count(dt=dt, t_start=state.t, t_end=t_end)
    if store_every is not None and (isinstance(store_every, bool) or not isinstance(store_every, (int, np.integer))
                                    or store_every < 1):
        raise ValueError(f"store_every must be an integer ≥ 1 or None (bounded default), got {store_every!r}")
    if isinstance(max_halvings, bool) or not isinstance(max_halvings, (int, np.integer)) or not 0 <= max_halvings <= 60:
        raise ValueError(f"max_halvings must be an integer in 0 … 60 (a failing step is split into at most "
                         f"2**max_halvings substeps), got {max_halvings!r}")
    if not isinstance(keep_substeps, (bool, np.bool_)):
        raise TypeError(f"keep_substeps must be True or False, got {keep_substeps!r}")
    keep_substeps = bool(keep_substeps)
    if not isinstance(newton_options, NewtonOptions):
        raise TypeError(f"newton_options must be a skfiber.NewtonOptions, got {type(newton_options).__name__}")
    check_state_of(state, model.n_dofs, 0 if model.rigid is None else model.rigid.n)
    check_admissible_start(model, state.u, state.t, state.q)
    if adaptive:
        if keep_substeps:
            raise ValueError("keep_substeps belongs to fixed steps (give dt without rtol/atol): error-controlled "
                             "steps choose their sizes themselves")
        return simulate_adaptive(model, state, t_end=t_end, method=method, rtol=rtol, atol=atol, h_min=h_min,
                                 h_max=h_max, output_times=output_times, output_dt=output_dt, store_every=store_every,
                                 newton_options=newton_options, callback=callback, progress=bar or False,
                                 on_interrupt=on_interrupt)
    if output_times is not None or h_min is not None or h_max is not None:
        raise ValueError("output_times, h_min and h_max belong to adaptive runs: give rtol and/or atol too "
                         "(fixed steps store every store_every-th step)")
    solver = make_solver(model)
    matrix = IterationMatrix()  # modified Newton: the factorized iteration matrix kept from step to step
    newton_options = newton_options.with_stagnation_window(STEP_STAGNATION_WINDOW)
    model.memo.enabled = bool(model.attachments)  # attachment_forces in callbacks reuses the step's last evaluation
    n_steps = int(math.ceil((t_end - state.t) / dt - 1e-9))
    if n_steps > 1 and (t_end - state.t) - (n_steps - 1) * dt < LAST_STEP_MIN_FRACTION * dt:
        n_steps -= 1  # a sliver of a last step (round-off in t_end) joins the one before it
    if store_every is None:
        store_every = max(1, math.ceil(n_steps / MAX_STORED_STATES))
    newton_options = decide_compiled_step(model, newton_options, n_steps=n_steps)
    store = StateStore(state)
    its = np.zeros(n_steps, dtype=np.int32)
    retries = 0
    start = _time.perf_counter()
    interrupted = False
    t0 = state.t
    # the first step compiles the numba kernels on the first run on a machine: say so if it is slow
    notice = compile_notice("  the first step takes a while: on the first run on a machine numba compiles the "
                            "kernels (cached for later runs) …", enabled=progress, file=sys.stderr)
    done = 0  # steps finished
    level = 0  # a step starts split into 2**level substeps (after failures, see _step_with_retries)
    try:
        for k in range(1, n_steps + 1):
            t_target = min(t0 + k * dt, t_end) if k < n_steps else t_end
            h = t_target - state.t
            state, n_it, n_retry, hist, n_contact, level = _step_with_retries(
                model, state, h, solver, newton_options, k, max_halvings, method, matrix, start_level=level)
            if not keep_substeps:
                level = 0
            elif not n_retry:  # the next step: this step's last substep, doubled when none failed
                level = max(level - 1, 0)
            if k == 1:
                notice.cancel()
            its[k - 1] = n_it
            done = k
            retries += n_retry
            if callback is not None:
                callback(state, StepInfo(k, n_steps, t_end, n_it, n_retry, _time.perf_counter() - start, n_contact))
            if k % store_every == 0 or k == n_steps:
                store.add(state, hist)
            if bar is not None:
                bar.update(step=k, n_steps=n_steps, t=state.t, t_end=t_end, newton=n_it, retries=retries,
                           extra=(f"contacts {n_contact}  " if model.contacts else "")
                           + f"tangents {matrix.tangent_builds} factorizations {matrix.factorizations}")
    except CTRL_C as err:
        handle_ctrl_c(err, on_interrupt)
        if bar is not None:
            bar.end()
        interrupted = True
        its = its[:done]
        if store.times[-1] != state.t:
            store.add(state, [])
        warn(f"simulation interrupted at t = {state.t:.6g} s after {done} of {n_steps} steps; the result keeps "
             f"{len(store.times)} states (the start included; store_every={store_every})")
    except ConvergenceError as err:  # keep what was computed: the error carries it
        its = its[:done]
        if store.times[-1] != state.t:
            store.add(state, [])
        counts = StepCounts(accepted=len(its), newton_failures=retries, newton_iterations=int(its.sum()),
                            tangent_builds=matrix.tangent_builds, factorizations=matrix.factorizations)
        raise err.keep(store.result(its, retries, _time.perf_counter() - start, True, state, counts))
    finally:  # outside the run the model may change: evaluate afresh
        notice.cancel()
        if bar is not None:
            bar.end()
        model.memo.enabled = False
        model.memo.clear()
    counts = StepCounts(accepted=len(its), newton_failures=retries, newton_iterations=int(its.sum()),
                        tangent_builds=matrix.tangent_builds, factorizations=matrix.factorizations)
    return store.result(its, retries, _time.perf_counter() - start, interrupted, state, counts)


def _step_with_retries(model, state, h, solver, options, k, max_halvings, method="euler", matrix=None, *,
                       start_level: int = 0):
    """Advance by h; a failing (sub)step is split in two halves, recursively.

    Only the failing part is redone: substeps that converged are kept.  A substep is split at most
    ``max_halvings`` times (the step's smallest substep h / 2**max_halvings).  The step starts split into
    2**``start_level`` substeps (with ``keep_substeps`` the caller passes the level at which the last step
    ended, less one when that step needed no split: a substep that just failed is not tried again at once);
    those splits count.  With BDF2 a substep that follows much shorter ones is taken as the grow-back of
    :func:`~skfiber.core.bdf.ramp_levels` (not failures: they do not count).
    Returns (state, Newton iterations, failed attempts, residual history, contacts, the level of the last
    substep).
    """
    counts = {"iterations": 0, "failures": 0, "contacts": 0, "level": 0}
    history: list[float] = []

    def advance(s, level, index, splits):
        """Substep ``index`` (0-based) of the 2**level substeps of length h / 2**level, ``splits`` of them
        failures' halvings."""
        dt_sub = h / 2**level
        ramp = ramp_levels(dt_sub, s.dt_last) if method == "bdf2" and s.has_history else [0]
        if len(ramp) > 1:  # after shorter substeps: grow back by at most 2 a substep (BDF2's zero-stability)
            position = index * 2**ramp[0]  # the position in substeps of h/2**(level + ramp[0])
            for e in ramp:
                s = advance(s, level + e, position // 2**(ramp[0] - e), splits)
                position += 2**(ramp[0] - e)
            return s
        label = k if level == 0 else f"{k} (substep {index + 1}/{2**level})"
        try:
            if method == "bdf2" and not s.has_history:  # BDF2's first step: second order as well
                s_new, rep = extrapolated_start(model, s, dt_sub, solver, options=options, step=label, matrix=matrix)
            else:
                s_new, rep = implicit_step(model, s, dt_sub, solver, method=method, options=options, step=label,
                                           matrix=matrix)
        except ConvergenceError as err:
            counts["failures"] += 1
            if splits >= max_halvings:
                split = (f"with the step split into {2**level} substeps" if level == splits else
                         f"after {splits} halving{'s' if splits != 1 else ''} of a substep that grew back from "
                         "shorter steps")
                raise ConvergenceError(f"{err.reason}; still failing {split} (Δt = {dt_sub:.3g} s)",
                                       t=err.t, step=k, residual_history=err.residual_history) from err
            half = advance(s, level + 1, 2 * index, splits + 1)
            return advance(half, level + 1, 2 * index + 1, splits + 1)
        counts["iterations"] += rep.iterations
        counts["contacts"] = rep.active_contacts
        counts["level"] = level
        history.extend(rep.residual_history)
        return s_new

    start_level = min(max(int(start_level), 0), max_halvings)
    out = state
    for index in range(2**start_level):
        out = advance(out, start_level, index, start_level)
    return out, counts["iterations"], counts["failures"], history, counts["contacts"], counts["level"]
