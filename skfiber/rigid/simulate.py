"""A whole run of the rigid system: :func:`simulate_rigid` and its :class:`RigidResult`.

Steps of :func:`~skfiber.rigid.backward_euler_rigid` (backward Euler, or
variable-step BDF2 with ``method="bdf2"``: :mod:`skfiber.core.bdf`) from t0
to t_end, the elements' internal states integrated with q: at fixed steps,
a failed step retried in halved substeps, or with ``rtol``/``atol`` at steps
chosen by local error control (:mod:`skfiber.core.step_control`).  The
theory: :mod:`skfiber.rigid.integrate`.

Examples
--------
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> result = simulate_rigid(system, [0.1], [0.0], t_end=0.05, dt=0.01)
>>> result.times.round(3).tolist(), result.interrupted
([0.0, 0.01, 0.02, 0.03, 0.04, 0.05], False)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core import ConvergenceError, ErrorControl, StepCounts, output_grid, run_adaptive
from ..core.bdf import anchor, ramp_levels
from ..core.interrupt import CTRL_C, check_on_interrupt, handle_ctrl_c
from ..core.numbers import check_finite_time, check_step_count, checked_real
from ..core.warn import warn
from .backward_euler import backward_euler_rigid
from .element_states import check_states, element_state_names, initial_element_states, layout_size, state_layout
from .system import RigidSystem

__all__ = ["simulate_rigid", "RigidResult"]


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
    #: accepted and rejected steps, Newton iterations, tangent builds
    step_counts: StepCounts | None = None


#: the time schemes of simulate_rigid: backward Euler (order 1) and variable-step BDF2 (order 2)
RIGID_METHODS = ("euler", "bdf2")
#: default smallest step of an adaptive run, as a fraction of its span
H_MIN_FRACTION = 1e-10


@dataclass
class _Point:
    """A state of the run with what the next step needs: the last step's rates (predictor) and the
    earlier point (q, p, s, h) of a BDF2 step (None: the next step is backward Euler)."""

    t: float
    q: np.ndarray
    p: np.ndarray
    s: np.ndarray
    a: np.ndarray
    sd: np.ndarray
    prev: tuple | None = None


def _advance(system, point: _Point, t_prev: float, h: float, method: str, options, step, m: int):
    """One step of ``method`` from ``point`` (at t_prev) of size h: (new point, Newton iterations)."""
    anchors = None
    if method == "bdf2" and point.prev is not None:
        q_old, p_old, s_old, h_old = point.prev
        q_hat, h_eff = anchor(h, h_old, point.q, q_old)
        p_hat, _ = anchor(h, h_old, point.p, p_old)
        anchors = (q_hat, p_hat, anchor(h, h_old, point.s, s_old)[0] if m else None, h_eff)
    q1, p1, rep = backward_euler_rigid(system, point.q, point.p, t_prev, h, options=options, step=step,
                                       a_prev=point.a, states_prev=point.s if m else None,
                                       state_rate_prev=point.sd if m else None, anchors=anchors)
    s1 = rep.states
    return _Point(t_prev + h, q1, p1, s1, (p1 - point.p) / h, (s1 - point.s) / h,
                  (point.q, point.p, point.s, h)), rep.iterations


def _extrapolated_start(system, point: _Point, t_prev: float, h: float, options, step, m: int):
    """BDF2's first fixed step: backward Euler extrapolated, 2 y(h/2 ∘ h/2) − y(h) (local error O(h³), L-stable;
    as :func:`skfiber.time_step.extrapolated_start`)."""
    half, i1 = _advance(system, point, t_prev, 0.5 * h, "euler", options, step, m)
    two, i2 = _advance(system, half, t_prev + 0.5 * h, 0.5 * h, "euler", options, step, m)
    one, i3 = _advance(system, point, t_prev, h, "euler", options, step, m)
    q, p, s = 2.0 * two.q - one.q, 2.0 * two.p - one.p, 2.0 * two.s - one.s
    return _Point(one.t, q, p, s, two.a, two.sd, (point.q, point.p, point.s, h)), i1 + i2 + i3


def _coordinates(name: str, value, n: int, system: RigidSystem) -> np.ndarray:
    """``value`` as the (n,) float array of q0 or p0, or an error naming ``name``, its entries and the value."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != (n,):
        numbers = f"{n} number{'s' if n != 1 else ''}"
        raise ValueError(f"{name} must hold {numbers}, one per coordinate {list(system.coordinate_names)}, got "
                         f"{value!r}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


def simulate_rigid(system: RigidSystem, q0, p0, t_end: float, dt: float | None = None, *, t0: float = 0.0,
                   options=None, max_bisections: int = 6, callback=None, states0=None, method: str = "euler",
                   rtol: float | None = None, atol: float | None = None, h_min: float | None = None,
                   h_max: float | None = None, output_times=None, on_interrupt: str = "keep") -> RigidResult:
    """Integrate the rigid system from (q0, p0) at t0 to t_end: backward Euler or BDF2, fixed or adaptive steps.

    Fixed steps (``dt``, no tolerances): Δt = (t_end − t0)/N with
    N = ⌈(t_end − t0)/dt⌉.  A step whose Newton iteration fails is retried in
    2, 4, … substeps (at most ``max_bisections`` halvings).
    ``callback(t, q, p)`` after each step.

    ``method="bdf2"``: variable-step BDF2 (order 2, L-stable; the first fixed
    step is extrapolated backward Euler, that of an adaptive run backward Euler).  With ``rtol``/``atol`` its steps are chosen by local
    error control on q, p and the element states (between ``h_min``, default
    1e-10 (t_end − t0), and ``h_max``, default t_end − t0), and the result
    holds the states at ``output_times`` (default every ``dt`` if given,
    else 100 equal intervals), interpolated between steps;
    ``callback(t, q, p)`` is called at each output time and
    ``result.step_counts`` counts accepted and rejected steps, Newton
    iterations and tangent builds.

    ``options``: :class:`skfiber.NewtonOptions` (default settings if None).

    Force elements with internal states are integrated in the same Newton
    iteration (:mod:`skfiber.rigid.integrate`); their initial states are ``states0`` or, by
    default, :func:`initial_element_states` at (q0, p0, t0), and
    ``result.states`` holds their time series.

    Ctrl-C stops the run with a warning and returns the steps done so far
    (``result.interrupted``); with ``on_interrupt="raise"`` it raises ``KeyboardInterrupt`` to the caller
    instead, for code that needs the whole run (:mod:`skfiber.core.interrupt`).

    Examples
    --------
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem(gravity=(0, 0, -9.81))
    >>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> r = simulate_rigid(system, [0.1], [0.0], t_end=0.2, dt=0.1, method="bdf2", rtol=1e-6, atol=1e-8)
    >>> r.times.round(3).tolist(), r.step_counts.accepted > 5
    ([0.0, 0.1, 0.2], True)
    """
    check_on_interrupt(on_interrupt)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function callback(t, q, p) or None, got {callback!r}")
    n = system.n
    q0, p0 = (_coordinates(name, value, n, system) for name, value in (("q0", q0), ("p0", p0)))
    check_finite_time(t_end=t_end, t0=t0)
    if (isinstance(max_bisections, bool) or not isinstance(max_bisections, (int, np.integer))
            or not 0 <= max_bisections <= 60):
        raise ValueError(f"max_bisections must be an integer in 0 … 60 (a failing step is split into at most "
                         f"2**max_bisections substeps), got {max_bisections!r}")
    if method not in RIGID_METHODS:
        raise ValueError(f"unknown method {method!r}; pick one of {list(RIGID_METHODS)}")
    adaptive = rtol is not None or atol is not None
    if adaptive and method != "bdf2":
        raise ValueError(f"error control (rtol/atol) needs method='bdf2', got method={method!r}")
    if dt is None and not adaptive:
        raise ValueError("give dt (fixed steps), or rtol and/or atol with method='bdf2' (adaptive steps)")
    if dt is not None:
        checked_real("dt", dt, above=0, unit="s")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0}, got {t_end!r}")
    if dt is not None:
        check_step_count(dt=dt, t_start=t0, t_end=t_end)
    layout = state_layout(system)
    m = layout_size(layout)
    if m:
        s0 = initial_element_states(system, q0, p0, t0) if states0 is None else np.asarray(states0, dtype=float)
        check_states(layout, s0, s0)
    elif states0 is not None and np.size(states0):
        raise ValueError("states0 was given but no force element of the system has internal states")
    else:
        s0 = np.zeros(0)
    start = _Point(t0, q0, p0, s0, np.zeros(n), np.zeros(m))
    if adaptive:
        return _simulate_adaptive(system, start, t_end, m, method=method, options=options, callback=callback,
                                  on_interrupt=on_interrupt,
                                  control=ErrorControl(rtol=0.0 if rtol is None else float(rtol),
                                                       atol=0.0 if atol is None else float(atol),
                                                       h_min=H_MIN_FRACTION * (t_end - t0) if h_min is None else h_min,
                                                       h_max=t_end - t0 if h_max is None else h_max,
                                                       h_initial=None if dt is None else min(dt, t_end - t0) / 10.0),
                                  outputs=output_grid(t0, t_end, output_times=output_times, output_dt=dt))
    if output_times is not None or h_min is not None or h_max is not None:
        raise ValueError("output_times, h_min and h_max belong to adaptive runs: give rtol and/or atol too")
    n_steps = max(1, math.ceil((t_end - t0) / dt - 1e-9))
    h = (t_end - t0) / n_steps
    times = t0 + h * np.arange(n_steps + 1)
    Q = np.empty((n_steps + 1, n)); P = np.empty((n_steps + 1, n)); S = np.empty((n_steps + 1, m))
    Q[0], P[0], S[0] = q0, p0, s0
    iterations, retries = [], 0
    point = start
    done = n_steps
    try:
        for i in range(n_steps):
            for level in range(max_bisections + 1):
                sub = 2**level
                try:
                    pt, its = point, 0
                    # after shorter steps BDF2 grows back by at most 2 a step (its zero-stability): the first
                    # substep is then split (ramp_levels), the others follow it at the same length
                    first_split = (ramp_levels(h / sub, pt.prev[3]) if method == "bdf2" and pt.prev is not None
                                   else [0])
                    lengths = [h / sub / 2**e for e in first_split] + [h / sub] * (sub - 1)
                    t_sub = times[i]
                    for length in lengths:
                        first = _extrapolated_start if method == "bdf2" and pt.prev is None else None
                        pt, it = (first(system, pt, t_sub, length, options, i + 1, m) if first else
                                  _advance(system, pt, t_sub, length, method, options, i + 1, m))
                        t_sub += length
                        its += it
                    break
                except ConvergenceError:
                    if level == max_bisections:
                        raise
                    retries += 1
            point = pt
            Q[i + 1], P[i + 1], S[i + 1] = pt.q, pt.p, pt.s
            iterations.append(its)
            if callback is not None:
                callback(times[i + 1], pt.q, pt.p)
    except CTRL_C as err:
        handle_ctrl_c(err, on_interrupt)
        done = len(iterations)
        warn(f"rigid simulation interrupted at t = {times[done]:.6g} s; returning the {done + 1} states "
             "computed so far")
    except ConvergenceError as err:  # keep what was computed: the error carries it
        raise err.keep(_fixed_result(system, times, Q, P, S, iterations, retries, len(iterations), n_steps))
    return _fixed_result(system, times, Q, P, S, iterations, retries, done, n_steps)


def _fixed_result(system, times, Q, P, S, iterations, retries, done, n_steps) -> RigidResult:
    """The result of a fixed-step run whose first ``done`` steps are computed."""
    k = done + 1
    total = int(sum(iterations))
    counts = StepCounts(accepted=len(iterations), newton_failures=retries, newton_iterations=total, tangent_builds=total,
                        factorizations=total)
    return RigidResult(times[:k], Q[:k], P[:k], iterations, retries, S[:k], element_state_names(system),
                       done < n_steps, counts)


def _simulate_adaptive(system, start: _Point, t_end: float, m: int, *, method, options, callback, control,
                       outputs, on_interrupt: str = "keep") -> RigidResult:
    """The adaptive branch of :func:`simulate_rigid`: BDF2 steps by :func:`~skfiber.core.run_adaptive`."""
    n = start.q.shape[0]
    rows = {"t": [start.t], "q": [start.q], "p": [start.p], "s": [start.s]}

    def emit(t, x, pt):
        q, p, s = (pt.q, pt.p, pt.s) if x is None else (x[:n].copy(), x[n:2 * n].copy(), x[2 * n:].copy())
        rows["t"].append(t); rows["q"].append(q); rows["p"].append(p); rows["s"].append(s)
        if callback is not None:
            callback(t, q, p)

    interrupted, counts, last = False, StepCounts(), [None, None]

    def on_step(pt, step_counts, h):
        last[0], last[1] = pt, step_counts

    def result() -> RigidResult:
        return RigidResult(np.array(rows["t"]), np.array(rows["q"]), np.array(rows["p"]), list(counts.step_iterations),
                           counts.newton_failures, np.array(rows["s"]).reshape(len(rows["t"]), m),
                           element_state_names(system), interrupted, counts)

    try:
        _, counts = run_adaptive(lambda pt, h, k: _advance(system, pt, pt.t, h, method, options, k, m),
                                 lambda pt: np.concatenate([pt.q, pt.p, pt.s]), start, t0=start.t, t_end=t_end,
                                 control=control, n_positions=n, output_times=outputs, emit=emit, on_step=on_step)
    except CTRL_C as err:
        handle_ctrl_c(err, on_interrupt)
        interrupted = True
        warn(f"rigid simulation interrupted; returning the {len(rows['t'])} output states computed so far")
    except ConvergenceError as err:  # keep the output states and the last accepted step's
        interrupted, pt = True, last[0]
        counts = last[1] if last[1] is not None else counts
        if pt is not None and rows["t"][-1] != pt.t:
            rows["t"].append(pt.t); rows["q"].append(pt.q); rows["p"].append(pt.p); rows["s"].append(pt.s)
        raise err.keep(result())
    return result()
