"""An adaptive run of a model: BDF2 steps chosen by local error control, states at requested output times.

:func:`simulate_adaptive` is :func:`skfiber.simulate` with ``rtol``/``atol``:
each step is :func:`~skfiber.time_step.implicit_step` (backward Euler first,
then variable-step BDF2), the driver :func:`~skfiber.core.run_adaptive`
estimates the local error of the positions u and q and their velocities v
and p, rejects and resizes steps, and interpolates the states at the output
times (so that VTK series and CSV files keep a regular time grid).

Examples
--------
>>> from skfiber import Fiber, Model, simulate
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
>>> r = simulate(model, t_end=0.1, method="bdf2", rtol=1e-4, atol=1e-6, output_times=[0.05, 0.1], progress=False)
>>> r.times.tolist(), r.step_counts.rejected >= 0
([0.0, 0.05, 0.1], True)
"""
from __future__ import annotations

import math
import numbers
import sys
import time as _time
from typing import Callable

import numpy as np

from .core import AdaptiveCursor, ConvergenceError, ErrorControl, NewtonOptions, State, output_grid, run_adaptive
from .core.interrupt import CTRL_C, handle_ctrl_c
from .core.warn import warn
from .fiber_step import decide_compiled_step
from .model import Model
from .newton import IterationMatrix, make_solver
from .progress import Progress, progress_bar
from .simulation_result import MAX_STORED_STATES, SimulationResult, StateStore, StepInfo, compile_notice
from .time_step import STEP_STAGNATION_WINDOW, implicit_step

__all__ = ["simulate_adaptive", "error_control", "H_MIN_FRACTION"]

#: default smallest step, as a fraction of the run's span
H_MIN_FRACTION = 1e-10


def error_control(*, rtol: float | None, atol: float | None, h_min: float | None, h_max: float | None, span: float,
                  output_dt: float | None = None) -> ErrorControl:
    """The :class:`~skfiber.core.ErrorControl` of an adaptive run over ``span`` seconds (ValueError naming a bad
    value): a missing tolerance is 0, h_min defaults to :data:`H_MIN_FRACTION` · span, h_max to the span, the
    first step to a tenth of the output interval.

    Examples
    --------
    >>> error_control(rtol=1e-3, atol=None, h_min=None, h_max=None, span=2.0, output_dt=0.1).h_initial
    0.01
    """
    for name, value in (("rtol", rtol), ("atol", atol), ("h_min", h_min), ("h_max", h_max)):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)):
            raise TypeError(f"{name} must be a number or None, got {value!r}")
    return ErrorControl(rtol=0.0 if rtol is None else float(rtol), atol=0.0 if atol is None else float(atol),
                        h_min=H_MIN_FRACTION * span if h_min is None else float(h_min),
                        h_max=span if h_max is None else float(h_max),
                        h_initial=None if output_dt is None else min(output_dt, span) / 10.0)


def simulate_adaptive(model: Model, state: State, *, t_end: float, method: str, rtol: float | None,
                      atol: float | None, h_min: float | None = None, h_max: float | None = None, output_times=None,
                      output_dt: float | None = None, store_every: int | None = None,
                      newton_options: NewtonOptions = NewtonOptions(),
                      callback: Callable[[State, StepInfo], None] | None = None,
                      progress: bool | Progress = True, t_start: float | None = None,
                      cursor: AdaptiveCursor | None = None,
                      on_accept: Callable[[State, AdaptiveCursor], bool] | None = None,
                      on_interrupt: str = "keep") -> SimulationResult:
    """The adaptive branch of :func:`skfiber.simulate` (arguments checked there; see its docstring).

    For :func:`skfiber.run.run_simulation`'s checkpoints: ``on_accept(state, cursor)`` is called after each
    accepted step; when it returns True (it saved the state and the cursor) the kept factorization and the
    last step's contact margins are dropped, so that a run resumed from there with ``cursor`` and
    ``t_start`` (the start time of the run that made it; its output grid and default step limits
    follow from it) takes the same steps bit for bit.
    """
    t0 = state.t if t_start is None else float(t_start)
    span = t_end - t0
    control = error_control(rtol=rtol, atol=atol, h_min=h_min, h_max=h_max, span=span, output_dt=output_dt)
    outputs = output_grid(t0, t_end, output_times=output_times, output_dt=output_dt)
    if store_every is None:
        store_every = max(1, math.ceil(len(outputs) / MAX_STORED_STATES))
    solver = make_solver(model)
    matrix = IterationMatrix()  # modified Newton: the factorized iteration matrix kept from step to step
    newton_options = decide_compiled_step(model, newton_options, n_steps=None).with_stagnation_window(
        STEP_STAGNATION_WINDOW)
    n_u, n_q = model.n_dofs, state.q.shape[0]
    # the first step is backward Euler (the driver's start-up); a resumed run goes on with BDF2
    start_state = state.without_history() if cursor is None else state
    first_k = 1 if cursor is None else cursor.k + 1
    done_before = (0, 0) if cursor is None else (cursor.counts.tangent_builds, cursor.counts.factorizations)

    def flatten(s: State) -> np.ndarray:
        return np.concatenate([s.u, s.q, s.v, s.p])

    def advance(s: State, h: float, k: int):
        if n_q:  # a rejected step left the body cylinders at its end: back to the step's start
            model.set_coordinates(s.q)
        new, report = implicit_step(model, s, h, solver, method=method, options=newton_options, step=k,
                                    matrix=matrix)
        info["contacts"] = report.active_contacts
        if k == first_k:
            notice.cancel()
        return new, report.iterations

    store = StateStore(start_state)
    info = {"output": 0, "contacts": 0, "its": 0, "fails": 0}
    if cursor is not None:
        info.update(output=cursor.next_output, its=cursor.counts.newton_iterations,
                    fails=cursor.counts.newton_failures)
    start = _time.perf_counter()

    def emit(t: float, x: np.ndarray | None, s: State | None) -> None:
        if s is None:
            s = State(t, x[:n_u].copy(), x[n_u + n_q:2 * n_u + n_q].copy(), q=x[n_u:n_u + n_q].copy(),
                      p=x[2 * n_u + n_q:].copy())
        info["output"] += 1
        j = info["output"]
        if callback is not None:  # Newton iterations and failures since the last output time
            counts = last_counts[0]
            its, fails = (counts.newton_iterations, counts.newton_failures) if counts else (0, 0)
            callback(s, StepInfo(j, len(outputs), t_end, its - info["its"], fails - info["fails"],
                                 _time.perf_counter() - start, info["contacts"]))
            info["its"], info["fails"] = its, fails
        if j % store_every == 0 or j == len(outputs):
            store.add(s, None)

    last_counts = [None if cursor is None else cursor.counts]
    bar = progress_bar(progress)
    fresh = IterationMatrix().snapshot()

    def accepted(s: State, position: AdaptiveCursor) -> None:
        if on_accept(s, position):  # saved: go on as a run resumed from there would
            matrix.restore(fresh)
            solver.end_margins = None

    def on_step(s: State, counts, h: float) -> None:
        last_counts[0] = counts
        info["last_state"] = s
        if bar is not None:
            last = counts.step_iterations[-1] if len(counts.step_iterations) else None
            bar.update(t=s.t, t_end=t_end, t_start=t0, newton=last, extra=f"h {h:.3g} s  "
                       + (f"contacts {info['contacts']}  " if model.contacts else "") + counts.line())

    notice = compile_notice("  the first step takes a while: on the first run on a machine numba compiles the "
                            "kernels (cached for later runs) …", enabled=progress, file=sys.stderr)
    model.memo.enabled = bool(model.attachments)  # attachment_forces in callbacks reuses the last evaluation
    interrupted = False
    last, counts = start_state, None
    try:
        last, counts = run_adaptive(advance, flatten, start_state, t0=t0, t_end=t_end, control=control,
                                    n_positions=n_u + n_q, output_times=outputs, emit=emit, on_step=on_step,
                                    work=lambda: (done_before[0] + matrix.tangent_builds,
                                                  done_before[1] + matrix.factorizations),
                                    cursor=cursor, on_accept=None if on_accept is None else accepted)
    except CTRL_C as err:
        handle_ctrl_c(err, on_interrupt)
        if bar is not None:
            bar.end()
        interrupted = True
        counts = last_counts[0]
        reached = info.get("last_state", start_state).t
        warn(f"simulation interrupted at t = {reached:.6g} s; the result keeps {len(store.times)} output states "
             f"(the start included; store_every={store_every})")
    except ConvergenceError as err:  # keep what was computed, and the last accepted step's state
        counts = last_counts[0]
        last = info.get("last_state", start_state)
        if store.times[-1] != last.t:
            store.add(last, None)
        iterations = np.zeros(0, dtype=np.int32) if counts is None else np.array(counts.step_iterations, dtype=np.int32)
        raise err.keep(store.result(iterations, 0 if counts is None else counts.newton_failures,
                                    _time.perf_counter() - start, True, last, counts))
    finally:
        notice.cancel()
        if bar is not None:
            bar.end()
        model.memo.enabled = False
        model.memo.clear()
    iterations = np.zeros(0, dtype=np.int32) if counts is None else np.array(counts.step_iterations, dtype=np.int32)
    retries = 0 if counts is None else counts.newton_failures
    return store.result(iterations, retries, _time.perf_counter() - start, interrupted,
                        None if interrupted else last, counts)
